package main

import (
	"container/heap"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	nfqueue "github.com/florianl/go-nfqueue/v2"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// The delay stage: a userspace replacement for netem's delay on kernels without it.
// iptables sends every forwarded IPv4 packet of the core namespace to an NFQUEUE; this
// process holds each one and accepts it once its pair's one-way latency (plus jitter)
// has passed since it entered the queue. It measures its own error: how late each
// release is, against the intended time.

// DelayConfig is written by the orchestrator.
type DelayConfig struct {
	Queue    uint16      `json:"queue"`
	JitterNs int64       `json:"jitter_ns"`
	Seed     uint64      `json:"seed"`
	Pairs    []DelayPair `json:"pairs"`
	// Rule gives the latency of node pairs that Pairs does not list: nodes that were not
	// neighbours in the topology but connect during the run (peer exchange). Without
	// it such packets pass undelayed.
	Rule  *LatencyRule `json:"rule,omitempty"`
	Stats string       `json:"stats"` // where to write the statistics on exit
}

// LatencyRule is the scenario's latency model for any pair of nodes, the same one that
// gave the edges their latency: a base latency plus each end's added latency.
type LatencyRule struct {
	FirstIP string `json:"first_ip"` // node 0's address; node i is 4 i further
	Nodes   int    `json:"nodes"`
	// Kind of the base latency: "matrix" is Matrix[Region[src]][Region[dst]] (a
	// constant is a 1x1 matrix, Region empty: every node in region 0); "uniform",
	// "normal" and "lognormal" draw once per unordered pair from Seed and the pair.
	Kind     string    `json:"kind"`
	Region   []int     `json:"region"`
	Matrix   [][]int64 `json:"matrix"`
	MinNs    int64     `json:"min_ns"`
	MaxNs    int64     `json:"max_ns"`
	MeanNs   float64   `json:"mean_ns"`
	StdNs    float64   `json:"std_ns"`
	MedianNs float64   `json:"median_ns"`
	Sigma    float64   `json:"sigma"`
	Seed     uint64    `json:"seed"`
	AddedNs  []int64   `json:"added_ns"` // per node, added at both ends; empty: none
	first    uint32
}

// DelayPair is the one-way latency from Src to Dst (IPv4 addresses).
type DelayPair struct {
	Src     string `json:"src"`
	Dst     string `json:"dst"`
	DelayNs int64  `json:"delay_ns"`
}

// held is one packet waiting for its verdict.
type held struct {
	release time.Time
	seq     uint64 // ties in release time keep arrival order
	id      uint32
}

type releaseHeap []held

func (h releaseHeap) Len() int { return len(h) }
func (h releaseHeap) Less(i, j int) bool {
	if h[i].release.Equal(h[j].release) {
		return h[i].seq < h[j].seq
	}
	return h[i].release.Before(h[j].release)
}
func (h releaseHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *releaseHeap) Push(x any)   { *h = append(*h, x.(held)) }
func (h *releaseHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// latenessHistogram counts release lateness in 10 µs buckets up to 1 s, plus overflow.
type latenessHistogram struct {
	counts [100001]uint64
	max    time.Duration
	total  uint64
}

const latenessBucket = 10 * time.Microsecond

func (l *latenessHistogram) add(d time.Duration) {
	if d < 0 {
		d = 0
	}
	b := int(d / latenessBucket)
	if b >= len(l.counts) {
		b = len(l.counts) - 1
	}
	l.counts[b]++
	l.total++
	l.max = max(l.max, d)
}

// quantile is the upper edge of the bucket holding the q-th value (nearest rank).
func (l *latenessHistogram) quantile(q float64) time.Duration {
	if l.total == 0 {
		return 0
	}
	rank := uint64(q*float64(l.total) + 0.999999)
	rank = max(rank, 1)
	var seen uint64
	for b, c := range l.counts {
		seen += c
		if seen >= rank {
			return min(time.Duration(b+1)*latenessBucket, l.max)
		}
	}
	return l.max
}

// socketBuffer is the netlink receive buffer of the queue socket.
const socketBuffer = 64 << 20

type pairKey uint64

func pairOf(src, dst [4]byte) pairKey {
	return pairKey(uint64(binary.BigEndian.Uint32(src[:]))<<32 | uint64(binary.BigEndian.Uint32(dst[:])))
}

// delayStage keeps the pair table, the held packets and the statistics.
type delayStage struct {
	mu            sync.Mutex
	delays        map[pairKey]time.Duration
	last          map[pairKey]time.Time // latest release per pair: jitter never reorders a pair
	jitter        int64
	rng           *rand.Rand
	held          releaseHeap
	seq           uint64
	alarm         *releaseAlarm
	late          latenessHistogram
	packets       uint64
	unknown       uint64 // packets of pairs without a configured delay: passed at once
	verdictErrors uint64
	rule          *LatencyRule
	ruled         uint64 // directed pairs whose delay came from the rule (not topology edges)
}

func (r *LatencyRule) check() error {
	first, err := netip.ParseAddr(r.FirstIP)
	if err != nil || !first.Is4() {
		return fmt.Errorf("rule: first_ip %q is not an IPv4 address", r.FirstIP)
	}
	b := first.As4()
	r.first = binary.BigEndian.Uint32(b[:])
	if len(r.Region) != 0 && len(r.Region) != r.Nodes {
		return fmt.Errorf("rule: %d regions for %d nodes", len(r.Region), r.Nodes)
	}
	if len(r.AddedNs) != 0 && len(r.AddedNs) != r.Nodes {
		return fmt.Errorf("rule: %d added latencies for %d nodes", len(r.AddedNs), r.Nodes)
	}
	switch r.Kind {
	case "matrix":
		for _, row := range r.Matrix {
			if len(row) != len(r.Matrix) {
				return fmt.Errorf("rule: the latency matrix is not square")
			}
		}
		regions := 1
		for _, g := range r.Region {
			regions = max(regions, g+1)
			if g < 0 {
				return fmt.Errorf("rule: negative region %d", g)
			}
		}
		if len(r.Matrix) < regions {
			return fmt.Errorf("rule: %d regions, a %d x %d matrix", regions, len(r.Matrix), len(r.Matrix))
		}
	case "uniform":
		if r.MaxNs < r.MinNs {
			return fmt.Errorf("rule: uniform latency with max %d < min %d", r.MaxNs, r.MinNs)
		}
	case "normal", "lognormal":
	default:
		return fmt.Errorf("rule: unknown latency kind %q", r.Kind)
	}
	return nil
}

// node is the index of the node owning address ip, if any.
func (r *LatencyRule) node(ip [4]byte) (int, bool) {
	offset := int64(binary.BigEndian.Uint32(ip[:])) - int64(r.first)
	if offset < 0 || offset%4 != 0 || offset/4 >= int64(r.Nodes) {
		return 0, false
	}
	return int(offset / 4), true
}

// latency is the one-way latency from node a to node b.
func (r *LatencyRule) latency(a, b int) time.Duration {
	var base float64
	switch r.Kind {
	case "matrix":
		ga, gb := 0, 0
		if len(r.Region) > 0 {
			ga, gb = r.Region[a], r.Region[b]
		}
		base = float64(r.Matrix[ga][gb])
	default:
		// One draw per unordered pair, as an edge has one latency in both directions.
		lo, hi := uint64(min(a, b)), uint64(max(a, b))
		rng := rand.New(rand.NewPCG(r.Seed, lo<<32|hi))
		switch r.Kind {
		case "uniform":
			base = float64(r.MinNs + rng.Int64N(r.MaxNs-r.MinNs+1))
		case "normal":
			base = r.MeanNs + r.StdNs*standardNormal(rng)
		case "lognormal":
			base = r.MedianNs * math.Exp(r.Sigma*standardNormal(rng))
		}
	}
	if len(r.AddedNs) > 0 {
		base += float64(r.AddedNs[a] + r.AddedNs[b])
	}
	return time.Duration(max(0, math.Round(base)))
}

// standardNormal is a Box-Muller draw (the Python side draws edges the same way).
func standardNormal(rng *rand.Rand) float64 {
	u1 := 1 - rng.Float64() // (0, 1]: the log is finite
	return math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*rng.Float64())
}

func newDelayStage(c *DelayConfig) (*delayStage, error) {
	s := &delayStage{
		delays: map[pairKey]time.Duration{},
		last:   map[pairKey]time.Time{},
		jitter: c.JitterNs,
		rng:    rand.New(rand.NewPCG(c.Seed, 0x6a69747465720000)),
	}
	alarm, err := newReleaseAlarm()
	if err != nil {
		return nil, err
	}
	s.alarm = alarm
	for _, p := range c.Pairs {
		src, err := netip.ParseAddr(p.Src)
		if err != nil || !src.Is4() {
			return nil, fmt.Errorf("pair source %q is not an IPv4 address", p.Src)
		}
		dst, err := netip.ParseAddr(p.Dst)
		if err != nil || !dst.Is4() {
			return nil, fmt.Errorf("pair destination %q is not an IPv4 address", p.Dst)
		}
		s.delays[pairOf(src.As4(), dst.As4())] = time.Duration(p.DelayNs)
	}
	if c.Rule != nil {
		if err := c.Rule.check(); err != nil {
			return nil, err
		}
		s.rule = c.Rule
	}
	return s, nil
}

// admit decides when packet `id` leaves; ok is false when it should pass at once.
func (s *delayStage) admit(id uint32, packet []byte, arrived time.Time) bool {
	if len(packet) < 20 || packet[0]>>4 != 4 {
		return false
	}
	var src, dst [4]byte
	copy(src[:], packet[12:16])
	copy(dst[:], packet[16:20])
	key := pairOf(src, dst)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.packets++
	delay, ok := s.delays[key]
	if !ok && s.rule != nil {
		// A pair that was not an edge: its latency from the scenario's model, once.
		a, okA := s.rule.node(src)
		b, okB := s.rule.node(dst)
		if okA && okB && a != b {
			delay, ok = s.rule.latency(a, b), true
			s.delays[key] = delay
			s.ruled++
		}
	}
	if !ok || (delay == 0 && s.jitter == 0) {
		s.unknown++
		return false
	}
	if s.jitter > 0 {
		delay += time.Duration(s.rng.Int64N(s.jitter + 1))
	}
	release := arrived.Add(delay)
	if last, ok := s.last[key]; ok && release.Before(last) {
		release = last
	}
	s.last[key] = release
	s.seq++
	heap.Push(&s.held, held{release: release, seq: s.seq, id: id})
	if s.held[0].id == id {
		s.alarm.set(release)
	}
	return true
}

// releaser accepts held packets when their time comes and records how late it was.
func (s *delayStage) releaser(ctx context.Context, verdicts *verdictWriter, done chan<- struct{}) {
	defer close(done)
	go func() {
		<-ctx.Done()
		s.alarm.close() // ends the wait below
	}()
	var due []held
	var ids []uint32
	for {
		s.mu.Lock()
		now := time.Now()
		due, ids = due[:0], ids[:0]
		for len(s.held) > 0 && !s.held[0].release.After(now) {
			p := popHeld(&s.held)
			due = append(due, p)
			ids = append(ids, p.id)
		}
		if len(s.held) > 0 {
			s.alarm.set(s.held[0].release)
		}
		s.mu.Unlock()
		// Verdicts are syscalls: issue them without the lock, so that the reader
		// admitting new packets never waits on them, and all of them in one.
		// The histogram and the error count belong to this goroutine alone (read once
		// it has stopped), so recording costs no lock.
		if len(ids) > 0 {
			s.verdictErrors += verdicts.accept(ids)
			sent := time.Now()
			for _, p := range due {
				s.late.add(sent.Sub(p.release))
			}
		}
		if !s.alarm.wait() {
			return
		}
	}
}

// releaseAlarm wakes the releaser when the first held packet is due, to the microsecond.
// Go's own timers cannot: a P with nothing to run sleeps in epoll_wait, whose timeout is
// whole milliseconds (runtime/netpoll_epoll.go: a wait under 1 ms is 1 ms, a longer one
// is cut to whole ms and waited again), so a release came up to a millisecond late (p50
// 0.27 ms, p99 1.2 ms on the tail file). A timerfd is a kernel hrtimer whose expiry makes
// the fd readable, which ends the epoll_wait at once. `set` may be called from any
// goroutine (under the stage's lock); the last call wins.
type releaseAlarm struct {
	// The descriptor, kept apart: os.File.Fd would switch the file to blocking mode and
	// take it out of the netpoller.
	fd   int
	file *os.File // the timerfd in Go's netpoller: Read parks the goroutine
}

func newReleaseAlarm() (*releaseAlarm, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("timerfd_create: %w", err)
	}
	return &releaseAlarm{fd: fd, file: os.NewFile(uintptr(fd), "release-alarm")}, nil
}

