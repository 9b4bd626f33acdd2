"""testbed.go_trace: the listed nodes' go execution traces (runtime/trace) over the
measured interval, copied to go-traces/node-<id>.trace; refused by the other backends."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gossiplab.backends import model
from gossiplab.backends.simnet import support as simnet_support
from gossiplab.errors import ScenarioError
from gossiplab.runner import run
from gossiplab.scenario import parse_scenario
from testbed_marks import REAL_NODES

sys.path.insert(0, str(Path(__file__).parents[1] / "bench"))
from go_trace_schedule import parse


def _scenario(tmp: Path, go_trace: Any, backend: str = "testbed") -> Any:
    return parse_scenario(
        {
            "name": "go-trace",
            "seed": 5,
            "backend": backend,
            "topology": {"kind": "line", "nodes": 3},
            "network": {"latency": "5ms"},
            "workload": {"messages": 6, "rate": "10/s", "warmup": "3s", "cooldown": "1s"},
            "testbed": {"go_trace": go_trace},
        },
        base_dir=tmp,
    )


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ([0, 0], "lists a node twice"),
        ([-1], "start at 0"),
        ([1, 3], "node id(s) 3 out of range for 3 nodes"),
        ("0", "array"),
    ],
)
def test_a_bad_list_is_refused_naming_the_field(tmp_path: Path, value: Any, words: str) -> None:
    with pytest.raises(ScenarioError) as error:
        _scenario(tmp_path, value)
    assert "testbed.go_trace" in str(error.value)
    assert words in str(error.value)


def test_the_model_and_simnet_refuse_a_go_trace_naming_the_field(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError) as error:
        run(_scenario(tmp_path, [0], backend="model"), tmp_path / "out")
    assert "testbed.go_trace" in str(error.value)
    assert not (tmp_path / "out").exists()
    refused = simnet_support.unsupported_features(_scenario(tmp_path, [0], backend="simnet"))
    assert [p.path for p in refused] == ["testbed.go_trace"]
    # An empty list is the default and asks for nothing.
    assert not model.unsupported_features(_scenario(tmp_path, [], backend="model"))


@REAL_NODES[0]
@REAL_NODES[1]
@pytest.mark.skipif(shutil.which("go") is None, reason="needs the Go toolchain's trace tool")
def test_a_traced_node_leaves_a_complete_trace_of_its_ps(tmp_path: Path) -> None:
    out = tmp_path / "out"
    run(_scenario(tmp_path, [0]), out)
    traces = sorted(p.name for p in (out / "go-traces").iterdir())
    assert traces == ["node-0.trace"]
    # A trace cut short (not stopped before the node wrote node.json) fails to parse.
    parsed = subprocess.run(
        ["go", "tool", "trace", "-d=parsed", str(out / "go-traces" / "node-0.trace")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "ProcID=0 Idle->Running" in parsed
    schedule = parse(parsed.splitlines())
    assert schedule.busy[0], "P0 never went from idle to running and back"
    # Every message passes the node's event loop (pubsub.go processLoop).
    assert "event loop" in schedule.waits_by_role()
