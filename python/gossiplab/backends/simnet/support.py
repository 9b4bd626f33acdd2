"""What the simnet backend can run, what it refuses, and what it applies differently.

Everything refused here is refused before anything runs, with the field and what to do
instead: the Go runner never sees a scenario it would have to run differently.
"""

from __future__ import annotations

from gossiplab.backends.testbed.support import (
    go_fixed_notes,
    go_idontwant_problems,
    go_v13_problems,
)
from gossiplab.errors import Problem, ScenarioError
from gossiplab.scenario import NetworkConfig, Scenario

MODEL = 'or use backend = "model"'
# Faults real hosts can go through: the Go runner crashes and restarts hosts, cuts links
# and leaves topics. Slow nodes and adversaries would need a patched go-libp2p-pubsub.
RUNNABLE_FAULTS = ("crash", "churn", "partition", "leave")


def unsupported_features(s: Scenario) -> list[Problem]:
    """What the scenario asks for that the simnet backend cannot run, field by field."""
    return _protocol_problems(s) + _network_problems(s) + _fault_problems(s) + _other_problems(s)


def check_supported(s: Scenario) -> None:
    problems = unsupported_features(s)
    if problems:
        raise ScenarioError(problems)


def _protocol_problems(s: Scenario) -> list[Problem]:
    p = s.protocol
    problems = []
    if p.name == "gossipsub" and p.version == "2.0":
        message = "go-libp2p-pubsub v0.17.0 has no gossipsub v2.0 (IANNOUNCE/INEED)"
        problems.append(Problem("protocol.version", message, f"use 1.0 to 1.2, {MODEL}"))
    if p.name == "gossipsub" and not p.D_out < p.D // 2:
        # go refuses Dout >= D/2 (integer division), stricter than the spec's Dout <= D/2.
        message = f"go-libp2p-pubsub needs D_out < D/2 = {p.D // 2}, got {p.D_out}"
        problems.append(Problem("protocol.D_out", message, f"lower D_out, {MODEL}"))
    if p.message_id == "go" and p.signing == "strict-no-sign":
        message = "go's ids (author + seqno) are all equal without an author"
        hint = 'use message_id = "ethereum" with strict-no-sign'
        problems.append(Problem("protocol.message_id", message, hint))
    if p.message_id == "ethereum" and s.workload.size < 4:
        message = "content-addressed ids need >= 4 bytes of payload to tell messages apart"
        problems.append(Problem("workload.size", message, "use a size of at least 4 bytes"))
    return problems + go_v13_problems(s) + go_idontwant_problems(p)


def _network_problems(s: Scenario) -> list[Problem]:
    net = s.network
    problems = []
    if not isinstance(net.latency, int):
        message = (
            f"a {net.latency.distribution} latency distribution is not run on simnet: its "
            "links take a constant or a region matrix"
        )
        hint = f"use a constant latency or network.regions, {MODEL}"
        problems.append(Problem("network.latency", message, hint))
    if net.jitter:
        message = "simnet's links have no jitter: every packet of a link takes its latency"
        problems.append(Problem("network.jitter", message, f'set jitter = "0ms", {MODEL}'))
    if net.shared_ips:
        message = "every simulated host has its own IP address (IP colocation, P6)"
        problems.append(Problem("network.shared_ips", message, f"remove it, {MODEL}"))
    return problems


def _fault_problems(s: Scenario) -> list[Problem]:
    problems = []
    for i, fault in enumerate(s.faults):
        if fault.kind in RUNNABLE_FAULTS:
            continue
        why = {
            "slow": "real hosts in virtual time have no CPU cost to multiply",
            "adversary": "go-libp2p-pubsub has no misbehaving mode",
        }.get(fault.kind, "it is not run on simnet")
        message = f"'{fault.kind}' faults are not run on simnet: {why}"
        problems.append(Problem(f"faults[{i}]", message, f"remove it, {MODEL}"))
    return problems


