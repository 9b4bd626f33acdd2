"""What the testbed can run, what it refuses, and what it applies differently."""

from __future__ import annotations

from pathlib import Path

from gossiplab.backends.testbed.cpus import node_cpu_problems
from gossiplab.backends.testbed.netns import MAX_NODES
from gossiplab.errors import Problem, ScenarioError
from gossiplab.scenario import GO_DEFAULT, ProtocolConfig, Scenario
from gossiplab.scenario.rules import FORK_NODE_ENV, fork_node_refusal
from gossiplab.units import parse_duration

AVAILABLE_CONGESTION = "/proc/sys/net/ipv4/tcp_available_congestion_control"

# Bytes of a group id the Go node needs (gossipnode/partialconfig.go: the index in 4).
GO_MIN_GROUP_ID = 4


def unsupported_features(s: Scenario) -> list[Problem]:
    problems = []
    if s.faults:
        message = "faults are not run by the testbed yet"
        problems.append(Problem("faults", message, 'remove them, or use backend = "model"'))
    if s.network.shared_ips:
        message = (
            "the testbed gives every node its own namespace and IP address, so nodes cannot "
            "share one (IP colocation, P6)"
        )
        problems.append(Problem("network.shared_ips", message, 'use backend = "model"'))
    for i, node_class in enumerate(s.network.classes):
        if node_class.added_loss:
            message = (
                "per-class loss is not run by the testbed yet: its links lose network.loss "
                "of the packets, whatever the class"
            )
            hint = 'set added_loss = 0 (or put the loss in network.loss), or use backend = "model"'
            problems.append(Problem(f"network.classes[{i}].added_loss", message, hint))
    if s.output.mode != "full":
        problems.append(Problem("output.mode", f"'{s.output.mode}' is not supported", 'use "full"'))
    if s.topology.nodes > MAX_NODES:
        message = f"the testbed addresses at most {MAX_NODES} nodes, got {s.topology.nodes}"
        problems.append(Problem("topology.nodes", message, "use fewer nodes"))
    if s.protocol.message_id == "go" and s.protocol.signing == "strict-no-sign":
        message = "go's ids (author + seqno) are all equal without an author"
        hint = 'use message_id = "ethereum" with strict-no-sign'
        problems.append(Problem("protocol.message_id", message, hint))
    if s.protocol.message_id == "ethereum" and s.workload.size < 4:
        message = "content-addressed ids need >= 4 bytes of payload to tell messages apart"
        problems.append(Problem("workload.size", message, "use a size of at least 4 bytes"))
    if s.output.message_traffic:
        message = "go's counters count traffic per node and kind, not per message"
        hint = 'set message_traffic = false, or use backend = "model"'
        problems.append(Problem("output.message_traffic", message, hint))
    problems += congestion_problems(s)
    problems += node_cpu_problems(s)
    if s.protocol.version == "2.0":
        return problems + fork_problems(s)
    return problems + go_v13_problems(s) + go_idontwant_problems(s.protocol)


def fork_problems(s: Scenario) -> list[Problem]:
    """A v2.0 scenario runs on the fork's node (testbed/forknode), which the testbed has
    only when $GOSSIPLAB_FORK_NODE names it, and which runs whole messages on plain
    meshes with the fork's own publisher and IDONTWANT rules (gossipsub.go Publish,
    PreValidation): no scoring, direct peers, partial messages, RPC traces, CPU profiles
    or execution traces."""
    refused = fork_node_refusal(s.protocol.version)
    if refused:
        return refused
    p = s.protocol
    why = f"the v2.0 fork's node ({FORK_NODE_ENV}) does not run it"
    hint = 'remove it, or use backend = "model"'
    problems = []
    unsupported = {
        "testbed.router": s.testbed.router != "gossipsub",
        "protocol.score.enabled": p.score.enabled,
        "protocol.direct_peers": bool(p.direct_peers),
        "workload.partial": s.workload.partial is not None,
        "testbed.trace_rpc": s.testbed.trace_rpc,
        "testbed.profile": s.testbed.profile,
        "testbed.go_trace": bool(s.testbed.go_trace),
    }
    problems += [Problem(path, why, hint) for path, on in unsupported.items() if on]
    # The fork's rules, which the node cannot change: the coin for the publisher's own
    # messages too (Publish), no IDONTWANT on publish, and IDONTWANT to the sender too.
    fixed = {
        "protocol.announce_own": p.announce_own != "coin",
        "protocol.idontwant_on_publish": p.idontwant_on_publish is True,
        "protocol.idontwant_to_sender": p.idontwant_to_sender is False,
    }
    message = "the v2.0 fork's node follows the fork here"
    problems += [
        Problem(path, message, "remove it (the fork's rule)") for path, on in fixed.items() if on
    ]
    return problems


