"""The kernel's EEVDF scheduler as real nodes meet it: their scheduling groups' state at
the root run queue of the nodes' CPU, recorded with eBPF during a testbed run.

Each testbed node is started with setsid(2), so with sched_autogroup (on
here, `/proc/sys/kernel/sched_autogroup_enabled`) the kernel schedules each node as one
group: its threads, Go's `sysmon` among them, share one entity of the CPU's root run
queue. A model node is such an entity (crates/engine/src/slices.rs). This runs a scenario
whose nodes are confined to CPUs (`[testbed] node_cpus`), loads bench/eevdf/probe.bpf.c
on the first of them for `--window` seconds from a second into the publishing, and prints
per class of node (the `--hubs` nodes that received the most payload copies, and the
rest), per node and second:

- group visits: a group's thread runs after another group's; which thread ran first (Go's
  `sysmon`, or a working thread), and whether a working thread ran before the CPU went to
  another group;
- the margin at a visit, `avg_vruntime - vruntime` of the group on the root queue (>= 0:
  eligible; kernel/sched/fair.c `vruntime_eligible`), p10 / p50 / p90 in µs; and at a
  working thread's preemption (its group switched out runnable), where it is negative
  for a group that ran past the average;
- the lag a group kept when it last emptied (`vlag`), read as it wakes (what
  `place_entity` places it by);
- wake-ups of sysmon and of working threads, with the group idle or queued already;
- sysmon's runs: how much virtual runtime each charged to its group, and their length;
- where a working thread was when preempted: in a system call (Go's P in `_Psyscall`,
  which `sysmon` retakes when it finds it there twice) or in user code;
- what woke just before a working thread's preemption (within `PREEMPTION_CAUSE_NS`: the
  wake-up whose check, `check_preempt_wakeup_fair`, rescheduled the CPU): a thread of
  its own group (sysmon, whose wake-up makes the kernel pick again at the root, or a
  working thread), a thread of another group (idle, or queued already), or no node's
  thread (the tick ending a slice, or a kernel thread);
- the switches between two threads of one node that leave the first runnable (involuntary
  in /proc's count while the node keeps the CPU): a working thread for its own sysmon, a
  working thread for another (Go's threads other than the one holding the P), sysmon for
  a working thread;
- sysmon's sleeps (from leaving the CPU to waking; a model run's from a round's end to
  the next wake-up): the short ones (its 20 µs), the longest (10 ms), each short sleep
  after one of 1 ms or more, where a retake or a deep sleep's end reset it, and the deep
  ones (it left in `futex`; a model run's: any sleep that is not one of its delays and
  the timer's slack);
- sysmon's wake-ups while its own working thread has the CPU (those that can preempt it)
  and what the working thread did next: switched out for its sysmon, lost the CPU to
  another node, or blocked first;
- the part of the nodes' time on the CPU that their sysmon threads ran;
- working visits (a working thread ran in them): the working threads' time on the CPU in
  each, and the gap from the group's last working visit's end to the start of this one;
  `--model RUN` prints the same rows for a model run's recorded nodes
  (`[cpu] record_waits`: `goroutine_waits.parquet`, goroutine "node thread", each visit
  from its start `t_ns` for `ran_ns`) over the recording's seconds (`--window` from a
  second into the publishing: a saturated host's nodes run differently while their
  queues fill), classes by the same rule;
- the root queue's length (`nr_queued`) and the group's weight at visits (a group's
  weight is its share of the autogroup's 1024, `calc_group_shares`: virtual runtime
  advances by 1024 / weight per ns it runs).

A node's `sysmon` thread is told from its others by sampling `/proc/<pid>/task/*/syscall`
during the recording and a few seconds after: the thread found in `nanosleep` (its
`usleep`, runtime/proc.go) is sysmon; the report says for how many nodes it was found.
Needs root, a kernel with BTF (`/sys/kernel/btf/vmlinux`) and clang, bpftool and libbpf
(`make install-ebpf` installs them as root); the probe is built into bench/out.

    flock /tmp/testbed.lock .venv/bin/python bench/kernel_eevdf.py \\
        scenarios/crosscheck/cliff-at.toml -o bench/out/eevdf [--again]
    .venv/bin/python bench/kernel_eevdf.py --model out/model-run [--window 3]
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import subprocess
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from testbed_perf import node_numbers, run_during_publishing

from gossiplab.scenario import load_scenario

SOURCES = Path(__file__).parent / "eevdf"
BUILD = Path(__file__).parent / "out" / "eevdf-probe"
# nanosleep's number, by machine (arch/*/entry/syscalls).
NANOSLEEP = {"x86_64": 35, "aarch64": 101}
# futex's: sysmon's deep sleep (`notetsleep` on `sched.sysmonnote`).
FUTEX = {"x86_64": 202, "aarch64": 98}
WAKING, SWITCH_IN, SWITCH_OUT, SWITCH, WAKE = range(5)
# Where a thread was when it left the CPU (a switch's last column): unknown (a recording
# made before the probe read it), in user code, or in system call `left - LEFT_SYSCALL`.
LEFT_UNKNOWN, LEFT_USER, LEFT_SYSCALL = range(3)
# A preemption follows the wake-up that caused it by the reschedule's latency: the
# recordings have 12-20 µs at the median, 22-25 µs at the p90.
PREEMPTION_CAUSE_NS = 50_000
# Seconds of sampling for sysmon threads after the recording (the run goes on publishing).
SAMPLE_AFTER_S = 4.0
# A recording starts a second into the publishing (`run_during_publishing`).
PUBLISHING_LEAD_NS = 1_000_000_000
# The rows of working visits, the same for a recording and a model run.
VISIT_TIME = "working visits: the working threads' time on the CPU"
VISIT_GAP = "working visits: gap since the group's last one ended"
# The model's counts beside the kernel's rows: its sysmon's wake-ups (the kernel's split
# by the group's state) and its working visits that ended with work left (the kernel's
# split by where the thread was).
MODEL_SYSMON = "wake-ups of sysmon, group idle or queued (model: every round)"
MODEL_PREEMPTED = "preempted in: anything (model: left the core with work)"
# sysmon's sleeps, read the same from a recording and from a model run: its 20 µs sleeps
# (with the timer's 50 µs of slack), its longest (10 ms), and a short sleep right after
# one of 1 ms or more, where something (a retake, a system call ending a deep sleep) put
# it back on short sleeps (runtime/proc.go sysmon's `idle = 0`).
SLEEP_SHORT = "sysmon sleeps: short (under 100 µs)"
SLEEP_LONGEST = "sysmon sleeps: the longest (9 to 11 ms)"
SLEEP_BACK = "sysmon sleeps: back to short after one of 1 ms or more"
SLEEP_DEEP = "sysmon sleeps: deep (until the node's next system call)"
# The model's timed sleeps: sysmon's delays (20 µs doubling up to 10 ms, runtime/proc.go
# sysmon) and the timer's 50 µs of slack (crates/engine/src/sysmon.rs); any other
# sleep of a model run is a deep one.
MODEL_TIMED_SLEEPS_US = {min(20 << k, 10_000) + 50 for k in range(10)}
# A node's sysmon waking while its working thread has the CPU: the wake-ups that can
# preempt it.
SYSMON_WAKES_ON_CPU = "wake-ups of sysmon while its working thread runs"
# A model run's sysmon rounds by where the node was when sysmon woke (goroutine_waits'
# readied_by), as the rows of a recording count them: its group queued when it waits or
# runs, idle when it has nothing to run.
MODEL_WOKE = {
    "node running": ("wake-ups of sysmon, group queued", SYSMON_WAKES_ON_CPU),
    "node waiting": ("wake-ups of sysmon, group queued",),
    "node idle": ("wake-ups of sysmon, group idle",),
}


def build() -> tuple[Path, Path]:
    """The probe's loader and BPF object, built once into bench/out."""
    missing = [tool for tool in ("clang", "bpftool", "cc") if shutil.which(tool) is None]
    if missing or not Path("/usr/include/bpf/libbpf.h").exists():
        raise SystemExit("the probe needs clang, bpftool and libbpf: make install-ebpf (root)")
    BUILD.mkdir(parents=True, exist_ok=True)
    header, obj, loader = BUILD / "vmlinux.h", BUILD / "probe.bpf.o", BUILD / "probe"
    if not header.exists():
        dump = ["bpftool", "btf", "dump", "file", "/sys/kernel/btf/vmlinux", "format", "c"]
        header.write_text(subprocess.run(dump, capture_output=True, text=True, check=True).stdout)
    compile_bpf = ["clang", "-O2", "-g", "-target", "bpf", f"-I{BUILD}", "-c"]
    subprocess.run([*compile_bpf, str(SOURCES / "probe.bpf.c"), "-o", str(obj)], check=True)
    subprocess.run(["cc", "-O2", str(SOURCES / "probe.c"), "-o", str(loader), "-lbpf"], check=True)
    return loader, obj


