package gossipnode

import (
	"crypto/sha256"
	"fmt"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	ma "github.com/multiformats/go-multiaddr"
)

// TopicName is topic t's name on the wire. It is 20 characters long, the length the
// model sizes its RPCs with (model_backend.TOPIC_NAME_LENGTH), so byte counts compare.
func TopicName(t int) string { return fmt.Sprintf("gossiplab-topic-%04d", t) }

// gossipParams maps the scenario's [protocol] onto go's GossipSubParams. Fields the
// scenario does not name keep go's defaults (connectors, connection timeout, direct
// connect ticks...).
func gossipParams(p ProtocolConfig) pubsub.GossipSubParams {
	g := pubsub.DefaultGossipSubParams()
	g.D, g.Dlo, g.Dhi = p.D, p.Dlo, p.Dhi
	g.Dlazy, g.Dscore, g.Dout = p.Dlazy, p.Dscore, p.Dout
	g.HeartbeatInterval = time.Duration(p.HeartbeatNs)
	g.HeartbeatInitialDelay = time.Duration(p.HeartbeatInitialDelayNs)
	g.HistoryLength, g.HistoryGossip = p.HistoryLength, p.HistoryGossip
	g.GossipFactor = p.GossipFactor
	g.GossipRetransmission = p.GossipRetransmission
	g.FanoutTTL = time.Duration(p.FanoutTTLNs)
	g.PruneBackoff = time.Duration(p.PruneBackoffNs)
	g.UnsubscribeBackoff = time.Duration(p.UnsubscribeBackoffNs)
	g.GraftFloodThreshold = time.Duration(p.GraftFloodThresholdNs)
	g.OpportunisticGraftTicks = p.OpportunisticGraftTicks
	g.OpportunisticGraftPeers = p.OpportunisticGraftPeers
	g.MaxIHaveLength, g.MaxIHaveMessages = p.MaxIHaveLength, p.MaxIHaveMessages
	g.IWantFollowupTime = time.Duration(p.IWantFollowupNs)
	g.IDontWantMessageThreshold = p.IDontWantThreshold
	g.PrunePeers = p.PrunePeers
	return g
}

// gossipProtocols is what a node of protocol `version` speaks: that version and the
// older ones, so that the negotiated protocol (and with it IDONTWANT, PX) is the one
// the scenario names.
func gossipProtocols(version string) ([]protocol.ID, error) {
	all := []protocol.ID{pubsub.GossipSubID_v13, pubsub.GossipSubID_v12, pubsub.GossipSubID_v11, pubsub.GossipSubID_v10, pubsub.FloodSubID}
	switch version {
	case "1.3": // extensions control message (gossipsub_feat.go GossipSubFeatureExtensions)
		return all, nil
	case "1.2":
		return all[1:], nil
	case "1.1":
		return all[2:], nil
	case "1.0":
		return all[3:], nil
	}
	return nil, fmt.Errorf("gossipsub version %q is not available in go-libp2p-pubsub v0.17.0", version)
}

// ethereumMessageID is the consensus-specs id for messages whose data is not snappy:
// SHA256(MESSAGE_DOMAIN_INVALID_SNAPPY || data)[:20]. gossiplab payloads are not
// snappy-compressed, so this branch is the one a client would take.
func ethereumMessageID(m *pb.Message) string {
	h := sha256.New()
	h.Write([]byte{0, 0, 0, 0})
	h.Write(m.GetData())
	return string(h.Sum(nil)[:20])
}

// appScores maps the peer ids of the nodes listed in app_specific to their score (a node
// listed twice gets the later score, as a later entry overrides an earlier one).
func appScores(seed uint64, entries []AppScore) (map[peer.ID]float64, error) {
	scores := map[peer.ID]float64{}
	for _, entry := range entries {
		for _, index := range entry.Nodes {
			_, id, err := NodeKey(seed, index)
			if err != nil {
				return nil, err
			}
			scores[id] = entry.Score
		}
	}
	return scores, nil
}

