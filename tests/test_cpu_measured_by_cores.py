"""`[cpu] costs = "measured"` gives the costs measured with the node's GOMAXPROCS, which
is its host's `cores` (go's default: runtime/os_linux.go:getCPUCount)."""

from __future__ import annotations

from pathlib import Path

from gossiplab.runner import run
from gossiplab.scenario import parse_scenario
from gossiplab.scenario.cpu import MEASURED, MEASURED_ONE_P

HERE = Path(__file__).parent
US = 1_000
# docs/network-calibration.md, "CPU costs": on two P a reader's wake-up, two read
# syscalls; on one P a node's wake-up, two voluntary switches of 11 µs, and 1.75 µs per
# copy received or sent.
WAKEUP_TWO_P_US = 62
NODE_WAKEUP_ONE_P_US = 22
PER_COPY_ONE_P_US = 1.75
ONE_P = ("per_read_wakeup", "per_node_wakeup", "per_rpc_received", "per_rpc_sent")


def _cpu(cores: int | None) -> dict[str, int]:
    cpu = {"costs": "measured"} | ({} if cores is None else {"cores": cores})
    parsed = parse_scenario({"cpu": cpu}, HERE).cpu
    return {name: getattr(parsed, name) for name in MEASURED}


def test_one_core_gets_the_one_p_costs_and_more_cores_the_unconfined_ones() -> None:
    assert _cpu(1)["per_read_wakeup"] == 0, "the node's wake-up replaces the reader's"
    assert _cpu(1)["per_node_wakeup"] == NODE_WAKEUP_ONE_P_US * US
    assert _cpu(2)["per_node_wakeup"] == 0
    assert _cpu(None) == _cpu(1), "cores defaults to 1"
    assert _cpu(2)["per_read_wakeup"] == WAKEUP_TWO_P_US * US
    assert _cpu(8) == _cpu(2), "more than 2 cores were not measured: the costs of 2"
    # Bytes, signatures and signing are charged alike: only the runtime's share differs.
    same = {name for name in MEASURED if name not in ONE_P}
    assert {n: _cpu(1)[n] for n in same} == {n: _cpu(2)[n] for n in same}
    assert MEASURED_ONE_P["per_node_wakeup"] < MEASURED["per_read_wakeup"]


def test_a_given_cost_still_wins_over_either_set() -> None:
    data = {"cpu": {"costs": "measured", "cores": 1, "per_read_wakeup": "7us"}}
    assert parse_scenario(data, HERE).cpu.per_read_wakeup == 7 * US


def _latency_ms(tmp_path: Path, cores: int) -> float:
    # One message over one 10 ms link between idle nodes: on 2 cores the receiver's
    # reader was waiting (one reader wake-up); on 1 core the publisher and the receiver
    # were idle (two node wake-ups) and the copy is written and read once each (1.75 µs
    # each way). Everything else it pays is the same on both hosts.
    data = {
        "topology": {"kind": "line", "nodes": 2},
        "network": {"latency": "10ms"},
        "cpu": {"costs": "measured", "cores": cores},
        "workload": {"messages": 1, "warmup": "1s", "cooldown": "1s"},
    }
    summary = run(parse_scenario(data, tmp_path), tmp_path / str(cores)).summary
    return float(summary["receipt_latency_ms"]["max"])


def test_a_scenario_on_one_core_pays_the_one_p_wake_up(tmp_path: Path) -> None:
    difference_us = (_latency_ms(tmp_path, 2) - _latency_ms(tmp_path, 1)) * 1_000
    one_p_us = 2 * NODE_WAKEUP_ONE_P_US + 2 * PER_COPY_ONE_P_US
    assert abs(difference_us - (WAKEUP_TWO_P_US - one_p_us)) < 1
