"""The model backend: a resolved scenario in, event tables out, through the Rust engine.

This module translates the scenario into the engine's own configuration (times in ns,
bandwidths in bit/s, one value per node), refuses what the engine does not model yet
(with the field and the reason, never a silent no-op), drives the engine in slices of
simulated time so a progress bar can follow, and wraps the engine's columns into the
event tables of DESIGN.md.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import polars as pl

from gossiplab import _engine
from gossiplab.analysis.liveness import message_lifetime_ns
from gossiplab.analysis.tables import (
    AGGREGATE_TABLES,
    OPTIONAL_COLUMNS,
    POLARS_SCHEMAS,
    RunTables,
)
from gossiplab.backends.params import engine_cpu, graft_params, protocol_params, score_params
from gossiplab.backends.partial_plan import ROLES, draw_partial_plan
from gossiplab.errors import Problem, ScenarioError
from gossiplab.faults import engine_faults
from gossiplab.geography import (
    engine_placement,
    node_resources,
    nodes_table,
    place_nodes,
)
from gossiplab.scenario import Scenario
from gossiplab.topology import Topology
from gossiplab.workload import Schedule

# Topic strings on the wire are this long (the size protocol-notes.md §5 assumes).
TOPIC_NAME_LENGTH = 20
# The engine keeps topic subscriptions in a 64-bit mask.
MAX_TOPICS = 64
# Slices of simulated time per run, for the progress bar.
PROGRESS_STEPS = 200

ProgressCallback = Callable[[int, int, int], None]
"""Called with (simulated ns so far, simulated ns in total, events so far)."""


@dataclass(frozen=True)
class ModelRun:
    tables: RunTables
    events: int
    engine_version: str


def unsupported_features(s: Scenario) -> list[Problem]:
    """What the scenario asks for that the model does not simulate yet."""
    problems: list[Problem] = []
    if s.output.mode == "aggregate" and s.output.receipts:
        problems.append(
            Problem(
                "output.receipts",
                "a row per payload copy defeats the aggregate mode, which keeps no row per receipt",
                'set receipts = false, or use mode = "full"',
            )
        )
    if s.output.mode == "aggregate" and s.workload.exclude_first:
        problems.append(
            Problem(
                "workload.exclude_first",
                "the aggregate mode measures from workload.warmup on, by time, not by message",
                'use mode = "full", or a warmup that the first messages fall into',
            )
        )
    if (
        s.workload.partial is not None
        and s.workload.partial.enabled
        and s.output.mode == "aggregate"
    ):
        message = (
            "partial messages are measured per (group, node), which aggregate mode does not keep"
        )
        problems.append(Problem("workload.partial", message, 'use output.mode = "full"'))
    if s.testbed.go_trace:
        message = "go execution traces record real go nodes: the model runs none"
        hint = 'set go_trace = [], or use backend = "testbed"'
        problems.append(Problem("testbed.go_trace", message, hint))
    if s.workload.topics > MAX_TOPICS:
        problems.append(
            Problem("workload.topics", f"at most {MAX_TOPICS}, got {s.workload.topics}")
        )
    return problems


def check_supported(s: Scenario) -> None:
    problems = unsupported_features(s)
    if problems:
        raise ScenarioError(problems)


def _latency_model(s: Scenario) -> dict[str, Any]:
    latency = s.network.latency
    if isinstance(latency, int):
        return {"kind": "constant", "ns": latency}
    kind = latency.distribution
    if kind == "uniform":
        return {"kind": "uniform", "min_ns": latency.min, "max_ns": latency.max}
    if kind == "normal":
        return {"kind": "normal", "mean_ns": latency.mean, "std_ns": latency.std}
    return {"kind": "lognormal", "median_ns": latency.median, "sigma": latency.sigma}


def _score_config(s: Scenario) -> dict[str, Any] | None:
    score = score_params(s.protocol.score)
    # The engine reads the graft parameters from its score section.
    return None if score is None else {**score, **graft_params(s.protocol)}


def partial_config(s: Scenario, schedule: Schedule) -> dict[str, Any] | None:
    """The engine's partial-message settings and plan (crates/engine/src/partial)."""
    partial = s.workload.partial
    if partial is None or not partial.enabled:
        return None
    plan = json.loads(draw_partial_plan(s, schedule, s.seed).to_json())
    return {
        "parts": partial.parts,
        "part_bytes": partial.part_size + partial.part_overhead,
        "group_id_size": partial.group_id_size,
        "eager_push": partial.eager_push,
        "full_fallback": partial.full_fallback,
        "group_ttl_heartbeats": partial.group_ttl_heartbeats,
        "peer_group_limit_per_topic": partial.peer_group_limit_per_topic,
        "peer_group_limit_per_peer": partial.peer_group_limit_per_peer,
        "roles": plan["roles"],
        "held": plan["held"],
    }


