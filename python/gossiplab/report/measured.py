"""Report blocks for what summary.json counts of the measured messages alone: their own
traffic (``traffic_measured``, written when ``output.message_traffic`` is on) and the
copies that came back to their publishers (``duplicates.publisher``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gossiplab.analysis.headline import format_value
from gossiplab.report.pages import Block, Section, Table, Text


def publisher_duplicates(summary: Mapping[str, Any]) -> list[Block]:
    """One line on copies back to the author, when the summary counts them."""
    count = summary.get("duplicates", {}).get("publisher")
    if count is None:
        return []
    return [
        Text(
            f"Copies back to their publishers: {format_value(count, 'count')}. They count as "
            "duplicates (go traces them DUPLICATE_MESSAGE) but not in the per-receiver "
            "duplicate percentiles; they arise only when messages carry no author "
            "(signing = strict-no-sign)."
        )
    ]


def traffic_measured(summary: Mapping[str, Any]) -> list[Section]:
    """The measured messages' own traffic by kind, when the run counted it per message."""
    measured = summary.get("traffic_measured")
    if not isinstance(measured, Mapping):
        return []
    rows = [
        [kind, format_value(row["msgs_sent"], "count"), format_value(row["bytes_sent"], "bytes")]
        for kind, row in measured["by_kind"].items()
    ]
    rows.append(["all", "", format_value(measured["bytes_sent"], "bytes")])
    text = (
        f"Traffic that names one of the {measured['messages']:,} measured messages: payload "
        "copies, and ids in IHAVE, IWANT, IDONTWANT, IANNOUNCE and INEED (items are copies "
        "or ids; bytes are their share of the RPCs). Warm-up messages, GRAFT, PRUNE and "
        "subscriptions are left out."
    )
    return [
        Section(
            "Traffic of the measured messages",
            [Text(text), Table(["kind", "items sent", "bytes sent"], rows, numeric_from=1)],
        )
    ]
