package gossipnode

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/libp2p/go-libp2p"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/x/simlibp2p"
	"github.com/marcopolo/simnet"
	ma "github.com/multiformats/go-multiaddr"
)

// Real go-libp2p-pubsub hosts over go-libp2p's simulated QUIC network, in a synctest
// bubble (virtual time), as go's own partial-message tests run (pubsub_test.go
// getDefaultHosts). Each test's expectations come from go's code, worked by hand.

const (
	testLatency = 25 * time.Millisecond // one way
	testBps     = 50_000_000
	publishAt   = 3 * time.Second // meshes are formed by the heartbeats before
)

// testProtocol is go's default gossipsub parameters, unsigned with content ids.
func testProtocol() ProtocolConfig {
	g := pubsub.DefaultGossipSubParams()
	return ProtocolConfig{
		D: g.D, Dlo: g.Dlo, Dhi: g.Dhi, Dlazy: g.Dlazy, Dscore: g.Dscore, Dout: g.Dout,
		HeartbeatNs: int64(g.HeartbeatInterval), HeartbeatInitialDelayNs: int64(g.HeartbeatInitialDelay),
		HistoryLength: g.HistoryLength, HistoryGossip: g.HistoryGossip, GossipFactor: g.GossipFactor,
		GossipRetransmission: g.GossipRetransmission, FanoutTTLNs: int64(g.FanoutTTL),
		SeenTTLNs: int64(2 * time.Minute), PruneBackoffNs: int64(g.PruneBackoff),
		UnsubscribeBackoffNs: int64(g.UnsubscribeBackoff), GraftFloodThresholdNs: int64(g.GraftFloodThreshold),
		OpportunisticGraftTicks: g.OpportunisticGraftTicks, OpportunisticGraftPeers: g.OpportunisticGraftPeers,
		MaxIHaveLength: g.MaxIHaveLength, MaxIHaveMessages: g.MaxIHaveMessages,
		IWantFollowupNs: int64(g.IWantFollowupTime), IDontWantThreshold: g.IDontWantMessageThreshold,
		PeerOutboundQueue: 32, ValidateQueue: 32, Signing: "strict-no-sign", MessageID: "ethereum",
	}
}

// refPartial is the design notes' reference group (P = 48 parts of 2 KiB, 32-byte
// group ids), eager push off, full-message fallback on, go's default limits.
func refPartial(role string) *PartialConfig {
	return &PartialConfig{
		Parts: 48, PartSize: 2048, GroupIDSize: 32, FullFallback: true, Rule: "go-reference",
		GroupTTLHeartbeats: 3, Role: role, Held: map[string]string{},
	}
}

// holdAllBut sets node c's mempool for message msg: every part except `lack`.
func holdAllBut(c *PartialConfig, msg int, lack ...int) {
	l := newPartLayout(c)
	have := l.all()
	for _, i := range lack {
		have.Clear(i)
	}
	c.Held[strconv.Itoa(msg)] = hex.EncodeToString(have)
}

// testNodes is n configs on one topic, every pair connected, node i in role roles[i].
func testNodes(t *testing.T, roles ...string) []*Config {
	cfgs := make([]*Config, len(roles))
	for i, role := range roles {
		cfgs[i] = &Config{
			Index: i, Seed: 1, Router: "gossipsub", Version: "1.3", Protocol: testProtocol(),
			Topics: 1, Dir: t.TempDir(), Schedule: []Publication{}, Partial: refPartial(role),
		}
	}
	for i := range cfgs {
		for j := range cfgs {
			if i != j {
				cfgs[i].Peers = append(cfgs[i].Peers, PeerConfig{Index: j, Dial: i < j})
			}
		}
	}
	return cfgs
}

func simAddr(i int) string {
	return fmt.Sprintf("/ip4/%s/udp/8000/quic-v1", simnet.IntToPublicIPv4(i))
}

