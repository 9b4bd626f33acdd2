"""The gossipsub parameters every backend passes on, in backend units: one translation from
the scenario for the engine and the Go node alike.

Both configs take these under the same names, with durations in nanoseconds (a `_ns`
suffix); each backend adds its own extras. The two configs differ only in where they
expect `graft_params`: the engine in its score section, the Go node in its protocol
section.
"""

from __future__ import annotations

from typing import Any

from gossiplab.scenario import ProtocolConfig, ScoreConfig
from gossiplab.scenario.cpu import TURN_FIELDS, CpuConfig


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


def graft_params(p: ProtocolConfig) -> dict[str, Any]:
    """When a GRAFT after a PRUNE is penalised, and opportunistic grafting's cadence."""
    return {
        "graft_flood_threshold_ns": p.graft_flood_threshold,
        "opportunistic_graft_ticks": p.opportunistic_graft_ticks,
        "opportunistic_graft_peers": p.opportunistic_graft_peers,
    }


# Score fields that are durations: both backends take them in ns under a *_ns name.
_SCORE_DURATIONS = (
    "time_in_mesh_quantum",
    "mesh_message_deliveries_activation",
    "mesh_message_deliveries_window",
    "decay_interval",
    "retain_score",
)


def score_params(score: ScoreConfig) -> dict[str, Any] | None:
    """The score function's parameters and thresholds, or None when scoring is off.

    app_specific stays a list of {nodes, score}; each backend resolves the node ids.
    """
    if not score.enabled:
        return None
    values = score.model_dump()
    del values["enabled"]
    return {
        (f"{name}_ns" if name in _SCORE_DURATIONS else name): value
        for name, value in values.items()
    }


def engine_cpu(given: CpuConfig) -> dict[str, Any]:
    """The engine's `cpu` section (crates/engine/src/config.rs CpuConfig), the costs at
    the hosts' speed."""
    cpu = given.charged()
    return {
        "nodes_per_host": cpu.nodes_per_host,
        "cores": cpu.cores,
        "per_copy_ns": cpu.per_copy,
        "per_kb_copy_ns": cpu.per_kb_copy,
        "per_rpc_received_ns": cpu.per_rpc_received,
        "per_kb_received_ns": cpu.per_kb_received,
        "per_read_wakeup_ns": cpu.per_read_wakeup,
        "per_node_wakeup_ns": cpu.per_node_wakeup,
        "per_rpc_sent_ns": cpu.per_rpc_sent,
        "per_kb_sent_ns": cpu.per_kb_sent,
        "per_segment_kernel_ns": cpu.per_segment_kernel,
        "per_publish_ns": cpu.per_publish,
        "per_kb_publish_ns": cpu.per_kb_publish,
        "per_kb_message_id_ns": cpu.per_kb_message_id,
        "sigma": cpu.sigma,
        **{f"sigma_{name}": sigma for name, sigma in cpu.sigmas().items()},
        "time_slice_ns": cpu.slice_ns(),
        "kernel_tick_ns": 1_000_000_000 // cpu.kernel_hz,
        "hrtick": cpu.hrtick,
        "event_loop": cpu.event_loop,
        "sysmon": cpu.sysmon,
        "per_sysmon_round_ns": cpu.per_sysmon_round,
        "send_loop_syscall_share": cpu.send_loop_syscall_share,
        "recv_loop_syscall_share": cpu.recv_loop_syscall_share,
        "per_rpc_loop_ns": cpu.per_rpc_loop,
        "per_publish_loop_ns": cpu.per_publish_loop,
        "per_forward_loop_ns": cpu.per_forward_loop,
        "per_app_message_ns": cpu.per_app_message,
        **{f"{name}_ns": getattr(cpu, name) for name in TURN_FIELDS},
        "record_waits": list(cpu.record_waits),
    }
