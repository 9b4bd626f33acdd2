package simnet

import (
	"io"
	"testing"
	"time"

	"github.com/gossiplab/gossiplab/testbed/gossipnode"
)

// Constants of quic-go v0.64.1 that a transfer's closed-form time depends on.
const (
	// internal/congestion/cubic_sender.go: initialCongestionWindow (packets) ×
	// initialMaxDatagramSize (protocol.InitialPacketSize): the bytes in flight before
	// the first ACK. The window is in bytes; path-MTU discovery does not change it.
	quicInitialWindow = 32 * 1280
	// The largest QUIC packet (protocol.MaxPacketBufferSize) once path-MTU discovery has
	// probed the 1500-byte links, as it has seconds after the handshake.
	quicMaxPacket = 1452
	// A 1-RTT packet carrying stream data: short header (1 flags byte, a 4-byte
	// connection id (protocol.DefaultConnectionIDLength), a 2-byte packet number), the
	// AEAD tag (16) and a STREAM frame header (type, stream id, 4-byte offset; the frame
	// filling the packet omits its length).
	quicPacketOverhead = 1 + 4 + 2 + 16 + 1 + 1 + 4
)

// rpcFraming is what go-libp2p-pubsub adds around a message's data on the stream: the
// varint length prefix of the RPC, the RPC's publish field, the message's data and
// topic fields (StrictNoSign: no from, seqno or signature) — a bound, not exact.
const rpcFraming = 64

// lineDelivery publishes one message of `size` bytes from node 0 to node 1 over a
// warm two-node line and returns how long after the publication node 1 delivered it.
func lineDelivery(t *testing.T, link string, bps int64, latency time.Duration, size int) time.Duration {
	t.Helper()
	publishAt := 5 * time.Second // connected, subscribed and grafted long before
	cfg := testRun(2, []edge{{0, 1}}, bps, latency, int64(publishAt+5*time.Second))
	cfg.Link = link
	cfg.Nodes[0].Schedule = []gossipnode.Publication{{Msg: 0, TNs: int64(publishAt), Size: size}}
	out := t.TempDir()
	if _, err := runConfig(t, cfg, out, &progress{w: io.Discard}); err != nil {
		t.Fatal(err)
	}
	times := deliveries(t, out, 1)
	if len(times) != 1 {
		t.Fatalf("node 1 delivered %d times, want once", len(times))
	}
	return time.Duration(times[0]) - publishAt
}

// wireBytes is what `size` bytes of message data occupy on a link in full QUIC packets.
func wireBytes(size int) float64 {
	payload := float64(size + rpcFraming)
	perPacket := float64(quicMaxPacket - quicPacketOverhead)
	return payload / perPacket * quicMaxPacket
}

// Bandwidth-limited: the latency is so short that the initial window covers many
// round trips' worth of bytes (bandwidth × RTT = 2.5 kB ≪ 40 kB), so the uplink never
// idles: the last byte arrives after the message's wire bytes at the uplink's rate,
// and the latency, plus what the downlink adds:
//   - lean links store and forward: the last packet is serialized again on the
//     receiver's downlink, at the same rate;
//   - simnet's links are token buckets holding one MTU (RateLink's burst), so the first
//     1,500 bytes leave at once, and the downlink, at the same rate, regains a token per
//     packet and adds nothing.
func TestLineBandwidthLimitedDeliveryIsSerializationPlusLatency(t *testing.T) {
	const bps = 10_000_000
	latency := time.Millisecond
	size := 64 << 10
	serialize := func(bytes float64) time.Duration { return time.Duration(bytes * 8 / bps * 1e9) }
	for link, extra := range map[string]float64{"lean": quicMaxPacket, "simnet": -mtu} {
		got := lineDelivery(t, link, bps, latency, size)
		want := latency + serialize(wireBytes(size)+extra)
		// The bound on rpcFraming and acks riding on data packets: within 1 %.
		if tolerance := want / 100; got < want-tolerance || got > want+tolerance {
			t.Errorf("%s: delivered after %v, want %v ± 1 %% (serialization of %.0f wire bytes at %d bit/s + %v)",
				link, got, want, wireBytes(size), bps, latency)
		}
	}
}

// Window-limited: at 1 Gbit/s and 50 ms one way, serialization is about 1 ms and the
// congestion window is what limits. Slow start sends the initial window, then doubles
// it each round trip; a 128 KiB message needs more than the first two rounds
// (40,960 + 81,920 bytes), so its last packet leaves two round trips after the first,
// paced over a small part of the third round, and arrives one latency later: 5 × the
// one-way latency, plus a few ms.
func TestLineWindowLimitedDeliveryFollowsSlowStart(t *testing.T) {
	const bps = 1_000_000_000
	latency := 50 * time.Millisecond
	size := 128 << 10
	if wire := wireBytes(size); wire <= 3*quicInitialWindow || wire > 7*quicInitialWindow {
		t.Fatalf("the message's %.0f wire bytes do not need exactly three slow-start rounds", wire)
	}
	rtt := 2 * latency
	want := 2*rtt + latency
	for _, link := range []string{"lean", "simnet"} {
		got := lineDelivery(t, link, bps, latency, size)
		// Pacing the third round's remainder (about 11 kB) at twice the window per RTT
		// (slow start's pacing rate, 3.3 MB/s) and serializing at 1 Gbit/s take < 5 ms.
		if slack := 5 * time.Millisecond; got < want || got > want+slack {
			t.Errorf("%s: delivered after %v, want between %v and %v (three slow-start rounds)", link, got, want, want+slack)
		}
	}
}
