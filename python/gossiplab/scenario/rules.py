"""Rules that span sections; they run once every section is well-formed."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from gossiplab.errors import Problem
from gossiplab.scenario.faults import (
    AdversaryFault,
    ChurnFault,
    CrashFault,
    FaultConfig,
    LeaveFault,
    NodeSelection,
    PartitionFault,
    SlowFault,
)
from gossiplab.units import format_duration

if TYPE_CHECKING:
    from gossiplab.scenario.root import Scenario


def _node_id_problems(path: str, ids: list[int], nodes: int) -> list[Problem]:
    bad = sorted({i for i in ids if i >= nodes})
    if not bad:
        return []
    shown = ", ".join(str(i) for i in bad[:10]) + (", ..." if len(bad) > 10 else "")
    message = f"node id(s) {shown} out of range for {nodes} nodes"
    return [Problem(path, message, f"ids run from 0 to nodes-1 = {nodes - 1}")]


def _workload_problems(s: Scenario) -> list[Problem]:
    w, nodes = s.workload, s.topology.nodes
    if w.publishers == "random":
        candidates = nodes
        problems = []
    else:
        candidates = len(w.publishers)
        problems = _node_id_problems("workload.publishers", w.publishers, nodes)
    if w.batch_publisher == "distinct" and w.batch > candidates:
        message = f"must be <= the number of possible publishers ({candidates}), got {w.batch}"
        hint = (
            "a batch is published by distinct nodes: lower batch, add publishers, or "
            'set batch_publisher = "same"'
        )
        problems.append(Problem("workload.batch", message, hint))
    return problems


def _fault_times(fault: FaultConfig) -> list[tuple[str, int]]:
    if isinstance(fault, CrashFault | LeaveFault):
        return [("at", fault.at)]
    if isinstance(fault, ChurnFault | PartitionFault):
        return [("start", fault.start), ("end", fault.end)]
    return []


def _selection_problems(path: str, fault: NodeSelection, nodes: int) -> list[Problem]:
    if fault.nodes is not None:
        problems = _node_id_problems(f"{path}.nodes", fault.nodes, nodes)
        if len(set(fault.nodes)) != len(fault.nodes):
            problems.append(Problem(f"{path}.nodes", "lists a node twice", "list each id once"))
        return problems
    if fault.count is not None and fault.count > nodes:
        message = f"must be <= nodes ({nodes}), got {fault.count}"
        return [Problem(f"{path}.count", message, "lower count")]
    return []


def _partition_problems(path: str, fault: PartitionFault, nodes: int) -> list[Problem]:
    if fault.split is not None:
        first_side = round(fault.split * nodes)
        if 1 <= first_side <= nodes - 1:
            return []
        message = f"puts {first_side} of {nodes} nodes on the first side"
        return [Problem(f"{path}.split", message, "choose a split that leaves nodes on both sides")]
    assert fault.groups is not None
    listed = [i for group in fault.groups for i in group]
    problems = _node_id_problems(f"{path}.groups", listed, nodes)
    if len(set(listed)) != len(listed):
        message = "a node is in more than one group"
        problems.append(Problem(f"{path}.groups", message, "groups must not overlap"))
    # Nodes in no group form one more group of their own.
    sides = len(fault.groups) + (1 if len(set(listed)) < nodes else 0)
    if not problems and sides < 2:
        message = "every node is in the one group: nothing is cut off"
        problems.append(Problem(f"{path}.groups", message, "give at least two groups"))
    return problems


def _behaviour_problems(path: str, fault: AdversaryFault, s: Scenario) -> list[Problem]:
    protocol = s.protocol
    needs_gossip = fault.behaviour in ("ignore-iwant", "spam-ihave", "ignore-ineed")
    if needs_gossip and protocol.name != "gossipsub":
        message = f"'{fault.behaviour}' has no effect with floodsub"
        return [Problem(f"{path}.behaviour", message, 'set protocol.name = "gossipsub"')]
    if fault.behaviour == "ignore-ineed" and protocol.version != "2.0":
        message = f"INEED exists only in gossipsub v2.0, not v{protocol.version}"
        return [Problem(f"{path}.behaviour", message, 'set protocol.version = "2.0"')]
    return []


def _slow_problems(path: str, fault: SlowFault, s: Scenario) -> list[Problem]:
    # A factor applied to something that is not limited would silently change nothing.
    problems = []
    if fault.bandwidth_factor != 1 and not s.network.has_bandwidth_limit():
        message = "has no effect: every link has unlimited bandwidth"
        hint = "set network.upload/download or a class's bandwidth"
        problems.append(Problem(f"{path}.bandwidth_factor", message, hint))
    if fault.cpu_factor != 1 and not s.network.has_cpu_cost():
        message = "has no effect: messages cost no CPU time"
        problems.append(Problem(f"{path}.cpu_factor", message, "set network.cpu_per_message"))
    return problems


def _fault_problems(s: Scenario) -> list[Problem]:
    nodes, run_end = s.topology.nodes, s.workload.planned_end_ns()
    problems: list[Problem] = []
    for i, fault in enumerate(s.faults):
        path = f"faults[{i}]"
        for name, t in _fault_times(fault):
            if t > run_end:
                message = f"{format_duration(t)} is after the run ends ({format_duration(run_end)})"
                hint = "the run is warmup + publishing + cooldown long"
                problems.append(Problem(f"{path}.{name}", message, hint))
        if isinstance(fault, NodeSelection):
            problems += _selection_problems(path, fault, nodes)
        if isinstance(fault, PartitionFault):
            problems += _partition_problems(path, fault, nodes)
        if isinstance(fault, AdversaryFault):
            problems += _behaviour_problems(path, fault, s)
        if isinstance(fault, SlowFault):
            problems += _slow_problems(path, fault, s)
        if isinstance(fault, LeaveFault) and fault.topic >= s.workload.topics:
            message = f"topic {fault.topic} does not exist: workload.topics = {s.workload.topics}"
            hint = f"topics run from 0 to {s.workload.topics - 1}"
            problems.append(Problem(f"{path}.topic", message, hint))
    return problems


# Names the gossiplab-forknode binary (testbed/forknode/README.md): the v2.0 fork's node,
# with which the testbed runs gossipsub v2.0 scenarios.
FORK_NODE_ENV = "GOSSIPLAB_FORK_NODE"


def fork_node_refusal(version: str) -> list[Problem]:
    """The testbed's own node runs go-libp2p-pubsub v0.17.0, which has no v2.0; v2.0 runs
    only on the fork's node, when $GOSSIPLAB_FORK_NODE names it."""
    if version != "2.0" or os.environ.get(FORK_NODE_ENV):
        return []
    message = "the testbed runs go-libp2p-pubsub v0.17.0, which has no gossipsub v2.0"
    hint = (
        f'use backend = "model", or build the v2.0 fork\'s node and set {FORK_NODE_ENV} to '
        "its path (testbed/forknode/README.md)"
    )
    return [Problem("protocol.version", message, hint)]


