"""What the orchestrator tells the Go nodes and the delay stage (no root needed).

Peer exchange, direct peers and application scores reach every node's config; the delay
stage's latency rule gives any pair of nodes, edge or not, the scenario's latency (a
region matrix plus both ends' class added_latency, as the model does).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gossiplab.backends.testbed.links import has_latency, latency_rule, link_latencies, rule_latency
from gossiplab.backends.testbed.nodeconfig import node_configs
from gossiplab.geography import place_nodes
from gossiplab.scenario import parse_scenario
from gossiplab.topology import build_topology
from gossiplab.workload import build_schedule

MS = 1_000_000
TWO_REGIONS = {
    "names": ["a", "b"],
    "weights": [0.5, 0.5],
    "latency": [["1ms", "30ms"], ["70ms", "2ms"]],
}


def load(tmp_path: Path, **sections: Any) -> Any:
    return parse_scenario({"backend": "testbed", **sections}, base_dir=tmp_path)


def configs(tmp_path: Path, **sections: Any) -> dict[int, dict[str, Any]]:
    s = load(tmp_path, **sections)
    topology = build_topology(s)
    schedule = build_schedule(s, topology.nodes)
    return node_configs(s, topology, schedule, {i: f"/d{i}" for i in range(topology.nodes)})


def test_peer_exchange_and_prune_peers_reach_the_nodes(tmp_path: Path) -> None:
    c = configs(tmp_path, protocol={"peer_exchange": True, "prune_peers": 5})
    assert {(n["protocol"]["peer_exchange"], n["protocol"]["prune_peers"]) for n in c.values()} == {
        (True, 5)
    }
    default = configs(tmp_path)[0]["protocol"]
    assert (default["peer_exchange"], default["prune_peers"]) == (False, 16)  # go's defaults


def test_direct_peers_are_configured_on_both_ends(tmp_path: Path) -> None:
    c = configs(
        tmp_path,
        topology={"kind": "line", "nodes": 4},
        protocol={"direct_peers": [[1, 2], [2, 1], [2, 3]]},
    )
    direct = {i: [(d["index"], d["addr"]) for d in n["direct"]] for i, n in c.items()}
    assert direct == {
        0: [],
        1: [(2, "/ip4/10.77.0.10/tcp/4001")],
        2: [(1, "/ip4/10.77.0.6/tcp/4001"), (3, "/ip4/10.77.0.14/tcp/4001")],
        3: [(2, "/ip4/10.77.0.10/tcp/4001")],
    }


def test_app_scores_go_to_every_node_as_written(tmp_path: Path) -> None:
    app = [{"nodes": [0, 2], "score": -5.0}, {"nodes": [1], "score": 2.5}]
    c = configs(tmp_path, protocol={"score": {"enabled": True, "app_specific": app}})
    assert all(n["score"]["app_specific"] == app for n in c.values())
    assert configs(tmp_path)[0]["score"] is None  # scoring off: no score section at all


def test_the_rule_gives_non_edges_the_region_matrix_plus_both_ends(tmp_path: Path) -> None:
    s = load(
        tmp_path,
        topology={"kind": "line", "nodes": 6},
        network={
            "regions": TWO_REGIONS,
            "classes": [
                {"name": "near", "share": 0.5, "added_latency": "5ms"},
                {"name": "far", "share": 0.5, "added_latency": "40ms"},
            ],
        },
    )
    placement = place_nodes(s, 6)
    matrix, added = [[1, 30], [70, 2]], [5, 40]

    def expected(a: int, b: int) -> int:
        ra, rb = placement.region[a], placement.region[b]
        both = added[placement.node_class[a]] + added[placement.node_class[b]]
        return (matrix[ra][rb] + both) * MS

    rule = latency_rule(s, 6)
    assert rule["kind"] == "matrix" and rule["first_ip"] == "10.77.0.2" and rule["nodes"] == 6
    for a in range(6):
        for b in range(6):
            if a != b:
                assert rule_latency(rule, a, b) == expected(a, b), (a, b)
    topology = build_topology(s)
    assert link_latencies(s, topology) == [
        (expected(a, b), expected(b, a)) for a, b in topology.edges.tolist()
    ]
    # The matrix alone, with latency = "0ms" by default, still needs the delay stage.
    assert has_latency(s)


def test_constants_and_distributions_have_rules_too(tmp_path: Path) -> None:
    constant = load(tmp_path, network={"latency": "20ms"})
    rule = latency_rule(constant, 3)
    assert rule["kind"] == "matrix" and rule_latency(rule, 0, 2) == 20 * MS
    assert "region" not in rule and "added_ns" not in rule
    drawn = load(
        tmp_path, network={"latency": {"distribution": "uniform", "min": "10ms", "max": "30ms"}}
    )
    rule = latency_rule(drawn, 3)
    assert (rule["kind"], rule["min_ns"], rule["max_ns"]) == ("uniform", 10 * MS, 30 * MS)
    assert not has_latency(load(tmp_path))  # 0 ms and no jitter: no delay stage
