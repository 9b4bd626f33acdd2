package main

import (
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
