"""The links of a testbed run: one-way latency per edge and bandwidth per node."""

from __future__ import annotations

import math

from gossiplab.model_backend import node_resources
from gossiplab.rng import SplitMix64, stream_seed
from gossiplab.scenario import Scenario
from gossiplab.testbed.netns import node_ip
from gossiplab.topology import Topology


def _normal(rng: SplitMix64) -> float:
    u1 = 1.0 - rng.uniform()  # (0, 1]: the log is finite
    return math.sqrt(-2.0 * math.log(u1)) * math.cos(2 * math.pi * rng.uniform())


def link_latencies(s: Scenario, topology: Topology) -> list[int]:
    """One-way latency (ns) of every edge, in the topology's edge order.

    A constant is the same as the model's. Distributions are drawn from the same
    distribution and the same named stream ("network.latency"), but with Python's
    generator, not the engine's: the two backends give the same spread of latencies,
    not the same latency to the same link.
    """
    latency = s.network.latency
    edges = len(topology.edges)
    if isinstance(latency, int):
        return [latency] * edges
    rng = SplitMix64(stream_seed(s.seed, "network.latency"))
    draws = []
    for _ in range(edges):
        if latency.distribution == "uniform":
            value = latency.min + rng.randbelow(latency.max - latency.min + 1)
        elif latency.distribution == "normal":
            value = latency.mean + latency.std * _normal(rng)
        else:
            value = latency.median * math.exp(latency.sigma * _normal(rng))
        draws.append(max(0, round(value)))
    return draws


def delay_pairs(topology: Topology, latencies: list[int]) -> list[dict[str, object]]:
    """The delay stage's table: both directions of every edge with its latency."""
    pairs: list[dict[str, object]] = []
    for (a, b), ns in zip(topology.edges.tolist(), latencies, strict=True):
        pairs.append({"src": node_ip(a), "dst": node_ip(b), "delay_ns": ns})
        pairs.append({"src": node_ip(b), "dst": node_ip(a), "delay_ns": ns})
    return pairs


def bandwidths(s: Scenario, nodes: int) -> tuple[list[int], list[int]]:
    """Upload and download bit/s per node (0 = unlimited), node classes included."""
    resources = node_resources(s, nodes)
    return resources["upload_bps"], resources["download_bps"]
