"""Shared by every section: strict models, and problems raised from inside validators."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationInfo
from pydantic_core import PydanticCustomError

from gossiplab.errors import Problem

MAX_SEED = 2**63 - 1  # TOML integers are signed 64-bit
MAX_U32 = 2**32 - 1  # node ids, sizes and message indices are stored as uint32
MAX_U16 = 2**16 - 1  # topic indices are stored as uint16
SHARE_TOLERANCE = 1e-9


def raise_problems(problems: list[Problem]) -> None:
    """Raise the problems a validator found as one pydantic error; paths are relative to it."""
    if problems:
        context = {"count": len(problems), "problems": problems}
        raise PydanticCustomError("gossiplab_problems", "{count} problem(s)", context)


def range_problem(path: str, value: float, low: float, high: float, what: str) -> list[Problem]:
    if low <= value <= high:
        return []
    return [Problem(path, f"must be between {low} and {high}, got {value}", f"use {what}")]


def is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_index(part: str) -> bool:
    """An array index in a dotted path; ASCII only, since "²".isdigit() is true too."""
    return part.isascii() and part.isdigit()


class Section(BaseModel):
    """Common settings: unknown keys are errors, no type coercion, no NaN, immutable."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, allow_inf_nan=False)


def context_base_dir(info: ValidationInfo) -> Path:
    """The folder relative paths are found from, as passed in the validation context."""
    context = info.context if isinstance(info.context, dict) else {}
    return Path(context.get("base_dir") or Path.cwd())


def describe_value(value: Any) -> str:
    """A value as a user wrote it, for a message: `the string "x"`, `a table`, `6`."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f"the string {json.dumps(value)}"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, int | float):
        return repr(value)
    return f"a {type(value).__name__}"
