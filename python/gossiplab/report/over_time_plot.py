"""Latency and delivery by time of publication, one set of lines per run: a run's report
draws its own, a crosscheck both backends' (`analysis/over_time.py` makes the rows)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

import polars as pl

from gossiplab.report.drawing import new_panels, save

TITLE = "by time of publication"
LOG_SPAN = 10


def _values(table: pl.DataFrame, column: str) -> list[float]:
    """A column for plotting: an interval without a value is a gap (NaN)."""
    return [math.nan if v is None else float(v) for v in table[column].to_list()]


def _spans_decades(columns: list[pl.Series]) -> bool:
    """Whether the latencies drawn are all above zero (links without latency give 0) and
    span a factor of ten or more: then a log scale shows p50 and p99 both."""
    values = pl.concat([c.drop_nulls() for c in columns])
    if values.is_empty():
        return False
    low, high = float(values.min()), float(values.max())  # type: ignore[arg-type]
    return low > 0 and high >= LOG_SPAN * low


def draw_over_time(runs: Mapping[str, pl.DataFrame], path: Path) -> Path:
    """Per interval of publication: latency p50 and p99 (log scale: p99 may be ten times
    p50) on the left, the delivery ratio on the right; a run named "" gets no label."""
    figure, (latency, delivery) = new_panels(2)
    for name, table in runs.items():
        start = table["from_s"].to_list()
        prefix = f"{name} " if name else ""
        (line,) = latency.plot(
            start, _values(table, "latency_p50_ms"), marker="o", label=f"{prefix}p50"
        )
        latency.plot(
            start,
            _values(table, "latency_p99_ms"),
            marker="^",
            linestyle="--",
            color=line.get_color(),
            label=f"{prefix}p99",
        )
        delivery.plot(
            start, _values(table, "delivery_ratio"), marker="o", label=name or "delivery ratio"
        )
    latency.set(title=f"per-receipt latency {TITLE}", xlabel="published from (s)", ylabel="ms")
    delivery.set(title=f"delivery ratio {TITLE}", xlabel="published from (s)", ylabel="ratio")
    if _spans_decades([t[c] for t in runs.values() for c in ("latency_p50_ms", "latency_p99_ms")]):
        latency.set_yscale("log")
    for axes in (latency, delivery):
        axes.legend()
    return save(figure, path)
