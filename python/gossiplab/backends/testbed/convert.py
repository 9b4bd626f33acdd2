"""Trace converter: what the Go nodes wrote -> the event tables of DESIGN.md.

Each node folder holds ``node.json`` (its peer id, its publishes with their message ids,
exact traffic counters and drops, written at exit) and ``trace.ndjson``
(go-libp2p-pubsub's own trace events). From them:

- publishes: one row per scheduled message that was published; ``msg`` is its position
  in the schedule (the publisher recorded the id go gave it), times are ns from the run's
  start (``epoch_ns`` on the host clock, which every node shares).
- deliveries: the first DELIVER_MESSAGE of each (message, node) other than the publisher;
  ``from_node`` is its receivedFrom, ``hop`` follows the first-receipt tree (publisher 0,
  a node one more than its first sender), ``duplicates`` counts DUPLICATE_MESSAGE.
- receipts (optional): every DELIVER_MESSAGE and DUPLICATE_MESSAGE.
- traffic and drops: the counters of node.json (the raw tracer saw every RPC with its
  exact size; the trace's RPC events carry no sizes). They count ids, not protobuf
  entries, so the traffic table has no ``entries_sent``/``entries_recv`` columns.
- connections: which pairs of nodes talked pubsub, from ON_NEW_OUTBOUND_STREAM (go opens
  one stream to every new pubsub peer, whenever the connection came up): the topology's
  edges, and pairs that were not edges but connected during the run (peer exchange).
  Nothing above assumes a static topology: senders are mapped by peer id from every
  node's node.json, and hops follow the first-receipt tree over whatever links carried it.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from gossiplab.analysis.tables import POLARS_SCHEMAS, TRAFFIC_KINDS, RunTables, empty_table
from gossiplab.backends.partial_plan import PartialPlan
from gossiplab.backends.testbed import partialconvert
from gossiplab.workload import Schedule

TRACE_FILE = "trace.ndjson"
RESULT_FILE = "node.json"
NO_PEER = 2**32 - 1  # drops whose peer is not a neighbour (peer is a uint32 column)

# pb.TraceEvent types (go-libp2p-pubsub pb/trace.proto)
PUBLISH_MESSAGE = 0
DUPLICATE_MESSAGE = 2
DELIVER_MESSAGE = 3
ON_NEW_OUTBOUND_STREAM = 4
RECV_RPC = 6  # kept only with testbed.trace_rpc
GRAFT = 11  # a peer joined the node's mesh
PRUNE = 12  # a peer left the node's mesh (the tests read these three from kept traces)
LISTED_PAIRS = 100  # pairs beyond the topology named in the summary; all are counted


@dataclass
class Conversion:
    tables: RunTables
    events: int  # trace events read
    unpublished: list[int] = field(default_factory=list)  # scheduled, never published
    publish_errors: dict[int, str] = field(default_factory=dict)
    unknown_ids: int = 0  # payload events whose id no publisher recorded
    broken_lines: int = 0  # trace lines that were not JSON (a node killed mid-write)
    after_end: int = 0  # receipts traced after the run's end, while the nodes stopped
    missing_results: list[int] = field(default_factory=list)  # nodes without node.json
    # (t_ns, node, peer) of each outbound pubsub stream: one per peer a node talked to
    streams: list[tuple[int, int, int]] = field(default_factory=list)

    def _first_streams(self) -> dict[tuple[int, int], tuple[int, int, int]]:
        """Per pair of known nodes, (t_ns, node, peer) of the first stream either end
        opened; the end that opened it first stands for the dialer."""
        first: dict[tuple[int, int], tuple[int, int, int]] = {}
        for t, node, peer in sorted(self.streams):
            pair = (min(node, peer), max(node, peer))
            if peer != NO_PEER and pair not in first:
                first[pair] = (t, node, peer)
        return first

    def opened(self, edges: Iterable[Sequence[int]]) -> pl.DataFrame:
        """The ``connections`` table: pairs beyond the topology, at their first stream."""
        topology = {(min(a, b), max(a, b)) for a, b in edges}
        rows = [row for pair, row in self._first_streams().items() if pair not in topology]
        return _frame("connections", rows, sort=["t_ns", "node", "peer"])

    def counts(self) -> dict[str, Any]:
        """What the conversion read and could not place (for summary.json)."""
        return {
            "trace_events": self.events,
            "unpublished": self.unpublished,
            "publish_errors": {str(k): v for k, v in self.publish_errors.items()},
            "unknown_ids": self.unknown_ids,
            "broken_lines": self.broken_lines,
            "receipts_after_end": self.after_end,
            "missing_results": self.missing_results,
        }

    def connections(self, edges: Iterable[Sequence[int]]) -> dict[str, Any]:
        """Pairs that talked pubsub, against the topology's edges (for summary.json)."""
        topology = {(min(a, b), max(a, b)) for a, b in edges}
        first = self._first_streams()
        beyond = sorted((t, pair) for pair, (t, _, _) in first.items() if pair not in topology)
        return {
            "topology_edges": len(topology),
            "edges_connected": sum(1 for pair in first if pair in topology),
            "beyond_topology": len(beyond),
            "beyond_pairs": [list(pair) for _, pair in beyond[:LISTED_PAIRS]],
            "first_beyond_t_ns": beyond[0][0] if beyond else None,
            "unknown_peers": sum(1 for _, _, peer in self.streams if peer == NO_PEER),
        }


