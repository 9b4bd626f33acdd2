"""Start, run and tear down one testbed run: namespaces, delay stage, nodes, clock.

Everything a run creates is named after the orchestrator's PID and recorded here, and
``Testbed.close`` deletes exactly that, whatever happened: normal end, an exception,
Ctrl-C or SIGTERM/SIGHUP (turned into KeyboardInterrupt while a run is on). A SIGKILLed
orchestrator cannot clean up: its nodes die with it (PR_SET_PDEATHSIG in the node) and
its namespaces are removed by the next run or `gossiplab clean`.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import queue
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType, TracebackType
from typing import IO, Any

from gossiplab.backends.testbed.cpus import affinity_prefix, delay_cpus
from gossiplab.backends.testbed.errors import TestbedError
from gossiplab.backends.testbed.links import (
    bandwidths,
    delay_pairs,
    has_latency,
    latency_rule,
    link_latencies,
)
from gossiplab.backends.testbed.losses import read_namespace
from gossiplab.backends.testbed.netns import (
    WORK_ROOT,
    build_network,
    congestion_control,
    core_ns,
    delete_namespaces,
    install_impairments,
    list_namespaces,
    node_ns,
    run_prefix,
)
from gossiplab.backends.testbed.nodeconfig import node_configs
from gossiplab.backends.testbed.resources import Sampler
from gossiplab.scenario import Scenario
from gossiplab.topology import Topology
from gossiplab.workload import Schedule

NFQUEUE_NUMBER = 0
START_MARGIN_NS = 500_000_000  # from "all ready" to the first publish: time to tell every node
DELAY_READY_TIMEOUT_S = 10.0
READY_GRACE_S = 60.0  # beyond the warm-up: dials retry for warm-up + 30 s in the node
STOP_TIMEOUT_S = 20.0
STDERR_TAIL = 2000
DELAY_STAGE_NICE = -15
DELAY_STAGE_RT_PRIORITY = 1  # SCHED_FIFO's lowest: above every normal task, below the kernel's

_runs = itertools.count()


@dataclass
class Crash:
    node: int
    returncode: int | None
    phase: str
    stderr: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "returncode": self.returncode,
            "phase": self.phase,
            "stderr": self.stderr,
        }


@dataclass
class Readiness:
    wait_s: float
    by_mesh: int
    by_warmup: int
    slowest_node_s: float


def _tail(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")[-STDERR_TAIL:].strip()
    except OSError:
        return ""


def _reader(stream: IO[str], key: int, lines: queue.Queue[tuple[int, dict[str, Any]]]) -> None:
    for line in stream:
        try:
            lines.put((key, json.loads(line)))
        except ValueError:
            continue


@dataclass
class Testbed:
    s: Scenario
    topology: Topology
    binary: Path  # gossiplab-node: the delay stage, and the nodes unless node_binary is set
    node_binary: Path | None = None  # the nodes' (the v2.0 fork's node, binary.py)
    prefix: str = field(default_factory=run_prefix)
    work: Path = field(init=False)
    procs: dict[int, subprocess.Popen[str]] = field(default_factory=dict)
    delay: subprocess.Popen[str] | None = None
    lines: queue.Queue[tuple[int, dict[str, Any]]] = field(default_factory=queue.Queue)
    crashes: dict[int, Crash] = field(default_factory=dict)
    namespaces: list[str] = field(default_factory=list)
    delay_stats_path: Path | None = None
    delay_scheduling: str = "none"
    # When the last node process was started (host clock, ns): the model's time 0.
    launched_ns: int = 0
    _handlers: dict[int, Any] = field(default_factory=dict)
    _stopping: bool = False

    def __post_init__(self) -> None:
        self.work = WORK_ROOT / f"{self.prefix}.{next(_runs)}"

    # ---- lifecycle -----------------------------------------------------------------------

    def __enter__(self) -> Testbed:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGHUP):
                self._handlers[sig] = signal.signal(sig, self._interrupt)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()
        if kind is not None:  # nothing of a failed run is read afterwards
            remove_work(self.work)

    def _interrupt(self, signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    def node_dir(self, node: int) -> Path:
        return self.work / f"node{node}"

    def close(self) -> None:
        """Stop every process of this run and delete its namespaces; safe to call twice."""
        for proc in [*self.procs.values(), *([self.delay] if self.delay else [])]:
            if proc.poll() is None:
                proc.kill()
        for proc in [*self.procs.values(), *([self.delay] if self.delay else [])]:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
        existing = set(list_namespaces())
        delete_namespaces([name for name in self.namespaces if name in existing])
        for sig, handler in self._handlers.items():
            signal.signal(sig, handler)
        self._handlers.clear()

    # ---- network -------------------------------------------------------------------------

    def build(self) -> None:
        nodes = list(range(self.topology.nodes))
        self.namespaces = [core_ns(self.prefix)] + [node_ns(self.prefix, i) for i in nodes]
        upload, download = bandwidths(self.s, self.topology.nodes)
        wanted = self.s.testbed.congestion_control
        build_network(self.prefix, nodes, upload, download, None if wanted == "host" else wanted)
        needs_delay = self.needs_delay()
        install_impairments(
            self.prefix, self.s.network.loss, NFQUEUE_NUMBER if needs_delay else None
        )

    def needs_delay(self) -> bool:
        return has_latency(self.s)

    def start_delay_stage(self) -> dict[str, Any]:
        """Start the NFQUEUE delay stage in the core namespace; return the pair table's summary."""
        latencies = link_latencies(self.s, self.topology)
        one_way = [ns for pair in latencies for ns in pair]
        info = {
            "links": len(latencies),
            "latency_ms": {
                "min": min(one_way, default=0) / 1e6,
                "max": max(one_way, default=0) / 1e6,
            },
            "jitter_ms": self.s.network.jitter / 1e6,
        }
        if not self.needs_delay():
            return info
        self.work.mkdir(parents=True, exist_ok=True)
        self.delay_stats_path = self.work / "delay-stats.json"
        config = {
            "queue": NFQUEUE_NUMBER,
            "jitter_ns": self.s.network.jitter,
            "seed": self.s.seed,
            "pairs": delay_pairs(self.topology, latencies),
            # Pairs that connect during the run (peer exchange) get the same model.
            "rule": latency_rule(self.s, self.topology.nodes),
            "stats": str(self.delay_stats_path),
        }
        path = self.work / "delay.json"
        path.write_text(json.dumps(config), encoding="utf-8")
        stderr = (self.work / "delay.stderr").open("w")
        self.delay_scheduling, priority = delay_scheduling()
        self.delay = subprocess.Popen(
            [
                *affinity_prefix(delay_cpus(self.s.testbed.node_cpus)),
                *priority,
                "ip",
                "netns",
                "exec",
                core_ns(self.prefix),
                str(self.binary),
                "delay",
                str(path),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            start_new_session=True,  # Ctrl-C goes to the orchestrator, which stops it
        )
        if priority[0] == "nice":
            _raise_autogroup_priority(self.delay.pid)
        assert self.delay.stdout is not None
        ready: queue.Queue[tuple[int, dict[str, Any]]] = queue.Queue()
        threading.Thread(target=_reader, args=(self.delay.stdout, -1, ready), daemon=True).start()
        try:
            ready.get(timeout=DELAY_READY_TIMEOUT_S)
        except queue.Empty:
            raise TestbedError(
                "the delay stage did not start: "
                + (_tail(self.work / "delay.stderr") or "no message")
            ) from None
        return info

    # ---- nodes ---------------------------------------------------------------------------

    def start_nodes(self, schedule: Schedule) -> None:
        dirs = {i: str(self.node_dir(i)) for i in range(self.topology.nodes)}
        configs = node_configs(self.s, self.topology, schedule, dirs)
        for i, config in configs.items():
            folder = self.node_dir(i)
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
        binary = str(self.node_binary or self.binary)
        # Confined from exec on: go sizes GOMAXPROCS from the mask at start (cpus.py).
        pin = affinity_prefix(self.s.testbed.node_cpus)
        for i in configs:
            folder = self.node_dir(i)
            proc = subprocess.Popen(
                [*pin, "ip", "netns", "exec", node_ns(self.prefix, i), binary, "node",
                 str(folder / "config.json")],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=(folder / "stderr.log").open("w"),
                text=True,
                start_new_session=True,
            )  # fmt: skip
            self.procs[i] = proc
            assert proc.stdout is not None
            threading.Thread(target=_reader, args=(proc.stdout, i, self.lines), daemon=True).start()
        self.launched_ns = time.time_ns()

    def pids(self) -> dict[int, int]:
        return {i: p.pid for i, p in self.procs.items() if p.poll() is None}

    def _note_crashes(self, phase: str) -> None:
        """Record nodes that exited; once told to stop, only a failing exit is a crash."""
        for i, proc in self.procs.items():
            if phase == "stop" and proc.returncode == 0:
                continue
            if i not in self.crashes and proc.poll() is not None:
                self.crashes[i] = Crash(
                    i, proc.returncode, phase, _tail(self.node_dir(i) / "stderr.log")
                )

    def await_ready(self) -> Readiness:
        """Wait until every live node said it is ready (meshes formed, or its warm-up over)."""
        started = time.monotonic()
        deadline = started + self.s.workload.warmup / 1e9 + READY_GRACE_S
        ready: dict[int, dict[str, Any]] = {}
        while len(ready) + len(self.crashes) < len(self.procs):
            try:
                node, event = self.lines.get(timeout=0.1)
                if event.get("event") == "ready":
                    ready[node] = event
            except queue.Empty:
                pass
            self._note_crashes("start")
            if time.monotonic() > deadline:
                waiting = sorted(set(self.procs) - set(ready) - set(self.crashes))
                raise TestbedError(
                    f"nodes {waiting[:10]} were not ready {READY_GRACE_S:g} s after the warm-up"
                )
        if not ready:
            first = next(iter(self.crashes.values()), None)
            detail = first.stderr if first else "no output"
            raise TestbedError(f"no node started; the first one said: {detail}")
        return Readiness(
            wait_s=time.monotonic() - started,
            by_mesh=sum(1 for e in ready.values() if e.get("by") == "mesh"),
            by_warmup=sum(1 for e in ready.values() if e.get("by") != "mesh"),
            slowest_node_s=max(e.get("after_ns", 0) for e in ready.values()) / 1e9,
        )

    def _tell(self, node: int, line: str) -> None:
        proc = self.procs[node]
        if proc.poll() is not None or proc.stdin is None:
            return
        try:
            proc.stdin.write(line + "\n")
            proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass

    def start_clock(self) -> int:
        """Fix the run's start on the host clock and send it to every node; return it (ns).

        As in the model, time 0 is when the nodes started, and publishing begins a whole
        warm-up later: meshes keep forming, pruning and exchanging peers for as long as
        they do in the model. Only nodes slower to become ready than the warm-up push
        the first publish later (by the margin it takes to tell every node)."""
        epoch = max(self.launched_ns, time.time_ns() + START_MARGIN_NS - self.s.workload.warmup)
        for node in self.procs:
            self._tell(node, f"start {epoch}")
        return epoch

    def run_until(
        self, epoch: int, end_ns: int, progress: Callable[[int, int, int], None] | None
    ) -> None:
        """Wait until the run's end (epoch + end_ns), noting crashed nodes as they go."""
        while True:
            now = time.time_ns() - epoch
            if progress is not None:
                progress(min(max(now, 0), end_ns), end_ns, 0)
            self._note_crashes("run")
            if now >= end_ns:
                return
            time.sleep(min(0.2, (end_ns - now) / 1e9))

    def stop_nodes(self) -> None:
        for node in self.procs:
            self._tell(node, "stop")
        deadline = time.monotonic() + STOP_TIMEOUT_S
        for node, proc in self.procs.items():
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                self.crashes.setdefault(
                    node, Crash(node, None, "stop", "did not stop within 20 s; killed")
                )
        self._note_crashes("stop")

    def stop_delay_stage(self) -> dict[str, Any] | None:
        if self.delay is None or self.delay_stats_path is None:
            return None
        self.delay.send_signal(signal.SIGTERM)
        try:
            self.delay.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.delay.kill()
        try:
            return json.loads(self.delay_stats_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            raise TestbedError(
                "the delay stage wrote no statistics: "
                + (_tail(self.work / "delay.stderr") or "no message")
            ) from None

    def congestion_control(self) -> str:
        """What the nodes' TCP connections use: the scenario's, or the host's default."""
        wanted = self.s.testbed.congestion_control
        return congestion_control(node_ns(self.prefix, 0)) if wanted == "host" else wanted

    def read_counters(self) -> tuple[dict[int, dict[str, Any]], dict[str, Any]]:
        """The loss counters of every node namespace and of the core (losses.py)."""
        nodes = {i: read_namespace(node_ns(self.prefix, i)) for i in range(self.topology.nodes)}
        return nodes, read_namespace(core_ns(self.prefix))

    def sampler(self) -> Sampler:
        sampler = Sampler(self.pids(), self.s.testbed.sample_interval)
        if self.delay is not None:
            sampler.extra["delay_stage"] = self.delay.pid
        return sampler


def delay_scheduling() -> tuple[str, list[str]]:
    """How the delay stage is scheduled, and the command prefix that does it.

    The stage is on every packet's path, and a packet it releases late is a link slower
    than the scenario's. Real-time (SCHED_FIFO, the lowest priority, 1) runs it the
    moment a release is due, ahead of every node, whatever else the host runs: on the
    2-core host its release lateness at p99 fell from tens of ms under nice -15 to under
    1 ms (docs/testbed.md). It sleeps between releases; should it ever spin, the kernel's
    real-time throttling (kernel.sched_rt_runtime_us, 95 % of each second by default)
    still leaves the other tasks their share. Where real-time scheduling is not allowed
    (some containers), it falls back to nice -15 with its autogroup raised as well.
    """
    chrt = shutil.which("chrt")
    if chrt is not None:
        probe = [chrt, "--fifo", str(DELAY_STAGE_RT_PRIORITY)]
        done = subprocess.run([*probe, "true"], capture_output=True, check=False)
        if done.returncode == 0:
            return f"SCHED_FIFO {DELAY_STAGE_RT_PRIORITY}", probe
    return f"nice {DELAY_STAGE_NICE}", ["nice", "-n", str(DELAY_STAGE_NICE)]


def _raise_autogroup_priority(pid: int) -> None:
    """Give the delay stage's session (autogroup) the same high priority as its nice.

    With sched_autogroup (the default on desktop-style kernels, and here) every session
    competes as one: a niced process in its own session would still get only its
    session's equal share next to forty node sessions. Without autogroup the file does
    not exist and the nice value alone applies.
    """
    with contextlib.suppress(OSError):
        Path(f"/proc/{pid}/autogroup").write_text(f"{DELAY_STAGE_NICE}\n")


def remove_work(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


def this_pid() -> int:
    return os.getpid()
