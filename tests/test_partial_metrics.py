"""Partial messages end to end through the model backend: partial.parquet, the traffic
kinds and summary.json's ``partial`` group, against the hand-worked two-node case T2 of
the engine tests (crates/engine/tests/partial_messages.rs) and a hand-built table."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import polars as pl

from gossiplab.analysis.partial import partial_summary
from gossiplab.analysis.tables import POLARS_SCHEMAS, RunTables, empty_table
from gossiplab.runner import run
from gossiplab.scenario import parse_scenario

MS = 1_000_000


def two_nodes(tmp_path: Path, **partial: Any) -> dict[str, Any]:
    """Node 0 publishes one group of 48 parts of 2 KiB (no overhead) to node 1, which
    misses exactly one part; both request partial messages; 25 ms one way."""
    return {
        "name": "two",
        "topology": {"kind": "line", "nodes": 2},
        "network": {"latency": "25ms"},
        "protocol": {"version": "1.3", "message_id": "ethereum", "signing": "strict-no-sign"},
        "workload": {
            "messages": 1,
            "publishers": [0],
            "cooldown": "5s",
            "partial": {"part_overhead": "0B", "mempool": {"missing": 1}, **partial},
        },
    }


def test_a_node_missing_one_part_gets_it_after_three_trips(tmp_path: Path) -> None:
    s = parse_scenario(two_nodes(tmp_path), tmp_path)
    result = run(s, tmp_path / "out")
    rows = pl.read_parquet(result.out_dir / "partial.parquet")
    assert rows.to_dicts() == [
        {
            "msg": 0,
            "node": 1,
            "role": "requests",
            "parts": 48,
            "held": 47,
            "parts_recv": 1,
            "parts_dup": 0,
            "full_recv": 0,
            "t_complete_ns": 5_000 * MS + 75 * MS,
            "bytes_partial_recv": 67 + 2118,
        }
    ]
    traffic = pl.read_parquet(result.out_dir / "traffic.parquet").filter(pl.col("node") == 1)
    by_kind = dict(zip(traffic["kind"], traffic["bytes_recv"], strict=True))
    # Metadata only from node 0 (67 B), then one part: 2,048 B + 70 B of framing.
    assert (by_kind["partsmeta"], by_kind["partial"], by_kind["payload"]) == (67, 2118, 0)
    summary = result.summary["partial"]
    assert summary["completion_ns"]["max"] == 75 * MS
    assert summary["parts"]["held"] == 47
    assert summary["parts"]["from_network"] == 1
    # One receiver, one part moved: 47 parts of 2,048 B not sent.
    assert summary["bytes_saved_vs_full"] == 47 * 2048
    # The delivery is the completion.
    assert result.summary["delivery"]["ratio"] == 1.0


def test_the_run_is_deterministic(tmp_path: Path) -> None:
    data = two_nodes(tmp_path, parts=8, eager_push=True)
    data["topology"] = {"kind": "random-regular", "nodes": 12, "degree": 4}
    data["workload"]["messages"] = 4
    data["workload"]["publishers"] = "random"
    data["workload"]["partial"]["mempool"] = {"p": 0.5}
    data["workload"]["partial"]["roles"] = {"requests": 0.5, "supports": 0.25}
    s = parse_scenario(data, tmp_path)
    first = pl.read_parquet(run(s, tmp_path / "a").out_dir / "partial.parquet")
    second = pl.read_parquet(run(s, tmp_path / "b").out_dir / "partial.parquet")
    assert first.equals(second)
    assert set(first["role"]) == {"requests", "supports", "none"}


def hand_built() -> RunTables:
    """Two groups to three other nodes; group 1 never reaches node 3."""
    publishes = pl.DataFrame(
        {"msg": [0, 1], "t_intended_ns": [10, 20], "t_publish_ns": [100, 200]},
    )
    publishes = pl.concat([empty_table("publishes"), publishes], how="diagonal_relaxed")
    partial = pl.DataFrame(
        {
            "msg": [0, 0, 0, 1, 1, 1],
            "node": [1, 2, 3, 1, 2, 3],
            "role": ["requests"] * 6,
            "parts": [4] * 6,
            "held": [3, 2, 0, 4, 1, 1],
            "parts_recv": [1, 2, 4, 0, 3, 0],
            "parts_dup": [0, 1, 0, 2, 0, 0],
            "full_recv": [0, 0, 1, 0, 0, 0],
            "t_complete_ns": [110, 150, 300, 200, 260, None],
            "bytes_partial_recv": [0] * 6,
        },
        schema=POLARS_SCHEMAS["partial"],
    )
    traffic = pl.DataFrame(
        {
            "node": [1, 1],
            "kind": ["partial", "payload"],
            "msgs_sent": [0, 0],
            "bytes_sent": [500, 900],
            "msgs_recv": [9, 1],
            "bytes_recv": [0, 0],
        }
    )
    traffic = pl.concat([empty_table("traffic"), traffic], how="diagonal_relaxed")
    return RunTables(
        publishes=publishes,
        deliveries=empty_table("deliveries"),
        traffic=traffic,
        drops=empty_table("drops"),
        partial=partial,
    )


def test_summary_from_a_hand_built_table() -> None:
    summary = partial_summary(hand_built(), {"warmup_ns": 0, "partial_part_bytes": 1000})
    assert summary is not None
    # Completion after publish: 10, 50, 200 (group 0); 0, 60, never (group 1).
    completion = summary["completion_ns"]
    assert (completion["count"], completion["reached"]) == (6, 5)
    assert (completion["p50"], completion["max"]) == (50, None)
    groups = summary["group_completion_ns"]
    assert (groups["reached"], groups["p50"], groups["max"]) == (1, 200, None)
    assert summary["parts"]["held"] == 11
    assert summary["parts"]["from_network"] == 10
    assert summary["parts"]["duplicates"] == 3
    assert summary["full_copies_recv"] == 1
    assert summary["bytes"]["partial"] == 500
    # 5 receivers x 4 parts = 20; received 9 parts in partial RPCs + 1 full copy x 4.
    assert summary["bytes_saved_vs_full"] == 1000 * (20 - 13)


def test_warm_up_groups_are_left_out() -> None:
    summary = partial_summary(hand_built(), {"warmup_ns": 15})
    assert summary is not None
    assert summary["groups"] == 1
    assert summary["completion_ns"]["count"] == 3
    assert summary["bytes_saved_vs_full"] is None  # no part size in the run info


def test_no_partial_group_without_partial_messages() -> None:
    tables = hand_built()
    assert partial_summary(replace(tables, partial=None), {}) is None
