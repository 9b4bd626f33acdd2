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

from gossiplab.analysis import aggregates
from gossiplab.analysis.tables import RunTables
from gossiplab.report.drawing import REPORT_MARGINS, mark_value, new_figure, save, thinned_ranks

NS_PER_MS = 1e6


def receipt_latency_cdf(tables: RunTables, summary: Mapping[str, Any], path: Path) -> Path | None:
    latency = summary["receipt_latency_ms"]
    total = int(latency["count"])
    if total == 0:
        return None
    ranks = thinned_ranks(total)
    values = aggregates.latency_cdf(tables, ranks) / NS_PER_MS
    values = np.clip(values, latency["min"], latency["max"])
    figure, axes = new_figure(margins=REPORT_MARGINS)
    axes.step(values, ranks / total, where="post")
    for percent, style in ((50, "--"), (99, ":")):
        value = latency[f"p{percent}"]
        mark_value(
            axes, value, f"p{percent} ≈ {value:,.1f} ms", style, 0.06 + 0.1 * (percent == 99)
        )
    axes.set_title(
        f"Latency of every first receipt ({total:,} message × node pairs, from a histogram)"
    )
    axes.set_xlabel("time from publish to a node's first receipt (ms, within 0.4 %)")
    axes.set_ylabel("fraction of first receipts")
    return save(figure, path)
