"""A campaign's report.html: the series table, trends across series, overlays per series.

The page follows the published report it reproduces: first the table of every case
(delivery ratio, dissemination p50 / p99 / max, mean last delivery hop), then for each
series its cases' dissemination-time histograms and CDFs overlaid on one figure, and
their hop distributions. Cases that failed are listed with the reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from gossiplab.analysis.digest import load_digest
from gossiplab.analysis.results import PLOTS_DIR, REPORT_FILE, replace_file
from gossiplab.multirun.campaign import (
    CampaignPlan,
    Series,
    parameter_text,
    series_header,
    series_text_rows,
    short_names,
)
from gossiplab.multirun.sweep import PointResult, points_table
from gossiplab.multirun.trends import metric_trends
from gossiplab.report.overlays import dissemination_overlay, hops_overlay
from gossiplab.report.pages import Block, Code, Figure, Section, Table, Text, render_page


def render_campaign_report(
    out_dir: Path, plan: CampaignPlan, results: Sequence[PointResult], table: pl.DataFrame
) -> Path:
    plots = out_dir / PLOTS_DIR
    ok = sum(r.status == "ok" for r in results)
    sections = [
        Section(
            "Series table",
            [
                Text(
                    "One row per case, as in the published report. Columns "
                    + ", ".join(
                        f"{short} = {key}"
                        for short, key in zip(
                            short_names(plan.parameters), plan.parameters, strict=True
                        )
                    )
                    + ". Delivery is the delivery ratio; p50, p99 and max are the "
                    "dissemination time, from publish until the last node had the message "
                    "(fully delivered messages only); LDH is the mean last delivery hop, the "
                    "hop count of that last node's copy. The same table is in series.csv and "
                    "series.md; points.csv adds every headline metric."
                ),
                Table(
                    series_header(plan.parameters, short=True),
                    series_text_rows(table, plan.parameters, titles_once=True),
                    numeric_from=2 + len(plan.parameters),
                ),
            ],
        ),
        Section("Across series", _across_series(plan, results, plots)),
    ]
    for series in plan.series:
        members = [r for r in results if r.point.labels["series"] == series.id]
        sections.append(
            Section(_series_heading(series), _series_blocks(out_dir, plan, series, members))
        )
    sections.append(Section("Campaign file", [Code(plan.text)]))
    html = render_page(
        f"gossiplab campaign — {plan.name}",
        sections,
        header=[
            ("Campaign file", str(plan.source)),
            ("Base scenario", str(plan.base)),
            ("Cases", f"{len(results)} ({ok} ran, {len(results) - ok} failed)"),
        ],
        intro=plan.description,
    )
    path = out_dir / REPORT_FILE
    replace_file(path, html)
    return path


def _series_heading(series: Series) -> str:
    return f"Series {series.id}" + (f" — {series.title}" if series.title else "")


def _across_series(plan: CampaignPlan, results: Sequence[PointResult], plots: Path) -> list[Block]:
    table = points_table(results)
    if plan.x not in table.columns:
        return [Text(f"No series varies {plan.x}: nothing to draw across series.")]
    # A series whose cases share one value of x (the bandwidth series, all at m = 6) would
    # draw as a vertical stack of points: leave it to its own section.
    varying = table.group_by("series").agg(pl.col(plan.x).n_unique().alias("values"))
    drawn = set(varying.filter(pl.col("values") > 1)["series"].to_list())
    left_out = [s for s in plan.series if s.id not in drawn]
    titles = {s.id: _series_heading(s) for s in plan.series}

    def label(key: tuple[Any, ...]) -> str:
        return titles[str(key[0])]

    png = metric_trends(
        table.filter(pl.col("series").is_in(drawn)),
        plan.x,
        ["series"],
        plots / "across_series.png",
        group_label=label,
    )
    caption = (
        f"Each headline metric against {plan.x}, one line per series: how the topology's "
        "connectivity changes delivery, speed, path length and redundancy under each network "
        "condition. Gaps are cases that failed."
    )
    if left_out:
        caption += " Not drawn (their cases do not vary " + plan.x + "): "
        caption += ", ".join(_series_heading(s) for s in left_out) + "."
    return [Figure(f"Metrics vs {plan.x}, all series", caption, png, no_data="no case finished")]


def _series_blocks(
    out_dir: Path, plan: CampaignPlan, series: Series, members: Sequence[PointResult]
) -> list[Block]:
    blocks: list[Block] = []
    failed = [r for r in members if r.status == "failed"]
    if failed:
        reasons: dict[str, list[str]] = {}
        for r in failed:
            reasons.setdefault(r.reason, []).append(r.point.labels["case"])
        for reason, cases in reasons.items():
            blocks.append(
                Text(
                    f"Not run: {', '.join(cases)} failed: {reason}. "
                    "They run again the next time the campaign runs."
                )
            )
    ran = [r for r in members if r.status == "ok"]
    if not ran:
        return blocks or [Text("No case of this series has run yet.")]
    varied = [k for k in plan.parameters if len({parameter_text(r.point, k) for r in members}) > 1]
    digests = [load_digest(out_dir / r.point.folder, _case_label(r, varied)) for r in ran]
    slug = series.id
    blocks.append(
        Figure(
            f"Series {series.id}: dissemination time of each case",
            "Left: histograms of the dissemination time of every fully delivered message, one "
            "outline per case on shared bins (the published report's overlay). Right: the "
            "same as CDFs over every measured message; a curve that ends below 1 shows "
            "messages that did not reach every node.",
            dissemination_overlay(
                digests, out_dir / PLOTS_DIR / f"series_{slug}_dissemination.png"
            ),
        )
    )
    blocks.append(
        Figure(
            f"Series {series.id}: last delivery hop and maximum hop",
            "Share of messages by the hop count of the last node reached (left) and of the "
            "deepest node reached (right), per case. Denser topologies shift the bars left.",
            hops_overlay(digests, out_dir / PLOTS_DIR / f"series_{slug}_hops.png"),
        )
    )
    return blocks


def _case_label(result: PointResult, varied: Sequence[str]) -> str:
    values = ", ".join(f"{k.split('.')[-1]} = {parameter_text(result.point, k)}" for k in varied)
    case = result.point.labels["case"]
    return f"{case} ({values})" if values else case
