"""The gossipsub parameters every backend passes on, in backend units.

Both the engine's config and the testbed node's config take these under the same names,
with durations in nanoseconds (a `_ns` suffix); each backend adds its own extras.
"""

from __future__ import annotations

from typing import Any

from gossiplab.scenario import ProtocolConfig


def protocol_params(p: ProtocolConfig) -> dict[str, Any]:
    return {
        "D": p.D,
        "D_lo": p.D_lo,
        "D_hi": p.D_hi,
        "D_lazy": p.D_lazy,
        "D_score": p.D_score,
        "D_out": p.D_out,
        "heartbeat_ns": p.heartbeat,
        "heartbeat_initial_delay_ns": p.heartbeat_initial_delay,
        "history_length": p.history_length,
        "history_gossip": p.history_gossip,
        "gossip_factor": p.gossip_factor,
        "gossip_retransmission": p.gossip_retransmission,
        "fanout_ttl_ns": p.fanout_ttl,
        "seen_ttl_ns": p.seen_ttl,
        "flood_publish": p.flood_publish,
        "prune_backoff_ns": p.prune_backoff,
        "unsubscribe_backoff_ns": p.unsubscribe_backoff,
        "max_ihave_length": p.max_ihave_length,
        "max_ihave_messages": p.max_ihave_messages,
        "iwant_followup_ns": p.iwant_followup_time,
        "idontwant_threshold": int(p.idontwant_threshold),
        "peer_outbound_queue": p.peer_outbound_queue,
        "validate_queue": p.validate_queue,
        "signing": p.signing,
        "message_id": p.message_id,
        "peer_exchange": p.peer_exchange,
        "prune_peers": p.prune_peers,
    }
