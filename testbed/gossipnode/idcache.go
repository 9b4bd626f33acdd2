package gossipnode

import (
	"runtime"
	"sync"
	"weak"

	pb "github.com/libp2p/go-libp2p-pubsub/pb"
)

// idCache remembers each message object's content id for as long as the object lives.
//
// go-libp2p-pubsub caches a message's id on its *Message wrapper (midgen.go:ID), but its
// event tracer computes the id of every message in every RPC it traces afresh
// (trace.go:traceRPCMeta -> msgIDGenerator.RawID). The testbed attaches an event tracer
// to record receipts and traffic, so with an id that hashes the data each copy would be
// hashed three times (received, traced in, traced out) where a node without a tracer
// hashes it once. Keyed by the *pb.Message, which the wrapper, the incoming RPC and the
// outgoing RPCs share, the tracer's lookups find the id shouldPush computed (or the
// reverse): one hash per message object, as in a node without our instrumentation.
type idCache struct {
	compute func(*pb.Message) string
	mu      sync.Mutex
	ids     map[weak.Pointer[pb.Message]]string
}

func newIDCache(compute func(*pb.Message) string) *idCache {
	return &idCache{compute: compute, ids: map[weak.Pointer[pb.Message]]string{}}
}

// ID is the message's id, computed once per message object; an entry goes when its
// object is collected, so a later object at the same address is computed anew.
func (c *idCache) ID(m *pb.Message) string {
	key := weak.Make(m)
	c.mu.Lock()
	id, ok := c.ids[key]
	c.mu.Unlock()
	if ok {
		return id
	}
	id = c.compute(m)
	c.mu.Lock()
	_, known := c.ids[key]
	c.ids[key] = id
	c.mu.Unlock()
	if !known {
		runtime.AddCleanup(m, c.forget, key)
	}
	return id
}

func (c *idCache) forget(key weak.Pointer[pb.Message]) {
	c.mu.Lock()
	delete(c.ids, key)
	c.mu.Unlock()
}
