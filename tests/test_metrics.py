"""Metrics against numbers worked out by hand from small event tables."""

from __future__ import annotations

import dataclasses
from typing import Any

import polars as pl
import pytest

from gossiplab.analysis.metrics import (
    compute_summary,
    distribution,
    distribution_with_losses,
    nearest_rank,
)
from gossiplab.analysis.tables import RunTables, empty_table, from_rows
from gossiplab.errors import ResultsError

MS = 1_000_000


def run_info(nodes: int, subscribers: list[int] | None = None, **extra: Any) -> dict[str, Any]:
    return {"nodes": nodes, "subscribers": subscribers or [nodes], "warmup_ns": 0, **extra}


def publish(
    msg: int,
    *,
    t_ms: float = 0,
    receipts: int = 0,
    size: int = 100,
    topic: int = 0,
    batch: int | None = None,
    late_ms: float = 0,
    back: int = 0,
) -> tuple[Any, ...]:
    t_ns = int(t_ms * MS)
    batch = msg if batch is None else batch
    return (msg, 0, t_ns, t_ns + int(late_ms * MS), size, topic, batch, receipts, back)


def deliver(
    msg: int, receipts: list[tuple[int, float, int]], duplicates: dict[int, int] | None = None
) -> list[tuple[int, ...]]:
    """Rows for (node, t_ms, hop) first receipts of ``msg``; the sender is not checked."""
    return [
        (msg, node, int(t_ms * MS), 0, hop, (duplicates or {}).get(node, 0))
        for node, t_ms, hop in receipts
    ]


def line(msg: int = 0, nodes: int = 5, step_ms: float = 10, start_ms: float = 0) -> list:
    """Node i receives ``msg`` from node i-1 at start + i * step, hop i (publisher: node 0)."""
    return deliver(msg, [(i, start_ms + i * step_ms, i) for i in range(1, nodes)])


def tables(
    publishes: list,
    deliveries: list,
    traffic: list | None = None,
    drops: list | None = None,
) -> RunTables:
    return RunTables(
        publishes=from_rows("publishes", publishes),
        deliveries=from_rows("deliveries", deliveries),
        traffic=from_rows("traffic", traffic or []),
        drops=from_rows("drops", drops or []),
    )


def stats(**values: Any) -> dict[str, Any]:
    return {key: values[key] for key in ("count", "mean", "min", "p50", "p90", "p95", "p99", "max")}


# --- percentiles --------------------------------------------------------------------


def test_nearest_rank_picks_the_value_at_rank_ceil_p_n() -> None:
    ordered = pl.Series(range(1, 11))
    assert [nearest_rank(ordered, p) for p in (0, 10, 50, 90, 99, 100)] == [1, 1, 5, 9, 10, 10]


def test_distribution_ignores_nulls_and_nans_and_is_null_when_empty() -> None:
    assert distribution(pl.Series([3.0, None, float("nan"), 1.0])) == stats(
        count=2, mean=2.0, min=1.0, p50=1.0, p90=3.0, p95=3.0, p99=3.0, max=3.0
    )
    assert distribution(pl.Series([], dtype=pl.Int64)) == stats(
        count=0, mean=None, min=None, p50=None, p90=None, p95=None, p99=None, max=None
    )


def test_distribution_has_p95_by_nearest_rank() -> None:
    # 20 values 1..20: p95 is the value at rank ceil(0.95 × 20) = 19, p90 at rank 18.
    got = distribution(pl.Series(range(1, 21)))
    assert (got["p90"], got["p95"], got["p99"]) == (18, 19, 20)


def test_distribution_with_losses_ranks_the_losses_last() -> None:
    # 8 values and 2 losses: rank ceil(0.5 × 10) = 5 is the 5th value; ranks 9 and 10 are
    # losses, so p90, p95, p99 and max are "never".
    got = distribution_with_losses(pl.Series([8.0, 1, 2, 3, 4, 5, 6, 7, None, None]))
    assert got == {
        "count": 10,
        "reached": 8,
        "p50": 5.0,
        "p90": None,
        "p95": None,
        "p99": None,
        "max": None,
    }
    assert distribution_with_losses(pl.Series([2.0, 1.0]))["max"] == 2.0


# --- one message along a line -------------------------------------------------------


