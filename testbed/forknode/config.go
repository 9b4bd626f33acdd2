package main

import (
	"encoding/json"
	"fmt"
	"os"
)

// config is the part of the testbed's node config (testbed/gossipnode/config.go, written
// by python/gossiplab/backends/testbed/nodeconfig.py) that a v2.0 crosscheck needs.
// Fields this node cannot honour are refused in Python before the run (rules.py).
type config struct {
	Index     int            `json:"index"`
	Seed      uint64         `json:"seed"`
	Listen    string         `json:"listen"`
	Peers     []peerConfig   `json:"peers"`
	Transport string         `json:"transport"`
	Security  string         `json:"security"`
	Muxer     string         `json:"muxer"`
	Router    string         `json:"router"`
	Version   string         `json:"version"`
	Protocol  protocolConfig `json:"protocol"`
	Topics    int            `json:"topics"`
	Schedule  []publication  `json:"schedule"`
	WarmupNs  int64          `json:"warmup_ns"`
	Dir       string         `json:"dir"`
}

type peerConfig struct {
	Index int    `json:"index"`
	Addr  string `json:"addr"`
	Dial  bool   `json:"dial"`
}

type publication struct {
	Msg   uint32 `json:"msg"`
	TNs   int64  `json:"t_ns"`
	Size  int    `json:"size"`
	Topic int    `json:"topic"`
}

type protocolConfig struct {
	D                       int     `json:"D"`
	Dlo                     int     `json:"D_lo"`
	Dhi                     int     `json:"D_hi"`
	Dlazy                   int     `json:"D_lazy"`
	Dscore                  int     `json:"D_score"`
	Dout                    int     `json:"D_out"`
	Dannounce               int     `json:"D_announce"`
	IneedTimeoutNs          int64   `json:"ineed_timeout_ns"`
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
	Signing                 string  `json:"signing"`
	MessageID               string  `json:"message_id"`
	PeerExchange            bool    `json:"peer_exchange"`
	PrunePeers              int     `json:"prune_peers"`
}

func readConfig(path string) (*config, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c config
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if c.Router != "gossipsub" || c.Version != "2.0" {
		return nil, fmt.Errorf("%s: this node runs gossipsub 2.0 only, got %s %s", path, c.Router, c.Version)
	}
	if c.Topics < 1 {
		return nil, fmt.Errorf("%s: topics must be >= 1", path)
	}
	return &c, nil
}

// The fork's defaults for two IDONTWANT limits the scenario has no field for
// (gossipsub.go GossipSubIDontWantMessageTTL, GossipSubMaxIDontWantLength).
const (
	defaultIDontWantTTL       = 3 // heartbeats
	defaultMaxIDontWantLength = 10
)
