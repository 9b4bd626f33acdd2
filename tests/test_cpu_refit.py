"""bench/cpu_refit.py: the fits as the model's [cpu] costs, the way the docs map them
(docs/network-calibration.md, "Per goroutine turn")."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from cpu_fit_turns import LOOP_COSTS, READ_COSTS, SEND_COSTS
from cpu_refit import as_toml, cliff_at, hour_costs

from gossiplab.scenario import parse_scenario

# Each goroutine's (scale over the model's costs per item, µs per turn).
FITS = {
    "event loop": (2.0, 4.0),
    "recvLoop": (0.5, 9.0),
    "reader": (3.0, -1.0),
    "writer": (2.5, 6.0),
    "sendLoop": (0.5, 10.0),
    "validator": (56.0, 100.0),
}


def test_each_fit_becomes_the_cost_the_model_charges_where_go_pays_it() -> None:
    costs = hour_costs(FITS, per_publish_us=110.0, sysmon_us=15.0)
    assert costs["per_rpc_loop"] == pytest.approx(2.0 * LOOP_COSTS["rpcs_in"])
    assert costs["per_forward_loop"] == pytest.approx(2.0 * LOOP_COSTS["forwards"])
    assert costs["per_kb_received"] == pytest.approx(0.5 * READ_COSTS["kb_in"])
    # The writer hands its RPCs to the sendLoop: one cost per RPC written, both parts.
    assert costs["per_rpc_sent"] == pytest.approx(2.5 + 0.5 * SEND_COSTS["writes"])
    assert costs["per_kb_sent"] == pytest.approx(0.5 * SEND_COSTS["kb_out"])
    assert costs["per_reader_turn"] == 0, "a negative cost per turn is not a cost"
    # The runs' 1000-byte signed messages: 1 kB of the signature's cost per kB is apart.
    assert costs["per_copy"] == pytest.approx(56.0 - 2.673)
    assert costs["per_publish"] == pytest.approx(110.0 - 6.447)
    assert costs["per_sysmon_round"] == 15.0


def test_the_costs_file_parses_as_a_cpu_section_beside_the_measured_ones(tmp_path: Path) -> None:
    costs = hour_costs(FITS, per_publish_us=110.0, sysmon_us=15.0) | {"per_node_wakeup": 6.0}
    written = tomllib.loads(as_toml(costs, ["a header line"]))
    cpu = {"costs": "measured", "nodes_per_host": 40, **written["cpu"]}
    parsed = parse_scenario({"cpu": cpu}, tmp_path).cpu
    assert parsed.per_copy == round((56.0 - 2.673) * 1000)
    assert parsed.per_node_wakeup == 6_000 and parsed.per_kb_copy == 2_673


def test_the_traced_and_profiled_runs_are_the_cliff_file_at_each_rate() -> None:
    traced, profiled = cliff_at(120, traced=True), cliff_at(120, traced=False)
    assert traced["workload"]["rate"] == profiled["workload"]["rate"] == "120/s"
    assert traced["testbed"]["go_trace"] and "profile" not in traced["testbed"]
    assert profiled["testbed"]["profile"] is True
    assert traced["testbed"]["node_cpus"] == [1], "the fitted costs are of one P"
