// Package gossipnode is what one gossiplab node is, whatever carries its packets: its
// config, identity, gossipsub parameters and scoring, its tracers (node.json and
// trace.ndjson), its topics and its publish loop. The testbed's gossiplab-node runs one
// in its own process over the kernel's network; the simnet runner runs a thousand in one
// process over simulated links, in virtual time.
package gossipnode

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
)

// Files a node writes into its folder (Config.Dir); the Python side reads them.
const (
	TraceFile  = "trace.ndjson"
	ResultFile = "node.json"
)

// modules whose versions a run records.
var recordedModules = []string{
	"github.com/libp2p/go-libp2p",
	"github.com/libp2p/go-libp2p-pubsub",
	"github.com/florianl/go-nfqueue/v2",
	"github.com/quic-go/quic-go",
	"github.com/libp2p/go-yamux/v5",
	"github.com/flynn/noise",
	"github.com/marcopolo/simnet",
}

// BuildVersions is Go's version and those of the recorded modules linked in.
func BuildVersions() map[string]string {
	versions := map[string]string{"go": runtime.Version()}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return versions
	}
	for _, dep := range info.Deps {
		for _, name := range recordedModules {
			if dep.Path == name {
				versions[name] = dep.Version
			}
		}
	}
	return versions
}

type publishRecord struct {
	Msg       uint32 `json:"msg"`
	ID        string `json:"id"` // base64 of the raw message id, as in the trace
	TPublish  int64  `json:"t_publish_unix_ns"`
	TReturned int64  `json:"t_returned_unix_ns"`
	Error     string `json:"error,omitempty"`
}

type dropRecord struct {
	Peer int `json:"peer"` // node index, -1 if not a neighbour of the topology
	// PeerID (base64 of the raw id) names a peer that is not a neighbour, e.g. one
	// met through peer exchange; the converter maps it to its node.
	PeerID string `json:"peer_id,omitempty"`
	Kind   string `json:"kind"`
	Reason string `json:"reason"`
	Count  uint64 `json:"count"`
}

// Result is node.json.
type Result struct {
	Index         int                     `json:"index"`
	PeerID        string                  `json:"peer_id"` // base64 of the raw id, as in the trace
	PeerIDText    string                  `json:"peer_id_text"`
	ReadyAfterNs  int64                   `json:"ready_after_ns"`
	ReadyBy       string                  `json:"ready_by"`
	StartUnixNs   int64                   `json:"start_unix_ns"`
	Publishes     []publishRecord         `json:"publishes"`
	Traffic       map[string]KindCounters `json:"traffic"`
	Drops         []dropRecord            `json:"drops"`
	ConnectErrors []string                `json:"connect_errors"`
	Versions      map[string]string       `json:"versions"`
	// Partial is every group the node heard of (partial-message workloads only).
	Partial []partialRecord `json:"partial,omitempty"`
}

// Node is one pubsub router on a host, subscribed to every topic of the scenario.
type Node struct {
	C      *Config
	H      host.Host
	PS     *pubsub.PubSub
	Events *FileTracer
	Raw    *RawTracer
	Topics []*pubsub.Topic
	subs   []*pubsub.Subscription
	Result Result
	ids    map[peer.ID]int
	// partial is the partial-messages application (nil: whole messages only).
	partial *partialApp
	// epoch is subtracted from every time the node writes (0: Unix time).
	epoch int64
}

// Options are how a node's files are written.
type Options struct {
	// Epoch is subtracted from every time the node writes (0: Unix ns).
	Epoch int64
	// Versions is node.json's record of what the node was built with.
	Versions map[string]string
	// TraceBuffer is the trace writer's buffer in bytes.
	TraceBuffer int
}

