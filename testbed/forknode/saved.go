package main

import (
	"time"

	pb "github.com/libp2p/go-libp2p-pubsub/pb"
)

// savedCounter counts the copies of a message the fork did not send because the peer
// had sent IDONTWANT for it: the model's "saved-by-idontwant" counter. The fork has no
// counter or trace event for it, so this mirrors the fork's own state from its trace
// events, which pubsubTracer emits on the event loop before the router acts on them
// (trace.go RecvRPC, DeliverMessage, Graft, Prune):
//
//   - handleIDontWant (gossipsub.go) remembers at most MaxIDontWantLength ids of one RPC
//     for IDontWantMessageTTL heartbeats;
//   - Publish skips a mesh peer that sent IDONTWANT for the id (and the peer it came
//     from), before tossing the IANNOUNCE coin;
//   - handleIWant and handleINeed skip ids the asker sent IDONTWANT for; HandleRPC runs
//     them before handleIDontWant, so an RPC's own IDONTWANTs do not count for its IWANTs.
//
// Two simplifications, neither reached by a 20-node run: the TTL is counted in time
// (ttl) rather than in heartbeat ticks, and the per-heartbeat cap of
// MaxIDontWantMessages IDONTWANT RPCs per peer is not applied. A reply is counted as
// saved only for an id this node holds (delivered within the message cache's window).
type savedCounter struct {
	ttl, window time.Duration
	maxIDs      int
	mesh        map[string]map[string]bool      // topic -> peer (raw id)
	unwanted    map[string]map[string]time.Time // peer -> message id -> when it expires
	held        map[string]time.Time            // message id -> when it leaves the cache
	saved       map[string]uint64               // peer -> copies not sent
}

func newSavedCounter(p protocolConfig) *savedCounter {
	heartbeat := time.Duration(p.HeartbeatNs)
	return &savedCounter{
		ttl:    time.Duration(defaultIDontWantTTL) * heartbeat,
		window: time.Duration(p.HistoryLength) * heartbeat,
		maxIDs: defaultMaxIDontWantLength,
		mesh:   map[string]map[string]bool{}, unwanted: map[string]map[string]time.Time{},
		held: map[string]time.Time{}, saved: map[string]uint64{},
	}
}

func (s *savedCounter) isUnwanted(peer, id string, now time.Time) bool {
	until, ok := s.unwanted[peer][id]
	return ok && now.Before(until)
}

func (s *savedCounter) observe(evt *pb.TraceEvent) {
	now := time.Unix(0, evt.GetTimestamp())
	switch evt.GetType() {
	case pb.TraceEvent_GRAFT:
		g := evt.GetGraft()
		if s.mesh[g.GetTopic()] == nil {
			s.mesh[g.GetTopic()] = map[string]bool{}
		}
		s.mesh[g.GetTopic()][string(g.GetPeerID())] = true
	case pb.TraceEvent_PRUNE:
		delete(s.mesh[evt.GetPrune().GetTopic()], string(evt.GetPrune().GetPeerID()))
	case pb.TraceEvent_REMOVE_PEER:
		for _, peers := range s.mesh {
			delete(peers, string(evt.GetRemovePeer().GetPeerID()))
		}
	case pb.TraceEvent_DELIVER_MESSAGE:
		d := evt.GetDeliverMessage()
		id, from := string(d.GetMessageID()), string(d.GetReceivedFrom())
		s.held[id] = now.Add(s.window)
		for p := range s.mesh[d.GetTopic()] {
			if p != from && s.isUnwanted(p, id, now) {
				s.saved[p]++
			}
		}
	case pb.TraceEvent_RECV_RPC:
		s.received(evt.GetRecvRPC(), now)
	}
}

func (s *savedCounter) received(r *pb.TraceEvent_RecvRPC, now time.Time) {
	ctl := r.GetMeta().GetControl()
	if ctl == nil {
		return
	}
	from := string(r.GetReceivedFrom())
	asked := func(id string) {
		if until, ok := s.held[id]; ok && now.Before(until) && s.isUnwanted(from, id, now) {
			s.saved[from]++
		}
	}
	for _, iw := range ctl.GetIwant() {
		for _, id := range iw.GetMessageIDs() {
			asked(string(id))
		}
	}
	for _, in := range ctl.GetIneed() {
		asked(string(in.GetMessageID()))
	}
	remembered := 0
	for _, d := range ctl.GetIdontwant() {
		for _, id := range d.GetMessageIDs() {
			if remembered >= s.maxIDs {
				return
			}
			remembered++
			if s.unwanted[from] == nil {
				s.unwanted[from] = map[string]time.Time{}
			}
			s.unwanted[from][string(id)] = now.Add(s.ttl)
		}
	}
}
