package simnet

import (
	"testing"
	"time"
)

// A link serializes back to back at its rate and drops what would wait longer than
// leanQueue: at 8 Mbit/s a 1,000-byte packet takes 1 ms.
func TestLinkSerializesInOrderAndDropsPastItsBuffer(t *testing.T) {
	k := link{rate: 8_000_000}
	now := time.Unix(0, 0)
	queued := int(leanQueue / time.Millisecond)
	for i := range queued + 1 {
		left, ok := k.admit(now, 1000)
		if !ok {
			t.Fatalf("packet %d dropped with %v queued", i, k.free.Sub(now))
		}
		if want := now.Add(time.Duration(i+1) * time.Millisecond); !left.Equal(want) {
			t.Fatalf("packet %d leaves at %v, want %v", i, left.Sub(now), want.Sub(now))
		}
	}
	if _, ok := k.admit(now, 1000); ok {
		t.Fatalf("a packet was queued behind %v, more than the %v buffer", k.free.Sub(now), leanQueue)
	}
	if left, ok := k.admit(now.Add(time.Second), 1000); !ok || !left.Equal(now.Add(time.Second+time.Millisecond)) {
		t.Fatalf("an idle link does not send at once: %v %v", left.Sub(now), ok)
	}
}
