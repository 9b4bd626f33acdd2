"""bench/cpu_fit_turns.py splits a goroutine's CPU into a part per item and a part per
turn: checked on points made from known costs, where the split is exact."""

from __future__ import annotations

import sys
from pathlib import Path

import polars as pl
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from cpu_calibration import _window
from cpu_fit_turns import fit, profiled_cpu_s


def test_the_fit_recovers_a_scale_and_a_cost_per_turn() -> None:
    # Four loads: the model's item costs (µs) and turns grow apart, as items per turn grow
    # with load; CPU = 0.6 × item costs + 4.5 µs per turn, exactly.
    model_us = [1_000.0, 2_000.0, 3_000.0, 4_000.0]
    turns = [150.0, 120.0, 60.0, 30.0]
    rows = pl.DataFrame(
        {
            "model_us": model_us,
            "turns": turns,
            "cpu_us": [0.6 * m + 4.5 * t for m, t in zip(model_us, turns, strict=True)],
        }
    )
    scale, turn, rms = fit(rows)
    assert scale == pytest.approx(0.6)
    assert turn == pytest.approx(4.5)
    assert rms == pytest.approx(0.0, abs=1e-9)


def test_points_without_turns_are_left_out() -> None:
    rows = pl.DataFrame(
        {
            "model_us": [1_000.0, 2_000.0, 3_000.0],
            "turns": [100.0, 50.0, float("nan")],
            "cpu_us": [1_100.0, 2_050.0, 99_999.0],
        }
    )
    scale, turn, _ = fit(rows)
    assert (scale, turn) == (pytest.approx(1.0), pytest.approx(1.0))


def _resources(sysmon: list[tuple[float, int]] | None) -> pl.DataFrame:
    """Node 0 sampled at 0, 1 and 2 s: 0.5 CPU seconds a second, sysmon's part `sysmon`."""
    rows = {"node": [0, 0, 0], "t_ns": [0, 1_000_000_000, 2_000_000_000]}
    rows |= {"cpu_s": [0.0, 0.5, 1.0]}
    rows |= {c: [0, 0, 0] for c in ("read_syscalls", "write_syscalls", "voluntary_switches")}
    if sysmon is not None:
        rows |= {"sysmon_cpu_s": [s for s, _ in sysmon], "sysmon_runs": [r for _, r in sysmon]}
    return pl.DataFrame(rows)


def test_the_profiled_cpu_leaves_sysmon_s_out_where_the_testbed_recorded_it() -> None:
    # The profiler does not sample sysmon (no P): the profile's shares are of the node's
    # CPU less sysmon's, over the same window: 1.0 - 0.1 s from 1 to 2 s here.
    window = _window(_resources([(0.0, 0), (0.1, 1_000), (0.2, 2_000)]), 1_000_000_000)
    row = window.row(0, named=True)
    assert row["sysmon_runs"] == 1_000
    assert profiled_cpu_s(row) == pytest.approx(0.4)
    # Runs that did not record it (older, or a thread unread: -1) keep the whole CPU.
    for unread in (None, [(-1.0, -1)] * 3):
        row = _window(_resources(unread), 1_000_000_000).row(0, named=True)
        assert "sysmon_cpu_s" not in row
        assert profiled_cpu_s(row) == pytest.approx(0.5)
