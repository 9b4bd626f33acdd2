"""bench/speed_gauge reads the machine's speed, not how busy its CPU is: it times its work
in its own thread's CPU time, so a CPU shared with a spinning process gives the same
readings as one of its own, while the wall clock of the same work would stretch."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "bench"))
from machine_speed import build_gauge, correlation, readings, spread, start_gauge

CPUS = sorted(os.sched_getaffinity(0))


def test_a_reading_line_is_time_load_and_verification(tmp_path: Path) -> None:
    path = tmp_path / "g"
    path.write_text("1000 150.5 36.25\n2000 160.0 37.00\n")
    assert [(r.unix_ms, r.load_ns, r.verify_us) for r in readings(path)] == [
        (1000, 150.5, 36.25),
        (2000, 160.0, 37.0),
    ]
    assert spread([float(v) for v in range(1, 11)]) == "2.0 / 6.0 / 10.0"
    assert correlation([1.0, 2.0, 3.0], [2.0, 4.0, 6.1]) == pytest.approx(1.0, abs=0.01)


@pytest.mark.skipif(shutil.which("go") is None, reason="the gauge is built with Go")
@pytest.mark.skipif(len(CPUS) < 2, reason="needs two CPUs: one shared, one not")
def test_a_cpu_shared_with_a_spinning_process_reads_as_fast(tmp_path: Path) -> None:
    alone_cpu, shared_cpu = CPUS[0], CPUS[1]
    binary = build_gauge(tmp_path)
    spin = subprocess.Popen(
        ["taskset", "-c", str(shared_cpu), sys.executable, "-c", "while 1: pass"]
    )
    try:
        alone = start_gauge(binary, alone_cpu, 4, tmp_path / "alone")
        shared = start_gauge(binary, shared_cpu, 4, tmp_path / "shared")
        alone.wait(timeout=60)
        shared.wait(timeout=60)
    finally:
        spin.kill()
    # Both CPUs see the same memory system at the same moments; the spinning process
    # takes half of the shared CPU's time, none of the gauge's own.
    loads = [sorted(r.load_ns for r in readings(tmp_path / f))[2] for f in ("alone", "shared")]
    verifies = [sorted(r.verify_us for r in readings(tmp_path / f))[2] for f in ("alone", "shared")]
    assert len(readings(tmp_path / "shared")) == 4
    assert loads[1] == pytest.approx(loads[0], rel=0.3)
    assert verifies[1] == pytest.approx(verifies[0], rel=0.3)
