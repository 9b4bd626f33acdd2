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


NS_PER_MS = 1e6


def _rows(numbers: Mapping[str, Any]) -> list[list[str]]:
    """The summary's ``partial`` group (analysis/partial.py), the numbers a reader wants."""
    rows = [["groups measured", _text(numbers.get("groups"))]]
    for key, label in (
        ("completion_ns", "per (group, node): time until it held every part"),
        ("group_completion_ns", "per group: time until every node held every part"),
    ):
        stats = numbers.get(key)
        if isinstance(stats, Mapping):
            rows.append([f"{label}, p50 / p99 / max (ms)", _percentiles(stats)])
    parts = numbers.get("parts")
    if isinstance(parts, Mapping):
        rows += [
            ["parts held before the publish", _with_mean(parts, "held")],
            ["parts first received from the network", _with_mean(parts, "from_network")],
            ["duplicate parts received", _with_mean(parts, "duplicates")],
        ]
    rows.append(["full copies received", _text(numbers.get("full_copies_recv"))])
    sent = numbers.get("bytes")
    if isinstance(sent, Mapping):
        rows += [[f"bytes sent: {kind}", _text(count)] for kind, count in sent.items()]
    rows.append(
        ["part bytes saved against one full copy each", _text(numbers.get("bytes_saved_vs_full"))]
    )
    return rows


def _percentiles(stats: Mapping[str, Any]) -> str:
    values = [stats.get("p50"), stats.get("p99"), stats.get("max")]
    return " / ".join("never" if v is None else f"{v / NS_PER_MS:,.1f}" for v in values)


def _with_mean(parts: Mapping[str, Any], key: str) -> str:
    per_node = parts.get(f"{key}_per_node")
    mean = per_node.get("mean") if isinstance(per_node, Mapping) else None
    text = _text(parts.get(key))
    return text if mean is None else f"{text} ({mean:,.2f} per group and node)"


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
