package gossipnode

import (
	"runtime"
	"testing"
	"time"

	pb "github.com/libp2p/go-libp2p-pubsub/pb"
)

func countingCache() (*idCache, *int) {
	calls := 0
	return newIDCache(func(m *pb.Message) string {
		calls++
		return ethereumMessageID(m)
	}), &calls
}

func TestAMessageObjectIsHashedOnceHoweverOftenItsIDIsAsked(t *testing.T) {
	cache, calls := countingCache()
	m := &pb.Message{Data: []byte("a block")}
	// shouldPush, then the tracer's RecvRPC and SendRPC metadata (trace.go:traceRPCMeta).
	for range 3 {
		if got := cache.ID(m); got != ethereumMessageID(m) {
			t.Fatalf("id %x, want the content id", got)
		}
	}
	if *calls != 1 {
		t.Fatalf("hashed %d times, want 1", *calls)
	}
	other := &pb.Message{Data: []byte("another block")}
	if cache.ID(other) == cache.ID(m) || *calls != 2 {
		t.Fatalf("a second object: %d hashes, ids must differ", *calls)
	}
	runtime.KeepAlive(m)
	runtime.KeepAlive(other)
}

func TestAnEntryGoesWithItsMessage(t *testing.T) {
	cache, _ := countingCache()
	for i := range 100 {
		cache.ID(&pb.Message{Data: []byte{byte(i)}})
	}
	// Cleanups run after the objects are collected, in their own goroutine.
	deadline := time.Now().Add(5 * time.Second)
	for cache.len() > 0 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if n := cache.len(); n > 0 {
		t.Fatalf("%d entries outlived their messages", n)
	}
}

func (c *idCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.ids)
}
