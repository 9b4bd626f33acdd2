"""The links of a testbed run: one-way latency per pair of nodes and bandwidth per node.

The delay stage gets a table with both directions of every edge of the topology, and a
rule for any other pair of nodes, which connect only during a run (peer exchange): the
same latency model (constant, distribution, or region matrix, plus each end's class
added_latency), so a connection made during the run is impaired like an edge.
"""

from __future__ import annotations

import math
from typing import Any

from gossiplab.backends.testbed.netns import node_ip
from gossiplab.geography import node_resources, place_nodes
from gossiplab.rng import SplitMix64, stream_seed
from gossiplab.scenario import Scenario
from gossiplab.topology import Topology


def _normal(rng: SplitMix64) -> float:
    u1 = 1.0 - rng.uniform()  # (0, 1]: the log is finite
    return math.sqrt(-2.0 * math.log(u1)) * math.cos(2 * math.pi * rng.uniform())


def link_latencies(s: Scenario, topology: Topology) -> list[tuple[int, int]]:
    """One-way latency (ns) of every edge, dialer to listener and back, in edge order.

    A constant and a region matrix, plus the classes' added_latency at both ends, give the
    model's values (the same rule as every other pair: ``latency_rule``). Distributions
    are drawn from the same distribution and the same named stream ("network.latency"),
    but with Python's generator, not the engine's: the two backends give the same spread
    of latencies, not the same latency to the same link.
    """
    edges = topology.edges.tolist()
    rule = latency_rule(s, topology.nodes)
    if rule["kind"] == "matrix":
        return [(rule_latency(rule, a, b), rule_latency(rule, b, a)) for a, b in edges]
    latency = s.network.latency
    assert not isinstance(latency, int)
    rng = SplitMix64(stream_seed(s.seed, "network.latency"))
    draws = []
    for _ in edges:
        if latency.distribution == "uniform":
            value = latency.min + rng.randbelow(latency.max - latency.min + 1)
        elif latency.distribution == "normal":
            value = latency.mean + latency.std * _normal(rng)
        else:
            value = latency.median * math.exp(latency.sigma * _normal(rng))
        draws.append((max(0, round(value)), max(0, round(value))))
    return draws


def rule_latency(rule: dict[str, Any], a: int, b: int) -> int:
    """One-way latency from node a to node b under a "matrix" rule (delay.go does the same)."""
    region = rule.get("region")
    ra, rb = (region[a], region[b]) if region else (0, 0)
    added = rule.get("added_ns")
    return int(rule["matrix"][ra][rb]) + (int(added[a]) + int(added[b]) if added else 0)


def delay_pairs(topology: Topology, latencies: list[tuple[int, int]]) -> list[dict[str, object]]:
    """The delay stage's table: both directions of every edge with its latency."""
    pairs: list[dict[str, object]] = []
    for (a, b), (forward, backward) in zip(topology.edges.tolist(), latencies, strict=True):
        pairs.append({"src": node_ip(a), "dst": node_ip(b), "delay_ns": forward})
        pairs.append({"src": node_ip(b), "dst": node_ip(a), "delay_ns": backward})
    return pairs


def latency_rule(s: Scenario, nodes: int) -> dict[str, Any]:
    """The delay stage's rule for pairs that are not edges (testbed/delay.go LatencyRule).

    Constants and region matrices are the model's values. A distribution is drawn once
    per unordered pair by the delay stage, seeded from the stream "network.latency.pairs":
    the same distribution, not the value the model would give that pair.
    """
    net = s.network
    placement = place_nodes(s, nodes)
    rule: dict[str, Any] = {"first_ip": node_ip(0), "nodes": nodes}
    if any(c.added_latency for c in net.classes):
        added = [c.added_latency for c in net.classes]
        rule["added_ns"] = [added[g] for g in placement.node_class.tolist()]
    latency = net.latency
    if net.regions is not None:
        rule |= {"kind": "matrix", "region": placement.region.tolist()}
        rule["matrix"] = [list(row) for row in net.regions.latency]
    elif isinstance(latency, int):
        rule |= {"kind": "matrix", "matrix": [[latency]]}
    else:
        rule |= {"kind": latency.distribution, "seed": stream_seed(s.seed, "network.latency.pairs")}
        if latency.distribution == "uniform":
            rule |= {"min_ns": latency.min, "max_ns": latency.max}
        elif latency.distribution == "normal":
            rule |= {"mean_ns": latency.mean, "std_ns": latency.std}
        else:
            rule |= {"median_ns": latency.median, "sigma": latency.sigma}
    return rule


def has_latency(s: Scenario) -> bool:
    """Whether any pair of nodes has a latency above 0 (or jitter): the delay stage is needed."""
    net = s.network
    if net.jitter > 0 or any(c.added_latency for c in net.classes):
        return True
    if net.regions is not None:
        return any(value > 0 for row in net.regions.latency for value in row)
    return not (isinstance(net.latency, int) and net.latency == 0)


def bandwidths(s: Scenario, nodes: int) -> tuple[list[int], list[int]]:
    """Upload and download bit/s per node (0 = unlimited), node classes included."""
    resources = node_resources(s, nodes)
    return resources["upload_bps"], resources["download_bps"]
