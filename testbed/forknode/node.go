package main

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/libp2p/go-libp2p"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/muxer/yamux"
	"github.com/libp2p/go-libp2p/p2p/net/swarm"
	"github.com/libp2p/go-libp2p/p2p/security/noise"
	tls "github.com/libp2p/go-libp2p/p2p/security/tls"
	quic "github.com/libp2p/go-libp2p/p2p/transport/quic"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"
	ma "github.com/multiformats/go-multiaddr"
	"golang.org/x/sys/unix"
)

// nodeKey is the testbed's identity rule (testbed/gossipnode/identity.go documents it):
// ed25519 from sha256("gossiplab/node-key/v1" || seed LE64 || index LE32), so that a
// node knows its neighbours' peer ids before dialing.
func nodeKey(seed uint64, index int) (crypto.PrivKey, peer.ID, error) {
	var material [12]byte
	binary.LittleEndian.PutUint64(material[:8], seed)
	binary.LittleEndian.PutUint32(material[8:], uint32(index))
	sum := sha256.Sum256(append([]byte("gossiplab/node-key/v1"), material[:]...))
	key, err := crypto.UnmarshalEd25519PrivateKey(ed25519.NewKeyFromSeed(sum[:]))
	if err != nil {
		return nil, "", err
	}
	id, err := peer.IDFromPrivateKey(key)
	return key, id, err
}

func topicName(t int) string { return fmt.Sprintf("gossiplab-topic-%04d", t) }

func newHost(c *config) (host.Host, error) {
	key, _, err := nodeKey(c.Seed, c.Index)
	if err != nil {
		return nil, err
	}
	opts := []libp2p.Option{
		libp2p.Identity(key), libp2p.ListenAddrStrings(c.Listen),
		libp2p.ResourceManager(&network.NullResourceManager{}), libp2p.DisableRelay(), libp2p.DisableMetrics(),
	}
	switch {
	case c.Transport == "quic":
		opts = append(opts, libp2p.Transport(quic.NewTransport))
	case c.Transport == "tcp" && c.Security == "noise":
		opts = append(opts, libp2p.Transport(tcp.NewTCPTransport), libp2p.Security(noise.ID, noise.New), libp2p.Muxer(yamux.ID, yamux.DefaultTransport))
	case c.Transport == "tcp" && c.Security == "tls":
		opts = append(opts, libp2p.Transport(tcp.NewTCPTransport), libp2p.Security(tls.ID, tls.New), libp2p.Muxer(yamux.ID, yamux.DefaultTransport))
	default:
		return nil, fmt.Errorf("transport %s/%s is not available (tcp with noise or tls, quic)", c.Transport, c.Security)
	}
	return libp2p.New(opts...)
}

// ethereumID is the Ethereum consensus id for messages without snappy framing:
// sha256(MESSAGE_DOMAIN_INVALID_SNAPPY || data)[:20], the model's "ethereum" id.
func ethereumID(m *pb.Message) string {
	sum := sha256.Sum256(append([]byte{0, 0, 0, 0}, m.GetData()...))
	return string(sum[:20])
}

// params maps the scenario's [protocol] onto the fork's GossipSubParams (gossipsub.go).
func params(p protocolConfig) pubsub.GossipSubParams {
	g := pubsub.DefaultGossipSubParams()
	g.D, g.Dlo, g.Dhi, g.Dlazy, g.Dscore, g.Dout = p.D, p.Dlo, p.Dhi, p.Dlazy, p.Dscore, p.Dout
	g.Dannounce = p.Dannounce
	g.Timeout = time.Duration(p.IneedTimeoutNs) // INEED's wait before the next announcer
	g.HeartbeatInterval = time.Duration(p.HeartbeatNs)
	g.HeartbeatInitialDelay = time.Duration(p.HeartbeatInitialDelayNs)
	g.HistoryLength, g.HistoryGossip = p.HistoryLength, p.HistoryGossip
	g.GossipFactor, g.GossipRetransmission = p.GossipFactor, p.GossipRetransmission
	g.FanoutTTL = time.Duration(p.FanoutTTLNs)
	g.PruneBackoff = time.Duration(p.PruneBackoffNs)
	g.UnsubscribeBackoff = time.Duration(p.UnsubscribeBackoffNs)
	g.GraftFloodThreshold = time.Duration(p.GraftFloodThresholdNs)
	g.OpportunisticGraftTicks, g.OpportunisticGraftPeers = p.OpportunisticGraftTicks, p.OpportunisticGraftPeers
	g.MaxIHaveLength, g.MaxIHaveMessages = p.MaxIHaveLength, p.MaxIHaveMessages
	g.IWantFollowupTime = time.Duration(p.IWantFollowupNs)
	g.IDontWantMessageThreshold = p.IDontWantThreshold
	g.PrunePeers = p.PrunePeers
	return g
}