def engine_config(
    s: Scenario, nodes: int, end_ns: int, schedule: Schedule | None = None
) -> dict[str, Any]:
    """The engine's configuration for scenario `s` (see crates/engine/src/config.rs); a
    scenario with partial messages needs its `schedule` (the plan is drawn per group)."""
    p = s.protocol
    placement = place_nodes(s, nodes)
    partial = partial_config(s, schedule) if schedule is not None else None
    if s.workload.partial is not None and s.workload.partial.enabled and partial is None:
        raise ValueError("partial messages need the schedule")
    extra = {} if partial is None else {"partial": partial}
    return {
        **extra,
        "seed": s.seed,
        "nodes": nodes,
        "end_ns": end_ns,
        "topics": s.workload.topics,
        "network": {
            "latency": _latency_model(s),
            "jitter_ns": s.network.jitter,
            "loss": s.network.loss,
            "initial_window_segments": s.network.initial_window,
            "slow_start_after_idle": s.network.slow_start_after_idle,
            "pacing": s.network.pacing,
            "uplink_sharing": s.network.uplink_sharing,
            "downlink_sharing": s.network.downlink_sharing,
            "send_buffer_bytes": s.network.send_buffer,
            "connect_round_trips": s.network.connect_round_trips,
            **node_resources(s, nodes, placement),
            "placement": engine_placement(s, placement),
            "shared_ips": s.network.shared_ips,
        },
        "protocol": {
            "router": p.name,
            "version": p.version,
            **protocol_params(p),
            "backoff_clear_ticks": p.backoff_clear_ticks,
            "backoff_slack_ticks": p.backoff_slack_ticks,
            "topic_name_len": TOPIC_NAME_LENGTH,
            "D_announce": p.D_announce,
            "direct_peers": [tuple(pair) for pair in p.direct_peers],
            "ineed_timeout_ns": p.ineed_timeout,
            "announce_own": p.announce_own,
            # None (JSON null) leaves the version's reference to the engine.
            "idontwant_on_publish": p.idontwant_on_publish,
            "idontwant_to_sender": p.idontwant_to_sender,
            "score": _score_config(s),
        },
        "output": {
            "receipts": s.output.receipts,
            "mode": s.output.mode,
            "message_traffic": s.output.message_traffic,
            # Aggregate mode applies the metrics' warm-up and liveness rules as it goes.
            "measure_from_ns": s.workload.warmup,
            "message_lifetime_ns": message_lifetime_ns(s),
        },
        "cpu": engine_cpu(s.cpu),
        **engine_faults(s, nodes),
    }


def _le(array: np.ndarray, dtype: str) -> bytes:
    return np.ascontiguousarray(array, dtype=np.dtype(dtype).newbyteorder("<")).tobytes()


def check_direct_peers(s: Scenario, topology: Topology) -> None:
    """Direct peers are configured on existing connections only."""
    connected = {tuple(sorted(edge)) for edge in topology.edges.tolist()}
    problems = []
    for i, (a, b) in enumerate(s.protocol.direct_peers):
        if (min(a, b), max(a, b)) not in connected:
            message = f"nodes {a} and {b} are not connected in the topology"
            hint = "list pairs of neighbours (see the topology's edges)"
            problems.append(Problem(f"protocol.direct_peers[{i}]", message, hint))
    if problems:
        raise ScenarioError(problems)


