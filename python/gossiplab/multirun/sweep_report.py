"""A sweep's report.html: the points table, metric-vs-parameter plots and overlays.

It is built from the points table and the points' results folders, so it can always be
rebuilt; its figures are kept as PNGs under plots/ beside it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

import polars as pl

from gossiplab.analysis.digest import RunDigest, load_digest
from gossiplab.analysis.headline import BY_KEY, KEY_METRICS, format_value
from gossiplab.analysis.partial_study import load_study
from gossiplab.analysis.results import PLOTS_DIR, REPORT_FILE, replace_file
from gossiplab.multirun.trends import MAX_LINES, metric_trends
from gossiplab.report.overlays import dissemination_overlay, receipt_latency_overlay
from gossiplab.report.pages import (
    Block,
    Cell,
    Code,
    Figure,
    Link,
    Section,
    Table,
    Text,
    render_page,
)
from gossiplab.report.partial_study_report import partial_study_section

if TYPE_CHECKING:
    from gossiplab.multirun.sweep import PointResult, SweepPlan

MAX_OVERLAID = 16


def point_href(folder: str) -> str:
    """A relative link to a point's report; '%' in folder names must itself be escaped."""
    return quote(folder, safe="=,.+-_@{}[]") + "/" + REPORT_FILE


def points_rows(
    table: pl.DataFrame, columns: Sequence[str], metrics: Sequence[str] = KEY_METRICS
) -> list[list[Cell]]:
    """Rows of the points table as shown: the point (linked), given columns, status, metrics."""
    rows: list[list[Cell]] = []
    for row in table.iter_rows(named=True):
        ok = row["status"] == "ok"
        point: Cell = Link(row["point"], point_href(row["point"])) if ok else row["point"]
        cells: list[Cell] = [point, *(_cell(row[c]) for c in columns)]
        cells.append("ok" if ok else "failed")
        cells += [format_value(row[key], BY_KEY[key].format) for key in metrics]
        rows.append(cells)
    return rows


def _cell(value: object) -> str:
    return "" if value is None else str(value)


def load_ok_digests(
    out_dir: Path, results: Sequence[PointResult], label: str = "folder"
) -> list[RunDigest]:
    """Digests of the points that ran, labelled by folder or by their ``label`` entry."""
    digests = []
    for result in results:
        if result.status != "ok":
            continue
        name = result.point.folder if label == "folder" else result.point.labels[label]
        digests.append(load_digest(out_dir / result.point.folder, name))
    return digests


def failures_table(results: Sequence[PointResult]) -> Table | None:
    failed = [r for r in results if r.status == "failed"]
    if not failed:
        return None
    return Table(
        ["point", "reason"],
        [[r.point.folder, r.reason] for r in failed],
        caption=f"{len(failed)} point(s) failed; they run again the next time the sweep runs",
        numeric_from=2,
    )


def render_sweep_report(
    out_dir: Path, plan: SweepPlan, results: Sequence[PointResult], table: pl.DataFrame
) -> Path:
    plots = out_dir / PLOTS_DIR
    keys = list(dict.fromkeys(k for r in results for k in r.point.assignments))
    ok = sum(r.status == "ok" for r in results)
    sections = [
        Section(
            "Points",
            [
                Text(
                    "One row per point; each point's name links to its own report. The full "
                    "table, with every headline metric, is points.csv / points.parquet."
                ),
                Table(
                    ["point", *keys, "status", *(BY_KEY[k].label for k in KEY_METRICS)],
                    points_rows(table, keys),
                    numeric_from=len(keys) + 2,
                ),
            ],
        ),
        *_partial_sections(out_dir, results, plots),
        Section("Metrics vs parameters", _trend_blocks(table, keys, plots)),
        Section("Overlays", _overlay_blocks(out_dir, results, plots)),
    ]
    failures = failures_table(results)
    if failures is not None:
        sections.append(Section("Failed points", [failures]))
    sections.append(Section("Sweep file", [Code(plan.text)]))
    html = render_page(
        f"gossiplab sweep — {plan.name}",
        sections,
        header=[
            ("Sweep file", str(plan.source)),
            ("Points", f"{len(results)} ({ok} ok, {len(results) - ok} failed)"),
            ("Swept fields", ", ".join(keys)),
        ],
    )
    path = out_dir / REPORT_FILE
    replace_file(path, html)
    return path


def _partial_sections(out_dir: Path, results: Sequence[PointResult], plots: Path) -> list[Section]:
    """The full-vs-partial comparison, when the points send partial messages."""
    runs = load_study(out_dir / r.point.folder for r in results if r.status == "ok")
    section = partial_study_section(runs, plots)
    return [] if section is None else [section]


def _trend_blocks(table: pl.DataFrame, keys: list[str], plots: Path) -> list[Block]:
    blocks: list[Block] = []
    for key in keys:
        others = [k for k in keys if k != key]
        png = metric_trends(table, key, others, plots / f"trend_{_file_safe(key)}.png")
        caption = f"Headline metrics of every point against {key}"
        caption += f", one line per combination of {', '.join(others)}." if others else "."
        caption += " Read how each metric responds as the field changes; gaps are failed points."
        no_data = (
            f"more than {MAX_LINES} combinations of the other fields: see the points table"
            if others
            else "no point finished"
        )
        blocks.append(Figure(f"Metrics vs {key}", caption, png, no_data=no_data))
    return blocks


def _overlay_blocks(out_dir: Path, results: Sequence[PointResult], plots: Path) -> list[Block]:
    ok = [r for r in results if r.status == "ok"]
    if len(ok) > MAX_OVERLAID:
        return [Text(f"{len(ok)} points are too many to overlay on one figure; see the trends.")]
    digests = load_ok_digests(out_dir, ok)
    return [
        Figure(
            "Dissemination time, all points",
            "Left: histogram of each point's dissemination times (shared bins). Right: their "
            "CDFs over all measured messages; a curve ending below 1 means undelivered "
            "messages. Curves further left are faster.",
            dissemination_overlay(digests, plots / "overlay_dissemination.png"),
        ),
        Figure(
            "Per-receipt latency, all points",
            "CDF of every first receipt's latency per point: the typical node's experience.",
            receipt_latency_overlay(digests, plots / "overlay_receipt_latency.png"),
        ),
    ]


def _file_safe(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)
