package simnet

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gossiplab/gossiplab/testbed/gossipnode"
)

// benchEnv turns on TestBench: GOSSIPLAB_SIMNET_BENCH="nodes=1000,k=35,m=16" runs the
// issue's benchmark network (ethshadow's 8 regions, 20 % 1 Gbit / 80 % 50 Mbit nodes
// with +20 ms and +0.1 % loss at each end, every node dialing random peers until it
// has k, Ethereum's gossipsub v1.2 parameters without scoring), publishing m × 128 KiB
// at once from m nodes after a 30 s warm-up and running `tail` s more (10 unless set). Minutes of both
// cores at 1,000 nodes: never part of the default test run.
const benchEnv = "GOSSIPLAB_SIMNET_BENCH"

// ethshadow's one-way latency in ms between its 8 built-in regions, and the share of
// nodes in each (python/gossiplab/network_presets.py, the same numbers).
var (
	benchLatencyMs = [8][8]int64{
		{2, 110, 165, 110, 150, 190, 220, 180},
		{110, 4, 125, 100, 140, 175, 175, 110},
		{165, 125, 2, 110, 70, 140, 95, 60},
		{110, 100, 110, 2, 60, 100, 160, 150},
		{150, 140, 70, 60, 2, 100, 130, 110},
		{190, 175, 140, 100, 100, 7, 195, 145},
		{220, 175, 95, 160, 130, 190, 7, 110},
		{180, 110, 60, 150, 110, 145, 110, 5},
	}
	benchRegionShare = [8]float64{0.05, 0.08, 0.36, 0.22, 0.22, 0.01, 0.01, 0.05}
)

func benchParams(t *testing.T) (nodes, k, m, tail int) {
	spec := os.Getenv(benchEnv)
	if spec == "" {
		t.Skip(benchEnv + " is not set (e.g. nodes=100,k=8,m=1)")
	}
	nodes, k, m, tail = 100, 8, 1, 10
	for _, field := range strings.Split(spec, ",") {
		name, value, _ := strings.Cut(field, "=")
		v, err := strconv.Atoi(value)
		if err != nil {
			t.Fatalf("%s: %q is not name=integer", benchEnv, field)
		}
		switch name {
		case "nodes":
			nodes = v
		case "k":
			k = v
		case "m":
			m = v
		case "tail":
			tail = v
		default:
			t.Fatalf("%s: unknown %q (nodes, k, m, tail)", benchEnv, name)
		}
	}
	return nodes, k, m, tail
}

// connectRandom is the model's connect-random topology: each node in turn dials random
// peers until it has k neighbours (inbound ones count).
func connectRandom(rng *rand.Rand, n, k int) []edge {
	linked := make([]map[int]bool, n)
	for i := range linked {
		linked[i] = map[int]bool{}
	}
	var edges []edge
	for i := range n {
		for tries := 0; len(linked[i]) < k && tries < 100*k; tries++ {
			j := rng.IntN(n)
			if j == i || linked[i][j] {
				continue
			}
			linked[i][j], linked[j][i] = true, true
			edges = append(edges, edge{i, j})
		}
	}
	return edges
}

func benchRun(nodes, k, m, tail int) *RunConfig {
	rng := rand.New(rand.NewPCG(2026, 14))
	publishAt := 30 * time.Second
	cfg := testRun(nodes, connectRandom(rng, nodes, k), 0, 0, int64(publishAt+time.Duration(tail)*time.Second))
	cfg.DialStaggerNs = int64(time.Millisecond)
	cfg.Network.Latency = LatencyConfig{Kind: "matrix", AddedNs: make([]int64, nodes)}
	for _, row := range benchLatencyMs {
		var r []int64
		for _, ms := range row {
			r = append(r, ms*int64(time.Millisecond))
		}
		cfg.Network.Latency.MatrixNs = append(cfg.Network.Latency.MatrixNs, r)
	}
	cfg.Network.Loss = make([]float64, nodes)
	for i := range nodes {
		region, x := 0, rng.Float64()
		for ; region < 7 && x >= benchRegionShare[region]; region++ {
			x -= benchRegionShare[region]
		}
		cfg.Network.Latency.Region = append(cfg.Network.Latency.Region, region)
		cfg.Network.UploadBps[i], cfg.Network.DownloadBps[i] = 1_000_000_000, 1_000_000_000
		if i%5 != 0 { // 80 % home nodes
			cfg.Network.UploadBps[i], cfg.Network.DownloadBps[i] = 50_000_000, 50_000_000
			cfg.Network.Latency.AddedNs[i] = int64(20 * time.Millisecond)
			cfg.Network.Loss[i] = 0.001
		}
		p := &cfg.Nodes[i].Protocol
		p.D, p.Dlo, p.Dhi, p.Dlazy = 8, 6, 12, 6
		p.HeartbeatNs = int64(700 * time.Millisecond)
		p.HistoryLength, p.HistoryGossip = 6, 3
		p.SeenTTLNs = int64(768 * time.Second)
		p.FloodPublish = false
		p.PeerOutboundQueue, p.ValidateQueue = 1000, 1000
		cfg.Nodes[i].WarmupNs = int64(publishAt)
	}
	for msg := range m {
		publisher := msg * 5 // 1 Gbit nodes, as a block proposer's blobs
		cfg.Nodes[publisher].Schedule = append(cfg.Nodes[publisher].Schedule,
			gossipnode.Publication{Msg: uint32(msg), TNs: int64(publishAt), Size: 128 << 10})
	}
	return cfg
}

func TestBench(t *testing.T) {
	nodes, k, m, tail := benchParams(t)
	cfg := benchRun(nodes, k, m, tail)
	cfg.Link = os.Getenv("GOSSIPLAB_SIMNET_LINK")
	out := os.Getenv("GOSSIPLAB_SIMNET_BENCH_OUT")
	if out == "" {
		out = t.TempDir()
	}
	rec, err := runConfig(t, cfg, out, &progress{w: os.Stdout})
	if err != nil {
		t.Fatal(err)
	}
	if err := writeRecord(out, rec); err != nil {
		t.Fatal(err)
	}
	delivered := 0
	var last int64
	for i := range nodes {
		times := deliveries(t, out, i)
		delivered += len(times)
		for _, at := range times {
			last = max(last, at)
		}
	}
	fmt.Printf("bench nodes=%d k=%d m=%d: deliveries %d of %d (the publisher delivers its own), last at %.3f s virtual; "+
		"wall %.1f s, CPU %.1f s (hosts %.1f s, connected %.1f s at %.2f s virtual), peak RSS %.2f GiB, peak live heap %.2f GiB, "+
		"collector %.0f %% of the CPU\n",
		nodes, k, m, delivered, m*nodes, float64(last)/1e9, rec.WallS, rec.CPUS, rec.HostsCreatedWallS,
		rec.ConnectedWallS, float64(rec.ConnectedVirtualNs)/1e9, float64(rec.PeakRSS)/(1<<30),
		float64(rec.PeakLiveHeapBytes)/(1<<30), 100*rec.GCCPUShare)
}
