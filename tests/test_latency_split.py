"""bench/latency_split.py on hand-built runs: a model run's tables and a testbed run's go
traces, every split worked out by hand from the times below."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import polars as pl
import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "bench"))
from latency_split import modelled_tables, real_tables, split

MS = 1_000_000


def _model_run(folder: Path) -> Path:
    """Node 0 publishes message 0 at 0; node 1 takes it at 12 ms and delivers at 13;
    node 2 takes node 1's copy at 30, node 0's at 31, delivers node 1's at 40."""
    folder.mkdir()
    pl.DataFrame(
        {"msg": [0], "publisher": [0], "t_publish_ns": [0]},
        schema={"msg": pl.UInt32, "publisher": pl.UInt32, "t_publish_ns": pl.Int64},
    ).write_parquet(folder / "publishes.parquet")
    pl.DataFrame(
        {"msg": [0, 0], "node": [1, 2], "t_ns": [13 * MS, 40 * MS], "from_node": [0, 1]},
        schema={"msg": pl.UInt32, "node": pl.UInt32, "t_ns": pl.Int64, "from_node": pl.UInt32},
    ).write_parquet(folder / "deliveries.parquet")
    pl.DataFrame(
        {
            "msg": [0, 0, 0],
            "node": [1, 2, 2],
            "from_node": [0, 1, 0],
            "t_ns": [12 * MS, 30 * MS, 31 * MS],
            "duplicate": [False, False, True],
        },
    ).write_parquet(folder / "receipts.parquet")
    return folder


def test_a_model_receipt_splits_at_its_hop_from_the_senders_delivery(tmp_path: Path) -> None:
    hops = split(*modelled_tables(_model_run(tmp_path / "model"))).sort("node")
    # Node 1: published at 0, taken at 12, delivered at 13.
    # Node 2: its sender node 1 delivered at 13, it took node 1's copy at 30, delivered at 40.
    assert hops["node"].to_list() == [1, 2]
    assert hops["latency"].to_list() == pytest.approx([13.0, 40.0])
    assert hops["transit"].to_list() == pytest.approx([12.0, 17.0])
    assert hops["inside"].to_list() == pytest.approx([1.0, 10.0])


def _node(folder: Path, index: int, peer: str, publishes: list[dict], events: list[dict]) -> None:
    node = folder / "testbed" / f"node{index}"
    node.mkdir(parents=True)
    info = {"index": index, "peer_id": peer, "publishes": publishes}
    (node / "node.json").write_text(json.dumps(info))
    (node / "trace.ndjson").write_text("".join(json.dumps(e) + "\n" for e in events))


def test_a_testbed_receipt_splits_at_go_s_recv_rpc(tmp_path: Path) -> None:
    run = tmp_path / "testbed-run"
    t0 = 1_000 * MS
    _node(
        run,
        0,
        "A",
        [{"id": "m", "t_publish_unix_ns": t0}],
        [],
    )
    recv = {"type": 6, "timestamp": t0 + 11 * MS}
    recv["recvRPC"] = {"receivedFrom": "A", "meta": {"messages": [{"messageID": "m"}]}}
    # A second RPC with the same copy later on: the first taking counts.
    again = {"type": 6, "timestamp": t0 + 20 * MS, "recvRPC": recv["recvRPC"]}
    deliver = {"type": 3, "timestamp": t0 + 14 * MS}
    deliver["deliverMessage"] = {"messageID": "m", "receivedFrom": "A"}
    _node(run, 1, "B", [], [recv, again, deliver])
    hops = split(*real_tables(run))
    assert hops["latency"].to_list() == pytest.approx([14.0])
    assert hops["transit"].to_list() == pytest.approx([11.0])
    assert hops["inside"].to_list() == pytest.approx([3.0])


def test_a_run_without_what_the_split_needs_says_what_to_set(tmp_path: Path) -> None:
    folder = _model_run(tmp_path / "model")
    (folder / "receipts.parquet").unlink()
    with pytest.raises(SystemExit, match="receipts = true"):
        modelled_tables(folder)
    bare = tmp_path / "testbed-run"
    (bare / "testbed" / "node0").mkdir(parents=True)
    (bare / "testbed" / "node0" / "node.json").write_text(
        json.dumps({"index": 0, "peer_id": "A", "publishes": []})
    )
    with pytest.raises(SystemExit, match="trace_rpc"):
        real_tables(bare)
