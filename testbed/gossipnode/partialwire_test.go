package gossipnode

import (
	"testing"

	"github.com/libp2p/go-libp2p-pubsub/partialmessages/bitmap"
	pb "github.com/libp2p/go-libp2p-pubsub/pb"
)

// The reference group of the design notes: P = 48 parts of 2 KiB, no proof, a
// 32-byte group id and the 20-character topic.
func referenceLayout() partLayout {
	return newPartLayout(&PartialConfig{Parts: 48, PartSize: 2048, GroupIDSize: 32})
}

func partialRPC(l partLayout, parts int, meta bool) *pb.RPC {
	topic := TopicName(0)
	ext := &pb.PartialMessagesExtension{TopicID: &topic, GroupID: l.groupID(7)}
	if parts > 0 {
		which := l.none()
		for i := range parts {
			which.Set(i)
		}
		ext.PartialMessage = l.encode(7, which)
	}
	if meta {
		ext.PartsMetadata = l.all()
	}
	return &pb.RPC{Partial: ext}
}

// Framed sizes worked out by hand from rpc.proto (RPC.partial = 10) and the encoding:
// topic field 22, group field 34, metadata field 1+1+6, data field 1+vl(D)+D with
// D = 6 + k·2048, then RPC field 10's header and the uvarint frame.
func TestPartialRPCSizesMatchTheHandWorkedTable(t *testing.T) {
	l := referenceLayout()
	cases := []struct {
		name         string
		parts        int
		meta         bool
		framed       uint64
		partial      uint64
		partsmeta    uint64
		items, metas uint64
	}{
		{"metadata only", 0, true, 67, 0, 67, 0, 1},
		{"one part", 1, false, 2118, 2118, 0, 1, 0},
		{"one part and metadata", 1, true, 2126, 2118, 8, 1, 1},
		{"five parts", 5, false, 10310, 10310, 0, 5, 0},
		{"eight parts, 3-byte varints", 8, false, 16457, 16457, 0, 8, 0},
		{"eager push of all 48 with metadata", 48, true, 98385, 98377, 8, 48, 1},
	}
	for _, c := range cases {
		rpc := partialRPC(l, c.parts, c.meta)
		marshalled, err := framedSize(rpc)
		if err != nil {
			t.Fatal(err)
		}
		m := measureRPCParts(rpc, l.countParts)
		if marshalled != c.framed || m.bytes[kindPartial]+m.bytes[kindPartsMeta] != c.framed {
			t.Errorf("%s: marshalled %d, measured %d, want %d", c.name, marshalled, m.bytes[kindPartial]+m.bytes[kindPartsMeta], c.framed)
		}
		if m.bytes[kindPartial] != c.partial || m.bytes[kindPartsMeta] != c.partsmeta {
			t.Errorf("%s: partial %d / partsmeta %d bytes, want %d / %d", c.name, m.bytes[kindPartial], m.bytes[kindPartsMeta], c.partial, c.partsmeta)
		}
		if m.items[kindPartial] != c.items || m.items[kindPartsMeta] != c.metas {
			t.Errorf("%s: %d parts / %d metadata, want %d / %d", c.name, m.items[kindPartial], m.items[kindPartsMeta], c.items, c.metas)
		}
		if got := partialRPCSize(rpc.Partial); got != c.framed {
			t.Errorf("%s: partialRPCSize %d, want %d", c.name, got, c.framed)
		}
	}
}

// The full message of the reference group, StrictNoSign: data field 1+3+98304, topic
// 22, Message 98330, publish field 1+3+98330, frame 3.
func TestFullMessageOfTheReferenceGroupIs98337Bytes(t *testing.T) {
	l := referenceLayout()
	topic := TopicName(0)
	rpc := &pb.RPC{Publish: []*pb.Message{{Data: l.full(7), Topic: &topic}}}
	if m := measureRPC(rpc); m.bytes[kindPayload] != 98337 {
		t.Fatalf("full message %d bytes, want 98337", m.bytes[kindPayload])
	}
}

// A hello with one topic is 31 bytes (a 30-byte SubOpts entry with both partial flags
// and the frame); the extensions control message adds 6 (ControlExtensions 2, its
// field in ControlMessage 2 more, RPC.control 2), of which the extensions kind gets
// its 4-byte field and subscribe the control wrapper.
func TestHelloWithAndWithoutTheExtensionsMessage(t *testing.T) {
	for _, c := range []struct {
		partial              bool
		subscribe, extension uint64
	}{{false, 31, 0}, {true, 33, 4}} {
		r := NewRawTracer()
		r.SetHello([]string{TopicName(0)}, c.partial)
		m := measureRPC(r.hello)
		want, _ := framedSize(r.hello)
		if m.bytes[kindSubscribe] != c.subscribe || m.bytes[kindExtensions] != c.extension || want != c.subscribe+c.extension {
			t.Errorf("partial=%v: subscribe %d, extensions %d, frame %d; want %d, %d", c.partial, m.bytes[kindSubscribe], m.bytes[kindExtensions], want, c.subscribe, c.extension)
		}
	}
}

func TestPartsRoundTripAndBadPartsAreRefused(t *testing.T) {
	l := newPartLayout(&PartialConfig{Parts: 11, PartSize: 100, PartOverhead: 48, GroupIDSize: 32})
	which := l.none()
	for _, i := range []int{0, 3, 10} {
		which.Set(i)
	}
	data := l.encode(5, which)
	if len(data) != 2+3*148 {
		t.Fatalf("encoded %d bytes, want %d", len(data), 2+3*148)
	}
	got, err := l.decode(5, data)
	if err != nil || string(got) != string(which) {
		t.Fatalf("decoded %v (%v), want %v", got, err, which)
	}
	if _, err := l.decode(6, data); err == nil {
		t.Fatal("parts of message 5 accepted as message 6's")
	}
	if _, err := l.decode(5, data[:len(data)-1]); err == nil {
		t.Fatal("a truncated partial message was accepted")
	}
	if n := l.countParts(data); n != 3 {
		t.Fatalf("countParts %d, want 3", n)
	}
	msg, err := l.msgOfGroup(l.groupID(123456))
	if err != nil || msg != 123456 {
		t.Fatalf("group id round trip: %d, %v", msg, err)
	}
	if missing(bitmap.Bitmap{0b1011}, bitmap.Bitmap{0b0010})[0] != 0b1001 {
		t.Fatal("missing is not have minus peer")
	}
}
