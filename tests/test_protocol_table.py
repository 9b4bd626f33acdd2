"""The protocol parameter table in docs/protocol.md states each preset's defaults: check
every cell against the presets the scenario parser applies, so the documentation cannot
drift."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from gossiplab.scenario import PROTOCOL_PRESETS, parse_scenario

REPO = Path(__file__).resolve().parent.parent
PRESETS = ("go-default", "rust-default", "ethereum")


def readme_rows() -> dict[str, list[str]]:
    """Parameter -> its three preset cells, from the Protocol model parameters table."""
    text = (REPO / "docs" / "protocol.md").read_text(encoding="utf-8")
    section = text.split("## Protocol model", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, list[str]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 6 and re.fullmatch(r"`\w+`", cells[0]):
            rows[cells[0].strip("`")] = [c.strip("`") for c in cells[3:]]
    return rows


def cell_value(cell: str) -> Any:
    """A table cell as a scenario file would write it."""
    if cell in ("true", "false"):
        return cell == "true"
    if cell == "[]":
        return []
    for kind in (int, float):
        try:
            return kind(cell)
        except ValueError:
            pass
    return cell


def test_the_table_lists_every_preset_parameter() -> None:
    documented = set(readme_rows())
    assert documented == set(PROTOCOL_PRESETS["go-default"]) | {"direct_peers"}


@pytest.mark.parametrize("preset", PRESETS)
def test_every_cell_is_the_presets_default(preset: str) -> None:
    column = PRESETS.index(preset)
    default = parse_scenario({"protocol": {"preset": preset}}, REPO).protocol
    wrong = {}
    for name, cells in readme_rows().items():
        written = {"protocol": {"preset": preset, name: cell_value(cells[column])}}
        value = getattr(parse_scenario(written, REPO).protocol, name)
        if value != getattr(default, name):
            wrong[name] = (cells[column], getattr(default, name))
    assert not wrong, f"README cells that are not the {preset} default: {wrong}"
