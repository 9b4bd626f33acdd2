package simnet

import (
	"net"
	"os"
	"sync"
	"time"
)

// leanQueue bounds the queue in front of every link, in time to drain it: a packet
// that would wait longer is dropped (drop-tail), as a home router's buffer overflows.
// It also bounds the memory queued packets take.
const leanQueue = 100 * time.Millisecond

// leanNet is gossiplab's own packet network, a leaner alternative to simnet's: each
// node's uplink and downlink is a FIFO serializing at its rate with a drop-tail buffer,
// links are computed rather than driven by goroutines, and one scheduler goroutine
// moves packets between them in time order. A packet costs one copy in, one heap entry
// per hop and one copy out.
type leanNet struct {
	mu     sync.Mutex
	events eventHeap
	seq    uint64
	wake   chan struct{}
	quit   chan struct{}
	done   chan struct{}
	ends   []*leanConn
	net    *simNetwork
	pools  packetPools
}

// smallPacket is the buffer of packets that fit in it (acknowledgements, most control
// frames): a quarter of the packets in flight at 300 nodes × 16 messages
// (bench/RESULTS.md), where an MTU-sized buffer each would hold 1.5 KB for 50 bytes.
const smallPacket = 256

// packetPools recycles packet buffers in two sizes, small and MTU.
type packetPools struct{ small, full sync.Pool }

func (p *packetPools) init() {
	p.small.New = func() any { return &leanPacket{buf: make([]byte, 0, smallPacket)} }
	p.full.New = func() any { return &leanPacket{buf: make([]byte, 0, mtu)} }
}

// get is a packet whose buffer holds size bytes.
func (p *packetPools) get(size int) *leanPacket {
	if size <= smallPacket {
		return p.small.Get().(*leanPacket)
	}
	return p.full.Get().(*leanPacket)
}

func (p *packetPools) put(pk *leanPacket) {
	if cap(pk.buf) <= smallPacket {
		p.small.Put(pk)
	} else {
		p.full.Put(pk)
	}
}

type leanPacket struct {
	buf  []byte
	from *net.UDPAddr
	to   int
}

// event is a packet reaching `to`'s downlink (deliver false) or leaving it into the
// node's socket (deliver true) at `at` (Unix ns, virtual).
type event struct {
	at      int64
	seq     uint64 // FIFO among equal times
	p       *leanPacket
	deliver bool
}

func (e *event) before(o *event) bool {
	return e.at < o.at || (e.at == o.at && e.seq < o.seq)
}

// eventHeap is a binary min-heap of events, typed to spare container/heap's interface
// calls and boxing: with every packet in flight in it, it is the scheduler's hot path.
type eventHeap []event

func (h *eventHeap) push(e event) {
	*h = append(*h, e)
	q := *h
	for i := len(q) - 1; i > 0; {
		parent := (i - 1) / 2
		if !q[i].before(&q[parent]) {
			break
		}
		q[i], q[parent] = q[parent], q[i]
		i = parent
	}
}

func (h *eventHeap) pop() event {
	q := *h
	top := q[0]
	last := len(q) - 1
	q[0] = q[last]
	q[last] = event{}
	q = q[:last]
	for i := 0; ; {
		least, left := i, 2*i+1
		if left < len(q) && q[left].before(&q[least]) {
			least = left
		}
		if right := left + 1; right < len(q) && q[right].before(&q[least]) {
			least = right
		}
		if least == i {
			break
		}
		q[i], q[least] = q[least], q[i]
		i = least
	}
	*h = q
	return top
}

func newLeanNet(n *simNetwork, nodes int) *leanNet {
	l := &leanNet{
		wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{}),
		ends: make([]*leanConn, nodes), net: n,
	}
	l.pools.init()
	return l
}

// link is one direction of a node's access link: its rate and when it is next free
// (Unix ns, virtual).
type link struct {
	rate int64 // bit/s, 0 unlimited
	free int64
}

// admit queues a packet of `size` bytes arriving at `now`: the time it has been
// serialized, or false if the buffer is full.
func (k *link) admit(now int64, size int) (int64, bool) {
	if k.rate <= 0 {
		return now, true
	}
	start := max(now, k.free)
	if start-now > int64(leanQueue) {
		return 0, false
	}
	k.free = start + int64(size)*8*int64(time.Second)/k.rate
	return k.free, true
}

// endpoint is node i's socket on the network (a new one replaces the old on restart).
func (l *leanNet) endpoint(i int, addr *net.UDPAddr) *leanConn {
	c := &leanConn{net: l, node: i, addr: addr, ready: make(chan struct{}, 1), closed: make(chan struct{}),
		deadlineSet: make(chan struct{}, 1)}
	c.up.rate, c.down.rate = l.net.cfg.UploadBps[i], l.net.cfg.DownloadBps[i]
	l.mu.Lock()
	l.ends[i] = c
	l.mu.Unlock()
	return c
}

func (l *leanNet) push(e event) {
	l.seq++
	e.seq = l.seq
	l.events.push(e)
	if l.events[0].seq == e.seq {
		select {
		case l.wake <- struct{}{}:
		default:
		}
	}
}

