"""[sweep]: which fields a sweep sets, and the product of its values."""

from __future__ import annotations

import copy
import itertools
import json
from typing import Any

from pydantic import BaseModel

from gossiplab.errors import Problem, ScenarioError
from gossiplab.scenario.base import describe_value, is_index
from gossiplab.scenario.shape import did_you_mean, field_paths, is_field_path


def set_dotted(data: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A deep copy of ``data`` with ``a.b.c`` set to ``value``; missing tables are created.

    A numeric part indexes an existing array item (``faults.0.at``).
    """
    result = copy.deepcopy(data)
    parts = path.split(".")
    here: Any = result
    for depth, part in enumerate(parts):
        last = depth == len(parts) - 1
        if isinstance(here, list) and is_index(part) and int(part) < len(here):
            key: int | str = int(part)
        elif isinstance(here, dict):
            key = part
        else:
            prefix = ".".join(parts[:depth])
            message = f"cannot set it: '{prefix}' is {describe_value(here)}, not a table"
            raise ScenarioError([Problem(path, message, f"check the path '{path}'")])
        if last:
            here[key] = value
        else:
            here = here.setdefault(key, {}) if isinstance(here, dict) else here[key]
    return result


def toml_literal(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def linked_paths(key: str) -> list[str]:
    """The fields a sweep key sets: one path, or several changing together ("a.b,c.d")."""
    return [part.strip() for part in key.split(",")]


def sweep_key_problems(sweep: dict[str, Any], root: type[BaseModel]) -> list[Problem]:
    """What is wrong with the sweep's keys and value lists; paths are relative to [sweep]."""
    problems = []
    for key, values in sweep.items():
        where = f'"{key}"'
        paths = linked_paths(key)
        unknown = [path for path in paths if not is_field_path(path, root)]
        if unknown:
            for path in unknown:
                hint = did_you_mean(path, field_paths(root))
                message = "no such field" if len(paths) == 1 else f"no such field '{path}'"
                problems.append(Problem(where, message, hint))
        elif not isinstance(values, list) or not values:
            hint = f'write "{key}" = [value, value, ...]'
            problems.append(Problem(where, "expected a non-empty array of values", hint))
        elif len(paths) > 1 and not all(
            isinstance(v, list) and len(v) == len(paths) for v in values
        ):
            hint = f"each value sets {len(paths)} fields together, e.g. [[1, 1], [2, 2]]"
            message = f"expected an array of {len(paths)}-element arrays"
            problems.append(Problem(where, message, hint))
    return problems


def point_assignments(sweep: dict[str, Any], values: tuple[Any, ...]) -> dict[str, Any]:
    """One point's field assignments; linked keys are spread over their fields."""
    assignments: dict[str, Any] = {}
    for key, value in zip(sweep.keys(), values, strict=True):
        paths = linked_paths(key)
        if len(paths) == 1:
            assignments[key] = value
        else:
            assignments.update(zip(paths, value, strict=True))
    return assignments


Point = tuple[dict[str, Any], dict[str, Any]]  # (assignments, the scenario data they give)


def sweep_product(data: dict[str, Any], root: type[BaseModel]) -> list[Point]:
    """The points of the ``[sweep]`` table, not validated yet: (assignments, data without
    sweep, assignments applied); ``root`` is the model whose fields the keys name.

    The product runs in the sweep table's key order, the last key changing fastest. A key
    naming several fields separated by commas sets them together from each value (an
    array with one element per field), so they change in lockstep rather than as a
    product.
    """
    sweep = data.get("sweep", {})
    if not isinstance(sweep, dict):
        raise ScenarioError([Problem("sweep", f"expected a table, got {describe_value(sweep)}")])
    key_problems = sweep_key_problems(sweep, root)
    problems = [Problem(f"sweep.{p.path}", p.message, p.hint) for p in key_problems]
    if problems:
        raise ScenarioError(problems)
    base = {key: value for key, value in data.items() if key != "sweep"}
    points: list[Point] = []
    for values in itertools.product(*sweep.values()):
        assignments = point_assignments(sweep, values)
        point = base
        for key, value in assignments.items():
            point = set_dotted(point, key, value)
        points.append((assignments, point if assignments else copy.deepcopy(base)))
    return points


def raise_point_problems(points: list[Point], per_point: list[list[Problem]]) -> None:
    """Problems common to all points once, the others prefixed with the point's assignments."""
    if not any(per_point):
        return
    common = [p for p in per_point[0] if all(p in others for others in per_point[1:])]
    problems = list(common)
    for (assignments, _), found in zip(points, per_point, strict=True):
        where = ", ".join(f"{k} = {toml_literal(v)}" for k, v in assignments.items())
        for p in found:
            if p not in common:
                problems.append(Problem(p.path, f"at sweep point {where}: {p.message}", p.hint))
    raise ScenarioError(problems)
