"""Matplotlib helpers shared by every figure module (one run, overlays, trends).

Figures are drawn on ``matplotlib.figure.Figure`` objects, never through pyplot, so
nothing here switches the process-wide backend under a notebook that imports gossiplab;
saving a Figure to .png renders it with Agg.

A run's report draws on fixed margins (``REPORT_MARGINS``): constrained layout measures
every label of a figure before drawing it, which costs as much again as the drawing, and
the report's labels are short enough for fixed room. Figures whose legends and labels vary
with what is shown (overlays, trends, the drops by reason) keep constrained layout.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
from matplotlib import colormaps
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from gossiplab.analysis.ranks import nearest_rank

DPI = 110
FIGURE_SIZE = (7.5, 4.2)
WIDE_SIZE = (10.0, 4.2)
CDF_POINTS = 2000
"""Enough points for a smooth CDF; millions of receipts are thinned to this many ranks."""
BYTE_UNITS = (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10), ("B", 1))
ACCENT = "#c44e52"
BAR = "#4c72b0"
QUALITATIVE_LIMIT = 10
"""Up to this many series get tab10's distinct colours; more get an ordered colour map."""
PNG_COMPRESSION = 3
"""zlib level of the PNGs: a quarter faster to write than Pillow's 6, files 5-12% larger."""
LABEL_FLIP = 0.8
"""A line's label goes left of it beyond this share of the x axis, so it stays inside."""


@dataclass(frozen=True)
class Margins:
    """Fixed room around and between the axes, in inches (see the module's docstring).

    Left: the y label and tick labels of up to six digits; right: half of a last x tick
    label; bottom: tick labels and the x label; top: the title.
    """

    left: float = 0.85
    right: float = 0.3
    bottom: float = 0.52
    top: float = 0.32
    between_columns: float = 0.95
    between_rows: float = 0.9

    def apply(self, figure: Figure, rows: int, columns: int) -> None:
        width, height = figure.get_size_inches()
        axes_width = (
            width - self.left - self.right - (columns - 1) * self.between_columns
        ) / columns
        axes_height = (height - self.bottom - self.top - (rows - 1) * self.between_rows) / rows
        figure.subplots_adjust(
            left=self.left / width,
            right=1 - self.right / width,
            bottom=self.bottom / height,
            top=1 - self.top / height,
            wspace=self.between_columns / axes_width,
            hspace=self.between_rows / axes_height,
        )


REPORT_MARGINS = Margins()


def new_figure(
    size: tuple[float, float] = FIGURE_SIZE, margins: Margins | None = None
) -> tuple[Figure, Axes]:
    figure, (axes,) = new_panels(1, size=size, margins=margins)
    return figure, axes


def new_panels(
    columns: int,
    rows: int = 1,
    size: tuple[float, float] = WIDE_SIZE,
    margins: Margins | None = None,
) -> tuple[Figure, list[Axes]]:
    """A figure with a grid of axes: constrained layout, or ``margins`` when given."""
    figure = Figure(figsize=size, layout="constrained" if margins is None else None)
    if margins is not None:
        margins.apply(figure, rows, columns)
    grid = figure.subplots(rows, columns, squeeze=False)
    panels = [axes for row in grid for axes in row]
    for axes in panels:
        axes.grid(alpha=0.3)
    return figure, panels


def save(figure: Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=DPI, pil_kwargs={"compress_level": PNG_COMPRESSION})
    return path


def warm_up() -> None:
    """Draw a throwaway figure, so that fonts and mathtext are loaded before real ones."""
    figure, axes = new_figure(margins=REPORT_MARGINS)
    axes.bar([0, 1], [10, 1000], color=BAR)
    axes.set_yscale("log")  # log tick labels are mathtext
    axes.set_title("warm-up")
    figure.savefig(io.BytesIO(), format="png", dpi=DPI)


def series_colours(count: int) -> list[tuple[float, float, float, float]]:
    """Distinct colours for a few series; an ordered map (sweep order) for many."""
    if count <= QUALITATIVE_LIMIT:
        tab10 = colormaps["tab10"]
        return [tab10(i) for i in range(count)]
    viridis = colormaps["viridis"]
    return [viridis(i / max(count - 1, 1)) for i in range(count)]


def bin_count(values: int) -> int:
    return min(60, max(5, math.isqrt(values)))


def thinned_ranks(count: int) -> np.ndarray:
    """1-based ranks of a sorted series of ``count`` values, at most CDF_POINTS of them."""
    if count <= CDF_POINTS:
        return np.arange(1, count + 1)
    return np.unique(np.linspace(1, count, CDF_POINTS).round().astype(np.int64))


def draw_cdf(
    axes: Axes,
    ordered: pl.Series,
    *,
    total: int,
    label: str | None = None,
    colour: object = None,
) -> None:
    """Step CDF of ascending values, as a share of ``total``, thinned to CDF_POINTS ranks."""
    ranks = thinned_ranks(ordered.len())
    values = ordered.gather(ranks - 1).to_numpy()
    axes.step(values, ranks / total, where="post", label=label, color=colour)


def mark_percentiles(
    axes: Axes, ordered: pl.Series, percents: Sequence[int], *, label_y: float = 0.06
) -> None:
    """Vertical lines at the percentiles of an ascending series, labelled with their values.

    Labels sit right of their line at height ``label_y`` (axes fraction): low for a CDF,
    whose area below the curve right of a percentile is empty, high for a histogram.
    """
    step = 0.1 if label_y < 0.5 else -0.1
    for row, (percent, style) in enumerate(zip(percents, ("--", ":"), strict=False)):
        value = nearest_rank(ordered, percent)
        mark_value(axes, value, f"p{percent} = {value:,.1f} ms", style, label_y + step * row)


def mark_value(axes: Axes, value: float, label: str, style: str, label_y: float) -> None:
    """A vertical line at ``value`` labelled at height ``label_y`` (axes fraction), right of
    the line, or left of it near the right end of the axis."""
    axes.axvline(value, color=ACCENT, linestyle=style, linewidth=1)
    low, high = axes.get_xlim()
    left = value > low + LABEL_FLIP * (high - low)
    axes.annotate(
        label,
        xy=(value, label_y),
        xycoords=axes.get_xaxis_transform(),
        xytext=(-4 if left else 4, 0),
        textcoords="offset points",
        horizontalalignment="right" if left else "left",
        color=ACCENT,
        bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 1},
    )


def byte_unit(count: int) -> tuple[str, int]:
    """The largest binary unit (and its size in bytes) that ``count`` bytes fill at least once."""
    return next((unit, size) for unit, size in BYTE_UNITS if count >= size or size == 1)