def sysmon_threads(pids: list[int], until: float) -> set[int]:
    """The threads of `pids` seen in nanosleep (Go's sysmon) while sampling until `until`."""
    number = NANOSLEEP.get(platform.machine())
    if number is None:
        raise SystemExit(f"no nanosleep number for {platform.machine()}")
    found: set[int] = set()
    while time.monotonic() < until:
        for pid in pids:
            for task in Path(f"/proc/{pid}/task").glob("*"):
                try:
                    if (task / "syscall").read_text().split()[0] == str(number):
                        found.add(int(task.name))
                except (OSError, IndexError):
                    continue
        time.sleep(0.003)
    return found


def record(scenario: Path, out: Path, window: float) -> Path:
    """Run `scenario` and record its nodes' CPU; returns the recording's folder."""
    loader, obj = build()
    folder = out / scenario.stem

    def probe(spec: dict[str, Any]) -> None:
        cpu = spec["testbed"]["node_cpus"][0]
        nodes = node_numbers()
        with (folder.with_suffix(".events")).open("w") as sink:
            running = subprocess.Popen([loader, obj, str(cpu), str(window)], stdout=sink)
            # On past the recording while the nodes still publish: a sysmon that sleeps
            # deeply (in a futex) most of the time is seen in nanosleep only now and then.
            sysmon = sysmon_threads(list(nodes), time.monotonic() + window + SAMPLE_AFTER_S)
            if running.wait() != 0:
                raise SystemExit("the probe failed (root, and a kernel with BTF?)")
        meta = {"cpu": cpu, "nodes": nodes, "sysmon": sorted(sysmon)}
        folder.with_suffix(".meta.json").write_text(json.dumps(meta))

    run_during_publishing(scenario, folder, probe)
    return folder


