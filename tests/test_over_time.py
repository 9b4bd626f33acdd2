"""Outcomes by time of publication (`analysis/over_time.py`) and the crosscheck's section
built on them, on hand-built messages and receipts whose per-interval values are worked
out by hand below."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from gossiplab.analysis.metrics import Measured
from gossiplab.analysis.over_time import by_publish_time, interval_ns
from gossiplab.backends.testbed import crosscheck_over_time as section
from gossiplab.report.over_time_plot import draw_over_time
from gossiplab.runner import run
from gossiplab.scenario import parse_scenario

MS = 1_000_000
S = 1_000_000_000


def measured(
    intended_s: list[float],
    targets: list[int],
    delivered: list[int],
    latencies_ms: dict[int, list[float]],
) -> Measured:
    """Messages 0..n-1 intended at ``intended_s`` (from 5 s), with their receipts."""
    messages = pl.DataFrame(
        {
            "msg": list(range(len(intended_s))),
            "t_intended_ns": [5 * S + int(t * S) for t in intended_s],
            "targets": targets,
            "delivered": delivered,
        },
        schema={
            "msg": pl.UInt32,
            "t_intended_ns": pl.Int64,
            "targets": pl.Int64,
            "delivered": pl.Int64,
        },
    )
    receipts = pl.DataFrame(
        {
            "msg": [m for m, ls in latencies_ms.items() for _ in ls],
            "latency_ns": [int(lat * MS) for ls in latencies_ms.values() for lat in ls],
        },
        schema={"msg": pl.UInt32, "latency_ns": pl.Int64},
    )
    return Measured(messages, receipts, len(intended_s))


def test_the_interval_is_the_smallest_round_width_giving_at_most_twenty() -> None:
    assert interval_ns(0) == S // 10
    assert interval_ns(int(1.99 * S)) == S // 10  # 20 intervals of 0.1 s
    assert interval_ns(2 * S) == S // 5  # 2 s / 0.1 s would be 21 intervals (0 to 20)
    assert interval_ns(int(9.995 * S)) == S // 2
    assert interval_ns(10 * S) == S
    assert interval_ns(10**6 * S) == 3600 * S


def test_delivery_and_nearest_rank_latency_per_interval() -> None:
    # Interval 0 (0-1 s): messages 0 and 1, 3 + 3 of 3 + 3 delivered; receipts 10..60 ms:
    # p50 is the 3rd of 6 (30), p99 the 6th (60). Interval 1 (1-2 s): messages 2 and 3,
    # 2 + 1 of 3 + 3 delivered: 0.5; receipts 100, 5, 7 ms sorted 5, 7, 100: p50 the 2nd
    # (7), p99 the 3rd (100). Message 4 expects nobody and is left out.
    m = measured(
        [0.0, 0.3, 1.2, 1.4, 1.5],
        [3, 3, 3, 3, 0],
        [3, 3, 2, 1, 0],
        {0: [10, 20, 30], 1: [40, 50, 60], 2: [100, 5], 3: [7]},
    )
    table = by_publish_time(m, S)
    assert table.to_dicts() == [
        {
            "from_s": 0.0,
            "messages": 2,
            "delivery_ratio": 1.0,
            "latency_p50_ms": 30.0,
            "latency_p99_ms": 60.0,
        },
        {
            "from_s": 1.0,
            "messages": 2,
            "delivery_ratio": 0.5,
            "latency_p50_ms": 7.0,
            "latency_p99_ms": 100.0,
        },
    ]


def test_without_receipts_the_latency_is_unknown_and_the_delivery_still_counts() -> None:
    m = measured([0.0, 0.05], [4, 4], [4, 2], {})
    table = by_publish_time(m)
    assert table.to_dicts() == [
        {
            "from_s": 0.0,
            "messages": 2,
            "delivery_ratio": 0.75,
            "latency_p50_ms": None,
            "latency_p99_ms": None,
        }
    ]


def test_an_interval_without_receipts_has_no_latency() -> None:
    m = measured([0.0, 1.0], [2, 2], [2, 0], {0: [12, 14]})
    table = by_publish_time(m, S)
    assert table["latency_p50_ms"].to_list() == [12.0, None]
    assert table["delivery_ratio"].to_list() == [1.0, 0.0]


def test_both_backends_share_the_intervals_of_the_longer_schedule(tmp_path: Path) -> None:
    # The model's schedule spans 1.5 s (0.1 s intervals), the partner's 2.5 s: 0.2 s for both.
    model = measured([0.0, 1.5], [1, 1], [1, 1], {0: [10], 1: [20]})
    partner = measured([0.0, 2.5], [1, 1], [1, 0], {0: [11]})
    frames = section.by_backend({"model": model, "testbed": partner})
    table = section.side_by_side(frames)
    assert table["from_s"].to_list() == pytest.approx([0.0, 1.4, 2.4])
    assert table["latency_p50_ms_model"].to_list() == [10.0, 20.0, None]
    assert table["delivery_ratio_testbed"].to_list() == [1.0, None, 0.0]
    text = section.markdown(table, ["model", "testbed"])
    assert "| latency p50 (ms), model / testbed |" in text
    assert "| 0.0 | 1 / 1 | 1.000 / 1.000 | 10.0 / 11.0 | 10.0 / 11.0 |" in text
    assert "| 1.4 | 1 / – | 1.000 / – | 20.0 / – | 20.0 / – |" in text
    assert "| 2.4 | – / 1 | – / 0.000 | – / – | – / – |" in text
    figure = draw_over_time(frames, tmp_path / "over-time.png")
    assert figure.read_bytes().startswith(b"\x89PNG")
    assert "<th>delivery ratio, model / testbed</th>" in section.html_table(
        table, ["model", "testbed"]
    )


def test_a_run_report_draws_latency_and_delivery_by_time_of_publication(tmp_path: Path) -> None:
    # 12 messages over 2.2 s: 0.2 s intervals, more than one, so the figure is drawn.
    data = {
        "topology": {"kind": "line", "nodes": 4},
        "workload": {"messages": 12, "rate": "5/s", "publishers": [0]},
    }
    out = run(parse_scenario(data, tmp_path), tmp_path / "run").out_dir
    assert (out / "plots" / "by_publish_time.png").read_bytes().startswith(b"\x89PNG")
    assert "Latency and delivery by time of publication" in (out / "report.html").read_text()