def test_line_of_five_nodes() -> None:
    summary = compute_summary(tables([publish(0, receipts=4)], line()), run_info(5))

    assert summary["delivery"]["ratio"] == 1.0
    assert summary["delivery"]["messages_fully_delivered"] == 1
    assert summary["dissemination_ms"] == stats(
        count=1, mean=40.0, min=40.0, p50=40.0, p90=40.0, p95=40.0, p99=40.0, max=40.0
    )
    assert summary["receipt_latency_ms"] == stats(
        count=4, mean=25.0, min=10.0, p50=20.0, p90=40.0, p95=40.0, p99=40.0, max=40.0
    )
    assert summary["last_delivery_hop"]["mean"] == 4
    assert summary["last_delivery_hop"]["histogram"] == {"4": 1}
    assert summary["max_hop"]["max"] == 4
    assert summary["duplicates"]["rmr"] == 0.0
    assert summary["duplicates"]["per_node_per_message"]["max"] == 0


def test_time_to_reach_a_share_counts_ceil_of_that_share_of_the_receivers() -> None:
    # 10 receivers at 1..10 ms: 50% is the 5th, 90% the 9th, 95% and 99% round up to the 10th.
    summary = compute_summary(
        tables([publish(0, receipts=10)], line(nodes=11, step_ms=1)), run_info(11)
    )
    reach = {share: summary["time_to_reach_ms"][share]["p50"] for share in ("50", "90", "95", "99")}
    assert reach == {"50": 5.0, "90": 9.0, "95": 10.0, "99": 10.0}
    assert summary["time_to_reach_ms"]["100"]["max"] == 10.0


def test_times_are_measured_from_the_actual_publish() -> None:
    # Intended at 0, published 5 ms late; receipts at 15..45 ms after the run start.
    rows = line(start_ms=5)
    summary = compute_summary(tables([publish(0, receipts=4, late_ms=5)], rows), run_info(5))
    assert summary["dissemination_ms"]["max"] == 40.0
    assert summary["publish_timing_error_ms"]["mean"] == 5.0


# --- partial delivery ---------------------------------------------------------------


def ten_messages_two_reaching_half() -> RunTables:
    """Line 0-1-2, message i published at i × 100 ms; node 1 has it 10 + i ms later, node 2
    20 + i ms later, except for messages 8 and 9, which never reach node 2."""
    publishes, rows = [], []
    for i in range(10):
        start = i * 100
        publishes.append(publish(i, t_ms=start, receipts=2 if i < 8 else 1))
        receipts = [(1, start + 10 + i, 1), (2, start + 20 + i, 2)]
        rows += deliver(i, receipts if i < 8 else receipts[:1])
    return tables(publishes, rows)


def test_time_to_reach_over_all_messages_shows_the_losses() -> None:
    summary = compute_summary(ten_messages_two_reaching_half(), run_info(3))
    # The headline covers the 8 fully delivered messages only.
    assert summary["dissemination_ms"]["count"] == 8
    assert summary["time_to_reach_ms"]["100"]["p90"] == 27.0  # rank 8 of the 8 that got there
    everyone = summary["time_to_reach_all_ms"]["100"]
    # Ranks over all 10: rank 5 is 24 ms; ranks 9 and 10 are the two that never got there.
    assert (everyone["count"], everyone["reached"], everyone["p50"]) == (10, 8, 24.0)
    assert (everyone["p90"], everyone["max"]) == (None, None)
    half = summary["time_to_reach_all_ms"]["50"]  # 1 of 2 receivers: node 1, at 10 + i ms
    assert (half["reached"], half["p90"], half["p95"], half["max"]) == (10, 18.0, 19.0, 19.0)


def test_a_headline_covering_under_99_percent_of_messages_is_flagged() -> None:
    summary = compute_summary(ten_messages_two_reaching_half(), run_info(3))
    coverage = summary["dissemination_coverage"]
    assert (coverage["messages"], coverage["fully_delivered"], coverage["share"]) == (10, 8, 0.8)
    assert summary["warnings"] == [coverage["warning"]]
    assert "only 8 of 10 messages (80.0%)" in coverage["warning"]


