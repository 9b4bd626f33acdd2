package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gossiplab/gossiplab/testbed/gossipnode"
	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/muxer/yamux"
	"github.com/libp2p/go-libp2p/p2p/net/swarm"
	"github.com/libp2p/go-libp2p/p2p/security/noise"
	tls "github.com/libp2p/go-libp2p/p2p/security/tls"
	quic "github.com/libp2p/go-libp2p/p2p/transport/quic"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"
	ma "github.com/multiformats/go-multiaddr"
)

// profileFile is the CPU profile a node writes into its folder when asked.
const profileFile = "cpu.pprof"

// goTraceFile is the execution trace (runtime/trace) a node writes into its folder when
// asked: how go scheduled its goroutines over the measured interval.
const goTraceFile = "go.trace"

// dialRetry is how often a dial is retried while the listener may not be up yet.
const dialRetry = 100 * time.Millisecond

// dialTimeout bounds one dial attempt; the next one follows after dialRetry.
const dialTimeout = 2 * time.Second

// readyPoll is how often the readiness condition is checked.
const readyPoll = 20 * time.Millisecond

// stdout carries one JSON object per line to the orchestrator: listening, ready, done.
var stdoutMu sync.Mutex

func emit(fields map[string]any) {
	line, _ := json.Marshal(fields)
	stdoutMu.Lock()
	defer stdoutMu.Unlock()
	_, _ = os.Stdout.Write(append(line, '\n'))
}

func hostOptions(c *gossipnode.Config) ([]libp2p.Option, error) {
	key, _, err := gossipnode.NodeKey(c.Seed, c.Index)
	if err != nil {
		return nil, err
	}
	opts := []libp2p.Option{
		libp2p.Identity(key),
		libp2p.ListenAddrStrings(c.Listen),
		// The testbed measures the protocol: no limits, relays, NAT probing or metrics
		// that a scenario does not ask for.
		libp2p.ResourceManager(&network.NullResourceManager{}),
		libp2p.DisableRelay(),
		libp2p.DisableMetrics(),
	}
	switch c.Transport {
	case "tcp":
		opts = append(opts, libp2p.Transport(tcp.NewTCPTransport))
		switch c.Security {
		case "noise":
			opts = append(opts, libp2p.Security(noise.ID, noise.New))
		case "tls":
			opts = append(opts, libp2p.Security(tls.ID, tls.New))
		default:
			return nil, fmt.Errorf("security %q is not available over TCP in go-libp2p v0.51.0 (noise, tls)", c.Security)
		}
		if c.Muxer != "yamux" {
			return nil, fmt.Errorf("muxer %q is not available in go-libp2p v0.51.0 (yamux)", c.Muxer)
		}
		opts = append(opts, libp2p.Muxer(yamux.ID, yamux.DefaultTransport))
	case "quic":
		// QUIC brings its own TLS 1.3 handshake and stream multiplexing.
		opts = append(opts, libp2p.Transport(quic.NewTransport))
	default:
		return nil, fmt.Errorf("transport %q is not available (tcp, quic)", c.Transport)
	}
	return opts, nil
}

// commands reads the orchestrator's lines on stdin: "start <unix ns>" once the run's
// clock is fixed, then "stop". A closed stdin means the orchestrator is gone: stop.
func commands(start chan<- int64, stop chan<- struct{}) {
	scanner := bufio.NewScanner(os.Stdin)
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		switch {
		case len(fields) == 2 && fields[0] == "start":
			if epoch, err := strconv.ParseInt(fields[1], 10, 64); err == nil {
				start <- epoch
			}
		case len(fields) == 1 && fields[0] == "stop":
			close(stop)
			return
		}
	}
	close(stop)
}

// node is the library's node plus what a process of its own needs.
type node struct {
	*gossipnode.Node
	c *gossipnode.Config
	// goTrace is the open execution trace file while runtime/trace records into it.
	goTrace *os.File
}

func runNode(configPath string) error {
	c, err := gossipnode.ReadConfig(configPath)
	if err != nil {
		return err
	}
	// Die with the orchestrator even if it is SIGKILLed; the next run cleans the rest.
	dieWithOrchestrator()
	started := time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	opts, err := hostOptions(c)
	if err != nil {
		return err
	}
	h, err := libp2p.New(opts...)
	if err != nil {
		return fmt.Errorf("starting the libp2p host: %w", err)
	}
	defer h.Close()
	lib, err := gossipnode.Start(ctx, c, h, gossipnode.Options{Versions: gossipnode.BuildVersions(), TraceBuffer: gossipnode.DefaultTraceBuffer})
	if err != nil {
		return err
	}
	n := &node{Node: lib, c: c}
	emit(map[string]any{"event": "listening", "index": c.Index, "peer_id": n.H.ID().String()})

	start := make(chan int64, 1)
	stop := make(chan struct{})
	go commands(start, stop)
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-signals
		cancel()
	}()

	n.connect(ctx)
	n.awaitReady(ctx, started)

	var epoch int64
	select {
	case epoch = <-start:
	case <-stop:
		return n.finish(ctx)
	case <-ctx.Done():
		return n.finish(ctx)
	}
	n.Result.StartUnixNs = epoch
	if c.Profile {
		if f, err := os.Create(filepath.Join(c.Dir, profileFile)); err == nil {
			if err := pprof.StartCPUProfile(f); err == nil {
				defer f.Close()
			}
		}
	}
	if c.GoTrace {
		n.startGoTrace()
	}
	n.Publish(ctx, epoch, stop)
	select {
	case <-stop:
	case <-ctx.Done():
	}
	return n.finish(ctx)
}

