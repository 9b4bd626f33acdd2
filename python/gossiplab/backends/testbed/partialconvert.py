"""Partial messages as the Go nodes recorded them -> ``partial.parquet`` and completions.

go-libp2p-pubsub traces nothing of partial messages (its trace has no event for them), so
each Go node records every group it heard of in node.json's ``partial`` list
(testbed/gossipnode/partiallog.go ``partialRecord``): when it learned the group, the parts
its mempool held, the new and duplicate parts partial messages brought, the parts the full
message brought, when it held every part and from whom the last one came, and the partial
RPCs' bytes. Full-message copies come from the trace (DELIVER and DUPLICATE).

A node's delivery of a group is the moment it holds every part: the earlier of its own
record and its first full-message delivery. Rows are per (group, node) for every node but
the group's publisher, which is never a receiver of its own message.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

from gossiplab.analysis.tables import POLARS_SCHEMAS
from gossiplab.backends.partial_plan import PartialPlan

NO_PEER = 2**32 - 1

Key = tuple[int, int]  # (msg, node)


def records(results: Mapping[int, dict[str, Any] | None]) -> dict[Key, dict[str, Any]]:
    """Every node's record of every group it heard of, by (msg, node)."""
    out: dict[Key, dict[str, Any]] = {}
    for node, result in results.items():
        for record in (result or {}).get("partial") or []:
            out[(int(record["msg"]), node)] = record
    return out


def completions(
    recorded: Mapping[Key, dict[str, Any]], publisher: Mapping[int, int], epoch_ns: int
) -> dict[Key, tuple[int, int]]:
    """(t_ns, from_node) at which each receiver held every part, by its own record."""
    out: dict[Key, tuple[int, int]] = {}
    for (msg, node), record in recorded.items():
        done = record.get("complete_ns")
        if done is None or publisher.get(msg) in (None, node):
            continue
        sender = int(record.get("complete_from", -1))
        out[(msg, node)] = (int(done) - epoch_ns, sender if sender >= 0 else NO_PEER)
    return out


def merge_first(
    first: dict[Key, tuple[int, int]], completed: Mapping[Key, tuple[int, int]]
) -> None:
    """Make each receipt the earlier of the full message's delivery and completion."""
    for key, (t, sender) in completed.items():
        if key not in first or t < first[key][0]:
            first[key] = (t, sender)


def hops(first: Mapping[Key, tuple[int, int]], publisher: Mapping[int, int]) -> dict[Key, int]:
    """Each receipt's hop, as the model counts it for groups of parts: one more than the
    sender's hop if the sender held the whole group by then, else 1 (the sender relayed
    parts before it had them all; the publisher is hop 0). Receipts of parts do not form
    a tree: two nodes can complete from each other's parts."""
    out: dict[Key, int] = {}
    for (msg, node), (t, sender) in sorted(first.items(), key=lambda item: item[1][0]):
        if sender == publisher.get(msg):
            out[(msg, node)] = 1
            continue
        before = first.get((msg, sender))
        done = before is not None and before[0] <= t and (msg, sender) in out
        out[(msg, node)] = out[(msg, sender)] + 1 if done else 1
    return out


def partial_table(
    plan: PartialPlan,
    recorded: Mapping[Key, dict[str, Any]],
    first: Mapping[Key, tuple[int, int]],
    full_recv: Mapping[Key, int],
    publisher: Mapping[int, int],
) -> pl.DataFrame:
    """``partial.parquet``: one row per published group and receiving node."""
    rows = []
    for msg, holder in sorted(publisher.items()):
        for node, role in enumerate(plan.roles):
            if node == holder:
                continue
            record = recorded.get((msg, node), {})
            done = first.get((msg, node))
            rows.append(
                (
                    msg,
                    node,
                    role,
                    plan.parts,
                    plan.held[msg][node].bit_count(),
                    int(record.get("parts_recv", 0)) + int(record.get("parts_via_full", 0)),
                    int(record.get("parts_dup", 0)),
                    full_recv.get((msg, node), 0),
                    done[0] if done else None,
                    int(record.get("bytes_partial_recv", 0)),
                )
            )
    return pl.DataFrame(rows, schema=POLARS_SCHEMAS["partial"], orient="row")