def test_a_headline_covering_99_percent_is_not_flagged() -> None:
    # 100 messages along a line of 3, one of them never reaching node 2: 99 % covered.
    publishes, rows = [], []
    for i in range(100):
        publishes.append(publish(i, t_ms=i * 10, receipts=2 if i else 1))
        rows += deliver(i, [(1, i * 10 + 1, 1), (2, i * 10 + 2, 2)][: 2 if i else 1])
    summary = compute_summary(tables(publishes, rows), run_info(3))
    assert summary["dissemination_coverage"]["share"] == 0.99
    assert summary["dissemination_coverage"]["warning"] is None
    assert summary["warnings"] == []


def test_message_reaching_three_of_four_is_not_fully_delivered() -> None:
    rows = deliver(0, [(1, 10, 1), (2, 20, 2), (3, 30, 3)])
    summary = compute_summary(tables([publish(0, receipts=3)], rows), run_info(5))

    assert summary["delivery"]["ratio"] == 0.75
    assert summary["delivery"]["messages_fully_delivered"] == 0
    assert summary["dissemination_ms"]["count"] == 0
    assert summary["dissemination_ms"]["p50"] is None
    assert summary["time_to_reach_ms"]["50"]["p50"] == 20.0
    assert summary["time_to_reach_ms"]["100"]["count"] == 0
    # The last node it reached is still its last delivery.
    assert summary["last_delivery_hop"]["histogram"] == {"3": 1}


def test_partial_message_is_excluded_from_dissemination_but_counts_in_the_ratio() -> None:
    publishes = [publish(0, receipts=4), publish(1, receipts=3)]
    rows = line(0) + deliver(1, [(1, 5, 1), (2, 6, 1), (3, 7, 1)])
    summary = compute_summary(tables(publishes, rows), run_info(5))

    assert summary["delivery"]["ratio"] == 7 / 8
    assert summary["delivery"]["first_receipts"] == 7
    assert summary["delivery"]["expected_first_receipts"] == 8
    assert summary["delivery"]["per_message_ratio"]["min"] == 0.75
    assert summary["dissemination_ms"]["count"] == 1
    assert summary["dissemination_ms"]["max"] == 40.0


def test_subscribers_are_taken_per_topic() -> None:
    publishes = [publish(0, receipts=4, topic=0), publish(1, receipts=2, topic=1)]
    rows = line(0) + deliver(1, [(1, 5, 1), (2, 6, 1)])
    summary = compute_summary(tables(publishes, rows), run_info(5, subscribers=[5, 3]))

    assert summary["delivery"]["expected_first_receipts"] == 6
    assert summary["delivery"]["ratio"] == 1.0
    assert summary["delivery"]["messages_fully_delivered"] == 2


def test_topic_without_a_subscriber_count_is_an_error() -> None:
    with pytest.raises(ResultsError, match="topic 2"):
        compute_summary(tables([publish(0, topic=2)], []), run_info(5, subscribers=[5, 5]))


def test_messages_intended_in_the_warm_up_are_excluded_and_counted() -> None:
    publishes = [publish(0, t_ms=500, receipts=4), publish(1, t_ms=1000, receipts=3)]
    rows = line(0, start_ms=500) + deliver(1, [(1, 1010, 1), (2, 1020, 2), (3, 1030, 3)])
    summary = compute_summary(tables(publishes, rows), run_info(5, warmup_ns=1000 * MS))

    assert summary["messages"] == {
        "published": 2,
        "measured": 1,
        "excluded_in_warmup": 1,
        "not_published": 0,
        "receivers_excluded": 0,
    }
    assert summary["delivery"]["ratio"] == 0.75


def test_receivers_down_during_a_message_lifetime_are_left_out() -> None:
    # 5 nodes; node 4 is down from 900 ms on; message 0 (t = 1000 ms, lifetime 5 s)
    # reaches nodes 1-3 only, which is everyone that was up: ratio 1, one exclusion.
    # Message 1 at 10 s, after node 4 is back (until 6 s), is expected everywhere.
    publishes = [publish(0, t_ms=1000, receipts=3), publish(1, t_ms=10_000, receipts=3)]
    rows = deliver(0, [(1, 1010, 1), (2, 1020, 2), (3, 1030, 3)])
    rows += deliver(1, [(1, 10_010, 1), (2, 10_020, 2), (3, 10_030, 3)])
    info = run_info(5) | {"down": [[4, 900 * MS, 6000 * MS]], "message_lifetime_ns": 5000 * MS}
    summary = compute_summary(tables(publishes, rows), info)

    assert summary["messages"]["receivers_excluded"] == 1
    assert summary["delivery"]["expected_first_receipts"] == 3 + 4
    assert summary["delivery"]["first_receipts"] == 6


