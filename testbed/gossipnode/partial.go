package gossipnode

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"iter"
	"log/slog"
	"slices"
	"sync"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p-pubsub/partialmessages"
	"github.com/libp2p/go-libp2p-pubsub/partialmessages/bitmap"
	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/peer"
	"google.golang.org/protobuf/proto"
)

// partPeer is the per-(group, peer) state go keeps for the application
// (partialmsgs.go: peerState map): the parts the peer told us it has (or that we
// assume it has since we sent them) and the metadata we last sent it; nil is unknown.
type partPeer struct{ recvd, sent bitmap.Bitmap }

type partExt = partialmessages.PartialMessagesExtension[partPeer]

// group is the application's store of one group: the parts held, and its record.
// It outlives go's group state, which expires after the TTL (partialmsgs.go Heartbeat).
type group struct {
	msg   uint32
	topic string
	gid   []byte
	have  bitmap.Bitmap
	rec   *partialRecord
}

// partialApp is gossiplab's application over go-libp2p-pubsub v0.17.0's partial
// messages: go's reference rule (gossipsub_test.go minimalTestPartialMessage, its
// OnIncomingRPC/OnEmitGossip hooks in TestPartialMessages, the eager branch of
// partialmessages_test.go testPartialMessage.publishActions, the full-message bridge
// of TestPartialMessagesMixedNetwork), generalised from 2 or 8 parts to P.
//
// Its store is touched by the pubsub event loop (hooks, actions), the subscription
// readers and the publisher, so it sits behind mu; mu is never held while calling into
// pubsub (PublishPartial and Publish wait for the event loop, which may be waiting for mu).
type partialApp struct {
	cfg    *PartialConfig
	layout partLayout
	held   map[uint32]bitmap.Bitmap
	clock  func() int64      // ns since the run's epoch
	index  func(peer.ID) int // node index of a peer, -1 if unknown
	topics func(string) *pubsub.Topic

	mu      sync.Mutex
	ctx     context.Context
	ps      *pubsub.PubSub
	ext     *partExt
	groups  map[uint32]*group
	log     partLog
	handled uint64 // partial RPCs that reached OnIncomingRPC
}

func newPartialApp(c *PartialConfig, clock func() int64, index func(peer.ID) int) (*partialApp, error) {
	layout := newPartLayout(c)
	held, err := layout.parseHeld(c.Held)
	if err != nil {
		return nil, err
	}
	return &partialApp{
		cfg: c, layout: layout, held: held, clock: clock, index: index,
		groups: map[uint32]*group{},
		log:    partLog{keep: c.LogParts},
	}, nil
}

// enabled: the node runs the extension (role requests or supports).
func (a *partialApp) enabled() bool { return a.cfg.Role != RoleNone }

// extension is a fresh library instance for a (re)started router; go's Init fills in
// the limit defaults for zeros (partialmsgs.go Init).
func (a *partialApp) extension() *partExt {
	a.ext = &partExt{
		Logger:                                 slog.New(slog.NewTextHandler(io.Discard, nil)),
		OnIncomingRPC:                          a.onRPC,
		OnEmitGossip:                           a.onGossip,
		GroupTTLByHeatbeat:                     a.cfg.GroupTTLHeartbeats,
		PeerInitiatedGroupLimitPerTopic:        a.cfg.PeerGroupLimitPerTopic,
		PeerInitiatedGroupLimitPerTopicPerPeer: a.cfg.PeerGroupLimitPerPeer,
	}
	return a.ext
}

// topicOptions is how the node joins every topic (pubsub.go RequestPartialMessages /
// SupportsPartialMessages).
func (a *partialApp) topicOptions() []pubsub.TopicOpt {
	switch a.cfg.Role {
	case RoleRequests:
		return []pubsub.TopicOpt{pubsub.RequestPartialMessages()}
	case RoleSupports:
		return []pubsub.TopicOpt{pubsub.SupportsPartialMessages()}
	}
	return nil
}

// attach points the application at a (re)started router. A restarted node has lost
// its memory: only the records of what it already did survive.
func (a *partialApp) attach(ctx context.Context, ps *pubsub.PubSub) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ctx, a.ps = ctx, ps
	for msg, g := range a.groups {
		g.have = a.heldOf(msg)
	}
}

// known: msg is a group of the plan (drawn for this node, or published by it).
func (a *partialApp) known(msg uint32) bool {
	_, drawn := a.held[msg]
	_, seen := a.groups[msg]
	return drawn || seen
}

func (a *partialApp) heldOf(msg uint32) bitmap.Bitmap {
	if h, ok := a.held[msg]; ok {
		return clone(h)
	}
	return a.layout.none()
}

