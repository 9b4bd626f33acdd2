"""The figures of a run's report, each saved as a PNG.

Figures are drawn on ``matplotlib.figure.Figure`` objects, never through pyplot, so
nothing here switches the process-wide backend under a notebook that imports gossiplab;
saving a Figure to .png renders it with Agg. Each function returns the PNG's path, or
None when there is nothing to plot (the report then says "no data").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from gossiplab.metrics import measure, nearest_rank, ns_to_ms
from gossiplab.tables import TRAFFIC_KINDS, RunTables

DPI = 110
FIGURE_SIZE = (7.5, 4.2)
CDF_POINTS = 2000
"""Enough points for a smooth CDF; millions of receipts are thinned to this many ranks."""
REACH_PLOTTED = (50, 90, 99, 100)
BYTE_UNITS = (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10), ("B", 1))


@dataclass(frozen=True)
class Plot:
    """One figure of the report; ``path`` is None when there was nothing to plot."""

    name: str
    title: str
    path: Path | None


def render_all(plots_dir: Path, tables: RunTables, summary: Mapping[str, Any]) -> list[Plot]:
    """Draw every figure into ``plots_dir`` in report order, removing stale ones."""
    measured = measure(tables, summary["run"])
    messages, receipts = measured.messages, measured.first_receipts
    nodes = int(summary["run"]["nodes"])
    figures: list[tuple[str, str, Callable[[Path], Path | None]]] = [
        (
            "dissemination_histogram",
            "Dissemination time (fully delivered messages)",
            lambda path: dissemination_histogram(messages, path),
        ),
        (
            "dissemination_cdf",
            "Dissemination time CDF",
            lambda path: dissemination_cdf(messages, path),
        ),
        (
            "last_delivery_hop",
            "Last delivery hop",
            lambda path: last_delivery_hop_bars(summary, path),
        ),
        (
            "receipt_latency_cdf",
            "Per-receipt latency CDF",
            lambda path: receipt_latency_cdf(receipts, path),
        ),
        (
            "time_to_reach",
            "Time to reach a share of the subscribers",
            lambda path: time_to_reach_cdf(messages, path),
        ),
        (
            "duplicates",
            "Duplicates per node per message",
            lambda path: duplicates_histogram(receipts, path),
        ),
        (
            "bytes_per_node",
            "Bytes sent per node",
            lambda path: bytes_per_node(tables.traffic, nodes, path),
        ),
        (
            "control_counts",
            "Control messages",
            lambda path: control_counts(summary, path),
        ),
    ]
    plots_dir.mkdir(parents=True, exist_ok=True)
    plots = []
    for name, title, draw in figures:
        path = plots_dir / f"{name}.png"
        drawn = draw(path)
        if drawn is None:
            path.unlink(missing_ok=True)  # a figure from an earlier report of this folder
        plots.append(Plot(name, title, drawn))
    return plots


def dissemination_histogram(messages: pl.DataFrame, path: Path) -> Path | None:
    values = ns_to_ms(messages["dissemination_ns"]).drop_nulls()
    if values.is_empty():
        return None
    figure, axes = _figure()
    axes.hist(values.to_numpy(), bins=_bin_count(values.len()), color="#4c72b0")
    axes.set_title(f"Dissemination time of the {values.len():,} fully delivered messages")
    axes.set_xlabel("time from publish to the last first receipt (ms)")
    axes.set_ylabel("messages")
    return _save(figure, path)


def dissemination_cdf(messages: pl.DataFrame, path: Path) -> Path | None:
    ordered = ns_to_ms(messages["dissemination_ns"]).drop_nulls().sort()
    if ordered.is_empty():
        return None
    figure, axes = _figure()
    _draw_cdf(axes, ordered, total=ordered.len())
    _mark_percentiles(axes, ordered, (50, 99))
    axes.set_title(f"Dissemination time CDF ({ordered.len():,} fully delivered messages)")
    axes.set_xlabel("time from publish to the last first receipt (ms)")
    axes.set_ylabel("fraction of messages")
    return _save(figure, path)


def last_delivery_hop_bars(summary: Mapping[str, Any], path: Path) -> Path | None:
    histogram = summary["last_delivery_hop"]["histogram"]
    if not histogram:
        return None
    hops = [int(hop) for hop in histogram]
    figure, axes = _figure()
    axes.bar(hops, list(histogram.values()), color="#4c72b0")
    axes.set_xticks(range(min(hops), max(hops) + 1))
    axes.set_title("Hop count of the last node to receive each message (LDH)")
    axes.set_xlabel("last delivery hop (publisher = 0)")
    axes.set_ylabel("messages")
    return _save(figure, path)


def receipt_latency_cdf(first_receipts: pl.DataFrame, path: Path) -> Path | None:
    ordered = ns_to_ms(first_receipts["latency_ns"]).sort()
    if ordered.is_empty():
        return None
    figure, axes = _figure()
    _draw_cdf(axes, ordered, total=ordered.len())
    _mark_percentiles(axes, ordered, (50, 99))
    axes.set_title(f"Latency of every first receipt ({ordered.len():,} message × node pairs)")
    axes.set_xlabel("time from publish to a node's first receipt (ms)")
    axes.set_ylabel("fraction of first receipts")
    return _save(figure, path)


def time_to_reach_cdf(messages: pl.DataFrame, path: Path) -> Path | None:
    # Every message with receivers is in the denominator, so a curve that levels off below
    # 1 shows the share of messages that never reached that fraction of the subscribers.
    total = messages.filter(pl.col("targets") > 0).height
    curves = {p: ns_to_ms(messages[f"reach_{p}_ns"]).drop_nulls().sort() for p in REACH_PLOTTED}
    if not any(len(values) for values in curves.values()):
        return None
    figure, axes = _figure()
    for percent, ordered in curves.items():
        if len(ordered):
            _draw_cdf(axes, ordered, total=total, label=f"{percent}% of subscribers")
    axes.set_ylim(0, 1.02)
    axes.legend(loc="lower right")
    axes.set_title("Time for a message to reach a share of the other subscribers")
    axes.set_xlabel("time from publish (ms)")
    axes.set_ylabel("fraction of messages")
    return _save(figure, path)


def duplicates_histogram(first_receipts: pl.DataFrame, path: Path) -> Path | None:
    counts = first_receipts["duplicates"].value_counts(name="pairs").sort("duplicates")
    if counts.is_empty():
        return None
    figure, axes = _figure()
    axes.bar(counts["duplicates"].to_numpy(), counts["pairs"].to_numpy(), color="#4c72b0")
    axes.set_title("Duplicate copies a node received after its first copy of a message")
    axes.set_xlabel("duplicates per node per message")
    axes.set_ylabel("message × node pairs")
    return _save(figure, path)


def bytes_per_node(traffic: pl.DataFrame, nodes: int, path: Path) -> Path | None:
    by_node = (
        pl.DataFrame({"node": pl.arange(0, nodes, dtype=pl.UInt32, eager=True)})
        .join(
            traffic.pivot(
                on="kind",
                on_columns=TRAFFIC_KINDS,
                index="node",
                values="bytes_sent",
                aggregate_function="sum",
            ),
            on="node",
            how="left",
        )
        .fill_null(0)
        .with_columns(total=pl.sum_horizontal(TRAFFIC_KINDS))
        .sort("total", "node", descending=[True, False])
    )
    kinds = [kind for kind in TRAFFIC_KINDS if by_node[kind].sum() > 0]
    if not kinds:
        return None
    unit, scale = byte_unit(by_node["total"].max())  # type: ignore[arg-type]
    # Repeat the last node so that the step drawing gives it a full-width column too.
    ranks = np.arange(by_node.height + 1)
    layers = [np.append(by_node[kind].to_numpy(), by_node[kind][-1]) / scale for kind in kinds]
    figure, axes = _figure()
    axes.stackplot(ranks, layers, labels=kinds, step="post")
    axes.set_xlim(0, by_node.height)
    axes.legend(loc="upper right", fontsize="small")
    axes.set_title("Bytes each node sent over the run, by message kind")
    axes.set_xlabel("nodes, ranked by bytes sent")
    axes.set_ylabel(f"bytes sent ({unit})")
    return _save(figure, path)


def control_counts(summary: Mapping[str, Any], path: Path) -> Path | None:
    counts = summary["control"]
    if not any(counts.values()):
        return None
    figure, axes = _figure()
    bars = axes.bar([kind.upper() for kind in counts], list(counts.values()), color="#55a868")
    axes.bar_label(bars, labels=[f"{count:,}" for count in counts.values()], fontsize="small")
    axes.set_title("Control items sent by all nodes, by kind")
    axes.set_ylabel("items (message ids; topics for GRAFT/PRUNE)")
    return _save(figure, path)


def _figure() -> tuple[Figure, Axes]:
    figure = Figure(figsize=FIGURE_SIZE, layout="constrained")
    axes = figure.add_subplot()
    axes.grid(alpha=0.3)
    return figure, axes


def _save(figure: Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=DPI)
    return path


def _bin_count(values: int) -> int:
    return min(60, max(5, math.isqrt(values)))


def _draw_cdf(axes: Axes, ordered: pl.Series, *, total: int, label: str | None = None) -> None:
    """Step CDF of ascending values, as a share of ``total``, thinned to CDF_POINTS ranks."""
    ranks = np.arange(1, ordered.len() + 1)
    if ordered.len() > CDF_POINTS:
        ranks = np.unique(np.linspace(1, ordered.len(), CDF_POINTS).round().astype(np.int64))
    values = ordered.gather(ranks - 1).to_numpy()
    axes.step(values, ranks / total, where="post", label=label)


def _mark_percentiles(axes: Axes, ordered: pl.Series, percents: Sequence[int]) -> None:
    # Labels go low and right of their line: below a CDF to the right of a percentile the
    # plot is empty, so they never sit on the curve.
    for row, (percent, style) in enumerate(zip(percents, ("--", ":"), strict=False)):
        value = nearest_rank(ordered, percent)
        axes.axvline(value, color="#c44e52", linestyle=style, linewidth=1)
        axes.annotate(
            f"p{percent} = {value:,.1f} ms",
            xy=(value, 0.06 + 0.1 * row),
            xycoords=axes.get_xaxis_transform(),
            xytext=(4, 0),
            textcoords="offset points",
            color="#c44e52",
            bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 1},
        )


def byte_unit(count: int) -> tuple[str, int]:
    """The largest binary unit (and its size in bytes) that ``count`` bytes fill at least once."""
    return next((unit, size) for unit, size in BYTE_UNITS if count >= size or size == 1)
