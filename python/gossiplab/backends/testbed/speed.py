"""How fast the machine was during a testbed run (`gossiplab-node speed`, speedgauge.go).

The same work costs the nodes more CPU in some minutes than in others: this machine's
caches and DRAM are shared with other tenants, and it passes through slower and faster
stretches of tens of seconds on all its CPUs at once (docs/crosscheck.md, "The machine's
speed during a run"). The gauge reads that speed once a second in its own thread's CPU
time, on a CPU the nodes are not confined to when there is one, and the run's summary
keeps its readings over the measured interval, so two runs can be told apart by the
machine as well as by the protocol.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from gossiplab.analysis.ranks import nearest_rank
from gossiplab.backends.testbed.cpus import affinity_prefix, online_cpus

NS_PER_MS = 1_000_000


@dataclass(frozen=True)
class Reading:
    unix_ms: int
    load_ns: float  # per dependent load over 64 MiB: the memory system
    verify_us: float  # per ed25519 verification: the core's arithmetic


def gauge_cpu(node_cpus: list[int] | None, online: list[int]) -> int:
    """The CPU to read: the first one the nodes are not confined to, else the last one
    (the gauge then takes about 3 % of it from the nodes)."""
    free = [c for c in online if node_cpus is None or c not in node_cpus]
    if node_cpus is not None and free:
        return free[0]
    return online[-1]


def start_gauge(binary: Path, cpu: int, out: Path) -> subprocess.Popen[bytes]:
    """The gauge on `cpu` until stopped, its readings into `out`."""
    with out.open("wb") as sink:
        return subprocess.Popen(
            [*affinity_prefix([cpu]), str(binary), "speed", "0"],
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.DEVNULL,
        )


def stop_gauge(gauge: subprocess.Popen[bytes]) -> None:
    gauge.terminate()
    gauge.wait()


def read_readings(path: Path) -> list[Reading]:
    """The gauge's lines; a line cut short when it was stopped is left out."""
    readings = []
    for line in path.read_text(encoding="ascii").splitlines():
        fields = line.split()
        if len(fields) == 3:
            readings.append(Reading(int(fields[0]), float(fields[1]), float(fields[2])))
    return readings


def percentiles(values: list[float]) -> dict[str, float]:
    """p10, p50 and p90, nearest rank as every metric (analysis/ranks.py)."""
    ordered = pl.Series(sorted(values), dtype=pl.Float64)
    return {f"p{q}": float(nearest_rank(ordered, q)) for q in (10, 50, 90)}


def machine_speed(
    readings: list[Reading], cpu: int, epoch_unix_ns: int, start_ns: int, end_ns: int
) -> dict[str, Any] | None:
    """summary.json's `run.testbed.machine_speed`: the readings taken from `start_ns` to
    `end_ns` of the run (the measured interval), their p10 / p50 / p90; None without
    any."""
    low, high = (epoch_unix_ns + start_ns) // NS_PER_MS, (epoch_unix_ns + end_ns) // NS_PER_MS
    kept = [r for r in readings if low <= r.unix_ms <= high]
    if not kept:
        return None
    return {
        "cpu": cpu,
        "readings": len(kept),
        "load_ns": percentiles([r.load_ns for r in kept]),
        "verify_us": percentiles([r.verify_us for r in kept]),
    }


class SpeedGauge:
    """The gauge over a run: `start` before the nodes publish, `stop` after, `summary`."""

    def __init__(self, binary: Path, node_cpus: list[int] | None, work: Path) -> None:
        self.binary = binary
        self.cpu = gauge_cpu(node_cpus, online_cpus())
        self.path = work / "speed-gauge.txt"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.process = start_gauge(self.binary, self.cpu, self.path)
        except OSError:
            # No taskset here: the run goes on, and its summary has no machine speed.
            self.process = None

    def stop(self) -> None:
        if self.process is not None:
            stop_gauge(self.process)
            self.process = None

    def summary(self, epoch_unix_ns: int, start_ns: int, end_ns: int) -> dict[str, Any] | None:
        if not self.path.exists():
            return None
        return machine_speed(read_readings(self.path), self.cpu, epoch_unix_ns, start_ns, end_ns)
