"""How the kernel shares the nodes' CPU on a testbed run: who preempts a node, and how
long a node that could run waits for the core.

A node's thread leaves the CPU either because it blocks (a voluntary switch) or because
the kernel's scheduler gives the core to another task while the thread could still run
(an involuntary switch: `prev_state` R in the `sched_switch` tracepoint). This runs a
scenario on the testbed, records every `sched_switch` and `sched_wakeup` (on every CPU:
the delay stage's packets wake nodes from the other CPU) for a few seconds of publishing
(`perf record -g`), and prints, per node:

- involuntary switches per second, and which task took the core: the node's own
  `sysmon` thread, another node's `sysmon`, another node's working thread, or a task that
  is not a node (kernel threads, the delay stage);
- the run-queue wait of its working threads, from waking (`sched_wakeup`) or being
  preempted to running again: p50 / p90 / p99 / max in µs;
- how long its working threads run once on the CPU: p50 / p90 / max in µs (a busy node
  runs past its slice until the kernel's next tick or a wake-up on the core ends it).

A `sysmon` thread is one whose voluntary switches block in `runtime.sysmon` (go's
monitor thread, which while its node runs sleeps 20 µs at a time, `runtime/proc.go`);
a node's other threads are its working threads (with one P, one at a time runs go
code).

    flock /tmp/testbed.lock .venv/bin/python bench/preemptions.py \\
        scenarios/crosscheck/cliff-at.toml -o out/preemptions

Run it on an idle host, one run at a time. Needs `perf` with tracepoints. `--again`
analyses a kept recording; perf names the nodes' Go functions from their binary, so
analyse it again before the node binary is rebuilt.
"""

from __future__ import annotations

import argparse
import json
import re
import tomllib
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl
from testbed_perf import (
    NODE_COMM,
    node_numbers,
    perf_script,
    publishing_second,
    record_publishing,
)

HEADER = re.compile(r"^(\S+)\s+(\d+)/(\d+)\s+\[\d+\]\s+([\d.]+):\s+(\S+):\s*(.*)$")
SWITCH = re.compile(
    r"prev_comm=(\S+) prev_pid=(\d+) .*prev_state=(\S+) ==> next_comm=(\S+) next_pid=(\d+)"
)
WAKEUP = re.compile(r"comm=(\S+) pid=(\d+)")
TAKERS = ("own sysmon", "other sysmon", "other node", "not a node")


@dataclass
class Trace:
    """The switches and wake-ups of one recording, with what is known of each thread."""

    process: dict[int, int] = field(default_factory=dict)  # tid -> pid (tgid)
    sysmon: set[int] = field(default_factory=set)
    switches: list[tuple[float, int, str, int, str]] = field(default_factory=list)
    wakeups: list[tuple[float, int]] = field(default_factory=list)
    # Each voluntary switch of a node thread: its tid and its blocking stack.
    blocks: list[tuple[int, list[str]]] = field(default_factory=list)


def parse(script: str) -> Trace:
    """`perf script` output (comm, pid/tid, cpu, time, event, trace, stack) as a Trace."""
    trace = Trace()
    stack_of: list[str] | None = None
    for line in script.splitlines():
        head = HEADER.match(line.strip())
        if head is None:
            if stack_of is not None and line.strip():
                stack_of.append(line.strip())
            continue
        _, pid, tid, at, event, text = head.groups()
        trace.process[int(tid)] = int(pid)
        stack_of = None
        if event == "sched:sched_wakeup":
            woken = WAKEUP.search(text)
            if woken and woken.group(1) == NODE_COMM:
                trace.wakeups.append((float(at), int(woken.group(2))))
        elif event == "sched:sched_switch":
            match = SWITCH.search(text)
            if match is None:
                continue
            prev_comm, prev, state, next_comm, nxt = match.groups()
            trace.switches.append((float(at), int(prev), state, int(nxt), next_comm))
            if prev_comm == NODE_COMM and state.startswith("S"):
                stack_of = []
                trace.blocks.append((int(prev), stack_of))
    in_sysmon = (tid for tid, frames in trace.blocks if any("runtime.sysmon" in f for f in frames))
    trace.sysmon = set(in_sysmon)
    return trace


def taker(trace: Trace, prev: int, nxt: int, next_comm: str) -> str:
    """Which kind of task took the core from node thread `prev`."""
    if next_comm != NODE_COMM:
        return "not a node"
    same = trace.process.get(nxt) == trace.process.get(prev)
    if nxt in trace.sysmon:
        return "own sysmon" if same else "other sysmon"
    return "other node"


