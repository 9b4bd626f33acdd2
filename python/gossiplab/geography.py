"""Where each node is and what kind of node it is, and what that makes of every link.

Regions are dealt by weight and classes by share, each over its own shuffled node order
(seed streams "network.regions" and "network.classes" of the scenario seed), so a node's
region does not depend on its class, and neither depends on the topology or its seed.
Counts are exact: largest-remainder rounding makes them add up to the node count.

A link's one-way latency and segment loss follow ethshadow's rule (lib/src/network_graph.rs):
base latency (the region matrix from the sender's region to the receiver's, or the constant
network.latency) + the sender's class added_latency + the receiver's; loss is network.loss
+ both ends' added_loss.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import polars as pl

from gossiplab.analysis.tables import POLARS_SCHEMAS
from gossiplab.faults import slow_down
from gossiplab.rng import SplitMix64, stream_seed
from gossiplab.scenario import Scenario

NO_GROUP = -1
"""Group index of a node when the scenario has no regions (or no classes)."""


@dataclass(frozen=True)
class Placement:
    """Region and class index of every node (``NO_GROUP`` when there are none)."""

    region: np.ndarray
    node_class: np.ndarray
    region_names: tuple[str, ...]
    class_names: tuple[str, ...]


def exact_counts(weights: Sequence[float], total: int) -> list[int]:
    """Split ``total`` items by ``weights`` into whole counts that add up to ``total``.

    Largest remainder (Hamilton's method): everyone gets the floor of their quota, and the
    items left over go to the largest fractional parts, ties to the earlier weight. Quotas
    are computed in exact fractions of the weights as written (0.36 is 36/100, not the
    nearest binary float), so a tie is a real tie.
    """
    exact = [Fraction(repr(float(w))) for w in weights]
    whole = sum(exact)
    quotas = [w * total / whole for w in exact]
    counts = [int(q) for q in quotas]  # floor: quotas are >= 0
    left = total - sum(counts)
    by_remainder = sorted(range(len(quotas)), key=lambda i: (-(quotas[i] - counts[i]), i))
    for i in by_remainder[:left]:
        counts[i] += 1
    return counts


def deal(counts: Sequence[int], nodes: int, seed: int, stream: str) -> np.ndarray:
    """Group index per node: the first counts[0] nodes of a shuffled order get 0, and so on."""
    order = list(range(nodes))
    SplitMix64(stream_seed(seed, stream)).shuffle(order)
    group = np.empty(nodes, dtype=np.int32)
    start = 0
    for index, count in enumerate(counts):
        group[order[start : start + count]] = index
        start += count
    return group


def place_nodes(s: Scenario, nodes: int) -> Placement:
    net = s.network
    region = np.full(nodes, NO_GROUP, dtype=np.int32)
    region_names: tuple[str, ...] = ()
    if net.regions is not None:
        region_names = tuple(net.regions.names)
        counts = exact_counts(net.regions.weights, nodes)
        region = deal(counts, nodes, s.seed, "network.regions")
    node_class = np.full(nodes, NO_GROUP, dtype=np.int32)
    class_names = tuple(c.name for c in net.classes)
    if net.classes:
        counts = exact_counts([c.share for c in net.classes], nodes)
        node_class = deal(counts, nodes, s.seed, "network.classes")
    return Placement(region, node_class, region_names, class_names)


def node_resources(
    s: Scenario, nodes: int, placement: Placement | None = None
) -> dict[str, list[int]]:
    """Per-node upload and download (bit/s, 0 = unlimited) and CPU cost per message (ns)."""
    net = s.network
    placement = placement or place_nodes(s, nodes)
    upload = np.full(nodes, net.upload, dtype=np.uint64)
    download = np.full(nodes, net.download, dtype=np.uint64)
    cpu = np.full(nodes, net.cpu_per_message, dtype=np.uint64)
    if net.classes:
        of = placement.node_class
        upload = np.array([c.upload for c in net.classes], dtype=np.uint64)[of]
        download = np.array([c.download for c in net.classes], dtype=np.uint64)[of]
        cpu = np.array([c.cpu_per_message for c in net.classes], dtype=np.uint64)[of]
    cpu = np.round(cpu / s.cpu.speed).astype(np.uint64)
    upload, download, cpu = slow_down(s, nodes, upload, download, cpu)
    return {
        "upload_bps": upload.tolist(),
        "download_bps": download.tolist(),
        "cpu_per_message_ns": cpu.tolist(),
    }


def _per_node_added(s: Scenario, placement: Placement, field: str, dtype: str) -> np.ndarray:
    classes = s.network.classes
    if not classes:
        return np.zeros(len(placement.node_class), dtype=dtype)
    return np.array([getattr(c, field) for c in classes], dtype=dtype)[placement.node_class]


def engine_placement(s: Scenario, placement: Placement) -> dict[str, Any] | None:
    """What the engine needs to give any two nodes' link its latency and loss: the region
    matrix and each node's region, and what each node's class adds (the link between a
    and b gets matrix[a][b] + added[a] + added[b]). None when network.latency and
    network.loss apply to every link."""
    net = s.network
    has_class_quality = any(c.added_latency or c.added_loss for c in net.classes)
    if net.regions is None and not has_class_quality:
        return None
    added_latency = _per_node_added(s, placement, "added_latency", "u8")
    added_loss = _per_node_added(s, placement, "added_loss", "f8")
    config: dict[str, Any] = {
        "added_latency_ns": added_latency.tolist(),
        "added_loss": added_loss.tolist(),
    }
    if net.regions is not None:
        config["region"] = placement.region.tolist()
        config["region_latency_ns"] = [list(row) for row in net.regions.latency]
    return config


def nodes_table(s: Scenario, nodes: int) -> pl.DataFrame:
    """The ``nodes`` event table: region, class and bandwidth of every node."""
    placement = place_nodes(s, nodes)
    resources = node_resources(s, nodes, placement)

    def names(index: np.ndarray, labels: tuple[str, ...]) -> pl.Series:
        if not labels:
            return pl.Series([""] * nodes, dtype=pl.String)
        return pl.Series(labels, dtype=pl.String).gather(index.astype(np.uint32))

    return pl.DataFrame(
        {
            "node": np.arange(nodes, dtype=np.uint32),
            "region": names(placement.region, placement.region_names),
            "class": names(placement.node_class, placement.class_names),
            "upload_bps": np.array(resources["upload_bps"], dtype=np.uint64),
            "download_bps": np.array(resources["download_bps"], dtype=np.uint64),
        },
        schema=POLARS_SCHEMAS["nodes"],
    )
