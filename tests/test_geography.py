"""Regions and classes dealt to nodes: exact counts, determinism, independence; link arrays."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import pytest

from gossiplab.backends.model import run_model
from gossiplab.geography import (
    NO_GROUP,
    engine_placement,
    exact_counts,
    node_resources,
    nodes_table,
    place_nodes,
)
from gossiplab.scenario import Scenario, parse_scenario
from gossiplab.topology import build_topology
from gossiplab.workload import build_schedule, end_time_ns

HERE = Path(__file__).parent
MS = 1_000_000

TWO_REGIONS = {
    "names": ["a", "b"],
    "weights": [0.25, 0.75],
    "latency": [["1ms", "30ms"], ["70ms", "2ms"]],
}


def scenario(**network: Any) -> Scenario:
    return parse_scenario({"network": network}, HERE)


@pytest.mark.parametrize(
    ("weights", "total", "counts"),
    [
        # ethshadow's 1,000-node experiment: the weights are exact thousandths.
        (
            [0.05, 0.08, 0.36, 0.22, 0.22, 0.01, 0.01, 0.05],
            1000,
            [50, 80, 360, 220, 220, 10, 10, 50],
        ),
        # quotas 1.4 and 5.6: floors 1 + 5, the one left goes to the larger remainder (.6).
        ([0.2, 0.8], 7, [1, 6]),
        # quotas 1.5 and 1.5: a real tie (exact decimals) goes to the earlier weight.
        ([0.5, 0.5], 3, [2, 1]),
        # quotas 0.72, 0.44, 0.44, 0.4: both items go to the largest remainders, the tie
        # between the two 0.44 to the earlier one.
        ([0.36, 0.22, 0.22, 0.2], 2, [1, 1, 0, 0]),
        # 0.1 + 0.2 + 0.7 with 10: exactly 1, 2, 7 (binary floats would give 0.1 * 10 <= 1).
        ([0.1, 0.2, 0.7], 10, [1, 2, 7]),
    ],
)
def test_exact_counts_by_largest_remainder(
    weights: list[float], total: int, counts: list[int]
) -> None:
    assert exact_counts(weights, total) == counts
    assert sum(exact_counts(weights, total)) == total


def test_region_and_class_counts_are_exact() -> None:
    s = scenario(
        regions="ethereum",
        classes=[{"preset": "reliable", "share": 0.2}, {"preset": "home", "share": 0.8}],
    )
    placement = place_nodes(s, 1000)
    regions = dict(zip(placement.region_names, np.bincount(placement.region), strict=True))
    assert regions == {
        "australia": 50,
        "east_asia": 80,
        "europe": 360,
        "na_west": 220,
        "na_east": 220,
        "south_america": 10,
        "south_africa": 10,
        "west_asia": 50,
    }
    assert np.bincount(placement.node_class).tolist() == [200, 800]


def test_placement_is_deterministic_and_moves_with_the_scenario_seed_only() -> None:
    def placed(seed: int, topology_seed: int) -> Any:
        data = {
            "seed": seed,
            "topology": {
                "kind": "random-regular",
                "nodes": 200,
                "degree": 4,
                "seed": topology_seed,
            },
            "network": {
                "regions": TWO_REGIONS,
                "classes": [{"name": "x", "share": 0.5}, {"name": "y", "share": 0.5}],
            },
        }
        return place_nodes(parse_scenario(data, HERE), 200)

    first = placed(7, 1)
    again = placed(7, 1)
    other_graph = placed(7, 99)
    other_seed = placed(8, 1)
    assert np.array_equal(first.region, again.region)
    assert np.array_equal(first.node_class, again.node_class)
    # A new topology seed re-draws the graph, not where the nodes are.
    assert np.array_equal(first.region, other_graph.region)
    assert np.array_equal(first.node_class, other_graph.node_class)
    assert not np.array_equal(first.region, other_seed.region)


def test_a_nodes_region_does_not_depend_on_the_classes() -> None:
    without = place_nodes(scenario(regions=TWO_REGIONS), 100)
    with_classes = place_nodes(
        scenario(
            regions=TWO_REGIONS,
            classes=[{"name": "x", "share": 0.3}, {"name": "y", "share": 0.7}],
        ),
        100,
    )
    other_shares = place_nodes(
        scenario(
            regions=TWO_REGIONS,
            classes=[{"name": "x", "share": 0.9}, {"name": "y", "share": 0.1}],
        ),
        100,
    )
    assert np.array_equal(without.region, with_classes.region)
    assert np.array_equal(without.region, other_shares.region)
    assert without.node_class.tolist() == [NO_GROUP] * 100
    # Classes and regions come from separate shuffles: some x nodes are in each region.
    x_regions = set(with_classes.region[with_classes.node_class == 0].tolist())
    assert x_regions == {0, 1}


def test_class_presets_set_bandwidth_and_the_nodes_table_says_so() -> None:
    s = scenario(
        upload="10Mbit",
        classes=[{"preset": "constrained", "share": 0.5}, {"name": "own", "share": 0.5}],
    )
    resources = node_resources(s, 10)
    table = nodes_table(s, 10)
    constrained = table.filter(table["class"] == "constrained")
    own = table.filter(table["class"] == "own")
    assert constrained.height == 5 and own.height == 5
    assert set(constrained["upload_bps"].to_list()) == {5_000_000}
    assert set(constrained["download_bps"].to_list()) == {5_000_000}
    # A class without a preset takes the network-wide upload; download is unlimited (0).
    assert set(own["upload_bps"].to_list()) == {10_000_000}
    assert set(own["download_bps"].to_list()) == {0}
    assert table["upload_bps"].to_list() == resources["upload_bps"]
    assert table["region"].to_list() == [""] * 10


def _first_receipt_ms(s: Scenario) -> dict[int, float]:
    """Receiver -> ms from publication to first receipt of node 0's one message."""
    topology = build_topology(s)
    schedule = build_schedule(s, topology.nodes)
    tables = run_model(s, topology, schedule, end_time_ns(s, schedule)).tables
    assert tables.deliveries is not None
    published = tables.publishes["t_publish_ns"][0]
    return {
        node: (t - published) / MS
        for node, t in tables.deliveries.select("node", "t_ns").iter_rows()
    }