@dataclass
class Recording:
    """A recording's events, with which node each group is and which threads are sysmon."""

    node_of: dict[int, int]
    sysmon: set[int]
    events: np.ndarray  # columns: t kind tgid tid nr_queued vlag sum load key other left
    classes: dict[int, str] = field(default_factory=dict)

    @property
    def seconds(self) -> float:
        return float(self.events[-1, 0] - self.events[0, 0]) / 1e9

    def nodes_in(self, cls: str) -> int:
        return sum(1 for c in self.classes.values() if c == cls)


def load(folder: Path, hubs: int) -> Recording:
    meta = json.loads(folder.with_suffix(".meta.json").read_text())
    events = np.loadtxt(folder.with_suffix(".events"), dtype=np.int64, ndmin=2)
    if events.shape[1] == 10:  # recorded before the probe read where threads left
        events = np.column_stack([events, np.full(len(events), LEFT_UNKNOWN)])
    node_of = {int(pid): node for pid, node in meta["nodes"].items()}
    by_traffic = _classes(pl.read_parquet(folder / "traffic.parquet"), hubs)
    classes = {node: by_traffic.get(node, "others") for node in node_of.values()}
    return Recording(node_of, set(meta["sysmon"]), events, classes)


def margin_us(row: np.ndarray) -> float:
    """avg_vruntime - vruntime of the event's group, in µs (equal weights: ns of CPU)."""
    return (row[6] / row[7] - row[8]) / 1e3


@dataclass
class Visit:
    """The group on the CPU since it took it from another group."""

    group: int | None = None
    sysmon_first: bool = False
    working_ran: bool = False
    started: int = 0
    working_ns: int = 0


Values = dict[tuple[str, str], list[float]]


