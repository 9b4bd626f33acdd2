"""bench/cpu_fit_turns.py splits a goroutine's CPU into a part per item and a part per
turn: checked on points made from known costs, where the split is exact."""

from __future__ import annotations

import sys
from pathlib import Path

import polars as pl
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from cpu_fit_turns import fit


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