// runNodes starts the nodes in a bubble, connects them, runs script (times relative
// to the start), stops everything and returns the nodes, finished.
func runNodes(t *testing.T, cfgs []*Config, script func(ctx context.Context, at func(time.Duration), nodes []*Node)) []*Node {
	t.Helper()
	var nodes []*Node
	synctest.Test(t, func(t *testing.T) {
		nw := &simnet.Simnet{LatencyFunc: simnet.StaticLatency(testLatency)}
		link := simnet.LinkSettings{BitsPerSecond: testBps}
		ctx, cancel := context.WithCancel(context.Background())
		var hosts []interface{ Close() error }
		start := time.Now()
		for i, c := range cfgs {
			key, _, err := NodeKey(c.Seed, i)
			if err != nil {
				t.Fatal(err)
			}
			h, err := libp2p.New(libp2p.Identity(key), libp2p.ListenAddrStrings(simAddr(i)),
				simlibp2p.QUICSimnet(nw, simnet.NodeBiDiLinkSettings{Uplink: link, Downlink: link}),
				libp2p.DisableIdentifyAddressDiscovery(), libp2p.ResourceManager(&network.NullResourceManager{}),
				libp2p.DisableRelay(), libp2p.DisableMetrics())
			if err != nil {
				t.Fatal(err)
			}
			hosts = append(hosts, h)
			n, err := Start(ctx, c, h, Options{Epoch: start.UnixNano(), TraceBuffer: 1 << 16})
			if err != nil {
				t.Fatal(err)
			}
			nodes = append(nodes, n)
		}
		nw.Start()
		for i, n := range nodes {
			for _, p := range cfgs[i].Peers {
				if p.Dial {
					other := nodes[p.Index].H
					info := peer.AddrInfo{ID: other.ID(), Addrs: []ma.Multiaddr{ma.StringCast(simAddr(p.Index))}}
					if err := n.H.Connect(ctx, info); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		at := func(d time.Duration) { time.Sleep(time.Until(start.Add(d))) }
		script(ctx, at, nodes)
		cancel()
		for _, h := range hosts {
			_ = h.Close()
		}
		for _, n := range nodes {
			if err := n.Finish(); err != nil {
				t.Error(err)
			}
		}
		nw.Close()
	})
	return nodes
}

// publishGroupAt publishes message msg as a group from node `from` at time `when`,
// then lets the network run `settle` longer.
func publishGroupAt(from int, msg uint32, when, settle time.Duration) func(context.Context, func(time.Duration), []*Node) {
	return func(ctx context.Context, at func(time.Duration), nodes []*Node) {
		at(when)
		nodes[from].PublishOne(ctx, Publication{Msg: msg, TNs: int64(when)})
		at(when + settle)
	}
}

func record(t *testing.T, n *Node, msg uint32) partialRecord {
	t.Helper()
	for _, r := range n.Result.Partial {
		if r.Msg == msg {
			return r
		}
	}
	t.Fatalf("node %d has no record of group %d", n.C.Index, msg)
	return partialRecord{}
}

func partLines(t *testing.T, n *Node) []partLine {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(n.C.Dir, PartsFile))
	if err != nil {
		t.Fatal(err)
	}
	var lines []partLine
	for _, text := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var line partLine
		if err := json.Unmarshal([]byte(text), &line); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, line)
	}
	return lines
}

func traffic(n *Node, kind int) KindCounters { return n.Result.Traffic[kindNames[kind]] }

// T1. A publishes; X holds every part. A's state for X is zero, so A sends its
// metadata only (67 B); X learns the group complete from its mempool and answers
// with its metadata once (67 B); nobody has anything the other lacks, so nothing
// else moves. X requests and A supports, so A's full message goes to nobody
// (gossipsub.go rpcs: iSupportSendingPartial && peerRequestsPartial), and X's neither.
func TestT1NodeHoldingAllPartsSendsOnlyMetadata(t *testing.T) {
	cfgs := testNodes(t, RoleRequests, RoleRequests)
	holdAllBut(cfgs[1].Partial, 0)
	nodes := runNodes(t, cfgs, publishGroupAt(0, 0, publishAt, 2*time.Second))
	a, x := nodes[0], nodes[1]
	for _, n := range nodes {
		if got := traffic(n, kindPartsMeta); got.BytesSent != 67 || got.MsgsSent != 1 || got.BytesRecv != 67 {
			t.Errorf("node %d partsmeta %+v, want one 67-byte RPC each way", n.C.Index, got)
		}
		if got := traffic(n, kindPartial); got.BytesSent != 0 || got.BytesRecv != 0 {
			t.Errorf("node %d moved parts: %+v", n.C.Index, got)
		}
		if got := traffic(n, kindPayload); got.BytesRecv != 0 {
			t.Errorf("node %d received a full message (%d B) from a partial peer", n.C.Index, got.BytesRecv)
		}
	}
	r := record(t, x, 0)
	if r.Held != 48 || r.PartsRecv != 0 || r.PartsDup != 0 || r.CompleteVia != viaMempool {
		t.Errorf("X's record %+v, want 48 held, nothing received, complete from its mempool", r)
	}
	if r.CompleteNs == nil || *r.CompleteNs < int64(publishAt+testLatency) {
		t.Errorf("X complete at %v, before A's metadata could arrive", r.CompleteNs)
	}
	if traffic(a, kindExtensions).BytesSent == 0 {
		t.Error("A advertised no extensions message")
	}
}

