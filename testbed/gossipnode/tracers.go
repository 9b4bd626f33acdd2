package gossipnode

import (
	"bufio"
	"encoding/json"
	"os"
	"sync"
	"sync/atomic"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"google.golang.org/protobuf/proto"
)

// FileTracer writes go-libp2p-pubsub's trace events as ndjson, the encoding of the
// library's own JSONTracer, but with a Close that waits until every event is on disk:
// the orchestrator reads the file as soon as the node exits. Events are buffered in
// memory and written by one goroutine, so the pubsub event loop never waits on a write.
// It also records the message id of each local publish: PUBLISH_MESSAGE is traced
// synchronously inside Topic.Publish, on the publishing goroutine (validation.go
// ValidateLocal), so the id seen between `expect` and `take` is that publish's.
type FileTracer struct {
	mu       sync.Mutex
	buf      []*pb.TraceEvent
	wake     chan struct{} // never closed: Trace may still be called after Close
	quit     chan struct{}
	done     chan struct{}
	closed   bool
	keepRPC  bool
	lastID   []byte
	expected bool
	// epoch is subtracted from every event's timestamp (Unix ns) as it is written.
	epoch int64
	kept  atomic.Uint64
}

// Events is how many events the tracer has kept for the file so far.
func (t *FileTracer) Events() uint64 { return t.kept.Load() }

// DefaultTraceBuffer is the trace writer's buffer: few writes for one node per process.
const DefaultTraceBuffer = 1 << 20

// NewFileTracer writes to path through a buffer of `buffer` bytes.
func NewFileTracer(path string, keepRPC bool, buffer int) (*FileTracer, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	t := &FileTracer{wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{}), keepRPC: keepRPC}
	go t.write(f, buffer)
	return t, nil
}

func (t *FileTracer) Trace(evt *pb.TraceEvent) {
	switch evt.GetType() {
	case pb.TraceEvent_SEND_RPC, pb.TraceEvent_RECV_RPC, pb.TraceEvent_DROP_RPC:
		if !t.keepRPC {
			return
		}
	}
	t.mu.Lock()
	if evt.GetType() == pb.TraceEvent_PUBLISH_MESSAGE && t.expected {
		t.lastID = evt.GetPublishMessage().GetMessageID()
		t.expected = false
	}
	if t.closed {
		// pubsub keeps tracing while the host shuts down; those events are not kept.
		t.mu.Unlock()
		return
	}
	t.buf = append(t.buf, evt)
	t.mu.Unlock()
	t.kept.Add(1)
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// expect marks the start of a local publish; take returns the id traced since.
func (t *FileTracer) expect() {
	t.mu.Lock()
	t.expected, t.lastID = true, nil
	t.mu.Unlock()
}

func (t *FileTracer) take() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.expected = false
	return t.lastID
}

func (t *FileTracer) write(f *os.File, buffer int) {
	w := bufio.NewWriterSize(f, buffer)
	enc := json.NewEncoder(w)
	var batch []*pb.TraceEvent
	for {
		quitting := false
		select {
		case <-t.wake:
		case <-t.quit:
			quitting = true
		}
		t.mu.Lock()
		batch, t.buf = t.buf, batch[:0]
		t.mu.Unlock()
		for i, evt := range batch {
			if t.epoch != 0 {
				evt.Timestamp = proto.Int64(evt.GetTimestamp() - t.epoch)
			}
			_ = enc.Encode(evt) // a lost line shows up as a missing event, reported by the converter
			batch[i] = nil
		}
		if quitting {
			_ = w.Flush()
			_ = f.Close()
			close(t.done)
			return
		}
	}
}

// Close stops accepting events and returns once every earlier event is in the file.
func (t *FileTracer) Close() {
	t.mu.Lock()
	already := t.closed
	t.closed = true
	t.mu.Unlock()
	if !already {
		close(t.quit)
	}
	<-t.done
}

// KindCounters is one row of the traffic table.
type KindCounters struct {
	MsgsSent  uint64 `json:"msgs_sent"`
	BytesSent uint64 `json:"bytes_sent"`
	MsgsRecv  uint64 `json:"msgs_recv"`
	BytesRecv uint64 `json:"bytes_recv"`
}

type dropKey struct {
	peer   peer.ID
	kind   string
	reason string
}

// RawTracer counts traffic per kind with exact wire sizes, drops by peer, kind and
// reason, and keeps each topic's mesh size for the readiness signal. Its callbacks
// run synchronously on pubsub's goroutines, so they only count under a mutex.
type RawTracer struct {
	mu      sync.Mutex
	traffic [kindCount]KindCounters
	drops   map[dropKey]uint64
	mesh    map[string]map[peer.ID]bool
	// hello is the subscription announcement go writes on every new outbound stream
	// (PubSub.getHelloPacket); it bypasses SendRPC, so it is counted when the stream opens.
	hello *pb.RPC
	// countParts counts the parts of a partial message (set by the application).
	countParts func([]byte) uint64
	// partialRecv counts the partial RPCs received: those that never reached the
	// application were refused by the library (its group limits). go hides an RPC's
	// sender from tracers (pubsub.go RPC.from), so the count is per node, not per peer.
	partialRecv uint64
}

