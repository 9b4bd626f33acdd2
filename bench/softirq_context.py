"""Where the kernel's softirq work runs on the nodes' CPU, from `perf record -g` profiles.

A node's packets cost softirq work (the TCP stack, the emulated network's forwarding to
the delay stage). It runs in the syscall that raised it (a write, or the ACKs a read
sends), or at the exit of the next interrupt, whoever is running then. Which one
decides who pays for it on a shared CPU. For every sample of the nodes
(`--comm gossiplab-node`) whose stack holds `handle_softirqs`, this sorts it by the
frames outside the softirq: a write syscall (`ksys_write`), a read syscall
(`ksys_read`), else a timer interrupt (`sysvec_apic_timer_interrupt`: at the exit of an
interrupt taken anywhere else), else other. Of the timer-interrupt ones it also counts
those that are TCP's pacing timer sending (`tcp_pace_kick`, with BBR and no `fq` qdisc
TCP paces with an hrtimer) and those that carry packets on (`net_rx_action`: through
the core namespace to the delay stage's queue). Profiles are made while a run goes on:

    taskset -c 0 perf record -C 1 -F 499 -g -o P.data -- sleep 30 &
    gossiplab run scenarios/crosscheck/cliff-past.toml -o out/p
    .venv/bin/python bench/softirq_context.py P.data...

(docs/network-calibration.md, "The kernel's network work").
"""

from __future__ import annotations

import argparse
import subprocess
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

NODE_COMM = "gossiplab-node"
CONTEXTS = ("write", "read", "timer interrupt", "other")
# What a timer interrupt's softirq ran, by a frame inside it.
TIMER_WORK = {"pacing timer": "tcp_pace_kick", "packet forwarding": "net_rx_action"}


@dataclass
class Contexts:
    """Softirq samples by where they ran, out of all the nodes' samples."""

    samples: int = 0
    by_context: Counter[str] = field(default_factory=Counter)
    timer_work: Counter[str] = field(default_factory=Counter)

    @property
    def softirq(self) -> int:
        return sum(self.by_context.values())


def _frames(block: str) -> tuple[str, list[str]]:
    """A sample's command and its stack's symbols, innermost first."""
    lines = block.strip().splitlines()
    comm = lines[0].split()[0] if lines else ""
    symbols = []
    for line in lines[1:]:
        parts = line.split()
        if len(parts) >= 2:
            symbols.append(parts[1].split("+", 1)[0])
    return comm, symbols


def context_of(symbols: list[str]) -> str | None:
    """Where a sample's softirq ran, or None if it is not in a softirq."""
    inner = [i for i, s in enumerate(symbols) if s == "handle_softirqs"]
    if not inner:
        return None
    outside = symbols[max(inner) :]
    if "ksys_write" in outside:
        return "write"
    if "ksys_read" in outside:
        return "read"
    if any(s.endswith("sysvec_apic_timer_interrupt") for s in outside):
        return "timer interrupt"
    return "other"


def classify(text: str) -> Contexts:
    """The nodes' samples of one `perf script` output (blank lines between samples)."""
    out = Contexts()
    for block in text.split("\n\n"):
        comm, symbols = _frames(block)
        if comm != NODE_COMM:
            continue
        out.samples += 1
        where = context_of(symbols)
        if where is None:
            continue
        out.by_context[where] += 1
        if where == "timer interrupt":
            softirq = symbols[: symbols.index("handle_softirqs")]
            for name, frame in TIMER_WORK.items():
                if frame in softirq:
                    out.timer_work[name] += 1
    return out


def perf_script(data: Path) -> str:
    result = subprocess.run(
        ["perf", "script", "-i", str(data), "--comm", NODE_COMM],
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout


def report(name: str, c: Contexts) -> Iterable[str]:
    share = {k: 100 * c.by_context[k] / max(c.softirq, 1) for k in CONTEXTS}
    cells = ", ".join(f"{k} {c.by_context[k]:,} ({share[k]:.0f} %)" for k in CONTEXTS)
    yield f"{name}: {c.samples:,} node samples, {c.softirq:,} in softirq: {cells}"
    if c.by_context["timer interrupt"]:
        work = ", ".join(f"{k} {c.timer_work[k]:,}" for k in TIMER_WORK)
        yield f"  at timer interrupts: {work}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("profiles", type=Path, nargs="+", help="perf.data files")
    args = parser.parse_args(argv)
    for data in args.profiles:
        for line in report(str(data), classify(perf_script(data))):
            print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