def waits(trace: Trace) -> dict[int, list[float]]:
    """Per node process: each run-queue wait (µs) of its working threads, from waking or
    being preempted to running again."""
    ready: dict[int, float] = {}
    out: dict[int, list[float]] = defaultdict(list)
    events = [(at, 0, tid, "") for at, tid in trace.wakeups]
    events += [(at, 1, prev, f"{state}|{nxt}") for at, prev, state, nxt, _ in trace.switches]
    for at, kind, tid, extra in sorted(events):
        if kind == 0:
            ready.setdefault(tid, at)
            continue
        state, nxt = extra.split("|")
        prev, nxt_tid = tid, int(nxt)
        if state.startswith("R"):
            ready[prev] = at
        else:
            ready.pop(prev, None)
        since = ready.pop(nxt_tid, None)
        if since is not None and nxt_tid not in trace.sysmon and nxt_tid in trace.process:
            out[trace.process[nxt_tid]].append((at - since) * 1e6)
    return out


def runs(trace: Trace) -> dict[int, list[float]]:
    """Per node process: each stretch (µs) one of its working threads ran on a CPU, from
    being switched in to being switched out."""
    since: dict[int, float] = {}
    out: dict[int, list[float]] = defaultdict(list)
    for at, prev, _, nxt, _ in trace.switches:
        started = since.pop(prev, None)
        if started is not None and prev not in trace.sysmon and prev in trace.process:
            out[trace.process[prev]].append((at - started) * 1e6)
        since[nxt] = at
    return out


def record(scenario: Path, out: Path, window: float) -> tuple[Trace, dict[int, int]]:
    """Run one scenario on the testbed and trace its nodes' CPUs during publishing."""
    folder = out / scenario.stem

    def note_nodes() -> None:
        folder.with_suffix(".nodes.json").write_text(json.dumps(node_numbers()))

    # Every CPU: a node is often woken from another CPU (the delay stage's packets).
    options = ["-e", "sched:sched_switch", "-e", "sched:sched_wakeup", "-g", "-a"]
    record_publishing(scenario, folder, window, options, note_nodes)
    return analyse(folder)


def model_waits(run: Path, start: float, window: float) -> dict[int, list[float]]:
    """Per node, the model's waits for a core (µs) that ended in [start, start + window)
    seconds (`goroutine_waits.parquet`, goroutine "node thread")."""
    table = run / "goroutine_waits.parquet"
    if not table.exists():
        raise SystemExit(
            f"{run}: no goroutine_waits.parquet; run the model with [cpu] record_waits"
        )
    waits = pl.read_parquet(table).filter(
        (pl.col("goroutine") == "node thread")
        & (pl.col("t_ns") >= int(start * 1e9))
        & (pl.col("t_ns") < int((start + window) * 1e9))
    )
    out: dict[int, list[float]] = defaultdict(list)
    for node, wait_ns in waits.select("node", "wait_ns").iter_rows():
        out[node].append(wait_ns / 1e3)
    return out


def model_sysmon_line(run: Path, start: float, window: float) -> str:
    """The model's `sysmon` rounds in [start, start + window) seconds (goroutine "sysmon"
    of `goroutine_waits.parquet`), beside the kernel's count of `sysmon` wake-ups: each
    wake-up of the model's `sysmon` is one round, run at once or after the node's group
    waited for the core."""
    rounds = pl.read_parquet(run / "goroutine_waits.parquet").filter(
        (pl.col("goroutine") == "sysmon")
        & (pl.col("t_ns") >= int(start * 1e9))
        & (pl.col("t_ns") < int((start + window) * 1e9))
    )
    if rounds.is_empty():
        return "the model's nodes have no sysmon ([cpu] sysmon = false)"
    waited = rounds.filter(pl.col("wait_ns") > 0).height
    return (
        f"the model's sysmon threads run {rounds.height / window:,.0f} rounds a second, "
        f"{waited / window:,.0f} of them after waiting for the core"
    )


def model_report(waits: dict[int, list[float]], window: float, listed: list[int]) -> None:
    print("| node | waits /s | p50 / p90 / p99 / max (µs) |")
    print("|---|---:|---|")
    for node in listed:
        print(f"| {node} | {_spread(waits.get(node, []), window)} |")
    everyone = [w for ws in waits.values() for w in ws]
    print(f"| all | {_spread(everyone, window)} |")
    print(_waiting(everyone, window))


