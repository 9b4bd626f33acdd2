"""A run killed with SIGKILL leaves no half-written result, and the re-run completes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

SCENARIO = """
name = "killed"
[topology]
kind = "random-regular"
nodes = 200
degree = 10
[network]
latency = "20ms"
cpu_per_message = "100us"
[workload]
messages = 24000
rate = "300/s"
"""


def start(scenario: Path, out: Path) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "gossiplab", "run", str(scenario), "-o", str(out), "-q"]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def test_sigkill_mid_run_leaves_nothing_and_the_rerun_completes(tmp_path: Path) -> None:
    scenario = tmp_path / "killed.toml"
    scenario.write_text(SCENARIO)
    out = tmp_path / "results" / "killed"
    process = start(scenario, out)
    time.sleep(3.0)
    assert process.poll() is None, "the run finished before it could be killed; make it longer"
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    assert not out.exists(), "a killed run must not leave a results folder"

    rerun = start(scenario, out)
    assert rerun.wait(timeout=600) == 0
    assert (out / "summary.json").is_file() and (out / "report.html").is_file()
    # Whatever the killed run had started writing is gone too.
    assert [p.name for p in out.parent.iterdir()] == ["killed"]