// T1 with eager push: A sends X every part with its metadata at once (98,385 B:
// 98,377 of parts, 8 of metadata field); all 48 are duplicates at X. X's metadata
// still goes back once.
func TestT1EagerPushSendsEveryPartAsDuplicates(t *testing.T) {
	cfgs := testNodes(t, RoleRequests, RoleRequests)
	for _, c := range cfgs {
		c.Partial.EagerPush = true
	}
	holdAllBut(cfgs[1].Partial, 0)
	nodes := runNodes(t, cfgs, publishGroupAt(0, 0, publishAt, 2*time.Second))
	a, x := nodes[0], nodes[1]
	if got := traffic(a, kindPartial); got.BytesSent != 98377 || got.MsgsSent != 48 {
		t.Errorf("A sent parts %+v, want 98,377 B carrying 48 parts", got)
	}
	if got := traffic(a, kindPartsMeta).BytesSent; got != 8 {
		t.Errorf("A sent %d B of metadata, want the 8-byte field of its one RPC", got)
	}
	if got := traffic(x, kindPartsMeta).BytesSent; got != 67 {
		t.Errorf("X sent %d B of metadata, want one 67-byte RPC", got)
	}
	if r := record(t, x, 0); r.PartsDup != 48 || r.PartsRecv != 0 {
		t.Errorf("X's record %+v, want 48 duplicate parts", r)
	}
}

// T2. B misses k parts. A's metadata (67 B) reaches B at +L; B learns, answers with
// its metadata (67 B) at +2L; A sends the k parts B lacks, no metadata (unchanged)
// at +3L: B receives 67 + framed(k) bytes, and the exchange ends there (B's republish
// finds nothing to send). No full message moves between two partial peers.
func TestT2NodeMissingKPartsReceivesExactlyThem(t *testing.T) {
	framed := map[int]uint64{1: 2118, 5: 10310, 8: 16457}
	for k, data := range framed {
		cfgs := testNodes(t, RoleRequests, RoleRequests)
		lack := make([]int, k)
		for i := range lack {
			lack[i] = 3 * i
		}
		holdAllBut(cfgs[1].Partial, 0, lack...)
		cfgs[1].Partial.LogParts = true
		nodes := runNodes(t, cfgs, publishGroupAt(0, 0, publishAt, 2*time.Second))
		a, b := nodes[0], nodes[1]
		if got := traffic(b, kindPartial); got.BytesRecv != data || got.MsgsRecv != uint64(k) {
			t.Errorf("k=%d: B received parts %+v, want %d B carrying %d parts", k, got, data, k)
		}
		if got, want := traffic(a, kindPartial).BytesSent+traffic(a, kindPartsMeta).BytesSent, 67+data; got != want {
			t.Errorf("k=%d: A sent %d B of partial RPCs, want %d (metadata, then the parts)", k, got, want)
		}
		if got := traffic(b, kindPartsMeta).BytesSent; got != 67 {
			t.Errorf("k=%d: B sent %d B, want its one 67-byte metadata", k, got)
		}
		if got := traffic(b, kindPayload).BytesRecv + traffic(a, kindPayload).BytesRecv; got != 0 {
			t.Errorf("k=%d: %d B of full messages between partial peers", k, got)
		}
		r := record(t, b, 0)
		if r.PartsRecv != k || r.PartsDup != 0 || r.CompleteVia != viaPartial || r.CompleteFrom != 0 {
			t.Errorf("k=%d: B's record %+v", k, r)
		}
		if lines := partLines(t, b); len(lines) != k || lines[0].Part != 0 || lines[k-1].Part != 3*(k-1) || lines[0].Dup || lines[0].Via != viaPartial || lines[0].From != 0 {
			t.Errorf("k=%d: parts.ndjson %+v, want the %d missing parts, new, from node 0", k, lines, k)
		}
		// Three one-way trips, plus the transfers (under 3 ms at 50 Mbit/s here).
		took := time.Duration(*r.CompleteNs) - publishAt
		if took < 3*testLatency || took > 3*testLatency+5*time.Millisecond {
			t.Errorf("k=%d: B complete %v after the publish, want 3 × %v + transfer", k, took, testLatency)
		}
	}
}