// learn returns the group of msg, creating it from the mempool draw the first time
// the node hears of it, from node `from` (a gossiplab addition: go's tests start from
// an empty store). A node whose mempool holds every part is complete from then on, its
// group "received" from whoever taught it the group. Called with mu held.
func (a *partialApp) learn(msg uint32, topic string, from int) (*group, bool) {
	if g, ok := a.groups[msg]; ok {
		return g, false
	}
	have := a.heldOf(msg)
	now := a.clock()
	g := &group{msg: msg, topic: topic, gid: a.layout.groupID(msg), have: have}
	g.rec = &partialRecord{Msg: msg, LearnedNs: now, Held: have.OnesCount(), CompleteFrom: -1}
	a.groups[msg] = g
	if have.OnesCount() == a.layout.parts {
		g.rec.complete(now, viaMempool, from)
	}
	return g, true
}

// onRPC is OnIncomingRPC (partialmsgs.go HandleRPC), on the event loop: merge the
// peer's metadata, take new parts, and republish when either side has something the
// other lacks (gossipsub_test.go minimalTestPartialMessage.onIncomingRPC).
func (a *partialApp) onRPC(from peer.ID, states map[peer.ID]partPeer, rpc *pb.PartialMessagesExtension) error {
	a.mu.Lock()
	a.handled++
	msg, err := a.layout.msgOfGroup(rpc.GroupID)
	if err != nil {
		a.mu.Unlock()
		return err
	}
	if !a.known(msg) {
		a.mu.Unlock()
		return nil // not a group of this run's plan: ignored
	}
	g, learned := a.learn(msg, rpc.GetTopicID(), a.index(from))
	// A node whose mempool holds every part completes as it learns the group.
	completed := learned && g.rec.CompleteNs != nil
	st := states[from]
	g.rec.RPCsRecv++
	g.rec.BytesRecv += partialRPCSize(rpc)
	if rpc.PartsMetadata != nil {
		st.recvd = bitmap.Merge(st.recvd, rpc.PartsMetadata)
	}
	fresh, filled := a.takeParts(g, from, rpc.PartialMessage)
	completed = completed || filled
	republish := learned // a node that learns a group sends its metadata: its request
	if fresh {
		// The sender can infer what we hold now (gossipsub_test.go TestPartialMessages:
		// peerState.sent merged when our metadata changed).
		st.sent = bitmap.Merge(st.sent, g.have)
		republish = true
	} else if rpc.PartsMetadata != nil {
		republish = republish || usefulEitherWay(g.have, rpc.PartsMetadata)
	}
	states[from] = st
	a.mu.Unlock()
	if republish {
		go a.publishPartial(g)
	}
	if completed {
		go a.publishFull(g)
	}
	return nil
}

// usefulEitherWay: the peer has a part we lack, or we have one it lacks.
func usefulEitherWay(have, peerHas bitmap.Bitmap) bool {
	return !missing(peerHas, have).IsZero() || !missing(have, peerHas).IsZero()
}

// takeParts adds the parts of a partial message to the group; called with mu held.
// It reports whether any part was new and whether the group just became complete.
func (a *partialApp) takeParts(g *group, from peer.ID, data []byte) (fresh, completed bool) {
	if len(data) == 0 {
		return false, false
	}
	got, err := a.layout.decode(g.msg, data)
	if err != nil {
		g.rec.BadParts++
		return false, false
	}
	now, sender := a.clock(), a.index(from)
	for i := range a.layout.parts {
		if !got.Get(i) {
			continue
		}
		dup := g.have.Get(i)
		a.log.part(now, g.msg, i, sender, dup, viaPartial)
		if dup {
			g.rec.PartsDup++
			continue
		}
		g.have.Set(i)
		g.rec.PartsRecv++
		fresh = true
	}
	if fresh && g.have.OnesCount() == a.layout.parts && g.rec.CompleteNs == nil {
		g.rec.complete(now, viaPartial, sender)
		completed = true
	}
	return fresh, completed
}

// onGossip is OnEmitGossip: go's reference publishes to the newly tracked gossip
// peers at once, already on the event loop (gossipsub_test.go TestPartialMessages).
func (a *partialApp) onGossip(topic string, gid []byte, _ []peer.ID, _ map[peer.ID]partPeer) {
	msg, err := a.layout.msgOfGroup(gid)
	if err != nil {
		return
	}
	a.mu.Lock()
	g, ok := a.groups[msg]
	ext := a.ext
	a.mu.Unlock()
	if ok {
		_ = ext.PublishPartial(topic, gid, a.actions(g))
	}
}

