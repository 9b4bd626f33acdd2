package simnet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/gossiplab/gossiplab/testbed/gossipnode"
	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	quic "github.com/libp2p/go-libp2p/p2p/transport/quic"
	ma "github.com/multiformats/go-multiaddr"
)

// traceBuffer is each node's trace writer buffer: a thousand nodes share the memory.
const traceBuffer = 32 << 10

// dialTimeout bounds one dial in virtual time; a dial that fails is recorded in the
// node's connect_errors, as the testbed does.
const dialTimeout = 30 * time.Second

// Stats is what a run measured, for simnet.json (wall times are added outside the
// bubble, where the clock is real).
type Stats struct {
	VirtualNs          int64   `json:"virtual_ns"`
	HostsCreatedWallS  float64 `json:"hosts_created_wall_s"`
	ConnectedVirtualNs int64   `json:"connected_virtual_ns"`
	ConnectedWallS     float64 `json:"connected_wall_s"`
	// PeakLiveHeapBytes is the largest heap a collection found live, sampled with the
	// progress lines: the least memory the run needs, whatever the collector's settings.
	PeakLiveHeapBytes uint64 `json:"peak_live_heap_bytes"`
	// GCCPUShare is the collector's share of the CPU time the process used, without
	// its marking on otherwise idle cores.
	GCCPUShare float64 `json:"gc_cpu_share"`
}

// simNode is one node of the run and what its faults need.
type simNode struct {
	mu sync.Mutex // held while publishing, crashing, restarting, leaving
	*gossipnode.Node
	nodeCtx context.Context
	cancel  context.CancelFunc
	down    bool
}

// runner runs every node of a RunConfig inside the caller's synctest bubble.
type runner struct {
	cfg      *RunConfig
	out      string
	net      *simNetwork
	nodes    []*simNode
	start    time.Time
	ctx      context.Context
	progress *progress
	wall     func() float64 // wall seconds since the run began
	gc       gcWatch
	wg       sync.WaitGroup
}

// Run runs cfg in virtual time, writing every node's folder into out. It must be called
// inside a synctest bubble; wall returns real seconds since the run began.
func Run(cfg *RunConfig, out string, progress *progress, wall func() float64) (*Stats, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := &runner{cfg: cfg, out: out, start: time.Now(), ctx: ctx, progress: progress, wall: wall}
	r.net = newNetwork(cfg, r.start)
	r.net.run()
	defer r.net.stop()
	stats := &Stats{}
	progress.phase("hosts")
	err := r.startNodes()
	defer r.stopNodes()
	if err != nil {
		return nil, err
	}
	stats.HostsCreatedWallS = wall()
	progress.phase("connect")
	connected := make(chan struct{})
	r.spawn(func() { r.connectAll(); close(connected) })
	r.spawn(func() {
		select {
		case <-connected:
			stats.ConnectedVirtualNs = time.Since(r.start).Nanoseconds()
			stats.ConnectedWallS = wall()
			progress.phase("run")
		case <-ctx.Done():
		}
	})
	for _, n := range r.nodes {
		r.spawn(func() { r.publish(n) })
	}
	for _, f := range cfg.Faults {
		r.spawn(func() { r.fault(f) })
	}
	r.spawn(func() { r.reportProgress() })
	r.spawn(func() { r.heapProfile() })
	time.Sleep(time.Until(r.start.Add(time.Duration(cfg.EndNs))))
	stats.VirtualNs = time.Since(r.start).Nanoseconds()
	_, stats.GCCPUShare = r.gc.sample()
	stats.PeakLiveHeapBytes = r.gc.peak()
	progress.phase("stop")
	cancel()
	r.wg.Wait()
	return stats, nil
}

func (r *runner) spawn(f func()) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		f()
	}()
}

// sleepUntil waits until virtual time `at` after the start; false if the run ended first.
func (r *runner) sleepUntil(at int64) bool {
	timer := time.NewTimer(time.Until(r.start.Add(time.Duration(at))))
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-r.ctx.Done():
		return false
	}
}

// nodeConfig is node i's config with the simulated addresses of its neighbours and its
// own folder under the output directory.
func (r *runner) nodeConfig(i int) (*gossipnode.Config, error) {
	c := *r.cfg.Nodes[i]
	c.Seed = r.cfg.Seed
	c.Dir = filepath.Join(r.out, fmt.Sprintf("node-%d", i))
	c.Transport, c.Muxer = "quic", "quic"
	c.Peers = withAddrs(c.Peers)
	c.Direct = withAddrs(c.Direct)
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return nil, err
	}
	return &c, nil
}

