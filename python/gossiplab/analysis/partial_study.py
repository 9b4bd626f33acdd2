"""Full messages against partial messages across a sweep: what cell-level dissemination saves.

Each finished point of a sweep whose workload is partial messages is reduced to a
``StudyRun``: its blob count (parts per group), its mempool coverage (``p``), its mode
(``full``: ``enabled = false``, or no node but the publishers takes part, so every node
gets full copies; ``partial``; ``partial+eager``: parts pushed without waiting for a
request), its completion curve and percentiles over (group, node) pairs, and the bytes a
node received for the groups.

``study_table`` pairs every partial point with the full point of the same blob count and
coverage (or, when the sweep ran full messages at one coverage only, of the same blob
count) and gives what it saves: completion time at p50 and p99, and group bytes.
``coverage_where_it_matters`` turns that into the study's answer: per blob count and mode,
the coverages at which partial messages save at least ``MATTERS`` of the bytes or of the
p99 completion time.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from gossiplab.analysis.metrics import NS_PER_MS, distribution_with_losses, measure
from gossiplab.analysis.partial_curves import (
    GROUP_KINDS,
    CompletionCurve,
    bytes_received_by_kind,
    completion_curve,
    measured_pairs,
)
from gossiplab.analysis.results import SCENARIO_FILE, load_results
from gossiplab.analysis.tables import RunTables

FULL = "full"
PARTIAL = "partial"
EAGER = "partial+eager"
MODES: tuple[str, ...] = (FULL, PARTIAL, EAGER)
MATTERS = 0.10
"""A saving counts when it is at least this share of the full-message figure."""


@dataclass(frozen=True)
class StudyRun:
    """One point of a partial-message study, reduced to what the comparison needs."""

    folder: Path
    parts: int
    coverage: float | None
    """Mempool coverage p (each part held with probability p); None with ``missing = k``."""
    mode: str
    curve: CompletionCurve
    completion_ms: dict[str, Any]
    """count, reached, p50, p90, p95, p99, max over (group, node) pairs; None = never."""
    group_bytes_per_node: float
    """Mean bytes a node received of GROUP_KINDS over the run."""
    parts_from_network: int
    parts_held: int
    parts_dup: int


def point_mode(scenario: Mapping[str, Any]) -> tuple[str, int, float | None] | None:
    """(mode, parts, coverage) of a resolved scenario, or None without partial messages."""
    partial = scenario.get("workload", {}).get("partial")
    if not isinstance(partial, Mapping):
        return None
    roles = partial.get("roles", {})
    takes_part = float(roles.get("requests", 1.0)) + float(roles.get("supports", 0.0)) > 0
    # Disabled, or nobody but publishers taking part: every node gets full messages
    # (gossipsub.go:rpcs skips only peers that request partial messages).
    eager = bool(partial.get("eager_push"))
    full = not partial.get("enabled", True) or not takes_part
    mode = FULL if full else (EAGER if eager else PARTIAL)
    coverage = partial.get("mempool", {}).get("p")
    return mode, int(partial["parts"]), None if coverage is None else float(coverage)


def load_study_run(folder: Path) -> StudyRun | None:
    """Reduce a finished point; None when its scenario has no partial messages."""
    scenario = tomllib.loads((folder / SCENARIO_FILE).read_text(encoding="utf-8"))
    shape = point_mode(scenario)
    if shape is None:
        return None
    mode, parts, coverage = shape
    tables, run, _ = load_results(folder)
    if tables.partial is not None:
        pairs = measured_pairs(tables.partial, tables.publishes, run)
    else:  # enabled = false: full messages only, no partial table
        pairs = full_message_pairs(tables, run, parts)
    nodes = int(run["nodes"])
    group_bytes = sum(bytes_received_by_kind(tables.traffic, GROUP_KINDS).values())
    ms = distribution_with_losses(pairs["latency_ns"].cast(pl.Float64) / NS_PER_MS)
    return StudyRun(
        folder=folder,
        parts=parts,
        coverage=coverage,
        mode=mode,
        curve=completion_curve(pairs["latency_ns"], mode),
        completion_ms=ms,
        group_bytes_per_node=group_bytes / nodes if nodes else 0.0,
        parts_from_network=int(pairs["parts_recv"].cast(pl.Int64).sum()),
        parts_held=int(pairs["held"].cast(pl.Int64).sum()),
        parts_dup=int(pairs["parts_dup"].cast(pl.Int64).sum()),
    )


def full_message_pairs(tables: RunTables, run: Mapping[str, Any], parts: int) -> pl.DataFrame:
    """What ``measured_pairs`` gives, for a run of full messages only: each expected
    receiver of a measured message completes at its first receipt (null if none), holds
    nothing before and gets every part in that copy."""
    measured = measure(tables, run)
    received = measured.first_receipts.select("msg", "latency_ns")
    missing = measured.messages.select(
        "msg", missing=(pl.col("targets") - pl.col("delivered")).clip(lower_bound=0)
    )
    lost = missing.select(
        pl.col("msg").repeat_by("missing").explode(), latency_ns=pl.lit(None, pl.Int64)
    ).drop_nulls("msg")
    pairs = pl.concat([received, lost])
    got = pl.col("latency_ns").is_not_null().cast(pl.Int64)
    return pairs.with_columns(
        held=pl.lit(0, pl.Int64), parts_recv=got * parts, parts_dup=pl.lit(0, pl.Int64)
    )


def load_study(folders: Iterable[Path]) -> list[StudyRun]:
    """The partial-message points among ``folders`` (others are left out)."""
    runs = (load_study_run(Path(folder)) for folder in folders)
    return [run for run in runs if run is not None]


STUDY_SCHEMA: dict[str, pl.DataType] = {
    "parts": pl.Int64(),
    "coverage": pl.Float64(),
    "mode": pl.Enum(list(MODES)),
    "pairs": pl.Int64(),
    "complete_share": pl.Float64(),
    "completion_p50_ms": pl.Float64(),
    "completion_p99_ms": pl.Float64(),
    "completion_max_ms": pl.Float64(),
    "group_bytes_per_node": pl.Float64(),
    "parts_from_network": pl.Int64(),
    "parts_held": pl.Int64(),
    "parts_dup": pl.Int64(),
    "p50_saved_ms": pl.Float64(),
    "p99_saved_ms": pl.Float64(),
    "p99_saved_share": pl.Float64(),
    "bytes_saved_share": pl.Float64(),
}
"""The columns of ``study_table``."""


def study_table(runs: Sequence[StudyRun]) -> pl.DataFrame:
    """One row per run, sorted by parts, coverage, mode; savings against the paired full run.

    ``*_saved_*`` are null for full runs, for runs with no full run to pair with, and for
    percentiles that are "never" (null) on either side. A positive saving means the
    partial run was faster or lighter.
    """
    rows = []
    for run in runs:
        full = _paired_full(run, runs)
        rows.append(
            {
                "parts": run.parts,
                "coverage": run.coverage,
                "mode": run.mode,
                "pairs": run.completion_ms["count"],
                "complete_share": _share(run),
                "completion_p50_ms": run.completion_ms["p50"],
                "completion_p99_ms": run.completion_ms["p99"],
                "completion_max_ms": run.completion_ms["max"],
                "group_bytes_per_node": run.group_bytes_per_node,
                "parts_from_network": run.parts_from_network,
                "parts_held": run.parts_held,
                "parts_dup": run.parts_dup,
                "p50_saved_ms": _difference(full, run, "p50"),
                "p99_saved_ms": _difference(full, run, "p99"),
                "p99_saved_share": _relative(full, run, "p99"),
                "bytes_saved_share": _bytes_saved(full, run),
            }
        )
    return pl.DataFrame(rows, schema=STUDY_SCHEMA).sort(
        "parts", "coverage", "mode", nulls_last=True
    )


def _share(run: StudyRun) -> float | None:
    count = run.completion_ms["count"]
    return run.completion_ms["reached"] / count if count else None


def _paired_full(run: StudyRun, runs: Sequence[StudyRun]) -> StudyRun | None:
    """The full-message run to compare ``run`` with: same parts and coverage, else same
    parts (full messages do not depend on the mempool when no node takes part)."""
    if run.mode == FULL:
        return None
    same_parts = [r for r in runs if r.mode == FULL and r.parts == run.parts]
    same_coverage = [r for r in same_parts if r.coverage == run.coverage]
    chosen = same_coverage or same_parts
    return chosen[0] if chosen else None


def _difference(full: StudyRun | None, run: StudyRun, key: str) -> float | None:
    if full is None or full.completion_ms[key] is None or run.completion_ms[key] is None:
        return None
    return float(full.completion_ms[key] - run.completion_ms[key])


def _relative(full: StudyRun | None, run: StudyRun, key: str) -> float | None:
    saved = _difference(full, run, key)
    if saved is None or full is None or not full.completion_ms[key]:
        return None
    return saved / float(full.completion_ms[key])


def _bytes_saved(full: StudyRun | None, run: StudyRun) -> float | None:
    if full is None or full.group_bytes_per_node <= 0:
        return None
    return 1.0 - run.group_bytes_per_node / full.group_bytes_per_node


def coverage_where_it_matters(table: pl.DataFrame) -> pl.DataFrame:
    """Per blob count and partial mode: the coverages at which partial messages save at
    least MATTERS of the bytes, save at least MATTERS of the p99 completion time, and
    complete at least MATTERS later, against full messages (lists in ascending coverage;
    empty when nowhere)."""
    compared = table.filter((pl.col("mode") != FULL) & pl.col("coverage").is_not_null())
    return (
        compared.group_by("parts", "mode")
        .agg(
            bytes_from=pl.col("coverage").filter(pl.col("bytes_saved_share") >= MATTERS).sort(),
            time_from=pl.col("coverage").filter(pl.col("p99_saved_share") >= MATTERS).sort(),
            slower_at=pl.col("coverage").filter(pl.col("p99_saved_share") <= -MATTERS).sort(),
        )
        .sort("parts", "mode")
    )
