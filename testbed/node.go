package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/libp2p/go-libp2p"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/muxer/yamux"
	"github.com/libp2p/go-libp2p/p2p/net/swarm"
	"github.com/libp2p/go-libp2p/p2p/security/noise"
	tls "github.com/libp2p/go-libp2p/p2p/security/tls"
	quic "github.com/libp2p/go-libp2p/p2p/transport/quic"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"
	ma "github.com/multiformats/go-multiaddr"
	"golang.org/x/sys/unix"
)

// Files a node writes into its folder (Config.Dir); the Python side reads them.
const (
	traceFile   = "trace.ndjson"
	resultFile  = "node.json"
	profileFile = "cpu.pprof"
)

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

type publishRecord struct {
	Msg       uint32 `json:"msg"`
	ID        string `json:"id"` // base64 of the raw message id, as in the trace
	TPublish  int64  `json:"t_publish_unix_ns"`
	TReturned int64  `json:"t_returned_unix_ns"`
	Error     string `json:"error,omitempty"`
}

type dropRecord struct {
	Peer int `json:"peer"` // node index, -1 if not a neighbour of the topology
	// PeerID (base64 of the raw id) names a peer that is not a neighbour, e.g. one
	// met through peer exchange; the converter maps it to its node.
	PeerID string `json:"peer_id,omitempty"`
	Kind   string `json:"kind"`
	Reason string `json:"reason"`
	Count  uint64 `json:"count"`
}

type nodeResult struct {
	Index         int                     `json:"index"`
	PeerID        string                  `json:"peer_id"` // base64 of the raw id, as in the trace
	PeerIDText    string                  `json:"peer_id_text"`
	ReadyAfterNs  int64                   `json:"ready_after_ns"`
	ReadyBy       string                  `json:"ready_by"`
	StartUnixNs   int64                   `json:"start_unix_ns"`
	Publishes     []publishRecord         `json:"publishes"`
	Traffic       map[string]kindCounters `json:"traffic"`
	Drops         []dropRecord            `json:"drops"`
	ConnectErrors []string                `json:"connect_errors"`
	Versions      map[string]string       `json:"versions"`
}

