"""The results folder of a run: written all at once or not at all, read back with clear errors.

A folder holds scenario.toml (fully resolved), one Parquet file per event table,
summary.json (run info + metrics), report.html and the figures under plots/. It is
assembled in a hidden sibling ``.<name>.partial-<pid>`` and renamed into place when
complete, so a reader never sees a half-written result, even if the writer dies.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import polars as pl

from gossiplab.analysis.metrics import compute_summary, measure
from gossiplab.analysis.tables import (
    AGGREGATE_TABLES,
    OPTIONAL_TABLES,
    POLARS_SCHEMAS,
    REQUIRED_TABLES,
    RunTables,
    check_tables,
)
from gossiplab.errors import ResultsError

SCENARIO_FILE = "scenario.toml"
SUMMARY_FILE = "summary.json"
REPORT_FILE = "report.html"
PLOTS_DIR = "plots"
SIGNIFICANT_DIGITS = 9
"""Floats in summary.json keep this many significant digits: ns precision for ms values."""

# Hidden siblings a write leaves behind only if its process dies: the folder being
# assembled (partial) and, while replacing, the previous result moved aside (old).
_LEFTOVER = re.compile(r"^\.(?P<name>.+)\.(?P<kind>partial|old)-(?P<pid>\d+)$")


def table_file(name: str) -> str:
    return f"{name}.parquet"


def write_results(
    out_dir: Path,
    tables: RunTables,
    scenario_toml: str,
    run: Mapping[str, Any],
    *,
    overwrite: bool = False,
) -> Path:
    """Write a complete results folder at ``out_dir`` and return its path.

    Nothing appears at ``out_dir`` unless every file was written; with ``overwrite`` an
    existing folder is replaced only once the new one is complete.
    """
    out_dir = Path(out_dir)
    if out_dir.exists() and not overwrite:
        raise ResultsError(
            f"results folder {out_dir} already exists; pass --force to replace it "
            "or choose another -o"
        )
    if out_dir.exists() and not out_dir.is_dir():
        raise ResultsError(f"{out_dir} exists and is not a folder; choose another -o")
    check_tables(tables)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    _clean_leftovers(out_dir.parent)

    partial = out_dir.parent / f".{out_dir.name}.partial-{os.getpid()}"
    try:
        partial.mkdir()
    except FileExistsError:
        raise ResultsError(
            f"another write to {out_dir} is in progress in this process ({partial} exists); "
            "wait for it to finish"
        ) from None
    try:
        _write_contents(partial, tables, scenario_toml, run)
        _move_into_place(partial, out_dir)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return out_dir


def _write_contents(
    folder: Path, tables: RunTables, scenario_toml: str, run: Mapping[str, Any]
) -> None:
    # Imported here: rendering pulls in matplotlib and jinja2, which loading results does
    # not need, and report/run_report.py itself builds on this module.
    from gossiplab.report.run_report import render_report

    (folder / SCENARIO_FILE).write_text(scenario_toml, encoding="utf-8")
    measured = measure(tables, run)  # once, for both the summary and the figures
    summary = compute_summary(tables, run, measured)
    write_summary(folder, summary)
    # Polars writes without the GIL, so the tables go to disk while matplotlib draws.
    with ThreadPoolExecutor(max_workers=1) as writer:
        written = writer.submit(_write_tables, folder, tables)
        render_report(folder, tables, summary, measured)
        written.result()


def _write_tables(folder: Path, tables: RunTables) -> None:
    for name, frame in tables.present().items():
        frame.write_parquet(folder / table_file(name), compression="zstd")


def _move_into_place(partial: Path, out_dir: Path) -> None:
    if not out_dir.exists():
        partial.rename(out_dir)
        return
    retired = out_dir.parent / f".{out_dir.name}.old-{os.getpid()}"
    out_dir.rename(retired)
    try:
        partial.rename(out_dir)
    except BaseException:
        retired.rename(out_dir)
        raise
    shutil.rmtree(retired, ignore_errors=True)


def _clean_leftovers(parent: Path) -> None:
    """Remove what writes that died left in ``parent``; a live process's work is kept."""
    for entry in parent.iterdir():
        match = _LEFTOVER.match(entry.name)
        if match is None or not entry.is_dir() or _process_alive(int(match["pid"])):
            continue
        result = parent / match["name"]
        if match["kind"] == "old" and not result.exists():
            # The writer died between moving the old result aside and moving the new one
            # in: put the old one back rather than lose both.
            entry.rename(result)
        else:
            shutil.rmtree(entry, ignore_errors=True)


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    return True


