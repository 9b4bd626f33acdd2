"""Headline metrics of a run, computed from its event tables (DESIGN.md, "Metrics").

The same tables always give the same numbers, whatever the backend:

- Percentiles are nearest-rank: the p-th percentile of n sorted values is the value at
  rank ceil(p/100 × n), rank 1 for p = 0. It is always an observed value and needs no
  interpolation. Every distribution reports count, mean, min, p50, p90, p95, p99 and max, and
  None for each of them but count when there is nothing to describe.
- Message metrics cover the messages whose intended publish time is at or after
  ``run["warmup_ns"]``; the others are counted as excluded. Traffic and drops are per-node
  counters over the whole run, so they include the warm-up.
- A message's expected receivers are the subscribers of its topic minus its publisher,
  ``run["subscribers"][topic] - 1``; it is fully delivered when all of them received it.

Everything is polars expressions over whole columns: tables may hold tens of millions of rows.
A run in aggregate mode has no per-receipt rows: the per-message outcomes then come from
the engine's ``messages`` table, and the per-receipt statistics from ``aggregates.py``
(every value the same as from full tables, except the per-receipt latency percentiles,
which a histogram approximates; summary.json lists them under "approximated").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import polars as pl

from gossiplab.analysis import aggregates
from gossiplab.analysis.breakdown import group_breakdowns
from gossiplab.analysis.cpu_use import cpu_while_publishing
from gossiplab.analysis.liveness import excluded_receivers
from gossiplab.analysis.ranks import nearest_rank
from gossiplab.analysis.tables import CONTROL_KINDS, POLARS_SCHEMAS, TRAFFIC_KINDS, RunTables
from gossiplab.errors import ResultsError

NS_PER_MS = 1_000_000
PERCENTILES: tuple[int, ...] = (50, 90, 95, 99)
REACH_PERCENTS: tuple[int, ...] = (50, 90, 95, 99, 100)
"""Shares of a message's expected receivers whose reach time is measured."""
COVERAGE_WARNING_BELOW = 0.99
"""Below this share of fully delivered messages, the dissemination percentiles get a warning."""
BATCH_DEADLINE_NS = 4_000_000_000
"""A batch's messages count as on time when delivered everywhere within this of its start."""
TRAFFIC_COUNTERS: tuple[str, ...] = ("msgs_sent", "bytes_sent", "msgs_recv", "bytes_recv")

Stats = dict[str, Any]
_PKEYS = [f"p{p}" for p in PERCENTILES]


def distribution(values: pl.Series) -> Stats:
    """Count, mean, min, p50, p90, p95, p99 and max of ``values``, ignoring nulls and NaNs."""
    values = values.drop_nulls()
    if values.dtype.is_float():
        values = values.drop_nans()
    if values.is_empty():
        return {"count": 0, "mean": None, "min": None, **dict.fromkeys(_PKEYS), "max": None}
    ordered = values.sort()
    return {
        "count": ordered.len(),
        "mean": ordered.mean(),
        "min": ordered[0],
        **{f"p{p}": nearest_rank(ordered, p) for p in PERCENTILES},
        "max": ordered[-1],
    }


