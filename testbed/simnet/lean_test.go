package simnet

import (
	"testing"
	"time"
)

// A link serializes back to back at its rate and drops what would wait longer than
// leanQueue: at 8 Mbit/s a 1,000-byte packet takes 1 ms.
func TestLinkSerializesInOrderAndDropsPastItsBuffer(t *testing.T) {
	k := link{rate: 8_000_000}
	const now, ms = int64(1e12), int64(time.Millisecond)
	queued := int(leanQueue / time.Millisecond)
	for i := range queued + 1 {
		left, ok := k.admit(now, 1000)
		if !ok {
			t.Fatalf("packet %d dropped with %d ns queued", i, k.free-now)
		}
		if want := now + int64(i+1)*ms; left != want {
			t.Fatalf("packet %d leaves after %d ns, want %d", i, left-now, want-now)
		}
	}
	if _, ok := k.admit(now, 1000); ok {
		t.Fatalf("a packet was queued behind %d ns, more than the %v buffer", k.free-now, leanQueue)
	}
	second := int64(time.Second)
	if left, ok := k.admit(now+second, 1000); !ok || left != now+second+ms {
		t.Fatalf("an idle link does not send at once: %d %v", left-now, ok)
	}
}
