"""The text and table that open a run report's "Partial messages" section.

They say what the groups were and which application rule decided what to send (the rule
is ours: go-libp2p-pubsub leaves it to the application), then list the summary's
``partial`` numbers.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from typing import Any

from gossiplab.report.pages import Block, Table, Text


def partial_blocks(summary: Mapping[str, Any], scenario: str) -> list[Block]:
    blocks: list[Block] = []
    intro = _intro(scenario)
    if intro:
        blocks.append(Text(intro))
    numbers = summary.get("partial")
    if isinstance(numbers, Mapping) and numbers:
        blocks.append(Table(["metric", "value"], _rows(numbers)))
    return blocks


def _intro(scenario: str) -> str:
    try:
        partial = tomllib.loads(scenario).get("workload", {}).get("partial")
    except tomllib.TOMLDecodeError:
        return ""
    if not isinstance(partial, Mapping):
        return ""
    eager = "with eager push" if partial.get("eager_push") else "without eager push"
    return (
        f"Every message is a group of {partial.get('parts')} parts of {partial.get('part_size')} "
        f"(+{partial.get('part_overhead')} each), exchanged with gossipsub v1.3's partial "
        f"messages extension {eager}. What a node sends its peers is decided by the "
        f"application rule {partial.get('rule')!r}: go-libp2p-pubsub v0.17.0's own test "
        "application, not an Ethereum client's; other rules (explicit wants, batching) "
        "would give other numbers."
    )


def _rows(numbers: Mapping[str, Any], prefix: str = "") -> list[list[str]]:
    rows: list[list[str]] = []
    for key, value in numbers.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            rows += _rows(value, f"{name}.")
        else:
            rows.append([name, _text(value)])
    return rows


def _text(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.3f}"
    return str(value)
