"""The crosscheck's outcomes by time of publication: both backends, interval by interval.

Two runs can agree on their totals and still differ in kind: one settles into a steady
state past its capacity, the other falls further behind every second. This section puts
the delivery ratio and the per-receipt latency of each interval of the publication
schedule side by side (``analysis/over_time.py``), as a table and a plot.
"""

from __future__ import annotations

import polars as pl

from gossiplab.analysis.metrics import Measured
from gossiplab.analysis.over_time import by_publish_time, interval_ns, schedule_span_ns
from gossiplab.backends.testbed import crosscheck_tables as tables

FIGURE = "crosscheck-over-time.png"


def by_backend(measured: dict[str, Measured]) -> dict[str, pl.DataFrame]:
    """Each backend's rows by time of publication, on the same intervals (the width from
    the longer schedule)."""
    width = interval_ns(max(schedule_span_ns(m) for m in measured.values()))
    return {backend: by_publish_time(m, width) for backend, m in measured.items()}


def side_by_side(frames: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """One row per interval, each backend's columns suffixed with its name."""
    columns = ("from_s", "messages", "delivery_ratio", "latency_p50_ms", "latency_p99_ms")
    chosen = {backend: frame.select(columns) for backend, frame in frames.items()}
    return tables.join_backends(chosen, "from_s").sort("from_s")


def _pair(row: dict[str, float | None], column: str, backends: list[str], digits: int) -> str:
    return " / ".join(tables.cell(row.get(f"{column}_{b}"), digits) for b in backends)


def _rows(table: pl.DataFrame, backends: list[str]) -> list[list[str]]:
    return [
        [
            tables.cell(row["from_s"], 1),
            _pair(row, "messages", backends, 0),
            _pair(row, "delivery_ratio", backends, 3),
            _pair(row, "latency_p50_ms", backends, 1),
            _pair(row, "latency_p99_ms", backends, 1),
        ]
        for row in table.iter_rows(named=True)
    ]


def _headers(backends: list[str]) -> list[str]:
    both = " / ".join(backends)
    return [
        "published from (s)",
        f"messages, {both}",
        f"delivery ratio, {both}",
        f"latency p50 (ms), {both}",
        f"latency p99 (ms), {both}",
    ]


def markdown(table: pl.DataFrame, backends: list[str]) -> str:
    """The section for crosscheck.md."""
    intro = (
        "By time of publication (from the first measured message; a receipt after the end "
        "of the run is not counted, so the last intervals' delivery and latency leave out "
        "what was still under way):"
    )
    return tables.markdown_section(intro, _headers(backends), _rows(table, backends))


def html_table(table: pl.DataFrame, backends: list[str]) -> str:
    """The section's table for crosscheck.html."""
    return tables.html_table(_headers(backends), _rows(table, backends))
