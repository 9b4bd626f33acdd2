"""A testbed run cleans up after itself, also when it is interrupted or killed.

Ctrl-C (SIGINT) must tear everything down at once; a SIGKILLed orchestrator cannot, so
its nodes must die with it and the next run (or `gossiplab clean`) removes what is left.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from typer.testing import CliRunner

from gossiplab.backends.testbed.binary import ensure_binary
from gossiplab.backends.testbed.netns import list_namespaces, namespace_pids
from gossiplab.cli.main import app
from testbed_marks import REAL_NODES

pytestmark = REAL_NODES

LONG_RUN = """
name = "long"
seed = 2
backend = "testbed"
[topology]
kind = "line"
nodes = 3
[network]
latency = "5ms"
[workload]
messages = 100
rate = "2/s"
publishers = [0]
warmup = "2s"
cooldown = "1s"
"""


def of(pid: int) -> list[str]:
    return [name for name in list_namespaces() if name.startswith(f"gl{pid}-")]


def start_orchestrator(tmp_path: Path) -> subprocess.Popen[bytes]:
    ensure_binary()  # built before the clock starts
    scenario = tmp_path / "long.toml"
    scenario.write_text(LONG_RUN)
    code = (
        "from gossiplab.runner import run; import sys; "
        f"run({str(scenario)!r}, {str(tmp_path / 'out')!r})"
    )
    return subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE)


def wait_for_nodes(pid: int, count: int, timeout: float = 60) -> list[str]:
    """Wait until the run's namespaces exist and every node namespace holds a process."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        names = of(pid)
        nodes = [n for n in names if not n.endswith("-c")]
        if len(nodes) == count and all(namespace_pids(n) for n in nodes):
            return names
        time.sleep(0.2)
    raise AssertionError(f"the run of {pid} did not start its {count} nodes")


def test_ctrl_c_tears_everything_down(tmp_path: Path) -> None:
    proc = start_orchestrator(tmp_path)
    names = wait_for_nodes(proc.pid, 3)
    pids = [p for name in names for p in namespace_pids(name)]
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode != 0
    assert of(proc.pid) == []
    assert not any(Path(f"/proc/{p}").exists() for p in pids), "node processes survived"
    assert not (tmp_path / "out").exists(), "no partial results"
    assert b"Traceback" not in stderr or b"KeyboardInterrupt" in stderr


def test_sigkill_leftovers_die_and_are_cleaned_by_the_next_start(tmp_path: Path) -> None:
    proc = start_orchestrator(tmp_path)
    names = wait_for_nodes(proc.pid, 3)
    pids = [p for name in names for p in namespace_pids(name)]
    proc.kill()
    proc.wait()
    # The nodes and the delay stage die with their parent (PR_SET_PDEATHSIG)...
    deadline = time.monotonic() + 10
    while any(Path(f"/proc/{p}").exists() for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(Path(f"/proc/{p}").exists() for p in pids), "orphaned node processes"
    # ...but nobody removed the namespaces: the next start does (here `gossiplab clean`,
    # which run_testbed calls first too).
    assert of(proc.pid) == names
    result = CliRunner().invoke(app, ["clean"])
    assert result.exit_code == 0, result.output
    assert of(proc.pid) == []
    assert f"gl{proc.pid}-c" in result.output


def test_clean_leaves_a_live_run_alone() -> None:
    name = f"gl{os.getppid()}-c"  # a live process that is not this one: pytest's parent
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        result = CliRunner().invoke(app, ["clean"])
        assert result.exit_code == 0, result.output
        assert name in list_namespaces()
    finally:
        subprocess.run(["ip", "netns", "delete", name], check=False)


def test_twenty_interrupted_runs_leave_nothing_behind(tmp_path: Path) -> None:
    """Runs stopped at varied moments, by Ctrl-C or SIGKILL, then one `gossiplab clean`."""
    qdiscs_before = subprocess.run(
        ["tc", "qdisc", "show"], capture_output=True, text=True, check=True
    ).stdout
    links_before = subprocess.run(
        ["ip", "-o", "link", "show"], capture_output=True, text=True, check=True
    ).stdout
    pids = []
    for i in range(20):
        folder = tmp_path / f"run{i}"
        folder.mkdir()
        proc = start_orchestrator(folder)
        pids.append(proc.pid)
        # Some while the network is being built, some once the nodes run.
        if i % 3 == 0:
            time.sleep(0.3 + (0.1 * i) % 1.0)
        else:
            wait_for_nodes(proc.pid, 3)
        proc.send_signal(signal.SIGINT if i % 2 == 0 else signal.SIGKILL)
        proc.communicate(timeout=60)
    result = CliRunner().invoke(app, ["clean"])
    assert result.exit_code == 0, result.output
    left = [name for pid in pids for name in of(pid)]
    assert left == [], f"namespaces left behind: {left}"
    links_after = subprocess.run(
        ["ip", "-o", "link", "show"], capture_output=True, text=True, check=True
    ).stdout
    assert links_after.count("\n") == links_before.count("\n"), "veths left behind"
    qdiscs_after = subprocess.run(
        ["tc", "qdisc", "show"], capture_output=True, text=True, check=True
    ).stdout
    assert qdiscs_after == qdiscs_before
    binary = str(ensure_binary())
    survivors = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                first = (entry / "cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
            except OSError:
                continue
            if first == binary:
                survivors.append(int(entry.name))
    assert survivors == [], "node or delay-stage processes survived"