func options(c *config, events *eventFile, raw *rawTracer) ([]pubsub.Option, error) {
	p := c.Protocol
	maxSize := 1 << 20
	for _, pub := range c.Schedule {
		maxSize = max(maxSize, pub.Size+4096)
	}
	opts := []pubsub.Option{
		pubsub.WithEventTracer(events), pubsub.WithRawTracer(raw),
		pubsub.WithPeerOutboundQueueSize(p.PeerOutboundQueue), pubsub.WithValidateQueueSize(p.ValidateQueue),
		pubsub.WithSeenMessagesTTL(time.Duration(p.SeenTTLNs)), pubsub.WithMaxMessageSize(maxSize),
		pubsub.WithGossipSubParams(params(p)), pubsub.WithFloodPublish(p.FloodPublish), pubsub.WithPeerExchange(p.PeerExchange),
	}
	switch p.Signing {
	case "strict-sign":
		opts = append(opts, pubsub.WithMessageSignaturePolicy(pubsub.StrictSign))
	case "strict-no-sign":
		opts = append(opts, pubsub.WithNoAuthor())
	default:
		return nil, fmt.Errorf("unknown signing policy %q", p.Signing)
	}
	if p.MessageID == "ethereum" {
		opts = append(opts, pubsub.WithMessageIdFn(ethereumID))
	} else if p.Signing == "strict-no-sign" {
		return nil, fmt.Errorf(`message_id %q needs an author; use message_id = "ethereum"`, p.MessageID)
	}
	return opts, nil
}

// node is one running fork node and what it reports in node.json.
type node struct {
	c      *config
	h      host.Host
	ps     *pubsub.PubSub
	topics []*pubsub.Topic
	events *eventFile
	raw    *rawTracer
	result map[string]any
	pubs   []map[string]any
}

func emit(fields map[string]any) {
	line, _ := json.Marshal(fields)
	_, _ = os.Stdout.Write(append(line, '\n'))
}

func runNode(path string) error {
	c, err := readConfig(path)
	if err != nil {
		return err
	}
	_ = unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0, 0, 0)
	started := time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := &node{c: c, raw: newRawTracer()}
	if n.h, err = newHost(c); err != nil {
		return err
	}
	defer n.h.Close()
	if n.events, err = newEventFile(filepath.Join(c.Dir, "trace.ndjson"), newSavedCounter(c.Protocol)); err != nil {
		return err
	}
	if err := n.join(ctx); err != nil {
		return err
	}
	emit(map[string]any{"event": "listening", "index": c.Index, "peer_id": n.h.ID().String()})
	start, stop := make(chan int64, 1), make(chan struct{})
	go commands(start, stop)
	n.connect(ctx)
	n.awaitReady(started)
	select {
	case epoch := <-start:
		n.result["start_unix_ns"] = epoch
		n.publish(ctx, epoch, stop)
		<-stop
	case <-stop:
	}
	return n.finish()
}

func (n *node) join(ctx context.Context) error {
	opts, err := options(n.c, n.events, n.raw)
	if err != nil {
		return err
	}
	if n.ps, err = pubsub.NewGossipSub(ctx, n.h, opts...); err != nil {
		return err
	}
	for t := range n.c.Topics {
		topic, err := n.ps.Join(topicName(t))
		if err != nil {
			return err
		}
		sub, err := topic.Subscribe()
		if err != nil {
			return err
		}
		go func() { // drain: a full subscription buffer would drop deliveries
			for _, err := sub.Next(ctx); err == nil; _, err = sub.Next(ctx) {
			}
		}()
		n.topics = append(n.topics, topic)
	}
	n.result = map[string]any{
		"index": n.c.Index, "peer_id": base64.StdEncoding.EncodeToString([]byte(n.h.ID())),
		"peer_id_text": n.h.ID().String(), "versions": versions(), "connect_errors": []string{},
	}
	return nil
}

// commands reads "start <unix ns>" and "stop" from the orchestrator; EOF means stop.
func commands(start chan<- int64, stop chan<- struct{}) {
	scanner := bufio.NewScanner(os.Stdin)
	for scanner.Scan() {
		f := strings.Fields(scanner.Text())
		if len(f) == 2 && f[0] == "start" {
			if epoch, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				start <- epoch
			}
		} else if len(f) == 1 && f[0] == "stop" {
			break
		}
	}
	close(stop)
}