// T3. C runs no extension: it gets A's full message (98,337 B) and no partial RPC
// (MeshPeers needs the extension or a request on the other side).
func TestT3PeerWithoutTheExtensionGetsTheFullMessage(t *testing.T) {
	cfgs := testNodes(t, RoleRequests, RoleNone)
	holdAllBut(cfgs[1].Partial, 0, 0, 1)
	nodes := runNodes(t, cfgs, publishGroupAt(0, 0, publishAt, 2*time.Second))
	a, c := nodes[0], nodes[1]
	if got := traffic(c, kindPayload); got.BytesRecv != 98337 || got.MsgsRecv != 1 {
		t.Errorf("C received payload %+v, want one 98,337-byte full message", got)
	}
	for _, kind := range []int{kindPartial, kindPartsMeta} {
		if got := traffic(a, kind); got.BytesSent+got.BytesRecv != 0 {
			t.Errorf("%s moved between A and C: %+v", kindNames[kind], got)
		}
	}
	if got := traffic(c, kindExtensions).BytesSent; got != 0 {
		t.Errorf("C advertised extensions (%d B)", got)
	}
	if r := record(t, c, 0); r.CompleteVia != viaFull || r.PartsViaFull != 2 || r.CompleteFrom != 0 {
		t.Errorf("C's record %+v, want complete via the full message, 2 parts from it", r)
	}
}

// T3 variant: C′ supports without requesting. It still gets the full message, gets
// A's metadata but never a part (partialmsgs.go publish strips data for peers that do
// not request), and, holding everything, answers with its metadata once.
func TestT3SupportingPeerGetsMetadataAndTheFullMessageNeverParts(t *testing.T) {
	cfgs := testNodes(t, RoleRequests, RoleSupports)
	holdAllBut(cfgs[1].Partial, 0)
	nodes := runNodes(t, cfgs, publishGroupAt(0, 0, publishAt, 2*time.Second))
	c := nodes[1]
	if got := traffic(c, kindPayload).BytesRecv; got != 98337 {
		t.Errorf("C' received %d B of full messages, want 98,337", got)
	}
	if got := traffic(c, kindPartial).BytesRecv; got != 0 {
		t.Errorf("C' received %d B of parts", got)
	}
	if got := traffic(c, kindPartsMeta); got.BytesRecv != 67 || got.BytesSent != 67 {
		t.Errorf("C' metadata %+v, want 67 B each way", got)
	}
}

// T3 relay: on a line A – C′ – B where C′ only supports and B requests, C′ forwards
// A's full message to nobody (gossipsub.go rpcs skips B: C′ supports, B requests) and
// serves B through partials instead: its metadata once the full message made it hold
// every part, then, after B's metadata, the parts B lacks.
func TestT3SupportingRelayServesRequestersWithParts(t *testing.T) {
	cfgs := testNodes(t, RoleRequests, RoleSupports, RoleRequests)
	cfgs[0].Peers = []PeerConfig{{Index: 1, Dial: true}}
	cfgs[1].Peers = []PeerConfig{{Index: 0}, {Index: 2, Dial: true}}
	cfgs[2].Peers = []PeerConfig{{Index: 1}}
	holdAllBut(cfgs[1].Partial, 0, 0, 1, 2, 3, 4, 5, 6, 7)
	holdAllBut(cfgs[2].Partial, 0, 0, 1, 2, 3)
	nodes := runNodes(t, cfgs, publishGroupAt(0, 0, publishAt, 2*time.Second))
	relay, b := nodes[1], nodes[2]
	if got := traffic(relay, kindPayload); got.BytesRecv != 98337 || got.BytesSent != 0 {
		t.Errorf("C' payload %+v, want the 98,337-byte full message in and nothing out", got)
	}
	if got := traffic(b, kindPayload).BytesRecv; got != 0 {
		t.Errorf("B received %d B of full messages", got)
	}
	if got := traffic(relay, kindPartial).BytesRecv; got != 0 {
		t.Errorf("C' received %d B of parts", got)
	}
	r := record(t, b, 0)
	if r.PartsRecv != 4 || r.CompleteVia != viaPartial || r.CompleteFrom != 1 {
		t.Errorf("B's record %+v, want its 4 missing parts from C'", r)
	}
	if got := traffic(b, kindPartial).BytesRecv; got != partialRPCSize(partialRPC(referenceLayout(), 4, false).Partial) {
		t.Errorf("B received %d B of parts, want one RPC carrying its 4 missing parts", got)
	}
}