// Start opens the trace file, starts the router on h and subscribes to every topic;
// deliveries are read (and dropped: the trace has them) until ctx ends.
func Start(ctx context.Context, c *Config, h host.Host, o Options) (*Node, error) {
	n := &Node{C: c, H: h, ids: map[peer.ID]int{}, epoch: o.Epoch}
	for _, p := range c.Peers {
		_, id, err := NodeKey(c.Seed, p.Index)
		if err != nil {
			return nil, err
		}
		n.ids[id] = p.Index
	}
	if err := n.startPartial(); err != nil {
		return nil, err
	}
	var err error
	if n.Events, err = NewFileTracer(filepath.Join(c.Dir, TraceFile), c.TraceRPC, o.TraceBuffer); err != nil {
		return nil, err
	}
	n.Events.epoch = o.Epoch
	n.Raw = NewRawTracer()
	if n.partial != nil {
		n.Raw.countParts = n.partial.layout.countParts
	}
	if n.PS, err = n.newPubSub(ctx, h); err != nil {
		n.Events.Close()
		return nil, fmt.Errorf("starting %s: %w", c.Router, err)
	}
	for t := range c.Topics {
		if err := n.join(ctx, t); err != nil {
			n.Events.Close()
			return nil, err
		}
	}
	names := make([]string, c.Topics)
	for t := range names {
		names[t] = TopicName(t)
	}
	n.Raw.SetHello(names, n.partial != nil && n.partial.enabled())
	n.Result = Result{
		Index:      c.Index,
		PeerID:     base64.StdEncoding.EncodeToString([]byte(h.ID())),
		PeerIDText: h.ID().String(),
		Publishes:  []publishRecord{},
		Drops:      []dropRecord{},
		Versions:   o.Versions,
	}
	return n, nil
}

func (n *Node) newPubSub(ctx context.Context, h host.Host) (*pubsub.PubSub, error) {
	c := n.C
	opts, err := PubsubOptions(c, n.Events, n.Raw)
	if err != nil {
		return nil, err
	}
	if n.partial != nil && n.partial.enabled() {
		opts = append(opts, pubsub.WithPartialMessagesExtension(n.partial.extension()))
	}
	ps, err := newRouter(ctx, c, h, opts)
	if err == nil && n.partial != nil {
		n.partial.attach(ctx, ps)
	}
	return ps, err
}

func newRouter(ctx context.Context, c *Config, h host.Host, opts []pubsub.Option) (*pubsub.PubSub, error) {
	switch c.Router {
	case "gossipsub":
		return pubsub.NewGossipSub(ctx, h, opts...)
	case "floodsub":
		return pubsub.NewFloodSub(ctx, h, opts...)
	case "randomsub":
		return pubsub.NewRandomSub(ctx, h, c.RandomsubSize, opts...)
	}
	return nil, fmt.Errorf("router %q is not available (gossipsub, floodsub, randomsub)", c.Router)
}

func (n *Node) join(ctx context.Context, t int) error {
	var opts []pubsub.TopicOpt
	if n.partial != nil {
		opts = n.partial.topicOptions()
	}
	topic, err := n.PS.Join(TopicName(t), opts...)
	if err != nil {
		return err
	}
	n.Topics = append(n.Topics, topic)
	n.subs = append(n.subs, nil)
	return n.subscribe(ctx, t)
}

// subscribe subscribes to joined topic t and reads its deliveries until ctx ends or
// the subscription is cancelled.
func (n *Node) subscribe(ctx context.Context, t int) error {
	sub, err := n.Topics[t].Subscribe()
	if err != nil {
		return err
	}
	n.subs[t] = sub
	// Read deliveries so that go never drops them as undeliverable; the trace has them.
	// A partial-message node also learns from them that it holds every part.
	app, self := n.partial, n.H.ID()
	go func() {
		for {
			msg, err := sub.Next(ctx)
			if err != nil {
				return
			}
			if app != nil && msg.ReceivedFrom != self {
				app.onFull(msg.Data, msg.GetTopic(), msg.ReceivedFrom)
			}
		}
	}()
	return nil
}

// Leave unsubscribes from topic t (the router leaves it and tells its peers); the
// topic stays joined, so the node can still publish to it and Rejoin it.
func (n *Node) Leave(t int) {
	if n.subs[t] != nil {
		n.subs[t].Cancel()
		n.subs[t] = nil
	}
}