def read(rec: Recording) -> Values:
    """Per (class, what), the values read: one 1.0 per counted event, else the value."""
    out: Values = defaultdict(list)
    visit = Visit()
    sysmon_runs: dict[int, tuple[int, int]] = {}  # sysmon tid -> (switched in, vruntime)
    woke: np.ndarray | None = None  # the last wake-up of a node's thread
    last_switch = 0
    working_ended: dict[int, int] = {}  # group -> end of its last working visit
    on_cpu: tuple[int, int] | None = None  # (tgid, tid) of the thread on the CPU
    waking_run: dict[int, str] = {}  # working thread tid -> class, its sysmon woke
    slept: dict[int, int] = {}  # sysmon tid -> when it last left the CPU
    deep: dict[int, bool] = {}  # sysmon tid -> it left in futex (its deep sleep)
    # sysmon tid -> its sleeps (µs, and whether deep)
    sleeps: dict[int, list[tuple[float, bool]]] = defaultdict(list)
    group_of: dict[int, int] = {}  # sysmon tid -> its node's tgid
    for row in rec.events:
        kind = int(row[1])
        if kind == SWITCH:
            _preemption_cause(rec, row, woke, out)
            _switch_inside_group(rec, row, out)
            _after_sysmon_woke(rec, row, waking_run, out)
            on_cpu = (int(row[6]), int(row[9]))
            if int(row[3]) in rec.sysmon and row[5] != 0:
                slept[int(row[3])] = int(row[0])
                deep[int(row[3])] = int(row[10]) - LEFT_SYSCALL == FUTEX.get(platform.machine())
            if visit.group is not None and int(row[3]) not in rec.sysmon:
                visit.working_ns += int(row[0]) - last_switch
            last_switch = int(row[0])
            ending = visit
            visit = _switch(rec, row, visit, sysmon_runs, out)
            if visit is not ending:
                _working_visit(rec, ending, int(row[0]), working_ended, out)
            continue
        if kind == WAKE:
            woke = row
            _sysmon_wakes_on_cpu(rec, row, on_cpu, waking_run, out)
            tid = int(row[3])
            if tid in slept:
                sleeps[tid].append(((int(row[0]) - slept.pop(tid)) / 1e3, deep[tid]))
                group_of[tid] = int(row[2])
        node = rec.node_of.get(int(row[2]))
        if node is not None:
            _state(rec.classes[node], kind, int(row[3]) in rec.sysmon, row, out)
    for tid, its in sleeps.items():
        node = rec.node_of.get(group_of[tid])
        if node is not None:
            sleep_rows(rec.classes[node], its, out)
    return out


def sleep_rows(cls: str, sleeps: list[tuple[float, bool]], out: Values) -> None:
    """One sysmon's successive sleeps (µs, and whether deep): the short ones, the
    longest, each return to a short sleep from one of 1 ms or more, and the deep ones."""
    lengths = [sleep for sleep, _ in sleeps]
    out[(cls, SLEEP_DEEP)].extend(1.0 for _, deep in sleeps if deep)
    for before, sleep in zip([None, *lengths], lengths, strict=False):
        if sleep < 100:
            out[(cls, SLEEP_SHORT)].append(1.0)
            if before is not None and before >= 1_000:
                out[(cls, SLEEP_BACK)].append(1.0)
        elif 9_000 <= sleep <= 11_000:
            out[(cls, SLEEP_LONGEST)].append(1.0)


def _sysmon_wakes_on_cpu(
    rec: Recording,
    row: np.ndarray,
    on_cpu: tuple[int, int] | None,
    waking_run: dict[int, str],
    out: Values,
) -> None:
    """A node's sysmon wakes while its working thread has the CPU: counted, and what
    the working thread then does is read at its next switch (`_after_sysmon_woke`)."""
    tgid, tid = int(row[2]), int(row[3])
    node = rec.node_of.get(tgid)
    if node is None or tid not in rec.sysmon or on_cpu is None:
        return
    if on_cpu[0] != tgid or on_cpu[1] in rec.sysmon:
        return
    out[(rec.classes[node], SYSMON_WAKES_ON_CPU)].append(1.0)
    waking_run[on_cpu[1]] = rec.classes[node]


