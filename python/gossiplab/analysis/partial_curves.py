"""What the partial-message figures of a run are drawn from, computed from its tables.

A run whose workload is partial messages has ``partial.parquet``: one row per (group,
node) with the node's role, the parts it held before the group was published, the parts
it first got from the network (as parts or with a full message), the parts it got again,
the full copies it received and when it held every part (``t_complete_ns``, null if
never). The summary's ``partial`` object gives the
headline numbers; this module gives the curves and splits behind the figures, over the
same measured groups as every other metric (published after the warm-up, publisher
excluded: a publisher is never a receiver of its own message).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from gossiplab.analysis.metrics import NS_PER_MS, in_warm_up

ROLES: tuple[str, ...] = ("requests", "supports", "none")
"""A node's part in the extension on the topic: requests partial messages (and supports
sending them), only supports sending them, or does not take part (full messages only)."""

GROUP_KINDS: tuple[str, ...] = ("payload", "partial", "partsmeta", "ihave", "iwant", "idontwant")
"""Traffic kinds that carry or name the groups themselves: full copies, parts, parts
metadata and the gossip about full messages. Mesh upkeep (GRAFT, PRUNE, SUBSCRIBE, the
extensions hello) is left out, so that bandwidth compares what disseminating costs."""

SPLIT_KINDS: tuple[str, ...] = ("payload", "partial", "partsmeta", "extensions")
"""The kinds the bytes figure splits: full messages against the extension's traffic."""


def measured_pairs(
    partial: pl.DataFrame, publishes: pl.DataFrame, run: Mapping[str, Any]
) -> pl.DataFrame:
    """The (group, node) rows of the measured groups, publisher excluded, with
    ``latency_ns`` = t_complete_ns - the group's publish time (null if never complete)."""
    groups = publishes.filter(~in_warm_up(run) & (pl.col("t_publish_ns") >= 0)).select(
        "msg", "publisher", "t_publish_ns"
    )
    return (
        partial.join(groups, on="msg", how="inner")
        .filter(pl.col("node") != pl.col("publisher"))
        # Never before the publish (a hand-built or foreign table could say so).
        .with_columns(
            latency_ns=(pl.col("t_complete_ns") - pl.col("t_publish_ns")).clip(lower_bound=0)
        )
        .drop("publisher")
        .sort("msg", "node")
    )


@dataclass(frozen=True)
class CompletionCurve:
    """Cumulative share of (group, node) pairs complete against time since publish.

    ``times_ms`` ascending; ``share[i]`` is the share of all ``pairs`` complete at
    ``times_ms[i]``. Pairs that never complete are in the denominator, so the curve ends
    at ``complete / pairs`` and a curve below 1 shows nodes left without every part.
    """

    label: str
    times_ms: np.ndarray
    share: np.ndarray
    pairs: int

    @property
    def complete(self) -> int:
        return len(self.times_ms)


def completion_curve(latency_ns: pl.Series, label: str = "") -> CompletionCurve:
    """The completion curve of the given latencies (null = never complete)."""
    done = latency_ns.drop_nulls().sort().cast(pl.Float64) / NS_PER_MS
    ranks = np.arange(1, done.len() + 1)
    pairs = latency_ns.len()
    return CompletionCurve(label, done.to_numpy(), ranks / pairs if pairs else ranks, pairs)


def completion_by_role(pairs: pl.DataFrame) -> list[CompletionCurve]:
    """One curve over every pair, then one per role present, when more than one is."""
    curves = [completion_curve(pairs["latency_ns"], "all nodes")]
    roles = [r for r in ROLES if r in set(pairs["role"].unique().to_list())]
    if len(roles) > 1:
        curves += [
            completion_curve(pairs.filter(pl.col("role") == r)["latency_ns"], f"role {r}")
            for r in roles
        ]
    return curves


def part_sources(pairs: pl.DataFrame) -> pl.DataFrame:
    """Per role (in ROLES order): pairs, parts needed, held before publish, first received
    from the network (as parts or in a full message), duplicate parts, full copies
    received, pairs completed."""
    role_order = pl.Enum(list(ROLES))
    return (
        pairs.group_by("role")
        .agg(
            pairs=pl.len().cast(pl.Int64),
            parts=pl.col("parts").cast(pl.Int64).sum(),
            held=pl.col("held").cast(pl.Int64).sum(),
            parts_recv=pl.col("parts_recv").cast(pl.Int64).sum(),
            parts_dup=pl.col("parts_dup").cast(pl.Int64).sum(),
            full_recv=pl.col("full_recv").cast(pl.Int64).sum(),
            completed=pl.col("t_complete_ns").is_not_null().sum().cast(pl.Int64),
        )
        .with_columns(pl.col("role").cast(role_order))
        .sort("role")
        .with_columns(pl.col("role").cast(pl.String))
    )


def duplicate_counts(pairs: pl.DataFrame) -> pl.DataFrame:
    """How many (group, node) pairs received each number of duplicate parts."""
    return (
        pairs.group_by("parts_dup")
        .agg(pairs=pl.len().cast(pl.Int64))
        .sort("parts_dup")
        .select(pl.col("parts_dup").cast(pl.Int64), "pairs")
    )


def bytes_received_by_kind(traffic: pl.DataFrame, kinds: tuple[str, ...]) -> dict[str, int]:
    """Bytes received by all nodes over the run, per kind in ``kinds`` (0 when absent)."""
    totals = dict(
        traffic.filter(pl.col("kind").is_in(kinds))
        .group_by("kind")
        .agg(pl.col("bytes_recv").cast(pl.Int64).sum())
        .iter_rows()
    )
    return {kind: int(totals.get(kind, 0)) for kind in kinds}
