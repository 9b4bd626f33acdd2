"""Soak: a million messages through 100 nodes in aggregate mode, memory sampled as it runs.

`make soak` runs bench/scenarios/soak-1m.toml (random-regular degree 8, 1000-byte messages
at 1000/s for 1000 s, `[output] mode = "aggregate"`) with `gossiplab run` in a child
process and reads the child's resident memory (VmRSS in /proc/<pid>/status) every few
seconds, alongside how far the simulation has got (the run's progress callback, printed
by the child). Memory must stay flat once the run is warmed up: the seen caches fill for
seen_ttl plus one sweep interval (120 s + 60 s of simulated time), then every expired
entry is freed as fast as new ones come. The soak fails when resident memory after the
warm-up (the first quarter of simulated time) grows more than 20 % over its value at the
end of the warm-up. Start (end of warm-up), middle and end of the simulation and the peak
of the whole command (analysis and report included) are appended to bench/RESULTS.md.

`bench/soak.py --compare SCENARIO` instead runs a scenario in full and in aggregate mode,
each in its own process, and records wall time and peak memory of both.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import threading
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import tomli_w

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import RESULTS, ROOT, commit, machine  # bench/run.py

OUT = ROOT / "bench" / "out"
SOAK = ROOT / "bench" / "scenarios" / "soak-1m.toml"
WARMUP_SHARE = 0.25
"""Share of the simulated time after which memory must stay flat."""
MAX_GROWTH = 0.20
SAMPLE_S = 2.0


@dataclass
class Sample:
    wall_s: float
    sim_ns: int
    rss: int


@dataclass
class Soak:
    scenario: Path
    samples: list[Sample] = field(default_factory=list)
    end_ns: int = 0
    wall_s: float = 0.0
    peak_rss: int = 0
    summary: dict = field(default_factory=dict)
    error: str = ""


def rss_of(pid: int) -> int | None:
    """Resident memory of process ``pid`` in bytes, None once it is gone."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def child(scenario: Path, out: Path) -> None:
    """In the child: run the scenario, printing simulated progress for the parent."""
    from gossiplab.runner import run

    def progress(done_ns: int, total_ns: int, events: int) -> None:
        print(f"progress {done_ns} {total_ns} {events}", flush=True)

    run(scenario, out, force=True, progress=progress)
    print("done", flush=True)


def soak(scenario: Path, interval: float) -> Soak:
    out = OUT / scenario.stem
    OUT.mkdir(parents=True, exist_ok=True)
    errors = OUT / f"{scenario.stem}.stderr"
    command = [sys.executable, str(Path(__file__).resolve()), "--child", str(scenario), str(out)]
    result = Soak(scenario)
    progress = {"sim_ns": 0}
    started = time.perf_counter()
    with errors.open("w", encoding="utf-8") as stderr:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=stderr, text=True)

    def follow() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            parts = line.split()
            if parts and parts[0] == "progress":
                progress["sim_ns"] = int(parts[1])
                result.end_ns = int(parts[2])

    reader = threading.Thread(target=follow, daemon=True)
    reader.start()
    while True:
        # Reaped here rather than by Popen, to get the child's own peak memory (rusage).
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            break
        rss = rss_of(process.pid)
        if rss is not None:
            result.samples.append(Sample(time.perf_counter() - started, progress["sim_ns"], rss))
        time.sleep(interval)
    process.returncode = os.waitstatus_to_exitcode(status)
    result.wall_s = time.perf_counter() - started
    reader.join(timeout=5)
    if process.returncode != 0:
        lines = errors.read_text(encoding="utf-8").strip().splitlines()
        result.error = lines[-1] if lines else f"exit code {process.returncode}"
        return result
    result.peak_rss = usage.ru_maxrss * 1024  # KiB on Linux
    result.summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    return result


@dataclass(frozen=True)
class Verdict:
    start: Sample
    middle: Sample
    end: Sample
    highest: Sample
    growth: float
    ok: bool


def judge(result: Soak) -> Verdict | None:
    """Memory after the warm-up against its value at the end of the warm-up."""
    end_ns = result.end_ns
    simulating = [s for s in result.samples if 0 < s.sim_ns < end_ns]
    after = [s for s in simulating if s.sim_ns >= WARMUP_SHARE * end_ns]
    if len(after) < 3:
        return None
    start, end = after[0], after[-1]
    middle = min(after, key=lambda s: abs(s.sim_ns - (start.sim_ns + end.sim_ns) / 2))
    highest = max(after, key=lambda s: s.rss)
    growth = highest.rss / start.rss - 1
    return Verdict(start, middle, end, highest, growth, growth <= MAX_GROWTH)


def mib(n: int) -> str:
    return f"{n / 2**20:,.0f}"