def _after_sysmon_woke(
    rec: Recording, row: np.ndarray, waking_run: dict[int, str], out: Values
) -> None:
    """The working thread whose sysmon woke while it ran leaves the CPU: for its sysmon,
    for another node, or blocked (it ran on to the end of its work)."""
    cls = waking_run.pop(int(row[3]), None)
    if cls is None:
        return
    if row[5] != 0:
        then = "it blocked first"
    elif int(row[6]) != int(row[2]):
        then = "it lost the CPU to another node"
    elif int(row[9]) in rec.sysmon:
        then = "it was switched out for its sysmon"
    else:
        then = "it was switched out for another of its threads"
    out[(cls, f"{SYSMON_WAKES_ON_CPU}: {then}")].append(1.0)


def _state(cls: str, kind: int, sysmon: bool, row: np.ndarray, out: Values) -> None:
    """A group's state read at a visit, a preemption or a wake-up."""
    who = "sysmon" if sysmon else "working thread"
    if kind == SWITCH_IN and row[7] > 0:
        out[(cls, f"margin at a visit, {who} first")].append(margin_us(row))
        out[(cls, "nr_queued at a visit")].append(float(row[4]))
        out[(cls, "group weight at a visit (nice 0: 1024)")].append(float(row[5]))
    elif kind == SWITCH_OUT and not sysmon and row[7] > 0:
        out[(cls, "margin when preempted")].append(margin_us(row))
    elif kind == WAKING:
        out[(cls, f"lag at waking ({who})")].append(row[5] / 1e3)
    elif kind == WAKE:
        out[(cls, f"wake-ups of {who}, group {'queued' if row[4] else 'idle'}")].append(1.0)


def _preemption_cause(
    rec: Recording, row: np.ndarray, woke: np.ndarray | None, out: Values
) -> None:
    """At a switch that preempts a node's working thread for another group: what woke
    just before."""
    prev_tgid, prev_tid, next_tgid = int(row[2]), int(row[3]), int(row[6])
    node = rec.node_of.get(prev_tgid)
    if node is None or row[5] != 0 or next_tgid == prev_tgid or prev_tid in rec.sysmon:
        return
    if woke is None or row[0] - woke[0] > PREEMPTION_CAUSE_NS:
        cause = "no node's thread woke (tick, kernel thread)"
    else:
        who = "sysmon" if int(woke[3]) in rec.sysmon else "working thread"
        if int(woke[2]) == prev_tgid:
            cause = f"its own group's {who} woke"
        else:
            cause = f"another group's {who} woke, that group {'queued' if woke[4] else 'idle'}"
    out[(rec.classes[node], f"preempted after: {cause}")].append(1.0)
    left = int(row[10])
    if left != LEFT_UNKNOWN:
        where = "user code (its P running)" if left == LEFT_USER else "a system call (_Psyscall)"
        out[(rec.classes[node], f"preempted in {where}")].append(1.0)


def _switch_inside_group(rec: Recording, row: np.ndarray, out: Values) -> None:
    """At a switch between two threads of one node that leaves the first runnable (an
    involuntary switch in /proc's count, the group keeping the CPU): which two."""
    prev_tgid, prev_tid, next_tgid, next_tid = int(row[2]), int(row[3]), int(row[6]), int(row[9])
    node = rec.node_of.get(prev_tgid)
    if node is None or row[5] != 0 or next_tgid != prev_tgid:
        return
    who = "sysmon" if prev_tid in rec.sysmon else "a working thread"
    to = "its sysmon" if next_tid in rec.sysmon else "another working thread"
    out[(rec.classes[node], f"switched out runnable inside its group: {who} for {to}")].append(1.0)


def _switch(
    rec: Recording,
    row: np.ndarray,
    visit: Visit,
    sysmon_runs: dict[int, tuple[int, int]],
    out: Values,
) -> Visit:
    """A switch on the CPU: a sysmon run that ends, and the visit that ends when the
    next thread is another group's."""
    prev_tid, next_tgid, next_tid = int(row[3]), int(row[6]), int(row[9])
    started = sysmon_runs.pop(prev_tid, None)
    node = rec.node_of.get(int(row[2]))
    if started is not None and node is not None:
        cls = rec.classes[node]
        out[(cls, "sysmon run: vruntime it charged")].append((row[8] - started[1]) / 1e3)
        out[(cls, "sysmon run: length")].append((row[0] - started[0]) / 1e3)
    if next_tid in rec.sysmon:
        sysmon_runs[next_tid] = (int(row[0]), int(row[7]))
    if next_tgid == visit.group:
        visit.working_ran |= next_tid not in rec.sysmon
        return visit
    ended = rec.node_of.get(visit.group) if visit.group is not None else None
    if ended is not None:
        first = "sysmon first" if visit.sysmon_first else "working thread first"
        ran = "a working thread ran" if visit.working_ran else "no working thread ran"
        out[(rec.classes[ended], f"visits, {first}, {ran}")].append(1.0)
    sysmon = next_tid in rec.sysmon
    return Visit(next_tgid, sysmon, not sysmon, int(row[0]))