// T4. go keeps a group max(TTL, 3) heartbeats after its last PublishPartial and
// deletes it at the next (partialmsgs.go Heartbeat). While B's state lives, a
// republish finds its metadata already sent and sends nothing; once deleted, B's
// state for A starts from zero and the same republish sends its metadata again.
// Heartbeats are 1 s apart: within 2.5 s of the last publish at most three have run
// (alive; a TTL of 1 taken literally would be gone), within 4.5 s at least four. A
// republish is itself a PublishPartial and restarts the count.
func TestT4GroupStateExpiresAfterItsTTL(t *testing.T) {
	for _, ttl := range []int{1, 3} {
		cfgs := testNodes(t, RoleRequests, RoleRequests)
		holdAllBut(cfgs[1].Partial, 0, 7)
		for _, c := range cfgs {
			c.Partial.GroupTTLHeartbeats = ttl
		}
		var alive, expired uint64
		nodes := runNodes(t, cfgs, func(ctx context.Context, at func(time.Duration), nodes []*Node) {
			publishGroupAt(0, 0, publishAt, 0)(ctx, at, nodes)
			b := nodes[1]
			last := publishAt + 3*testLatency + 5*time.Millisecond // B's last PublishPartial
			sent := func() uint64 {
				b.Raw.mu.Lock()
				defer b.Raw.mu.Unlock()
				return b.Raw.traffic[kindPartsMeta].BytesSent
			}
			republish := func() {
				b.partial.mu.Lock()
				g := b.partial.groups[0]
				b.partial.mu.Unlock()
				b.partial.publishPartial(g)
			}
			at(last + 2500*time.Millisecond)
			before := sent()
			republish()
			at(last + 2600*time.Millisecond)
			alive = sent() - before
			// That republish restarted the TTL: count from it.
			last += 2500 * time.Millisecond
			at(last + 4500*time.Millisecond)
			before = sent()
			republish()
			at(last + 4600*time.Millisecond)
			expired = sent() - before
		})
		_ = nodes
		if alive != 0 || expired != 67 {
			t.Errorf("ttl=%d: a republish sent %d B while the group lived and %d B after, want 0 and 67", ttl, alive, expired)
		}
	}
}

// T5. A peer may initiate at most 8 groups per topic at a node (and all peers 255):
// B's metadata for 9 groups A has never published reaches A's application 8 times;
// go refuses the 9th before it (partialmsgs.go groupState, Inc), which A reports as
// a drop. A ignores groups outside its plan, so it never adopts them (which would
// release the counters).
func TestT5PeerInitiatedGroupLimits(t *testing.T) {
	for _, c := range []struct{ perTopic, dropped int }{{0, 1}, {5, 4}} {
		cfgs := testNodes(t, RoleRequests, RoleRequests)
		cfgs[0].Partial.PeerGroupLimitPerTopic = c.perTopic
		cfgs[1].Partial.FullFallback = false
		nodes := runNodes(t, cfgs, func(ctx context.Context, at func(time.Duration), nodes []*Node) {
			at(publishAt)
			for msg := range uint32(9) {
				nodes[1].PublishOne(ctx, Publication{Msg: msg})
			}
			at(publishAt + time.Second)
		})
		a := nodes[0]
		var dropped uint64
		for _, d := range a.Result.Drops {
			if d.Reason == "partial-group-limit" {
				dropped += d.Count
			}
		}
		if dropped != uint64(c.dropped) || a.partial.handled != uint64(9-c.dropped) {
			t.Errorf("limit %d: %d dropped, %d handled; want %d and %d", c.perTopic, dropped, a.partial.handled, c.dropped, 9-c.dropped)
		}
	}
}
