"""The event tables every backend writes, and the check that a set of them is well formed.

The column names and dtypes below are the contract of DESIGN.md's "Event schema": the
model and the testbed backends both produce exactly these, so one analysis serves all.
Tables may carry extra columns (a backend's own details); only the listed ones are checked.

A run in the model's aggregate output mode (``[output] mode = "aggregate"``) has no
``deliveries`` (one row per first receipt: messages x nodes rows) but the four
``AGGREGATE_TABLES`` instead, which the engine keeps up to date as receipts happen: per
message (``messages``), per receiving node (``receivers``), per node and latency bin
(``latency_histogram``) and per duplicate count (``duplicates_histogram``). A first receipt
is *counted* in them unless its receiver was down during part of the message's lifetime
(see ``liveness.py``); the receivers and both histograms also leave out the messages
intended during the warm-up. Times are ns from the start of the run, -1 for "never".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl
import pyarrow as pa

from gossiplab.errors import ResultsError

TRAFFIC_KINDS: tuple[str, ...] = (
    "payload",
    "ihave",
    "iwant",
    "graft",
    "prune",
    "idontwant",
    "iannounce",
    "ineed",
    "subscribe",
    "partial",
    "partsmeta",
    "extensions",
)
"""Every value the ``traffic.kind`` column may take."""

CONTROL_KINDS: tuple[str, ...] = (
    "ihave",
    "iwant",
    "graft",
    "prune",
    "idontwant",
    "iannounce",
    "ineed",
)
"""The gossipsub control messages counted under DESIGN.md's "Control" metric."""