def distribution_with_losses(values: pl.Series) -> Stats:
    """Percentiles over every value, a null counting as a loss: later than any number.

    ``count`` is every value, ``reached`` the non-null ones; a percentile whose rank falls
    among the losses, and ``max`` when there is any loss, are None ("never").
    """
    count = values.len()
    ordered = values.drop_nulls().sort()
    reached = ordered.len()

    def at(percent: int) -> Any:
        rank = max(1, -(-percent * count // 100))
        return ordered[rank - 1] if rank <= reached else None

    return {
        "count": count,
        "reached": reached,
        **{f"p{p}": at(p) for p in PERCENTILES},
        "max": ordered[-1] if reached == count and count else None,
    }


def ns_to_ms(values: pl.Series) -> pl.Series:
    return values.cast(pl.Float64) / NS_PER_MS


@dataclass(frozen=True)
class Measured:
    """The measured (post-warm-up) messages of a run and their first receipts.

    ``messages`` has one row per message: the publishes columns plus ``targets`` (expected
    receivers), ``delivered``, ``delivery_ratio``, ``fully_delivered``, ``last_receipt_ns``
    (absolute), ``dissemination_ns`` (fully delivered only), ``reach_<p>_ns`` (time from
    publish until p% of the targets had it), ``last_delivery_hop``, ``max_hop`` and ``rmr``.
    ``first_receipts`` is the deliveries of those messages with ``latency_ns`` added (no
    rows in aggregate mode: see ``aggregate``).
    ``excluded`` holds the (msg, node) pairs left out because the receiver was down.
    """

    messages: pl.DataFrame
    first_receipts: pl.DataFrame
    published: int
    excluded: pl.DataFrame | None = None
    aggregate: bool = False
    """True when the run kept no per-receipt rows (its aggregate tables stand in)."""


def in_warm_up(run: Mapping[str, Any]) -> pl.Expr:
    """Messages left out of every metric: intended during the warm-up, or among the first
    ``exclude_first`` (msg numbers follow the schedule's order)."""
    warmup_ns = int(run.get("warmup_ns") or 0)
    first = int(run.get("exclude_first") or 0)
    return (pl.col("t_intended_ns") < warmup_ns) | (pl.col("msg") < first)


def measure(tables: RunTables, run: Mapping[str, Any]) -> Measured:
    """Join and aggregate the tables into per-message outcomes (see ``Measured``)."""
    # A message whose publisher was down at the time was never published (t_publish -1).
    messages = tables.publishes.filter(~in_warm_up(run) & (pl.col("t_publish_ns") >= 0)).join(
        _targets_by_topic(run, tables.publishes), on="topic", how="left"
    )
    # Receivers down during a message's lifetime are neither expected nor counted.
    excluded = excluded_receivers(messages, run)
    messages = (
        messages.join(excluded.group_by("msg").agg(excluded=pl.len()), on="msg", how="left")
        .with_columns(pl.col("excluded").fill_null(0).cast(pl.Int64))
        .with_columns(targets=pl.col("targets") - pl.col("excluded"))
    )
    if tables.deliveries is None:
        first_receipts = _NO_RECEIPTS
        per_message = _per_message_from_aggregates(tables, messages)
    else:
        # Sorted once by receipt order so that each message's group below is already in
        # it (polars keeps row order within groups): cheaper than a sort per group and
        # statistic.
        # A publisher is not a receiver of its own message, though it may get it back
        # once a restart emptied its seen cache.
        deliveries = tables.deliveries
        if excluded.height:  # an anti join costs a full pass even with nothing to remove
            deliveries = deliveries.join(excluded, on=["msg", "node"], how="anti")
        first_receipts = (
            deliveries.join(
                messages.select("msg", "t_publish_ns", "targets", "publisher"),
                on="msg",
                how="inner",
            )
            .filter(pl.col("node") != pl.col("publisher"))
            .drop("publisher")
            .with_columns(latency_ns=pl.col("t_ns") - pl.col("t_publish_ns"))
            .sort("msg", "t_ns", "hop")
        )
        hop = pl.col("hop").cast(pl.Int64)
        per_message = first_receipts.group_by("msg").agg(
            [_reach_time(percent) for percent in REACH_PERCENTS],
            delivered=pl.len().cast(pl.Int64),
            last_receipt_ns=pl.col("t_ns").last(),
            # The latest first receipt; on a tie in time the deeper node counts as the last.
            last_delivery_hop=hop.last(),
            max_hop=hop.max(),
        )

    targets = pl.col("targets")
    delivered = pl.col("delivered")
    fully = (targets > 0) & (delivered >= targets)
    published_at = pl.col("t_publish_ns")
    reach = [f"reach_{percent}_ns" for percent in REACH_PERCENTS]
    messages = (
        messages.join(per_message, on="msg", how="left")
        .with_columns(delivered.fill_null(0))
        .with_columns(
            [(pl.col(name) - published_at).alias(name) for name in reach],
            fully_delivered=fully,
            delivery_ratio=pl.when(targets > 0).then(delivered / targets),
            dissemination_ns=pl.when(fully).then(pl.col("last_receipt_ns") - published_at),
            # Leitão et al. 2007: payload receipts per node reached beyond the publisher, minus 1.
            rmr=pl.when(delivered > 0).then(pl.col("receipts").cast(pl.Float64) / delivered - 1),
        )
        .sort("msg")
    )
    return Measured(
        messages, first_receipts, tables.publishes.height, excluded, tables.deliveries is None
    )


_NO_RECEIPTS = pl.DataFrame(
    schema={
        **POLARS_SCHEMAS["deliveries"],
        "t_publish_ns": pl.Int64,
        "targets": pl.Int64,
        "latency_ns": pl.Int64,
    }
)


def _per_message_from_aggregates(tables: RunTables, messages: pl.DataFrame) -> pl.DataFrame:
    """The per-message columns ``measure`` derives from deliveries, from the engine's
    ``messages`` table (absolute times, -1 for never)."""
    if tables.messages is None:
        raise ResultsError(
            "the run has neither a deliveries nor a messages table; re-run the scenario"
        )
    engine = tables.messages
    # The engine applied the same warm-up and liveness rules to count receipts and reach
    # times; its targets must be ours, or its reach thresholds were not.
    disagree = (
        messages.select("msg", "targets")
        .join(engine.select("msg", engine_targets="targets"), on="msg", how="left")
        .filter(pl.col("engine_targets").cast(pl.Int64) != pl.col("targets"))
    )
    if disagree.height:
        first = disagree.row(0, named=True)
        raise ResultsError(
            f"message {first['msg']}: the engine expected {first['engine_targets']} receivers, "
            f"the run info {first['targets']} ({disagree.height} message(s) differ); the "
            "aggregate tables do not match this run's info (down intervals, lifetime or "
            "subscribers)"
        )

    def happened(column: str) -> pl.Expr:
        return pl.when(pl.col(column) >= 0).then(pl.col(column))

    received = pl.col("delivered") > 0
    return engine.select(
        "msg",
        *[happened(f"reach_{percent}_ns") for percent in REACH_PERCENTS],
        delivered=pl.col("delivered").cast(pl.Int64),
        last_receipt_ns=happened("last_ns"),
        last_delivery_hop=pl.when(received).then(pl.col("last_hop").cast(pl.Int64)),
        max_hop=pl.when(received).then(pl.col("max_hop").cast(pl.Int64)),
    )


def _reach_time(percent: int) -> pl.Expr:
    # The k-th first receipt, k = ceil(percent% of the targets), is when the message had
    # reached that share; null when fewer than k nodes ever received it. Needs the group
    # in receipt-time order.
    k = (pl.col("targets").first() * percent + 99) // 100
    kth = pl.col("t_ns").get(k - 1, null_on_oob=True)
    return pl.when(k >= 1).then(kth).alias(f"reach_{percent}_ns")


def _targets_by_topic(run: Mapping[str, Any], publishes: pl.DataFrame) -> pl.DataFrame:
    subscribers = run.get("subscribers")
    if not isinstance(subscribers, list | tuple) or not all(
        isinstance(count, int) for count in subscribers
    ):
        raise ResultsError(
            'the run info has no "subscribers" list (subscribers per topic, as integers); '
            "the runner must record it in summary.json under run.subscribers"
        )
    highest_topic = publishes["topic"].max()
    if highest_topic is not None and int(highest_topic) >= len(subscribers):  # type: ignore[arg-type]
        raise ResultsError(
            f"publishes.topic has topic {highest_topic} but run.subscribers lists only "
            f"{len(subscribers)} topic(s); the run info does not match the tables"
        )
    return pl.DataFrame(
        {
            "topic": pl.Series(range(len(subscribers)), dtype=pl.UInt16),
            "targets": pl.Series([max(count - 1, 0) for count in subscribers], dtype=pl.Int64),
        }
    )


def compute_summary(
    tables: RunTables, run: Mapping[str, Any], measured: Measured | None = None
) -> dict[str, Any]:
    """The content of summary.json: the run info under "run" plus every metric.

    ``measured`` is ``measure(tables, run)`` when the caller already has it.
    """
    if measured is None:
        measured = measure(tables, run)
    messages = measured.messages
    traffic_by_kind = _traffic_by_kind(tables.traffic)
    aggregate = measured.aggregate
    summary = {
        "run": dict(run),
        "percentiles": "nearest-rank",
        "output_mode": "aggregate" if aggregate else "full",
        "messages": {
            "published": measured.published,
            "measured": messages.height,
            "excluded_in_warmup": int(tables.publishes.select(in_warm_up(run).sum()).item()),
            "not_published": int((tables.publishes["t_publish_ns"] < 0).sum()),
            # (message, receiver) pairs left out: the receiver was down or out of the topic.
            "receivers_excluded": int(messages["excluded"].sum() or 0),
        },
        "delivery": _delivery(messages),
        "dissemination_ms": distribution(ns_to_ms(messages["dissemination_ns"])),
        "time_to_reach_ms": {
            str(percent): distribution(ns_to_ms(messages[f"reach_{percent}_ns"]))
            for percent in REACH_PERCENTS
        },
        # The same over every measured message: one that never reached the share is a loss.
        "time_to_reach_all_ms": {
            str(percent): distribution_with_losses(ns_to_ms(messages[f"reach_{percent}_ns"]))
            for percent in REACH_PERCENTS
        },
        "dissemination_coverage": _coverage(messages),
        "receipt_latency_ms": (
            aggregates.latency_distribution(tables)
            if aggregate
            else distribution(ns_to_ms(measured.first_receipts["latency_ns"]))
        ),
        "last_delivery_hop": {
            **distribution(messages["last_delivery_hop"]),
            "histogram": _histogram(messages["last_delivery_hop"]),
        },
        "max_hop": distribution(messages["max_hop"]),
        "duplicates": _duplicates(measured, tables),
        "traffic": _traffic(tables, traffic_by_kind, _nodes(run)),
        # Items sent per kind: message ids for IHAVE, IWANT..., topics for GRAFT and PRUNE.
        "control": {
            **{kind: traffic_by_kind[kind]["msgs_sent"] for kind in CONTROL_KINDS},
            **_protocol_counters(tables.drops),
            # Connections opened by peer exchange, when it is on.
            **({} if tables.connections is None else {"px_connections": tables.connections.height}),
        },
        # The same in protobuf entries (an IHAVE of many ids is one), as studies count
        # control messages; only backends whose traffic table has entries_sent give it.
        **_control_entries(tables.traffic),
        # Bytes and ids sent for the measured messages alone (warm-up ones left out), when
        # the run counted traffic per message.
        **_traffic_measured(tables.message_traffic, messages),
        "drops": _drops(tables.drops.filter(~pl.col("reason").is_in(list(COUNTER_REASONS)))),
        "batches": _batches(messages),
        "publish_timing_error_ms": distribution(
            ns_to_ms(messages["t_publish_ns"] - messages["t_intended_ns"])
        ),
        # by_class and by_region, when the run has node classes or regions.
        **group_breakdowns(
            tables.nodes,
            messages,
            measured.first_receipts,
            tables.traffic,
            measured.excluded,
            (lambda members: aggregates.receipt_stats_by_group(members, tables))
            if aggregate
            else None,
        ),
    }
    # Imported here: analysis.partial builds on this module's distributions.
    from gossiplab.analysis.partial import partial_summary

    partial = partial_summary(tables, run)
    if partial is not None:
        summary["partial"] = partial
    # The nodes' CPU use while messages were published, from the resources table (the
    # testbed's /proc samples, the model's own accounting when it charges CPU).
    cpu = cpu_while_publishing(tables.resources, tables.publishes)
    if cpu is not None:
        summary["cpu"] = cpu
    if aggregate:
        summary["approximated"] = aggregates.approximated(summary)
    warning = summary["dissemination_coverage"]["warning"]
    summary["warnings"] = [warning] if warning else []
    return summary


def _coverage(messages: pl.DataFrame) -> dict[str, Any]:
    """How many measured messages the dissemination percentiles (fully delivered only) cover."""
    measured = messages.height
    covered = int(messages["fully_delivered"].sum() or 0)
    share = covered / measured if measured else None
    warning = None
    if share is not None and share < COVERAGE_WARNING_BELOW:
        warning = (
            f"the dissemination percentiles cover only {covered:,} of {measured:,} messages "
            f"({share:.1%}): the others never reached every node. Read the time to reach "
            "50/90/99/100% of nodes over all messages (time_to_reach_all_ms) beside them."
        )
    return {"messages": measured, "fully_delivered": covered, "share": share, "warning": warning}


def _nodes(run: Mapping[str, Any]) -> int:
    nodes = run.get("nodes")
    if not isinstance(nodes, int) or nodes < 0:
        raise ResultsError(
            'the run info has no "nodes" count; the runner must record it in summary.json '
            "under run.nodes"
        )
    return nodes


def _delivery(messages: pl.DataFrame) -> dict[str, Any]:
    totals = messages.select(
        first_receipts=pl.col("delivered").sum(),
        expected=pl.col("targets").sum(),
        fully_delivered=pl.col("fully_delivered").sum(),
    ).row(0, named=True)
    expected = totals["expected"] or 0
    return {
        "ratio": totals["first_receipts"] / expected if expected else None,
        "first_receipts": totals["first_receipts"] or 0,
        "expected_first_receipts": expected,
        "messages_fully_delivered": totals["fully_delivered"] or 0,
        "per_message_ratio": distribution(messages["delivery_ratio"]),
    }


def _histogram(values: pl.Series) -> dict[str, int]:
    counts = values.drop_nulls().value_counts(name="count").sort(values.name)
    return dict(zip(map(str, counts[values.name]), counts["count"], strict=True))


def _duplicates(measured: Measured, tables: RunTables) -> dict[str, Any]:
    rmr = measured.messages["rmr"]
    per_pair = (
        aggregates.duplicates_distribution(tables)
        if measured.aggregate
        else distribution(measured.first_receipts["duplicates"])
    )
    # Copies back to the publisher count as duplicates, as go's tracer does; the per-pair
    # distribution covers the receivers, so they are added up on their own (rmr has them,
    # since they are payload receipts).
    own = measured.messages["publisher_duplicates"]
    return {
        "per_node_per_message": per_pair,
        "publisher": int(own.sum()),
        "rmr": rmr.mean(),
        "rmr_messages": rmr.len() - rmr.null_count(),
    }


def _traffic_by_kind(traffic: pl.DataFrame) -> dict[str, dict[str, int]]:
    sums = traffic.group_by("kind").agg(pl.col(TRAFFIC_COUNTERS).cast(pl.UInt64).sum())
    found = {row.pop("kind"): row for row in sums.iter_rows(named=True)}
    zeros = dict.fromkeys(TRAFFIC_COUNTERS, 0)
    return {kind: found.get(kind, dict(zeros)) for kind in TRAFFIC_KINDS}


ENTRIES_COLUMN = "entries_sent"


def _control_entries(traffic: pl.DataFrame) -> dict[str, Any]:
    if ENTRIES_COLUMN not in traffic.columns:
        return {}
    sums = traffic.group_by("kind").agg(pl.col(ENTRIES_COLUMN).cast(pl.UInt64).sum())
    found = dict(sums.iter_rows())
    return {"control_entries": {kind: int(found.get(kind, 0)) for kind in CONTROL_KINDS}}


def _traffic_measured(per_message: pl.DataFrame | None, messages: pl.DataFrame) -> dict[str, Any]:
    if per_message is None:
        return {}
    measured = per_message.join(messages.select("msg"), on="msg", how="semi")
    sums = measured.group_by("kind").agg(pl.col("msgs_sent", "bytes_sent").cast(pl.UInt64).sum())
    found = {row.pop("kind"): row for row in sums.iter_rows(named=True)}
    kinds = ("payload", *[k for k in CONTROL_KINDS if k not in ("graft", "prune")])
    zeros = {"msgs_sent": 0, "bytes_sent": 0}
    by_kind = {kind: {**zeros, **found.get(kind, {})} for kind in kinds}
    return {
        "traffic_measured": {
            "messages": messages.height,
            "bytes_sent": sum(row["bytes_sent"] for row in by_kind.values()),
            "by_kind": by_kind,
        }
    }


def _traffic(tables: RunTables, by_kind: dict[str, dict[str, int]], nodes: int) -> dict[str, Any]:
    # Nodes that sent nothing have no traffic rows but still count, as zero, per node.
    per_node = (
        pl.DataFrame({"node": pl.arange(0, nodes, dtype=pl.UInt32, eager=True)})
        .join(
            tables.traffic.group_by("node").agg(pl.col("bytes_sent").sum()),
            on="node",
            how="left",
        )
        .fill_null(0)
    )
    # Payload bytes on the wire per payload byte a receiver needed: 1 plus duplicates and
    # framing. Traffic spans the whole run, so every message, warm-up included, counts here.
    receivers = (
        aggregates.receipts_per_message(tables)
        if tables.deliveries is None
        else tables.deliveries.group_by("msg").agg(receivers=pl.len().cast(pl.UInt64))
    )
    needed = (
        receivers.join(tables.publishes.select("msg", "size"), on="msg", how="inner")
        .select((pl.col("receivers") * pl.col("size")).sum())
        .item()
    )
    payload_bytes = by_kind["payload"]["bytes_sent"]
    return {
        "by_kind": by_kind,
        "total_bytes_sent": sum(kind["bytes_sent"] for kind in by_kind.values()),
        "total_bytes_recv": sum(kind["bytes_recv"] for kind in by_kind.values()),
        "bytes_sent_per_node": distribution(per_node["bytes_sent"]),
        "amplification": payload_bytes / needed if needed else None,
    }


# Rows of the drops table that count protocol events rather than losses (DESIGN.md: the
# table holds "drop events or counters"): summary key for each.
COUNTER_REASONS = {
    "saved-by-idontwant": "idontwant_transmissions_saved",
    "ineed-timeout": "ineed_timeouts",
}


def _protocol_counters(drops: pl.DataFrame) -> dict[str, int]:
    totals = drops.group_by("reason").agg(pl.col("count").sum())
    found = dict(totals.iter_rows())
    return {key: int(found.get(reason, 0)) for reason, key in COUNTER_REASONS.items()}


def _drops(drops: pl.DataFrame) -> dict[str, Any]:
    sums = drops.group_by("kind", "reason").agg(pl.col("count").sum()).sort("kind", "reason")
    by_kind: dict[str, dict[str, int]] = {}
    for kind, reason, count in sums.iter_rows():
        by_kind.setdefault(kind, {})[reason] = count
    return {"total": int(sums["count"].sum()), "by_kind": by_kind}


def _batches(messages: pl.DataFrame) -> dict[str, Any]:
    start = pl.col("t_publish_ns").min().over("batch")
    on_time = pl.col("fully_delivered") & (pl.col("last_receipt_ns") - start <= BATCH_DEADLINE_NS)
    batches = (
        messages.with_columns(batch_start=start, on_time=on_time)
        .group_by("batch")
        .agg(
            messages=pl.len(),
            complete=pl.col("fully_delivered").all(),
            finished_ns=pl.col("last_receipt_ns").max() - pl.col("batch_start").first(),
            delivered_within_deadline=pl.col("on_time").sum(),
        )
        .with_columns(completion_ns=pl.when("complete").then("finished_ns"))
    )
    return {
        "count": batches.height,
        "complete": int(batches["complete"].sum()),
        "completion_ms": distribution(ns_to_ms(batches["completion_ns"])),
        "deadline_ms": BATCH_DEADLINE_NS / NS_PER_MS,
        "delivered_within_deadline": distribution(batches["delivered_within_deadline"]),
        "messages_per_batch": distribution(batches["messages"]),
    }