def load_results(results_dir: Path) -> tuple[RunTables, dict[str, Any], str]:
    """Read a results folder back: its tables, run info and resolved scenario.toml."""
    results_dir = Path(results_dir)
    if not results_dir.is_dir():
        raise ResultsError(
            f"results folder {results_dir} does not exist; check the path, "
            "or run the scenario to create it"
        )
    # An aggregate-mode run has its aggregate tables instead of deliveries.
    aggregate = (results_dir / table_file(AGGREGATE_TABLES[0])).is_file()
    names = [name for name in REQUIRED_TABLES if not (aggregate and name == "deliveries")]
    required = [SCENARIO_FILE, SUMMARY_FILE, *map(table_file, names)]
    missing = [name for name in required if not (results_dir / name).is_file()]
    if missing:
        raise ResultsError(
            f"results folder {results_dir} is incomplete: {', '.join(missing)} missing; "
            "re-run the scenario to write it again"
        )
    frames: dict[str, pl.DataFrame | None] = {
        name: _read_table(results_dir / table_file(name)) for name in names
    }
    frames.setdefault("deliveries", None)
    for name in OPTIONAL_TABLES:
        path = results_dir / table_file(name)
        frames[name] = _read_table(path) if path.is_file() else None
    for name, frame in frames.items():
        if frame is not None and name in LATER_COLUMNS:
            frames[name] = with_later_columns(frame, name)
    tables = RunTables(**frames)  # type: ignore[arg-type]
    check_tables(tables)
    scenario_toml = (results_dir / SCENARIO_FILE).read_text(encoding="utf-8")
    return tables, _read_run(results_dir / SUMMARY_FILE), scenario_toml


# Columns later versions added to a table: a run written before them has none, and reads
# as if its backend had recorded nothing there (null).
LATER_COLUMNS: dict[str, tuple[str, ...]] = {
    "resources": ("sysmon_cpu_s", "sysmon_runs"),
    "goroutine_waits": ("readied_by",),
}


def with_later_columns(frame: pl.DataFrame, name: str) -> pl.DataFrame:
    """`frame` with the columns added to table `name` since its run, null, in file order."""
    schema = POLARS_SCHEMAS[name]
    missing = [c for c in LATER_COLUMNS.get(name, ()) if c not in frame.columns]
    if not missing:
        return frame
    nulls = [pl.lit(None, dtype=schema[c]).alias(c) for c in missing]
    return frame.with_columns(nulls).select(list(schema))


def _read_table(path: Path) -> pl.DataFrame:
    try:
        return pl.read_parquet(path)
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise ResultsError(
            f"{path} is not a readable Parquet file ({exc}); re-run the scenario to write it again"
        ) from exc


def _read_run(path: Path) -> dict[str, Any]:
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ResultsError(
            f"{path} is not readable JSON ({exc}); re-run the scenario to write it again"
        ) from exc
    run = summary.get("run") if isinstance(summary, dict) else None
    if not isinstance(run, dict):
        raise ResultsError(
            f'{path} has no "run" section, so the run info is lost; '
            "re-run the scenario to write it again"
        )
    return run


def summary_json(summary: Mapping[str, Any]) -> str:
    """summary.json's text: sorted keys, 2-space indent, rounded floats, NaN as null."""
    return json.dumps(_json_ready(summary), sort_keys=True, indent=2, allow_nan=False) + "\n"


def write_summary(folder: Path, summary: Mapping[str, Any]) -> Path:
    path = Path(folder) / SUMMARY_FILE
    replace_file(path, summary_json(summary))
    return path


def replace_file(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that readers see the old or the new file, never a mix."""
    temporary = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def _json_ready(value: Any) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, int | str):
        return value
    if isinstance(value, float):
        return float(f"{value:.{SIGNIFICANT_DIGITS}g}") if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(key): _json_ready(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_json_ready(item) for item in value]
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "item"):  # numpy scalars from runners
        return _json_ready(value.item())
    raise TypeError(f"cannot write {type(value).__name__} {value!r} to {SUMMARY_FILE}")
