package gossipnode

import (
	"encoding/json"
	"fmt"
	"os"
)

// Config is everything one node needs, written by the Python orchestrator as JSON.
// Durations are integer nanoseconds so that no unit parsing is repeated here: the
// scenario was validated and resolved once, in Python.
type Config struct {
	Index  int          `json:"index"`
	Seed   uint64       `json:"seed"`
	Listen string       `json:"listen"`
	Peers  []PeerConfig `json:"peers"`
	// Direct lists this node's direct (explicit) peers: neighbours it forwards every
	// message to and never meshes with (go's WithDirectPeers, configured on both ends).
	Direct    []PeerConfig `json:"direct"`
	Transport string       `json:"transport"` // tcp | quic
	Security  string       `json:"security"`  // noise | tls
	Muxer     string       `json:"muxer"`     // yamux (tcp) | quic (native streams)
	Router    string       `json:"router"`    // gossipsub | floodsub | randomsub
	// RandomsubSize is the network size randomsub uses for its sqrt(n) fan-out.
	RandomsubSize int            `json:"randomsub_size"`
	Version       string         `json:"version"` // gossipsub 1.0 | 1.1 | 1.2
	Protocol      ProtocolConfig `json:"protocol"`
	Score         *ScoreConfig   `json:"score,omitempty"`
	Topics        int            `json:"topics"`
	// Schedule holds only this node's publications, in intended-time order.
	Schedule []Publication `json:"schedule"`
	// WarmupNs bounds the wait for meshes: a node is ready when its meshes are formed
	// or when this long has passed since it started, whichever comes first.
	WarmupNs int64  `json:"warmup_ns"`
	Dir      string `json:"dir"`
	Profile  bool   `json:"profile"`
	// GoTrace records this node's execution trace (runtime/trace) over the measured
	// interval into Dir/go.trace.
	GoTrace bool `json:"go_trace"`
	// TraceRPC keeps SEND_RPC/RECV_RPC/DROP_RPC events in the trace file; they are
	// large and traffic is counted exactly by the raw tracer anyway.
	TraceRPC bool `json:"trace_rpc"`
	// Partial makes every publication of Schedule a group of parts published through
	// the partial-messages extension (partial.go); nil for whole messages only.
	Partial *PartialConfig `json:"partial,omitempty"`
}

// PartialConfig is the scenario's [workload.partial] as one node needs it: the sizes
// of a group, the application rule's knobs, the library's limits, this node's role and
// the parts it holds of each group before the group is published (drawn in Python,
// backends/partial_plan.py, so that every backend holds the same parts).
type PartialConfig struct {
	Parts        int  `json:"parts"`
	PartSize     int  `json:"part_size"`
	PartOverhead int  `json:"part_overhead"`
	FullOverhead int  `json:"full_overhead"`
	GroupIDSize  int  `json:"group_id_size"`
	EagerPush    bool `json:"eager_push"`
	FullFallback bool `json:"full_fallback"`
	// Rule is the application rule; "go-reference" (go's own test application) only.
	Rule                   string `json:"rule"`
	GroupTTLHeartbeats     int    `json:"group_ttl_heartbeats"`
	PeerGroupLimitPerTopic int    `json:"peer_group_limit_per_topic"`
	PeerGroupLimitPerPeer  int    `json:"peer_group_limit_per_peer"`
	// Role is this node's: "requests", "supports" or "none" (no extension).
	Role string `json:"role"`
	// Held maps a message index (decimal) to the parts this node holds before that
	// group is published: go's bitmap layout (part i is bit i%8 of byte i/8), in hex.
	Held map[string]string `json:"held"`
	// LogParts keeps one line per part received in parts.ndjson.
	LogParts bool `json:"log_parts"`
}

// PeerConfig is one neighbour in the static topology.
type PeerConfig struct {
	Index int    `json:"index"`
	Addr  string `json:"addr"`
	Dial  bool   `json:"dial"` // true when this node opens the connection
}

// Publication is one message this node publishes.
type Publication struct {
	Msg   uint32 `json:"msg"`
	TNs   int64  `json:"t_ns"` // intended time, ns after the run's start
	Size  int    `json:"size"`
	Topic int    `json:"topic"`
}