def engine_args(
    s: Scenario, topology: Topology, schedule: Schedule, end_ns: int
) -> tuple[Any, ...]:
    """The arguments of `gossiplab._engine.Engine` for a scenario: its config, as JSON,
    and the topology's and schedule's arrays, little-endian."""
    return (
        json.dumps(engine_config(s, topology.nodes, end_ns, schedule)),
        _le(topology.edges.reshape(-1), "u4"),
        _le(schedule.t_intended_ns, "u8"),
        _le(schedule.publisher, "u4"),
        _le(schedule.size, "u4"),
        _le(schedule.topic, "u2"),
        _le(schedule.batch, "u4"),
    )


def start_engine(s: Scenario, topology: Topology, schedule: Schedule, end_ns: int) -> Any:
    """A ready-to-run engine (`gossiplab._engine.Engine`)."""
    check_supported(s)
    check_direct_peers(s, topology)
    try:
        return _engine.Engine(*engine_args(s, topology, schedule, end_ns))
    except _engine.EngineError as err:  # the engine's own invariants; Python checks come first
        refusal = Problem(err.field, f"the engine refused the scenario: {err.reason}")
        raise ScenarioError([refusal]) from err


def run_model(
    s: Scenario,
    topology: Topology,
    schedule: Schedule,
    end_ns: int,
    progress: ProgressCallback | None = None,
) -> ModelRun:
    engine = start_engine(s, topology, schedule, end_ns)
    step = max(1, end_ns // PROGRESS_STEPS)
    t = 0
    while True:
        t = min(end_ns, t + step)
        finished = engine.run_until(t)
        if progress is not None:
            progress(t if not finished else end_ns, end_ns, engine.events)
        if finished or t >= end_ns:
            break
    tables = replace(tables_from_engine(engine.tables()), nodes=nodes_table(s, topology.nodes))
    if not s.protocol.peer_exchange:
        tables = replace(tables, connections=None)
    return ModelRun(tables, engine.events, _engine.__version__)


def _frame(name: str, columns: dict[str, Any], decoders: dict[str, Any]) -> pl.DataFrame:
    optional = {c: t for c, t in OPTIONAL_COLUMNS.get(name, {}).items() if c in columns}
    schema = pl.Schema({**POLARS_SCHEMAS[name], **optional})
    data = {col: (decoders.get(col) or _numeric(schema[col]))(columns[col]) for col in schema}
    return pl.DataFrame(data, schema=schema)


def _numeric(dtype: pl.DataType) -> Callable[[bytes], np.ndarray]:
    numpy_dtype = np.dtype(_NUMPY[dtype]).newbyteorder("<")
    return lambda raw: np.frombuffer(raw, dtype=numpy_dtype)


_NUMPY: dict[pl.DataType, str] = {
    pl.UInt8(): "u1",
    pl.UInt16(): "u2",
    pl.UInt32(): "u4",
    pl.UInt64(): "u8",
    pl.Int64(): "i8",
}


def _goroutine_waits(raw: dict[str, Any]) -> pl.DataFrame:
    """The goroutine_waits table, its goroutine kinds and what readied them by name."""
    waits = _frame(
        "goroutine_waits",
        raw["goroutine_waits"],
        {
            "goroutine": lambda codes: _named(raw["goroutine_names"], codes, "goroutine"),
            "readied_by": lambda codes: _named(
                [*raw["goroutine_names"], *raw["readied_names"]], codes, "readied_by"
            ),
        },
    )
    # Only a node's own waits have a time on the core after them.
    on_core = pl.when(pl.col("goroutine") == "node thread").then(pl.col("ran_ns"))
    return waits.with_columns(on_core.alias("ran_ns"))


def _named(names: list[str], codes: bytes, column: str) -> pl.Series:
    """`codes` as `names`; a code past them (the engine's mark on a wait that is not a
    goroutine's) as null."""
    series = pl.Series(column, [*names, None], dtype=pl.String)
    index = np.minimum(np.frombuffer(codes, dtype="u1").astype("u4"), len(names))
    return series.gather(index)


def _role_names(codes: bytes) -> pl.Series:
    names = pl.Series("role", list(ROLES), dtype=pl.String)
    return names.gather(np.frombuffer(codes, dtype="u1").astype("u4"))


def _never_as_null(raw: bytes) -> pl.Series:
    t = pl.Series("t_complete_ns", np.frombuffer(raw, dtype="<i8"))
    return t.set(t == -1, None)  # type: ignore[arg-type]


_PARTIAL_DECODERS = {"role": _role_names, "t_complete_ns": _never_as_null}


def _resources(columns: dict[str, bytes]) -> pl.DataFrame:
    """The engine's CPU samples as the resources table: cpu_s from its cumulative ns; on
    time-sliced hosts the threads' voluntary and involuntary switches, and with sysmon
    its runs and CPU (sysmon_cpu_s, part of cpu_s). The model has no memory or syscalls
    to report, so those are null, as the switches are on other hosts."""
    schema = POLARS_SCHEMAS["resources"]
    found = {
        "node": np.frombuffer(columns["node"], dtype="<u4"),
        "t_ns": np.frombuffer(columns["t_ns"], dtype="<i8"),
        "cpu_s": np.frombuffer(columns["cpu_ns"], dtype="<u8") / 1e9,
    }
    for name in ("voluntary_switches", "involuntary_switches", "sysmon_runs"):
        if name in columns:
            found[name] = np.frombuffer(columns[name], dtype="<u8").astype(np.int64)
    if "sysmon_ns" in columns:
        found["sysmon_cpu_s"] = np.frombuffer(columns["sysmon_ns"], dtype="<u8") / 1e9
    known = pl.DataFrame(found)
    return known.select(
        [
            pl.col(name) if name in known.columns else pl.lit(None, dtype).alias(name)
            for name, dtype in schema.items()
        ]
    )


def tables_from_engine(raw: dict[str, Any]) -> RunTables:
    """Wrap the engine's little-endian columns as the event tables."""
    kind_names = pl.Series("kind", raw["kind_names"], dtype=pl.String)

    def kinds(codes: bytes) -> pl.Series:
        return kind_names.gather(np.frombuffer(codes, dtype="u1").astype("u4"))

    receipts = None
    if "receipts" in raw:
        receipts = _frame(
            "receipts",
            raw["receipts"],
            {"duplicate": lambda b: np.frombuffer(b, dtype="u1").astype(bool)},
        )
    # Aggregate mode: no deliveries, the aggregate tables instead.
    aggregates = {name: _frame(name, raw[name], {}) for name in AGGREGATE_TABLES if name in raw}
    deliveries = _frame("deliveries", raw["deliveries"], {}) if "deliveries" in raw else None
    partial = None
    if "partial" in raw:
        partial = _frame("partial", raw["partial"], _PARTIAL_DECODERS)
    message_traffic = None
    if "message_traffic" in raw:
        message_traffic = _frame("message_traffic", raw["message_traffic"], {"kind": kinds})
    goroutine_waits = None
    if "goroutine_waits" in raw:
        goroutine_waits = _goroutine_waits(raw)
    return RunTables(
        publishes=_frame("publishes", raw["publishes"], {}),
        deliveries=deliveries,
        traffic=_frame("traffic", raw["traffic"], {"kind": kinds}),
        drops=_frame(
            "drops",
            raw["drops"],
            {"kind": kinds, "reason": lambda names: pl.Series(names, dtype=pl.String)},
        ),
        receipts=receipts,
        connections=_frame("connections", raw["connections"], {}),
        message_traffic=message_traffic,
        partial=partial,
        goroutine_waits=goroutine_waits,
        # With CPU costs: each node's CPU seconds at every whole second and at the end.
        resources=_resources(raw["resources"]) if "resources" in raw else None,
        **aggregates,
    )