// set arms the alarm for `at` (at once if that has passed).
func (a *releaseAlarm) set(at time.Time) {
	wait := max(time.Until(at), time.Nanosecond) // a zero value would disarm it
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(wait))}
	_ = unix.TimerfdSettime(a.fd, 0, &spec, nil)
}

// wait parks until the alarm goes off; false once it is closed.
func (a *releaseAlarm) wait() bool {
	var expirations [8]byte
	_, err := a.file.Read(expirations[:])
	return err == nil
}

func (a *releaseAlarm) close() { _ = a.file.Close() }

// queueCounters reads the kernel's counters for `queue` in this namespace
// (net/netfilter/nfnetlink_queue.c: seq_show): packets waiting for a verdict, packets
// the queue had no room for, and packets that could not be handed to this process.
func queueCounters(queue uint16) (waiting, full, user uint64) {
	raw, err := os.ReadFile("/proc/net/netfilter/nfnetlink_queue")
	if err != nil {
		return 0, 0, 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		f := strings.Fields(line)
		if len(f) >= 7 && f[0] == strconv.Itoa(int(queue)) {
			waiting, _ = strconv.ParseUint(f[2], 10, 64)
			full, _ = strconv.ParseUint(f[5], 10, 64)
			user, _ = strconv.ParseUint(f[6], 10, 64)
			return waiting, full, user
		}
	}
	return 0, 0, 0
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

func (s *delayStage) stats(queue uint16, wall time.Duration) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	waiting, full, user := queueCounters(queue)
	// Packets the kernel still holds that this process does not: their verdict was lost
	// (a failed write), so they would never have left.
	inKernel := int64(waiting) - int64(len(s.held))
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	return map[string]any{
		"packets":          s.packets,
		"delayed":          s.late.total,
		"passed_undelayed": s.unknown,
		"pairs_by_rule":    s.ruled,
		"held_at_exit":     len(s.held),
		"lateness_ms": map[string]float64{
			"p50": ms(s.late.quantile(0.50)), "p99": ms(s.late.quantile(0.99)),
			"p999": ms(s.late.quantile(0.999)), "max": ms(s.late.max),
		},
		"cpu_s":          cpuSeconds(),
		"wall_s":         wall.Seconds(),
		"queue_dropped":  full,
		"user_dropped":   user,
		"verdict_errors": s.verdictErrors,
		"held_in_kernel": max(inKernel, 0),
	}
}

