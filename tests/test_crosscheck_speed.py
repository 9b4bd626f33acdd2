"""The crosscheck's note when the real nodes run at another speed than the measured
costs assume (crosscheck_speed.py). Expectations are hand-computed from the nodes' CPU
while publishing: a note beyond 15 % apart, below 95 % of the nodes' cores."""

from __future__ import annotations

from gossiplab.backends.testbed.crosscheck_speed import speed_note


def _cpu(cores: float) -> dict:
    return {"cpu": {"cores_all_nodes": cores}}


def test_a_slower_machine_is_named_with_the_difference_and_the_refit() -> None:
    # 0.527 against 0.324: 0.527 / 0.324 - 1 = +63 %.
    note = speed_note(True, 1, _cpu(0.324), _cpu(0.527))
    assert "+63%" in note and "slower" in note
    assert "per_node_wakeup" in note and "bench/cpu_fit_wakeup.py" in note
    assert "bench/cpu_fit_turns.py" in note and "bench/cpu_refit.py" in note
    assert "--cpu-costs" in note
    assert "faster" in speed_note(True, 1, _cpu(0.4), _cpu(0.3))  # 0.3 / 0.4 - 1 = -25 %


def test_within_the_calibration_s_own_spread_nothing_is_said() -> None:
    # 0.524 against 0.490: +6.9 %; 0.56 against 0.49: +14.3 %.
    assert speed_note(True, 1, _cpu(0.490), _cpu(0.524)) == ""
    assert speed_note(True, 1, _cpu(0.49), _cpu(0.56)) == ""


def test_saturated_nodes_and_other_costs_tell_nothing() -> None:
    # 0.96 of one core is past 95 %: the core's limit, whatever the speed.
    assert speed_note(True, 1, _cpu(0.70), _cpu(0.96)) == ""
    # Two cores: 0.96 is under 1.9, so it tells.
    assert speed_note(True, 2, _cpu(0.70), _cpu(0.96)) != ""
    assert speed_note(False, 1, _cpu(0.3), _cpu(0.5)) == ""
    assert speed_note(True, None, _cpu(0.3), _cpu(0.5)) == ""
    assert speed_note(True, 1, {}, _cpu(0.5)) == ""
