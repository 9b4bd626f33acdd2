"""Record the kernel's view of a testbed run with `perf record` during its publishing.

Shared by the scripts that read the scheduler's tracepoints on real nodes
(bench/wakeup_switches.py, bench/preemptions.py): run a scenario whose nodes are confined
to CPUs (`[testbed] node_cpus`), wait for every node and a second into the publishing,
record `window` seconds with the caller's `perf record` options, and wait for the run.
"""

from __future__ import annotations

import subprocess
import sys
import time
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gossiplab.units import parse_duration

# The node binary's process name (the delay stage runs the same binary).
NODE_COMM = "gossiplab-node"


def publishing_second(spec: dict[str, Any]) -> float:
    """Seconds from the nodes' start to a second into the publishing."""
    return parse_duration(spec.get("workload", {}).get("warmup", "0s")) / 1e9 + 1.0


def record_publishing(
    scenario: Path,
    folder: Path,
    window: float,
    perf_options: list[str],
    on_start: Callable[[], None] = lambda: None,
) -> tuple[dict[str, Any], Path]:
    """Run `scenario` into `folder` and record `window` seconds of its publishing into
    `folder`.perf; `on_start` runs just before the recording. Returns the scenario's
    table and the recording's path."""
    spec = tomllib.loads(scenario.read_text())
    if not spec.get("testbed", {}).get("node_cpus"):
        raise SystemExit(f"{scenario}: confine the nodes to CPUs ([testbed] node_cpus)")
    nodes = spec["topology"]["nodes"]
    run = subprocess.Popen(
        [sys.executable, "-m", "gossiplab", "run", str(scenario), "-o", str(folder), "--force"],
        stdout=subprocess.DEVNULL,
    )
    # Every node and the delay stage.
    while run.poll() is None:
        found = subprocess.run(["pgrep", "-x", NODE_COMM], capture_output=True, text=True)
        if len(found.stdout.split()) >= nodes + 1:
            break
        time.sleep(0.1)
    time.sleep(publishing_second(spec))
    on_start()
    data = folder.with_suffix(".perf")
    subprocess.run(
        ["perf", "record", "-q", *perf_options, "-o", str(data), "--", "sleep", str(window)],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    if run.wait() != 0:
        raise SystemExit(f"{scenario}: the run failed")
    return spec, data


def perf_script(data: Path, fields: str) -> str:
    """`perf script` of a recording, with the given fields."""
    return subprocess.run(
        ["perf", "script", "-i", str(data), "-F", fields],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
