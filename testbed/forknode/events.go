package main

import (
	"bufio"
	"encoding/json"
	"os"
	"sync"

	pb "github.com/libp2p/go-libp2p-pubsub/pb"
)

// eventFile writes the fork's trace events the converter reads
// (python/gossiplab/backends/testbed/convert.py) as JSON lines: publishes, deliveries,
// duplicates, and new pubsub peers. Other types are left out: the fork numbers them
// differently from v0.17.0 (its type 4 is ADD_PEER, v0.17.0's ON_NEW_OUTBOUND_STREAM).
type eventFile struct {
	mu     sync.Mutex
	saved  *savedCounter // fed every event, written or not
	f      *os.File
	w      *bufio.Writer
	enc    *json.Encoder
	lastID []byte // the id of the last PUBLISH_MESSAGE: the message this node just published
}

func newEventFile(path string, saved *savedCounter) (*eventFile, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	return &eventFile{f: f, w: w, enc: json.NewEncoder(w), saved: saved}, nil
}

func (e *eventFile) Trace(evt *pb.TraceEvent) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.enc == nil {
		return // closed: finish reads the counter now
	}
	e.saved.observe(evt)
	switch evt.GetType() {
	case pb.TraceEvent_PUBLISH_MESSAGE, pb.TraceEvent_DELIVER_MESSAGE, pb.TraceEvent_DUPLICATE_MESSAGE:
	case pb.TraceEvent_ADD_PEER:
		// The fork adds a pubsub peer when its stream to it is open (pubsub.go
		// newPeerStream): written as v0.17.0's ON_NEW_OUTBOUND_STREAM (type 4), from
		// which the converter learns which pairs talked pubsub.
		_ = e.enc.Encode(map[string]any{
			"type": 4, "timestamp": evt.GetTimestamp(), "peerID": evt.GetPeerID(),
			"onNewOutboundStream": map[string]any{"peerID": evt.GetAddPeer().GetPeerID()},
		})
		return
	default:
		return
	}
	if evt.GetType() == pb.TraceEvent_PUBLISH_MESSAGE {
		e.lastID = evt.GetPublishMessage().GetMessageID()
	}
	_ = e.enc.Encode(evt) // a lost line shows up as a missing event in the converter
}

// takeID returns the id of the message published since the last call.
func (e *eventFile) takeID() []byte {
	e.mu.Lock()
	defer e.mu.Unlock()
	id := e.lastID
	e.lastID = nil
	return id
}

func (e *eventFile) close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.enc == nil {
		return
	}
	_ = e.w.Flush()
	_ = e.f.Close()
	e.enc = nil
}
