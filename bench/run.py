"""Benchmarks: run scenarios end to end, measure time and memory, append to RESULTS.md.

`make bench` runs the quick set (a few minutes), `make bench-full` everything, including
the 10,000- and 100,000-node targets of the performance issue. Each scenario runs in its
own process (`gossiplab run`), so its peak memory (max RSS, from wait4) is its own. The
engine's own wall time and event count come from the run's summary.json; "total" is the
whole command: topology, schedule, engine, tables, metrics, plots and report.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "out"
RESULTS = ROOT / "bench" / "RESULTS.md"


@dataclass(frozen=True)
class Bench:
    name: str
    scenario: Path
    target: str


QUICK = [
    Bench(
        "whiteblock-phase2-series1b",
        ROOT / "scenarios/whiteblock/phase2-series1b.toml",
        "<= 5 s total",
    ),
    Bench("eth-1000 (64 x 128 KiB)", ROOT / "bench/scenarios/eth-1000.toml", "<= 30 s, <= 2 GiB"),
]
FULL = [
    *QUICK,
    Bench("eth-10000 (16 x 128 KiB)", ROOT / "bench/scenarios/eth-10000.toml", "<= 2 min"),
    Bench(
        "eth-100000 (4 x 128 KiB)",
        ROOT / "bench/scenarios/eth-100000.toml",
        "<= 15 min, <= 20 GiB",
    ),
]


@dataclass(frozen=True)
class Measurement:
    bench: Bench
    nodes: int
    messages: int
    events: int
    engine_s: float
    total_s: float
    peak_rss_mib: float
    ok: bool
    note: str = ""


def run_one(bench: Bench) -> Measurement:
    out = OUT / bench.scenario.stem
    command = [sys.executable, "-m", "gossiplab", "run", str(bench.scenario), "-o", str(out)]
    command += ["--force", "--quiet"]
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    total = time.perf_counter() - started
    stderr = process.stderr.read().decode() if process.stderr else ""
    peak = usage.ru_maxrss / 1024  # KiB on Linux
    if os.waitstatus_to_exitcode(status) != 0:
        note = stderr.strip().splitlines()[-1] if stderr.strip() else "failed"
        return Measurement(bench, 0, 0, 0, 0.0, total, peak, False, note)
    summary = json.loads((out / "summary.json").read_text())
    run = summary["run"]
    return Measurement(
        bench,
        run["nodes"],
        summary["messages"]["published"],
        run["events"],
        run["wall_time_s"],
        total,
        peak,
        True,
        f"delivery ratio {summary['delivery']['ratio']}",
    )


def table(rows: list[Measurement]) -> str:
    lines = [
        "| scenario | target | nodes | messages | events | engine s | events/s | total s "
        "| peak RSS MiB | note |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for m in rows:
        rate = f"{m.events / m.engine_s / 1e6:.2f} M" if m.engine_s else "-"
        lines.append(
            f"| {m.bench.name} | {m.bench.target} | {m.nodes:,} | {m.messages:,} | "
            f"{m.events:,} | {m.engine_s:.2f} | {rate} | {m.total_s:.2f} | "
            f"{m.peak_rss_mib:,.0f} | {m.note} |"
        )
    return "\n".join(lines)


def machine() -> str:
    cpu = "unknown cpu"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{os.cpu_count()} cores ({cpu}), {memory:.0f} GiB, {platform.platform()}"


def commit() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT
        ).stdout.strip()
    except OSError:
        return "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--full", action="store_true", help="also the 10k and 100k targets")
    parser.add_argument("--no-record", action="store_true", help="do not append to RESULTS.md")
    args = parser.parse_args()
    benches = FULL if args.full else QUICK
    rows = []
    for bench in benches:
        print(f"running {bench.name} ...", flush=True)
        rows.append(run_one(bench))
        print(table(rows[-1:]).splitlines()[-1], flush=True)
    report = table(rows)
    print(report)
    if not args.no_record:
        when = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
        kind = "bench-full" if args.full else "bench"
        header = f"\n## {when}, commit {commit()}, `make {kind}`\n\nMachine: {machine()}\n\n"
        with RESULTS.open("a", encoding="utf-8") as results:
            results.write(header + report + "\n")


if __name__ == "__main__":
    main()