def _working_visit(
    rec: Recording, visit: Visit, end: int, ended: dict[int, int], out: Values
) -> None:
    """A node's visit is over: if a working thread ran in it, its time and the gap since
    the group's last such visit."""
    node = rec.node_of.get(visit.group) if visit.group is not None else None
    if node is None or not visit.working_ran:
        return
    _visit_rows(rec.classes[node], visit.started, visit.working_ns, ended.get(visit.group), out)
    ended[visit.group] = end


def _visit_rows(cls: str, start: int, working_ns: int, last_end: int | None, out: Values) -> None:
    out[(cls, VISIT_TIME)].append(working_ns / 1e3)
    if last_end is not None:
        out[(cls, VISIT_GAP)].append((start - last_end) / 1e3)


def model_visits(
    run: Path, hubs: int, window: float | None = None
) -> tuple[Values, dict[str, int], float]:
    """A model run's working visits (its recorded nodes' own waits for a core, each
    followed by `ran_ns` on it) that start in the span read, those that ended with work
    left (the next wait began as the visit ended), and its `sysmon` rounds (with
    `[cpu] sysmon`): the values by class, how many recorded nodes each class has, and the
    seconds read. The span is the recording's, `window` seconds from a second into the
    publishing (`record`), or with no `window` the whole publishing: a saturated host's
    nodes run differently in their first second, while the queues fill."""
    table = run / "goroutine_waits.parquet"
    if not table.exists():
        raise SystemExit(
            f"{run}: no goroutine_waits.parquet; run the model with [cpu] record_waits"
        )
    published = pl.read_parquet(run / "publishes.parquet")["t_publish_ns"]
    start, end = int(published.filter(published >= 0).min()), int(published.max())
    if window is not None:
        start += PUBLISHING_LEAD_NS
        end = min(end, start + int(window * 1e9))
    waits = pl.read_parquet(table)
    visits = waits.filter(pl.col("goroutine") == "node thread").sort("node", "t_ns")
    classes = _classes(pl.read_parquet(run / "traffic.parquet"), hubs)
    out: Values = defaultdict(list)
    for (node,), rows in visits.group_by(["node"], maintain_order=True):
        last_end: int | None = None
        for t, wait, ran in rows.select("t_ns", "wait_ns", "ran_ns").iter_rows():
            if last_end is not None and start <= last_end < end and t - wait == last_end:
                out[(classes[node], MODEL_PREEMPTED)].append(1.0)
            if start <= t < end:
                _visit_rows(classes[node], t, ran, last_end, out)
            last_end = t + ran
    rounds = waits.filter(
        (pl.col("goroutine") == "sysmon") & (pl.col("t_ns") >= start) & (pl.col("t_ns") < end)
    )
    for node in rounds["node"].to_list():
        out[(classes[node], MODEL_SYSMON)].append(1.0)
    if "readied_by" in rounds.columns:
        for node, where in rounds.select("node", "readied_by").iter_rows():
            for row in MODEL_WOKE.get(where, ()):
                out[(classes[node], row)].append(1.0)
    _model_sleeps(run, waits, classes, start, end, out)
    recorded = visits["node"].unique().to_list()
    per_class = {c: sum(classes[n] == c for n in recorded) for c in ("hubs", "others")}
    return out, per_class, (end - start) / 1e9


