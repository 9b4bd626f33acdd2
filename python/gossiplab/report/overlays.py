"""Several runs on one figure: the overlays of `compare`, sweep and campaign reports.

Each function draws one figure from run digests, one colour per run in the order given,
and returns the PNG's path, or None when no run has anything to show. Message CDFs are
over every measured message of each run, so a curve that levels off below 1 shows
messages that never got there: runs with different delivery ratios stay comparable.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from matplotlib.axes import Axes

from gossiplab.analysis.digest import RunDigest
from gossiplab.report.drawing import (
    WIDE_SIZE,
    new_figure,
    new_panels,
    save,
    series_colours,
    thinned_ranks,
)

SHARED_BINS = 60
LOG_SCALE_SPREAD = 100
"""Runs whose times span more than this factor are drawn on a logarithmic time axis."""
LEGEND_COLUMNS_FROM = 8


def dissemination_overlay(digests: Sequence[RunDigest], path: Path) -> Path | None:
    """Histogram (left) and CDF (right) of dissemination time, one curve per run."""
    shown = [d for d in digests if len(d.dissemination_ms)]
    if not shown:
        return None
    colours = series_colours(len(digests))
    bins, logarithmic = _shared_bins([d.dissemination_ms for d in shown])
    figure, (histogram, cdf) = new_panels(2, size=(WIDE_SIZE[0], 4.6))
    for digest, colour in zip(digests, colours, strict=True):
        values = digest.dissemination_ms
        if not len(values):
            continue
        histogram.hist(values, bins=bins, histtype="step", linewidth=1.4, color=colour)
        _cdf(cdf, values, digest.messages, colour, digest.label)
    histogram.set_title("Dissemination time (fully delivered messages)")
    histogram.set_xlabel("time from publish to the last first receipt (ms)")
    histogram.set_ylabel("messages per bin")
    cdf.set_title("Dissemination time CDF")
    cdf.set_xlabel("time from publish to the last first receipt (ms)")
    cdf.set_ylabel("fraction of messages")
    cdf.set_ylim(0, 1.02)
    if logarithmic:
        for axes in (histogram, cdf):
            axes.set_xscale("log")
            axes.set_xlabel(axes.get_xlabel() + ", log scale")
    _legend(cdf, len(shown))
    return save(figure, path)


def _shared_bins(samples: Sequence[np.ndarray]) -> tuple[np.ndarray, bool]:
    """Bins over every sample; logarithmic when the runs differ by orders of magnitude.

    One slow run (a sparse topology at seconds) would otherwise squeeze every fast run
    (at a millisecond) into the first bin, where no shape can be seen.
    """
    top = max(float(values[-1]) for values in samples)
    positive = [float(values[values > 0][0]) for values in samples if (values > 0).any()]
    low = min(float(values[0]) for values in samples)
    if positive and low > 0 and top / min(positive) > LOG_SCALE_SPREAD:
        return np.geomspace(min(positive), top, SHARED_BINS + 1), True
    return np.linspace(low, top if top > low else low + 1.0, SHARED_BINS + 1), False


def _log_if_wide(axes: Axes, samples: Sequence[np.ndarray]) -> None:
    """A logarithmic time axis when the runs' times differ by orders of magnitude."""
    if _shared_bins(samples)[1]:
        axes.set_xscale("log")
        axes.set_xlabel(axes.get_xlabel() + ", log scale")


def receipt_latency_overlay(digests: Sequence[RunDigest], path: Path) -> Path | None:
    shown = [d for d in digests if len(d.receipt_latency_ms)]
    if not shown:
        return None
    figure, axes = new_figure()
    for digest, colour in zip(digests, series_colours(len(digests)), strict=True):
        if len(digest.receipt_latency_ms):
            axes.step(
                digest.receipt_latency_ms,
                digest.receipt_fraction,
                where="post",
                color=colour,
                label=digest.label,
            )
    axes.set_title("Per-receipt latency CDF")
    axes.set_xlabel("time from publish to a node's first receipt (ms)")
    _log_if_wide(axes, [d.receipt_latency_ms for d in shown])
    axes.set_ylabel("fraction of first receipts")
    axes.set_ylim(0, 1.02)
    _legend(axes, len(shown))
    return save(figure, path)


