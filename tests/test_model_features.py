"""IDONTWANT, IANNOUNCE/INEED, faults and adversaries through the whole stack.

The engine's own tests pin each rule on a hand-built graph; these check that the
scenario fields reach the engine and that the summary reports the outcome, with
expectations that follow from what each feature can and cannot do.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest

from gossiplab.errors import ScenarioError
from gossiplab.runner import run
from gossiplab.scenario import parse_scenario


def summary_of(tmp_path: Path, name: str, **sections: Any) -> dict[str, Any]:
    base = {
        "seed": 5,
        "topology": {"kind": "random-regular", "nodes": 40, "degree": 10},
        "network": {"latency": "20ms", "cpu_per_message": "2ms"},
        "workload": {"messages": 60, "rate": "20/s", "size": "4KiB"},
    }
    for key, value in sections.items():
        base[key] = {**base.get(key, {}), **value} if isinstance(value, dict) else value
    s = parse_scenario(base, base_dir=tmp_path)
    return run(s, tmp_path / name).summary


def test_idontwant_only_removes_copies(tmp_path: Path) -> None:
    v11 = summary_of(tmp_path, "v11", protocol={"version": "1.1"})
    v12 = summary_of(tmp_path, "v12", protocol={"version": "1.2"})
    assert v12["delivery"]["ratio"] == v11["delivery"]["ratio"] == 1.0
    assert v12["control"]["idontwant"] > 0
    assert v12["control"]["idontwant_transmissions_saved"] > 0
    assert v12["duplicates"]["rmr"] < v11["duplicates"]["rmr"]
    assert v11["control"]["idontwant"] == 0


def test_announcing_everything_trades_latency_for_copies(tmp_path: Path) -> None:
    eager = summary_of(tmp_path, "eager", protocol={"version": "2.0", "D_announce": 0})
    lazy = summary_of(tmp_path, "lazy", protocol={"version": "2.0", "D_announce": 6})
    assert lazy["delivery"]["ratio"] == eager["delivery"]["ratio"] == 1.0
    # Every hop pays an extra round trip (40 ms here), so the median message is slower...
    assert lazy["dissemination_ms"]["p50"] > eager["dissemination_ms"]["p50"] + 40
    # ...but a node pulls each message once: far fewer duplicate copies.
    assert lazy["duplicates"]["rmr"] < eager["duplicates"]["rmr"] / 2
    assert lazy["control"]["iannounce"] > 0 and lazy["control"]["ineed"] > 0
    assert eager["control"]["iannounce"] == 0


def test_crashed_nodes_are_left_out_of_the_delivery_ratio(tmp_path: Path) -> None:
    summary = summary_of(
        tmp_path,
        "crash",
        faults=[{"kind": "crash", "at": "6s", "count": 4}],
        workload={"messages": 60, "rate": "20/s", "size": "4KiB", "warmup": "5s"},
    )
    # Messages published after 6 s cannot reach the 4 crashed nodes: they are excluded,
    # and everyone alive still gets everything.
    assert summary["messages"]["receivers_excluded"] > 0
    assert summary["delivery"]["ratio"] == 1.0
    assert summary["run"]["down"] and all(d[2] is None for d in summary["run"]["down"])


def test_nodes_that_drop_forwards_cost_no_delivery_on_a_dense_graph(tmp_path: Path) -> None:
    summary = summary_of(
        tmp_path,
        "droppers",
        faults=[{"kind": "adversary", "behaviour": "drop-forwards", "share": 0.1}],
    )
    assert summary["delivery"]["ratio"] == 1.0


def test_a_partition_split_delays_but_does_not_lose_recent_messages(tmp_path: Path) -> None:
    summary = summary_of(
        tmp_path,
        "split",
        faults=[{"kind": "partition", "start": "6s", "end": "7s", "split": 0.5}],
        workload={"messages": 20, "rate": "20/s", "size": "4KiB", "warmup": "6s"},
    )
    # Published inside the partition; gossip heals it within the history window.
    assert summary["delivery"]["ratio"] == 1.0
    assert summary["dissemination_ms"]["max"] > 500
    assert summary["drops"]["by_kind"]["payload"]["partition"] > 0


@pytest.mark.parametrize("behaviour", ["ignore-iwant", "spam-ihave"])
def test_other_adversaries_run(tmp_path: Path, behaviour: str) -> None:
    summary = summary_of(
        tmp_path,
        behaviour,
        protocol={"score": {"enabled": True}},
        faults=[{"kind": "adversary", "behaviour": behaviour, "count": 3}],
    )
    assert summary["delivery"]["ratio"] == 1.0


def test_a_slow_node_relays_late(tmp_path: Path) -> None:
    # Node 1 of a 3-node line validates 10 x slower: 2 ms -> 20 ms before it relays.
    base = {
        "topology": {"kind": "line", "nodes": 3},
        "network": {"latency": "10ms", "cpu_per_message": "2ms"},
        "workload": {"messages": 1, "publishers": [0]},
    }
    fast = run(parse_scenario(base, base_dir=tmp_path), tmp_path / "fast").summary
    slow_data = {**base, "faults": [{"kind": "slow", "nodes": [1], "cpu_factor": 10}]}
    slow = run(parse_scenario(slow_data, base_dir=tmp_path), tmp_path / "slow").summary
    # Node 2's receipt: 10 ms + 2 ms (node 1) + 10 ms + 2 ms (node 2) = 24 ms, and with
    # the slow node 18 ms more.
    assert fast["dissemination_ms"]["max"] == pytest.approx(24.0)
    assert slow["dissemination_ms"]["max"] == pytest.approx(42.0)


def test_direct_peers_reach_the_engine_and_must_be_neighbours(tmp_path: Path) -> None:
    line = {"topology": {"kind": "line", "nodes": 4}, "workload": {"messages": 5}}
    ok = parse_scenario({**line, "protocol": {"direct_peers": [[0, 1]]}}, base_dir=tmp_path)
    assert run(ok, tmp_path / "ok").summary["delivery"]["ratio"] == 1.0
    bad = parse_scenario({**line, "protocol": {"direct_peers": [[0, 2]]}}, base_dir=tmp_path)
    with pytest.raises(ScenarioError) as caught:
        run(bad, tmp_path / "bad")
    assert [p.path for p in caught.value.problems] == ["protocol.direct_peers[0]"]


def _star_scenario(tmp_path: Path, leaves: int, **protocol: Any) -> dict[str, Any]:
    edges = tmp_path / "star.txt"
    edges.write_text("".join(f"0 {leaf}\n" for leaf in range(1, leaves + 1)))
    return {
        "seed": 3,
        "topology": {"kind": "edges", "file": str(edges)},
        "network": {"latency": "10ms"},
        "workload": {"messages": 20, "rate": "5/s", "size": "1KiB", "warmup": "3s"},
        "protocol": protocol,
    }


def test_peer_exchange_connects_the_leaves_a_hub_prunes(tmp_path: Path) -> None:
    # 14 leaves graft the hub, whose heartbeat keeps D = 6 and prunes the rest with
    # offers of its other topic peers: only leaves, none of which know each other.
    data = _star_scenario(tmp_path, 14, peer_exchange=True)
    result = run(parse_scenario(data, base_dir=tmp_path), tmp_path / "px")
    opened = pl.read_parquet(tmp_path / "px" / "connections.parquet")
    assert result.summary["control"]["px_connections"] == opened.height > 0
    assert 0 not in opened["node"].to_list() + opened["peer"].to_list()
    pairs = {tuple(sorted(pair)) for pair in opened.select("node", "peer").iter_rows()}
    assert len(pairs) == opened.height, "a pair connects once"
    assert opened["node"].n_unique() >= 14 - 6
    assert result.summary["delivery"]["ratio"] == 1.0

    plain = run(parse_scenario(_star_scenario(tmp_path, 14), base_dir=tmp_path), tmp_path / "no-px")
    assert not (tmp_path / "no-px" / "connections.parquet").exists()
    assert "px_connections" not in plain.summary["control"]


def test_an_application_score_below_the_graylist_silences_a_publisher(tmp_path: Path) -> None:
    # Every node scores node 5 at 10 x -100 = -1000 < graylist (-80): its RPCs are ignored.
    score = {"enabled": True, "app_specific": [{"nodes": [5], "score": -100.0}]}
    summary = summary_of(
        tmp_path, "silenced", protocol={"score": score}, workload={"publishers": [5]}
    )
    assert summary["delivery"]["ratio"] == 0.0
    assert summary["drops"]["by_kind"]["payload"]["graylisted"] > 0


def test_invalid_messages_cost_validation_and_get_their_sender_graylisted(tmp_path: Path) -> None:
    # Two adversaries send each peer 50 invalid 4 KiB messages a heartbeat: receivers
    # validate and reject them (2 ms of CPU each) until the senders' P4 graylists them.
    spam = {"kind": "adversary", "nodes": [0, 1], "behaviour": "spam-invalid"}
    spam["invalid_per_heartbeat"] = 50
    scored = summary_of(tmp_path, "scored", faults=[spam], protocol={"score": {"enabled": True}})
    unscored = summary_of(tmp_path, "unscored", faults=[spam])
    rejected = scored["drops"]["by_kind"]["payload"]["rejected-invalid"]
    assert scored["drops"]["by_kind"]["payload"]["graylisted"] > 0
    assert unscored["drops"]["by_kind"]["payload"]["rejected-invalid"] > rejected
    assert "graylisted" not in unscored["drops"]["by_kind"]["payload"]


def test_invalid_per_heartbeat_belongs_to_spam_invalid(tmp_path: Path) -> None:
    for fault, field in [
        ({"behaviour": "spam-invalid"}, "invalid_per_heartbeat"),
        ({"behaviour": "drop-forwards", "invalid_per_heartbeat": 3}, "invalid_per_heartbeat"),
    ]:
        with pytest.raises(ScenarioError) as caught:
            parse_scenario({"faults": [{"kind": "adversary", "count": 1, **fault}]}, tmp_path)
        assert caught.value.problems[0].path.endswith(field)


def test_nodes_out_of_a_topic_are_not_expected_to_receive_its_messages(tmp_path: Path) -> None:
    # Five nodes leave the topic at 6 s and come back at 8 s. Whatever is published while
    # they are out (or still spreading when they leave) is not theirs to receive; the
    # rest must reach everyone, including them once they are back.
    leave = {"kind": "leave", "nodes": [1, 2, 3, 4, 5], "at": "6s", "rejoin_after": "2s"}
    workload = {"messages": 100, "rate": "20/s", "size": "4KiB", "publishers": [0, 10, 20]}
    summary = summary_of(tmp_path, "leave", faults=[leave], workload=workload)
    # Publishing runs from 5 s (the warm-up) to 10 s at 20/s. A message's lifetime is 5
    # heartbeats (5 s), so every message published before 8 s overlaps the absence:
    # 60 messages x 5 nodes. The 40 published after 8 s must reach everyone, the five
    # that came back included.
    assert summary["messages"]["receivers_excluded"] == 60 * 5
    assert summary["delivery"]["ratio"] == 1.0
    away = set()
    for interval in summary["run"]["unsubscribed"]:
        node, topic, start, end = interval
        assert (topic, start, end) == (0, 6_000_000_000, 8_000_000_000)
        away.add(node)
    assert away == {1, 2, 3, 4, 5}