def _sysmon_line(trace: Trace, node_of: dict[int, int], window: float) -> str:
    """The nodes' sysmon threads: how many, how often they wake, and how often one takes
    the core at once from a task that could still run."""
    sysmon = {tid for tid in trace.sysmon if trace.process.get(tid) in node_of}
    if not sysmon:
        return (
            "no sysmon thread found: perf did not resolve the nodes' Go functions (was the "
            "node binary rebuilt since the recording?); sysmon's wake-ups count as the nodes'"
        )
    wakes = sum(tid in sysmon for _, tid in trace.wakeups)
    taking = sum(nxt in sysmon and state.startswith("R") for _, _, state, nxt, _ in trace.switches)
    return (
        f"sysmon threads found: {len(sysmon)} of {len(node_of)} nodes; they wake "
        f"{wakes / window:,.0f} times a second, {taking / window:,.0f} of them taking the "
        "core from a task that could still run"
    )


def _waiting(waits: list[float], window: float) -> str:
    """How many nodes wait for the core at a time, on average: their waits (µs) summed
    over the window."""
    return f"\nNodes waiting for the core, on average: {sum(waits) / 1e6 / window:.1f}"


def _spread(wait: list[float], window: float) -> str:
    """Waits per second, and their p50 / p90 / p99 / max."""
    if not wait:
        return "0 | none"
    q = np.percentile(wait, [50, 90, 99, 100])
    return f"{len(wait) / window:,.0f} | " + " / ".join(f"{v:,.0f}" for v in q)


def analyse(folder: Path) -> tuple[Trace, dict[int, int]]:
    """The recording of a run in `folder` (its `.perf` and `.nodes.json` beside it)."""
    nodes = json.loads(folder.with_suffix(".nodes.json").read_text())
    script = perf_script(folder.with_suffix(".perf"), "comm,pid,tid,cpu,time,event,trace,ip,sym")
    return parse(script), {int(pid): node for pid, node in nodes.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("scenario", type=Path)
    parser.add_argument("-o", "--out", type=Path, required=True)
    parser.add_argument("--window", type=float, default=3.0, help="seconds recorded")
    parser.add_argument("--nodes", default="", help="nodes to list one by one, e.g. 0,5,20")
    parser.add_argument(
        "--again", action="store_true", help="analyse the recording in -o again, without a run"
    )
    parser.add_argument(
        "--model",
        type=Path,
        help="a model run of the scenario with [cpu] record_waits naming every node: "
        "its nodes' waits for a core over the same seconds, beside",
    )
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.again:
        trace, node_of = analyse(args.out / args.scenario.stem)
    else:
        trace, node_of = record(args.scenario, args.out, args.window)
    listed = [int(n) for n in args.nodes.split(",") if n]
    report(trace, node_of, args.window, listed)
    if args.model:
        spec = tomllib.loads(args.scenario.read_text())
        start = publishing_second(spec)
        print(f"\nThe model ({args.model}), its nodes' waits for a core over the same seconds:")
        model_report(model_waits(args.model, start, args.window), args.window, listed)
        print(model_sysmon_line(args.model, start, args.window))


def report(trace: Trace, node_of: dict[int, int], window: float, listed: list[int]) -> None:
    taken: dict[int, Counter[str]] = defaultdict(Counter)
    for _, prev, state, nxt, next_comm in trace.switches:
        pid = trace.process.get(prev)
        if pid in node_of and state.startswith("R") and prev not in trace.sysmon:
            taken[pid][taker(trace, prev, nxt, next_comm)] += 1
    wait, ran = waits(trace), runs(trace)
    total: Counter[str] = sum(taken.values(), Counter())
    print(_sysmon_line(trace, node_of, window))
    takers = " | ".join(TAKERS)
    print(
        f"| node | involuntary /s | {takers} | waits /s | wait p50 / p90 / p99 / max (µs) "
        "| run p50 / p90 / max (µs) |"
    )
    print("|---|---:|" + "---:|" * (len(TAKERS) + 1) + "---|---|")
    rows = [(n, pid) for pid, n in sorted(node_of.items(), key=lambda kv: kv[1]) if n in listed]
    for node, pid in rows:
        print(_row(str(node), taken[pid], wait.get(pid, []), ran.get(pid, []), window))
    everyone = [w for pid, ws in wait.items() if pid in node_of for w in ws]
    all_runs = [r for pid, rs in ran.items() if pid in node_of for r in rs]
    print(_row("all", total, everyone, all_runs, window))
    print(_waiting(everyone, window))


def _row(name: str, taken: Counter[str], wait: list[float], ran: list[float], window: float) -> str:
    counts = " | ".join(f"{taken[k] / window:,.0f}" for k in TAKERS)
    involuntary = sum(taken.values()) / window
    lengths = " / ".join(f"{v:,.0f}" for v in np.percentile(ran, [50, 90, 100])) if ran else ""
    return f"| {name} | {involuntary:,.0f} | {counts} | {_spread(wait, window)} | {lengths} |"


if __name__ == "__main__":
    main()
