"""Reading a scenario: from TOML or a dict to a validated ``Scenario``, and back to TOML."""

from __future__ import annotations

import copy
import hashlib
import tomllib
from pathlib import Path
from typing import Any

import tomli_w
from pydantic import ValidationError

from gossiplab.errors import Problem, ScenarioError
from gossiplab.scenario.base import describe_value
from gossiplab.scenario.problems import problems_from
from gossiplab.scenario.root import Scenario
from gossiplab.scenario.sweep import Point, raise_point_problems, sweep_product


def parse_scenario(data: dict[str, Any], base_dir: Path, source: str = "") -> Scenario:
    """Validate a scenario given as a dict (as read from TOML) and resolve every default.

    ``base_dir`` is the folder relative paths are resolved against. Raises ScenarioError
    listing every problem found; a sweep's points are validated too.
    """
    if not isinstance(data, dict):
        found = describe_value(data)
        raise ScenarioError([Problem("", f"expected a table, got {found}", "")], source)
    try:
        scenario = Scenario.model_validate(data, context={"base_dir": Path(base_dir)})
    except ValidationError as err:
        raise ScenarioError(problems_from(err), source) from None
    if scenario.sweep:
        try:
            expand_sweep(data, base_dir=base_dir)
        except ScenarioError as err:
            raise ScenarioError(err.problems, source) from None
    scenario._source_data = copy.deepcopy(data)
    return scenario


def load_scenario(path: str | Path, cpu_costs: str | Path | None = None) -> Scenario:
    """Read, validate and resolve a scenario file; relative paths in it are from its folder.

    ``cpu_costs``, a TOML file with a ``[cpu]`` table (costs fitted on this machine by
    bench/cpu_refit.py), sets those costs over the scenario's own ``[cpu]``."""
    path = Path(path)
    data = _read_toml(path, "scenario file")
    if cpu_costs is not None:
        own = data.get("cpu", {})  # not a table: the schema names it, costs or not
        data["cpu"] = {**own, **_cpu_table(Path(cpu_costs))} if isinstance(own, dict) else own
    return parse_scenario(data, path.resolve().parent, source=str(path))


def _read_toml(path: Path, what: str, field: str = "") -> dict[str, Any]:
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as err:
        problem = Problem(field, f"cannot read the {what}: {err.strerror}", "check the path")
        raise ScenarioError([problem], str(path)) from None
    except UnicodeDecodeError:
        problem = Problem("", "the file is not UTF-8 text", "save it as UTF-8")
        raise ScenarioError([problem], str(path)) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        hint = "fix the TOML syntax at that line and column (see https://toml.io)"
        raise ScenarioError([Problem("", f"TOML syntax error: {err}", hint)], str(path)) from None


def _cpu_table(path: Path) -> dict[str, Any]:
    """The ``[cpu]`` table of a costs file."""
    table = _read_toml(path, "CPU costs file", "--cpu-costs").get("cpu")
    if not isinstance(table, dict):
        hint = "give the costs.toml that bench/cpu_refit.py writes, or a file with a [cpu] table"
        raise ScenarioError(
            [Problem("cpu", "the CPU costs file has no [cpu] table", hint)], str(path)
        )
    return table


def scenario_to_toml(s: Scenario) -> str:
    """The fully resolved scenario as TOML: every value written out, units canonical."""
    return tomli_w.dumps(s.model_dump(mode="json", exclude_none=True))


def scenario_hash(s: Scenario) -> str:
    """sha256 (hex) of the resolved TOML: equal scenarios, equal hashes."""
    return hashlib.sha256(scenario_to_toml(s).encode("utf-8")).hexdigest()


def expand_sweep(data: dict[str, Any], base_dir: Path | None = None) -> list[Point]:
    """The points of the ``[sweep]`` table: (assignments, data without sweep, assignments applied).

    The product runs in the sweep table's key order, the last key changing fastest. A key
    naming several fields separated by commas sets them together from each value (an
    array with one element per field), so they change in lockstep rather than as a
    product. Every point is validated; problems common to all points are reported once,
    the others prefixed with the point's assignments. ``base_dir`` (default: the current
    folder) locates files.
    """
    points = sweep_product(data, Scenario)
    per_point: list[list[Problem]] = []
    for _, point in points:
        try:
            parse_scenario(point, base_dir or Path.cwd())
            per_point.append([])
        except ScenarioError as err:
            per_point.append(err.problems)
    raise_point_problems(points, per_point)
    return points


def sweep_points(s: Scenario) -> list[tuple[dict[str, Any], Scenario]]:
    """The resolved scenario of every sweep point, expanded from the data as the user wrote it."""
    source = s.source_data or s.model_dump(mode="json", exclude_none=True)
    return [
        (assignments, parse_scenario(point, s.base_dir))
        for assignments, point in expand_sweep(source, base_dir=s.base_dir)
    ]
