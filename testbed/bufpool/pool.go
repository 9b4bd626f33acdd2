// Package pool is gossiplab's own implementation of the API of
// github.com/libp2p/go-buffer-pool v0.1.0, which testbed/go.mod puts in its place with
// a replace directive. go-libp2p-pubsub's reader and writer (go-msgio, and pubsub's
// comm.go: handleSendingMessages) take one buffer per message a stream sends or
// receives; upstream rounds every length up to a power of two, so a 128 KiB message
// plus its framing holds a 256 KiB buffer. At a thousand simulated nodes those buffers
// were half the live heap (bench/RESULTS.md). Here lengths above 4 KiB round up to the
// next sixteenth of their power of two instead, so a buffer is at most 6.25 % longer
// than asked (between 128 and 256 KiB the step is 8 KiB, the page size Go's allocator
// rounds large objects to anyway).
//
// Upstream's Get documents that it "may choose to ignore the pool and treat it as
// empty" and that callers "should not assume any relation between values passed to Put
// and the values returned by Get": callers see a buffer of the length they asked for,
// whatever its capacity, so no protocol behaviour or virtual time changes.
package pool

import (
	"math"
	"math/bits"
	"sync"
)

// MaxLength is upstream's bound on the lengths it pools, kept for its importers.
const MaxLength = math.MaxInt32

const (
	smallBits = 12 // lengths up to 1<<smallBits round up to a power of two
	steps     = 4  // larger ones to the next 1/(1<<steps) of their power of two
	largeBits = 26 // lengths above 1<<largeBits (64 MiB) are not pooled
	perOctave = 1 << steps
	classes   = smallBits + 1 + (largeBits-smallBits)*perOctave
)

// BufferPool hands out byte slices from size classes (the small powers of two, then
// sixteen classes per power of two). The zero value is ready to use; it must not be
// copied after first use.
type BufferPool struct {
	pools   [classes]sync.Pool // of *holder whose buffer has at least the class's size
	holders sync.Pool          // empty holders, so that Put allocates nothing
}

// holder carries a slice through a sync.Pool without allocating a new interface
// value for each Put.
type holder struct{ buf []byte }

// GlobalPool is the pool behind the package's Get and Put.
var GlobalPool = new(BufferPool)

// Get returns a slice of the given length (nil for 0), from the pool when it holds a
// buffer of the length's class, otherwise newly allocated at the class's size.
func (p *BufferPool) Get(length int) []byte {
	if length == 0 {
		return nil
	}
	if length < 0 || length > 1<<largeBits {
		return make([]byte, length) // make panics on a negative length, as upstream's does
	}
	class := classUp(length)
	if h, ok := p.pools[class].Get().(*holder); ok {
		buf := h.buf[:length]
		h.buf = nil
		p.holders.Put(h)
		return buf
	}
	return make([]byte, length, classSize(class))
}

// Put files buf under the largest class it can serve whole, for any later Get.
func (p *BufferPool) Put(buf []byte) {
	c := cap(buf)
	if c == 0 || c > 1<<largeBits {
		return // nothing to keep, or too large to keep
	}
	h, ok := p.holders.Get().(*holder)
	if !ok {
		h = new(holder)
	}
	h.buf = buf
	p.pools[classDown(c)].Put(h)
}

// Get takes a buffer of the given length from GlobalPool.
func Get(length int) []byte { return GlobalPool.Get(length) }

// Put gives a buffer back to GlobalPool.
func Put(buf []byte) { GlobalPool.Put(buf) }

// classUp is the smallest class whose size is at least n (1 ≤ n ≤ 1<<largeBits).
func classUp(n int) int {
	if n <= 1<<smallBits {
		return bits.Len(uint(n - 1)) // the power of two at or above n
	}
	octave := bits.Len(uint(n-1)) - 1 // 1<<octave < n ≤ 1<<(octave+1)
	step := 1 << (octave - steps)
	j := (n - 1<<octave + step - 1) / step // 1 ≤ j ≤ perOctave
	return largeClass(octave, j)
}

// classDown is the largest class whose size is at most c (1 ≤ c ≤ 1<<largeBits).
func classDown(c int) int {
	if c <= 1<<smallBits {
		return bits.Len(uint(c)) - 1 // the power of two at or below c
	}
	octave := bits.Len(uint(c)) - 1 // 1<<octave ≤ c < 1<<(octave+1)
	j := (c - 1<<octave) >> (octave - steps)
	return largeClass(octave, j) // j = 0 is 1<<octave: the last class of the octave below
}

// largeClass numbers the size 1<<octave + j steps of 1<<(octave-steps) for octave ≥
// smallBits and 0 ≤ j ≤ perOctave; j = 0 gives the class of 1<<octave itself.
func largeClass(octave, j int) int {
	return smallBits + (octave-smallBits)*perOctave + j
}

// classSize is the length of the buffers a class holds.
func classSize(class int) int {
	if class <= smallBits {
		return 1 << class
	}
	r := class - smallBits - 1
	octave := smallBits + r/perOctave
	j := r%perOctave + 1
	return 1<<octave + j<<(octave-steps)
}