// ProtocolConfig mirrors the scenario's [protocol] section (times in ns).
type ProtocolConfig struct {
	D                       int     `json:"D"`
	Dlo                     int     `json:"D_lo"`
	Dhi                     int     `json:"D_hi"`
	Dlazy                   int     `json:"D_lazy"`
	Dscore                  int     `json:"D_score"`
	Dout                    int     `json:"D_out"`
	HeartbeatNs             int64   `json:"heartbeat_ns"`
	HeartbeatInitialDelayNs int64   `json:"heartbeat_initial_delay_ns"`
	HistoryLength           int     `json:"history_length"`
	HistoryGossip           int     `json:"history_gossip"`
	GossipFactor            float64 `json:"gossip_factor"`
	GossipRetransmission    int     `json:"gossip_retransmission"`
	FanoutTTLNs             int64   `json:"fanout_ttl_ns"`
	SeenTTLNs               int64   `json:"seen_ttl_ns"`
	FloodPublish            bool    `json:"flood_publish"`
	PruneBackoffNs          int64   `json:"prune_backoff_ns"`
	UnsubscribeBackoffNs    int64   `json:"unsubscribe_backoff_ns"`
	GraftFloodThresholdNs   int64   `json:"graft_flood_threshold_ns"`
	OpportunisticGraftTicks uint64  `json:"opportunistic_graft_ticks"`
	OpportunisticGraftPeers int     `json:"opportunistic_graft_peers"`
	MaxIHaveLength          int     `json:"max_ihave_length"`
	MaxIHaveMessages        int     `json:"max_ihave_messages"`
	IWantFollowupNs         int64   `json:"iwant_followup_ns"`
	IDontWantThreshold      int     `json:"idontwant_threshold"`
	PeerOutboundQueue       int     `json:"peer_outbound_queue"`
	ValidateQueue           int     `json:"validate_queue"`
	Signing                 string  `json:"signing"`    // strict-sign | strict-no-sign
	MessageID               string  `json:"message_id"` // go | ethereum
	// PeerExchange sends up to PrunePeers other topic peers with each PRUNE
	// (WithPeerExchange); the pruned node dials them from their signed peer records.
	PeerExchange bool `json:"peer_exchange"`
	PrunePeers   int  `json:"prune_peers"`
}

// ScoreConfig mirrors [protocol.score]; present only when scoring is enabled.
type ScoreConfig struct {
	GossipThreshold                   float64 `json:"gossip_threshold"`
	PublishThreshold                  float64 `json:"publish_threshold"`
	GraylistThreshold                 float64 `json:"graylist_threshold"`
	AcceptPXThreshold                 float64 `json:"accept_px_threshold"`
	OpportunisticGraftThreshold       float64 `json:"opportunistic_graft_threshold"`
	TopicScoreCap                     float64 `json:"topic_score_cap"`
	TopicWeight                       float64 `json:"topic_weight"`
	TimeInMeshWeight                  float64 `json:"time_in_mesh_weight"`
	TimeInMeshQuantumNs               int64   `json:"time_in_mesh_quantum_ns"`
	TimeInMeshCap                     float64 `json:"time_in_mesh_cap"`
	FirstMessageDeliveriesWeight      float64 `json:"first_message_deliveries_weight"`
	FirstMessageDeliveriesDecay       float64 `json:"first_message_deliveries_decay"`
	FirstMessageDeliveriesCap         float64 `json:"first_message_deliveries_cap"`
	MeshMessageDeliveriesWeight       float64 `json:"mesh_message_deliveries_weight"`
	MeshMessageDeliveriesDecay        float64 `json:"mesh_message_deliveries_decay"`
	MeshMessageDeliveriesThreshold    float64 `json:"mesh_message_deliveries_threshold"`
	MeshMessageDeliveriesCap          float64 `json:"mesh_message_deliveries_cap"`
	MeshMessageDeliveriesActivationNs int64   `json:"mesh_message_deliveries_activation_ns"`
	MeshMessageDeliveriesWindowNs     int64   `json:"mesh_message_deliveries_window_ns"`
	MeshFailurePenaltyWeight          float64 `json:"mesh_failure_penalty_weight"`
	MeshFailurePenaltyDecay           float64 `json:"mesh_failure_penalty_decay"`
	InvalidMessageDeliveriesWeight    float64 `json:"invalid_message_deliveries_weight"`
	InvalidMessageDeliveriesDecay     float64 `json:"invalid_message_deliveries_decay"`
	AppSpecificWeight                 float64 `json:"app_specific_weight"`
	IPColocationFactorWeight          float64 `json:"ip_colocation_factor_weight"`
	IPColocationFactorThreshold       float64 `json:"ip_colocation_factor_threshold"`
	BehaviourPenaltyWeight            float64 `json:"behaviour_penalty_weight"`
	BehaviourPenaltyThreshold         float64 `json:"behaviour_penalty_threshold"`
	BehaviourPenaltyDecay             float64 `json:"behaviour_penalty_decay"`
	DecayIntervalNs                   int64   `json:"decay_interval_ns"`
	DecayToZero                       float64 `json:"decay_to_zero"`
	RetainScoreNs                     int64   `json:"retain_score_ns"`
	// AppSpecific is P5: the application's score of the listed nodes, the same at
	// every node; peers not listed score 0.
	AppSpecific []AppScore `json:"app_specific"`
}

// AppScore gives Nodes (node indexes) the application-specific score Score.
type AppScore struct {
	Nodes []int   `json:"nodes"`
	Score float64 `json:"score"`
}

func ReadConfig(path string) (*Config, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c Config
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if c.Topics < 1 {
		return nil, fmt.Errorf("%s: topics must be >= 1", path)
	}
	return &c, nil
}