func hostOptions(c *Config) ([]libp2p.Option, error) {
	key, _, err := nodeKey(c.Seed, c.Index)
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

func newPubSub(ctx context.Context, c *Config, h host.Host, events *fileTracer, raw *rawTracer) (*pubsub.PubSub, error) {
	opts, err := pubsubOptions(c, events, raw)
	if err != nil {
		return nil, err
	}
	switch c.Router {
	case "gossipsub":
		return pubsub.NewGossipSub(ctx, h, opts...)
	case "floodsub":
		return pubsub.NewFloodSub(ctx, h, opts...)
	case "randomsub":
		return pubsub.NewRandomSub(ctx, h, c.RandomsubSize, opts...)
	}
	return nil, fmt.Errorf("router %q is not available (gossipsub, floodsub, randomsub)", c.Router)
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

type node struct {
	c      *Config
	h      host.Host
	ps     *pubsub.PubSub
	events *fileTracer
	raw    *rawTracer
	topics []*pubsub.Topic
	ids    map[peer.ID]int
	result nodeResult
}

func runNode(configPath string) error {
	c, err := readConfig(configPath)
	if err != nil {
		return err
	}
	// Die with the orchestrator even if it is SIGKILLed; the next run cleans the rest.
	_ = unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0, 0, 0)
	started := time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	n := &node{c: c, ids: map[peer.ID]int{}}
	for _, p := range c.Peers {
		_, id, err := nodeKey(c.Seed, p.Index)
		if err != nil {
			return err
		}
		n.ids[id] = p.Index
	}
	opts, err := hostOptions(c)
	if err != nil {
		return err
	}
	if n.h, err = libp2p.New(opts...); err != nil {
		return fmt.Errorf("starting the libp2p host: %w", err)
	}
	defer n.h.Close()
	if n.events, err = newFileTracer(filepath.Join(c.Dir, traceFile), c.TraceRPC); err != nil {
		return err
	}
	n.raw = newRawTracer()
	if n.ps, err = newPubSub(ctx, c, n.h, n.events, n.raw); err != nil {
		return fmt.Errorf("starting %s: %w", c.Router, err)
	}
	for t := range c.Topics {
		topic, err := n.ps.Join(topicName(t))
		if err != nil {
			return err
		}
		sub, err := topic.Subscribe()
		if err != nil {
			return err
		}
		// Read deliveries so that go never drops them as undeliverable; the trace has them.
		go func() {
			for {
				if _, err := sub.Next(ctx); err != nil {
					return
				}
			}
		}()
		n.topics = append(n.topics, topic)
	}
	names := make([]string, c.Topics)
	for t := range names {
		names[t] = topicName(t)
	}
	n.raw.setHello(names)
	n.result = nodeResult{
		Index:      c.Index,
		PeerID:     base64.StdEncoding.EncodeToString([]byte(n.h.ID())),
		PeerIDText: n.h.ID().String(),
		Publishes:  []publishRecord{},
		Drops:      []dropRecord{},
		Versions:   buildVersions(),
	}
	emit(map[string]any{"event": "listening", "index": c.Index, "peer_id": n.h.ID().String()})

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
	n.result.StartUnixNs = epoch
	if c.Profile {
		if f, err := os.Create(filepath.Join(c.Dir, profileFile)); err == nil {
			if err := pprof.StartCPUProfile(f); err == nil {
				defer f.Close()
			}
		}
	}
	n.publish(ctx, epoch, stop)
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
		_, id, _ := nodeKey(n.c.Seed, p.Index)
		addr, err := ma.NewMultiaddr(p.Addr)
		if err != nil {
			n.result.ConnectErrors = append(n.result.ConnectErrors, fmt.Sprintf("node %d: %v", p.Index, err))
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			info := peer.AddrInfo{ID: id, Addrs: []ma.Multiaddr{addr}}
			for {
				dialCtx, cancel := context.WithTimeout(ctx, dialTimeout)
				err := n.h.Connect(dialCtx, info)
				cancel()
				if err == nil {
					return
				}
				if time.Now().After(deadline) || ctx.Err() != nil {
					mu.Lock()
					n.result.ConnectErrors = append(n.result.ConnectErrors, fmt.Sprintf("node %d: %v", p.Index, err))
					mu.Unlock()
					return
				}
				// A refused dial (the listener is still starting) puts the peer in the
				// swarm's dial backoff for 5 s or more; the retry must not wait for it.
				if sw, ok := n.h.Network().(*swarm.Swarm); ok {
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
			name := topicName(t)
			if len(n.ps.ListPeers(name)) < degree {
				ready = false
				break
			}
			if n.c.Router == "gossipsub" && n.raw.meshSize(name) < want {
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
	n.result.ReadyAfterNs = time.Since(started).Nanoseconds()
	n.result.ReadyBy = by
	meshes := make([]int, n.c.Topics)
	for t := range meshes {
		meshes[t] = n.raw.meshSize(topicName(t))
	}
	emit(map[string]any{
		"event": "ready", "index": n.c.Index, "by": by,
		"after_ns": n.result.ReadyAfterNs, "mesh": meshes,
		"peers": len(n.h.Network().Peers()),
	})
}

// payload is a message body of `size` bytes whose first four hold the message index,
// so that content-addressed ids (ethereum) differ between messages.
func payload(msg uint32, size int) []byte {
	data := make([]byte, size)
	if size >= 4 {
		binary.BigEndian.PutUint32(data, msg)
	}
	return data
}

// publish sends this node's messages at their intended times on the shared clock.
// One goroutine publishes them one after another, so each traced publish id belongs
// to the call in progress.
func (n *node) publish(ctx context.Context, epoch int64, stop <-chan struct{}) {
	for _, pub := range n.c.Schedule {
		target := time.Unix(0, epoch+pub.TNs)
		timer := time.NewTimer(time.Until(target))
		select {
		case <-timer.C:
		case <-stop:
			timer.Stop()
			return
		case <-ctx.Done():
			timer.Stop()
			return
		}
		data := payload(pub.Msg, pub.Size)
		n.events.expect()
		t0 := time.Now().UnixNano()
		err := n.topics[pub.Topic].Publish(ctx, data)
		rec := publishRecord{Msg: pub.Msg, TPublish: t0, TReturned: time.Now().UnixNano()}
		id := n.events.take()
		rec.ID = base64.StdEncoding.EncodeToString(id)
		if err != nil {
			rec.Error = err.Error()
		}
		n.result.Publishes = append(n.result.Publishes, rec)
	}
}

func (n *node) finish(_ context.Context) error {
	if n.c.Profile {
		pprof.StopCPUProfile()
	}
	n.events.Close()
	n.raw.mu.Lock()
	n.result.Traffic = map[string]kindCounters{}
	for k := range kindCount {
		n.result.Traffic[kindNames[k]] = n.raw.traffic[k]
	}
	for key, count := range n.raw.drops {
		record := dropRecord{Peer: -1, Kind: key.kind, Reason: key.reason, Count: count}
		if index, ok := n.ids[key.peer]; ok {
			record.Peer = index
		} else if key.peer != "" {
			record.PeerID = base64.StdEncoding.EncodeToString([]byte(key.peer))
		}
		n.result.Drops = append(n.result.Drops, record)
	}
	n.raw.mu.Unlock()
	raw, err := json.MarshalIndent(n.result, "", " ")
	if err != nil {
		return err
	}
	path := filepath.Join(n.c.Dir, resultFile)
	if err := os.WriteFile(path+".tmp", raw, 0o644); err != nil {
		return err
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		return err
	}
	emit(map[string]any{"event": "done", "index": n.c.Index})
	return nil
}