def _model_sleeps(
    run: Path, waits: pl.DataFrame, classes: dict[int, str], start: int, end: int, out: Values
) -> None:
    """The model's sysmon sleeps: from a round's end (its start and the run's
    `per_sysmon_round`) to the next round's wake-up (`t_ns - wait_ns`), for the wake-ups
    while it publishes."""
    scenario = run / "scenario.toml"
    cost = load_scenario(scenario).cpu.charged().per_sysmon_round if scenario.exists() else 0
    rounds = waits.filter(pl.col("goroutine") == "sysmon").sort("node", "t_ns")
    for (node,), rows in rounds.group_by(["node"], maintain_order=True):
        began, waited = rows["t_ns"].to_numpy(), rows["wait_ns"].to_numpy()
        woke = began[1:] - waited[1:]
        during = (woke >= start) & (woke < end)
        sleeps = (woke - began[:-1] - cost)[during] / 1e3
        timed = np.isin(np.round(sleeps, 3), list(MODEL_TIMED_SLEEPS_US))
        sleep_rows(classes[node], list(zip(sleeps.tolist(), (~timed).tolist(), strict=True)), out)


def _classes(traffic: pl.DataFrame, hubs: int) -> dict[int, str]:
    """The `hubs` nodes that received the most payload copies are hubs, the rest others."""
    copies = (
        traffic.filter(pl.col("kind") == "payload").group_by("node").agg(pl.col("msgs_recv").sum())
    )
    busiest = set(copies.sort("msgs_recv", descending=True)["node"].head(hubs).to_list())
    return {int(n): "hubs" if n in busiest else "others" for n in copies["node"].to_list()}


def sysmon_share(rec: Recording) -> float:
    """The part of the nodes' time on the CPU that their sysmon threads ran."""
    switches = rec.events[rec.events[:, 1] == SWITCH]
    lengths = np.diff(switches[:, 0])
    running_tgid, running_tid = switches[:-1, 6], switches[:-1, 9]
    nodes = np.isin(running_tgid, list(rec.node_of))
    sysmon = np.isin(running_tid, list(rec.sysmon))
    return float(lengths[sysmon].sum() / max(lengths[nodes].sum(), 1))


def report(rec: Recording) -> None:
    values = read(rec)
    span = rec.seconds
    print(f"sysmon ran {sysmon_share(rec):.1%} of the nodes' time on the CPU (its known threads)")
    print(
        f"{span:.2f} s recorded; sysmon told apart for {len(rec.sysmon)} of "
        f"{len(rec.node_of)} nodes; per node and second, or p10 / p50 / p90 (µs):"
    )
    _table(values, {c: rec.nodes_in(c) for c in ("hubs", "others")}, span)


def _table(values: Values, nodes: dict[str, int], span: float) -> None:
    print("| class | what | per node per s | p10 / p50 / p90 |")
    print("|---|---|---:|---|")
    for (cls, what), v in sorted(values.items()):
        rate = len(v) / span / max(nodes.get(cls, 0), 1)
        counted = (
            "visits",
            "wake-ups",
            "preempted after",
            "preempted in",
            "switched out",
            "sysmon sleeps",
        )
        spread = "" if what.startswith(counted) else _spread(v)
        print(f"| {cls} | {what} | {rate:,.1f} | {spread} |")


def _spread(values: list[float]) -> str:
    return " / ".join(f"{x:,.1f}" for x in np.percentile(values, [10, 50, 90]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("scenario", type=Path, nargs="?")
    parser.add_argument("-o", "--out", type=Path)
    parser.add_argument("--window", type=float, default=3.0, help="seconds recorded")
    parser.add_argument("--hubs", type=int, default=10, help="nodes counted as hubs")
    parser.add_argument("--again", action="store_true", help="analyse the kept recording")
    parser.add_argument("--model", type=Path, help="a model run's visits instead (record_waits)")
    args = parser.parse_args()
    if args.model is not None:
        values, nodes, span = model_visits(args.model, args.hubs, args.window)
        print(f"{span:.2f} s read from a second into the publishing; recorded nodes: {nodes}")
        print("per node and second (µs):")
        _table(values, nodes, span)
        return
    if args.scenario is None or args.out is None:
        parser.error("a scenario and -o are needed unless --model is given")
    args.out.mkdir(parents=True, exist_ok=True)
    folder = args.out / args.scenario.stem
    if not args.again:
        folder = record(args.scenario, args.out, args.window)
    report(load(folder, args.hubs))


if __name__ == "__main__":
    main()