def _other_problems(s: Scenario) -> list[Problem]:
    problems = []
    if s.output.mode != "full":
        message = f"'{s.output.mode}' is not supported: simnet writes one row per receipt"
        problems.append(Problem("output.mode", message, f'use "full", {MODEL}'))
    if s.output.message_traffic:
        message = "go's counters count traffic per node and kind, not per message"
        problems.append(Problem("output.message_traffic", message, f"set it to false, {MODEL}"))
    if s.testbed.profile:
        message = "per-node CPU profiles are a testbed feature: simnet's hosts share one process"
        hint = 'set profile = false, or use backend = "testbed"'
        problems.append(Problem("testbed.profile", message, hint))
    if s.testbed.go_trace:
        message = (
            "per-node go execution traces are a testbed feature: simnet's hosts share one process"
        )
        hint = 'set go_trace = [], or use backend = "testbed"'
        problems.append(Problem("testbed.go_trace", message, hint))
    return problems


def _changed(s: Scenario, field: str) -> bool:
    """Whether the scenario gives network.`field` a value other than the schema's default."""
    return getattr(s.network, field) != NetworkConfig.model_fields[field].default


# What simnet's QUIC hosts do, in the model's [network] fields (the simnet scenario files
# set them): quic-go v0.64.1 starts a window at 32 packets of 1,280 B
# (internal/congestion/cubic_sender.go, internal/protocol/params.go), 28 segments of
# 1,460 B, never restarts it after idle and paces (pacer.go); a QUIC stream's Write
# returns once its data is in packets (send_stream.go), so go's writer holds one RPC; a
# connection's hellos follow the handshake and the stream's negotiation, 2 round trips.
QUIC_NETWORK: dict[str, int | bool] = {
    "initial_window": 32 * 1280 // 1460,
    "slow_start_after_idle": False,
    "pacing": True,
    "send_buffer": 0,
    "connect_round_trips": 2,
}


def quic_transport_advice(s: Scenario) -> str | None:
    """For a crosscheck against simnet: the model's [network] fields that describe TCP
    where simnet's hosts speak QUIC, and what to set instead; None if none do."""
    differing = [
        f"{field} = {_toml(getattr(s.network, field))} (QUIC: {_toml(quic)})"
        for field, quic in QUIC_NETWORK.items()
        if getattr(s.network, field) != quic
    ]
    if not differing:
        return None
    return (
        "the model's [network] describes TCP where simnet's hosts speak QUIC: "
        + ", ".join(differing)
        + ". Set the QUIC values, as scenarios/simnet/*.toml do, to compare like with like "
        "(docs/simnet.md)"
    )


def _toml(value: int | bool) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def notes(s: Scenario) -> list[str]:
    """Fields that simnet applies differently from the model, for the run info."""
    found = []
    if s.network.has_cpu_cost():
        found.append(
            "network.cpu_per_message is not charged: in virtual time the real nodes' CPU "
            "work takes no time"
        )
    if s.cpu.charges() or s.cpu.nodes_per_host > 1:
        found.append(
            "[cpu] (hosts, cores, costs) is the model's: in virtual time the real nodes' CPU "
            "work takes no time"
        )
    if _changed(s, "initial_window"):
        found.append(
            "network.initial_window is the model's TCP window; simnet runs QUIC with "
            "quic-go's own congestion control"
        )
    if _changed(s, "connect_round_trips"):
        found.append(
            "network.connect_round_trips is the model's; simnet's hosts go through their own "
            "QUIC handshakes"
        )
    if _changed(s, "uplink_sharing") or _changed(s, "send_buffer"):
        found.append(
            "network.uplink_sharing and network.send_buffer are the model's; simnet's hosts "
            "write through QUIC streams onto FIFO links"
        )
    if s.network.downlink_sharing == "fifo" and s.network.has_download_limit():
        found.append(
            "network.downlink_sharing = \"fifo\" is the model's; on simnet's links the "
            'packets of concurrent connections interleave, as "fair" has it'
        )
    found.extend(go_fixed_notes(s))
    return found