def go_v13_problems(s: Scenario) -> list[Problem]:
    """What the Go node's partial-message application cannot run (gossipnode/partial.go)."""
    partial = s.workload.partial
    if partial is None or not partial.enabled or partial.group_id_size >= GO_MIN_GROUP_ID:
        return []
    message = f"the Go node writes the message index into the group id: {partial.group_id_size} B"
    hint = f"use group_id_size >= {GO_MIN_GROUP_ID} B (Ethereum's are 32)"
    return [Problem("workload.partial.group_id_size", message, hint)]


def congestion_problems(s: Scenario) -> list[Problem]:
    """A congestion control is the kernel's TCP's: QUIC brings its own (quic-go's cubic),
    and the kernel must have the module (tcp_available_congestion_control)."""
    wanted = s.testbed.congestion_control
    if wanted == "host":
        return []
    if s.testbed.transport != "tcp":
        message = "QUIC runs its own congestion control (quic-go), not the kernel's"
        return [Problem("testbed.congestion_control", message, 'remove it, or use "host"')]
    if wanted not in available_congestion_controls():
        message = f"this kernel has no {wanted} (tcp_available_congestion_control)"
        hint = f"load it (modprobe tcp_{wanted}) or use one of {available_congestion_controls()}"
        return [Problem("testbed.congestion_control", message, hint)]
    return []


def available_congestion_controls() -> list[str]:
    try:
        return Path(AVAILABLE_CONGESTION).read_text(encoding="ascii").split()
    except OSError:
        return []


def go_idontwant_problems(p: ProtocolConfig) -> list[Problem]:
    """IDONTWANT settings go-libp2p-pubsub v0.17.0 cannot follow: it always sends IDONTWANT
    when publishing (topic.go:validate) and never to the peer it got the message from
    (gossipsub.go:Preprocess)."""
    problems = []
    hint = 'remove it (go\'s behaviour), or use backend = "model"'
    if p.idontwant_on_publish is False:
        message = "go-libp2p-pubsub v0.17.0 always sends IDONTWANT for its own messages"
        problems.append(Problem("protocol.idontwant_on_publish", message, hint))
    if p.idontwant_to_sender:
        message = "go-libp2p-pubsub v0.17.0 never sends IDONTWANT back to the sender"
        problems.append(Problem("protocol.idontwant_to_sender", message, hint))
    return problems


def check_supported(s: Scenario) -> None:
    problems = unsupported_features(s)
    if problems:
        raise ScenarioError(problems)


# go-libp2p-pubsub fixes these; a scenario that sets other values gets go's behaviour.
_GO_FIXED = ("backoff_slack_ticks", "backoff_clear_ticks")


def go_fixed_notes(s: Scenario) -> list[str]:
    """Scenario values go-libp2p-pubsub cannot take: the real nodes use go's own."""
    p = s.protocol
    return [
        f"protocol.{name} = {getattr(p, name)} is not configurable in go-libp2p-pubsub; "
        f"the nodes use go's {GO_DEFAULT[name]}"
        for name in _GO_FIXED
        if getattr(p, name) != GO_DEFAULT[name]
    ]


def notes(s: Scenario) -> list[str]:
    """Fields that the testbed applies differently from the model, for the run info."""
    found = []
    if s.network.has_cpu_cost():
        found.append(
            "network.cpu_per_message is not added: real nodes pay their real CPU cost "
            "(see summary run.testbed.nodes)"
        )
    if s.cpu.charges() or s.cpu.nodes_per_host > 1:
        found.append(
            "[cpu] (hosts, cores, costs) is the model's: real nodes share this machine's "
            "cores and pay their real CPU cost (see summary run.testbed.nodes)"
        )
    p = s.protocol
    found.extend(go_fixed_notes(s))
    if p.heartbeat != parse_duration("1s") and p.prune_backoff:
        found.append(
            "go clears backoffs 2 s (not 2 heartbeats) after expiry, whatever the heartbeat"
        )
    if s.testbed.router != "gossipsub" and p.score.enabled:
        found.append(f"protocol.score applies to gossipsub only; {s.testbed.router} ignores it")
    if s.testbed.router != "gossipsub" and (p.peer_exchange or p.direct_peers):
        found.append(
            "protocol.peer_exchange and protocol.direct_peers apply to gossipsub only; "
            f"{s.testbed.router} ignores them"
        )
    if not isinstance(s.network.latency, int):
        found.append(
            "link latencies are drawn from the scenario's distribution with Python's "
            "generator: same distribution as the model, not the same value per link"
        )
        if p.peer_exchange:
            found.append(
                "pairs that connect during the run (peer exchange) get a latency drawn by "
                "the delay stage from the same distribution, not the model's value"
            )
    return found
