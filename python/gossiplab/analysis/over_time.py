"""Outcomes by when messages were published: does a run settle, or fall further behind?

A network past its capacity may still reach a steady state (its queues full, its drops
keeping them so, its latency flat) or fall behind more with every second (latency
growing, delivery falling). The run's totals cannot tell the two apart; the same
metrics per interval of publication can.
"""

from __future__ import annotations

import polars as pl

from gossiplab.analysis.metrics import Measured
from gossiplab.analysis.ranks import nearest_rank_in_group

NS_PER_S = 1_000_000_000
NS_PER_MS = 1_000_000

# Interval widths a reader takes in at a glance, smallest first.
WIDTHS_NS: tuple[int, ...] = tuple(
    int(seconds * NS_PER_S)
    for seconds in (0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600)
)
MAX_INTERVALS = 20

SCHEMA = {
    "from_s": pl.Float64,
    "messages": pl.Int64,
    "delivery_ratio": pl.Float64,
    "latency_p50_ms": pl.Float64,
    "latency_p99_ms": pl.Float64,
}


def interval_ns(span_ns: int) -> int:
    """The smallest width of ``WIDTHS_NS`` that cuts ``span_ns`` into at most
    ``MAX_INTERVALS`` intervals (the largest width if none does)."""
    for width in WIDTHS_NS:
        if span_ns < width * MAX_INTERVALS:
            return width
    return WIDTHS_NS[-1]


def by_publish_time(measured: Measured, width_ns: int | None = None) -> pl.DataFrame:
    """Per interval of the publication schedule (from the first measured message's
    intended time, so that backends with the same schedule share their intervals): the
    messages, their delivery ratio (first receipts over expected receivers) and the p50
    and p99 of their per-receipt latency (nearest rank, as everywhere else; None in
    aggregate mode, which keeps no receipts). A receipt after the run's end is not
    there: the last intervals' delivery and latency leave out what was still under way."""
    messages = measured.messages.filter(pl.col("targets") > 0)
    if messages.is_empty():
        return pl.DataFrame(schema=SCHEMA)
    width = width_ns or interval_ns(schedule_span_ns(measured))
    start = int(messages["t_intended_ns"].min())  # type: ignore[arg-type]
    messages = messages.with_columns(interval=(pl.col("t_intended_ns") - start) // width)
    delivery = (
        messages.group_by("interval")
        .agg(
            messages=pl.len().cast(pl.Int64),
            delivered=pl.col("delivered").sum(),
            targets=pl.col("targets").sum(),
        )
        .with_columns(delivery_ratio=pl.col("delivered") / pl.col("targets"))
    )
    receipts = measured.first_receipts
    if not receipts.is_empty():
        # Only the two columns needed: a run's receipts can be millions of rows.
        receipts = receipts.select("msg", "latency_ns").join(
            messages.select("msg", "interval"), on="msg"
        )
    latency = _latency_percentiles(receipts)
    return (
        delivery.join(latency, on="interval", how="left")
        .sort("interval")
        .select(
            from_s=pl.col("interval").cast(pl.Float64) * width / NS_PER_S,
            messages="messages",
            delivery_ratio="delivery_ratio",
            latency_p50_ms="latency_p50_ms",
            latency_p99_ms="latency_p99_ms",
        )
        .cast(SCHEMA)  # type: ignore[arg-type]
    )


def schedule_span_ns(measured: Measured) -> int:
    """From the first to the last measured message's intended publication."""
    intended = measured.messages["t_intended_ns"]
    if intended.is_empty():
        return 0
    return int(intended.max()) - int(intended.min())  # type: ignore[arg-type]


def _latency_percentiles(receipts: pl.DataFrame) -> pl.DataFrame:
    """p50 and p99 of the receipts' latency per interval, in ms."""
    schema = {"interval": pl.Int64, "latency_p50_ms": pl.Float64, "latency_p99_ms": pl.Float64}
    if receipts.is_empty():
        return pl.DataFrame(schema=schema)
    return (
        receipts.group_by("interval")
        .agg(
            latency_p50_ms=nearest_rank_in_group("latency_ns", 50) / NS_PER_MS,
            latency_p99_ms=nearest_rank_in_group("latency_ns", 99) / NS_PER_MS,
        )
        .cast(schema)  # type: ignore[arg-type]
    )
