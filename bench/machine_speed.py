"""How fast this machine is, moment by moment, and what that does to testbed runs.

`bench/speed_gauge` (Go) prints once a second, per CPU it is pinned to, the ns per
dependent load over 64 MiB (the memory system: caches and DRAM, shared with whatever
else runs on the host) and the µs per ed25519 verification (the core's arithmetic),
both in the gauge thread's own CPU time, so a busy CPU does not change the reading; it
uses about 3 % of a CPU.

- `watch`: the gauge on each of `--cpus` for `--seconds`; per CPU the readings' p10 /
  p50 / p90, and how closely two CPUs' load times go together (correlation of the
  per-second readings).
- `runs`: a scenario run `--runs` times with `gossiplab run` (under the testbed lock),
  the gauge on `--cpu` (a CPU the nodes are not confined to) during each; per run the
  gauge's medians over the run, the nodes' CPU while publishing, per-receipt p50 / p99
  and copies dropped, then the correlation of the load time with each.

    .venv/bin/python bench/machine_speed.py watch --cpus 0 1 --seconds 120
    sudo .venv/bin/python bench/machine_speed.py runs scenarios/crosscheck/cliff-at.toml \\
      --runs 8 --cpu 0 -o out/speed-at
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import polars as pl

HERE = Path(__file__).parent
GAUGE_SOURCE = HERE / "speed_gauge"
GOSSIPLAB = Path(sys.executable).parent / "gossiplab"
TESTBED_LOCK = "/tmp/testbed.lock"


@dataclass(frozen=True)
class Reading:
    unix_ms: int
    load_ns: float
    verify_us: float


def build_gauge(out_dir: Path) -> Path:
    """The gauge's binary, built with the machine's go into `out_dir`."""
    binary = out_dir / "speed_gauge"
    subprocess.run(["go", "build", "-o", str(binary), "."], cwd=GAUGE_SOURCE, check=True)
    return binary


def start_gauge(binary: Path, cpu: int, seconds: int, out: Path) -> subprocess.Popen[bytes]:
    """The gauge pinned to `cpu`, writing its readings to `out`."""
    with out.open("wb") as sink:
        return subprocess.Popen(
            ["taskset", "-c", str(cpu), str(binary), "-seconds", str(seconds)], stdout=sink
        )


def readings(path: Path) -> list[Reading]:
    rows = (line.split() for line in path.read_text().splitlines() if line.strip())
    return [Reading(int(t), float(load), float(verify)) for t, load, verify in rows]


def spread(values: list[float]) -> str:
    """p10 / p50 / p90."""
    ordered = sorted(values)

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    return f"{at(0.1):.1f} / {at(0.5):.1f} / {at(0.9):.1f}"


def correlation(xs: list[float], ys: list[float]) -> float:
    if len(xs) < 3 or statistics.pstdev(xs) == 0 or statistics.pstdev(ys) == 0:
        return float("nan")
    return statistics.correlation(xs, ys)


def watch(cpus: list[int], seconds: int, out_dir: Path) -> None:
    binary = build_gauge(out_dir)
    files = {cpu: out_dir / f"cpu{cpu}.gauge" for cpu in cpus}
    gauges = [start_gauge(binary, cpu, seconds, files[cpu]) for cpu in cpus]
    for gauge in gauges:
        gauge.wait()
    by_cpu = {cpu: readings(path) for cpu, path in files.items()}
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


def run_row(folder: Path, gauge_file: Path) -> dict[str, float]:
    summary = json.loads((folder / "summary.json").read_text())
    latency = summary["receipt_latency_ms"]
    drops = pl.read_parquet(folder / "drops.parquet")["count"].sum()
    rows = readings(gauge_file)
    return {
        "load_ns": statistics.median(r.load_ns for r in rows),
        "verify_us": statistics.median(r.verify_us for r in rows),
        "node_cores": summary["cpu"]["cores_all_nodes"],
        "p50_ms": latency["p50"],
        "p99_ms": latency["p99"],
        "drops": float(drops),
    }


def runs(scenario: Path, count: int, cpu: int, out_dir: Path) -> None:
    binary = build_gauge(out_dir)
    table = []
    for i in range(1, count + 1):
        folder, gauge_file = out_dir / f"run-{i}", out_dir / f"run-{i}.gauge"
        # The gauge stops with the run (killed), or after an hour at most.
        gauge = start_gauge(binary, cpu, 3600, gauge_file)
        command = ["flock", TESTBED_LOCK, str(GOSSIPLAB), "run", str(scenario)]
        subprocess.run([*command, "-o", str(folder), "--force", "-q"], check=True)
        gauge.terminate()
        gauge.wait()
        table.append(run_row(folder, gauge_file))
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
    w.add_argument("-o", "--out", type=Path, default=HERE / "out" / "speed")
    r = commands.add_parser("runs", help="a scenario run several times beside the gauge")
    r.add_argument("scenario", type=Path)
    r.add_argument("--runs", type=int, default=8)
    r.add_argument("--cpu", type=int, default=0, help="a CPU the nodes are not confined to")
    r.add_argument("-o", "--out", type=Path, default=HERE / "out" / "speed-runs")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.command == "watch":
        watch(args.cpus, args.seconds, args.out)
    else:
        runs(args.scenario, args.runs, args.cpu, args.out)


if __name__ == "__main__":
    main()