# --- hops ---------------------------------------------------------------------------


def test_last_delivery_hop_breaks_ties_in_time_by_the_larger_hop() -> None:
    # The deepest node (hop 3) is not the last; two nodes share the latest time.
    rows = deliver(0, [(1, 10, 1), (2, 25, 3), (3, 30, 1), (4, 30, 2)])
    summary = compute_summary(tables([publish(0, receipts=4)], rows), run_info(5))

    assert summary["last_delivery_hop"]["histogram"] == {"2": 1}
    assert summary["max_hop"]["max"] == 3


def test_hop_distributions_over_messages() -> None:
    publishes = [publish(0, receipts=4), publish(1, receipts=4), publish(2)]
    rows = line(0) + deliver(1, [(1, 1, 1), (2, 1, 1), (3, 1, 1), (4, 2, 2)])
    summary = compute_summary(tables(publishes, rows), run_info(5))

    ldh = summary["last_delivery_hop"]
    assert (ldh["count"], ldh["mean"], ldh["max"]) == (2, 3.0, 4)
    assert ldh["histogram"] == {"2": 1, "4": 1}


# --- duplicates ---------------------------------------------------------------------


def test_two_duplicates_at_one_node_give_rmr_one_half() -> None:
    rows = deliver(0, [(i, i * 10, i) for i in range(1, 5)], duplicates={2: 2})
    summary = compute_summary(tables([publish(0, receipts=6)], rows), run_info(5))

    assert summary["duplicates"]["rmr"] == 0.5  # (4 + 2) / 4 - 1
    assert summary["duplicates"]["per_node_per_message"] == stats(
        count=4, mean=0.5, min=0, p50=0, p90=2, p95=2, p99=2, max=2
    )


def test_rmr_is_a_mean_over_messages_that_reached_someone() -> None:
    publishes = [publish(0, receipts=6), publish(1, receipts=3), publish(2, receipts=0)]
    rows = line(0) + deliver(1, [(1, 5, 1), (2, 6, 1), (3, 7, 1)])
    summary = compute_summary(tables(publishes, rows), run_info(5))

    assert summary["duplicates"]["rmr"] == 0.25  # mean of 0.5 and 0.0
    assert summary["duplicates"]["rmr_messages"] == 2


def test_copies_back_to_the_publisher_are_duplicates_but_not_a_receivers() -> None:
    # Four first receipts, one duplicate at node 2, two copies back to the publisher (no
    # author): 7 payload receipts. go's tracer counts all three as DUPLICATE_MESSAGE.
    rows = deliver(0, [(i, i * 10, i) for i in range(1, 5)], duplicates={2: 1})
    summary = compute_summary(tables([publish(0, receipts=7, back=2)], rows), run_info(5))

    assert summary["duplicates"]["publisher"] == 2
    assert summary["duplicates"]["rmr"] == 0.75  # 7 / 4 - 1
    # Per (message, receiver): the publisher is no receiver of its own message.
    assert summary["duplicates"]["per_node_per_message"]["count"] == 4
    assert summary["duplicates"]["per_node_per_message"]["max"] == 1


def test_copies_back_of_a_warm_up_message_are_left_out() -> None:
    publishes = [publish(0, receipts=6, back=2), publish(1, t_ms=100, receipts=5, back=1)]
    rows = line(0) + line(1, start_ms=100)
    summary = compute_summary(tables(publishes, rows), run_info(5, warmup_ns=50 * MS))

    assert summary["duplicates"]["publisher"] == 1


# --- traffic, control, drops ---------------------------------------------------------


