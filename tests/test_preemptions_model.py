"""bench/preemptions.py's model side on a hand-written goroutine_waits table: the model's
sysmon rounds counted over the kernel's recorded seconds."""

from __future__ import annotations

import sys
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).parents[1] / "bench"))
from preemptions import model_sysmon_line

S = 1_000_000_000


def _waits(rows: list[tuple[int, str, int, int]], folder: Path) -> Path:
    frame = pl.DataFrame(
        rows, schema=["node", "goroutine", "t_ns", "wait_ns"], orient="row"
    ).with_columns(pl.col("wait_ns").cast(pl.UInt64))
    frame.write_parquet(folder / "goroutine_waits.parquet")
    return folder


def test_the_model_s_sysmon_rounds_are_counted_inside_the_window(tmp_path: Path) -> None:
    # Window [4 s, 5 s): three rounds inside (one after a 70 µs wait), one before it, one
    # at its end (outside), and a node thread's wait, which is not a round.
    run = _waits(
        [
            (0, "sysmon", 3 * S, 0),
            (0, "sysmon", 4 * S, 0),
            (1, "sysmon", 4 * S + 70_000, 70_000),
            (1, "node thread", 4 * S + 5, 9_000),
            (2, "sysmon", 5 * S - 1, 0),
            (2, "sysmon", 5 * S, 0),
        ],
        tmp_path,
    )
    line = model_sysmon_line(run, 4.0, 1.0)
    assert line.startswith("the model's sysmon threads run 3 rounds a second, 1 of them after")


def test_a_model_without_sysmon_says_so(tmp_path: Path) -> None:
    run = _waits([(1, "node thread", 5 * S, 9_000)], tmp_path)
    assert "no sysmon" in model_sysmon_line(run, 4.0, 2.0)
