"""The engine extension matches its type stub, and refuses bad input with typed errors.

The stub (`python/gossiplab/_engine.pyi`) is what type checkers and readers see; these
tests keep it honest against the compiled module, name by name.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import gossiplab
from gossiplab import _engine
from gossiplab.backends.model import engine_config
from gossiplab.scenario import parse_scenario

STUB = Path(gossiplab.__file__).parent / "_engine.pyi"


def stub_names(body: list[ast.stmt]) -> set[str]:
    """Names a stub body defines: classes, functions and annotated attributes."""
    names: set[str] = set()
    for node in body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def stub_classes() -> dict[str, ast.ClassDef]:
    tree = ast.parse(STUB.read_text())
    return {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}


def public(names: list[str]) -> set[str]:
    return {n for n in names if not n.startswith("_")}


def test_the_stub_names_exactly_what_the_module_exports() -> None:
    tree = ast.parse(STUB.read_text())
    assert public(list(stub_names(tree.body))) == public(dir(_engine))
    assert "__version__" in stub_names(tree.body)


def test_the_engine_class_has_exactly_the_stubbed_members() -> None:
    stubbed = public(list(stub_names(stub_classes()["Engine"].body)))
    assert stubbed == public(dir(_engine.Engine))


def test_the_error_hierarchy_is_as_stubbed() -> None:
    classes = stub_classes()
    for name in ("EngineError", "ConfigError", "InputError"):
        bases = [ast.unparse(b) for b in classes[name].bases]
        actual = [b.__name__ for b in getattr(_engine, name).__bases__]
        assert bases == actual, name
    assert issubclass(_engine.ConfigError, ValueError)


def small_engine_inputs(tmp_path: Path) -> tuple[dict[str, Any], list[bytes]]:
    """A valid config for 4 nodes on a ring, and its arrays (one message from node 0)."""
    s = parse_scenario(
        {
            "topology": {"kind": "ring", "nodes": 4},
            "workload": {"messages": 1, "publishers": [0], "warmup": "1s"},
        },
        base_dir=tmp_path,
    )
    config = engine_config(s, 4, 3_000_000_000)
    arrays = [
        np.array([0, 1, 1, 2, 2, 3, 3, 0], "<u4").tobytes(),
        np.array([1_000_000_000], "<u8").tobytes(),
        np.array([0], "<u4").tobytes(),
        np.array([100], "<u4").tobytes(),
        np.array([0], "<u2").tobytes(),
        np.array([0], "<u4").tobytes(),
    ]
    return config, arrays


def test_valid_inputs_make_an_engine(tmp_path: Path) -> None:
    config, arrays = small_engine_inputs(tmp_path)
    engine = _engine.Engine(json.dumps(config), *arrays)
    assert engine.run_until(engine.end)


def test_a_setting_out_of_range_is_a_config_error_naming_it(tmp_path: Path) -> None:
    config, arrays = small_engine_inputs(tmp_path)
    config["network"]["loss"] = 1.5
    with pytest.raises(_engine.ConfigError) as caught:
        _engine.Engine(json.dumps(config), *arrays)
    assert caught.value.field == "network.loss"
    assert "1.5" in str(caught.value)


def test_a_self_loop_is_an_input_error_naming_the_edges(tmp_path: Path) -> None:
    config, arrays = small_engine_inputs(tmp_path)
    arrays[0] = np.array([0, 1, 2, 2], "<u4").tobytes()
    with pytest.raises(_engine.InputError) as caught:
        _engine.Engine(json.dumps(config), *arrays)
    assert caught.value.field == "edges"
    assert "self-loop on node 2" in str(caught.value)


def test_a_truncated_column_is_an_input_error_naming_it(tmp_path: Path) -> None:
    config, arrays = small_engine_inputs(tmp_path)
    arrays[1] = arrays[1][:5]
    with pytest.raises(_engine.InputError) as caught:
        _engine.Engine(json.dumps(config), *arrays)
    assert caught.value.field == "t_intended"


def test_the_model_backend_reports_a_refusal_at_the_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Python's own checks come first, so hand the engine a config they would not make.
    from gossiplab.backends import model
    from gossiplab.errors import ScenarioError
    from gossiplab.topology import build_topology
    from gossiplab.workload import build_schedule

    s = parse_scenario(
        {"topology": {"kind": "ring", "nodes": 4}, "workload": {"messages": 1}},
        base_dir=tmp_path,
    )
    good = model.engine_config

    def bad_loss(*args: Any) -> dict[str, Any]:
        config = good(*args)
        config["network"]["loss"] = 1.5
        return config

    monkeypatch.setattr(model, "engine_config", bad_loss)
    topology = build_topology(s)
    schedule = build_schedule(s, topology.nodes)
    with pytest.raises(ScenarioError) as caught:
        model.start_engine(s, topology, schedule, 3_000_000_000)
    [problem] = caught.value.problems
    assert problem.path == "network.loss"
    assert "must be in [0, 1), got 1.5" in problem.message
