"""Metric-vs-parameter figures: how the headline metrics move along one swept field.

One figure per swept field: a panel per metric, the field's values along x (at their
numeric positions when they are numbers, evenly spaced in sweep order otherwise), one
line per combination of the other swept fields. Failed points leave gaps.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from gossiplab.analysis.headline import BY_KEY, KEY_METRICS
from gossiplab.report.drawing import new_panels, save, series_colours

PANEL_COLUMNS = 3
MAX_LINES = 12
"""More combinations than this would make a figure nobody can read; they are not drawn."""


def metric_trends(
    table: pl.DataFrame,
    x: str,
    group_by: Sequence[str],
    path: Path,
    metrics: Sequence[str] = KEY_METRICS,
    group_label: Callable[[tuple[Any, ...]], str] | None = None,
) -> Path | None:
    """Metrics of the ok points against column ``x``, one line per ``group_by`` combination."""
    if x not in table.columns:
        return None
    table = table.filter(pl.col(x).is_not_null())
    if table.filter(pl.col("status") == "ok").is_empty():
        return None
    groups = _groups(table, group_by, group_label)
    if len(groups) > MAX_LINES:
        return None
    numeric = table[x].dtype.is_numeric()
    order = table[x].unique(maintain_order=True).to_list()
    position = {value: (value if numeric else i) for i, value in enumerate(order)}
    rows = -(-len(metrics) // PANEL_COLUMNS)
    figure, panels = new_panels(PANEL_COLUMNS, rows, size=(11.0, 3.3 * rows))
    colours = series_colours(len(groups))
    for axes, key in zip(panels, metrics, strict=False):
        metric = BY_KEY[key]
        for (label, members), colour in zip(groups, colours, strict=True):
            points = members.filter(pl.col("status") == "ok").drop_nulls(key)
            if points.is_empty():
                continue
            xs = np.array([position[v] for v in points[x].to_list()], dtype=float)
            axes.plot(xs, points[key].to_numpy(), marker="o", color=colour, label=label)
        axes.set_title(metric.label, fontsize="medium")
        # Ticks at the swept values themselves: a sweep of m over 2, 6, 12, 16 reads
        # better than a generic 2.5, 5.0, 7.5 axis.
        ticks = [position[v] for v in order] if numeric else list(range(len(order)))
        axes.set_xticks(ticks, [str(v) for v in order])
        axes.set_xlabel(x)
    for axes in panels[len(metrics) :]:
        axes.set_visible(False)
    if any(label for label, _ in groups):
        figure.legend(
            *panels[0].get_legend_handles_labels(),
            loc="outside lower center",
            ncols=min(4, len(groups)),
            fontsize="small",
        )
    return save(figure, path)


def _groups(
    table: pl.DataFrame,
    group_by: Sequence[str],
    group_label: Callable[[tuple[Any, ...]], str] | None,
) -> list[tuple[str, pl.DataFrame]]:
    if not group_by:
        return [("", table)]
    groups = []
    for key, members in table.group_by(list(group_by), maintain_order=True):
        if group_label is not None:
            label = group_label(key)
        else:
            label = ", ".join(f"{k} = {v}" for k, v in zip(group_by, key, strict=True))
        groups.append((label, members))
    return groups
