"""`crosscheck --partner-run DIR`: which finished real runs stand for a new one.

The runs here are the model's (quick and deterministic), relabelled as the testbed's
where a test needs a partner run: the check reads only the folder's scenario and backend.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gossiplab.backends.testbed.crosscheck import run_crosscheck, variant
from gossiplab.backends.testbed.partner_run import check_partner_run, differences
from gossiplab.errors import GossiplabError
from gossiplab.runner import run
from gossiplab.scenario import load_scenario

SCENARIO = """
name = "partner-line"
seed = 3
backend = "model"
[topology]
kind = "line"
nodes = 4
[network]
latency = "10ms"
[workload]
messages = 3
rate = "5/s"
publishers = [0]
warmup = "2s"
cooldown = "1s"
"""


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _as_testbed_run(tmp_path: Path, scenario: str, name: str) -> Path:
    """A model run of `scenario` labelled as the testbed's (backend in both files)."""
    s = load_scenario(_write(tmp_path, f"{name}.toml", scenario))
    folder = tmp_path / name
    run(variant(s, "model"), folder)
    summary = json.loads((folder / "summary.json").read_text())
    summary["run"]["backend"] = "testbed"
    (folder / "summary.json").write_text(json.dumps(summary))
    toml = (folder / "scenario.toml").read_text()
    (folder / "scenario.toml").write_text(
        re.sub(r'(?m)^backend = ".*"$', 'backend = "testbed"', toml)
    )
    return folder


def test_differences_name_each_field_with_both_values() -> None:
    here = {"seed": 1, "workload": {"rate": "5/s", "size": 1000}, "name": "a"}
    there = {"seed": 1, "workload": {"rate": "9/s", "size": 1000}, "extra": True, "name": "a"}
    assert differences(here, there) == [
        "extra (True there, None here)",
        "workload.rate ('9/s' there, '5/s' here)",
    ]
    assert differences(here, here) == []


def test_a_run_of_the_same_scenario_is_taken_whatever_the_model_cpu_costs(tmp_path: Path) -> None:
    folder = _as_testbed_run(tmp_path, SCENARIO, "real")
    costed = SCENARIO + '[cpu]\nper_copy = "50us"\n'
    s = load_scenario(_write(tmp_path, "costed.toml", costed))
    check_partner_run(folder, variant(s, "testbed"), "testbed")


def test_a_run_of_another_scenario_or_backend_is_refused_naming_why(tmp_path: Path) -> None:
    folder = _as_testbed_run(tmp_path, SCENARIO, "real")
    other = load_scenario(_write(tmp_path, "other.toml", SCENARIO.replace("seed = 3", "seed = 4")))
    with pytest.raises(GossiplabError, match=r"another scenario \(seed \(3 there, 4 here\)\)"):
        check_partner_run(folder, variant(other, "testbed"), "testbed")
    s = load_scenario(_write(tmp_path, "same.toml", SCENARIO))
    model_run = tmp_path / "model-run"
    run(variant(s, "model"), model_run)
    with pytest.raises(GossiplabError, match="a run of the model backend, not of the testbed"):
        check_partner_run(model_run, variant(s, "testbed"), "testbed")
    with pytest.raises(GossiplabError, match=r"--partner-run: results folder .* does not exist"):
        check_partner_run(tmp_path / "nowhere", variant(s, "testbed"), "testbed")


def test_the_crosscheck_copies_the_partner_run_and_compares_it(tmp_path: Path) -> None:
    folder = _as_testbed_run(tmp_path, SCENARIO, "real")
    scenario = _write(tmp_path, "line.toml", SCENARIO)
    result = run_crosscheck(scenario, tmp_path / "xc", partner_run=folder)
    assert (tmp_path / "xc" / "testbed" / "deliveries.parquet").read_bytes() == (
        folder / "deliveries.parquet"
    ).read_bytes()
    # The partner is the model's own run relabelled: every metric equal.
    assert all(r.model == r.partner for r in result.rows), result.markdown
    assert f"--partner-run {folder}" in result.markdown
    # Identical runs meet every fidelity target.
    verdicts = json.loads((tmp_path / "xc" / "crosscheck-targets.json").read_text())
    assert [v["within"] for v in verdicts] == [True] * 6, result.markdown
    assert "Against the fidelity targets" in result.markdown
    with pytest.raises(GossiplabError, match="inside the crosscheck's folder"):
        run_crosscheck(
            scenario, tmp_path / "xc", force=True, partner_run=tmp_path / "xc" / "testbed"
        )
