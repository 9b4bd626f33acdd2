"""Will this host keep up? An estimate of the CPU a scenario needs, before it runs.

A saturated host measures the host, not the protocol: queues overflow and latencies grow
for reasons the scenario does not contain. The estimate counts payload copies received
per second over all nodes and charges each the CPU a real node spent on one, measured on
this project's 2-core machine (bench/RESULTS.md, "Testbed ceiling"):
``copies/s = rate × Σ_nodes fan-in``, where a node's fan-in is the number of peers that
send it each message: its degree with floodsub, min(degree, D) with gossipsub (its mesh),
and about sqrt(nodes) capped by the degree with randomsub.
"""

from __future__ import annotations

import math
import os

import numpy as np

from gossiplab.scenario import Scenario
from gossiplab.topology import Topology

# CPU seconds per received payload copy (duplicates included), measured by
# bench/testbed_ceiling.py on the 2-core machine near the ceiling (95-130 µs; 150-190 µs
# at light load, where heartbeats weigh more). Signing barely changes it: go verifies a
# signature only for the first copy, and duplicates are dropped before validation.
CPU_PER_COPY_SIGNED_S = 130e-6
CPU_PER_COPY_UNSIGNED_S = 125e-6
# Share of the host's cores the nodes may use before the run is flagged: the delay
# stage, the orchestrator and the kernel's forwarding need the rest.
SAFE_SHARE = 0.6


def fan_in(s: Scenario, topology: Topology) -> float:
    degrees = topology.degrees().astype(float)
    router = s.testbed.router
    if router == "floodsub":
        per_node = degrees
    elif router == "randomsub":
        per_node = np.minimum(degrees, max(6.0, math.sqrt(topology.nodes)))
    else:
        per_node = np.minimum(degrees, s.protocol.D)
    return float(per_node.sum())


def estimated_cores(s: Scenario, topology: Topology) -> float:
    """Cores the nodes need for the scenario's publishing rate (a steady-state estimate)."""
    cost = CPU_PER_COPY_SIGNED_S if s.protocol.signing == "strict-sign" else CPU_PER_COPY_UNSIGNED_S
    return s.workload.rate * fan_in(s, topology) * cost


def capacity_warning(s: Scenario, topology: Topology, cores: int | None = None) -> str | None:
    """A warning when the scenario likely needs more CPU than the nodes have to spare."""
    where, budget = "the host", SAFE_SHARE
    if s.testbed.node_cpus:
        # Confined nodes have their CPUs to themselves: the delay stage runs elsewhere.
        where, budget, cores = "the nodes' CPUs (testbed.node_cpus)", 1.0, len(s.testbed.node_cpus)
    cores = cores or os.cpu_count() or 1
    need = estimated_cores(s, topology)
    if need <= budget * cores:
        return None
    return (
        f"this scenario likely exceeds {where}: about {need:.2f} cores of node CPU "
        f"({s.workload.rate:g} msg/s to {topology.nodes} nodes) against {cores} cores "
        f"(safe up to {budget * cores:.1f}); a saturated host measures the host, not "
        "the protocol: lower workload.rate or topology.nodes (bench/RESULTS.md)"
    )
