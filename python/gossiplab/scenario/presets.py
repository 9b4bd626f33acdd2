"""The protocol presets: go-libp2p-pubsub's, rust-libp2p's and Ethereum's parameters."""

from __future__ import annotations

from typing import Any

# go-libp2p-pubsub defaults (protocol-notes §6; gossipsub.go:52-82, pubsub.go, validation.go).
GO_DEFAULT: dict[str, Any] = {
    "D": 6,
    "D_lo": 5,  # the spec says 4; go uses 5
    "D_hi": 12,
    "D_lazy": 6,
    "D_score": 4,
    "D_out": 2,
    "D_announce": 4,  # v2.0 draft (specs PR #653; go PR #587)
    "heartbeat": "1s",
    "heartbeat_initial_delay": "100ms",
    "history_length": 5,
    "history_gossip": 3,
    "gossip_factor": 0.25,
    "gossip_retransmission": 3,
    "fanout_ttl": "60s",
    "seen_ttl": "120s",
    "flood_publish": False,  # go never enables it by default, unlike the spec, rust and js
    "prune_backoff": "60s",
    "unsubscribe_backoff": "10s",
    # go forgets a backoff only at every 15th heartbeat, once it expired more than 2 s ago
    # (2 × the package-level 1 s GossipSubHeartbeatInterval, which per-router params do not
    # change): at a 1 s heartbeat that is 2 ticks.
    "backoff_slack_ticks": 2,
    "backoff_clear_ticks": 15,
    "graft_flood_threshold": "10s",
    "opportunistic_graft_ticks": 60,
    "opportunistic_graft_peers": 2,
    "max_ihave_length": 5000,
    "max_ihave_messages": 10,
    "iwant_followup_time": "3s",
    "idontwant_threshold": "1024B",  # go sends IDONTWANT when len(data) >= 1024
    "ineed_timeout": "400ms",  # v2.0 draft
    "peer_outbound_queue": 32,  # RPCs, not bytes
    "validate_queue": 32,
    "signing": "strict-sign",
    "message_id": "go",
    # v1.1 peer exchange: off unless WithPeerExchange(true); 16 peers per PRUNE.
    "peer_exchange": False,
    "prune_peers": 16,
}

# rust-libp2p gossipsub (config.rs): go's values except these.
RUST_DEFAULT: dict[str, Any] = {
    **GO_DEFAULT,
    "heartbeat_initial_delay": "5s",
    "seen_ttl": "60s",
    "flood_publish": True,
    # rust's queue also has 5 s publish / 1 s forward timeouts, which are not modelled.
    "peer_outbound_queue": 5000,
    # rust has no validation queue; a bound this large is never reached, so nothing drops.
    "validate_queue": 1_000_000,
    # rust sends IDONTWANT when the Message *protobuf* is > 1000 B, go when the *data* is
    # >= 1024 B; gossiplab compares the data size, so 1001 B is the nearest equivalent.
    "idontwant_threshold": "1001B",
    # rust sweeps expired backoffs every heartbeat with one heartbeat of slack.
    "backoff_slack_ticks": 1,
    "backoff_clear_ticks": 1,
    # rust's message id (base58 source + decimal seqno) is longer than go's; sizes use go's.
}

# Ethereum consensus clients (consensus-specs p2p-interface; Prysm): go's values except these.
ETHEREUM: dict[str, Any] = {
    **GO_DEFAULT,
    "D": 8,
    "D_lo": 6,
    "D_hi": 12,
    "D_lazy": 6,
    "heartbeat": "700ms",
    "history_length": 6,
    "history_gossip": 3,
    "seen_ttl": "768s",  # SLOT_DURATION_MS * SLOTS_PER_EPOCH * 2 // 1000
    "flood_publish": False,  # Prysm leaves go's default
    "signing": "strict-no-sign",
    "message_id": "ethereum",
    "peer_outbound_queue": 1000,  # Prysm --pubsub-queue-size
    "validate_queue": 1000,
    # go's fixed 2 s backoff slack is 2.86 heartbeats of 700 ms; rounded up to whole ticks.
    "backoff_slack_ticks": 3,
}

PROTOCOL_PRESETS: dict[str, dict[str, Any]] = {
    "go-default": GO_DEFAULT,
    "rust-default": RUST_DEFAULT,
    "ethereum": ETHEREUM,
}

# Peer scoring. go ships no default parameters (every score and threshold is 0 without
# WithPeerScore), so the defaults below are rust-libp2p's (peer_score/params.rs), which js
# shares except for topic_score_cap; where rust has no default a sensible value is noted.
RUST_SCORE: dict[str, Any] = {
    "enabled": False,
    "gossip_threshold": -10.0,
    "publish_threshold": -50.0,
    "graylist_threshold": -80.0,
    "accept_px_threshold": 10.0,
    "opportunistic_graft_threshold": 20.0,
    "topic_score_cap": 3600.0,
    "topic_weight": 0.5,
    "time_in_mesh_weight": 1.0,  # P1
    "time_in_mesh_quantum": "1ms",
    "time_in_mesh_cap": 3600.0,
    "first_message_deliveries_weight": 1.0,  # P2
    "first_message_deliveries_decay": 0.5,
    "first_message_deliveries_cap": 2000.0,
    "mesh_message_deliveries_weight": -1.0,  # P3
    "mesh_message_deliveries_decay": 0.5,
    "mesh_message_deliveries_threshold": 20.0,
    "mesh_message_deliveries_cap": 100.0,
    "mesh_message_deliveries_activation": "5s",
    "mesh_message_deliveries_window": "10ms",
    "mesh_failure_penalty_weight": -1.0,  # P3b
    "mesh_failure_penalty_decay": 0.5,
    "invalid_message_deliveries_weight": -1.0,  # P4
    "invalid_message_deliveries_decay": 0.3,
    "app_specific_weight": 10.0,  # P5, of the scores in app_specific
    "ip_colocation_factor_weight": -5.0,  # P6, of nodes sharing an IP (network.shared_ips)
    "ip_colocation_factor_threshold": 10.0,
    "behaviour_penalty_weight": -10.0,  # P7
    "behaviour_penalty_threshold": 0.0,
    "behaviour_penalty_decay": 0.2,
    "decay_interval": "1s",
    "decay_to_zero": 0.1,
    "retain_score": "3600s",
}
# Prysm's thresholds (beacon-chain/p2p/gossip_scoring_params.go); its per-topic weights are
# computed from the beacon chain's message rates, so the parameters stay rust's.
PRYSM_SCORE: dict[str, Any] = {
    **RUST_SCORE,
    "gossip_threshold": -4000.0,
    "publish_threshold": -8000.0,
    "graylist_threshold": -16000.0,
    "accept_px_threshold": 100.0,
    "opportunistic_graft_threshold": 5.0,
}
SCORE_PRESETS: dict[str, dict[str, Any]] = {
    "go-default": RUST_SCORE,
    "rust-default": RUST_SCORE,
    "ethereum": PRYSM_SCORE,
}