// SetHello records the topics this node announces to each new peer, and with them
// the extensions control message when the node enabled partial messages
// (extensions.go PeerExtensions.ExtendRPC, on the hello: extensionsState.OnNewOutboundStream).
func (r *RawTracer) SetHello(topics []string, partial bool) {
	rpc := &pb.RPC{}
	for _, t := range topics {
		// go v0.17.0 sets both partial-message flags on every entry, true or false; a
		// set bool is 2 bytes either way.
		rpc.Subscriptions = append(rpc.Subscriptions, &pb.RPC_SubOpts{
			Topicid: proto.String(t), Subscribe: proto.Bool(true),
			RequestsPartial: proto.Bool(false), SupportsSendingPartial: proto.Bool(false),
		})
	}
	if partial {
		rpc.Control = &pb.ControlMessage{Extensions: &pb.ControlExtensions{PartialMessages: proto.Bool(true)}}
	}
	r.mu.Lock()
	r.hello = rpc
	r.mu.Unlock()
}

func NewRawTracer() *RawTracer {
	return &RawTracer{drops: map[dropKey]uint64{}, mesh: map[string]map[peer.ID]bool{}}
}

func (r *RawTracer) SendRPC(rpc *pubsub.RPC, _ peer.ID) {
	m := measureRPCParts(&rpc.RPC, r.countParts)
	r.mu.Lock()
	for k := range kindCount {
		r.traffic[k].MsgsSent += m.items[k]
		r.traffic[k].BytesSent += m.bytes[k]
	}
	r.mu.Unlock()
}

func (r *RawTracer) RecvRPC(rpc *pubsub.RPC) {
	m := measureRPCParts(&rpc.RPC, r.countParts)
	r.mu.Lock()
	if rpc.Partial != nil {
		r.partialRecv++
	}
	for k := range kindCount {
		r.traffic[k].MsgsRecv += m.items[k]
		r.traffic[k].BytesRecv += m.bytes[k]
	}
	r.mu.Unlock()
}

// DropRPC: the peer's outbound queue was full. Every item of the RPC is lost, except
// GRAFT/PRUNE, which go piggybacks on a later RPC; they are counted all the same,
// since the drop event is what is reported.
func (r *RawTracer) DropRPC(rpc *pubsub.RPC, p peer.ID) {
	m := measureRPCParts(&rpc.RPC, r.countParts)
	r.mu.Lock()
	for k := range kindCount {
		if m.items[k] > 0 {
			r.drops[dropKey{p, kindNames[k], "outbound-queue-full"}] += m.items[k]
		}
	}
	r.mu.Unlock()
}

// rejectReasons names go's reject reasons as the model names them, so every backend's
// drops table reads alike; the others (bad signatures, validator verdicts) cannot
// happen with honest nodes and keep go's text.
var rejectReasons = map[string]string{
	pubsub.RejectValidationQueueFull: "validation-queue-full",
	pubsub.RejectValidationThrottled: "validation-throttled",
}

func (r *RawTracer) RejectMessage(msg *pubsub.Message, reason string) {
	if named, ok := rejectReasons[reason]; ok {
		reason = named
	}
	r.mu.Lock()
	r.drops[dropKey{msg.ReceivedFrom, kindNames[kindPayload], reason}]++
	r.mu.Unlock()
}

func (r *RawTracer) UndeliverableMessage(msg *pubsub.Message) {
	r.mu.Lock()
	r.drops[dropKey{msg.ReceivedFrom, kindNames[kindPayload], "undeliverable"}]++
	r.mu.Unlock()
}

func (r *RawTracer) Graft(p peer.ID, topic string) {
	r.mu.Lock()
	if r.mesh[topic] == nil {
		r.mesh[topic] = map[peer.ID]bool{}
	}
	r.mesh[topic][p] = true
	r.mu.Unlock()
}

func (r *RawTracer) Prune(p peer.ID, topic string) {
	r.mu.Lock()
	delete(r.mesh[topic], p)
	r.mu.Unlock()
}

func (r *RawTracer) MeshSize(topic string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.mesh[topic])
}

func (r *RawTracer) OnNewOutboundStream(peer.ID, protocol.ID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.hello == nil {
		return
	}
	m := measureRPC(r.hello)
	for k := range kindCount {
		r.traffic[k].MsgsSent += m.items[k]
		r.traffic[k].BytesSent += m.bytes[k]
	}
}

func (r *RawTracer) OnClosedOutboundStream(peer.ID)   {}
func (r *RawTracer) Join(string)                      {}
func (r *RawTracer) Leave(string)                     {}
func (r *RawTracer) ValidateMessage(*pubsub.Message)  {}
func (r *RawTracer) DeliverMessage(*pubsub.Message)   {}
func (r *RawTracer) DuplicateMessage(*pubsub.Message) {}
func (r *RawTracer) ThrottlePeer(peer.ID)             {}

var _ pubsub.RawTracer = (*RawTracer)(nil)
var _ pubsub.EventTracer = (*FileTracer)(nil)