// actions is the PublishActionsFn of group g (gossipsub_test.go
// minimalTestPartialMessage.publishActions; eager branch from partialmsgs_test.go
// testPartialMessage.publishActions): to a peer that requests partials and told us
// what it has, the parts it lacks; with eager push, to one that told us nothing yet,
// every part held; to every peer, our metadata when it changed since we last sent it.
func (a *partialApp) actions(g *group) partialmessages.PublishActionsFn[partPeer] {
	return func(states map[peer.ID]partPeer, requests func(peer.ID) bool) iter.Seq2[peer.ID, partialmessages.PublishAction] {
		a.mu.Lock()
		have := clone(g.have)
		a.mu.Unlock()
		return func(yield func(peer.ID, partialmessages.PublishAction) bool) {
			for p, st := range states {
				var data []byte
				if requests(p) {
					data, st.recvd = a.partsFor(g.msg, have, st.recvd)
				}
				var meta []byte
				if !bytes.Equal(have, st.sent) {
					meta, st.sent = clone(have), clone(have)
				}
				states[p] = st
				if !yield(p, partialmessages.PublishAction{EncodedPartialMessage: data, EncodedPartsMetadata: meta}) {
					return
				}
			}
		}
	}
}

// partsFor is what to send a requesting peer whose known parts are recvd (nil:
// unknown), and what it holds afterwards, assuming delivery as go's reference does.
func (a *partialApp) partsFor(msg uint32, have, recvd bitmap.Bitmap) ([]byte, bitmap.Bitmap) {
	switch {
	case recvd != nil:
		lack := missing(have, recvd)
		if lack.IsZero() {
			return nil, bitmap.Merge(recvd, have)
		}
		return a.layout.encode(msg, lack), bitmap.Merge(recvd, have)
	case a.cfg.EagerPush && !have.IsZero():
		return a.layout.encode(msg, have), clone(have)
	}
	return nil, recvd
}

// publishPartial runs PublishPartial for g from outside the event loop (it posts to
// the loop and waits: extensions.go PublishPartial).
func (a *partialApp) publishPartial(g *group) {
	a.mu.Lock()
	ps := a.ps
	a.mu.Unlock()
	_ = pubsub.PublishPartial(ps, g.topic, g.gid, a.actions(g))
}

// publishFull publishes a completed group's full message for peers that do not
// request partials (gossipsub_test.go TestPartialMessagesMixedNetwork); go itself keeps
// it from the peers that do (gossipsub.go rpcs: iSupportSendingPartial && peerRequestsPartial).
func (a *partialApp) publishFull(g *group) {
	if !a.cfg.FullFallback {
		return
	}
	a.mu.Lock()
	ctx := a.ctx
	a.mu.Unlock()
	if topic := a.topics(g.topic); topic != nil {
		_ = topic.Publish(ctx, a.layout.full(g.msg))
	}
}

// publishGroup is the publisher's side: it holds every part, sends its metadata (and
// with eager push its parts) to its partial peers, then the full message to the others.
func (a *partialApp) publishGroup(msg uint32, topic string) error {
	a.mu.Lock()
	g, learned := a.learn(msg, topic, -1)
	g.have = a.layout.all()
	if learned || g.rec.CompleteNs == nil {
		g.rec.complete(g.rec.LearnedNs, viaPublish, -1)
	}
	ctx, ps := a.ctx, a.ps
	a.mu.Unlock()
	var err error
	if a.enabled() {
		err = pubsub.PublishPartial(ps, topic, g.gid, a.actions(g))
	}
	if a.cfg.FullFallback || !a.enabled() {
		if t := a.topics(topic); t != nil {
			err = errors.Join(err, t.Publish(ctx, a.layout.full(msg)))
		}
	}
	return err
}

// onFull is a full message delivered by the subscription: every part is now held;
// a partial-capable node then serves its partial peers from it (the mixed network's
// bridge the other way).
func (a *partialApp) onFull(data []byte, topic string, from peer.ID) {
	if len(data) != a.layout.fullLen {
		return
	}
	msg := binary.BigEndian.Uint32(data)
	a.mu.Lock()
	if !a.known(msg) {
		a.mu.Unlock()
		return
	}
	now, sender := a.clock(), a.index(from)
	g, _ := a.learn(msg, topic, sender)
	lack := missing(a.layout.all(), g.have)
	g.rec.PartsViaFull += lack.OnesCount()
	for i := range a.layout.parts {
		if lack.Get(i) {
			a.log.part(now, msg, i, sender, false, viaFull)
		}
	}
	g.have = a.layout.all()
	if g.rec.CompleteNs == nil {
		g.rec.complete(now, viaFull, sender)
	}
	a.mu.Unlock()
	if a.enabled() {
		go a.publishPartial(g)
	}
}

// records is every group this node heard of, in message order.
func (a *partialApp) records() []partialRecord {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]partialRecord, 0, len(a.groups))
	for _, g := range a.groups {
		out = append(out, *g.rec)
	}
	slices.SortFunc(out, func(x, y partialRecord) int { return cmp.Compare(x.Msg, y.Msg) })
	return out
}

// partialRPCSize is the framed size of an RPC carrying only this partial message
// (uvarint prefix + RPC field 10), as go sends it (extensions.go partialMessageRouter.SendRPC).
func partialRPCSize(rpc *pb.PartialMessagesExtension) uint64 {
	body := fieldLen(uint64(proto.Size(rpc)))
	return varintLen(body) + body
}
