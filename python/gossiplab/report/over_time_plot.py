"""Latency and delivery by time of publication, one set of lines per run: a run's report
draws its own, a crosscheck both backends' (`analysis/over_time.py` makes the rows)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

import polars as pl

from gossiplab.report.drawing import new_panels, save

TITLE = "by time of publication"


def _values(table: pl.DataFrame, column: str) -> list[float]:
    """A column for plotting: an interval without a value is a gap (NaN)."""
    return [math.nan if v is None else float(v) for v in table[column].to_list()]


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
    # Log scale only when every latency drawn is above zero (links without latency give 0).
    drawn = [t[c].drop_nulls() for t in runs.values() for c in ("latency_p50_ms", "latency_p99_ms")]
    if any(v.len() for v in drawn) and all(v.len() == 0 or v.min() > 0 for v in drawn):  # type: ignore[operator]
        latency.set_yscale("log")
    for axes in (latency, delivery):
        axes.legend()
    return save(figure, path)
