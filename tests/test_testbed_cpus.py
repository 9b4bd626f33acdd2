"""testbed.node_cpus: the nodes on the listed CPUs, the delay stage on the others.

The expectation is the kernel's: a process's affinity mask is inherited across fork and
exec (sched_setaffinity(2)), so every node started under `taskset -c 1` must show
`Cpus_allowed_list: 1` in /proc/PID/status, and the delay stage the host's other CPU.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gossiplab.backends.testbed import cpus, orchestrate
from gossiplab.backends.testbed.ceiling import capacity_warning
from gossiplab.backends.testbed.cpus import delay_cpus, parse_cpu_list
from gossiplab.backends.testbed.support import unsupported_features
from gossiplab.errors import ScenarioError
from gossiplab.runner import run
from gossiplab.scenario import parse_scenario
from gossiplab.topology import build_topology
from testbed_marks import REAL_NODES


def _scenario(tmp: Path, node_cpus: Any, rate: str = "10/s") -> Any:
    return parse_scenario(
        {
            "name": "cpus",
            "seed": 3,
            "backend": "testbed",
            "topology": {"kind": "line", "nodes": 3},
            "network": {"latency": "10ms"},
            "workload": {"messages": 10, "rate": rate, "warmup": "3s", "cooldown": "1s"},
            "testbed": {"node_cpus": node_cpus},
        },
        base_dir=tmp,
    )


@pytest.mark.parametrize(
    ("value", "words"),
    [([], "empty list"), ([-1], "start at 0"), ([1, 1], "twice"), ("1", "expected an array")],
)
def test_a_malformed_list_is_refused_naming_the_field(
    tmp_path: Path, value: Any, words: str
) -> None:
    with pytest.raises(ScenarioError) as error:
        _scenario(tmp_path, value)
    assert "testbed.node_cpus" in str(error.value)
    assert words in str(error.value)


def _online(tmp: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    path = tmp / "online"
    path.write_text(text)
    monkeypatch.setattr(cpus, "ONLINE", str(path))


def test_cpus_that_are_not_online_are_refused_before_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _online(tmp_path, monkeypatch, "0-1\n")
    problems = unsupported_features(_scenario(tmp_path, [1, 2, 5]))
    assert [p.path for p in problems] == ["testbed.node_cpus"]
    assert "CPU 2,5 is not online" in problems[0].message
    assert "0,1" in problems[0].hint
    assert not unsupported_features(_scenario(tmp_path, [0, 1]))


def test_the_delay_stage_gets_the_other_online_cpus_or_shares(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _online(tmp_path, monkeypatch, "0-3,6\n")
    assert delay_cpus([1]) == [0, 2, 3, 6]
    assert delay_cpus([0, 1, 2, 3, 6]) is None  # all of them: the stage shares
    assert delay_cpus(None) is None


def test_the_capacity_warning_weighs_the_nodes_cpus(tmp_path: Path) -> None:
    # Line of 3, D = 6: 4 copies per message (degrees 1 + 2 + 1) at 130 us each.
    s = _scenario(tmp_path, [1], "1500/s")  # 0.78 cores: over 0.6 of a shared core
    assert capacity_warning(s, build_topology(s)) is None
    assert capacity_warning(_scenario(tmp_path, None, "1500/s"), build_topology(s), cores=1)
    s = _scenario(tmp_path, [1], "2500/s")  # 1.3 cores
    warning = capacity_warning(s, build_topology(s))
    assert warning is not None and "against 1 cores" in warning and "node_cpus" in warning


def test_the_kernels_cpu_list_format() -> None:
    # Documentation/admin-guide/cputopology.rst: ranges and single CPUs, comma-separated.
    assert parse_cpu_list("0-1\n") == [0, 1]
    assert parse_cpu_list("0,2-4,7") == [0, 2, 3, 4, 7]


def _allowed(pid: int) -> str:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Cpus_allowed_list:"):
            return line.split(":", 1)[1].strip()
    raise AssertionError(f"no Cpus_allowed_list for {pid}")


@REAL_NODES[0]
@REAL_NODES[1]
@pytest.mark.skipif(parse_cpu_list(Path(cpus.ONLINE).read_text()) != [0, 1], reason="2-core host")
def test_a_run_confines_its_nodes_and_its_delay_stage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, list[str]] = {}
    await_ready = orchestrate.Testbed.await_ready

    def wait_then_look(bed: orchestrate.Testbed) -> Any:
        # Once ready, each node is its own binary: `taskset` set the mask, then exec'd it.
        # (Read earlier, a node just spawned may still be `taskset` before it sets it.)
        readiness = await_ready(bed)
        assert bed.delay is not None
        seen["nodes"] = [_allowed(pid) for pid in bed.pids().values()]
        seen["delay"] = [_allowed(bed.delay.pid)]
        return readiness

    monkeypatch.setattr(orchestrate.Testbed, "await_ready", wait_then_look)
    summary = run(_scenario(tmp_path, [1]), tmp_path / "out").summary["run"]["testbed"]
    assert seen == {"nodes": ["1", "1", "1"], "delay": ["0"]}
    assert summary["node_cpus"] == [1]
    assert summary["delay_stage_cpus"] == [0]
    # The speed gauge read the CPU the nodes do not have, once a second while publishing.
    speed = summary["machine_speed"]
    assert speed["cpu"] == 0 and speed["readings"] >= 1
    assert 0 < speed["load_ns"]["p10"] <= speed["load_ns"]["p50"] <= speed["load_ns"]["p90"]
    assert speed["verify_us"]["p50"] > 0