def reach_overlay(digests: Sequence[RunDigest], path: Path, percent: int = 99) -> Path | None:
    shown = [d for d in digests if len(d.reach_ms.get(percent, []))]
    if not shown:
        return None
    figure, axes = new_figure()
    for digest, colour in zip(digests, series_colours(len(digests)), strict=True):
        values = digest.reach_ms.get(percent, np.array([]))
        if len(values):
            _cdf(axes, values, digest.messages, colour, digest.label)
    axes.set_title(f"Time to reach {percent}% of the subscribers")
    axes.set_xlabel("time from publish (ms)")
    _log_if_wide(axes, [d.reach_ms[percent] for d in shown])
    axes.set_ylabel("fraction of messages")
    axes.set_ylim(0, 1.02)
    _legend(axes, len(shown))
    return save(figure, path)


def hops_overlay(digests: Sequence[RunDigest], path: Path) -> Path | None:
    """Last delivery hop (left) and max hop (right) distributions as grouped bars."""
    if not any(d.last_delivery_hop for d in digests):
        return None
    figure, panels = new_panels(2, size=(WIDE_SIZE[0], 4.6))
    for axes, attribute, title in (
        (panels[0], "last_delivery_hop", "Last delivery hop"),
        (panels[1], "max_hop", "Maximum hop per message"),
    ):
        _grouped_shares(axes, digests, attribute)
        axes.set_title(title)
        axes.set_xlabel("hops (publisher = 0)")
        axes.set_ylabel("share of messages")
    _legend(panels[1], len(digests))
    return save(figure, path)


def duplicates_overlay(digests: Sequence[RunDigest], path: Path) -> Path | None:
    if not any(d.duplicates for d in digests):
        return None
    figure, axes = new_figure()
    _grouped_shares(axes, digests, "duplicates")
    axes.set_title("Duplicates per node per message")
    axes.set_xlabel("duplicate copies after the first")
    axes.set_ylabel("share of message × node pairs")
    _legend(axes, len(digests))
    return save(figure, path)


def bytes_per_node_overlay(digests: Sequence[RunDigest], path: Path) -> Path | None:
    if not any(len(d.bytes_sent_per_node) and d.bytes_sent_per_node[0] > 0 for d in digests):
        return None
    figure, axes = new_figure()
    for digest, colour in zip(digests, series_colours(len(digests)), strict=True):
        ranks = np.arange(len(digest.bytes_sent_per_node))
        axes.step(
            ranks, digest.bytes_sent_per_node / 1e6, where="post", color=colour, label=digest.label
        )
    axes.set_title("Bytes sent per node, all kinds, nodes ranked")
    axes.set_xlabel("nodes, ranked by bytes sent")
    axes.set_ylabel("MB sent")
    _legend(axes, len(digests))
    return save(figure, path)


def _cdf(axes: Axes, ordered: np.ndarray, total: int, colour: object, label: str) -> None:
    ranks = thinned_ranks(len(ordered))
    axes.step(ordered[ranks - 1], ranks / max(total, 1), where="post", color=colour, label=label)


def _grouped_shares(axes: Axes, digests: Sequence[RunDigest], attribute: str) -> None:
    keys = sorted({k for d in digests for k in getattr(d, attribute)})
    if not keys:
        return
    width = 0.8 / len(digests)
    colours = series_colours(len(digests))
    for i, digest in enumerate(digests):
        counts = getattr(digest, attribute)
        total = sum(counts.values()) or 1
        shares = [counts.get(k, 0) / total for k in keys]
        offsets = np.array(keys) - 0.4 + width * (i + 0.5)
        axes.bar(offsets, shares, width=width, color=colours[i], label=digest.label)
    axes.set_xticks(keys)


def _legend(axes: Axes, entries: int) -> None:
    columns = 2 if entries >= LEGEND_COLUMNS_FROM else 1
    axes.legend(loc="best", fontsize="small", ncols=columns)
