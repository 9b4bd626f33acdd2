"""by_class / by_region against numbers worked out by hand from small event tables."""

from __future__ import annotations

from typing import Any

import pytest

from gossiplab.analysis.breakdown import breakdown_tables
from gossiplab.analysis.metrics import compute_summary
from gossiplab.analysis.tables import RunTables, from_rows

MS = 1_000_000


def run_info(nodes: int, **extra: Any) -> dict[str, Any]:
    return {"nodes": nodes, "subscribers": [nodes], "warmup_ns": 0, **extra}


def publish(msg: int, publisher: int, t_ms: int) -> tuple[Any, ...]:
    return (msg, publisher, t_ms * MS, t_ms * MS, 100, 0, msg, 0, 0)


def deliver(msg: int, node: int, t_ms: int, hop: int) -> tuple[Any, ...]:
    return (msg, node, t_ms * MS, 0, hop, 0)


# Six nodes: class "fast" = {0, 1, 2}, "slow" = {3, 4, 5}; region "east" = {0, 3},
# "west" = {1, 2, 4, 5}. Message 0 is published by node 0 at 0 ms, message 1 by node 4
# at 1000 ms. Node 5 never gets message 1.
NODES = [
    (0, "east", "fast", 1_000_000_000, 1_000_000_000),
    (1, "west", "fast", 1_000_000_000, 1_000_000_000),
    (2, "west", "fast", 1_000_000_000, 1_000_000_000),
    (3, "east", "slow", 50_000_000, 50_000_000),
    (4, "west", "slow", 50_000_000, 50_000_000),
    (5, "west", "slow", 50_000_000, 50_000_000),
]
PUBLISHES = [publish(0, 0, 0), publish(1, 4, 1000)]
DELIVERIES = [
    deliver(0, 1, 10, 1),
    deliver(0, 2, 20, 2),
    deliver(0, 3, 30, 1),
    deliver(0, 4, 40, 2),
    deliver(0, 5, 50, 3),
    deliver(1, 0, 1100, 2),
    deliver(1, 1, 1200, 3),
    deliver(1, 2, 1300, 3),
    deliver(1, 3, 1400, 1),
]
TRAFFIC = [
    (0, "payload", 1, 600, 0, 0),
    (1, "payload", 1, 300, 0, 0),
    (4, "payload", 1, 900, 0, 0),
    (4, "ihave", 1, 90, 0, 0),
]


def tables(nodes: list[tuple[Any, ...]] | None = NODES) -> RunTables:
    return RunTables(
        publishes=from_rows("publishes", PUBLISHES),
        deliveries=from_rows("deliveries", DELIVERIES),
        traffic=from_rows("traffic", TRAFFIC),
        drops=from_rows("drops", []),
        nodes=None if nodes is None else from_rows("nodes", nodes),
    )


def test_by_class_matches_a_hand_count() -> None:
    by_class = compute_summary(tables(), run_info(6))["by_class"]
    fast, slow = by_class["fast"], by_class["slow"]
    # fast: 3 nodes x 2 messages, minus node 0's own message 0 = 5 expected; received:
    # msg 0 at nodes 1, 2 (10, 20 ms); msg 1 at nodes 0, 1, 2 (100, 200, 300 ms).
    assert (fast["nodes"], fast["expected_first_receipts"], fast["first_receipts"]) == (3, 5, 5)
    assert fast["delivery_ratio"] == 1.0
    # Sorted latencies 10, 20, 100, 200, 300: ranks ceil(.5*5)=3, ceil(.9*5)=5, 5, 5.
    assert fast["latency_ms"] == {
        "p50": 100.0,
        "p90": 300.0,
        "p95": 300.0,
        "p99": 300.0,
        "max": 300.0,
    }
    assert fast["mean_hop"] == pytest.approx((1 + 2 + 2 + 3 + 3) / 5)
    assert fast["bytes_sent_per_node_mean"] == pytest.approx((600 + 300 + 0) / 3)
    # slow: 3 x 2 minus node 4's own message 1 = 5 expected; received: msg 0 at 3, 4, 5
    # (30, 40, 50 ms), msg 1 at node 3 (400 ms); node 5 missed msg 1.
    assert (slow["nodes"], slow["expected_first_receipts"], slow["first_receipts"]) == (3, 5, 4)
    assert slow["delivery_ratio"] == pytest.approx(4 / 5)
    # Sorted 30, 40, 50, 400: ranks ceil(2)=2, ceil(3.6)=4, ceil(3.8)=4, ceil(3.96)=4.
    assert slow["latency_ms"] == {
        "p50": 40.0,
        "p90": 400.0,
        "p95": 400.0,
        "p99": 400.0,
        "max": 400.0,
    }
    assert slow["mean_hop"] == pytest.approx((1 + 2 + 3 + 1) / 4)
    assert slow["bytes_sent_per_node_mean"] == pytest.approx((0 + 990 + 0) / 3)


