"""How long the kernel keeps a node's working threads off the CPU, and what it runs
meanwhile, in a recording of bench/kernel_eevdf.py.

A working thread (any thread of the node's group but its `sysmon`) waits from the moment
it could run, woken (the probe's wake-up row) or switched out still runnable (a switch
whose `prev_state` is 0, TASK_RUNNING: preempted), to the switch that runs it again.
Per node: how many such waits, and p50 / p90 / p99 / longest in ms. For each node's
longest waits, what the CPU did inside them: how many switches ran the node's own group
(and how many of those its `sysmon`), how many ran other groups and how many distinct
groups, and the node's margin (`avg_vruntime - vruntime`, µs; >= 0: eligible) when its
group last came onto the CPU in the wait or to end it. A hub kept off the CPU while it
was eligible lost EEVDF's earliest-deadline pick to the groups that ran meanwhile.

    .venv/bin/python bench/kernel_long_waits.py bench/out/eevdf/cliff-at [--hubs 10]
        [--longest 2] [--all]
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from kernel_eevdf import SWITCH, SWITCH_IN, WAKE, Recording, load, margin_us

RUNNING = 0  # a switch's prev_state when the thread left the CPU runnable
# The probe's row of a group's state at a visit follows the switch's row by well under
# this (tens to hundreds of ns in the recordings).
STATE_AFTER_SWITCH_NS = 10_000


@dataclass(frozen=True)
class Wait:
    """One wait of a node's working thread for the CPU, and the CPU's switches inside it."""

    node: int
    start: int
    end: int
    own_switches: int
    own_sysmon: int
    other_switches: int
    other_groups: int
    margin_us: float | None

    @property
    def ms(self) -> float:
        return (self.end - self.start) / 1e6


def working_waits(rec: Recording, node: int) -> list[Wait]:
    """Every wait of `node`'s working threads in the recording, in the order they end."""
    pid = next(p for p, n in rec.node_of.items() if n == node)
    ready: dict[int, int] = {}  # working thread -> runnable since
    waits = []
    for row in rec.events:
        kind, tgid, tid = int(row[1]), int(row[2]), int(row[3])
        if kind == WAKE and tgid == pid and tid not in rec.sysmon:
            ready.setdefault(tid, int(row[0]))
        elif kind == SWITCH:
            if tgid == pid and tid not in rec.sysmon and int(row[5]) == RUNNING:
                ready[tid] = int(row[0])
            if int(row[6]) == pid and int(row[9]) in ready:
                start = ready.pop(int(row[9]))
                waits.append(_inside(rec, node, pid, start, int(row[0])))
    return waits


def _inside(rec: Recording, node: int, pid: int, start: int, end: int) -> Wait:
    """The switches strictly inside (start, end), and the node's margin when its group
    last came onto the CPU in the wait (its `sysmon` first, often) or to end it."""
    t = rec.events[:, 0]
    inside = rec.events[(t > start) & (t < end)]
    switches = inside[inside[:, 1] == SWITCH]
    own = switches[switches[:, 6] == pid]
    others = switches[switches[:, 6] != pid]
    # The probe writes the group's state just after the switch that brings it on.
    span = rec.events[(t > start) & (t <= end + STATE_AFTER_SWITCH_NS)]
    visits = span[(span[:, 1] == SWITCH_IN) & (span[:, 2] == pid) & (span[:, 7] > 0)]
    return Wait(
        node=node,
        start=start,
        end=end,
        own_switches=len(own),
        own_sysmon=int(np.isin(own[:, 9], list(rec.sysmon)).sum()),
        other_switches=len(others),
        other_groups=len(set(others[:, 6].tolist())),
        margin_us=margin_us(visits[-1]) if len(visits) else None,
    )


def report(rec: Recording, nodes: list[int], longest: int) -> None:
    print("| node | waits | p50 / p90 / p99 / longest (ms) |")
    print("|---|---:|---|")
    worst: list[Wait] = []
    for node in nodes:
        waits = working_waits(rec, node)
        if not waits:
            continue
        ms = np.array([w.ms for w in waits])
        spread = " / ".join(f"{x:,.1f}" for x in np.percentile(ms, [50, 90, 99]))
        print(f"| {node} | {len(waits):,} | {spread} / {ms.max():,.1f} |")
        worst += sorted(waits, key=lambda w: w.ms, reverse=True)[:longest]
    print(
        "\n| node | wait (ms) | its group ran (its sysmon) | other groups ran: switches "
        "(groups) | its margin, last visit (µs) |"
    )
    print("|---|---:|---|---|---:|")
    for w in worst:
        margin = "" if w.margin_us is None else f"{w.margin_us:,.0f}"
        print(
            f"| {w.node} | {w.ms:,.1f} | {w.own_switches} ({w.own_sysmon}) | "
            f"{w.other_switches:,} ({w.other_groups}) | {margin} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("recording", type=Path, help="bench/kernel_eevdf.py's OUT/<stem>")
    parser.add_argument("--hubs", type=int, default=10, help="nodes counted as hubs")
    parser.add_argument("--longest", type=int, default=1, help="longest waits per node")
    parser.add_argument("--all", action="store_true", help="every node, not the hubs only")
    args = parser.parse_args()
    rec = load(args.recording, args.hubs)
    nodes = sorted(n for n, c in rec.classes.items() if args.all or c == "hubs")
    sysmon = f"sysmon told apart for {len(rec.sysmon)} of {len(rec.node_of)} nodes"
    print(f"{args.recording}: {rec.seconds:.2f} s recorded; {sysmon}")
    report(rec, nodes, args.longest)


if __name__ == "__main__":
    main()