SCHEMAS: dict[str, pa.Schema] = {
    "publishes": pa.schema(
        [
            ("msg", pa.uint32()),
            ("publisher", pa.uint32()),
            ("t_intended_ns", pa.int64()),
            ("t_publish_ns", pa.int64()),
            ("size", pa.uint32()),
            ("topic", pa.uint16()),
            ("batch", pa.uint32()),
            ("receipts", pa.uint64()),
            # Copies of its own message the publisher got back (without an author, under
            # strict-no-sign, go forwards them to it); each a duplicate there.
            ("publisher_duplicates", pa.uint32()),
        ]
    ),
    "deliveries": pa.schema(
        [
            ("msg", pa.uint32()),
            ("node", pa.uint32()),
            ("t_ns", pa.int64()),
            ("from_node", pa.uint32()),
            ("hop", pa.uint16()),
            ("duplicates", pa.uint32()),
        ]
    ),
    "traffic": pa.schema(
        [
            ("node", pa.uint32()),
            ("kind", pa.string()),
            ("msgs_sent", pa.uint64()),
            ("bytes_sent", pa.uint64()),
            ("msgs_recv", pa.uint64()),
            ("bytes_recv", pa.uint64()),
        ]
    ),
    "drops": pa.schema(
        [
            ("node", pa.uint32()),
            ("peer", pa.uint32()),
            ("kind", pa.string()),
            ("reason", pa.string()),
            ("count", pa.uint64()),
        ]
    ),
    "receipts": pa.schema(
        [
            ("msg", pa.uint32()),
            ("node", pa.uint32()),
            ("from_node", pa.uint32()),
            ("t_ns", pa.int64()),
            ("duplicate", pa.bool_()),
        ]
    ),
    # Connections opened during the run (peer exchange): when, who dialed, whom. Present
    # when the scenario turns peer exchange on.
    "connections": pa.schema(
        [
            ("t_ns", pa.int64()),
            ("node", pa.uint32()),
            ("peer", pa.uint32()),
        ]
    ),
    # One row per node and sample: cumulative CPU seconds, resident memory, and cumulative
    # read/write syscalls and context switches of all its threads, and the CPU seconds of
    # Go's sysmon thread (part of cpu_s) and the times it ran. The testbed fills them from
    # /proc (null where it could not be read). The model, when it charges CPU, fills cpu_s
    # (the time a core ran the node's work) at every whole second and at the end, and
    # leaves the rest null: it has no memory, syscalls or threads.
    "resources": pa.schema(
        [
            ("node", pa.uint32()),
            ("t_ns", pa.int64()),
            ("cpu_s", pa.float64()),
            ("rss_bytes", pa.uint64()),
            ("read_syscalls", pa.int64()),
            ("write_syscalls", pa.int64()),
            ("voluntary_switches", pa.int64()),
            ("involuntary_switches", pa.int64()),
            ("sysmon_cpu_s", pa.float64()),
            ("sysmon_runs", pa.int64()),
        ]
    ),
    # Aggregate mode, one row per message (published or not): its expected receivers
    # (targets), every first receipt, the counted ones (delivered), the first and last
    # counted receipt, the hop of the last one (on a tie in time the larger) and the
    # largest hop, and when the count reached ceil(p% x targets).
    "messages": pa.schema(
        [
            ("msg", pa.uint32()),
            ("targets", pa.uint32()),
            ("first_receipts", pa.uint32()),
            ("delivered", pa.uint32()),
            ("first_ns", pa.int64()),
            ("last_ns", pa.int64()),
            ("last_hop", pa.uint16()),
            ("max_hop", pa.uint16()),
            ("reach_50_ns", pa.int64()),
            ("reach_90_ns", pa.int64()),
            ("reach_95_ns", pa.int64()),
            ("reach_99_ns", pa.int64()),
            ("reach_100_ns", pa.int64()),
        ]
    ),
    # Aggregate mode, one row per node as a receiver: its counted first receipts, the sum,
    # minimum and maximum of their latencies (first receipt - publish; -1 when none), the
    # sum of their hops, and the duplicates it received of those messages.
    "receivers": pa.schema(
        [
            ("node", pa.uint32()),
            ("first_receipts", pa.uint64()),
            ("latency_sum_ns", pa.uint64()),
            ("latency_min_ns", pa.int64()),
            ("latency_max_ns", pa.int64()),
            ("hop_sum", pa.uint64()),
            ("duplicates", pa.uint64()),
        ]
    ),
    # Aggregate mode: counted first receipts per node and latency bin [lo_ns, hi_ns). The
    # bins are fixed (crates/engine/src/histogram.rs): exact below 256 ns, then 128 per
    # power of two, so a bin's middle is within 1/256 of any latency in it.
    "latency_histogram": pa.schema(
        [
            ("node", pa.uint32()),
            ("bin", pa.uint16()),
            ("lo_ns", pa.int64()),
            ("hi_ns", pa.int64()),
            ("count", pa.uint64()),
        ]
    ),
    # Aggregate mode: how many counted (message, node) pairs got this many duplicates.
    "duplicates_histogram": pa.schema(
        [
            ("duplicates", pa.uint32()),
            ("pairs", pa.uint64()),
        ]
    ),
    # Per message and kind (payload, or the control kinds naming it by id): copies and
    # ids sent, and their bytes. Present with [output] message_traffic = true.
    "message_traffic": pa.schema(
        [
            ("msg", pa.uint32()),
            ("kind", pa.string()),
            ("msgs_sent", pa.uint64()),
            ("bytes_sent", pa.uint64()),
        ]
    ),
    # Partial messages ([workload.partial]): one row per (group, node) but the group's
    # publisher. role: "requests", "supports" or "none"; held: parts held before the group
    # was published; parts_recv: parts first received from the network (in partial RPCs
    # or with a full message); parts_dup: parts received in partial RPCs that the node
    # already had; full_recv: full-message copies received; t_complete_ns: when the node
    # held every part (null: never); bytes_partial_recv: bytes of partial RPCs received.
    "partial": pa.schema(
        [
            ("msg", pa.uint32()),
            ("node", pa.uint32()),
            ("role", pa.string()),
            ("parts", pa.uint32()),
            ("held", pa.uint32()),
            ("parts_recv", pa.uint32()),
            ("parts_dup", pa.uint32()),
            ("full_recv", pa.uint32()),
            ("t_complete_ns", pa.int64()),
            ("bytes_partial_recv", pa.uint64()),
        ]
    ),
    # The model's run-queue waits of the goroutines of the nodes in [cpu] record_waits: one
    # row per wait, from becoming runnable to running (Go's trace: Runnable to Running);
    # goroutine "node thread": the node's own waits for a core of its host; t_ns is when
    # the wait ended (the goroutine, or the node, ran). ran_ns: how long the node then
    # held the core, until it blocked, was preempted or used up its slice (node thread
    # rows; null for a goroutine's). readied_by: what made a goroutine runnable, as Go's
    # execution trace tells it (the goroutine that handed it work, "netpoll", "sysmon's
    # netpoll", "timer", "preempted", "outside"; null on node thread and sysmon rows).
    "goroutine_waits": pa.schema(
        [
            ("node", pa.uint32()),
            ("goroutine", pa.string()),
            ("t_ns", pa.int64()),
            ("wait_ns", pa.uint64()),
            ("ran_ns", pa.uint64()),
            ("readied_by", pa.string()),
        ]
    ),
    # One row per node: where it is and what kind of node it is ("" when the scenario has
    # no regions or no classes), and its bandwidth (bit/s, 0 = unlimited).
    "nodes": pa.schema(
        [
            ("node", pa.uint32()),
            ("region", pa.string()),
            ("class", pa.string()),
            ("upload_bps", pa.uint64()),
            ("download_bps", pa.uint64()),
        ]
    ),
}
"""Column names and Arrow dtypes of each event table, in file order."""

OPTIONAL_COLUMNS: dict[str, dict[str, pl.DataType]] = {
    # Control counted in protobuf entries (an IHAVE of many ids is one), beside the ids of
    # msgs_sent/msgs_recv: the model counts them; go's counters cannot, so the testbed and
    # simnet tables leave these columns out rather than guess them.
    "traffic": {"entries_sent": pl.UInt64(), "entries_recv": pl.UInt64()},
}
"""Columns a table may carry beyond its schema, checked for their dtype when present."""

