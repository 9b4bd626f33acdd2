package main

import (
	"slices"
	"testing"
	"time"
)

func ipv4Packet(src, dst [4]byte) []byte {
	p := make([]byte, 40)
	p[0] = 0x45
	copy(p[12:16], src[:])
	copy(p[16:20], dst[:])
	return p
}

func TestDelayIsPerPairAndJitterNeverReorders(t *testing.T) {
	s, err := newDelayStage(&DelayConfig{
		JitterNs: int64(30 * time.Millisecond),
		Pairs:    []DelayPair{{Src: "10.77.0.2", Dst: "10.77.0.6", DelayNs: int64(20 * time.Millisecond)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	a, b := [4]byte{10, 77, 0, 2}, [4]byte{10, 77, 0, 6}
	t0 := time.Unix(100, 0)
	for i := range 200 {
		if !s.admit(uint32(i), ipv4Packet(a, b), t0.Add(time.Duration(i)*time.Microsecond)) {
			t.Fatal("a configured pair must be held")
		}
	}
	if s.admit(999, ipv4Packet(b, a), t0) {
		t.Fatal("the reverse direction has no configured delay and passes at once")
	}
	var last time.Time
	for _, h := range s.held {
		d := h.release.Sub(t0)
		if d < 20*time.Millisecond || d > 50*time.Millisecond+200*time.Microsecond {
			t.Fatalf("release after %v, want 20..50 ms", d)
		}
	}
	for s.held.Len() > 0 {
		h := heapPop(s)
		if h.release.Before(last) {
			t.Fatal("releases went backwards")
		}
		last = h.release
	}
}

func heapPop(s *delayStage) held {
	s.mu.Lock()
	defer s.mu.Unlock()
	return popHeld(&s.held)
}

func TestLatenessQuantiles(t *testing.T) {
	var l latenessHistogram
	for i := range 100 {
		l.add(time.Duration(i) * time.Millisecond)
	}
	if got := l.quantile(0.5); got < 49*time.Millisecond || got > 50*time.Millisecond {
		t.Fatalf("p50 %v", got)
	}
	if l.max != 99*time.Millisecond {
		t.Fatalf("max %v", l.max)
	}
}

func TestPairsBeyondTheTableFollowTheRule(t *testing.T) {
	// Nodes 0, 1, 2 at 10.77.0.2, .6, .10; regions 0, 1, 1; node 2 adds 5 ms at its end.
	ms := int64(time.Millisecond)
	s, err := newDelayStage(&DelayConfig{
		Pairs: []DelayPair{{Src: "10.77.0.2", Dst: "10.77.0.6", DelayNs: 7 * ms}},
		Rule: &LatencyRule{
			FirstIP: "10.77.0.2", Nodes: 3, Kind: "matrix",
			Region: []int{0, 1, 1}, Matrix: [][]int64{{10 * ms, 40 * ms}, {30 * ms, 20 * ms}},
			AddedNs: []int64{0, 0, 5 * ms},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ip := func(i int) [4]byte { return [4]byte{10, 77, 0, byte(4*i + 2)} }
	t0 := time.Unix(100, 0)
	cases := []struct {
		a, b int
		want time.Duration
	}{
		{0, 1, 7 * time.Millisecond},  // listed in the table: the table wins
		{1, 0, 30 * time.Millisecond}, // region 1 -> 0
		{0, 2, 45 * time.Millisecond}, // region 0 -> 1, + 5 ms at node 2
		{2, 1, 25 * time.Millisecond}, // region 1 -> 1, + 5 ms at node 2
	}
	for i, c := range cases {
		if !s.admit(uint32(i), ipv4Packet(ip(c.a), ip(c.b)), t0) {
			t.Fatalf("%d -> %d passed undelayed", c.a, c.b)
		}
		if got := s.delays[pairOf(ip(c.a), ip(c.b))]; got != c.want {
			t.Fatalf("%d -> %d: %v, want %v", c.a, c.b, got, c.want)
		}
	}
	if s.ruled != 3 {
		t.Fatalf("%d pairs by rule, want 3", s.ruled)
	}
	// Addresses that are no node's (a core address, a node past the last) pass at once.
	if s.admit(10, ipv4Packet([4]byte{10, 77, 0, 1}, ip(1)), t0) || s.admit(11, ipv4Packet(ip(0), ip(3)), t0) {
		t.Fatal("a packet not between two nodes was held")
	}
}

func TestDrawnPairLatencyIsSymmetricAndInRange(t *testing.T) {
	r := &LatencyRule{FirstIP: "10.77.0.2", Nodes: 50, Kind: "uniform", MinNs: 10, MaxNs: 20, Seed: 7}
	if err := r.check(); err != nil {
		t.Fatal(err)
	}
	seen := map[time.Duration]bool{}
	for a := range 50 {
		for b := range 50 {
			d := r.latency(a, b)
			if d != r.latency(b, a) || d < 10 || d > 20 {
				t.Fatalf("%d<->%d: %v vs %v", a, b, d, r.latency(b, a))
			}
			seen[d] = true
		}
	}
	if len(seen) != 11 {
		t.Fatalf("%d distinct values of 11", len(seen))
	}
}

// The verdict message, byte for byte, from the kernel's structs (little-endian host):
// nlmsghdr {len 32, type NFNL_SUBSYS_QUEUE<<8 | NFQNL_MSG_VERDICT, flags NLM_F_REQUEST,
// seq 0, pid 0}, nfgenmsg {AF_UNSPEC, NFNETLINK_V0, queue 7 big-endian}, nlattr {len 12,
// NFQA_VERDICT_HDR}, nfqnl_msg_verdict_hdr {NF_ACCEPT, id} both big-endian.
func TestVerdictMessageLayout(t *testing.T) {
	want := []byte{
		32, 0, 0, 0, 0x01, 0x03, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		0, 0, 0, 7,
		12, 0, 2, 0,
		0, 0, 0, 1, 1, 2, 3, 4,
	}
	got := appendVerdict(nil, 7, 0x01020304)
	if string(got) != string(want) {
		t.Fatalf("verdict message\n got % x\nwant % x", got, want)
	}
	two := appendVerdict(appendVerdict(nil, 7, 1), 7, 2)
	if len(two) != 64 || two[63] != 2 || two[31] != 1 {
		t.Fatalf("two verdicts are two aligned messages back to back: % x", two)
	}
}

func TestReleaseAlarmGoesOffAtItsTimeNotAtTheNextMillisecond(t *testing.T) {
	a, err := newReleaseAlarm()
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	// 1.3 ms: Go's own timer on an idle P waits epoll_wait(1 ms) and then 1 ms more for
	// the rest (runtime/netpoll_epoll.go), 2 ms in all; the timerfd goes off at 1.3 ms
	// plus the wake-up. Never early; the median of twenty well short of 2 ms.
	const ahead = 1300 * time.Microsecond
	var took []time.Duration
	for range 20 {
		start := time.Now()
		a.set(start.Add(ahead))
		if !a.wait() {
			t.Fatal("the alarm closed")
		}
		elapsed := time.Since(start)
		if elapsed < ahead {
			t.Fatalf("went off after %v, before its %v", elapsed, ahead)
		}
		took = append(took, elapsed)
	}
	slices.Sort(took)
	if median := took[len(took)/2]; median >= 1800*time.Microsecond {
		t.Fatalf("median %v after 1.3 ms: the alarm rounds like Go's timers", median)
	}
}

func TestReleaseAlarmTakesTheLastTimeSetAndEndsWhenClosed(t *testing.T) {
	a, err := newReleaseAlarm()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	a.set(start.Add(time.Hour))
	a.set(start.Add(time.Millisecond)) // a packet due earlier arrived: it wins
	if !a.wait() || time.Since(start) > time.Minute {
		t.Fatal("the earlier time did not replace the later one")
	}
	done := make(chan bool)
	go func() { done <- a.wait() }()
	a.close()
	if <-done {
		t.Fatal("a closed alarm still waited")
	}
}
