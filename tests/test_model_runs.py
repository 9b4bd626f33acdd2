"""The model backend end to end: real engine, hand-derivable outcomes.

Expected numbers come from the graph and the protocol rules, never from a previous run.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from gossiplab.backends.model import start_engine
from gossiplab.errors import ScenarioError
from gossiplab.runner import RunResult, run
from gossiplab.scenario import Scenario, parse_scenario
from gossiplab.topology import build_topology
from gossiplab.workload import build_schedule, end_time_ns

MS = 1_000_000


def scenario(tmp_path: Path, **sections: Any) -> Scenario:
    return parse_scenario(sections, base_dir=tmp_path)


def run_to(tmp_path: Path, s: Scenario, name: str = "out") -> RunResult:
    return run(s, tmp_path / name)


def floodsub_one_message(tmp_path: Path, topology: dict[str, Any]) -> Scenario:
    return scenario(
        tmp_path,
        name="flood",
        topology=topology,
        network={"latency": "10ms"},
        protocol={"name": "floodsub"},
        workload={"messages": 1, "publishers": [0], "warmup": "1s", "cooldown": "1s"},
    )


def test_floodsub_line_of_five_delivers_hop_by_hop(tmp_path: Path) -> None:
    result = run_to(tmp_path, floodsub_one_message(tmp_path, {"kind": "line", "nodes": 5}))
    deliveries = pl.read_parquet(result.out_dir / "deliveries.parquet").sort("node")
    published = pl.read_parquet(result.out_dir / "publishes.parquet")["t_publish_ns"][0]
    # Node k is k links of 10 ms away from the publisher, node 0.
    assert deliveries["node"].to_list() == [1, 2, 3, 4]
    assert (deliveries["t_ns"] - published).to_list() == [10 * MS, 20 * MS, 30 * MS, 40 * MS]
    assert deliveries["hop"].to_list() == [1, 2, 3, 4]
    assert deliveries["from_node"].to_list() == [0, 1, 2, 3]
    assert result.summary["last_delivery_hop"]["max"] == 4
    assert result.summary["delivery"]["ratio"] == 1.0
    assert result.summary["dissemination_ms"]["max"] == pytest.approx(40.0)


def test_floodsub_full_graph_gives_every_node_n_minus_2_duplicates(tmp_path: Path) -> None:
    n = 8
    result = run_to(tmp_path, floodsub_one_message(tmp_path, {"kind": "full", "nodes": n}))
    deliveries = pl.read_parquet(result.out_dir / "deliveries.parquet")
    # Each node gets the original from the publisher and one relay from each of the
    # other n-2 nodes (nobody sends back to the sender or to the author).
    assert deliveries.height == n - 1
    assert deliveries["duplicates"].to_list() == [n - 2] * (n - 1)
    assert result.summary["duplicates"]["rmr"] == pytest.approx(n - 2)


def test_gossipsub_meshes_are_bounded_and_symmetric(tmp_path: Path) -> None:
    # 50 nodes of degree 10; zero latency, so no GRAFT/PRUNE is in flight when we look.
    s = scenario(
        tmp_path,
        topology={"kind": "random-regular", "nodes": 50, "degree": 10, "seed": 5},
        network={"latency": "0ms"},
        workload={"messages": 1, "warmup": "10s"},
    )
    topology = build_topology(s)
    schedule = build_schedule(s, topology.nodes)
    engine = start_engine(s, topology, schedule, end_time_ns(s, schedule))
    engine.run_until(5_000 * MS)  # a few heartbeats
    p = s.protocol
    meshes = {node: set(engine.mesh(node, 0)) for node in range(50)}
    neighbours: dict[int, set[int]] = {node: set() for node in range(50)}
    for a, b in topology.edges.tolist():
        neighbours[a].add(b)
        neighbours[b].add(a)
    for node, mesh in meshes.items():
        assert p.D_lo <= len(mesh) <= p.D_hi, (node, mesh)
        assert mesh <= neighbours[node]
        for peer in mesh:
            assert node in meshes[peer], f"{node} has {peer} in its mesh but not vice versa"


def test_gossipsub_reaches_every_node(tmp_path: Path) -> None:
    s = scenario(
        tmp_path,
        topology={"kind": "random-regular", "nodes": 60, "degree": 8},
        network={"latency": "20ms"},
        workload={"messages": 50, "rate": "20/s"},
    )
    result = run_to(tmp_path, s)
    assert result.summary["delivery"]["ratio"] == 1.0
    # Every message needs at least one 20 ms hop, and at most the graph's node count.
    assert result.summary["dissemination_ms"]["min"] >= 20.0
    assert result.summary["last_delivery_hop"]["max"] <= 59


def _digests(folder: Path) -> dict[str, str]:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.glob("*.parquet"))
    }


def test_same_scenario_and_seed_give_byte_identical_tables(tmp_path: Path) -> None:
    def with_seed(seed: int) -> Scenario:
        return scenario(
            tmp_path,
            seed=seed,
            topology={"kind": "barabasi-albert", "nodes": 40, "m": 3},
            network={"latency": {"distribution": "uniform", "min": "5ms", "max": "80ms"}},
            workload={"messages": 100, "rate": "40/s", "size": "2KiB"},
            output={"receipts": True},
        )

    first = _digests(run_to(tmp_path, with_seed(3), "a").out_dir)
    second = _digests(run_to(tmp_path, with_seed(3), "b").out_dir)
    other = _digests(run_to(tmp_path, with_seed(4), "c").out_dir)
    assert set(first) == {
        "deliveries.parquet",
        "drops.parquet",
        "nodes.parquet",
        "publishes.parquet",
        "receipts.parquet",
        "traffic.parquet",
    }
    assert first == second
    assert first["deliveries.parquet"] != other["deliveries.parquet"]


def test_a_run_is_reproduced_from_its_results_folder(tmp_path: Path) -> None:
    s = scenario(tmp_path, topology={"kind": "ring", "nodes": 12}, workload={"messages": 20})
    first = run_to(tmp_path, s, "first")
    again = run(first.out_dir / "scenario.toml", tmp_path / "again")
    assert _digests(first.out_dir) == _digests(again.out_dir)


def test_features_not_modelled_yet_are_refused_by_name(tmp_path: Path) -> None:
    s = scenario(tmp_path, workload={"topics": 65, "messages": 65})
    with pytest.raises(ScenarioError) as caught:
        run_to(tmp_path, s)
    assert [p.path for p in caught.value.problems] == ["workload.topics"]


def test_scoring_on_still_delivers_everything_to_honest_nodes(tmp_path: Path) -> None:
    s = scenario(
        tmp_path,
        topology={"kind": "random-regular", "nodes": 40, "degree": 8},
        network={"latency": "30ms"},
        protocol={"score": {"enabled": True}},
        workload={"messages": 100, "rate": "20/s"},
    )
    result = run_to(tmp_path, s)
    # Honest nodes never score below 0, so scoring must not cost any delivery.
    assert result.summary["delivery"]["ratio"] == 1.0
    assert result.summary["drops"]["total"] == 0


def test_one_publisher_sends_a_batch_message_by_message(tmp_path: Path) -> None:
    # Node 1, the middle of a line of three, publishes 4 messages at one instant, as
    # consecutive Publish calls: each message goes to both neighbours before the next.
    s = scenario(
        tmp_path,
        topology={"kind": "line", "nodes": 3},
        network={"latency": "10ms", "upload": "8Mbit"},
        protocol={"name": "floodsub"},
        workload={
            "messages": 4,
            "batch": 4,
            "batch_publisher": "same",
            "publishers": [1],
            "size": "10kB",
            "warmup": "1s",
            "cooldown": "2s",
        },
    )
    result = run_to(tmp_path, s)
    publishes = pl.read_parquet(result.out_dir / "publishes.parquet")
    assert publishes["publisher"].to_list() == [1] * 4
    assert publishes["t_publish_ns"].n_unique() == 1
    deliveries = pl.read_parquet(result.out_dir / "deliveries.parquet")
    by_msg = deliveries.group_by("msg").agg(first=pl.col("t_ns").min(), last=pl.col("t_ns").max())
    by_msg = by_msg.sort("msg")
    assert by_msg["msg"].to_list() == [0, 1, 2, 3]
    # 10 kB take 10 ms on an 8 Mbit uplink: message i+1 reaches nobody before i reached both.
    assert (by_msg["last"][:-1] <= by_msg["first"][1:]).all()
    assert (by_msg["first"].diff().drop_nulls() >= 10 * MS).all()
    batches = result.summary["batches"]
    assert (batches["count"], batches["complete"]) == (1, 1)
    assert batches["messages_per_batch"]["max"] == 4
    assert batches["completion_ms"]["max"] == pytest.approx(by_msg["last"].max() / MS - 1000)


def test_a_duplicate_arriving_after_validation_costs_no_cpu(tmp_path: Path) -> None:
    # Triangle P(0), A, T; 10 ms links, 100 ms of CPU per validated copy. M1 from P at t0:
    # A and T validate it until t0 + 110 ms; A's relay reaches T at 120 ms, already seen.
    # M2 from P at t0 + 125 ms reaches T at 135 ms. go drops a seen copy before validation
    # (pubsub.go, shouldPush): T is idle and delivers M2 at 235 ms. Were the duplicate
    # validated, T would be busy until 220 ms and deliver M2 at 320 ms.
    s = scenario(
        tmp_path,
        topology={"kind": "full", "nodes": 3},
        network={"latency": "10ms", "cpu_per_message": "100ms"},
        protocol={"name": "floodsub"},
        workload={"messages": 2, "rate": "8/s", "publishers": [0], "warmup": "1s"},
    )
    result = run_to(tmp_path, s)
    deliveries = pl.read_parquet(result.out_dir / "deliveries.parquet")
    t0 = 1000 * MS
    at_t = deliveries.filter(pl.col("node") == 2).sort("msg")
    assert (at_t["t_ns"] - t0).to_list() == [110 * MS, 235 * MS]
    assert at_t["duplicates"].to_list() == [1, 1]
