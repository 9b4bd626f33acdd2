"""The testbed backend: the scenario on real go-libp2p-pubsub nodes in network namespaces.

``run_testbed`` is what runner.py calls for ``backend = "testbed"``; it returns the same
event tables as the model backend, plus the testbed's own run info (versions, readiness,
the delay stage's measured error, crashed nodes, CPU and memory) for summary.json.
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from gossiplab.analysis.tables import POLARS_SCHEMAS, RunTables
from gossiplab.backends.testbed.binary import ensure_binary, node_binary, versions
from gossiplab.backends.testbed.ceiling import capacity_warning, estimated_cores
from gossiplab.backends.testbed.commands import require_commands, require_root
from gossiplab.backends.testbed.congestion import idle_restart_warning
from gossiplab.backends.testbed.convert import convert
from gossiplab.backends.testbed.cpus import delay_cpus
from gossiplab.backends.testbed.errors import TestbedError
from gossiplab.backends.testbed.losses import loss_warning, softnet, summarize
from gossiplab.backends.testbed.netns import clean_stale, has_netem
from gossiplab.backends.testbed.nodeconfig import partial_plan
from gossiplab.backends.testbed.orchestrate import Testbed, remove_work
from gossiplab.backends.testbed.pprof import aggregate, top_table
from gossiplab.backends.testbed.resources import Sampler
from gossiplab.backends.testbed.speed import SpeedGauge
from gossiplab.backends.testbed.support import check_supported, notes
from gossiplab.scenario import Scenario
from gossiplab.topology import Topology
from gossiplab.workload import Schedule

ProgressCallback = Callable[[int, int, int], None]
PROFILE_TOP_FILE = "profile-top.txt"
# Execution traces of testbed.go_trace's nodes: <results>/go-traces/node-<id>.trace.
GO_TRACES_DIR = "go-traces"
GO_TRACE_FILE = "go.trace"  # in the node's work folder (testbed/node.go goTraceFile)
ARTIFACTS_DIR = "testbed"
PUBSUB_MODULE = "github.com/libp2p/go-libp2p-pubsub"
HOST_BUSY_LIMIT = 0.9


@dataclass
class TestbedRun:
    """What runner.py needs (like backends.model.ModelRun) plus the testbed's run info."""

    __test__ = False

    tables: RunTables
    events: int
    engine_version: str
    run_info: dict[str, Any]
    versions: dict[str, str]
    work: Path
    keep: list[Path] = field(default_factory=list)  # files for the results folder
    profile_text: str | None = None
    go_traces: dict[int, Path] = field(default_factory=dict)  # node -> its execution trace

    def attach(self, results_dir: Path) -> None:
        """Copy the raw artifacts (profiles, traces if kept) into the results folder."""
        target = Path(results_dir) / ARTIFACTS_DIR
        if self.keep or self.profile_text:
            target.mkdir(exist_ok=True)
        for path in self.keep:
            relative = path.relative_to(self.work)
            (target / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target / relative)
        if self.profile_text:
            (target / PROFILE_TOP_FILE).write_text(self.profile_text, encoding="utf-8")
        if self.go_traces:
            traces = Path(results_dir) / GO_TRACES_DIR
            traces.mkdir(exist_ok=True)
            for node, path in sorted(self.go_traces.items()):
                shutil.copy2(path, traces / f"node-{node}.trace")
        remove_work(self.work)


def _resources(sampler: Sampler, epoch: int, end_ns: int, warmup: int) -> pl.DataFrame:
    rows = [
        (node, t - epoch, cpu, rss, *(None if c < 0 else c for c in counts))
        for node, t, cpu, rss, *counts in sampler.rows
    ]
    return pl.DataFrame(rows, schema=POLARS_SCHEMAS["resources"], orient="row").sort("node", "t_ns")


def _node_usage(resources: pl.DataFrame, start_ns: int, end_ns: int) -> dict[str, Any]:
    """CPU share (of one core) and peak memory per node over the measured interval."""
    window = resources.filter(pl.col("t_ns").is_between(start_ns, end_ns))
    per_node = window.group_by("node").agg(
        cpu=(pl.col("cpu_s").max() - pl.col("cpu_s").min())
        / ((pl.col("t_ns").max() - pl.col("t_ns").min()) / 1e9),
        rss=pl.col("rss_bytes").max(),
    )
    cpu = per_node["cpu"].drop_nans().drop_nulls()
    return {
        "cpu_share_mean": cpu.mean() if cpu.len() else None,
        "cpu_share_max": cpu.max() if cpu.len() else None,
        "cpu_cores_total": cpu.sum() if cpu.len() else None,
        "rss_mib_max": (per_node["rss"].max() or 0) / 2**20,  # type: ignore[operator]
    }