func withAddrs(peers []gossipnode.PeerConfig) []gossipnode.PeerConfig {
	out := make([]gossipnode.PeerConfig, len(peers))
	for i, p := range peers {
		p.Addr = listenAddr(p.Index)
		out[i] = p
	}
	return out
}

// newHost is node i's libp2p host on the simulated network: QUIC only, with no
// resource limits, relays, NAT probing or metrics, as the testbed's hosts.
func (r *runner) newHost(i int) (host.Host, error) {
	key, _, err := gossipnode.NodeKey(r.cfg.Seed, i)
	if err != nil {
		return nil, err
	}
	return libp2p.New(
		libp2p.Identity(key),
		libp2p.ListenAddrStrings(listenAddr(i)),
		libp2p.Transport(quic.NewTransport),
		r.net.quicOn(i),
		libp2p.ResourceManager(&network.NullResourceManager{}),
		libp2p.DisableRelay(),
		libp2p.DisableMetrics(),
		// Identify's address discovery stalls a synctest bubble; simulated hosts
		// have one address anyway.
		libp2p.DisableIdentifyAddressDiscovery(),
	)
}

func (r *runner) startNodes() error {
	vers := versions()
	for i := range r.cfg.Nodes {
		c, err := r.nodeConfig(i)
		if err != nil {
			return err
		}
		h, err := r.newHost(i)
		if err != nil {
			return fmt.Errorf("node %d: starting the libp2p host: %w", i, err)
		}
		ctx, cancel := context.WithCancel(r.ctx)
		lib, err := gossipnode.Start(ctx, c, h, gossipnode.Options{Epoch: r.start.UnixNano(), Versions: vers, TraceBuffer: traceBuffer})
		if err != nil {
			cancel()
			_ = h.Close()
			return fmt.Errorf("node %d: %w", i, err)
		}
		lib.Result.StartUnixNs = 0 // every time it writes is ns since the run's start
		lib.Result.ReadyBy = "warmup"
		lib.Result.ReadyAfterNs = c.WarmupNs
		lib.Result.ConnectErrors = []string{}
		r.nodes = append(r.nodes, &simNode{Node: lib, nodeCtx: ctx, cancel: cancel})
	}
	return nil
}

// stopNodes closes every host and writes every node's node.json.
func (r *runner) stopNodes() {
	for _, n := range r.nodes {
		n.cancel()
		n.mu.Lock()
		if !n.down {
			_ = n.H.Close()
		}
		n.mu.Unlock()
	}
	for i, n := range r.nodes {
		if err := n.Finish(); err != nil {
			r.progress.warn(fmt.Sprintf("node %d: writing node.json: %v", i, err))
		}
	}
}

// connectAll dials every edge from its dialer, node i starting at i × dial_stagger_ns.
func (r *runner) connectAll() {
	var wg sync.WaitGroup
	for i, n := range r.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !r.sleepUntil(int64(i) * r.cfg.DialStaggerNs) {
				return
			}
			r.dial(n, func(p gossipnode.PeerConfig) bool { return p.Dial })
		}()
	}
	wg.Wait()
}

// dial connects n to the neighbours `which` selects, all at once, recording failures.
func (r *runner) dial(n *simNode, which func(gossipnode.PeerConfig) bool) {
	var wg sync.WaitGroup
	for _, p := range n.C.Peers {
		if !which(p) {
			continue
		}
		_, id, _ := gossipnode.NodeKey(r.cfg.Seed, p.Index)
		info := peer.AddrInfo{ID: id, Addrs: []ma.Multiaddr{ma.StringCast(p.Addr)}}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(r.ctx, dialTimeout)
			defer cancel()
			n.mu.Lock()
			h := n.H
			n.mu.Unlock()
			if err := h.Connect(ctx, info); err != nil && r.ctx.Err() == nil {
				n.mu.Lock()
				n.Result.ConnectErrors = append(n.Result.ConnectErrors, fmt.Sprintf("node %d: %v", p.Index, err))
				n.mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

// publish publishes n's schedule at its virtual times; a node that is down skips its
// publications (recorded with an error).
func (r *runner) publish(n *simNode) {
	for _, pub := range n.C.Schedule {
		if !r.sleepUntil(pub.TNs) {
			return
		}
		n.mu.Lock()
		if n.down {
			n.RecordSkipped(pub, "the node is down (crashed)")
		} else {
			n.PublishOne(r.ctx, pub)
		}
		n.mu.Unlock()
	}
}
