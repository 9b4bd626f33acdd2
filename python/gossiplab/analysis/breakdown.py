"""How each node class and each region fares as a receiver: summary.json's by_class/by_region.

For every group of nodes (the nodes table's ``class`` or ``region``) and the measured
messages: the group's first receipts over the receipts it should have had (every message to
every node of the group except the message's own publisher, and except receivers the run
left out as down), per-receipt latency percentiles (nearest rank, as everywhere else), the
mean hop of those receipts, and the bytes a node of the group sent on average.

Expected receipts assume that every node subscribes to every topic, which is what both
backends do today.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import polars as pl

from gossiplab.analysis.headline import format_value
from gossiplab.analysis.ranks import nearest_rank_in_group

NS_PER_MS = 1_000_000
PERCENTILES: tuple[int, ...] = (50, 90, 95, 99)
GROUPINGS: tuple[tuple[str, str], ...] = (("by_class", "class"), ("by_region", "region"))
"""summary.json key and nodes-table column of each breakdown."""
ReceiptStats = Callable[[pl.DataFrame], pl.DataFrame]
"""(node, group) members -> group, first_receipts, p50, p90, p95, p99, max (ns) and mean_hop."""


def group_breakdowns(
    nodes: pl.DataFrame | None,
    messages: pl.DataFrame,
    first_receipts: pl.DataFrame,
    traffic: pl.DataFrame,
    excluded: pl.DataFrame | None = None,
    receipt_stats: ReceiptStats | None = None,
) -> dict[str, Any]:
    """``by_class`` and ``by_region`` for summary.json, each only when the run has them.

    ``messages`` are the measured messages (msg, publisher), ``first_receipts`` their
    deliveries with ``latency_ns``, ``excluded`` optional (msg, node) pairs not expected.
    ``receipt_stats``, for runs without per-receipt rows (aggregate mode), gives each
    group's receipt statistics from (node, group) members instead of ``first_receipts``.
    """
    if nodes is None:
        return {}
    breakdowns: dict[str, Any] = {}
    for key, column in GROUPINGS:
        if (nodes[column] != "").any():
            members = nodes.select("node", group=pl.col(column))
            breakdowns[key] = _by_group(
                members, messages, first_receipts, traffic, excluded, receipt_stats
            )
    return breakdowns


def _by_group(
    members: pl.DataFrame,
    messages: pl.DataFrame,
    first_receipts: pl.DataFrame,
    traffic: pl.DataFrame,
    excluded: pl.DataFrame | None,
    receipt_stats: ReceiptStats | None = None,
) -> dict[str, dict[str, Any]]:
    sizes = members.group_by("group").agg(nodes=pl.len())
    stats = (
        _receipt_stats(members, first_receipts) if receipt_stats is None else receipt_stats(members)
    )
    frame = (
        sizes.join(_expected(members, messages, excluded), on="group", how="left")
        .join(stats, on="group", how="left")
        .join(_bytes_sent(members, traffic), on="group", how="left")
        .with_columns(pl.col("expected", "first_receipts").fill_null(0))
        .with_columns(
            delivery_ratio=pl.when(pl.col("expected") > 0).then(
                pl.col("first_receipts") / pl.col("expected")
            )
        )
        .sort("group")
    )
    return {row.pop("group"): _entry(row) for row in frame.iter_rows(named=True)}


def _expected(
    members: pl.DataFrame, messages: pl.DataFrame, excluded: pl.DataFrame | None
) -> pl.DataFrame:
    # Every message to every node of the group, less the group's own publishers (a
    # publisher does not receive its message) and the receivers left out as down.
    sizes = members.group_by("group").agg(nodes=pl.len())
    own = (
        messages.select("msg", node=pl.col("publisher"))
        .join(members, on="node", how="inner")
        .group_by("group")
        .agg(own=pl.len())
    )
    expected = sizes.join(own, on="group", how="left").with_columns(
        expected=pl.col("nodes") * messages.height - pl.col("own").fill_null(0)
    )
    if excluded is not None and not excluded.is_empty():
        down = (
            excluded.join(messages.select("msg"), on="msg", how="semi")
            .join(members, on="node", how="inner")
            .group_by("group")
            .agg(down=pl.len())
        )
        expected = expected.join(down, on="group", how="left").with_columns(
            expected=pl.col("expected") - pl.col("down").fill_null(0)
        )
    return expected.select("group", pl.col("expected").cast(pl.Int64))


def _receipt_stats(members: pl.DataFrame, first_receipts: pl.DataFrame) -> pl.DataFrame:
    return (
        first_receipts.join(members, on="node", how="inner")
        .group_by("group")
        .agg(
            first_receipts=pl.len().cast(pl.Int64),
            **{f"p{p}": nearest_rank_in_group("latency_ns", p) for p in PERCENTILES},
            max=pl.col("latency_ns").max(),
            mean_hop=pl.col("hop").cast(pl.Float64).mean(),
        )
    )


def _bytes_sent(members: pl.DataFrame, traffic: pl.DataFrame) -> pl.DataFrame:
    # Nodes that sent nothing have no traffic rows; they count as zero in the mean.
    sent = traffic.group_by("node").agg(bytes_sent=pl.col("bytes_sent").sum())
    return (
        members.join(sent, on="node", how="left")
        .group_by("group")
        .agg(bytes_sent_per_node_mean=pl.col("bytes_sent").fill_null(0).mean())
    )


def _entry(row: dict[str, Any]) -> dict[str, Any]:
    def ms(ns: int | None) -> float | None:
        return None if ns is None else ns / NS_PER_MS

    return {
        "nodes": row["nodes"],
        "first_receipts": row["first_receipts"],
        "expected_first_receipts": row["expected"],
        "delivery_ratio": row["delivery_ratio"],
        "latency_ms": {key: ms(row[key]) for key in (*(f"p{p}" for p in PERCENTILES), "max")},
        "mean_hop": row["mean_hop"],
        "bytes_sent_per_node_mean": row["bytes_sent_per_node_mean"],
    }


@dataclass(frozen=True)
class GroupTable:
    """One breakdown as the report shows it."""

    title: str
    caption: str
    header: list[str]
    rows: list[list[str]]


_CAPTION = (
    "Nodes grouped by {what}, as receivers: delivery ratio over the receipts the group "
    "should have had, and the latency from publish to each first receipt (nearest-rank "
    "percentiles over all receipts of the group). Bytes sent count everything a node sent "
    "during the whole run, warm-up included."
)


_TITLES = {"by_class": "node class", "by_region": "region"}


def breakdown_tables(summary: Mapping[str, Any]) -> list[GroupTable]:
    """The report's per-class and per-region tables (none when the run has neither)."""
    tables = []
    for key, _ in GROUPINGS:
        groups = summary.get(key)
        if not groups:
            continue
        header = [
            _TITLES[key],
            "nodes",
            "delivery ratio",
            "latency p50 (ms)",
            "p90 (ms)",
            "p95 (ms)",
            "p99 (ms)",
            "max (ms)",
            "mean hop",
            "bytes sent per node",
        ]
        rows = [_row(name, group) for name, group in groups.items()]
        what = _TITLES[key]
        tables.append(GroupTable(f"By {what}", _CAPTION.format(what=what), header, rows))
    return tables


def _row(name: str, group: dict[str, Any]) -> list[str]:
    latency = group["latency_ms"]
    return [
        name,
        format_value(group["nodes"], "count"),
        format_value(group["delivery_ratio"], "ratio"),
        *(format_value(latency[key], "ms") for key in ("p50", "p90", "p95", "p99", "max")),
        format_value(group["mean_hop"], "hops"),
        format_value(group["bytes_sent_per_node_mean"], "bytes"),
    ]
