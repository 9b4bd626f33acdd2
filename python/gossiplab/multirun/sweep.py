"""Sweeps: run every point of a scenario's ``[sweep]`` matrix, resumably, and tabulate them.

A sweep's folder holds one results folder per point, named from its assignments
(``topology.m=6,network.latency=100ms``), ``sweep.toml`` (the file as given),
``points.parquet`` and ``points.csv`` (one row per point: assignments, status, reason,
every headline metric) and ``report.html``.

A point is finished when its results folder exists: results are written atomically, so
a folder is complete or absent, even after a kill -9. Running the sweep again skips the
finished points (after checking that each folder holds the same resolved scenario) and
runs the others, so an interrupted sweep resumes where it stopped. Points that fail (a
feature the backend does not model yet) are recorded with their reason and run again
next time, so they fill in once the backend supports them.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol
from urllib.parse import quote

import polars as pl

from gossiplab.analysis.headline import HEADLINE, headline_values
from gossiplab.analysis.results import replace_file
from gossiplab.errors import GossiplabError
from gossiplab.multirun.executors import (
    Job,
    JobResult,
    default_workers,
    read_summary,
    run_local,
    run_on_ray,
)
from gossiplab.scenario import Scenario, load_scenario, scenario_hash, sweep_points

SWEEP_FILE = "sweep.toml"
POINTS_PARQUET = "points.parquet"
POINTS_CSV = "points.csv"
RESULTS_ROOT = Path("results")
MAX_FOLDER_NAME = 200
"""Bytes; file systems allow 255. Longer names are cut and end in a hash of the full name."""
SHOWN_CONFLICTS = 5

Status = Literal["ok", "failed"]


class SweepError(GossiplabError):
    """A sweep that cannot run as asked (its folder holds something else, bad names...)."""


@dataclass(frozen=True)
class Point:
    """One run of a sweep: its folder name, what it changes, and its resolved scenario."""

    folder: str
    assignments: dict[str, Any]
    scenario: Scenario
    labels: dict[str, str] = field(default_factory=dict)
    """Extra columns for the table, e.g. a campaign's series and case."""


@dataclass(frozen=True)
class PointResult:
    point: Point
    status: Status
    reason: str = ""
    summary: dict[str, Any] | None = None
    resumed: bool = False
    """Finished by an earlier run of the sweep, not run now."""
    traceback: str = ""


class SweepProgress(Protocol):
    def started(self, total: int, finished: int) -> None: ...

    def point_done(self, result: PointResult) -> None: ...

    def writing_report(self) -> None:
        """Every point is done; the table and report (which reads every point) come next."""