def _host_usage(sampler: Sampler, epoch: int, start_ns: int, end_ns: int) -> dict[str, Any]:
    shares = [share for t, share in sampler.host if start_ns <= t - epoch <= end_ns]
    if not shares:
        return {"busy_share_mean": None, "busy_share_max": None}
    return {"busy_share_mean": sum(shares) / len(shares), "busy_share_max": max(shares)}


def run_testbed(
    s: Scenario,
    topology: Topology,
    schedule: Schedule,
    end_ns: int,
    progress: ProgressCallback | None = None,
) -> TestbedRun:
    check_supported(s)
    require_root()
    require_commands(["ip", "tc"] + (["iptables"] if s.network.loss > 0 else []))
    if s.testbed.node_cpus is not None:
        require_commands(["taskset"])
    binary = ensure_binary()  # the delay stage's, and the nodes' but for v2.0
    nodes_binary = node_binary(s.protocol.version)
    go_versions = versions(nodes_binary)
    clean_stale()
    warnings = [w for w in [capacity_warning(s, topology)] if w]
    for warning in warnings:
        _warn(warning)
    netem = has_netem()
    wall_started = time.monotonic()
    softnet_before = softnet()
    with Testbed(s, topology, binary, node_binary=nodes_binary) as bed:
        bed.build()
        congestion = bed.congestion_control()
        idle = idle_restart_warning(s, congestion, int(schedule.size.max(initial=0)))
        if idle:
            warnings.append(idle)
            _warn(idle)
        if bed.needs_delay():
            require_commands(["iptables"])
        link_info = bed.start_delay_stage()
        bed.start_nodes(schedule)
        sampler = bed.sampler()
        sampler.start()
        gauge = SpeedGauge(binary, s.testbed.node_cpus, bed.work)
        gauge.start()
        try:
            readiness = bed.await_ready()
            epoch = bed.start_clock()
            bed.run_until(epoch, end_ns, progress)
        finally:
            gauge.stop()
        sampler.stop()  # before the nodes exit: the measured interval ends here
        # Before the nodes close their connections: only the run's own packets count.
        node_counters, core_counters = bed.read_counters()
        bed.stop_nodes()
        delay_stats = bed.stop_delay_stage()
        work = bed.work
        crashes = [c.as_dict() for c in bed.crashes.values()]
    conversion = convert(
        {i: work / f"node{i}" for i in range(topology.nodes)},
        schedule,
        epoch,
        end_ns=end_ns,
        receipts=s.output.receipts,
        plan=partial_plan(s, schedule),
    )
    resources = _resources(sampler, epoch, end_ns, s.workload.warmup)
    softnet_after = softnet()
    losses = summarize(
        node_counters,
        core_counters,
        delay_stats,
        {k: softnet_after[k] - softnet_before[k] for k in softnet_after},
    )
    measured = (s.workload.warmup, end_ns)
    info: dict[str, Any] = {
        "stack": {
            "transport": s.testbed.transport,
            "security": s.testbed.security,
            "muxer": s.testbed.muxer,
            "router": s.testbed.router,
            # The host's, inherited by every namespace: BBR's and CUBIC's windows differ.
            "congestion_control": congestion,
        },
        "netem": netem,
        "impairments": {
            "latency_jitter": "nfqueue delay stage" if bed.needs_delay() else "none",
            "loss": "iptables statistic" if s.network.loss > 0 else "none",
            "bandwidth": "htb per veth (upload: node egress, download: core egress)",
            **link_info,
        },
        "readiness": {
            "wait_s": readiness.wait_s,
            "ready_by_mesh": readiness.by_mesh,
            "ready_by_warmup": readiness.by_warmup,
            "slowest_node_s": readiness.slowest_node_s,
        },
        "epoch_unix_ns": epoch,
        # How fast the machine was over the measured interval (speed.py).
        "machine_speed": gauge.summary(epoch, *measured),
        "testbed_wall_s": time.monotonic() - wall_started,
        "delay_stage": delay_stats,
        "delay_stage_scheduling": bed.delay_scheduling,
        # The CPUs the nodes were confined to, and the delay stage's (None: any CPU).
        "node_cpus": s.testbed.node_cpus,
        "delay_stage_cpus": delay_cpus(s.testbed.node_cpus) if bed.needs_delay() else None,
        "losses": losses,
        "crashed": crashes,
        "nodes": _node_usage(resources, *measured),
        "host": _host_usage(sampler, epoch, *measured),
        # Each CPU's time from the nodes' start of sampling to its stop, the kernel's
        # softirq work (packets forwarded, TCP) included: no process's CPU time has it.
        "cpu_softirq": sampler.cpu_delta(),
        "estimated_node_cores": estimated_cores(s, topology),
        "delay_stage_cpu_s": next(
            (cpu for name, _, cpu, _ in reversed(sampler.extra_rows) if name == "delay_stage"),
            None,
        ),
        "conversion": conversion.counts(),
        # Which pairs of nodes talked pubsub: the topology's edges and any made during the
        # run (peer exchange), from the nodes' outbound pubsub streams.
        "connections": conversion.connections(topology.edges.tolist()),
        "notes": notes(s),
        "warnings": warnings,
    }
    if readiness.by_warmup:
        warnings.append(
            f"{readiness.by_warmup} node(s) had not formed their meshes (or met all their "
            "neighbours) when the warm-up ended; publishing started anyway"
        )
        _warn(warnings[-1])
    lost = loss_warning(losses, s.network.loss)
    if lost:
        warnings.append(lost)
        _warn(lost)
    busy = info["host"]["busy_share_mean"]
    if busy is not None and busy > HOST_BUSY_LIMIT:
        # Whoever used it (the nodes, or anything else on the machine), a saturated host
        # delays every node and the delay stage alike.
        warnings.append(
            f"the host's CPU was {busy:.0%} busy on average during the run (nodes: "
            f"{info['nodes']['cpu_cores_total'] or 0:.2f} cores): results may show the "
            "host's limits, not the protocol's"
        )
        _warn(warnings[-1])
    for crash in crashes:
        _warn(f"node {crash['node']} crashed ({crash['phase']}): {crash['stderr'][-300:]}")
    keep = []
    if s.testbed.keep_traces:
        for i in range(topology.nodes):
            for name in ("trace.ndjson", "node.json", "parts.ndjson", "stderr.log", "config.json"):
                path = work / f"node{i}" / name
                if path.is_file():
                    keep.append(path)
    profile_text = None
    if s.testbed.profile:
        profiles = sorted(work.glob("node*/cpu.pprof"))
        keep += profiles
        summary = aggregate(profiles)
        info["profile"] = summary
        profile_text = top_table(summary)
    go_traces = _go_traces(s, work, warnings)
    edges = topology.edges.tolist()
    tables = RunTables(
        publishes=conversion.tables.publishes,
        deliveries=conversion.tables.deliveries,
        traffic=conversion.tables.traffic,
        drops=conversion.tables.drops,
        receipts=conversion.tables.receipts,
        partial=conversion.tables.partial,
        connections=conversion.opened(edges) if s.protocol.peer_exchange else None,
        resources=resources,
    )
    _check_delay_error(s, delay_stats, work)
    return TestbedRun(
        tables=tables,
        events=conversion.events,
        engine_version=f"go-libp2p-pubsub {go_versions.get(PUBSUB_MODULE, '?')}",
        run_info=info,
        versions=go_versions,
        work=work,
        keep=keep,
        profile_text=profile_text,
        go_traces=go_traces,
    )