// connect dials every neighbour this node is the dialer for, retrying while the
// listener may still be starting; failures end up in node.json.
func (n *node) connect(ctx context.Context) {
	deadline := time.Now().Add(time.Duration(n.c.WarmupNs) + 30*time.Second)
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, p := range n.c.Peers {
		if !p.Dial {
			continue
		}
		_, id, _ := gossipnode.NodeKey(n.c.Seed, p.Index)
		addr, err := ma.NewMultiaddr(p.Addr)
		if err != nil {
			n.Result.ConnectErrors = append(n.Result.ConnectErrors, fmt.Sprintf("node %d: %v", p.Index, err))
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			info := peer.AddrInfo{ID: id, Addrs: []ma.Multiaddr{addr}}
			for {
				dialCtx, cancel := context.WithTimeout(ctx, dialTimeout)
				err := n.H.Connect(dialCtx, info)
				cancel()
				if err == nil {
					return
				}
				if time.Now().After(deadline) || ctx.Err() != nil {
					mu.Lock()
					n.Result.ConnectErrors = append(n.Result.ConnectErrors, fmt.Sprintf("node %d: %v", p.Index, err))
					mu.Unlock()
					return
				}
				// A refused dial (the listener is still starting) puts the peer in the
				// swarm's dial backoff for 5 s or more; the retry must not wait for it.
				if sw, ok := n.H.Network().(*swarm.Swarm); ok {
					sw.Backoff().Clear(id)
				}
				time.Sleep(dialRetry)
			}
		}()
	}
	wg.Wait()
}

// awaitReady blocks until every topic has all neighbours as subscribers and, with
// gossipsub, a mesh of at least min(D_lo, degree - direct peers) peers (direct peers
// are never meshed), or until the warm-up has passed since the node started; then it
// tells the orchestrator which it was.
func (n *node) awaitReady(ctx context.Context, started time.Time) {
	degree := len(n.c.Peers)
	want := degree
	if n.c.Router == "gossipsub" {
		want = min(n.c.Protocol.Dlo, degree-len(n.c.Direct))
	}
	by := "warmup"
	for time.Since(started) < time.Duration(n.c.WarmupNs) && ctx.Err() == nil {
		ready := true
		for t := range n.c.Topics {
			name := gossipnode.TopicName(t)
			if len(n.PS.ListPeers(name)) < degree {
				ready = false
				break
			}
			if n.c.Router == "gossipsub" && n.Raw.MeshSize(name) < want {
				ready = false
				break
			}
		}
		if ready {
			by = "mesh"
			break
		}
		time.Sleep(readyPoll)
	}
	n.Result.ReadyAfterNs = time.Since(started).Nanoseconds()
	n.Result.ReadyBy = by
	meshes := make([]int, n.c.Topics)
	for t := range meshes {
		meshes[t] = n.Raw.MeshSize(gossipnode.TopicName(t))
	}
	emit(map[string]any{
		"event": "ready", "index": n.c.Index, "by": by,
		"after_ns": n.Result.ReadyAfterNs, "mesh": meshes,
		"peers": len(n.H.Network().Peers()),
	})
}

// startGoTrace starts the execution trace; a trace that cannot start leaves no file,
// which the orchestrator reports as missing.
func (n *node) startGoTrace() {
	f, err := os.Create(filepath.Join(n.c.Dir, goTraceFile))
	if err != nil {
		fmt.Fprintf(os.Stderr, "go trace: %v\n", err)
		return
	}
	if err := trace.Start(f); err != nil {
		fmt.Fprintf(os.Stderr, "go trace: %v\n", err)
		_ = f.Close()
		_ = os.Remove(f.Name())
		return
	}
	n.goTrace = f
}

// finish stops the CPU profile and the execution trace, writes node.json and tells
// the orchestrator. The trace stops first: trace.Stop returns once every buffer is
// written, so the file is complete before the orchestrator, told by node.json and
// "done", copies it.
func (n *node) finish(_ context.Context) error {
	if n.c.Profile {
		pprof.StopCPUProfile()
	}
	if n.goTrace != nil {
		trace.Stop()
		if err := n.goTrace.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "go trace: %v\n", err)
		}
		n.goTrace = nil
	}
	if err := n.Finish(); err != nil {
		return err
	}
	emit(map[string]any{"event": "done", "index": n.c.Index})
	return nil
}
