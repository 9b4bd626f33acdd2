"""The crosscheck's outcomes by time of publication: both backends, interval by interval.

Two runs can agree on their totals and still differ in kind: one settles into a steady
state past its capacity, the other falls further behind every second. This section puts
the delivery ratio and the per-receipt latency of each interval of the publication
schedule side by side (``analysis/over_time.py``), as a table and a plot.
"""

from __future__ import annotations

import html
import math
from pathlib import Path

import polars as pl
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from gossiplab.analysis.metrics import Measured
from gossiplab.analysis.over_time import by_publish_time, interval_ns, schedule_span_ns

FIGURE = "crosscheck-over-time.png"


def side_by_side(measured: dict[str, Measured]) -> pl.DataFrame:
    """One row per interval, each backend's columns suffixed with its name; the same
    intervals for both (the width from the longer schedule)."""
    width = interval_ns(max(schedule_span_ns(m) for m in measured.values()))
    frames = [
        by_publish_time(m, width).rename(
            {
                c: f"{c}_{backend}"
                for c in ("messages", "delivery_ratio", "latency_p50_ms", "latency_p99_ms")
            }
        )
        for backend, m in measured.items()
    ]
    joined = frames[0]
    for frame in frames[1:]:
        joined = joined.join(frame, on="from_s", how="full", coalesce=True)
    return joined.sort("from_s")


def _cell(value: float | None, digits: int) -> str:
    return "–" if value is None else f"{value:,.{digits}f}"


def _pair(row: dict[str, float | None], column: str, backends: list[str], digits: int) -> str:
    return " / ".join(_cell(row.get(f"{column}_{b}"), digits) for b in backends)


def _rows(table: pl.DataFrame, backends: list[str]) -> list[list[str]]:
    return [
        [
            _cell(row["from_s"], 1),
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
    headers = _headers(backends)
    lines = [
        "",
        "By time of publication (from the first measured message; a receipt after the end "
        "of the run is not counted, so the last intervals' delivery and latency leave out "
        "what was still under way):",
        "",
        "| " + " | ".join(headers) + " |",
        "|" + "---:|" * len(headers),
    ]
    lines += ["| " + " | ".join(cells) + " |" for cells in _rows(table, backends)]
    return "\n".join(lines) + "\n"


def html_table(table: pl.DataFrame, backends: list[str]) -> str:
    """The section's table for crosscheck.html."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in _headers(backends))
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>"
        for cells in _rows(table, backends)
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def _values(table: pl.DataFrame, column: str) -> list[float]:
    """A column for plotting: an interval without a value is a gap (NaN)."""
    return [math.nan if v is None else v for v in table[column].to_list()]


def draw(table: pl.DataFrame, backends: list[str], path: Path) -> Path:
    """Latency p50 and p99 (log scale: p99 may be ten times p50), and the delivery ratio,
    per interval, one line per backend."""
    figure = Figure(figsize=(13, 4), dpi=110)
    FigureCanvasAgg(figure)
    latency, delivery = figure.subplots(1, 2)
    start = table["from_s"].to_list()
    for backend in backends:
        (line,) = latency.plot(
            start, _values(table, f"latency_p50_ms_{backend}"), marker="o", label=f"{backend} p50"
        )
        latency.plot(
            start,
            _values(table, f"latency_p99_ms_{backend}"),
            marker="^",
            linestyle="--",
            color=line.get_color(),
            label=f"{backend} p99",
        )
        delivery.plot(start, _values(table, f"delivery_ratio_{backend}"), marker="o", label=backend)
    latency.set(
        title="per-receipt latency by time of publication", xlabel="published from (s)", ylabel="ms"
    )
    delivery.set(
        title="delivery ratio by time of publication", xlabel="published from (s)", ylabel="ratio"
    )
    latency.set_yscale("log")
    for ax in (latency, delivery):
        ax.grid(alpha=0.3)
        ax.legend()
    figure.tight_layout()
    figure.savefig(path)
    return path