def test_by_region_matches_a_hand_count() -> None:
    by_region = compute_summary(tables(), run_info(6))["by_region"]
    east, west = by_region["east"], by_region["west"]
    # east {0, 3}: 4 minus node 0's message 0 = 3 expected, all received (30, 1100-1000,
    # 1400-1000 ms).
    assert (east["expected_first_receipts"], east["first_receipts"]) == (3, 3)
    assert east["latency_ms"]["p50"] == 100.0 and east["latency_ms"]["max"] == 400.0
    # west {1, 2, 4, 5}: 8 minus node 4's message 1 = 7 expected; 6 received.
    assert (west["nodes"], west["expected_first_receipts"], west["first_receipts"]) == (4, 7, 6)
    assert west["delivery_ratio"] == pytest.approx(6 / 7)


def test_receivers_down_are_not_expected_of_their_group() -> None:
    # Node 5 is down from 900 ms for good: message 1 (1000 ms) is not expected of it;
    # message 0 (0 ms, alive for 500 ms) still is, and node 5 got it.
    info = run_info(6, down=[[5, 900 * MS, None]], message_lifetime_ns=500 * MS)
    slow = compute_summary(tables(), info)["by_class"]["slow"]
    assert (slow["expected_first_receipts"], slow["first_receipts"]) == (4, 4)
    assert slow["delivery_ratio"] == 1.0


def test_a_group_that_received_nothing_is_listed_without_latency() -> None:
    nodes = [*NODES[:5], (5, "west", "idle", 0, 0)]
    deliveries = [row for row in DELIVERIES if row[1] != 5]
    frames = tables(nodes)
    frames = RunTables(
        publishes=frames.publishes,
        deliveries=from_rows("deliveries", deliveries),
        traffic=frames.traffic,
        drops=frames.drops,
        nodes=frames.nodes,
    )
    idle = compute_summary(frames, run_info(6))["by_class"]["idle"]
    assert (idle["nodes"], idle["expected_first_receipts"], idle["first_receipts"]) == (1, 2, 0)
    assert idle["delivery_ratio"] == 0.0
    assert idle["latency_ms"] == {
        "p50": None,
        "p90": None,
        "p95": None,
        "p99": None,
        "max": None,
    }
    assert idle["mean_hop"] is None


def test_no_breakdown_without_classes_or_regions() -> None:
    blank = [(n, "", "", 0, 0) for n in range(6)]
    assert "by_class" not in compute_summary(tables(blank), run_info(6))
    assert "by_region" not in compute_summary(tables(blank), run_info(6))
    assert "by_class" not in compute_summary(tables(None), run_info(6))
    only_regions = [(n, region, "", 0, 0) for n, region, *_ in NODES]
    summary = compute_summary(tables(only_regions), run_info(6))
    assert "by_region" in summary and "by_class" not in summary


def test_report_tables_show_one_row_per_group() -> None:
    summary = compute_summary(tables(), run_info(6))
    by_title = {t.title: t for t in breakdown_tables(summary)}
    assert list(by_title) == ["By node class", "By region"]
    rows = by_title["By node class"].rows
    assert [row[0] for row in rows] == ["fast", "slow"]
    assert rows[1][:4] == ["slow", "3", "0.8000", "40.00"]
