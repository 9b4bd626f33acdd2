package main

import (
	"sync"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
)

// The traffic kinds node.json reports (python/gossiplab/analysis/tables.py TRAFFIC_KINDS).
var kinds = []string{"payload", "ihave", "iwant", "graft", "prune", "idontwant", "iannounce", "ineed", "subscribe"}

type counters struct {
	MsgsSent  uint64 `json:"msgs_sent"`
	BytesSent uint64 `json:"bytes_sent"`
	MsgsRecv  uint64 `json:"msgs_recv"`
	BytesRecv uint64 `json:"bytes_recv"`
}

// tally is one RPC's ids (payload: messages) and bytes per kind.
type tally map[string][2]uint64

func (t tally) add(kind string, items int, size int) {
	v := t[kind]
	t[kind] = [2]uint64{v[0] + uint64(items), v[1] + fieldLen(size)}
}

func varintLen(v uint64) uint64 {
	n := uint64(1)
	for ; v >= 0x80; v >>= 7 {
		n++
	}
	return n
}

// fieldLen is a length-delimited protobuf field's size on the wire: tag, length, body.
func fieldLen(body int) uint64 { return 1 + varintLen(uint64(body)) + uint64(body) }

// measure splits an RPC into kinds by the fork's gogo Size() methods (pb/rpc.pb.go);
// the RPC's own framing (the varint length prefix of comm.go's writer) goes to the first
// kind present, so the kinds add up to the bytes written.
func measure(rpc *pb.RPC) tally {
	t := tally{}
	for _, m := range rpc.GetPublish() {
		t.add("payload", 1, m.Size())
	}
	for _, s := range rpc.GetSubscriptions() {
		t.add("subscribe", 1, s.Size())
	}
	if ctl := rpc.GetControl(); ctl != nil {
		for _, c := range ctl.GetIhave() {
			t.add("ihave", len(c.GetMessageIDs()), c.Size())
		}
		for _, c := range ctl.GetIwant() {
			t.add("iwant", len(c.GetMessageIDs()), c.Size())
		}
		for _, c := range ctl.GetGraft() {
			t.add("graft", 1, c.Size())
		}
		for _, c := range ctl.GetPrune() {
			t.add("prune", 1, c.Size())
		}
		for _, c := range ctl.GetIdontwant() {
			t.add("idontwant", len(c.GetMessageIDs()), c.Size())
		}
		// IANNOUNCE and INEED carry one id each (pb/rpc.proto ControlIAnnounce, ControlINeed).
		for _, c := range ctl.GetIannounce() {
			t.add("iannounce", 1, c.Size())
		}
		for _, c := range ctl.GetIneed() {
			t.add("ineed", 1, c.Size())
		}
	}
	var counted uint64
	for _, v := range t {
		counted += v[1]
	}
	total := varintLen(uint64(rpc.Size())) + uint64(rpc.Size())
	if total > counted {
		for _, k := range kinds {
			if v, ok := t[k]; ok {
				t[k] = [2]uint64{v[0], v[1] + total - counted}
				break
			}
		}
	}
	return t
}

// rawTracer counts every RPC the fork sends and receives, and tracks mesh sizes; it
// implements the fork's RawTracer (trace.go), whose method set differs from v0.17.0's.
type rawTracer struct {
	mu      sync.Mutex
	traffic map[string]*counters
	drops   map[string]uint64 // kind -> ids dropped at a full outbound queue
	mesh    map[string]map[peer.ID]bool
}

func newRawTracer() *rawTracer {
	r := &rawTracer{traffic: map[string]*counters{}, drops: map[string]uint64{}, mesh: map[string]map[peer.ID]bool{}}
	for _, k := range kinds {
		r.traffic[k] = &counters{}
	}
	return r
}

func (r *rawTracer) SendRPC(rpc *pubsub.RPC, _ peer.ID) {
	t := measure(&rpc.RPC)
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, v := range t {
		r.traffic[k].MsgsSent += v[0]
		r.traffic[k].BytesSent += v[1]
	}
}

func (r *rawTracer) RecvRPC(rpc *pubsub.RPC) {
	t := measure(&rpc.RPC)
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, v := range t {
		r.traffic[k].MsgsRecv += v[0]
		r.traffic[k].BytesRecv += v[1]
	}
}

func (r *rawTracer) DropRPC(rpc *pubsub.RPC, _ peer.ID) {
	t := measure(&rpc.RPC)
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, v := range t {
		r.drops[k] += v[0]
	}
}

func (r *rawTracer) Graft(p peer.ID, topic string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mesh[topic] == nil {
		r.mesh[topic] = map[peer.ID]bool{}
	}
	r.mesh[topic][p] = true
}

func (r *rawTracer) Prune(p peer.ID, topic string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.mesh[topic], p)
}

func (r *rawTracer) meshSize(topic string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.mesh[topic])
}

func (r *rawTracer) AddPeer(peer.ID, protocol.ID)          {}
func (r *rawTracer) RemovePeer(peer.ID)                    {}
func (r *rawTracer) Join(string)                           {}
func (r *rawTracer) Leave(string)                          {}
func (r *rawTracer) ValidateMessage(*pubsub.Message)       {}
func (r *rawTracer) DeliverMessage(*pubsub.Message)        {}
func (r *rawTracer) RejectMessage(*pubsub.Message, string) {}
func (r *rawTracer) DuplicateMessage(*pubsub.Message)      {}
func (r *rawTracer) ThrottlePeer(peer.ID)                  {}
func (r *rawTracer) UndeliverableMessage(*pubsub.Message)  {}
