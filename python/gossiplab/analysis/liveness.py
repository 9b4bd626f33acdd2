"""Who could have received a message: publishers that published, receivers that were up
and in the message's topic.

With faults, a node that is down while a message spreads cannot receive it, and counting
it would blame the protocol for the fault. DESIGN.md therefore computes the delivery
ratio over the nodes alive for the message's whole lifetime: from its publication until
`message_lifetime_ns` later (the runner records the message-cache window, after which
gossip can no longer recover it). The run info lists the down intervals as
`down = [[node, from_ns, until_ns or null], ...]`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import polars as pl

if TYPE_CHECKING:
    from gossiplab.scenario import Scenario

EXCLUDED_SCHEMA = {"msg": pl.UInt32, "node": pl.UInt32}


def message_lifetime_ns(s: Scenario) -> int:
    """How long a message spreads: its message-cache window, after which gossip cannot
    recover it any more (the run info's ``message_lifetime_ns``)."""
    return s.protocol.history_length * s.protocol.heartbeat


def excluded_receivers(messages: pl.DataFrame, run: Mapping[str, Any]) -> pl.DataFrame:
    """(msg, node) pairs where the node was down, or out of the message's topic, during
    part of the message's lifetime.

    `messages` needs msg, publisher, topic and t_publish_ns. The publisher is never
    excluded. The run info lists `down = [[node, from_ns, until_ns or null], ...]` and
    `unsubscribed = [[node, topic, from_ns, until_ns or null], ...]`.
    """
    down = run.get("down") or []
    away = [[d[0], None, d[1], d[2]] for d in down] + list(run.get("unsubscribed") or [])
    lifetime = int(run.get("message_lifetime_ns") or 0)
    if not away or messages.is_empty():
        return pl.DataFrame(schema=EXCLUDED_SCHEMA)
    intervals = pl.DataFrame(
        {
            "node": [int(a[0]) for a in away],
            "away_topic": [None if a[1] is None else int(a[1]) for a in away],
            "from_ns": [int(a[2]) for a in away],
            "until_ns": [None if a[3] is None else int(a[3]) for a in away],
        },
        schema={
            "node": pl.UInt32,
            "away_topic": pl.Int64,
            "from_ns": pl.Int64,
            "until_ns": pl.Int64,
        },
    )
    start = pl.col("t_publish_ns")
    end = pl.col("t_publish_ns") + lifetime
    return (
        messages.select("msg", "publisher", "topic", "t_publish_ns")
        .join(intervals, how="cross")
        .filter(
            (pl.col("node") != pl.col("publisher"))
            & (pl.col("away_topic").is_null() | (pl.col("away_topic") == pl.col("topic")))
            & (pl.col("from_ns") <= end)
            & (pl.col("until_ns").is_null() | (pl.col("until_ns") > start))
        )
        .select("msg", "node")
        .unique()
    )
