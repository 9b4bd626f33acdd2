"""The report's per-receipt figures for an aggregate-mode run, from its aggregate tables.

``plots.py`` draws these three figures from the first-receipt rows; an aggregate-mode run
has none, so it hands over here: the per-receipt latency CDF comes from the latency
histogram (each rank's bin middle, within 1/256 of the true value), the duplicates from
their exact histogram and the per-node means from the receivers table.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from gossiplab import aggregates
from gossiplab.drawing import ACCENT, BAR, new_figure, save, thinned_ranks
from gossiplab.tables import RunTables

NS_PER_MS = 1e6


def receipt_latency_cdf(tables: RunTables, summary: Mapping[str, Any], path: Path) -> Path | None:
    latency = summary["receipt_latency_ms"]
    total = int(latency["count"])
    if total == 0:
        return None
    ranks = thinned_ranks(total)
    values = aggregates.latency_cdf(tables, ranks) / NS_PER_MS
    values = np.clip(values, latency["min"], latency["max"])
    figure, axes = new_figure()
    axes.step(values, ranks / total, where="post")
    for percent, style in ((50, "--"), (99, ":")):
        value = latency[f"p{percent}"]
        axes.axvline(value, color=ACCENT, linestyle=style, linewidth=1)
        axes.annotate(
            f"p{percent} ≈ {value:,.1f} ms",
            xy=(value, 0.06 + 0.1 * (percent == 99)),
            xycoords=axes.get_xaxis_transform(),
            xytext=(4, 0),
            textcoords="offset points",
            color=ACCENT,
            bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 1},
        )
    axes.set_title(
        f"Latency of every first receipt ({total:,} message × node pairs, from a histogram)"
    )
    axes.set_xlabel("time from publish to a node's first receipt (ms, within 0.4 %)")
    axes.set_ylabel("fraction of first receipts")
    return save(figure, path)


def duplicates_histogram(tables: RunTables, path: Path) -> Path | None:
    histogram = tables.duplicates_histogram
    if histogram is None or histogram.is_empty():
        return None
    figure, axes = new_figure()
    axes.bar(histogram["duplicates"].to_numpy(), histogram["pairs"].to_numpy(), color=BAR)
    axes.set_title("Duplicate copies a node received after its first copy of a message")
    axes.set_xlabel("duplicates per node per message")
    axes.set_ylabel("message × node pairs")
    return save(figure, path)


def duplicates_per_node(tables: RunTables, path: Path) -> Path | None:
    per_node = aggregates.duplicates_per_node(tables).sort("mean", descending=True)
    if per_node.is_empty():
        return None
    figure, axes = new_figure()
    ranks = np.arange(per_node.height)
    axes.bar(ranks, per_node["mean"].to_numpy(), width=1.0, color=BAR)
    axes.set_xlim(-0.5, per_node.height - 0.5)
    axes.set_title("Mean duplicates per message received, per node (ranked)")
    axes.set_xlabel(f"nodes, ranked by duplicates ({per_node.height:,} nodes received messages)")
    axes.set_ylabel("duplicates per message")
    return save(figure, path)
