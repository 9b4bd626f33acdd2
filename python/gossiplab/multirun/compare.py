"""`gossiplab compare DIR...`: several runs side by side.

The output folder holds compare.html (overlays of the runs' distributions on shared
axes, and a table of headline metrics with one column per run), headline.csv (the same
table) and the figures as PNGs under plots/. A DIR may also be a sweep's or campaign's
folder: it stands for all of its finished points.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from gossiplab.analysis.digest import RunDigest, load_digest
from gossiplab.analysis.headline import HEADLINE
from gossiplab.analysis.results import PLOTS_DIR, SUMMARY_FILE
from gossiplab.errors import GossiplabError
from gossiplab.report.overlays import (
    bytes_per_node_overlay,
    dissemination_overlay,
    duplicates_overlay,
    hops_overlay,
    reach_overlay,
    receipt_latency_overlay,
)
from gossiplab.report.pages import Figure, Section, Table, Text, render_page

COMPARE_FILE = "compare.html"
HEADLINE_CSV = "headline.csv"
POINTS_PARQUET = "points.parquet"
RESULTS_ROOT = Path("results")


class CompareError(GossiplabError):
    """Runs that cannot be compared as given."""


@dataclass(frozen=True)
class RunRef:
    folder: Path
    label: str


def expand_runs(dirs: Sequence[Path], labels: Sequence[str] | None = None) -> list[RunRef]:
    """The runs to compare: results folders as given, sweep folders as their finished points."""
    if labels and len(labels) != len(dirs):
        raise CompareError(
            f"{len(labels)} --label value(s) for {len(dirs)} folder(s); give one label per folder"
        )
    refs: list[RunRef] = []
    for i, folder in enumerate(map(Path, dirs)):
        if (folder / SUMMARY_FILE).is_file():
            refs.append(RunRef(folder, labels[i] if labels else _default_label(folder, dirs)))
        elif (folder / POINTS_PARQUET).is_file():
            points = pl.read_parquet(folder / POINTS_PARQUET).filter(pl.col("status") == "ok")
            prefix = f"{labels[i]}: " if labels else ""
            label_column = "case" if "case" in points.columns else "point"
            refs += [
                RunRef(folder / point, prefix + label)
                for point, label in zip(points["point"], points[label_column], strict=True)
            ]
        elif folder.is_dir():
            raise CompareError(
                f"{folder} is neither a results folder (no {SUMMARY_FILE}) nor a sweep folder "
                f"(no {POINTS_PARQUET}); give folders written by `run`, `sweep` or `campaign`"
            )
        else:
            raise CompareError(f"{folder} does not exist; check the path")
    if len(refs) < 2:
        raise CompareError(
            f"compare needs at least two runs, got {len(refs)}; give two or more results folders"
        )
    return refs


def _default_label(folder: Path, dirs: Sequence[Path]) -> str:
    # The folder's name, unless two runs share it (results/a/run and results/b/run).
    names = [Path(d).name for d in dirs]
    if names.count(folder.name) > 1:
        return f"{folder.parent.name}/{folder.name}"
    return folder.name


def default_compare_dir(now: dt.datetime | None = None) -> Path:
    stamp = (now or dt.datetime.now(dt.UTC)).strftime("%Y%m%d-%H%M%S")
    return RESULTS_ROOT / f"compare-{stamp}"


def headline_table(digests: Sequence[RunDigest]) -> pl.DataFrame:
    """One row per headline metric, one column per run (values as formatted for people)."""
    columns: dict[str, list[str]] = {
        "metric": [m.key for m in HEADLINE],
        "label": [m.label for m in HEADLINE],
    }
    for digest in digests:
        columns[_unique(digest.label, columns)] = [m.text(digest.summary) for m in HEADLINE]
    return pl.DataFrame(columns)


def _unique(label: str, taken: dict[str, list[str]]) -> str:
    name, n = label, 2
    while name in taken:
        name, n = f"{label} ({n})", n + 1
    return name


def compare_runs(
    dirs: Sequence[Path],
    out_dir: Path | None = None,
    *,
    labels: Sequence[str] | None = None,
    force: bool = False,
    on_loaded: Callable[[RunRef], None] | None = None,
) -> Path:
    """Write the comparison of ``dirs`` into ``out_dir``; return the page's path."""
    refs = expand_runs(dirs, labels)
    target = Path(out_dir) if out_dir is not None else default_compare_dir()
    if target.exists() and not force:
        raise CompareError(f"{target} already exists; pass --force to replace it or choose -o")
    digests = []
    for ref in refs:
        digests.append(load_digest(ref.folder, ref.label))
        if on_loaded is not None:
            on_loaded(ref)
    # Assembled beside the target and renamed into place, as results folders are.
    partial = target.parent / f".{target.name}.partial-{os.getpid()}"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    try:
        _write(partial, digests)
        if target.exists():
            shutil.rmtree(target)
        partial.rename(target)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return target / COMPARE_FILE


def _write(folder: Path, digests: Sequence[RunDigest]) -> None:
    table = headline_table(digests)
    table.write_csv(folder / HEADLINE_CSV)
    plots = folder / PLOTS_DIR
    runs = [d.label for d in digests]
    rows = [[row[1], *row[2:]] for row in table.iter_rows()]
    figures = [
        Figure(
            "Dissemination time",
            "Left: each run's dissemination times on shared bins (fully delivered messages). "
            "Right: the CDFs over every measured message, so a curve that ends below 1 shows "
            "messages that did not reach everyone. The run whose curve is further left is "
            "faster; a longer tail means more slow messages.",
            dissemination_overlay(digests, plots / "dissemination.png"),
        ),
        Figure(
            "Time to reach 99% of the nodes",
            "CDF over messages of the time until 99% of the other subscribers had them: "
            "dissemination without the last stragglers.",
            reach_overlay(digests, plots / "reach_99.png", percent=99),
        ),
        Figure(
            "Per-receipt latency",
            "CDF of the latency of every (message, node) first receipt: the typical node.",
            receipt_latency_overlay(digests, plots / "receipt_latency.png"),
        ),
        Figure(
            "Last delivery hop and maximum hop",
            "Share of messages by hop count of the last node reached (left) and of the deepest "
            "node reached (right). Bars further left mean shorter paths.",
            hops_overlay(digests, plots / "hops.png"),
        ),
        Figure(
            "Duplicates",
            "Share of (message, node) pairs by number of duplicate copies received: the cost "
            "side of gossipsub's redundancy.",
            duplicates_overlay(digests, plots / "duplicates.png"),
        ),
        Figure(
            "Bytes sent per node",
            "Bytes each node sent over its run, all message kinds, nodes ranked from most to "
            "least: how evenly the load is spread.",
            bytes_per_node_overlay(digests, plots / "bytes_per_node.png"),
        ),
    ]
    html = render_page(
        f"gossiplab compare — {len(digests)} runs",
        [
            Section(
                "Headline metrics",
                [
                    Text("One column per run; headline.csv holds the same table."),
                    Table(["metric", *runs], rows),
                ],
            ),
            Section("Overlays", figures),
            Section(
                "Runs",
                [Table(["label", "results folder"], [[d.label, str(d.folder)] for d in digests])],
            ),
        ],
    )
    (folder / COMPARE_FILE).write_text(html, encoding="utf-8")
