"""How fast this machine is, moment by moment, and what that does to testbed runs.

The speed gauge (`gossiplab-node speed`, testbed/speedgauge.go) prints once a second,
on the CPU it is pinned to, the ns per dependent load over 64 MiB (the memory system:
caches and DRAM, shared with whatever else runs on the host) and the µs per ed25519
verification (the core's arithmetic), both in the gauge thread's own CPU time, so a busy
CPU does not change the reading; it uses about 3 % of a CPU. Every testbed run keeps its
readings over the measured interval (summary.json's `run.testbed.machine_speed`).

- `watch`: the gauge on each of `--cpus` for `--seconds`; per CPU the readings' p10 /
  p50 / p90, and how closely two CPUs' load times go together (correlation of the
  per-second readings).
- `runs`: a scenario run `--runs` times with `gossiplab run` (under the testbed lock);
  per run the gauge's p50s, the nodes' CPU while publishing, per-receipt p50 / p99 and
  copies dropped, then the correlation of the load time with each.

    .venv/bin/python bench/machine_speed.py watch --cpus 0 1 --seconds 90
    sudo .venv/bin/python bench/machine_speed.py runs scenarios/crosscheck/cliff-at.toml \\
      --runs 8 -o out/speed-at
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import polars as pl

from gossiplab.backends.testbed.binary import ensure_binary
from gossiplab.backends.testbed.speed import percentiles, read_readings, start_gauge, stop_gauge

GOSSIPLAB = Path(sys.executable).parent / "gossiplab"
TESTBED_LOCK = "/tmp/testbed.lock"


def spread(values: list[float]) -> str:
    """p10 / p50 / p90."""
    return " / ".join(f"{v:.1f}" for v in percentiles(values).values())


def correlation(xs: list[float], ys: list[float]) -> float:
    if len(xs) < 3 or statistics.pstdev(xs) == 0 or statistics.pstdev(ys) == 0:
        return float("nan")
    return statistics.correlation(xs, ys)


def watch(cpus: list[int], seconds: int, out_dir: Path) -> None:
    binary = ensure_binary()
    files = {cpu: out_dir / f"cpu{cpu}.gauge" for cpu in cpus}
    gauges = [start_gauge(binary, cpu, files[cpu]) for cpu in cpus]
    try:
        time.sleep(seconds)
    finally:
        for gauge in gauges:
            stop_gauge(gauge)
    by_cpu = {cpu: read_readings(path) for cpu, path in files.items()}
    print("| CPU | ns per load, p10 / p50 / p90 | µs per verification, p10 / p50 / p90 |")
    print("|---|---|---|")
    for cpu, rows in by_cpu.items():
        loads, verifies = [r.load_ns for r in rows], [r.verify_us for r in rows]
        print(f"| {cpu} | {spread(loads)} | {spread(verifies)} |")
    if len(cpus) >= 2:
        first, second = (by_cpu[c] for c in cpus[:2])
        n = min(len(first), len(second))
        r = correlation([x.load_ns for x in first[:n]], [x.load_ns for x in second[:n]])
        print(f"\nload time, CPU {cpus[0]} against CPU {cpus[1]}, second by second: r = {r:.2f}")


def run_row(folder: Path) -> dict[str, float]:
    summary = json.loads((folder / "summary.json").read_text())
    speed = summary["run"]["testbed"]["machine_speed"]
    latency = summary["receipt_latency_ms"]
    return {
        "load_ns": speed["load_ns"]["p50"],
        "verify_us": speed["verify_us"]["p50"],
        "node_cores": summary["cpu"]["cores_all_nodes"],
        "p50_ms": latency["p50"],
        "p99_ms": latency["p99"],
        "drops": float(pl.read_parquet(folder / "drops.parquet")["count"].sum()),
    }


def runs(scenario: Path, count: int, out_dir: Path) -> None:
    table = []
    for i in range(1, count + 1):
        folder = out_dir / f"run-{i}"
        command = ["flock", TESTBED_LOCK, str(GOSSIPLAB), "run", str(scenario)]
        subprocess.run([*command, "-o", str(folder), "--force", "-q"], check=True)
        table.append(run_row(folder))
        print(f"run {i}: " + ", ".join(f"{k} {v:,.4g}" for k, v in table[-1].items()))
    loads = [row["load_ns"] for row in table]
    for column in ("verify_us", "node_cores", "p50_ms", "p99_ms", "drops"):
        r = correlation(loads, [row[column] for row in table])
        print(f"load time against {column}: r = {r:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    w = commands.add_parser("watch", help="the gauge on some CPUs for a while")
    w.add_argument("--cpus", type=int, nargs="+", default=[0, 1])
    w.add_argument("--seconds", type=int, default=120)
    w.add_argument("-o", "--out", type=Path, default=Path("bench/out/speed"))
    r = commands.add_parser("runs", help="a scenario run several times, with its speed")
    r.add_argument("scenario", type=Path)
    r.add_argument("--runs", type=int, default=8)
    r.add_argument("-o", "--out", type=Path, default=Path("bench/out/speed-runs"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.command == "watch":
        watch(args.cpus, args.seconds, args.out)
    else:
        runs(args.scenario, args.runs, args.out)


if __name__ == "__main__":
    main()
