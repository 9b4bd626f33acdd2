"""The ``partial`` group of summary.json: partial messages ([workload.partial]).

From the ``partial`` table (one row per group and node but its publisher) and the traffic
table, over the measured groups (those not in the warm-up, as every message metric):

- ``completion_ns``: per (group, node), the time from the group's publish until the node
  held every part, a node that never did counting as a loss (later than any other:
  ``metrics.distribution_with_losses``). A node that held every part before it learned of
  the group completes when it learns of it.
- ``group_completion_ns``: per group, the time until every node held every part.
- ``parts``: parts held before publish (``held``) and parts first received from the
  network (``from_network``: in partial RPCs or with a full message), as sums and means
  per (group, node); part duplicates (received in partial RPCs, already held).
- ``full_copies_recv``: full-message copies received.
- ``bytes``: bytes sent, whole run, of partial RPCs with parts (``partial``), of parts
  metadata (``partsmeta``), of the extensions control message and of full messages
  (``payload``).
- ``bytes_saved_vs_full``: ``part_bytes × (parts × receivers − parts_received)``, whole run,
  where ``part_bytes`` is ``part_size + part_overhead``, ``receivers`` the (group, node)
  pairs that completed, and ``parts_received`` every part that reached a node: in partial
  RPCs (duplicates included) and in full copies (``parts`` each). It is the part bytes
  the run did not move compared with every receiver getting exactly one full message;
  framing, metadata and the full message's own overhead are not in it (they are under
  ``bytes``). Negative when duplicates cost more than the mempools saved.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

from gossiplab.analysis.metrics import distribution, distribution_with_losses, in_warm_up
from gossiplab.analysis.tables import RunTables


def partial_summary(tables: RunTables, run: Mapping[str, Any]) -> dict[str, Any] | None:
    """The ``partial`` summary group, or None for a run without partial messages."""
    if tables.partial is None:
        return None
    publishes = tables.publishes.filter(~in_warm_up(run) & (pl.col("t_publish_ns") >= 0))
    rows = tables.partial.join(publishes.select("msg", "t_publish_ns"), on="msg", how="inner")
    rows = rows.with_columns(completion_ns=pl.col("t_complete_ns") - pl.col("t_publish_ns"))
    groups = rows.group_by("msg").agg(
        # A group with a node that never completed never completed everywhere.
        pl.when(pl.col("completion_ns").is_null().any())
        .then(None)
        .otherwise(pl.col("completion_ns").max())
        .alias("group_ns")
    )
    return {
        "groups": publishes.height,
        "completion_ns": distribution_with_losses(rows["completion_ns"]),
        "group_completion_ns": distribution_with_losses(groups["group_ns"]),
        "parts": _parts(rows),
        "full_copies_recv": int(rows["full_recv"].sum()),
        "bytes": _bytes(tables.traffic),
        "bytes_saved_vs_full": _bytes_saved(tables, run),
    }


def _parts(rows: pl.DataFrame) -> dict[str, Any]:
    return {
        "held": int(rows["held"].sum()),
        "from_network": int(rows["parts_recv"].sum()),
        "duplicates": int(rows["parts_dup"].sum()),
        "held_per_node": distribution(rows["held"]),
        "from_network_per_node": distribution(rows["parts_recv"]),
        "duplicates_per_node": distribution(rows["parts_dup"]),
    }


def _sent(traffic: pl.DataFrame, kind: str, column: str = "bytes_sent") -> int:
    return int(traffic.filter(pl.col("kind") == kind)[column].sum())


def _bytes(traffic: pl.DataFrame) -> dict[str, int]:
    return {
        kind: _sent(traffic, kind) for kind in ("partial", "partsmeta", "extensions", "payload")
    }


def _bytes_saved(tables: RunTables, run: Mapping[str, Any]) -> int | None:
    part_bytes = run.get("partial_part_bytes")
    if part_bytes is None or tables.partial is None or tables.partial.is_empty():
        return None
    parts = int(tables.partial["parts"][0])
    receivers = int(tables.partial["t_complete_ns"].is_not_null().sum())
    traffic = tables.traffic
    # Items of the partial kind are parts; of the payload kind, full copies.
    received = _sent(traffic, "partial", "msgs_recv") + parts * _sent(
        traffic, "payload", "msgs_recv"
    )
    return int(part_bytes) * (parts * receivers - received)