func runDelay(configPath string) error {
	raw, err := os.ReadFile(configPath)
	if err != nil {
		return err
	}
	var c DelayConfig
	if err := json.Unmarshal(raw, &c); err != nil {
		return fmt.Errorf("%s: %w", configPath, err)
	}
	s, err := newDelayStage(&c)
	if err != nil {
		return err
	}
	// Die with the orchestrator, like the nodes: a held packet is worthless without it.
	dieWithOrchestrator()
	// Per-packet garbage is small and short-lived: collect it less often, for fewer
	// pauses on the release path (memory stays a few MiB).
	debug.SetGCPercent(400)
	// One thread for Go code: the stage's work is serial (one queue socket), and with
	// more the reader and the releaser wake each other's threads (futex hand-offs were
	// most of its CPU in a profile). On in-flight.toml its CPU fell from 3.5-3.9 s to
	// 2.7-2.9 s at the same lateness; it also keeps the real-time stage on one core.
	runtime.GOMAXPROCS(1)
	started := time.Now()
	nf, err := nfqueue.Open(&nfqueue.Config{
		NfQueue: c.Queue,
		// Only the IPv4 header is needed to find the pair; copying less costs less.
		MaxPacketLen: 64,
		MaxQueueLen:  1 << 16,
		Copymode:     nfqueue.NfQnlCopyPacket,
		WriteTimeout: 50 * time.Millisecond,
	})
	if err != nil {
		return fmt.Errorf("opening NFQUEUE %d: %w", c.Queue, err)
	}
	defer nf.Close()
	_ = nf.SetOption(netlink.NoENOBUFS, true)
	// A deep socket buffer rides out moments when this process is not scheduled (a busy
	// host): without it the kernel drops queued packets it cannot hand over.
	// SO_RCVBUFFORCE (we are root) is not capped by net.core.rmem_max.
	if raw, err := nf.Con.SyscallConn(); err == nil {
		_ = raw.Control(func(fd uintptr) {
			_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, socketBuffer)
		})
	}
	sock, err := nf.Con.SyscallConn()
	if err != nil {
		return fmt.Errorf("the NFQUEUE socket: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	released := make(chan struct{})
	go s.releaser(ctx, &verdictWriter{raw: sock, queue: c.Queue}, released)
	hook := func(a nfqueue.Attribute) int {
		arrived := time.Now()
		if a.PacketID == nil {
			return 0
		}
		var packet []byte
		if a.Payload != nil {
			packet = *a.Payload
		}
		if !s.admit(*a.PacketID, packet, arrived) {
			_ = nf.SetVerdict(*a.PacketID, nfqueue.NfAccept)
		}
		return 0
	}
	errFn := func(error) int { return 0 } // keep going: a lost read shows as lateness
	if err := nf.RegisterWithErrorFunc(ctx, hook, errFn); err != nil {
		return fmt.Errorf("registering on NFQUEUE %d: %w", c.Queue, err)
	}
	emit(map[string]any{"event": "ready", "pairs": len(c.Pairs)})
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	<-signals
	cancel()
	<-released
	stats := s.stats(c.Queue, time.Since(started))
	out, _ := json.MarshalIndent(stats, "", " ")
	if c.Stats != "" {
		if err := os.WriteFile(c.Stats, out, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func popHeld(h *releaseHeap) held { return heap.Pop(h).(held) }