func scoreOptions(s *ScoreConfig, topics int, seed uint64) (*pubsub.PeerScoreParams, *pubsub.PeerScoreThresholds, error) {
	app, err := appScores(seed, s.AppSpecific)
	if err != nil {
		return nil, nil, err
	}
	params := &pubsub.PeerScoreParams{
		Topics:        map[string]*pubsub.TopicScoreParams{},
		TopicScoreCap: s.TopicScoreCap,
		// P5: peers not listed get 0 (a missing key's zero value).
		AppSpecificScore:            func(p peer.ID) float64 { return app[p] },
		AppSpecificWeight:           s.AppSpecificWeight,
		IPColocationFactorWeight:    s.IPColocationFactorWeight,
		IPColocationFactorThreshold: int(s.IPColocationFactorThreshold),
		BehaviourPenaltyWeight:      s.BehaviourPenaltyWeight,
		BehaviourPenaltyThreshold:   s.BehaviourPenaltyThreshold,
		BehaviourPenaltyDecay:       s.BehaviourPenaltyDecay,
		DecayInterval:               time.Duration(s.DecayIntervalNs),
		DecayToZero:                 s.DecayToZero,
		RetainScore:                 time.Duration(s.RetainScoreNs),
	}
	for t := range topics {
		params.Topics[TopicName(t)] = &pubsub.TopicScoreParams{
			TopicWeight:                     s.TopicWeight,
			TimeInMeshWeight:                s.TimeInMeshWeight,
			TimeInMeshQuantum:               time.Duration(s.TimeInMeshQuantumNs),
			TimeInMeshCap:                   s.TimeInMeshCap,
			FirstMessageDeliveriesWeight:    s.FirstMessageDeliveriesWeight,
			FirstMessageDeliveriesDecay:     s.FirstMessageDeliveriesDecay,
			FirstMessageDeliveriesCap:       s.FirstMessageDeliveriesCap,
			MeshMessageDeliveriesWeight:     s.MeshMessageDeliveriesWeight,
			MeshMessageDeliveriesDecay:      s.MeshMessageDeliveriesDecay,
			MeshMessageDeliveriesThreshold:  s.MeshMessageDeliveriesThreshold,
			MeshMessageDeliveriesCap:        s.MeshMessageDeliveriesCap,
			MeshMessageDeliveriesActivation: time.Duration(s.MeshMessageDeliveriesActivationNs),
			MeshMessageDeliveriesWindow:     time.Duration(s.MeshMessageDeliveriesWindowNs),
			MeshFailurePenaltyWeight:        s.MeshFailurePenaltyWeight,
			MeshFailurePenaltyDecay:         s.MeshFailurePenaltyDecay,
			InvalidMessageDeliveriesWeight:  s.InvalidMessageDeliveriesWeight,
			InvalidMessageDeliveriesDecay:   s.InvalidMessageDeliveriesDecay,
		}
	}
	thresholds := &pubsub.PeerScoreThresholds{
		GossipThreshold:             s.GossipThreshold,
		PublishThreshold:            s.PublishThreshold,
		GraylistThreshold:           s.GraylistThreshold,
		AcceptPXThreshold:           s.AcceptPXThreshold,
		OpportunisticGraftThreshold: s.OpportunisticGraftThreshold,
	}
	return params, thresholds, nil
}

// directPeers is the AddrInfo of every direct peer of this node: ids from the seed,
// addresses from the node index (the orchestrator wrote them into the config).
func directPeers(c *Config) ([]peer.AddrInfo, error) {
	infos := make([]peer.AddrInfo, 0, len(c.Direct))
	for _, d := range c.Direct {
		_, id, err := NodeKey(c.Seed, d.Index)
		if err != nil {
			return nil, err
		}
		addr, err := ma.NewMultiaddr(d.Addr)
		if err != nil {
			return nil, fmt.Errorf("direct peer %d: %w", d.Index, err)
		}
		infos = append(infos, peer.AddrInfo{ID: id, Addrs: []ma.Multiaddr{addr}})
	}
	return infos, nil
}

// PubsubOptions is every option the scenario implies, for the chosen router.
func PubsubOptions(c *Config, events pubsub.EventTracer, raw pubsub.RawTracer) ([]pubsub.Option, error) {
	p := c.Protocol
	opts := []pubsub.Option{
		pubsub.WithEventTracer(events),
		pubsub.WithRawTracer(raw),
		pubsub.WithPeerOutboundQueueSize(p.PeerOutboundQueue),
		pubsub.WithValidateQueueSize(p.ValidateQueue),
		pubsub.WithSeenMessagesTTL(time.Duration(p.SeenTTLNs)),
	}
	maxSize := 1 << 20
	for _, pub := range c.Schedule {
		// Room for the message's own fields besides data; go refuses larger RPCs.
		maxSize = max(maxSize, pub.Size+4096)
	}
	if c.Partial != nil {
		// Every node relays the full message, and an eager push carries every part.
		maxSize = max(maxSize, newPartLayout(c.Partial).fullLen+4096)
	}
	opts = append(opts, pubsub.WithMaxMessageSize(maxSize))
	switch p.Signing {
	case "strict-sign":
		opts = append(opts, pubsub.WithMessageSignaturePolicy(pubsub.StrictSign))
	case "strict-no-sign":
		// No author and no seqno, as Ethereum clients publish.
		opts = append(opts, pubsub.WithNoAuthor())
	default:
		return nil, fmt.Errorf("unknown signing policy %q", p.Signing)
	}
	switch p.MessageID {
	case "go":
		if p.Signing == "strict-no-sign" {
			return nil, fmt.Errorf("message_id \"go\" (from + seqno) needs an author: with strict-no-sign every message would get the same id; use message_id = \"ethereum\"")
		}
	case "ethereum":
		opts = append(opts, pubsub.WithMessageIdFn(newIDCache(ethereumMessageID).ID))
	default:
		return nil, fmt.Errorf("unknown message id %q", p.MessageID)
	}
	if c.Router != "gossipsub" {
		return opts, nil
	}
	protos, err := gossipProtocols(c.Version)
	if err != nil {
		return nil, err
	}
	opts = append(opts,
		pubsub.WithGossipSubParams(gossipParams(p)),
		pubsub.WithGossipSubProtocols(protos, pubsub.GossipSubDefaultFeatures),
		pubsub.WithFloodPublish(p.FloodPublish),
		pubsub.WithPeerExchange(p.PeerExchange),
	)
	if len(c.Direct) > 0 {
		infos, err := directPeers(c)
		if err != nil {
			return nil, err
		}
		opts = append(opts, pubsub.WithDirectPeers(infos))
	}
	if c.Score != nil {
		params, thresholds, err := scoreOptions(c.Score, c.Topics, c.Seed)
		if err != nil {
			return nil, err
		}
		opts = append(opts, pubsub.WithPeerScore(params, thresholds))
	}
	return opts, nil
}