def _backend_problems(s: Scenario) -> list[Problem]:
    if s.backend != "testbed" or s.protocol.name != "gossipsub":
        return []
    problems = []
    problems += fork_node_refusal(s.protocol.version)
    if not s.protocol.D_out < s.protocol.D // 2:
        # go refuses Dout >= D/2 (integer division), stricter than the spec's Dout <= D/2.
        message = (
            f"go-libp2p-pubsub needs D_out < D/2 = {s.protocol.D // 2}, got {s.protocol.D_out}"
        )
        problems.append(Problem("protocol.D_out", message, "lower D_out for the testbed"))
    return problems


def _testbed_problems(s: Scenario) -> list[Problem]:
    problems = _node_id_problems("testbed.go_trace", s.testbed.go_trace, s.topology.nodes)
    router = s.testbed.router
    if router != "randomsub" and router != s.protocol.name:
        message = f"'{router}' differs from protocol.name '{s.protocol.name}'"
        hint = f'set protocol.name = "{router}" instead (the model runs it too)'
        problems.append(Problem("testbed.router", message, hint))
    return problems


def _node_list_problems(s: Scenario) -> list[Problem]:
    """Node ids in shared_ips and app_specific exist; a node has one IP address."""
    nodes = s.topology.nodes
    problems: list[Problem] = []
    owner: dict[int, int] = {}
    for i, group in enumerate(s.network.shared_ips):
        path = f"network.shared_ips[{i}]"
        problems += _node_id_problems(path, group, nodes)
        for node in group:
            if node in owner:
                message = f"node {node} is already behind the address of shared_ips[{owner[node]}]"
                problems.append(Problem(path, message, "put each node in at most one group"))
            owner.setdefault(node, i)
    for i, entry in enumerate(s.protocol.score.app_specific):
        problems += _node_id_problems(f"protocol.score.app_specific[{i}].nodes", entry.nodes, nodes)
    problems += _node_id_problems("cpu.record_waits", s.cpu.record_waits, nodes)
    return problems


def _peer_exchange_problems(s: Scenario) -> list[Problem]:
    p = s.protocol
    if p.peer_exchange and (p.name != "gossipsub" or p.version == "1.0"):
        message = "peer exchange is part of gossipsub v1.1 and later"
        hint = 'set protocol.version = "1.1" or later, or peer_exchange = false'
        return [Problem("protocol.peer_exchange", message, hint)]
    return []


def _partial_problems(s: Scenario) -> list[Problem]:
    """Partial messages need /meshsub/1.3.0, and re-published full messages one id."""
    partial, p = s.workload.partial, s.protocol
    if partial is None:
        return []
    problems = []
    if p.name != "gossipsub" or p.version != "1.3":
        message = f"partial messages are a gossipsub v1.3 extension, got {p.name} {p.version}"
        hint = 'set protocol.name = "gossipsub" and protocol.version = "1.3"'
        problems.append(Problem("workload.partial", message, hint))
    if partial.full_fallback and p.message_id == "go":
        # Every node that completes a group publishes its full message (gossipsub_test.go:
        # TestPartialMessages mixed network); with go's author+seqno ids each copy would be
        # a distinct message.
        message = "completed nodes re-publish the full message, which needs content ids"
        hint = 'set protocol.message_id = "ethereum", or full_fallback = false'
        problems.append(Problem("workload.partial.full_fallback", message, hint))
    return problems


def cross_section_problems(s: Scenario) -> list[Problem]:
    problems = _workload_problems(s) + _fault_problems(s) + _backend_problems(s)
    problems += _partial_problems(s)
    problems += _node_list_problems(s) + _peer_exchange_problems(s)
    return problems + _testbed_problems(s)
