"""The testbed's speed gauge (`gossiplab-node speed`, backends/testbed/speed.py): its load
time reads the machine's speed, not how busy its CPU is (it times its work in its own
thread's CPU time, so a CPU shared with a spinning process reads as fast as one of its
own, while the wall clock of the same work would stretch), and a run keeps the readings
of its measured interval."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gossiplab.backends.testbed.binary import ensure_binary
from gossiplab.backends.testbed.speed import (
    Reading,
    gauge_cpu,
    machine_speed,
    read_readings,
    start_gauge,
    stop_gauge,
)

CPUS = sorted(os.sched_getaffinity(0))
S_IN_MS = 1000


def test_a_line_is_time_load_and_verification_and_a_cut_line_is_left_out(
    tmp_path: Path,
) -> None:
    path = tmp_path / "g"
    path.write_text("1000 150.5 36.25\n2000 160.0 37.00\n3000 15", encoding="ascii")
    assert read_readings(path) == [Reading(1000, 150.5, 36.25), Reading(2000, 160.0, 37.0)]


def test_the_summary_keeps_the_measured_interval_only() -> None:
    # The run's clock starts at unix 100 s; measured from 3 s to 5 s of the run: the
    # readings at unix 103, 104 and 105 s count, those at 102 and 106 s do not.
    readings = [Reading((100 + t) * S_IN_MS, 100.0 * t, 10.0 * t) for t in range(2, 7)]
    speed = machine_speed(readings, 0, 100 * 10**9, 3 * 10**9, 5 * 10**9)
    assert speed is not None
    assert speed["readings"] == 3
    assert speed["load_ns"] == {"p10": 300.0, "p50": 400.0, "p90": 500.0}
    assert speed["verify_us"]["p50"] == 40.0
    assert machine_speed(readings, 0, 0, 0, 10**9) is None


def test_the_gauge_reads_a_cpu_the_nodes_do_not_have() -> None:
    assert gauge_cpu([1], [0, 1]) == 0
    assert gauge_cpu([0], [0, 1, 2]) == 1
    assert gauge_cpu(None, [0, 1]) == 1, "unconfined: the last CPU, shared with the nodes"
    assert gauge_cpu([0, 1], [0, 1]) == 1


@pytest.mark.skipif(shutil.which("go") is None, reason="the gauge is built with Go")
@pytest.mark.skipif(len(CPUS) < 2, reason="needs two CPUs: one shared, one not")
def test_a_cpu_shared_with_a_spinning_process_reads_as_fast(tmp_path: Path) -> None:
    alone_cpu, shared_cpu = CPUS[0], CPUS[1]
    binary = ensure_binary()
    spin = ["taskset", "-c", str(shared_cpu), sys.executable, "-c", "while 1: pass"]
    spinner = subprocess.Popen(spin)
    try:
        alone = start_gauge(binary, alone_cpu, tmp_path / "alone")
        shared = start_gauge(binary, shared_cpu, tmp_path / "shared")
        time.sleep(4.5)
        stop_gauge(alone)
        stop_gauge(shared)
    finally:
        spinner.kill()
    # Both CPUs see the same memory system at the same moments; the spinning process
    # takes half of the shared CPU's time, none of the gauge's own (a gauge on the wall
    # clock read 2.3 times as long per load there). The verification is not asserted:
    # the spinning process slows it through the core's own caches (16-40 % in runs of
    # this test), as it would a node's work there.
    alone_readings, shared_readings = (read_readings(tmp_path / f) for f in ("alone", "shared"))
    assert len(shared_readings) >= 3

    def median(values: list[float]) -> float:
        return sorted(values)[len(values) // 2]

    loads = [median([r.load_ns for r in rs]) for rs in (alone_readings, shared_readings)]
    assert loads[1] == pytest.approx(loads[0], rel=0.3)


def _gone(pid: int) -> bool:
    """True once `pid` exited (a zombie its new parent did not reap counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state == "Z"


def test_a_gauge_whose_orchestrator_died_before_it_started_exits() -> None:
    # The subshell outlives the shell that started it, is handed to init, and only then
    # becomes the gauge: PR_SET_PDEATHSIG, asked for after the parent's death, would
    # never fire (the process that survived an interrupted run of
    # test_testbed_teardown.py), so the gauge must see it is orphaned and exit.
    binary = ensure_binary()
    started = subprocess.run(
        ["sh", "-c", f"(sleep 0.3; exec {binary} speed 0) >/dev/null 2>&1 & echo $!"],
        capture_output=True,
        text=True,
        check=True,
    )
    pid = int(started.stdout)
    try:
        deadline = time.monotonic() + 10
        while not _gone(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _gone(pid), "an orphaned gauge kept running"
    finally:
        if not _gone(pid):
            os.kill(pid, 9)