def _go_traces(s: Scenario, work: Path, warnings: list[str]) -> dict[int, Path]:
    """The execution traces testbed.go_trace asked for; a node without one is a warning
    (it crashed, or runtime/trace could not start: its stderr.log says which)."""
    found = {}
    for node in s.testbed.go_trace:
        path = work / f"node{node}" / GO_TRACE_FILE
        if path.is_file() and path.stat().st_size > 0:
            found[node] = path
        else:
            warnings.append(f"node {node} wrote no go execution trace (testbed.go_trace)")
            _warn(warnings[-1])
    return found


def _warn(message: str) -> None:
    # Straight to stderr: a warning must be seen while the run goes on, not only in
    # summary.json (where it is recorded too, under run.testbed.warnings).
    sys.stderr.write(f"warning (testbed): {message}\n")
    sys.stderr.flush()


def _check_delay_error(s: Scenario, stats: dict[str, Any] | None, work: Path) -> None:
    """Fail loudly when the delay stage could not keep the scenario's latencies."""
    if stats is None:
        return
    p99_ms = stats["lateness_ms"]["p99"]
    limit_ms = s.testbed.max_delay_error / 1e6
    dropped = stats.get("queue_dropped", 0) + stats.get("user_dropped", 0)
    problems = []
    if p99_ms > limit_ms:
        problems.append(
            f"it released packets {p99_ms:.2f} ms late at p99 (limit testbed.max_delay_error "
            f"= {limit_ms:g} ms)"
        )
    if dropped:
        problems.append(
            f"{dropped} packets were dropped on their way to it (queue full: "
            f"{stats.get('queue_dropped', 0)}, socket buffer full: {stats.get('user_dropped', 0)})"
        )
    if problems:
        remove_work(work)
        raise TestbedError(
            "the delay stage fell behind: "
            + "; ".join(problems)
            + "; the links were not the scenario's, so no results were written. Lower "
            "workload.rate or topology.nodes, or raise testbed.max_delay_error"
        )


__all__ = ["TestbedError", "TestbedRun", "run_testbed"]