REQUIRED_TABLES: tuple[str, ...] = ("publishes", "deliveries", "traffic", "drops")
"""Every run's tables, except that an aggregate-mode run has no deliveries."""
AGGREGATE_TABLES: tuple[str, ...] = (
    "messages",
    "receivers",
    "latency_histogram",
    "duplicates_histogram",
)
"""What an aggregate-mode run has instead of deliveries."""
OPTIONAL_TABLES: tuple[str, ...] = (
    "receipts",
    "connections",
    "resources",
    "nodes",
    "message_traffic",
    "partial",
    "goroutine_waits",
    *AGGREGATE_TABLES,
)

# The same schemas as polars sees them, derived once so the two can never disagree.
POLARS_SCHEMAS: dict[str, pl.Schema] = {
    name: pl.from_arrow(schema.empty_table()).schema  # type: ignore[union-attr]
    for name, schema in SCHEMAS.items()
}


@dataclass(frozen=True)
class RunTables:
    """The event tables of one run. ``receipts`` is optional because it can be very large;
    ``resources`` comes from the testbed and from model runs that charge CPU, and ``nodes``
    is missing from older results.
    In aggregate mode ``deliveries`` is None and the ``AGGREGATE_TABLES`` are all there."""

    publishes: pl.DataFrame
    deliveries: pl.DataFrame | None
    traffic: pl.DataFrame
    drops: pl.DataFrame
    receipts: pl.DataFrame | None = None
    connections: pl.DataFrame | None = None
    resources: pl.DataFrame | None = None
    nodes: pl.DataFrame | None = None
    messages: pl.DataFrame | None = None
    receivers: pl.DataFrame | None = None
    latency_histogram: pl.DataFrame | None = None
    duplicates_histogram: pl.DataFrame | None = None
    message_traffic: pl.DataFrame | None = None
    partial: pl.DataFrame | None = None
    goroutine_waits: pl.DataFrame | None = None

    @property
    def aggregate(self) -> bool:
        """True for a run in aggregate mode (no per-receipt rows)."""
        return self.deliveries is None

    def present(self) -> dict[str, pl.DataFrame]:
        """The tables this run has, by name, in schema order."""
        tables = {name: getattr(self, name) for name in SCHEMAS}
        return {name: frame for name, frame in tables.items() if frame is not None}


def empty_table(name: str) -> pl.DataFrame:
    """A table with the schema of ``name`` and no rows."""
    return pl.DataFrame(schema=POLARS_SCHEMAS[name])


def from_rows(name: str, rows: Sequence[Sequence[Any]]) -> pl.DataFrame:
    """A table of ``name`` from row tuples in schema column order (small tables, tests)."""
    return pl.DataFrame(rows, schema=POLARS_SCHEMAS[name], orient="row")


def check_tables(tables: RunTables) -> None:
    """Raise ResultsError naming the first table and column that break the event schema."""
    for name, frame in tables.present().items():
        _check_columns(name, frame)
    if tables.aggregate:
        missing = [name for name in AGGREGATE_TABLES if getattr(tables, name) is None]
        if missing:
            raise ResultsError(
                f"the run has no deliveries table and not the aggregate tables either "
                f"({', '.join(missing)} missing); re-run the scenario to write them again"
            )
    _check_traffic_kinds(tables.traffic)


def _check_columns(name: str, frame: object) -> None:
    if not isinstance(frame, pl.DataFrame):
        raise ResultsError(
            f"table {name} is a {type(frame).__name__}, not a polars DataFrame; "
            "backends must hand their events over as polars DataFrames"
        )
    for column, expected in OPTIONAL_COLUMNS.get(name, {}).items():
        actual = frame.schema.get(column)
        if actual is not None and actual != expected:
            raise ResultsError(
                f"column {name}.{column} is {actual}, {expected} expected; "
                f"it does not follow the event schema in DESIGN.md: fix the backend"
            )
    for column, expected in POLARS_SCHEMAS[name].items():
        actual = frame.schema.get(column)
        if actual is None:
            raise ResultsError(
                f"table {name} has no column {column!r} ({expected} expected); "
                f"it does not follow the event schema in DESIGN.md: fix the backend or "
                f"re-run the scenario with this version of gossiplab"
            )
        if actual != expected:
            raise ResultsError(
                f"column {name}.{column} is {actual}, {expected} expected; "
                f"it does not follow the event schema in DESIGN.md: fix the backend or "
                f"re-run the scenario with this version of gossiplab"
            )


def _check_traffic_kinds(traffic: pl.DataFrame) -> None:
    kind = pl.col("kind")
    unknown = traffic.filter(kind.is_null() | ~kind.is_in(TRAFFIC_KINDS))["kind"].unique()
    if unknown.len():
        names = ", ".join(repr(value) for value in sorted(unknown.to_list(), key=str))
        raise ResultsError(
            f"column traffic.kind has unknown value(s) {names}; "
            f"the event schema allows only {', '.join(TRAFFIC_KINDS)}"
        )