// connect dials the neighbours this node dials, retrying while their listeners start.
func (n *node) connect(ctx context.Context) {
	deadline := time.Now().Add(time.Duration(n.c.WarmupNs) + 30*time.Second)
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, p := range n.c.Peers {
		_, id, err := nodeKey(n.c.Seed, p.Index)
		addr, aerr := ma.NewMultiaddr(p.Addr)
		if !p.Dial || err != nil || aerr != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			info := peer.AddrInfo{ID: id, Addrs: []ma.Multiaddr{addr}}
			for {
				dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				err := n.h.Connect(dctx, info)
				cancel()
				if err == nil {
					return
				}
				if time.Now().After(deadline) {
					mu.Lock()
					n.result["connect_errors"] = append(n.result["connect_errors"].([]string), fmt.Sprintf("node %d: %v", p.Index, err))
					mu.Unlock()
					return
				}
				if sw, ok := n.h.Network().(*swarm.Swarm); ok {
					sw.Backoff().Clear(id) // a refused dial must not wait for the swarm's backoff
				}
				time.Sleep(100 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
}

// awaitReady waits, at most the warm-up, for every neighbour to be a topic peer and a
// mesh of min(D_lo, degree) per topic: the testbed node's rule (testbed/node.go).
func (n *node) awaitReady(started time.Time) {
	degree := len(n.c.Peers)
	by := "warmup"
	for time.Since(started) < time.Duration(n.c.WarmupNs) {
		ready := true
		for t := range n.c.Topics {
			name := topicName(t)
			ready = ready && len(n.ps.ListPeers(name)) >= degree && n.raw.meshSize(name) >= min(n.c.Protocol.Dlo, degree)
		}
		if ready {
			by = "mesh"
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	after := time.Since(started).Nanoseconds()
	n.result["ready_after_ns"], n.result["ready_by"] = after, by
	meshes := make([]int, n.c.Topics)
	for t := range meshes {
		meshes[t] = n.raw.meshSize(topicName(t))
	}
	emit(map[string]any{"event": "ready", "index": n.c.Index, "by": by, "after_ns": after, "mesh": meshes, "peers": len(n.h.Network().Peers())})
}

// publish sends this node's messages at their intended times; each payload starts with
// its message index (big endian), as the testbed node's, so that ids differ.
func (n *node) publish(ctx context.Context, epoch int64, stop <-chan struct{}) {
	for _, pub := range n.c.Schedule {
		select {
		case <-time.After(time.Until(time.Unix(0, epoch+pub.TNs))):
		case <-stop:
			return
		}
		data := make([]byte, pub.Size)
		if pub.Size >= 4 {
			binary.BigEndian.PutUint32(data, pub.Msg)
		}
		t0 := time.Now().UnixNano()
		err := n.topics[pub.Topic].Publish(ctx, data)
		rec := map[string]any{"msg": pub.Msg, "t_publish_unix_ns": t0, "t_returned_unix_ns": time.Now().UnixNano()}
		if err != nil {
			rec["error"] = err.Error()
		}
		rec["id"] = base64.StdEncoding.EncodeToString(n.publishedID(pub, data))
		n.pubs = append(n.pubs, rec)
	}
}

// publishedID is the id the fork gave the message: computed for Ethereum ids, else read
// from its PUBLISH_MESSAGE trace event, which the event loop emits after Publish returns.
func (n *node) publishedID(pub publication, data []byte) []byte {
	if n.c.Protocol.MessageID == "ethereum" {
		_ = n.events.takeID()
		return []byte(ethereumID(&pb.Message{Data: data}))
	}
	for range 100 {
		if id := n.events.takeID(); id != nil {
			return id
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

func (n *node) finish() error {
	n.events.close() // after this, nothing touches n.events.saved
	n.raw.mu.Lock()
	traffic := map[string]counters{}
	for k, c := range n.raw.traffic {
		traffic[k] = *c
	}
	drops := []map[string]any{}
	for kind, count := range n.raw.drops {
		drops = append(drops, map[string]any{"peer": -1, "kind": kind, "reason": "outbound-queue-full", "count": count})
	}
	n.raw.mu.Unlock()
	ids := map[string]int{}
	for _, p := range n.c.Peers {
		if _, id, err := nodeKey(n.c.Seed, p.Index); err == nil {
			ids[string(id)] = p.Index
		}
	}
	for p, count := range n.events.saved.saved {
		index, ok := ids[p]
		if !ok {
			index = -1
		}
		drops = append(drops, map[string]any{"peer": index, "kind": "payload", "reason": "saved-by-idontwant", "count": count})
	}
	if n.pubs == nil {
		n.pubs = []map[string]any{}
	}
	n.result["traffic"], n.result["drops"], n.result["publishes"] = traffic, drops, n.pubs
	raw, err := json.MarshalIndent(n.result, "", " ")
	if err != nil {
		return err
	}
	path := filepath.Join(n.c.Dir, "node.json")
	if err := os.WriteFile(path+".tmp", raw, 0o644); err != nil {
		return err
	}
	emit(map[string]any{"event": "done", "index": n.c.Index})
	return os.Rename(path+".tmp", path)
}
