"""RUN.json: the resolved scenario as the simnet runner reads it (testbed/simnet/INTERFACE.md).

Nothing here is decided anew: each node's configuration is the testbed's (nodeconfig.py),
the links come from the model's own placement (geography.py: the same regions, classes
and pair rule as the engine), the faults from the model's own fault plan (faults.py).
So a scenario gets the same network and the same faults on the model and on simnet.
"""

from __future__ import annotations

from typing import Any

from gossiplab.backends.testbed.nodeconfig import node_configs
from gossiplab.faults import engine_faults, unsubscribed_intervals
from gossiplab.geography import engine_placement, node_resources, place_nodes
from gossiplab.scenario import Scenario
from gossiplab.topology import Topology
from gossiplab.workload import Schedule

# simnet speaks QUIC only; the node configs carry the stack the Go side then builds.
QUIC_STACK = {"transport": "quic", "security": "tls", "muxer": "quic"}
# The model opens every connection of the topology at time 0, so the runner does too.
DIAL_STAGGER_NS = 0


def node_dir(node: int) -> str:
    """A node's output folder inside the runner's -out folder (the converter reads it)."""
    return f"node-{node}"


def run_config(s: Scenario, topology: Topology, schedule: Schedule, end_ns: int) -> dict[str, Any]:
    """RUN.json for scenario ``s``: nodes, network, faults, all times in virtual ns."""
    nodes = topology.nodes
    configs = node_configs(s, topology, schedule, {i: node_dir(i) for i in range(nodes)})
    for config in configs.values():
        config.update(QUIC_STACK, profile=False)
    return {
        "seed": s.seed,
        "end_ns": end_ns,
        "nodes": [configs[i] for i in range(nodes)],
        "network": network_config(s, nodes),
        "dial_stagger_ns": DIAL_STAGGER_NS,
        "faults": fault_plan(s, nodes),
    }


def network_config(s: Scenario, nodes: int) -> dict[str, Any]:
    """Bandwidth per node, and latency and loss by the engine's pair rule.

    A packet from a to b takes base(a, b) + added[a] + added[b] (the region matrix, or
    the constant network.latency) and is lost with loss[a] + loss[b], where loss[i] is
    half of network.loss plus node i's class added_loss: the model's network.loss +
    added_loss[a] + added_loss[b].
    """
    placement = place_nodes(s, nodes)
    resources = node_resources(s, nodes, placement)
    pairs = engine_placement(s, placement) or {}
    added_ns = pairs.get("added_latency_ns") or [0] * nodes
    latency: dict[str, Any]
    if "region" in pairs:
        latency = {"kind": "matrix", "region": pairs["region"]}
        latency["matrix_ns"] = pairs["region_latency_ns"]
    else:
        # A latency distribution is refused before this (support.py).
        assert isinstance(s.network.latency, int)
        latency = {"kind": "constant", "ns": s.network.latency}
    latency["added_ns"] = added_ns
    network: dict[str, Any] = {
        "upload_bps": resources["upload_bps"],
        "download_bps": resources["download_bps"],
        "latency": latency,
    }
    added_loss = pairs.get("added_loss") or [0.0] * nodes
    loss = [s.network.loss / 2 + extra for extra in added_loss]
    if any(loss):
        network["loss"] = loss
    return network


def fault_plan(s: Scenario, nodes: int) -> list[dict[str, Any]]:
    """The model's faults (the same nodes, groups and times) as the runner's fault list."""
    plan = engine_faults(s, nodes)
    faults: list[dict[str, Any]] = []
    for fault in plan["faults"]:
        if fault["kind"] == "down":  # a crash, or a churning node's time away
            faults.append(
                {
                    "kind": "crash",
                    "node": fault["node"],
                    "at_ns": fault["from_ns"],
                    "restart_ns": fault["until_ns"],
                }
            )
        elif fault["kind"] == "partition":
            faults.append(
                {
                    "kind": "partition",
                    "groups": fault["groups"],
                    "from_ns": fault["start_ns"],
                    "until_ns": fault["end_ns"],
                }
            )
    for node, topic, left, back in unsubscribed_intervals(plan["subscription_changes"]):
        faults.append(
            {"kind": "leave", "node": node, "topic": topic, "at_ns": left, "rejoin_ns": back}
        )
    return faults
