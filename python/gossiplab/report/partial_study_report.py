"""The partial-message section of a sweep's report: what cell-level dissemination saves.

Shown when the sweep's points send partial messages (``[workload.partial]``). It answers
"how much time and bandwidth do partial messages save against full messages, and at what
mempool coverage does it stop mattering?" with the study table of
``analysis.partial_study``, two figures and the coverages at which the savings pass
``MATTERS``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl
from matplotlib import colormaps

from gossiplab.analysis.headline import format_bytes
from gossiplab.analysis.partial_study import (
    EAGER,
    FULL,
    MATTERS,
    MODES,
    PARTIAL,
    StudyRun,
    coverage_where_it_matters,
    study_table,
)
from gossiplab.report.drawing import new_panels, save
from gossiplab.report.pages import Block, Figure, Section, Table, Text
from gossiplab.report.partial_plots import draw_completion, end_of_curves

TITLE = "Partial messages against full messages"
MODE_STYLE = {FULL: ("#555555", "-"), PARTIAL: ("#4c72b0", "--"), EAGER: ("#c44e52", ":")}


def partial_study_section(runs: Sequence[StudyRun], plots: Path) -> Section | None:
    """The section, or None when no point sends partial messages."""
    if not runs:
        return None
    table = study_table(runs)
    largest = max(run.parts for run in runs)
    blocks: list[Block] = [
        Text(
            "Every point's groups, over (group, node) pairs: the share of pairs whose node "
            "ended up holding every part, the time from publish until it did (p50, p99, max; "
            '"never" when that rank never completed), and the bytes a node received for the '
            "groups (full messages, parts, parts metadata, IHAVE/IWANT/IDONTWANT; mesh upkeep "
            "left out). Savings compare each partial point with the full-message point of "
            "the same blob count and coverage: positive is faster or lighter."
        ),
        *_answer(table),
        Table(_HEADER, _rows(table), numeric_from=3),
        Figure(
            "Completion time and bytes against mempool coverage",
            "Top: p99 of the time until a node holds every part of a group; bottom: bytes a "
            "node received for the groups; one panel per blob count, one line per mode "
            "(grey: full messages, a level line when they ran at one coverage only; blue "
            "dashed: partial messages; red dotted: partial messages with eager push). A "
            "missing point never reached p99.",
            savings_figure(table, plots / "partial_savings.png"),
        ),
        Figure(
            f"Completion over time, {largest} blobs",
            "The share of (group, node) pairs holding every part against the time since "
            "publish: one panel per partial mode, one curve per mempool coverage from purple "
            "(p = 0) to yellow (p = 1), and full messages (black dashed) on each, which do "
            "not depend on the coverage: a node without the extension cannot use its "
            "mempool.",
            completion_figure(
                [r for r in runs if r.parts == largest], plots / "partial_completion.png"
            ),
        ),
    ]
    return Section(TITLE, blocks)


_HEADER = [
    "blobs",
    "coverage p",
    "mode",
    "complete",
    "p50 (ms)",
    "p99 (ms)",
    "max (ms)",
    "bytes / node",
    "p99 saved (ms)",
    "bytes saved",
]


def _rows(table: pl.DataFrame) -> list[list[str]]:
    return [
        [
            str(row["parts"]),
            _number(row["coverage"], "{:g}"),
            str(row["mode"]),
            _number(row["complete_share"], "{:.2%}"),
            _ms(row["completion_p50_ms"]),
            _ms(row["completion_p99_ms"]),
            _ms(row["completion_max_ms"]),
            format_bytes(int(row["group_bytes_per_node"])),
            _number(row["p99_saved_ms"], "{:+,.1f}"),
            _number(row["bytes_saved_share"], "{:+.1%}"),
        ]
        for row in table.iter_rows(named=True)
    ]


def _ms(value: float | None) -> str:
    return "never" if value is None else f"{value:,.1f}"


def _number(value: float | None, pattern: str) -> str:
    return "" if value is None else pattern.format(value)


def _answer(table: pl.DataFrame) -> list[Block]:
    """Per blob count and mode, the coverages at which partial messages save at least
    MATTERS of the bytes and of the p99 completion time, and where they are slower."""
    where = coverage_where_it_matters(table)
    if where.is_empty():
        return []
    rows = [
        [
            str(row["parts"]),
            str(row["mode"]),
            _coverages(row["bytes_from"]),
            _coverages(row["time_from"]),
            _coverages(row["slower_at"]),
        ]
        for row in where.iter_rows(named=True)
    ]
    text = (
        f"Where it matters: the mempool coverages at which partial messages save at least "
        f"{MATTERS:.0%} of a node's bytes, or of the p99 completion time, against full "
        f"messages; and where their p99 is at least {MATTERS:.0%} later."
    )
    header = [
        "blobs",
        "mode",
        "bytes saved ≥ 10% at p =",
        "p99 faster ≥ 10% at p =",
        "p99 slower ≥ 10% at p =",
    ]
    return [Text(text), Table(header, rows, numeric_from=5)]


def _coverages(values: Sequence[float]) -> str:
    return ", ".join(f"{v:g}" for v in values) if values else "none"


def savings_figure(table: pl.DataFrame, path: Path) -> Path | None:
    measured = table.filter(pl.col("coverage").is_not_null())
    if measured.is_empty():
        return None
    blobs = sorted(set(measured["parts"].to_list()))
    figure, panels = new_panels(len(blobs), rows=2, size=(3.0 * len(blobs) + 1.0, 6.4))
    for column, parts in enumerate(blobs):
        time_axes, bytes_axes = panels[column], panels[len(blobs) + column]
        for mode in MODES:
            points = measured.filter((pl.col("parts") == parts) & (pl.col("mode") == mode))
            if points.is_empty():
                continue
            colour, style = MODE_STYLE[mode]
            if mode == FULL and points.height == 1:
                # One full-message run: it does not depend on the coverage, so a level line.
                row = points.row(0, named=True)
                level = {"color": colour, "linestyle": style, "label": mode}
                if row["completion_p99_ms"] is not None:
                    time_axes.axhline(row["completion_p99_ms"], **level)  # type: ignore[arg-type]
                bytes_axes.axhline(row["group_bytes_per_node"] / 1024, **level)  # type: ignore[arg-type]
                continue
            style_kw = {"color": colour, "linestyle": style, "marker": "o", "label": mode}
            coverage = points["coverage"].to_numpy()
            p99 = points["completion_p99_ms"].to_numpy().astype(float)  # never: NaN, a gap
            time_axes.plot(coverage, p99, **style_kw)  # type: ignore[arg-type]
            kib = points["group_bytes_per_node"].to_numpy() / 1024
            bytes_axes.plot(coverage, kib, **style_kw)  # type: ignore[arg-type]
        time_axes.set_title(f"{parts} blobs")
        time_axes.set_ylim(bottom=0)
        bytes_axes.set_ylim(bottom=0)
        bytes_axes.set_xlabel("mempool coverage p")
    panels[0].set_ylabel("completion p99 (ms)")
    panels[len(blobs)].set_ylabel("bytes received per node (KiB)")
    figure.legend(
        *panels[0].get_legend_handles_labels(), loc="outside lower center", ncols=len(MODES)
    )
    return save(figure, path)


def completion_figure(runs: Sequence[StudyRun], path: Path) -> Path | None:
    """One panel per partial mode, one curve per coverage, the full-message run of the
    same blob count drawn on each as the reference (black dashed)."""
    if not any(r.curve.complete for r in runs):
        return None
    modes = [mode for mode in (PARTIAL, EAGER) if any(r.mode == mode for r in runs)] or [FULL]
    full = [r for r in runs if r.mode == FULL]
    figure, panels = new_panels(len(modes), size=(4.6 * len(modes) + 1.0, 4.4))
    coverages = sorted({r.coverage for r in runs if r.coverage is not None and r.mode != FULL})
    colours = dict(zip(coverages, _ordered_colours(len(coverages)), strict=True))
    end = end_of_curves([r.curve for r in runs])
    for axes, mode in zip(panels, modes, strict=True):
        for run in full[:1]:
            style = {"color": "black", "linestyle": "--", "linewidth": 1.6}
            draw_completion(axes, run.curve, end, label="full messages", **style)  # type: ignore[arg-type]
        for run in sorted((r for r in runs if r.mode == mode and mode != FULL), key=_by_coverage):
            label = "p = ?" if run.coverage is None else f"p = {run.coverage:g}"
            colour = colours.get(run.coverage, "#555555")  # type: ignore[arg-type]
            draw_completion(axes, run.curve, end, color=colour, label=label)
        axes.set_title(mode if mode == FULL else f"{mode} messages against full messages")
        axes.set_ylim(0, 1.02)
        axes.set_xlim(left=0)
        axes.set_xlabel("time from publish (ms)")
        axes.legend(loc="lower right", fontsize="small")
    panels[0].set_ylabel("share of (group, node) pairs complete")
    return save(figure, path)


def _by_coverage(run: StudyRun) -> float:
    return -1.0 if run.coverage is None else run.coverage


def _ordered_colours(count: int) -> list[tuple[float, float, float, float]]:
    """Colours along viridis for ordered values (coverage), whatever their number."""
    viridis = colormaps["viridis"]
    return [viridis(i / max(count - 1, 1)) for i in range(count)]