// Rejoin subscribes again to a topic left with Leave.
func (n *Node) Rejoin(ctx context.Context, t int) error {
	if n.subs[t] != nil {
		return nil
	}
	return n.subscribe(ctx, t)
}

// Restart starts a fresh router on a new host h after a crash, with the same tracers
// (its trace and counters continue), subscribed to every topic again.
func (n *Node) Restart(ctx context.Context, h host.Host) error {
	var err error
	n.H = h
	if n.PS, err = n.newPubSub(ctx, h); err != nil {
		return fmt.Errorf("restarting %s: %w", n.C.Router, err)
	}
	n.Topics, n.subs = nil, nil
	for t := range n.C.Topics {
		if err := n.join(ctx, t); err != nil {
			return err
		}
	}
	return nil
}

// payload is a message body of `size` bytes whose first four hold the message index,
// so that content-addressed ids (ethereum) differ between messages.
func payload(msg uint32, size int) []byte {
	data := make([]byte, size)
	if size >= 4 {
		binary.BigEndian.PutUint32(data, msg)
	}
	return data
}

// Publish sends this node's messages at their intended times: start + t_ns, with start
// in Unix ns on the node's clock. One goroutine publishes them one after another, so
// each traced publish id belongs to the call in progress.
func (n *Node) Publish(ctx context.Context, start int64, stop <-chan struct{}) {
	for _, pub := range n.C.Schedule {
		if !n.waitUntil(ctx, time.Unix(0, start+pub.TNs), stop) {
			return
		}
		n.PublishOne(ctx, pub)
	}
}

func (n *Node) waitUntil(ctx context.Context, target time.Time, stop <-chan struct{}) bool {
	timer := time.NewTimer(time.Until(target))
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-stop:
	case <-ctx.Done():
	}
	return false
}

// PublishOne publishes one message now and records it for node.json.
func (n *Node) PublishOne(ctx context.Context, pub Publication) {
	if n.partial != nil {
		n.publishGroup(pub)
		return
	}
	data := payload(pub.Msg, pub.Size)
	n.Events.expect()
	t0 := time.Now().UnixNano()
	err := n.Topics[pub.Topic].Publish(ctx, data)
	rec := publishRecord{Msg: pub.Msg, TPublish: t0 - n.epoch, TReturned: time.Now().UnixNano() - n.epoch}
	id := n.Events.take()
	rec.ID = base64.StdEncoding.EncodeToString(id)
	if err != nil {
		rec.Error = err.Error()
	}
	n.Result.Publishes = append(n.Result.Publishes, rec)
}

// RecordSkipped records a publication that could not be attempted, and why.
func (n *Node) RecordSkipped(pub Publication, why string) {
	now := time.Now().UnixNano() - n.epoch
	n.Result.Publishes = append(n.Result.Publishes, publishRecord{Msg: pub.Msg, TPublish: now, TReturned: now, Error: why})
}

// Finish closes the trace (every event on disk) and writes node.json.
func (n *Node) Finish() error {
	n.Events.Close()
	n.Raw.mu.Lock()
	n.Result.Traffic = map[string]KindCounters{}
	for k := range kindCount {
		n.Result.Traffic[kindNames[k]] = n.Raw.traffic[k]
	}
	for key, count := range n.Raw.drops {
		record := dropRecord{Peer: -1, Kind: key.kind, Reason: key.reason, Count: count}
		if index, ok := n.ids[key.peer]; ok {
			record.Peer = index
		} else if key.peer != "" {
			record.PeerID = base64.StdEncoding.EncodeToString([]byte(key.peer))
		}
		n.Result.Drops = append(n.Result.Drops, record)
	}
	n.Raw.mu.Unlock()
	if err := n.finishPartial(); err != nil {
		return err
	}
	raw, err := json.MarshalIndent(n.Result, "", " ")
	if err != nil {
		return err
	}
	path := filepath.Join(n.C.Dir, ResultFile)
	if err := os.WriteFile(path+".tmp", raw, 0o644); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}
