package simnet

import (
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/p2p/transport/quicreuse"
	msim "github.com/marcopolo/simnet"
	"github.com/quic-go/quic-go"
	"go.uber.org/fx"
)

// port every node listens on; nodes differ by address (simnet.IntToPublicIPv4).
const port = 8000

// mtu of every simulated link, simnet's default.
const mtu = 1500

// listenAddr is node i's QUIC multiaddr.
func listenAddr(i int) string {
	return fmt.Sprintf("/ip4/%s/udp/%d/quic-v1", msim.IntToPublicIPv4(i), port)
}

// simNetwork is the run's simulated links: who is who by address, the latency rule, and
// the packet filter (loss, partitions) in front of every node's uplink.
type simNetwork struct {
	sim     *msim.Simnet
	cfg     NetworkConfig
	index   map[[4]byte]int
	start   time.Time
	parts   []partition
	lossRNG []*lockedRand
	// lean is gossiplab's own packet network; nil runs simnet's links and router.
	lean *leanNet
}

// partition blocks every packet between nodes of different groups in [from, until).
type partition struct {
	group       map[int]int // node -> group; nodes in no group are not cut off
	from, until time.Duration
}

type lockedRand struct {
	mu sync.Mutex
	r  *rand.Rand
}

func (l *lockedRand) float() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.Float64()
}

func newNetwork(c *RunConfig, start time.Time) *simNetwork {
	n := &simNetwork{cfg: c.Network, index: map[[4]byte]int{}, start: start}
	for i := range c.Nodes {
		n.index[[4]byte(msim.IntToPublicIPv4(i).To4())] = i
	}
	if c.Network.Loss != nil {
		for i := range c.Nodes {
			n.lossRNG = append(n.lossRNG, &lockedRand{r: rand.New(rand.NewPCG(c.Seed, uint64(i)))})
		}
	}
	for _, f := range c.Faults {
		if f.Kind != "partition" {
			continue
		}
		p := partition{group: map[int]int{}, from: time.Duration(f.FromNs), until: time.Duration(1<<63 - 1)}
		if f.UntilNs != nil {
			p.until = time.Duration(*f.UntilNs)
		}
		for g, nodes := range f.Groups {
			for _, node := range nodes {
				p.group[node] = g
			}
		}
		n.parts = append(n.parts, p)
	}
	if c.Link == "simnet" {
		n.sim = &msim.Simnet{LatencyFunc: n.latency}
	} else {
		n.lean = newLeanNet(n, len(c.Nodes))
	}
	return n
}

func (n *simNetwork) run() {
	if n.lean != nil {
		n.lean.start()
	} else {
		n.sim.Start()
	}
}

func (n *simNetwork) stop() {
	if n.lean != nil {
		n.lean.close()
	} else {
		n.sim.Close()
	}
}

// nodeOf is the node an address belongs to, -1 if none.
func (n *simNetwork) nodeOf(addr net.Addr) int {
	udp, ok := addr.(*net.UDPAddr)
	if !ok {
		return -1
	}
	ip := udp.IP.To4()
	if ip == nil {
		return -1
	}
	if i, ok := n.index[[4]byte(ip)]; ok {
		return i
	}
	return -1
}

// latency is the one-way latency of a packet, the model's pair_latency rule.
func (n *simNetwork) latency(p *msim.Packet) time.Duration {
	a, b := n.nodeOf(p.From), n.nodeOf(p.To)
	if a < 0 || b < 0 {
		return 0
	}
	return time.Duration(pairLatency(&n.cfg.Latency, a, b))
}

func pairLatency(l *LatencyConfig, a, b int) int64 {
	base := l.Ns
	if l.Kind == "matrix" {
		base = l.MatrixNs[l.Region[a]][l.Region[b]]
	}
	return base + l.AddedNs[a] + l.AddedNs[b]
}

// drops reports whether a packet from node `from` to address `to` is lost now: cut by
// a partition, or lost with probability loss[from] + loss[to] (the model's pair rule:
// each node's loss holds half the network's loss plus its class's added loss).
func (n *simNetwork) drops(from int, to net.Addr) bool {
	dest := n.nodeOf(to)
	if len(n.parts) > 0 {
		now := time.Since(n.start)
		for _, p := range n.parts {
			if now < p.from || now >= p.until {
				continue
			}
			ga, okA := p.group[from]
			gb, okB := p.group[dest]
			if okA && okB && ga != gb {
				return true
			}
		}
	}
	if n.lossRNG == nil || dest < 0 {
		return false
	}
	if p := n.cfg.Loss[from] + n.cfg.Loss[dest]; p > 0 {
		return n.lossRNG[from].float() < p
	}
	return false
}

// filteredConn is a node's simulated UDP socket with the network's losses in front of
// its uplink: a lost packet never reaches the link, as if dropped by the first router.
type filteredConn struct {
	*msim.SimConn
	node int
	net  *simNetwork
}

func (c *filteredConn) WriteTo(p []byte, addr net.Addr) (int, error) {
	if c.net.drops(c.node, addr) {
		return len(p), nil
	}
	return c.SimConn.WriteTo(p, addr)
}

// fixedSource answers quicreuse's source-address question with the node's own address:
// the simulated host has one interface.
type fixedSource struct{ ip net.IP }

func (f fixedSource) PreferredSourceIPForDestination(*net.UDPAddr) (net.IP, error) {
	return f.ip, nil
}

// bps is simnet's bandwidth for a configured rate: 0 (unlimited) becomes a rate no
// packet waits for.
func bps(rate int64) int {
	if rate <= 0 {
		return 1 << 62
	}
	return int(rate)
}

// quicOn is the libp2p option that makes node i's QUIC transport send over the
// simulated network, through its access link and the packet filter.
func (n *simNetwork) quicOn(i int) libp2p.Option {
	link := msim.NodeBiDiLinkSettings{
		Uplink:   msim.LinkSettings{BitsPerSecond: bps(n.cfg.UploadBps[i]), MTU: mtu},
		Downlink: msim.LinkSettings{BitsPerSecond: bps(n.cfg.DownloadBps[i]), MTU: mtu},
	}
	ip := msim.IntToPublicIPv4(i)
	reuse := []quicreuse.Option{
		quicreuse.OverrideSourceIPSelector(func() (quicreuse.SourceIPSelector, error) {
			return fixedSource{ip}, nil
		}),
		quicreuse.OverrideListenUDP(func(_ string, addr *net.UDPAddr) (net.PacketConn, error) {
			if n.lean != nil {
				return n.lean.endpoint(i, addr), nil
			}
			return &filteredConn{SimConn: n.sim.NewEndpoint(addr, link), node: i, net: n}, nil
		}),
	}
	return libp2p.QUICReuse(func(l fx.Lifecycle, reset quic.StatelessResetKey, token quic.TokenGeneratorKey, opts ...quicreuse.Option) (*quicreuse.ConnManager, error) {
		cm, err := quicreuse.NewConnManager(reset, token, opts...)
		if err != nil {
			return nil, err
		}
		// A conn manager given to libp2p is not closed by the host: close it with it.
		l.Append(fx.StopHook(cm.Close))
		return cm, nil
	}, reuse...)
}
