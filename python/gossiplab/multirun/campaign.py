"""Campaigns: a family of series over one base scenario, run as one resumable sweep.

A published test campaign is rarely one matrix: the Whiteblock Phase 2 series vary the
latency with m in {2, 6, 12, 16}, but the bandwidth series runs three bandwidths at m = 6
only. A campaign file names a base scenario and a list of series; each series sets some
fields and sweeps others, its ``sweep`` table expanded exactly as a scenario's ``[sweep]``
(so ``"network.upload,network.download" = [["10MB/s", "10MB/s"], ...]`` moves two fields
together). Cases are labelled as published reports label them: series 2's cases are 2a,
2b, 2c, 2d.

```toml
name = "whiteblock-phase2"
base = "phase2-series1b.toml"          # relative to this file
parameters = ["topology.m", "network.latency"]   # columns of the series table
x = "topology.m"                       # x axis of the across-series figures

[[series]]
id = "2"
title = "Latency 100 ms"
set = { "network.latency" = "100ms" }
sweep = { "topology.m" = [2, 6, 12, 16] }
```

All points run through the sweep machinery (one pool, one progress bar, resumable);
the campaign folder adds the series table (series.csv, series.md) and a report with the
overlays of each series.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from gossiplab.analysis.headline import BY_KEY, format_value
from gossiplab.analysis.results import replace_file
from gossiplab.errors import GossiplabError, ScenarioError
from gossiplab.multirun.sweep import (
    Point,
    PointResult,
    SweepProgress,
    check_unique_folders,
    folder_name,
    run_and_tabulate,
    value_text,
)
from gossiplab.scenario import (
    Scenario,
    expand_sweep,
    load_scenario,
    parse_scenario,
    set_dotted,
)

CAMPAIGN_FILE = "campaign.toml"
BASE_FILE = "base.toml"
SERIES_CSV = "series.csv"
SERIES_MD = "series.md"
RESULTS_ROOT = Path("results")
SERIES_METRICS: tuple[str, ...] = (
    "delivery_ratio",
    "dissemination_p50_ms",
    "dissemination_p99_ms",
    "dissemination_max_ms",
    "ldh_mean",
)
"""The columns of the Whiteblock report's result tables."""

_TOP_KEYS = ("name", "description", "base", "parameters", "x", "series")
_SERIES_KEYS = ("id", "title", "set", "sweep")
_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


