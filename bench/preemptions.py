"""How the kernel shares the nodes' CPU on a testbed run: who preempts a node, and how
long a node that could run waits for the core.

A node's thread leaves the CPU either because it blocks (a voluntary switch) or because
the kernel's scheduler gives the core to another task while the thread could still run
(an involuntary switch: `prev_state` R in the `sched_switch` tracepoint). This runs a
scenario on the testbed, records every `sched_switch` and `sched_wakeup` on the nodes'
CPUs for a few seconds of publishing (`perf record -g`), and prints, per node:

- involuntary switches per second, and which task took the core: the node's own
  `sysmon` thread, another node's `sysmon`, another node's working thread, or a task that
  is not a node (kernel threads, the delay stage);
- the run-queue wait of its working threads, from waking (`sched_wakeup`) or being
  preempted to running again: p50 / p90 / p99 / max in µs.

A `sysmon` thread is one whose voluntary switches block in `runtime.sysmon` (go's
monitor thread, which while its node runs sleeps 20 µs at a time, `runtime/proc.go`);
a node's other threads are its working threads (with one P, one at a time runs go
code).

    flock /tmp/testbed.lock .venv/bin/python bench/preemptions.py \\
        scenarios/crosscheck/cliff-at.toml -o out/preemptions

Run it on an idle host, one run at a time. Needs `perf` with tracepoints.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
import tomllib
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from gossiplab.units import parse_duration

NODE_COMM = "gossiplab-node"
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


def record(scenario: Path, out: Path, window: float) -> tuple[Trace, dict[int, int], dict]:
    """Run one scenario on the testbed and trace its nodes' CPUs during publishing."""
    spec = tomllib.loads(scenario.read_text())
    cpus = spec.get("testbed", {}).get("node_cpus")
    if not cpus:
        raise SystemExit(f"{scenario}: confine the nodes to CPUs ([testbed] node_cpus)")
    nodes = spec["topology"]["nodes"]
    warmup = parse_duration(spec.get("workload", {}).get("warmup", "0s")) / 1e9
    folder = out / scenario.stem
    run = subprocess.Popen(
        [sys.executable, "-m", "gossiplab", "run", str(scenario), "-o", str(folder), "--force"],
        stdout=subprocess.DEVNULL,
    )
    while run.poll() is None:
        found = subprocess.run(["pgrep", "-x", NODE_COMM], capture_output=True, text=True)
        if len(found.stdout.split()) >= nodes + 1:
            break
        time.sleep(0.1)
    time.sleep(warmup + 1.0)
    node_of = node_numbers()
    (folder.with_suffix(".nodes.json")).write_text(json.dumps(node_of))
    data = folder.with_suffix(".perf")
    events = ["-e", "sched:sched_switch", "-e", "sched:sched_wakeup"]
    cpu_list = ",".join(str(c) for c in cpus)
    subprocess.run(
        ["perf", "record", "-q", *events, "-g", "-o", str(data), "-C", cpu_list,
         "--", "sleep", str(window)],
        check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    if run.wait() != 0:
        raise SystemExit(f"{scenario}: the run failed")
    script = subprocess.run(
        ["perf", "script", "-i", str(data), "-F", "comm,pid,tid,cpu,time,event,trace,ip,sym"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return parse(script), node_of, spec


def node_numbers() -> dict[int, int]:
    """pid -> node number of the running nodes (their config is `.../<node>/config.json`)."""
    found = subprocess.run(["pgrep", "-x", NODE_COMM], capture_output=True, text=True)
    out = {}
    for pid in map(int, found.stdout.split()):
        try:
            args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if len(args) >= 3 and args[1] == b"node":
            name = Path(args[2].decode()).parent.name
            digits = "".join(ch for ch in name if ch.isdigit())
            if digits:
                out[pid] = int(digits)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("scenario", type=Path)
    parser.add_argument("-o", "--out", type=Path, required=True)
    parser.add_argument("--window", type=float, default=3.0, help="seconds recorded")
    parser.add_argument("--nodes", default="", help="nodes to list one by one, e.g. 0,5,20")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    trace, node_of, _ = record(args.scenario, args.out, args.window)
    report(trace, node_of, args.window, [int(n) for n in args.nodes.split(",") if n])


def report(trace: Trace, node_of: dict[int, int], window: float, listed: list[int]) -> None:
    taken: dict[int, Counter[str]] = defaultdict(Counter)
    for _, prev, state, nxt, next_comm in trace.switches:
        pid = trace.process.get(prev)
        if pid in node_of and state.startswith("R") and prev not in trace.sysmon:
            taken[pid][taker(trace, prev, nxt, next_comm)] += 1
    wait = waits(trace)
    total: Counter[str] = sum(taken.values(), Counter())
    print(f"sysmon threads found: {len(trace.sysmon)} of {len(node_of)} nodes")
    takers = " | ".join(TAKERS)
    print(f"| node | involuntary /s | {takers} | wait p50 / p90 / p99 / max (µs) |")
    print("|---|---:|" + "---:|" * len(TAKERS) + "---|")
    rows = [(n, pid) for pid, n in sorted(node_of.items(), key=lambda kv: kv[1]) if n in listed]
    for node, pid in rows:
        print(_row(str(node), taken[pid], wait.get(pid, []), window))
    everyone = [w for pid, ws in wait.items() if pid in node_of for w in ws]
    print(_row("all", total, everyone, window))


def _row(name: str, taken: Counter[str], wait: list[float], window: float) -> str:
    counts = " | ".join(f"{taken[k] / window:,.0f}" for k in TAKERS)
    if wait:
        q = np.percentile(wait, [50, 90, 99, 100])
        spread = " / ".join(f"{v:,.0f}" for v in q)
    else:
        spread = "none"
    return f"| {name} | {sum(taken.values()) / window:,.0f} | {counts} | {spread} |"


if __name__ == "__main__":
    main()
