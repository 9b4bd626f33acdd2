"""bench/cpu_fit_wakeup.py: the model's side of each calibration run it fits against."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from cpu_fit_wakeup import model_scenario

from gossiplab.scenario import parse_scenario

HOUR = {"per_copy": "54us", "per_publish": "108us", "per_reader_turn": "5us"}


def calibration_run(tmp: Path, protocol: str) -> Path:
    folder = tmp / "run"
    folder.mkdir()
    (folder / "scenario.toml").write_text(
        f'name = "calib"\nbackend = "testbed"\n[topology]\nnodes = 10\n[protocol]\n{protocol}\n'
    )
    return folder


def test_a_signed_run_gets_the_hour_s_costs_and_the_wake_up_tried(tmp_path: Path) -> None:
    folder = calibration_run(tmp_path, 'signing = "strict-sign"')
    cpu = parse_scenario(model_scenario(folder, 7.0, HOUR), folder).cpu
    assert (cpu.per_copy, cpu.per_publish, cpu.per_reader_turn) == (54_000, 108_000, 5_000)
    assert cpu.per_node_wakeup == 7_000 and cpu.nodes_per_host == 10 and cpu.cores == 1


def test_an_unsigned_run_keeps_the_preset_s_costs_of_signatures(tmp_path: Path) -> None:
    # A signed hour's per_copy and per_publish hold ed25519 checks and signing
    # (sign.go), which an unsigned node never makes: its own costs stay the preset's.
    folder = calibration_run(tmp_path, 'preset = "ethereum"')
    cpu = parse_scenario(model_scenario(folder, 7.0, HOUR), folder).cpu
    preset = parse_scenario(model_scenario(folder, 7.0, {}), folder).cpu
    assert cpu.per_copy == preset.per_copy == 0
    assert cpu.per_publish == preset.per_publish < 108_000
    assert cpu.per_reader_turn == 5_000, "the costs that do not depend on signing still apply"
