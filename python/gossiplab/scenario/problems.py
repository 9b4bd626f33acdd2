"""Turning pydantic's errors into problems a user can act on."""

from __future__ import annotations

import difflib
import re
from typing import Any

from pydantic import ValidationError

from gossiplab.errors import Problem
from gossiplab.scenario.base import describe_value
from gossiplab.scenario.root import Scenario
from gossiplab.scenario.shape import UnionNode, did_you_mean, fields_of, join_path, locate

_TYPE_ERRORS: dict[str, tuple[str, str]] = {
    "int_type": ("an integer", "write a whole number without quotes, e.g. 6"),
    "int_parsing": ("an integer", "write a whole number without quotes, e.g. 6"),
    "int_from_float": ("an integer", "write a whole number, e.g. 6"),
    "float_type": ("a number", "write a number without quotes, e.g. 0.25"),
    "float_parsing": ("a number", "write a number without quotes, e.g. 0.25"),
    "finite_number": ("a finite number", "nan and inf are not allowed here"),
    "bool_type": ("true or false", "write true or false without quotes"),
    "bool_parsing": ("true or false", "write true or false without quotes"),
    "string_type": ("a string", 'write it in double quotes, e.g. "text"'),
    "list_type": ("an array", "write it as [a, b, ...]"),
    "dict_type": ("a table", "write it as a [section] or as { key = value }"),
    "model_type": ("a table", "write it as a [section] or as { key = value }"),
    "model_attributes_type": ("a table", "write it as a [section] or as { key = value }"),
}
_BOUNDS = {
    "greater_than": ">",
    "greater_than_equal": ">=",
    "less_than": "<",
    "less_than_equal": "<=",
}
_REQUIRED_HINTS = {
    "at": 'give the time, e.g. at = "30s"',
    "start": 'give the time, e.g. start = "30s"',
    "end": 'give the time, e.g. end = "60s"',
    "file": 'give the edges file, e.g. file = "graph.txt"',
    "behaviour": 'e.g. behaviour = "drop-forwards"',
    "leave_rate": 'e.g. leave_rate = "1/s"',
    "rejoin_after": 'e.g. rejoin_after = "30s"',
    "share": "e.g. share = 0.2",
    "name": 'e.g. name = "fast", or a preset such as preset = "home", which names it',
}


def _unknown_field(loc: tuple[int | str, ...], path: str) -> Problem:
    key = str(loc[-1])
    parent = locate(loc[:-1], Scenario)
    known = list(fields_of(parent.node))
    if parent.union is not None and isinstance(parent.node, type):
        kind = loc[-2] if len(loc) >= 2 else ""
        own = [name for name in known if name != parent.union.tag_field]
        elsewhere = [
            tag
            for tag, member in parent.union.members.items()
            if member is not None and key in member.model_fields
        ]
        if elsewhere:
            message = f"not a field of {parent.union.tag_field} '{kind}'"
            return Problem(path, message, f"its fields: {', '.join(own)}")
    return Problem(path, "unknown field", did_you_mean(key, known))


def _literal_options(expected: str) -> list[str]:
    return re.findall(r"'((?:[^'\\]|\\.)*)'", expected)


def _problems_from_error(error: Any) -> list[Problem]:
    kind, loc, ctx = error["type"], tuple(error["loc"]), error.get("ctx") or {}
    value = error.get("input")
    here = locate(loc, Scenario)
    path = here.path
    if kind == "gossiplab":
        return [Problem(path, ctx["message"], ctx["hint"])]
    if kind == "gossiplab_problems":
        return [Problem(join_path(path, p.path), p.message, p.hint) for p in ctx["problems"]]
    if kind == "extra_forbidden":
        return [_unknown_field(loc, path)]
    if kind == "missing":
        hint = _REQUIRED_HINTS.get(str(loc[-1]), "add this field")
        return [Problem(path, "is required", hint)]
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        union = here.node if isinstance(here.node, UnionNode) else None
        tag_field = union.tag_field if union else "kind"
        # Only forms written as tables have a tag (a constant latency is a plain string).
        tags = [tag for tag, m in union.members.items() if m is not None] if union else []
        if kind == "union_tag_not_found":
            hint = f"set {tag_field} to one of: {', '.join(tags)}"
            return [Problem(join_path(path, tag_field), "is required", hint)]
        tag = str(ctx.get("tag", ""))
        close = difflib.get_close_matches(tag, tags, n=1)
        hint = f"did you mean '{close[0]}'?" if close else f"use one of: {', '.join(tags)}"
        return [Problem(join_path(path, tag_field), f"unknown {tag_field} '{tag}'", hint)]
    if kind == "literal_error":
        options = _literal_options(str(ctx.get("expected", "")))
        message = (
            f"must be one of {', '.join(repr(o) for o in options)}, got {describe_value(value)}"
        )
        close = difflib.get_close_matches(str(value), options, n=1)
        hint = f"did you mean '{close[0]}'?" if close else f"use one of: {', '.join(options)}"
        return [Problem(path, message, hint)]
    if kind in _TYPE_ERRORS:
        expected, hint = _TYPE_ERRORS[kind]
        return [Problem(path, f"expected {expected}, got {describe_value(value)}", hint)]
    if kind in _BOUNDS:
        bound = next(v for k, v in ctx.items() if k in ("gt", "ge", "lt", "le"))
        sign = _BOUNDS[kind]
        message = f"must be {sign} {bound}, got {describe_value(value)}"
        return [Problem(path, message, f"use a value {sign} {bound}")]
    if kind == "too_short":
        return [Problem(path, "must not be empty", "give at least one value")]
    if kind == "string_pattern_mismatch":
        hint = "use only letters, digits, '-', '_' and '.' (it becomes a folder name)"
        return [Problem(path, f"{describe_value(value)} is not allowed here", hint)]
    return [Problem(path, str(error.get("msg", "is invalid")), "")]


def problems_from(err: ValidationError) -> list[Problem]:
    problems: list[Problem] = []
    for error in err.errors(include_url=False):
        for problem in _problems_from_error(error):
            if problem not in problems:
                problems.append(problem)
    return problems
