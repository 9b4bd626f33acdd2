package main

import (
	"testing"
	"time"

	pb "github.com/libp2p/go-libp2p-pubsub/pb"
)

const topic = "t"

func ev(t pb.TraceEvent_Type, at time.Duration) *pb.TraceEvent {
	ns := int64(at)
	return &pb.TraceEvent{Type: t.Enum(), Timestamp: &ns}
}

func graft(p string) *pb.TraceEvent {
	e := ev(pb.TraceEvent_GRAFT, 0)
	tp := topic
	e.Graft = &pb.TraceEvent_Graft{PeerID: []byte(p), Topic: &tp}
	return e
}

func deliver(id, from string, at time.Duration) *pb.TraceEvent {
	e := ev(pb.TraceEvent_DELIVER_MESSAGE, at)
	tp := topic
	e.DeliverMessage = &pb.TraceEvent_DeliverMessage{MessageID: []byte(id), Topic: &tp, ReceivedFrom: []byte(from)}
	return e
}

// recv is an RPC from `from` asking for `iwant` and refusing `dontwant`, in one RPC.
func recv(from string, at time.Duration, iwant, dontwant []string) *pb.TraceEvent {
	e := ev(pb.TraceEvent_RECV_RPC, at)
	ctl := &pb.TraceEvent_ControlMeta{}
	if iwant != nil {
		ctl.Iwant = []*pb.TraceEvent_ControlIWantMeta{{MessageIDs: bytes(iwant)}}
	}
	if dontwant != nil {
		ctl.Idontwant = []*pb.TraceEvent_ControlIDontWantMeta{{MessageIDs: bytes(dontwant)}}
	}
	e.RecvRPC = &pb.TraceEvent_RecvRPC{ReceivedFrom: []byte(from), Meta: &pb.TraceEvent_RPCMeta{Control: ctl}}
	return e
}

func bytes(ids []string) [][]byte {
	out := make([][]byte, len(ids))
	for i, id := range ids {
		out[i] = []byte(id)
	}
	return out
}

func counter() *savedCounter {
	// heartbeat 1 s: IDONTWANT kept 3 s, the message cache 6 s
	s := newSavedCounter(protocolConfig{HeartbeatNs: int64(time.Second), HistoryLength: 6})
	for _, p := range []string{"A", "B", "C"} {
		s.observe(graft(p))
	}
	return s
}

// Publish skips mesh peers that sent IDONTWANT, but never counts the peer the message
// came from, which it would not send to anyway (gossipsub.go Publish).
func TestSavedOnForward(t *testing.T) {
	s := counter()
	s.observe(recv("A", 0, nil, []string{"x"}))
	s.observe(recv("B", 0, nil, []string{"x"}))
	s.observe(deliver("x", "A", time.Millisecond))
	if s.saved["B"] != 1 || s.saved["A"] != 0 || s.saved["C"] != 0 {
		t.Fatalf("saved %v, want B:1 only", s.saved)
	}
}

// handleIWant runs before handleIDontWant in HandleRPC: an RPC's own IDONTWANT does not
// stop its IWANT, a later IWANT is refused; an id the node does not hold is not counted.
func TestSavedOnIWant(t *testing.T) {
	s := counter()
	s.observe(deliver("x", "A", 0))
	s.observe(recv("C", time.Millisecond, []string{"x"}, []string{"x"}))
	if s.saved["C"] != 0 {
		t.Fatalf("same-RPC IDONTWANT counted: %v", s.saved)
	}
	s.observe(recv("C", 2*time.Millisecond, []string{"x", "unknown"}, nil))
	if s.saved["C"] != 1 {
		t.Fatalf("saved %v, want C:1", s.saved)
	}
}

// handleIDontWant keeps at most MaxIDontWantLength (10) ids of one RPC, for
// IDontWantMessageTTL (3) heartbeats.
func TestIDontWantLimits(t *testing.T) {
	s := counter()
	ids := []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10"}
	s.observe(recv("B", 0, nil, ids))
	s.observe(deliver("9", "A", time.Second))
	s.observe(deliver("10", "A", time.Second))
	if s.saved["B"] != 1 {
		t.Fatalf("saved %v, want B:1 (the 11th id ignored)", s.saved)
	}
	s.observe(deliver("0", "A", 3*time.Second+time.Millisecond))
	if s.saved["B"] != 1 {
		t.Fatalf("saved %v: an IDONTWANT older than 3 heartbeats counted", s.saved)
	}
}
