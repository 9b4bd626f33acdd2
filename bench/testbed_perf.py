"""Record the kernel's view of a testbed run during its publishing.

Shared by the scripts that read the scheduler on real nodes (bench/wakeup_switches.py,
bench/preemptions.py, bench/kernel_eevdf.py): run a scenario whose nodes are confined to
CPUs (`[testbed] node_cpus`), wait for every node and a second into the publishing,
record (`perf record` with the caller's options, or the caller's own recorder), and wait
for the run; and which node each running node process is.
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


def run_during_publishing(
    scenario: Path, folder: Path, during: Callable[[dict[str, Any]], None]
) -> dict[str, Any]:
    """Run `scenario` into `folder`; once every node runs and a second of the publishing
    has passed, call `during` with the scenario's table (it records what it wants and
    returns); then wait for the run. Returns the scenario's table."""
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
    during(spec)
    if run.wait() != 0:
        raise SystemExit(f"{scenario}: the run failed")
    return spec


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
    data = folder.with_suffix(".perf")

    def perf_record(_: dict[str, Any]) -> None:
        on_start()
        subprocess.run(
            ["perf", "record", "-q", *perf_options, "-o", str(data), "--", "sleep", str(window)],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    return run_during_publishing(scenario, folder, perf_record), data


def node_numbers() -> dict[int, int]:
    """pid -> node number of the running nodes (their config is `.../<node>/config.json`)."""
    found = subprocess.run(["pgrep", "-x", NODE_COMM], capture_output=True, text=True)
    out = {}
    for pid in map(int, found.stdout.split()):
        try:
            args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if len(args) >= 3 and args[1] == b"node":
            name = Path(args[2].decode()).parent.name
            digits = "".join(ch for ch in name if ch.isdigit())
            if digits:
                out[pid] = int(digits)
    return out


def perf_script(data: Path, fields: str) -> str:
    """`perf script` of a recording, with the given fields."""
    return subprocess.run(
        ["perf", "script", "-i", str(data), "-F", fields],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
