"""Graphs: same as networkx where promised, directed as documented, checked for connectivity."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import pytest

from gossiplab.errors import ScenarioError
from gossiplab.rng import SplitMix64, stream_seed
from gossiplab.scenario import Scenario, parse_scenario
from gossiplab.topology import Topology, build_topology


def scenario(topology: dict[str, Any], base_dir: Path = Path(".")) -> Scenario:
    return parse_scenario({"topology": topology}, base_dir)


def undirected(topology: Topology) -> set[frozenset[int]]:
    return {frozenset(map(int, edge)) for edge in topology.edges}


def assert_canonical(topology: Topology) -> None:
    edges = topology.edges
    assert edges.dtype == np.uint32
    assert edges.ndim == 2 and edges.shape[1] == 2
    low, high = edges.min(axis=1), edges.max(axis=1)
    keys = list(zip(low.tolist(), high.tolist(), strict=True))
    assert keys == sorted(keys), "rows sorted by (min, max)"
    assert len(set(keys)) == len(keys), "each undirected pair once"
    assert (low != high).all(), "no self-loops"
    assert high.max() < topology.nodes


def test_barabasi_albert_equals_networkx() -> None:
    topology = build_topology(
        scenario({"kind": "barabasi-albert", "nodes": 95, "m": 6, "seed": 42})
    )
    expected = nx.barabasi_albert_graph(95, 6, seed=42)
    assert undirected(topology) == {frozenset(e) for e in expected.edges()}
    assert_canonical(topology)
    # The newly attached node (the larger id) dials the existing one.
    assert (topology.edges[:, 0] > topology.edges[:, 1]).all()


def test_barabasi_albert_seed_follows_scenario_seed() -> None:
    s = parse_scenario({"seed": 9, "topology": {"nodes": 30, "m": 2}}, Path("."))
    expected = nx.barabasi_albert_graph(30, 2, seed=9)
    assert undirected(build_topology(s)) == {frozenset(e) for e in expected.edges()}


def test_random_regular_equals_networkx() -> None:
    topology = build_topology(
        scenario({"kind": "random-regular", "nodes": 50, "degree": 8, "seed": 3})
    )
    expected = nx.random_regular_graph(8, 50, seed=3)
    assert undirected(topology) == {frozenset(e) for e in expected.edges()}
    assert (topology.degrees() == 8).all()
    assert (topology.edges[:, 0] < topology.edges[:, 1]).all(), "the smaller id dials"
    assert_canonical(topology)


def test_erdos_renyi_equals_networkx() -> None:
    topology = build_topology(scenario({"kind": "erdos-renyi", "nodes": 60, "p": 0.2, "seed": 5}))
    expected = nx.gnp_random_graph(60, 0.2, seed=5)
    assert undirected(topology) == {frozenset(e) for e in expected.edges()}
    assert_canonical(topology)


def test_disconnected_erdos_renyi_is_reported() -> None:
    s = scenario({"kind": "erdos-renyi", "nodes": 95, "p": 0.01, "seed": 1})
    with pytest.raises(ScenarioError) as err:
        build_topology(s)
    (problem,) = err.value.problems
    assert problem.path == "topology"
    assert problem.message.startswith("the graph is disconnected (")
    assert "components; largest has" in problem.message
    assert "of 95 nodes" in problem.message
    assert "topology.allow_disconnected = true" in problem.hint
    assert "topology.p" in problem.hint
    assert "Traceback" not in str(err.value)


def test_disconnected_graph_allowed_when_asked() -> None:
    topology = build_topology(
        scenario(
            {"kind": "erdos-renyi", "nodes": 95, "p": 0.01, "seed": 1, "allow_disconnected": True}
        )
    )
    sizes = topology.components()
    assert len(sizes) > 1
    assert sum(sizes) == 95
    assert sizes == sorted(sizes, reverse=True)


def test_line_of_five() -> None:
    topology = build_topology(scenario({"kind": "line", "nodes": 5}))
    assert topology.edges.tolist() == [[0, 1], [1, 2], [2, 3], [3, 4]]
    assert topology.components() == [5]


def test_ring_closes_with_last_node_dialing_first() -> None:
    topology = build_topology(scenario({"kind": "ring", "nodes": 5}))
    assert topology.edges.tolist() == [[0, 1], [4, 0], [1, 2], [2, 3], [3, 4]]


def test_ring_of_two_keeps_one_edge() -> None:
    assert build_topology(scenario({"kind": "ring", "nodes": 2})).edges.tolist() == [[0, 1]]


def test_full_graph() -> None:
    topology = build_topology(scenario({"kind": "full", "nodes": 6}))
    assert len(topology.edges) == 15
    assert (topology.degrees() == 5).all()
    assert (topology.edges[:, 0] < topology.edges[:, 1]).all()


def reference_connect_random(nodes: int, k: int, seed: int) -> list[tuple[int, int]]:
    """Each node dials k others drawn from the "topology" stream; first dialer of a pair wins."""
    rng = SplitMix64(stream_seed(seed, "topology"))
    seen: set[frozenset[int]] = set()
    dials = []
    for dialer in range(nodes):
        others = [n for n in range(nodes) if n != dialer]
        for peer in rng.sample(others, k):
            if frozenset((dialer, peer)) not in seen:
                seen.add(frozenset((dialer, peer)))
                dials.append((dialer, peer))
    return sorted(dials, key=lambda d: (min(d), max(d)))


def test_connect_random_matches_reference_and_snapshot() -> None:
    topology = build_topology(scenario({"kind": "connect-random", "nodes": 10, "k": 2, "seed": 7}))
    assert [tuple(e) for e in topology.edges.tolist()] == reference_connect_random(10, 2, 7)
    # Snapshot: a change here changes every connect-random graph.
    assert topology.edges.tolist()[:6] == [[0, 2], [0, 8], [1, 7], [1, 9], [3, 2], [5, 2]]


def test_connect_random_every_node_has_at_least_k_peers() -> None:
    topology = build_topology(scenario({"kind": "connect-random", "nodes": 200, "k": 8, "seed": 1}))
    assert (topology.degrees() >= 8).all()
    assert_canonical(topology)
    assert topology == build_topology(
        scenario({"kind": "connect-random", "nodes": 200, "k": 8, "seed": 1})
    )


def dial_until(nodes: int, k: int, seed: int = 1) -> Topology:
    return build_topology(scenario({"kind": "dial-until", "nodes": nodes, "k": k, "seed": seed}))


@pytest.mark.parametrize(("nodes", "k"), [(2, 1), (5, 4), (60, 3), (300, 8), (40, 30)])
def test_dial_until_every_node_reaches_k_and_dials_at_most_k(nodes: int, k: int) -> None:
    topology = dial_until(nodes, k)
    assert_canonical(topology)  # no duplicate pair, no self-loop
    assert (topology.degrees() >= k).all()
    # A node dials only while it has fewer than k connections, each dial adding one:
    # whatever it has beyond k was dialed by others.
    dials = np.bincount(topology.edges[:, 0], minlength=nodes)
    assert (dials <= k).all()
    assert (dials >= 1).sum() >= 1
    if k == nodes - 1:
        assert len(undirected(topology)) == nodes * (nodes - 1) // 2


def test_dial_until_counts_inbound_connections() -> None:
    # k = 1: node 0 dials first; its peer then already has one connection and never dials,
    # so fewer than `nodes` edges are made (connect-random makes one per node, less repeats).
    for seed in range(1, 20):
        topology = build_topology(
            scenario(
                {
                    "kind": "dial-until",
                    "nodes": 30,
                    "k": 1,
                    "seed": seed,
                    "allow_disconnected": True,
                }
            )
        )
        assert len(topology.edges) <= 29
        assert (topology.degrees() >= 1).all()


def test_dial_until_triangle_is_the_only_graph_for_k_2_of_3() -> None:
    for seed in range(1, 10):
        topology = dial_until(3, 2, seed)
        assert undirected(topology) == {frozenset((0, 1)), frozenset((1, 2)), frozenset((0, 2))}
        assert (np.bincount(topology.edges[:, 0], minlength=3) >= 1).sum() >= 2


def test_dial_until_is_deterministic_and_sparser_than_connect_random() -> None:
    nodes, k = 400, 12
    first, again, other = dial_until(nodes, k, 5), dial_until(nodes, k, 5), dial_until(nodes, k, 6)
    assert first == again
    assert first != other
    mean = first.degrees().mean()
    union = build_topology(scenario({"kind": "connect-random", "nodes": nodes, "k": k, "seed": 5}))
    # The union of k dials per node has about 2k neighbours per node; dial-until stops at k.
    assert k <= mean < 1.5 * k
    assert mean < union.degrees().mean() - k / 2


def test_dial_until_refuses_k_out_of_range() -> None:
    with pytest.raises(ScenarioError, match=r"topology\.k"):
        scenario({"kind": "dial-until", "nodes": 10, "k": 10})


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_edges_file_relative_to_base_dir(tmp_path: Path) -> None:
    write(tmp_path / "g.txt", "# a small graph\n0 1\n1 2  # trailing comment\n\n2 0\n1 0\n3 2\n")
    s = scenario({"kind": "edges", "file": "g.txt"}, base_dir=tmp_path)
    assert s.topology.nodes == 4  # read from the file: largest id + 1
    topology = build_topology(s)
    # "1 0" repeats "0 1": kept once, with the first dialer; "2 0" keeps 2 as dialer.
    assert topology.edges.tolist() == [[0, 1], [2, 0], [1, 2], [3, 2]]


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("0 1\n2 2\n", "g.txt line 2: self-loop"),
        ("0 1\n1 x\n", "g.txt line 2: '1 x' is not two integer node ids"),
        ("0 1 2\n", "g.txt line 1: expected two node ids"),
        ("0 -1\n", "g.txt line 1: node ids cannot be negative"),
        ("0 1_0\n", "g.txt line 1: '0 1_0' is not two integer node ids"),
        ("0 ²\n", "is not two integer node ids"),
        ("# nothing\n", "holds no edges"),
    ],
)
def test_edges_file_errors_name_file_and_line(tmp_path: Path, text: str, fragment: str) -> None:
    write(tmp_path / "g.txt", text)
    with pytest.raises(ScenarioError) as err:
        scenario({"kind": "edges", "file": "g.txt"}, base_dir=tmp_path)
    assert any(p.path == "topology.file" and fragment in p.message for p in err.value.problems)


def test_edges_file_ids_out_of_range(tmp_path: Path) -> None:
    write(tmp_path / "g.txt", "0 1\n1 7\n")
    with pytest.raises(ScenarioError) as err:
        scenario({"kind": "edges", "file": "g.txt", "nodes": 5}, base_dir=tmp_path)
    (problem,) = err.value.problems
    assert problem.path == "topology.file"
    assert "g.txt line 2: node id 7 is out of range" in problem.message


def test_edges_file_nodes_must_match(tmp_path: Path) -> None:
    write(tmp_path / "g.txt", "0 1\n1 2\n")
    with pytest.raises(ScenarioError) as err:
        scenario({"kind": "edges", "file": "g.txt", "nodes": 5}, base_dir=tmp_path)
    assert [p.path for p in err.value.problems] == ["topology.nodes"]


def test_edges_file_missing(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError) as err:
        scenario({"kind": "edges", "file": "nope.txt"}, base_dir=tmp_path)
    (problem,) = err.value.problems
    assert problem.path == "topology.file"
    assert "nope.txt" in problem.message


def test_edges_file_with_isolated_node_is_disconnected(tmp_path: Path) -> None:
    write(tmp_path / "g.txt", "0 1\n2 3\n")
    with pytest.raises(ScenarioError) as err:
        build_topology(scenario({"kind": "edges", "file": "g.txt"}, base_dir=tmp_path))
    assert "2 components; largest has 2 of 4 nodes" in err.value.problems[0].message


def test_topology_is_frozen() -> None:
    topology = build_topology(scenario({"kind": "line", "nodes": 3}))
    with pytest.raises(ValueError):
        topology.edges[0, 0] = 7
    assert topology.degrees().tolist() == [1, 2, 1]