class CampaignError(GossiplabError):
    """A campaign file that cannot be run; lists every problem with where it is."""

    def __init__(self, source: str, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        lines = [f"{source}: {len(problems)} problem(s) in the campaign:"]
        lines += [f"  - {p}" for p in problems]
        super().__init__("\n".join(lines))


@dataclass(frozen=True)
class Series:
    id: str
    title: str
    set: dict[str, Any]
    sweep: dict[str, list[Any]]


@dataclass(frozen=True)
class CampaignPlan:
    name: str
    description: str
    source: Path
    text: str
    base: Path
    series: list[Series]
    parameters: list[str]
    x: str
    points: list[Point] = field(default_factory=list)

    def series_of(self, point: Point) -> Series:
        return next(s for s in self.series if s.id == point.labels["series"])


def case_letter(index: int) -> str:
    """a, b, ..., z, aa, ab, ...: how published reports label the cases of a series."""
    letters = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        letters = chr(ord("a") + rest) + letters
    return letters


def _read(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise CampaignError(str(path), [f"cannot read the file: {error.strerror}"]) from None
    except UnicodeDecodeError:
        raise CampaignError(str(path), ["the file is not UTF-8 text"]) from None
    except tomllib.TOMLDecodeError as error:
        raise CampaignError(str(path), [f"TOML syntax error: {error}"]) from None


def _check_table(where: str, value: Any, problems: list[str]) -> dict[str, Any]:
    if not isinstance(value, dict):
        problems.append(f"{where}: expected a table of dotted field = value, got {value!r}")
        return {}
    return value


def _parse_series(index: int, raw: Any, problems: list[str]) -> Series | None:
    where = f"series[{index}]"
    if not isinstance(raw, dict):
        problems.append(f"{where}: expected a table ([[series]]), got {raw!r}")
        return None
    for key in raw:
        if key not in _SERIES_KEYS:
            problems.append(f"{where}.{key}: unknown field (allowed: {', '.join(_SERIES_KEYS)})")
    ident = raw.get("id")
    if not isinstance(ident, str | int) or isinstance(ident, bool) or str(ident) == "":
        problems.append(f'{where}.id: required, a short name such as "1" or "latency"')
        return None
    ident = str(ident)
    if not _NAME.match(ident):
        problems.append(f"{where}.id: {ident!r} may hold only letters, digits, '-', '_', '.'")
    title = raw.get("title", "")
    if not isinstance(title, str):
        problems.append(f"{where}.title: expected text, got {title!r}")
        title = ""
    assigned = _check_table(f"{where}.set", raw.get("set", {}), problems)
    sweep = _check_table(f"{where}.sweep", raw.get("sweep", {}), problems)
    return Series(ident, title, assigned, sweep)


def plan_campaign(path: str | Path) -> CampaignPlan:
    """Read and check a campaign file and resolve every point of every series."""
    path = Path(path)
    source = str(path)
    raw = _read(path)
    problems: list[str] = []
    for key in raw:
        if key not in _TOP_KEYS:
            problems.append(f"{key}: unknown field (allowed: {', '.join(_TOP_KEYS)})")
    name = raw.get("name", path.stem)
    if not isinstance(name, str) or not _NAME.match(name):
        problems.append(f"name: {name!r} must be letters, digits, '-', '_' or '.' (a folder name)")
        name = path.stem
    description = raw.get("description", "")
    base = raw.get("base")
    if not isinstance(base, str):
        problems.append('base: required, the base scenario file (e.g. base = "base.toml")')
    raw_series = raw.get("series")
    if not isinstance(raw_series, list) or not raw_series:
        problems.append("series: required, at least one [[series]] table")
        raw_series = []
    series = [s for i, r in enumerate(raw_series) if (s := _parse_series(i, r, problems))]
    ids = [s.id for s in series]
    for dup in sorted({i for i in ids if ids.count(i) > 1}):
        problems.append(f"series: id {dup!r} is used more than once; ids must differ")
    if problems:
        raise CampaignError(source, problems)

    base_path = (path.parent / str(base)).resolve()
    base_scenario = load_scenario(base_path)
    if base_scenario.sweep:
        raise CampaignError(
            source, [f"base: {base_path} has a [sweep] table; the series replace it: remove it"]
        )
    assigned_keys = _keys_in_order(series)
    parameters = raw.get("parameters", assigned_keys)
    x = raw.get("x", _most_swept(series) or (assigned_keys[0] if assigned_keys else ""))
    if not isinstance(parameters, list) or not all(isinstance(p, str) for p in parameters):
        raise CampaignError(source, ["parameters: expected a list of dotted field names"])
    plan = CampaignPlan(
        name,
        str(description).strip(),
        path,
        path.read_text(encoding="utf-8"),
        base_path,
        series,
        parameters,
        str(x),
    )
    points = _expand(plan, base_scenario.source_data, source)
    check_unique_folders(points)
    return CampaignPlan(**{**plan.__dict__, "points": points})


def is_campaign_file(path: str | Path) -> bool:
    """True when ``path`` reads as a campaign (it has [[series]]) rather than a scenario."""
    try:
        raw = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False  # the scenario loader reports what is wrong with the file
    return "series" in raw  # no scenario has a [[series]] list


def check_campaign(plan: CampaignPlan, check: Callable[[Scenario], None]) -> None:
    """Run ``check`` on every case's scenario; one CampaignError lists every case's problems."""
    problems: list[str] = []
    for point in plan.points:
        try:
            check(point.scenario)
        except ScenarioError as error:
            problems += [f"case {point.labels['case']}: {p}" for p in error.problems]
    if problems:
        raise CampaignError(str(plan.source), problems)


def _keys_in_order(series: Sequence[Series]) -> list[str]:
    keys: dict[str, None] = {}
    for s in series:
        keys.update(dict.fromkeys(s.set))
        for key in s.sweep:  # "a.b,c.d" sets two fields in lockstep
            keys.update(dict.fromkeys(part.strip() for part in key.split(",")))
    return list(keys)


def _most_swept(series: Sequence[Series]) -> str | None:
    counts: dict[str, int] = {}
    for s in series:
        for key in s.sweep:
            for part in key.split(","):
                counts[part.strip()] = counts.get(part.strip(), 0) + 1
    return max(counts, key=lambda k: counts[k]) if counts else None


def _expand(plan: CampaignPlan, base: dict[str, Any], source: str) -> list[Point]:
    points: list[Point] = []
    problems: list[str] = []
    for s in plan.series:
        where = f"series {s.id!r}"
        try:
            data = base
            for key, value in s.set.items():
                data = set_dotted(data, key, value)
            cases = (
                expand_sweep({**data, "sweep": s.sweep}, base_dir=plan.base.parent)
                if s.sweep
                else [({}, data)]
            )
            for index, (varied, point_data) in enumerate(cases):
                case = f"{s.id}{case_letter(index)}"
                point_data = {
                    **point_data,
                    "name": f"{plan.name}-{case}",
                    "description": _describe(plan, s, case, {**s.set, **varied}),
                }
                scenario = parse_scenario(point_data, plan.base.parent, source=f"{where} {case}")
                points.append(
                    Point(
                        folder_name(varied, prefix=f"{case}_"),
                        {**s.set, **varied},
                        scenario,
                        labels={"series": s.id, "case": case},
                    )
                )
        except ScenarioError as error:
            problems += [f"{where}: {p}" for p in error.problems]
    if problems:
        raise CampaignError(source, problems)
    return points


def _describe(plan: CampaignPlan, s: Series, case: str, assigned: Mapping[str, Any]) -> str:
    changes = ", ".join(f"{k} = {value_text(v)}" for k, v in assigned.items()) or "base"
    title = f" ({s.title})" if s.title else ""
    return f"{plan.name}, series {s.id}{title}, case {case}: {changes}."


def parameter_text(point: Point, key: str) -> str:
    """A parameter of a point as the files wrote it, or its resolved default."""
    for data in (point.scenario.source_data, point.scenario.model_dump(mode="json")):
        here: Any = data
        for part in key.split("."):
            if isinstance(here, dict) and part in here:
                here = here[part]
            elif isinstance(here, list) and part.isdigit() and int(part) < len(here):
                here = here[int(part)]
            else:
                break
        else:
            return value_text(here)
    return ""


def series_table(plan: CampaignPlan, results: Sequence[PointResult]) -> pl.DataFrame:
    """The campaign's table in the shape of the published report: one row per case."""
    rows = []
    for result in results:
        point = result.point
        summary = result.summary or {}
        row: dict[str, Any] = {
            "series": point.labels["series"],
            "case": point.labels["case"],
            "title": plan.series_of(point).title,
        }
        row.update({key: parameter_text(point, key) for key in plan.parameters})
        row["status"] = result.status
        row.update({key: BY_KEY[key].value(summary) for key in SERIES_METRICS})
        row["reason"] = result.reason
        rows.append(row)
    schema: dict[str, Any] = dict.fromkeys(["series", "case", "title", *plan.parameters], pl.String)
    schema["status"] = pl.String
    schema.update({key: pl.Float64 for key in SERIES_METRICS})
    schema["reason"] = pl.String
    return pl.DataFrame(rows, schema=schema)


SHORT_METRIC_HEADERS: tuple[str, ...] = ("delivery", "p50 ms", "p99 ms", "max ms", "LDH")
"""Narrow headers of SERIES_METRICS, for a table that must fit a screen or a terminal."""


def series_text_rows(
    table: pl.DataFrame, parameters: Sequence[str], *, titles_once: bool = False
) -> list[list[str]]:
    """The series table as people read it: formatted numbers, failed cases say why.

    With ``titles_once`` a series' title is shown on its first case only.
    """
    rows = []
    previous = None
    for row in table.iter_rows(named=True):
        title = "" if titles_once and row["series"] == previous else row["title"]
        previous = row["series"]
        cells = [row["case"], title, *(row[p] for p in parameters)]
        if row["status"] == "ok":
            cells += [format_value(row[k], BY_KEY[k].format) for k in SERIES_METRICS]
        else:
            cells += [f"failed: {row['reason']}", *([""] * (len(SERIES_METRICS) - 1))]
        rows.append(cells)
    return rows


def series_header(parameters: Sequence[str], *, short: bool = False) -> list[str]:
    """Column names of the series table; ``short`` ones for screens and terminals."""
    if not short:
        return ["case", "series", *parameters, *(BY_KEY[k].label for k in SERIES_METRICS)]
    return ["case", "series", *short_names(parameters), *SHORT_METRIC_HEADERS]


def short_names(keys: Sequence[str]) -> list[str]:
    """Each dotted key's last part ("topology.m" -> "m"), unless two keys share it."""
    last = [key.split(".")[-1] for key in keys]
    return [name if last.count(name) == 1 else key for name, key in zip(last, keys, strict=True)]


def series_markdown(table: pl.DataFrame, parameters: Sequence[str]) -> str:
    header = series_header(parameters)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for cells in series_text_rows(table, parameters):
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class CampaignOutcome:
    out_dir: Path
    plan: CampaignPlan
    results: list[PointResult]
    series: pl.DataFrame
    report: Path


def default_campaign_dir(name: str) -> Path:
    """results/<name>: fixed, so that running the same command again resumes."""
    return RESULTS_ROOT / name


def run_campaign(
    path: str | Path,
    out_dir: str | Path | None = None,
    *,
    workers: int | None = None,
    ray_address: str | None = None,
    force: bool = False,
    progress: SweepProgress | None = None,
) -> CampaignOutcome:
    """Run (or resume) a campaign; write its points and series tables and its report."""
    from gossiplab.multirun.campaign_report import render_campaign_report

    plan = plan_campaign(path)
    target = Path(out_dir) if out_dir is not None else default_campaign_dir(plan.name)
    if target.exists() and not target.is_dir():
        raise CampaignError(str(path), [f"{target} exists and is not a folder; choose another -o"])
    target.mkdir(parents=True, exist_ok=True)
    replace_file(target / CAMPAIGN_FILE, plan.text)
    replace_file(target / BASE_FILE, plan.base.read_text(encoding="utf-8"))
    results, _ = run_and_tabulate(
        plan.points,
        target,
        workers=workers,
        ray_address=ray_address,
        force=force,
        progress=progress,
    )
    table = series_table(plan, results)
    replace_file(target / SERIES_CSV, table.write_csv())
    replace_file(target / SERIES_MD, series_markdown(table, plan.parameters))
    report = render_campaign_report(target, plan, results, table)
    return CampaignOutcome(target, plan, results, table, report)
