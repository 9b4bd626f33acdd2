"""Why a node's threads block, counted by the kernel's scheduler on testbed runs.

With one P (nodes confined to one CPU, `[testbed] node_cpus`), a node that has nothing
to run blocks its only running thread in the netpoller (`runtime/proc.go:findRunnable`
ends in the blocking `netpoll(delay)`, `epoll_pwait`): one node wake-up, in the model's
terms, per such block. The node's other threads block too, and each block is a voluntary
context switch that the CPU calibration charges (docs/network-calibration.md, "On one
P"): go's `sysmon` thread polls while any P runs, sleeping 20 µs at a time for 50
rounds, then twice as long each round up to 10 ms (`runtime/proc.go:sysmon`, `usleep`),
and goes into a deep sleep once every P is idle (`notetsleep(&sched.sysmonnote)`), from
which the node's next syscall wakes it; an M with nothing to run parks (`stopm`,
`notesleep`).

For each scenario this runs `gossiplab run`, waits for its nodes and the end of the
warm-up, records every context switch on the nodes' CPU for a few seconds of
publishing (`perf record -e sched:sched_switch -g`), and classifies each switch away
from a node's thread by the go function its thread blocked in. It prints, per second
over the window, the node wake-ups (netpoll blocks), sysmon's sleeps, the other
voluntary switches and the involuntary ones (preemptions), and the voluntary switches
per node wake-up: times the cost per voluntary switch fitted by
bench/cpu_calibration.py, that is what a node's wake-up costs (`[cpu] per_node_wakeup`).

    sudo .venv/bin/python bench/wakeup_switches.py bench/scenarios/cpu/calib-1p-signed.toml \\
        bench/scenarios/cpu/calib-1p-signed-50.toml ... -o out/switches

Run it on an idle host, one run at a time (under the testbed lock, like every testbed
run). Needs `perf` with tracepoints.
"""

from __future__ import annotations

import argparse
import re
import tomllib
from collections import Counter
from pathlib import Path

from testbed_perf import NODE_COMM, perf_script, record_publishing

SWITCH = re.compile(r"prev_comm=(\S+) prev_pid=\d+ .*prev_state=(\S+)")
KINDS = (
    "node wake-ups (netpoll)",
    "sysmon usleep",
    "sysmon deep sleep",
    "M parked (stopm)",
    "other voluntary",
    "involuntary",
)


def classify(state: str, frames: list[str]) -> str:
    """The kind of one switch away from a node's thread, from its state and stack."""
    if not state.startswith("S") and not state.startswith("D"):
        return "involuntary"
    text = " ".join(frames)
    if "runtime.sysmon" in text:
        return "sysmon usleep" if "runtime.usleep" in text else "sysmon deep sleep"
    if "runtime.netpoll" in text:
        return "node wake-ups (netpoll)"
    if "runtime.stopm" in text or "runtime.mPark" in text:
        return "M parked (stopm)"
    return "other voluntary"


def count_switches(script: str) -> Counter[str]:
    """Counts of each kind in `perf script` output of sched_switch events with stacks."""
    counts: Counter[str] = Counter()
    current: tuple[str, list[str]] | None = None
    for line in script.splitlines():
        if "sched:sched_switch" in line and not line.startswith(("\t", " ")):
            if current is not None:
                counts[classify(*current)] += 1
            match = SWITCH.search(line)
            current = (match.group(2), []) if match and match.group(1) == NODE_COMM else None
        elif current is not None and line.strip():
            current[1].append(line.strip())
    if current is not None:
        counts[classify(*current)] += 1
    return counts


def record(scenario: Path, out: Path, window: float) -> tuple[Counter[str], dict]:
    """Run one scenario on the testbed and count the switches during its publishing."""
    cpus = tomllib.loads(scenario.read_text()).get("testbed", {}).get("node_cpus") or []
    options = ["-e", "sched:sched_switch", "-g", "-C", ",".join(str(c) for c in cpus)]
    spec, data = record_publishing(scenario, out / scenario.stem, window, options)
    script = perf_script(data, "comm,tid,time,event,trace,ip,sym")
    return count_switches(script), spec


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("scenarios", nargs="+", type=Path)
    parser.add_argument("-o", "--out", type=Path, required=True)
    parser.add_argument("--window", type=float, default=3.0, help="seconds recorded")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    print(
        "| run | msg/s | "
        + " | ".join(f"{k} /s" for k in KINDS)
        + " | voluntary switches per node wake-up |"
    )
    print("|---|---:|" + "---:|" * (len(KINDS) + 1))
    totals: Counter[str] = Counter()
    for scenario in args.scenarios:
        counts, spec = record(scenario, args.out, args.window)
        totals += counts
        rate = spec.get("workload", {}).get("rate", "?")
        per_s = " | ".join(f"{counts[k] / args.window:,.0f}" for k in KINDS)
        print(f"| {scenario.stem} | {rate} | {per_s} | {per_wakeup(counts):.2f} |", flush=True)
    print(f"\nAll runs: {per_wakeup(totals):.2f} voluntary switches per node wake-up")


def per_wakeup(counts: Counter[str]) -> float:
    voluntary = sum(v for k, v in counts.items() if k != "involuntary")
    return voluntary / max(counts["node wake-ups (netpoll)"], 1)


if __name__ == "__main__":
    main()