def read_result(folder: Path) -> dict[str, Any] | None:
    try:
        return json.loads((folder / RESULT_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def trace_events(path: Path, broken: list[int]) -> Iterator[dict[str, Any]]:
    try:
        handle = path.open(encoding="utf-8")
    except OSError:
        return
    with handle:
        for line in handle:
            try:
                yield json.loads(line)
            except ValueError:
                broken[0] += 1


def convert(
    folders: Mapping[int, Path],
    schedule: Schedule,
    epoch_ns: int,
    *,
    end_ns: int | None = None,
    peer_ids: Mapping[str, int] | None = None,
    receipts: bool = False,
    plan: PartialPlan | None = None,
) -> Conversion:
    """Convert the node folders (node index -> folder) of one run.

    ``end_ns`` is the run's end (ns from its start): the nodes keep tracing while they
    are told to stop, one after another, and a receipt traced after the end is not
    counted, as the model's run ends there and counts none.

    ``peer_ids`` maps base64 peer ids to node indexes; by default it is read from the
    node.json files (a crashed node's id can be given this way). With ``plan`` (a
    workload of partial messages) a node's delivery of a group is when it held every
    part, and the tables have ``partial`` (partialconvert.py).
    """
    results = {node: read_result(folder) for node, folder in folders.items()}

    def in_run(t: int) -> bool:
        return end_ns is None or t <= end_ns

    ids = dict(peer_ids or {})
    for node, result in results.items():
        if result is not None:
            ids.setdefault(result["peer_id"], node)
    conversion = Conversion(tables=RunTables(*(empty_table(n) for n in _REQUIRED)), events=0)
    conversion.missing_results = sorted(n for n, r in results.items() if r is None)

    publishes, msg_of_id = _publishes(results, schedule, epoch_ns, conversion)
    publisher = dict(zip(publishes["msg"].to_list(), publishes["publisher"].to_list(), strict=True))
    first: dict[tuple[int, int], tuple[int, int]] = {}  # (msg, node) -> (t, from)
    duplicates: dict[tuple[int, int], int] = {}
    receipt_rows: list[tuple[int, int, int, int, bool]] = []
    broken = [0]
    for node, folder in sorted(folders.items()):
        for event in trace_events(folder / TRACE_FILE, broken):
            conversion.events += 1
            kind = event.get("type")
            if kind == ON_NEW_OUTBOUND_STREAM:
                peer = ids.get(event["onNewOutboundStream"].get("peerID", ""), NO_PEER)
                conversion.streams.append((int(event["timestamp"]) - epoch_ns, node, peer))
                continue
            if kind not in (DELIVER_MESSAGE, DUPLICATE_MESSAGE):
                continue
            body = event["deliverMessage" if kind == DELIVER_MESSAGE else "duplicateMessage"]
            msg = msg_of_id.get(body.get("messageID", ""))
            if msg is None:
                conversion.unknown_ids += 1
                continue
            sender = ids.get(body.get("receivedFrom", ""), NO_PEER)
            t = int(event["timestamp"]) - epoch_ns
            if kind == DELIVER_MESSAGE and (node == publisher[msg] or sender == node):
                # A node delivering a message it published itself: the publisher, or a
                # node re-publishing a group it completed from parts.
                continue
            if not in_run(t):
                conversion.after_end += 1
                continue
            key = (msg, node)
            if kind == DELIVER_MESSAGE:
                if key in first:
                    continue
                first[key] = (t, sender)
            else:
                duplicates[key] = duplicates.get(key, 0) + 1
            if receipts:
                receipt_rows.append((msg, node, sender, t, kind == DUPLICATE_MESSAGE))
    conversion.broken_lines = broken[0]

    full_first = dict(first)  # full-message receipts, before groups completed from parts
    partial = None
    if plan is not None:
        full_recv = {key: 1 + duplicates.get(key, 0) for key in first}
        for key, count in duplicates.items():
            full_recv.setdefault(key, count)
        recorded = partialconvert.records(results)
        completed = partialconvert.completions(recorded, publisher, epoch_ns)
        partialconvert.merge_first(first, {k: v for k, v in completed.items() if in_run(v[0])})
        partial = partialconvert.partial_table(plan, recorded, first, full_recv, publisher)
    hops = partialconvert.hops(first, publisher) if plan is not None else None
    deliveries = _deliveries(first, duplicates, publisher, hops)
    copies: dict[int, int] = {}
    for (msg, _), count in duplicates.items():
        copies[msg] = copies.get(msg, 0) + count
    for msg, _ in full_first:
        copies[msg] = copies.get(msg, 0) + 1
    msgs = publishes["msg"].to_list()
    # Copies back to the publisher (possible without an author): go traces each as a
    # DUPLICATE_MESSAGE at the publisher, which has no deliveries row to count them in.
    back = [duplicates.get((m, publisher[m]), 0) for m in msgs]
    publishes = publishes.with_columns(
        receipts=pl.Series([copies.get(m, 0) for m in msgs], dtype=pl.UInt64),
        publisher_duplicates=pl.Series(back, dtype=pl.UInt32),
    ).select(POLARS_SCHEMAS["publishes"].names())
    conversion.tables = RunTables(
        publishes=publishes,
        deliveries=deliveries,
        traffic=_traffic(results),
        drops=_drops(results, ids),
        receipts=_frame("receipts", receipt_rows, sort=["msg", "t_ns", "node"])
        if receipts
        else None,
        partial=partial,
    )
    return conversion


_REQUIRED = ("publishes", "deliveries", "traffic", "drops")


def _frame(name: str, rows: list[tuple[Any, ...]], sort: list[str]) -> pl.DataFrame:
    frame = pl.DataFrame(rows, schema=POLARS_SCHEMAS[name], orient="row")
    return frame.sort(sort) if rows else frame


def _publishes(
    results: Mapping[int, dict[str, Any] | None],
    schedule: Schedule,
    epoch_ns: int,
    conversion: Conversion,
) -> tuple[pl.DataFrame, dict[str, int]]:
    msg_of_id: dict[str, int] = {}
    actual: dict[int, int] = {}
    for result in results.values():
        for record in (result or {}).get("publishes", []):
            msg = int(record["msg"])
            if record.get("error") or not record.get("id"):
                conversion.publish_errors[msg] = record.get("error") or "no id traced"
                continue
            msg_of_id[record["id"]] = msg
            actual[msg] = int(record["t_publish_unix_ns"]) - epoch_ns
    rows = []
    for msg in range(len(schedule)):
        if msg not in actual:
            conversion.unpublished.append(msg)
            continue
        rows.append(
            (
                msg,
                int(schedule.publisher[msg]),
                int(schedule.t_intended_ns[msg]),
                actual[msg],
                int(schedule.size[msg]),
                int(schedule.topic[msg]),
                int(schedule.batch[msg]),
                0,
                0,
            )
        )
    return _frame("publishes", rows, sort=["msg"]), msg_of_id


def _deliveries(
    first: dict[tuple[int, int], tuple[int, int]],
    duplicates: dict[tuple[int, int], int],
    publisher: dict[int, int],
    given: Mapping[tuple[int, int], int] | None = None,
) -> pl.DataFrame:
    """Deliveries with their hop: ``given`` (groups of parts), else from the tree."""
    hops: dict[tuple[int, int], int | None] = dict(given or {})

    def hop(msg: int, node: int) -> int | None:
        # Iterative walk up the first-receipt tree to the publisher (no recursion limit).
        # A sender whose own receipt is not in its trace (a line lost when a node was
        # killed) leaves the hop unknown: null, never a number a metric would count.
        path = []
        here = node
        depth: int | None
        while True:
            if here == publisher[msg]:
                depth = 0
                break
            if (msg, here) in hops:
                depth = hops[(msg, here)]
                break
            if (msg, here) not in first or len(path) > len(first):
                depth = None
                break
            path.append(here)
            here = first[(msg, here)][1]
        for step in reversed(path):
            depth = None if depth is None else depth + 1
            hops[(msg, step)] = depth
        return hops.get((msg, node), depth)

    rows = [
        (msg, node, t, sender, hop(msg, node), duplicates.get((msg, node), 0))
        for (msg, node), (t, sender) in first.items()
    ]
    return _frame("deliveries", rows, sort=["msg", "t_ns", "node"])


def _traffic(results: Mapping[int, dict[str, Any] | None]) -> pl.DataFrame:
    rows = []
    for node, result in sorted(results.items()):
        counters = (result or {}).get("traffic") or {}
        for kind in TRAFFIC_KINDS:
            c = counters.get(kind)
            if c and any(c.values()):
                rows.append(
                    (node, kind, c["msgs_sent"], c["bytes_sent"], c["msgs_recv"], c["bytes_recv"])
                )
    return _frame("traffic", rows, sort=["node"])


def _drops(results: Mapping[int, dict[str, Any] | None], ids: Mapping[str, int]) -> pl.DataFrame:
    rows = []
    for node, result in sorted(results.items()):
        for drop in (result or {}).get("drops") or []:
            # A peer that was not a neighbour (met through peer exchange) comes by its id.
            peer = drop["peer"] if drop["peer"] >= 0 else ids.get(drop.get("peer_id", ""), NO_PEER)
            rows.append((node, peer, drop["kind"], drop["reason"], drop["count"]))
    return _frame("drops", rows, sort=["node", "peer", "kind", "reason"])


def peer_id_b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")