def value_text(value: Any) -> str:
    """A swept value, compactly, as written: 100ms, 6, 0.001, {distribution=uniform,...}."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{k}={value_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(value_text(v) for v in value) + "]"
    return str(value)


def folder_name(assignments: Mapping[str, Any], prefix: str = "") -> str:
    """The results folder of a point: ``key=value`` pairs joined by commas, file-safe.

    Characters a file name cannot hold ('/' in "10MB/s") are percent-encoded, so different
    assignments always give different names.
    """
    text = ",".join(f"{key}={value_text(value)}" for key, value in assignments.items())
    name = quote(prefix + (text or "base"), safe="=,.+-_@{}[]")
    if len(name.encode()) > MAX_FOLDER_NAME:
        digest = hashlib.sha256(name.encode()).hexdigest()[:16]
        name = f"{name[: MAX_FOLDER_NAME - 17]}~{digest}"
    return name


def check_unique_folders(points: Sequence[Point]) -> None:
    seen: dict[str, Point] = {}
    for point in points:
        if point.folder in seen:
            raise SweepError(
                f"two sweep points would share the results folder {point.folder!r} "
                f"({seen[point.folder].assignments} and {point.assignments}); "
                "give the values distinct spellings"
            )
        seen[point.folder] = point


@dataclass(frozen=True)
class SweepPlan:
    name: str
    source: Path
    text: str
    points: list[Point]


def plan_sweep(path: str | Path) -> SweepPlan:
    """Load a scenario file with a ``[sweep]`` table and resolve every point."""
    path = Path(path)
    s = load_scenario(path)
    if not s.sweep:
        raise SweepError(
            f"{path} has no [sweep] table, so there is nothing to sweep; add one "
            '(e.g. [sweep] "topology.m" = [2, 6]) or use `gossiplab run` for a single run'
        )
    points = [
        Point(folder_name(assignments), assignments, point)
        for assignments, point in sweep_points(s)
    ]
    check_unique_folders(points)
    return SweepPlan(s.name, path, path.read_text(encoding="utf-8"), points)


def _finished(points: Sequence[Point], out_dir: Path) -> dict[str, dict[str, Any]]:
    """Summaries of the points whose folder is already complete; raise on a foreign folder."""
    finished: dict[str, dict[str, Any]] = {}
    conflicts: list[str] = []
    for point in points:
        folder = out_dir / point.folder
        if not folder.exists():
            continue
        summary = read_summary(folder)
        recorded = (summary or {}).get("run", {}).get("scenario_hash")
        if summary is None:
            conflicts.append(f"{folder} is not a results folder (no readable summary.json)")
        elif recorded != scenario_hash(point.scenario):
            conflicts.append(f"{folder} holds the results of a different scenario")
        else:
            finished[point.folder] = summary
    if conflicts:
        shown = "; ".join(conflicts[:SHOWN_CONFLICTS])
        more = len(conflicts) - SHOWN_CONFLICTS
        if more > 0:
            shown += f"; and {more} more"
        raise SweepError(
            f"{shown}. The sweep changed since those points ran: pass --force to re-run "
            "every point, or choose another output folder with -o"
        )
    return finished


def run_points(
    points: Sequence[Point],
    out_dir: Path,
    *,
    workers: int | None = None,
    ray_address: str | None = None,
    force: bool = False,
    progress: SweepProgress | None = None,
) -> list[PointResult]:
    """Run every point not finished yet into ``out_dir/<point.folder>``; results in order."""
    check_unique_folders(points)
    out_dir.mkdir(parents=True, exist_ok=True)
    finished = {} if force else _finished(points, out_dir)
    results: dict[str, PointResult] = {
        folder: PointResult(_point(points, folder), "ok", summary=summary, resumed=True)
        for folder, summary in finished.items()
    }
    todo = [p for p in points if p.folder not in finished]
    jobs = [Job(i, p.scenario, out_dir / p.folder, replace=force) for i, p in enumerate(todo)]
    if progress is not None:
        progress.started(len(points), len(finished))

    def done(job_result: JobResult) -> None:
        point = todo[job_result.index]
        result = _point_result(point, job_result, out_dir)
        results[point.folder] = result
        if progress is not None:
            progress.point_done(result)

    if jobs and ray_address:
        run_on_ray(jobs, ray_address, done)
    elif jobs:
        run_local(jobs, workers or default_workers(), done)
    return [results[p.folder] for p in points]


def _point(points: Sequence[Point], folder: str) -> Point:
    return next(p for p in points if p.folder == folder)


def _point_result(point: Point, job: JobResult, out_dir: Path) -> PointResult:
    if not job.ok:
        return PointResult(point, "failed", job.reason, traceback=job.traceback)
    summary = read_summary(out_dir / point.folder)
    if summary is None:
        return PointResult(point, "failed", "the run left no readable summary.json")
    return PointResult(point, "ok", summary=summary)


_FLOAT_FORMATS = {"ratio", "ms", "hops", "float", "seconds"}


def points_table(results: Sequence[PointResult]) -> pl.DataFrame:
    """One row per point: labels, point, assignments, status, reason, headline metrics."""
    label_keys = _keys(r.point.labels for r in results)
    assignment_keys = _keys(r.point.assignments for r in results)
    columns: dict[str, pl.Series] = {}
    for key in label_keys:
        columns[key] = pl.Series(key, [r.point.labels.get(key) for r in results], pl.String)
    columns["point"] = pl.Series("point", [r.point.folder for r in results], pl.String)
    for key in assignment_keys:
        columns[key] = _assignment_column(key, [r.point.assignments.get(key) for r in results])
    columns["status"] = pl.Series("status", [r.status for r in results], pl.String)
    columns["reason"] = pl.Series("reason", [r.reason for r in results], pl.String)
    values = [headline_values(r.summary) if r.summary else {} for r in results]
    for metric in HEADLINE:
        dtype = pl.Float64 if metric.format in _FLOAT_FORMATS else pl.Int64
        column = [v.get(metric.key) for v in values]
        columns[metric.key] = pl.Series(metric.key, column, dtype, strict=False)
    return pl.DataFrame(list(columns.values()))


def _keys(mappings: Any) -> list[str]:
    keys: dict[str, None] = {}
    for mapping in mappings:
        keys.update(dict.fromkeys(mapping))
    return list(keys)


def _assignment_column(key: str, values: list[Any]) -> pl.Series:
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, bool) for v in present):
        return pl.Series(key, values, pl.Boolean)
    if present and all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        return pl.Series(key, values, pl.Int64)
    if present and all(isinstance(v, int | float) and not isinstance(v, bool) for v in present):
        return pl.Series(key, values, pl.Float64)
    texts = [None if v is None else value_text(v) for v in values]
    return pl.Series(key, texts, pl.String)


def run_and_tabulate(
    points: Sequence[Point],
    out_dir: Path,
    *,
    workers: int | None = None,
    ray_address: str | None = None,
    force: bool = False,
    progress: SweepProgress | None = None,
) -> tuple[list[PointResult], pl.DataFrame]:
    """Run the points (see `run_points`), then write and return their points table."""
    results = run_points(
        points, out_dir, workers=workers, ray_address=ray_address, force=force, progress=progress
    )
    if progress is not None:
        progress.writing_report()
    table = points_table(results)
    write_points_table(out_dir, table)
    return results, table


def write_points_table(out_dir: Path, table: pl.DataFrame) -> None:
    """points.parquet and points.csv, each replaced atomically."""
    for name, write in (
        (POINTS_PARQUET, lambda path: table.write_parquet(path)),
        (POINTS_CSV, lambda path: table.write_csv(path)),
    ):
        target = out_dir / name
        temporary = target.with_name(f".{name}.tmp-{os.getpid()}")
        try:
            write(temporary)
            os.replace(temporary, target)
        finally:
            temporary.unlink(missing_ok=True)


@dataclass(frozen=True)
class SweepOutcome:
    out_dir: Path
    results: list[PointResult]
    table: pl.DataFrame
    report: Path

    @property
    def failed(self) -> list[PointResult]:
        return [r for r in self.results if r.status == "failed"]

    @property
    def resumed(self) -> int:
        return sum(r.resumed for r in self.results)


def default_sweep_dir(name: str) -> Path:
    """results/<name>-sweep: fixed, so that running the same command again resumes."""
    return RESULTS_ROOT / f"{name}-sweep"


def run_sweep(
    path: str | Path,
    out_dir: str | Path | None = None,
    *,
    workers: int | None = None,
    ray_address: str | None = None,
    force: bool = False,
    progress: SweepProgress | None = None,
) -> SweepOutcome:
    """Run (or resume) the sweep in scenario file ``path``; write its table and report."""
    from gossiplab.multirun.sweep_report import render_sweep_report

    plan = plan_sweep(path)
    target = Path(out_dir) if out_dir is not None else default_sweep_dir(plan.name)
    if target.exists() and not target.is_dir():
        raise SweepError(f"{target} exists and is not a folder; choose another -o")
    target.mkdir(parents=True, exist_ok=True)
    replace_file(target / SWEEP_FILE, plan.text)
    results, table = run_and_tabulate(
        plan.points,
        target,
        workers=workers,
        ray_address=ray_address,
        force=force,
        progress=progress,
    )
    report = render_sweep_report(target, plan, results, table)
    return SweepOutcome(target, results, table, report)