def test_traffic_is_summed_by_kind_and_node() -> None:
    traffic = [
        (0, "payload", 2, 200, 0, 0),
        (0, "ihave", 5, 50, 1, 10),
        (1, "payload", 1, 100, 2, 300),
        (1, "graft", 1, 20, 1, 20),
    ]
    rows = deliver(0, [(1, 10, 1), (2, 20, 2)])
    summary = compute_summary(tables([publish(0, size=100)], rows, traffic), run_info(3))
    result = summary["traffic"]

    assert result["by_kind"]["payload"] == {
        "msgs_sent": 3,
        "bytes_sent": 300,
        "msgs_recv": 2,
        "bytes_recv": 300,
    }
    assert result["by_kind"]["iwant"] == dict.fromkeys(result["by_kind"]["iwant"], 0)
    assert (result["total_bytes_sent"], result["total_bytes_recv"]) == (370, 330)
    # Node 2 sent nothing and still counts, as zero.
    assert result["bytes_sent_per_node"] == stats(
        count=3, mean=370 / 3, min=0, p50=120, p90=250, p95=250, p99=250, max=250
    )
    assert result["amplification"] == 1.5  # 300 payload bytes for 100 bytes × 2 receivers
    assert summary["control"] == {
        "ihave": 5,
        "iwant": 0,
        "graft": 1,
        "prune": 0,
        "idontwant": 0,
        "iannounce": 0,
        "ineed": 0,
        "idontwant_transmissions_saved": 0,
        "ineed_timeouts": 0,
    }


def test_protocol_counters_are_reported_as_control_not_as_drops() -> None:
    drops = [
        (0, 1, "payload", "saved-by-idontwant", 7),
        (2, 1, "ineed", "ineed-timeout", 2),
        (0, 1, "payload", "outbound-queue-full", 1),
    ]
    summary = compute_summary(tables([publish(0)], [], drops=drops), run_info(3))
    assert summary["control"]["idontwant_transmissions_saved"] == 7
    assert summary["control"]["ineed_timeouts"] == 2
    assert summary["drops"]["total"] == 1


def test_drops_by_kind_and_reason() -> None:
    drops = [
        (0, 1, "payload", "queue_full", 3),
        (1, 2, "payload", "queue_full", 2),
        (1, 0, "ihave", "validation", 1),
    ]
    summary = compute_summary(tables([], [], drops=drops), run_info(3))
    assert summary["drops"] == {
        "total": 6,
        "by_kind": {"ihave": {"validation": 1}, "payload": {"queue_full": 5}},
    }


# --- batches and publish timing ------------------------------------------------------


def test_batch_completion_and_deadline() -> None:
    publishes = [
        publish(0, t_ms=0, batch=0, receipts=2),
        publish(1, t_ms=1, batch=0, receipts=2),
        publish(2, t_ms=100, batch=1, receipts=2),
        publish(3, t_ms=200, batch=2, receipts=1),
    ]
    rows = (
        deliver(0, [(1, 10, 1), (2, 40, 1)])
        + deliver(1, [(1, 20, 1), (2, 50, 1)])
        + deliver(2, [(1, 150, 1), (2, 5100, 2)])  # complete, 5 s after its batch began
        + deliver(3, [(1, 210, 1)])  # never reaches node 2
    )
    batches = compute_summary(tables(publishes, rows), run_info(3))["batches"]

    assert (batches["count"], batches["complete"]) == (3, 2)
    assert batches["completion_ms"]["min"] == 50.0
    assert batches["completion_ms"]["max"] == 5000.0
    within = batches["delivered_within_deadline"]
    assert (within["min"], within["max"], within["mean"]) == (0, 2, 2 / 3)


def test_publish_timing_error() -> None:
    publishes = [publish(0, late_ms=1), publish(1, late_ms=3)]
    timing = compute_summary(tables(publishes, []), run_info(3))["publish_timing_error_ms"]
    assert (timing["mean"], timing["p99"], timing["max"]) == (2.0, 3.0, 3.0)


# --- edge cases ---------------------------------------------------------------------


def test_empty_tables_give_nulls() -> None:
    empty = RunTables(
        *(empty_table(name) for name in ("publishes", "deliveries", "traffic", "drops"))
    )
    summary = compute_summary(empty, run_info(0, subscribers=[1]))

    assert summary["delivery"]["ratio"] is None
    assert summary["dissemination_ms"]["mean"] is None
    assert summary["time_to_reach_ms"]["50"]["count"] == 0
    assert summary["last_delivery_hop"]["histogram"] == {}
    assert summary["duplicates"]["rmr"] is None
    assert summary["traffic"]["amplification"] is None
    assert summary["traffic"]["total_bytes_sent"] == 0
    assert summary["batches"]["count"] == 0
    assert summary["drops"] == {"total": 0, "by_kind": {}}


def test_published_messages_that_nobody_received() -> None:
    summary = compute_summary(tables([publish(0), publish(1)], []), run_info(5))

    assert summary["delivery"]["ratio"] == 0.0
    assert summary["dissemination_ms"]["count"] == 0
    assert summary["duplicates"]["rmr"] is None
    assert summary["last_delivery_hop"]["count"] == 0


