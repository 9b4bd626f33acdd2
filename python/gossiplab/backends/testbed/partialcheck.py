"""The partial-message rows of a crosscheck, from each results folder's own tables.

Parts sent are the items of the ``partial`` traffic kind (one per part carried); the
bytes of ``partial`` and ``partsmeta`` are the partial RPCs'; the rest comes from
``partial.parquet``: parts received from the network, duplicate parts, full-message copies,
and each (group, node)'s completion time after the group's publication.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from gossiplab.analysis.results import load_results

MS = 1e6

# (metric, unit) in the order the table lists them.
METRICS: tuple[tuple[str, str], ...] = (
    ("groups complete (share of group × node)", ""),
    ("group completion p50", "ms"),
    ("group completion p99", "ms"),
    ("group completion max", "ms"),
    ("parts sent in partial messages", ""),
    ("partial bytes sent", "B"),
    ("parts metadata bytes sent", "B"),
    ("parts received from the network", ""),
    ("duplicate parts received", ""),
    ("full-message copies received", ""),
)


def partial_figures(folder: Path) -> dict[str, float | None]:
    """The METRICS of one results folder (None where it has no partial table)."""
    tables, _, _ = load_results(folder)
    partial = tables.partial
    if partial is None or partial.height == 0:
        return {name: None for name, _ in METRICS}
    published = tables.publishes.select("msg", "t_publish_ns")
    done = (
        partial.join(published, on="msg")
        .select((pl.col("t_complete_ns") - pl.col("t_publish_ns")).alias("took"))
        .drop_nulls()["took"]
        / MS
    )
    traffic = tables.traffic.group_by("kind").agg(pl.col("msgs_sent", "bytes_sent").sum())
    sent = {row["kind"]: row for row in traffic.iter_rows(named=True)}

    def kind(name: str, column: str) -> float:
        return float(sent.get(name, {}).get(column, 0))

    return dict(
        zip(
            [name for name, _ in METRICS],
            [
                done.len() / partial.height,
                done.quantile(0.5) if done.len() else None,
                done.quantile(0.99) if done.len() else None,
                done.max() if done.len() else None,
                kind("partial", "msgs_sent"),
                kind("partial", "bytes_sent"),
                kind("partsmeta", "bytes_sent"),
                float(partial["parts_recv"].sum()),
                float(partial["parts_dup"].sum()),
                float(partial["full_recv"].sum()),
            ],
            strict=True,
        )
    )
