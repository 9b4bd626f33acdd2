package simnet

import (
	"time"

	"github.com/gossiplab/gossiplab/testbed/gossipnode"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
)

// goDefaults is the scenario's [protocol] at go-libp2p-pubsub's own defaults, with
// signing off and content ids, as Ethereum publishes.
func goDefaults() gossipnode.ProtocolConfig {
	g := pubsub.DefaultGossipSubParams()
	return gossipnode.ProtocolConfig{
		D: g.D, Dlo: g.Dlo, Dhi: g.Dhi, Dlazy: g.Dlazy, Dscore: g.Dscore, Dout: g.Dout,
		HeartbeatNs: int64(g.HeartbeatInterval), HeartbeatInitialDelayNs: int64(g.HeartbeatInitialDelay),
		HistoryLength: g.HistoryLength, HistoryGossip: g.HistoryGossip, GossipFactor: g.GossipFactor,
		GossipRetransmission: g.GossipRetransmission, FanoutTTLNs: int64(g.FanoutTTL),
		SeenTTLNs: int64(2 * time.Minute), FloodPublish: true, PruneBackoffNs: int64(g.PruneBackoff),
		UnsubscribeBackoffNs: int64(g.UnsubscribeBackoff), GraftFloodThresholdNs: int64(g.GraftFloodThreshold),
		OpportunisticGraftTicks: g.OpportunisticGraftTicks, OpportunisticGraftPeers: g.OpportunisticGraftPeers,
		MaxIHaveLength: g.MaxIHaveLength, MaxIHaveMessages: g.MaxIHaveMessages,
		IWantFollowupNs: int64(g.IWantFollowupTime), IDontWantThreshold: g.IDontWantMessageThreshold,
		PeerOutboundQueue: 32, ValidateQueue: 32, Signing: "strict-no-sign", MessageID: "ethereum",
		PrunePeers: g.PrunePeers,
	}
}

// edge is an undirected link of a test topology; A dials B.
type edge struct{ A, B int }

// testRun is a run of n nodes over `edges`, every node at the same bandwidth and
// latency, nothing published yet.
func testRun(n int, edges []edge, bps int64, latency time.Duration, endNs int64) *RunConfig {
	c := &RunConfig{Seed: 1, EndNs: endNs}
	for i := range n {
		c.Nodes = append(c.Nodes, &gossipnode.Config{
			Index: i, Router: "gossipsub", Version: "1.2", Protocol: goDefaults(), Topics: 1,
			Schedule: []gossipnode.Publication{},
		})
		c.Network.UploadBps = append(c.Network.UploadBps, bps)
		c.Network.DownloadBps = append(c.Network.DownloadBps, bps)
		c.Network.Latency.AddedNs = append(c.Network.Latency.AddedNs, 0)
	}
	c.Network.Latency.Kind = "constant"
	c.Network.Latency.Ns = int64(latency)
	for _, e := range edges {
		c.Nodes[e.A].Peers = append(c.Nodes[e.A].Peers, gossipnode.PeerConfig{Index: e.B, Dial: true})
		c.Nodes[e.B].Peers = append(c.Nodes[e.B].Peers, gossipnode.PeerConfig{Index: e.A})
	}
	return c
}
