"""The partial-message figures of a run's report: completion, where parts came from, bytes.

Drawn only for runs whose workload is partial messages (``partial.parquet``). Each
function takes the pairs of ``analysis.partial_curves.measured_pairs`` (or the traffic
table) and returns the PNG's path, or None when there is nothing to draw.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import polars as pl
from matplotlib.axes import Axes
from matplotlib.ticker import MaxNLocator

from gossiplab.analysis.partial_curves import (
    SPLIT_KINDS,
    CompletionCurve,
    bytes_received_by_kind,
    completion_by_role,
    duplicate_counts,
    part_sources,
)
from gossiplab.report.drawing import (
    BAR,
    REPORT_MARGINS,
    byte_unit,
    new_figure,
    new_panels,
    save,
    series_colours,
    thinned_ranks,
)

BAR_PER_VALUE_UP_TO = 40
MAX_BINS = 60
SOURCE_COLOURS = {"held": "#55a868", "parts_recv": BAR, "parts_dup": "#c44e52"}
SOURCE_LABELS = {
    "held": "held before publish (mempool)",
    "parts_recv": "from the network (parts or full copy)",
    "parts_dup": "duplicate parts",
}


def draw_completion(axes: Axes, curve: CompletionCurve, end_ms: float, **style: object) -> None:
    """A completion curve as a step line from (0, 0), thinned like every CDF of the report
    and held level to ``end_ms``, so a curve that stops below 1 reads as nodes left
    incomplete rather than as a line that ends."""
    ranks = thinned_ranks(curve.complete)
    last = float(curve.share[-1]) if curve.complete else 0.0
    times = np.concatenate(([0.0], curve.times_ms[ranks - 1], [max(end_ms, 0.0)]))
    shares = np.concatenate(([0.0], curve.share[ranks - 1], [last]))
    axes.step(times, shares, where="post", **style)  # type: ignore[arg-type]


def end_of_curves(curves: Sequence[CompletionCurve]) -> float:
    """Where the curves of one figure end: a little past the latest completion."""
    latest = max((float(c.times_ms[-1]) for c in curves if c.complete), default=0.0)
    return latest * 1.05 or 1.0


def completion_over_time(pairs: pl.DataFrame, path: Path) -> Path | None:
    curves = completion_by_role(pairs)
    if not curves[0].pairs:
        return None
    figure, axes = new_figure(margins=REPORT_MARGINS)
    colours = series_colours(len(curves))
    end = end_of_curves(curves)
    for curve, colour in zip(curves, colours, strict=True):
        width = 2.4 if curve is curves[0] else 1.2
        label = f"{curve.label} ({curve.complete:,} of {curve.pairs:,} complete)"
        draw_completion(axes, curve, end, color=colour, linewidth=width, label=label)
    axes.set_ylim(0, 1.02)
    axes.set_xlim(left=0)
    axes.legend(loc="lower right", fontsize="small")
    axes.set_title("Share of (group, node) pairs holding every part")
    axes.set_xlabel("time from publish (ms)")
    axes.set_ylabel("share of pairs complete")
    return save(figure, path)


def part_sources_bars(pairs: pl.DataFrame, path: Path) -> Path | None:
    sources = part_sources(pairs)
    if sources.is_empty():
        return None
    figure, (split, duplicates) = new_panels(2, margins=REPORT_MARGINS)
    _stacked_sources(split, sources)
    counts = duplicate_counts(pairs)
    values, weights = counts["parts_dup"].to_numpy(), counts["pairs"].to_numpy()
    if values.max() < BAR_PER_VALUE_UP_TO:
        duplicates.bar(values, weights, color=BAR)
        duplicates.xaxis.set_major_locator(MaxNLocator(integer=True))
    else:  # one bar per count would be a comb: integer-aligned bins, one filled outline
        step = -(-int(values.max() + 1) // MAX_BINS)
        edges = np.arange(0, values.max() + step + 1, step) - 0.5
        duplicates.hist(values, bins=edges, weights=weights, color=BAR, histtype="stepfilled")
    duplicates.set_title("Duplicate parts per (group, node)")
    duplicates.set_xlabel("parts received that the node already held")
    duplicates.set_ylabel("(group, node) pairs")
    return save(figure, path)


def _stacked_sources(axes: Axes, sources: pl.DataFrame) -> None:
    """Per role, the parts of its pairs: held, new and duplicate, as shares of parts needed."""
    roles = sources["role"].to_list()
    positions = np.arange(len(roles))
    base = np.zeros(len(roles))
    needed = sources["parts"].to_numpy().astype(float)
    for column, colour in SOURCE_COLOURS.items():
        share = sources[column].to_numpy() / np.where(needed > 0, needed, 1)
        axes.bar(positions, share, bottom=base, color=colour, label=SOURCE_LABELS[column])
        base += share
    axes.set_ylim(0, max(1.0, float(base.max())) * 1.4)  # room for the legend above the bars
    axes.set_xticks(
        positions, [f"{r}\n({n:,} pairs)" for r, n in zip(roles, sources["pairs"], strict=True)]
    )
    axes.set_title("Where the parts came from, by role")
    axes.set_ylabel("share of the parts a node needs")
    axes.legend(loc="upper right", fontsize="x-small")


def bytes_split_bars(
    traffic: pl.DataFrame, path: Path, kinds: Sequence[str] = SPLIT_KINDS
) -> Path | None:
    received = bytes_received_by_kind(traffic, tuple(kinds))
    if not any(received.values()):
        return None
    # Full messages and parts always show, even at zero: that is the comparison.
    received = {k: n for k, n in received.items() if n or k in ("payload", "partial")}
    unit, scale = byte_unit(max(received.values()))
    figure, axes = new_figure(margins=REPORT_MARGINS)
    labels = [KIND_LABELS.get(kind, kind) for kind in received]
    bars = axes.bar(labels, [count / scale for count in received.values()], color=BAR)
    axes.bar_label(
        bars, labels=[f"{count / scale:,.1f}" for count in received.values()], fontsize="small"
    )
    axes.set_title("Bytes received by all nodes: full messages against the extension")
    axes.set_ylabel(f"bytes received ({unit})")
    return save(figure, path)


KIND_LABELS = {
    "payload": "full messages",
    "partial": "parts (partial RPCs)",
    "partsmeta": "parts metadata",
    "extensions": "extensions message",
}