def test_row_order_does_not_change_the_summary() -> None:
    publishes = [publish(0, receipts=6), publish(1, receipts=3)]
    rows = line(0) + deliver(1, [(1, 5, 1), (2, 6, 1), (3, 7, 1)], duplicates={2: 2})
    run_tables = tables(publishes, rows)
    shuffled = RunTables(
        publishes=run_tables.publishes.reverse(),
        deliveries=run_tables.deliveries.sample(fraction=1.0, shuffle=True, seed=7),
        traffic=run_tables.traffic,
        drops=run_tables.drops,
    )
    assert compute_summary(shuffled, run_info(5)) == compute_summary(run_tables, run_info(5))


def test_run_info_must_name_nodes_and_subscribers() -> None:
    with pytest.raises(ResultsError, match="subscribers"):
        compute_summary(tables([], []), {"nodes": 3})
    with pytest.raises(ResultsError, match="nodes"):
        compute_summary(tables([], []), {"subscribers": [3]})


def test_control_is_also_counted_in_entries_when_the_traffic_table_has_them() -> None:
    # Node 0 sent 2 IHAVE RPC entries carrying 5 ids and 1 IWANT entry asking for 3 ids;
    # node 1 one IHAVE entry of 4 ids.
    traffic = [
        (0, "ihave", 5, 50, 0, 0),
        (0, "iwant", 3, 30, 0, 0),
        (1, "ihave", 4, 40, 0, 0),
    ]
    rows = deliver(0, [(1, 10, 1), (2, 20, 2)])
    run_tables = tables([publish(0, size=100)], rows, traffic)
    without = compute_summary(run_tables, run_info(3))
    assert "control_entries" not in without  # a backend that does not count entries
    entries = pl.Series("entries_sent", [2, 1, 1], dtype=pl.UInt64)
    with_entries = dataclasses.replace(run_tables, traffic=run_tables.traffic.with_columns(entries))
    summary = compute_summary(with_entries, run_info(3))
    assert (summary["control"]["ihave"], summary["control"]["iwant"]) == (9, 3)
    assert summary["control_entries"]["ihave"] == 3
    assert summary["control_entries"]["iwant"] == 1
    assert summary["control_entries"]["idontwant"] == 0


# --- exclude_first and traffic of the measured messages -------------------------------


def test_the_first_messages_are_left_out_like_warm_up_ones() -> None:
    publishes = [publish(i, t_ms=i * 100, receipts=4) for i in range(3)]
    rows = line(0) + line(1, start_ms=100, step_ms=20) + line(2, start_ms=200)
    summary = compute_summary(tables(publishes, rows), run_info(5, exclude_first=2))

    assert summary["messages"]["measured"] == 1
    assert summary["messages"]["excluded_in_warmup"] == 2
    # Message 1's slow line (80 ms) is out; only message 2's 40 ms is left.
    assert summary["dissemination_ms"]["max"] == 40.0


def test_traffic_measured_sums_the_measured_messages_only() -> None:
    publishes = [publish(0, receipts=4), publish(1, t_ms=100, receipts=5)]
    rows = line(0) + line(1, start_ms=100)
    per_message = from_rows(
        "message_traffic",
        [
            (0, "payload", 4, 4000),  # excluded: the first message
            (1, "payload", 5, 5000),
            (1, "ihave", 3, 60),
            (1, "iwant", 1, 20),
        ],
    )
    run_tables = dataclasses.replace(tables(publishes, rows), message_traffic=per_message)
    measured = compute_summary(run_tables, run_info(5, exclude_first=1))["traffic_measured"]

    assert measured["messages"] == 1
    assert measured["bytes_sent"] == 5080
    assert measured["by_kind"]["payload"] == {"msgs_sent": 5, "bytes_sent": 5000}
    assert measured["by_kind"]["ihave"] == {"msgs_sent": 3, "bytes_sent": 60}
    assert measured["by_kind"]["idontwant"] == {"msgs_sent": 0, "bytes_sent": 0}


def test_no_per_message_table_no_traffic_measured() -> None:
    summary = compute_summary(tables([publish(0, receipts=4)], line(0)), run_info(5))
    assert "traffic_measured" not in summary
