"""`gossiplab crosscheck --cpu-costs FILE`: the costs bench/cpu_refit.py wrote, set over a
scenario's [cpu] on the model's side (scenario/load.py, load_scenario)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gossiplab.errors import ScenarioError
from gossiplab.scenario import load_scenario

SCENARIO = """name = "shared"
[topology]
nodes = 10
[cpu]
costs = "measured"
nodes_per_host = 10
per_copy = "40us"
"""


def files(tmp: Path, costs: str) -> tuple[Path, Path]:
    (tmp / "s.toml").write_text(SCENARIO)
    (tmp / "costs.toml").write_text(costs)
    return tmp / "s.toml", tmp / "costs.toml"


def test_the_file_s_costs_replace_the_scenario_s_and_the_rest_stays(tmp_path: Path) -> None:
    scenario, costs = files(
        tmp_path, '# fitted\n[cpu]\nper_copy = "54us"\nper_node_wakeup = "6us"\n'
    )
    cpu = load_scenario(scenario, costs).cpu
    assert (cpu.per_copy, cpu.per_node_wakeup) == (54_000, 6_000)
    assert cpu.nodes_per_host == 10, "the scenario's hosts stay"
    alone = load_scenario(scenario).cpu
    assert alone.per_copy == 40_000 and cpu.per_kb_sent == alone.per_kb_sent  # measured


def test_a_file_without_a_cpu_table_is_refused_naming_the_option(tmp_path: Path) -> None:
    scenario, costs = files(tmp_path, '[network]\nlatency = "10ms"\n')
    with pytest.raises(ScenarioError) as err:
        load_scenario(scenario, costs)
    assert "no [cpu] table" in str(err.value) and "bench/cpu_refit.py" in str(err.value)


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    scenario, _ = files(tmp_path, "")
    with pytest.raises(ScenarioError) as err:
        load_scenario(scenario, tmp_path / "nowhere.toml")
    assert "--cpu-costs" in str(err.value) and "cannot read the CPU costs file" in str(err.value)