def test_link_latency_adds_both_ends_classes_to_the_region_matrix() -> None:
    # Floodsub on a full graph, no bandwidth or CPU cost: a receiver's first copy takes
    # the fastest path, which with an asymmetric matrix may have two hops.
    s = parse_scenario(
        {
            "topology": {"kind": "full", "nodes": 4},
            "protocol": {"name": "floodsub"},
            "workload": {"messages": 1, "publishers": [0], "size": "100B"},
            "network": {
                "regions": TWO_REGIONS,
                "classes": [
                    {"name": "near", "share": 0.5, "added_latency": "5ms"},
                    {"name": "far", "share": 0.5, "added_latency": "40ms"},
                ],
            },
        },
        HERE,
    )
    placement = place_nodes(s, 4)
    matrix = [[1, 30], [70, 2]]
    added = [5, 40]
    graph = nx.DiGraph()
    for a in range(4):
        for b in range(4):
            if a != b:
                ra, rb = placement.region[a], placement.region[b]
                both = added[placement.node_class[a]] + added[placement.node_class[b]]
                graph.add_edge(a, b, weight=matrix[ra][rb] + both)
    expected = nx.single_source_dijkstra_path_length(graph, 0)
    received = _first_receipt_ms(s)
    assert received == pytest.approx({n: float(expected[n]) for n in (1, 2, 3)})


def test_placement_goes_to_the_engine_only_when_needed() -> None:
    plain = scenario(latency="10ms", loss=0.01)
    assert engine_placement(plain, place_nodes(plain, 2)) is None
    # Class latency on a constant base: 10 + 20 + 20 ms; loss 0.01 + 0.001 + 0.001.
    home = scenario(latency="10ms", loss=0.01, classes=[{"preset": "home", "share": 1.0}])
    sent = engine_placement(home, place_nodes(home, 2))
    assert sent == {"added_latency_ns": [20 * MS, 20 * MS], "added_loss": [0.001, 0.001]}