def soak_table(result: Soak, verdict: Verdict | None) -> str:
    summary = result.summary
    run = summary.get("run", {})
    lines = [
        "| scenario | nodes | messages | events | engine s | total s | RSS after warm-up MiB "
        "| middle MiB | end MiB | highest MiB | growth | peak RSS MiB (incl. analysis) | verdict |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    if verdict is None:
        lines.append(
            f"| {result.scenario.stem} | - | - | - | - | {result.wall_s:.0f} | - | - | - "
            f"| - | - | - | failed: {result.error or 'too few samples'} |"
        )
        return "\n".join(lines)

    def at(sample: Sample) -> str:
        return f"{mib(sample.rss)} (t = {sample.sim_ns / 1e9:,.0f} s)"

    lines.append(
        f"| {result.scenario.stem} | {run.get('nodes', 0):,} | "
        f"{summary['messages']['published']:,} | {run.get('events', 0):,} | "
        f"{run.get('wall_time_s', 0):.0f} | {result.wall_s:.0f} | {at(verdict.start)} | "
        f"{at(verdict.middle)} | {at(verdict.end)} | {mib(verdict.highest.rss)} | "
        f"{verdict.growth:+.1%} | {mib(result.peak_rss)} | "
        f"{'flat' if verdict.ok else f'GREW more than {MAX_GROWTH:.0%}'} |"
    )
    return "\n".join(lines)


def record(heading: str, body: str) -> None:
    when = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    header = f"\n## {when}, commit {commit()}, {heading}\n\nMachine: {machine()}\n\n"
    with RESULTS.open("a", encoding="utf-8") as results:
        results.write(header + body + "\n")


@dataclass(frozen=True)
class ModeRun:
    mode: str
    engine_s: float
    total_s: float
    peak_rss: int
    deliveries_file: int
    ok: bool
    note: str


def run_mode(scenario: Path, mode: str) -> ModeRun:
    """`gossiplab run` of ``scenario`` with output.mode forced to ``mode``."""
    data = tomllib.loads(scenario.read_text(encoding="utf-8"))
    data.setdefault("output", {})["mode"] = mode
    out = OUT / f"{scenario.stem}-{mode}"
    variant = OUT / f"{scenario.stem}-{mode}.toml"
    variant.parent.mkdir(parents=True, exist_ok=True)
    variant.write_text(tomli_w.dumps(data), encoding="utf-8")
    command = [sys.executable, "-m", "gossiplab", "run", str(variant), "-o", str(out)]
    started = time.perf_counter()
    process = subprocess.Popen(
        [*command, "--force", "--quiet"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _, status, usage = os.wait4(process.pid, 0)
    total = time.perf_counter() - started
    peak = usage.ru_maxrss * 1024
    if os.waitstatus_to_exitcode(status) != 0:
        stderr = process.stderr.read().decode() if process.stderr else ""
        note = stderr.strip().splitlines()[-1] if stderr.strip() else "failed"
        return ModeRun(mode, 0.0, total, peak, 0, False, note)
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    size = sum(f.stat().st_size for f in out.glob("*.parquet"))
    latency = summary["receipt_latency_ms"]
    note = f"latency p50/p99 {latency['p50']:.3f}/{latency['p99']:.3f} ms"
    return ModeRun(mode, summary["run"]["wall_time_s"], total, peak, size, True, note)


def compare_table(scenario: Path, runs: list[ModeRun]) -> str:
    lines = [
        f"Scenario `{scenario.relative_to(ROOT)}` in both output modes.\n",
        "| mode | engine s | total s | peak RSS MiB | Parquet files MiB | note |",
        "|---|---|---|---|---|---|",
    ]
    for r in runs:
        lines.append(
            f"| {r.mode} | {r.engine_s:.1f} | {r.total_s:.1f} | {mib(r.peak_rss)} | "
            f"{r.deliveries_file / 2**20:,.1f} | {r.note if r.ok else 'failed: ' + r.note} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--child", nargs=2, metavar=("SCENARIO", "OUT"), help=argparse.SUPPRESS)
    parser.add_argument("--scenario", type=Path, default=SOAK, help="default: %(default)s")
    parser.add_argument("--interval", type=float, default=SAMPLE_S, help="seconds between samples")
    parser.add_argument("--compare", type=Path, metavar="SCENARIO", help="full vs aggregate")
    parser.add_argument("--no-record", action="store_true", help="do not append to RESULTS.md")
    args = parser.parse_args()
    if args.child:
        child(Path(args.child[0]), Path(args.child[1]))
        return
    if args.compare:
        scenario = args.compare.resolve()
        runs = []
        for mode in ("full", "aggregate"):
            print(f"running {scenario.name} in {mode} mode ...", flush=True)
            runs.append(run_mode(scenario, mode))
        report = compare_table(scenario, runs)
        print(report)
        if not args.no_record:
            record("`bench/soak.py --compare`: full vs aggregate output mode", report)
        sys.exit(0 if all(r.ok for r in runs) else 1)

    scenario = args.scenario.resolve()
    print(f"soak: {scenario.name}, RSS every {args.interval:g} s ...", flush=True)
    result = soak(scenario, args.interval)
    verdict = judge(result)
    report = soak_table(result, verdict)
    print(report)
    if verdict is not None:
        for name in ("start", "middle", "end", "highest"):
            sample: Sample = getattr(verdict, name)
            print(f"  {name:8} sim {sample.sim_ns / 1e9:8.1f} s  RSS {mib(sample.rss)} MiB")
    if not args.no_record:
        record("`make soak`", report)
    sys.exit(0 if verdict is not None and verdict.ok else 1)


if __name__ == "__main__":
    main()
