package main

import (
	"testing"

	pb "github.com/libp2p/go-libp2p-pubsub/pb"
)

// The kinds of one RPC add up to the bytes comm.go writes: a varint length, then the
// gogo-marshalled RPC; ids are counted per kind.
func TestMeasureAddsUpToTheWire(t *testing.T) {
	tp, id := "topic", "0123456789abcdef0123"
	rpc := &pb.RPC{
		Publish: []*pb.Message{{Data: make([]byte, 300), Topic: &tp}},
		Control: &pb.ControlMessage{
			Idontwant: []*pb.ControlIDontWant{{MessageIDs: []string{id, id}}},
			Iannounce: []*pb.ControlIAnnounce{{TopicID: &tp, MessageID: &id}},
			Ineed:     []*pb.ControlINeed{{MessageID: &id}},
		},
	}
	raw, err := rpc.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	wire := uint64(len(raw)) + varintLen(uint64(len(raw)))
	got := measure(rpc)
	var sum uint64
	for _, v := range got {
		sum += v[1]
	}
	if sum != wire {
		t.Fatalf("kinds add up to %d B, the wire has %d", sum, wire)
	}
	items := map[string]uint64{"payload": 1, "idontwant": 2, "iannounce": 1, "ineed": 1}
	for k, want := range items {
		if got[k][0] != want {
			t.Errorf("%s: %d ids, want %d", k, got[k][0], want)
		}
	}
}