// send takes a packet from node `from`'s socket at `now`.
func (l *leanNet) send(c *leanConn, b []byte, to net.Addr, now time.Time) {
	dst := l.net.nodeOf(to)
	if dst < 0 || l.net.drops(c.node, to) {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	left, ok := c.up.admit(now.UnixNano(), len(b))
	if !ok {
		return
	}
	p := l.pools.get(len(b))
	p.buf = append(p.buf[:0], b...)
	p.from, p.to = c.addr, dst
	l.push(event{at: left + pairLatency(&l.net.cfg.Latency, c.node, dst), p: p})
}

func (l *leanNet) start() { go l.run() }

// run moves packets whose time has come, then sleeps until the next one.
func (l *leanNet) run() {
	defer close(l.done)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		now := time.Now().UnixNano()
		l.mu.Lock()
		for len(l.events) > 0 && l.events[0].at <= now {
			l.step(l.events.pop(), now)
		}
		next := time.Duration(-1)
		if len(l.events) > 0 {
			next = time.Duration(l.events[0].at - now)
		}
		l.mu.Unlock()
		if next >= 0 {
			timer.Reset(next)
		} else {
			timer.Stop()
		}
		select {
		case <-l.quit:
			return
		case <-l.wake:
		case <-timer.C:
		}
	}
}

// step is one event: a packet enters its receiver's downlink, or leaves it.
func (l *leanNet) step(e event, now int64) {
	c := l.ends[e.p.to]
	if e.deliver {
		c.enqueue(e.p)
		return
	}
	left, ok := c.down.admit(e.at, len(e.p.buf))
	if !ok {
		l.pools.put(e.p)
		return
	}
	if left <= now {
		c.enqueue(e.p)
		return
	}
	l.push(event{at: left, p: e.p, deliver: true})
}

func (l *leanNet) close() {
	close(l.quit)
	<-l.done
}

// leanConn is a node's UDP socket on a leanNet.
type leanConn struct {
	net         *leanNet
	node        int
	addr        *net.UDPAddr
	up, down    link // guarded by net.mu
	mu          sync.Mutex
	inbox       []*leanPacket
	ready       chan struct{}
	closed      chan struct{}
	isClosed    bool
	deadline    time.Time
	deadlineSet chan struct{}
}

func (c *leanConn) enqueue(p *leanPacket) {
	c.mu.Lock()
	if c.isClosed {
		c.mu.Unlock()
		c.net.pools.put(p)
		return
	}
	c.inbox = append(c.inbox, p)
	c.mu.Unlock()
	select {
	case c.ready <- struct{}{}:
	default:
	}
}

func (c *leanConn) ReadFrom(b []byte) (int, net.Addr, error) {
	for {
		c.mu.Lock()
		if c.isClosed {
			c.mu.Unlock()
			return 0, nil, net.ErrClosed
		}
		if len(c.inbox) > 0 {
			p := c.inbox[0]
			c.inbox[0] = nil
			c.inbox = c.inbox[1:]
			if len(c.inbox) > 0 {
				select {
				case c.ready <- struct{}{}:
				default:
				}
			}
			c.mu.Unlock()
			n := copy(b, p.buf)
			from := p.from
			c.net.pools.put(p)
			return n, from, nil
		}
		deadline := c.deadline
		c.mu.Unlock()
		if !c.wait(deadline) {
			return 0, nil, os.ErrDeadlineExceeded
		}
	}
}

// wait blocks until a packet may be there, the socket closes or the read deadline
// changes; false once the deadline has passed.
func (c *leanConn) wait(deadline time.Time) bool {
	var expired <-chan time.Time
	if !deadline.IsZero() {
		wait := time.Until(deadline)
		if wait <= 0 {
			return false
		}
		t := time.NewTimer(wait)
		defer t.Stop()
		expired = t.C
	}
	select {
	case <-c.ready:
	case <-c.closed:
	case <-c.deadlineSet:
	case <-expired:
		return false
	}
	return true
}

func (c *leanConn) WriteTo(b []byte, addr net.Addr) (int, error) {
	c.mu.Lock()
	closed := c.isClosed
	c.mu.Unlock()
	if closed {
		return 0, net.ErrClosed
	}
	c.net.send(c, b, addr, time.Now())
	return len(b), nil
}

func (c *leanConn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.isClosed {
		c.isClosed = true
		close(c.closed)
		for _, p := range c.inbox {
			c.net.pools.put(p)
		}
		c.inbox = nil
	}
	return nil
}

func (c *leanConn) LocalAddr() net.Addr { return c.addr }

func (c *leanConn) SetDeadline(t time.Time) error { return c.SetReadDeadline(t) }

func (c *leanConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadline = t
	c.mu.Unlock()
	select {
	case c.deadlineSet <- struct{}{}:
	default:
	}
	return nil
}

func (c *leanConn) SetWriteDeadline(time.Time) error { return nil }
func (c *leanConn) SetReadBuffer(int) error          { return nil }
func (c *leanConn) SetWriteBuffer(int) error         { return nil }
