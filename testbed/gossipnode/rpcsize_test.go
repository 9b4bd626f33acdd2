package gossipnode

import (
	"testing"

	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"google.golang.org/protobuf/proto"
)

func id(n int) string { // a go message id: 38-byte peer id + 8-byte seqno
	b := make([]byte, 46)
	b[45] = byte(n)
	return string(b)
}

func TestKindsAddUpToTheMarshalledFrame(t *testing.T) {
	topic := TopicName(0)
	msg := &pb.Message{From: make([]byte, 38), Data: make([]byte, 1000), Seqno: make([]byte, 8), Topic: &topic, Signature: make([]byte, 64)}
	sub := true
	backoff := uint64(60)
	cases := map[string]*pb.RPC{
		"payload":   {Publish: []*pb.Message{msg}},
		"two":       {Publish: []*pb.Message{msg, msg}},
		"subscribe": {Subscriptions: []*pb.RPC_SubOpts{{Subscribe: &sub, Topicid: &topic}}},
		"control": {Control: &pb.ControlMessage{
			Ihave:     []*pb.ControlIHave{{TopicID: &topic, MessageIDs: []string{id(1), id(2)}}},
			Iwant:     []*pb.ControlIWant{{MessageIDs: []string{id(3)}}},
			Graft:     []*pb.ControlGraft{{TopicID: &topic}},
			Prune:     []*pb.ControlPrune{{TopicID: &topic, Backoff: &backoff}},
			Idontwant: []*pb.ControlIDontWant{{MessageIDs: []string{id(4)}}},
		}},
		"mixed": {Publish: []*pb.Message{msg}, Control: &pb.ControlMessage{Graft: []*pb.ControlGraft{{TopicID: &topic}}}},
	}
	for name, rpc := range cases {
		m := measureRPC(rpc)
		var sum uint64
		for _, b := range m.bytes {
			sum += b
		}
		want, err := framedSize(rpc)
		if err != nil {
			t.Fatal(err)
		}
		if sum != want {
			t.Errorf("%s: kinds add up to %d bytes, the marshalled frame is %d", name, sum, want)
		}
	}
}

func TestSignedKilobyteMessageIsTheSizeProtocolNotesGive(t *testing.T) {
	// protocol-notes §5: a signed Ed25519 message of 1024 data bytes is 1170 bytes framed
	// with a 20-character topic.
	topic := TopicName(0)
	msg := &pb.Message{From: make([]byte, 38), Data: make([]byte, 1024), Seqno: make([]byte, 8), Topic: &topic, Signature: make([]byte, 64)}
	m := measureRPC(&pb.RPC{Publish: []*pb.Message{msg}})
	if m.bytes[kindPayload] != 1170 || m.items[kindPayload] != 1 {
		t.Fatalf("payload %d bytes / %d items, want 1170 / 1", m.bytes[kindPayload], m.items[kindPayload])
	}
}

func TestItemsCountIdsAndTopicEntries(t *testing.T) {
	topic := TopicName(1)
	rpc := &pb.RPC{Control: &pb.ControlMessage{
		Ihave: []*pb.ControlIHave{{TopicID: &topic, MessageIDs: []string{id(1), id(2), id(3)}}},
		Iwant: []*pb.ControlIWant{{MessageIDs: []string{id(1), id(2)}}},
		Graft: []*pb.ControlGraft{{TopicID: &topic}, {TopicID: &topic}},
	}}
	m := measureRPC(rpc)
	if m.items[kindIHave] != 3 || m.items[kindIWant] != 2 || m.items[kindGraft] != 2 {
		t.Fatalf("items %v", m.items)
	}
	// Framing goes to GRAFT, the first kind present in the model's order.
	entry := fieldLen(uint64(proto.Size(rpc.Control.Graft[0])))
	if m.bytes[kindGraft] <= 2*entry {
		t.Fatalf("graft carries no overhead: %d bytes for two %d-byte entries", m.bytes[kindGraft], entry)
	}
	if m.bytes[kindIHave] != fieldLen(uint64(proto.Size(rpc.Control.Ihave[0]))) {
		t.Fatalf("ihave was charged overhead")
	}
}
