package simnet

import (
	"runtime/debug"
	"testing"

	pool "github.com/libp2p/go-buffer-pool"
)

// The hosts take their stream buffers from go-buffer-pool's API, which go.mod replaces
// with bufpool/: lengths up to 4 KiB round up to a power of two, longer ones to the next
// sixteenth of the power of two below them. Upstream v0.1.0 rounds 131,112 up to
// 262,144, so these fail if the replace directive goes.
func TestBufferPoolSizeClasses(t *testing.T) {
	for _, c := range []struct{ length, want int }{
		{1, 1},
		{3, 4},
		{4096, 4096},
		{4097, 4096 + 256},
		{128<<10 + 40, 128<<10 + 8<<10}, // a 128 KiB message with its framing: one 8 KiB step
		{128 << 10, 128 << 10},
		{200_000, 128<<10 + 9*8<<10},
		{1 << 26, 1 << 26},
		{1<<26 + 1, 1<<26 + 1}, // past 64 MiB: exactly the length, never pooled
	} {
		var p pool.BufferPool
		buf := p.Get(c.length)
		if len(buf) != c.length || cap(buf) != c.want {
			t.Errorf("Get(%d): len %d cap %d, want len %d cap %d", c.length, len(buf), cap(buf), c.length, c.want)
		}
	}
	if buf := pool.Get(0); buf != nil {
		t.Errorf("Get(0) = %v, want nil as upstream", buf)
	}
}

// Every buffer is long enough and, above 4 KiB, less than a sixteenth longer than asked.
func TestBufferPoolWasteBound(t *testing.T) {
	var p pool.BufferPool
	for n := 1; n <= 1<<21; n += 1 + n/97 {
		buf := p.Get(n)
		if len(buf) != n || cap(buf) < n {
			t.Fatalf("Get(%d): len %d cap %d", n, len(buf), cap(buf))
		}
		if n > 4096 && (cap(buf)-n)*16 >= n {
			t.Fatalf("Get(%d): cap %d wastes a sixteenth or more", n, cap(buf))
		}
		if n <= 4096 && cap(buf)&(cap(buf)-1) != 0 {
			t.Fatalf("Get(%d): cap %d is not a power of two", n, cap(buf))
		}
	}
}

// A buffer given back serves later Gets up to its capacity, never longer ones, whatever
// capacity it had (callers may Put buffers the pool never made).
func TestBufferPoolReuse(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1)) // a collection would empty the pool
	var p pool.BufferPool
	for _, c := range []int{4096, 4351, 5000, 139_264, 139_265, 262_143} {
		buf := make([]byte, 3, c)
		p.Put(buf)
		got := p.Get(c)
		if cap(got) < c {
			t.Fatalf("Put(cap %d), Get(%d): cap %d", c, c, cap(got))
		}
		if c == 139_264 && &got[:1][0] != &buf[:1][0] {
			t.Errorf("Put(cap %d), Get(%d) did not reuse the buffer", c, c)
		}
		p.Put(make([]byte, 0, c))
		if got := p.Get(c + 1); cap(got) < c+1 {
			t.Fatalf("Put(cap %d), Get(%d): cap %d", c, c+1, cap(got))
		}
	}
}
