"""Several real runs in one crosscheck (crosscheck_runs.py): their median, range and
own spread, hand-computed."""

from __future__ import annotations

import pytest

from gossiplab.backends.testbed.crosscheck import Row
from gossiplab.backends.testbed.crosscheck_figures import by_backend, legend_of
from gossiplab.backends.testbed.crosscheck_runs import (
    folder_names,
    inside,
    last_delivery_hops,
    median,
    merged,
    most_common,
    runs_table,
    spread,
)
from gossiplab.backends.testbed.crosscheck_targets import verdicts


def test_each_real_run_has_its_folder() -> None:
    assert folder_names("testbed", 1) == ["testbed"]
    assert folder_names("simnet", 3) == ["simnet", "simnet-2", "simnet-3"]


def test_the_median_leaves_out_missing_values() -> None:
    assert median([3.0, None, 1.0, 2.0]) == 2.0
    assert median([10.0, 1.0, 3.0, 2.0]) == 2.5
    assert median([None]) is None


def test_the_runs_own_spread_is_the_farthest_run_from_their_median() -> None:
    # Median 100; the farthest run is 130: 30 %.
    assert spread([90.0, 100.0, 130.0], relative=True) == pytest.approx(0.30)
    # Median 0.95; both runs 0.05 from it.
    assert spread([0.9, 1.0], relative=False) == pytest.approx(0.05)
    assert spread([5.0], relative=True) is None
    assert spread([0.0, 0.0], relative=True) == 0.0


def test_the_model_is_inside_the_range_of_two_or_more_runs() -> None:
    assert inside(95.0, [90.0, 130.0]) is True
    assert inside(89.0, [90.0, None, 130.0]) is False
    assert inside(95.0, [90.0]) is None
    assert inside(None, [90.0, 130.0]) is None


def test_the_most_common_reason_goes_to_the_earliest_run_on_a_tie() -> None:
    assert most_common(["outbound", "validation", "validation"]) == ("validation", 2)
    assert most_common(["outbound", "validation"]) == ("outbound", 1)


def test_merged_rows_keep_each_run_and_every_metric() -> None:
    first = [Row("delivery ratio", 1.0, 0.99), Row("LDH = 3 (share of messages)", 0.5, 0.4)]
    second = [Row("delivery ratio", 1.0, 0.97), Row("LDH = 4 (share of messages)", 0.0, 0.1)]
    rows = merged([first, second])
    assert [r.metric for r in rows] == [
        "delivery ratio",
        "LDH = 3 (share of messages)",
        "LDH = 4 (share of messages)",
    ]
    assert rows[0].partner == pytest.approx(0.98) and rows[0].partner_runs == (0.99, 0.97)
    assert rows[1].partner_runs == (0.4, None) and rows[1].partner == 0.4
    assert rows[2].model == 0.0 and rows[2].partner_runs == (None, 0.1)


def test_last_delivery_hops_of_every_run() -> None:
    a = {"last_delivery_hop": {"histogram": {"3": 5, "4": 1}}}
    b = {"last_delivery_hop": {"histogram": {"5": 2}}}
    assert last_delivery_hops([a, b, {}]) == frozenset({3, 4, 5})


def test_verdicts_give_the_runs_own_spread_beside_the_model_s_deviation() -> None:
    # Runs 60, 70, 100 ms: median 70, the farthest 30 from it (42.9 %); the model's 75
    # is 7.1 % off the median and inside 60-100.
    values = {"per-receipt latency p50": (75.0, 70.0)}
    runs = {"per-receipt latency p50": (60.0, 70.0, 100.0)}
    drops = [{"drops": {"by_kind": {"payload": {r: 1}}}} for r in ("a", "b", "b")]
    found = {v.metric: v for v in verdicts(values, drops[:1], drops, runs)}
    p50 = found["per-receipt latency p50"]
    assert (p50.deviation, p50.within, p50.spread, p50.inside) == ("7.1%", True, "42.9%", True)
    reason = found["main drop reason"]
    assert (reason.partner, reason.within, reason.spread) == ("b", False, "2 of 3 runs")


def test_the_model_s_drop_reason_is_its_seeds_most_common() -> None:
    # Model seeds: a, b, b (b, 2 of 3); real runs: b, b, a (b).
    seeds = [{"drops": {"by_kind": {"payload": {r: 1}}}} for r in ("a", "b", "b")]
    real = [{"drops": {"by_kind": {"payload": {r: 1}}}} for r in ("b", "b", "a")]
    reason = {v.metric: v for v in verdicts({}, seeds, real)}["main drop reason"]
    assert (reason.model, reason.partner, reason.within) == ("b (2 of 3 seeds)", "b", True)


def test_the_figures_draw_each_backend_in_one_colour_named_once() -> None:
    names = ["model", "model-2", "model-3", "testbed", "testbed-2"]
    families = by_backend(dict.fromkeys(names))  # type: ignore[arg-type]
    assert families == {"model": names[:3], "testbed": names[3:]}
    assert legend_of("model", families["model"]) == "model (3 seeds)"
    assert legend_of("testbed", families["testbed"]) == "testbed (2 runs)"
    assert legend_of("simnet", ["simnet"]) == "simnet"


def test_each_real_run_has_a_line_with_its_machine_speed() -> None:
    rows = [
        Row("per-receipt latency p50", 70.0, 80.0, "ms", partner_runs=(60.0, 100.0)),
        Row("machine speed: ns per memory load (p50)", None, 210.0, "ns", (200.4, 219.6)),
        Row("drops", 500.0, 9000.0, partner_runs=(8000.0, 10000.0)),
    ]
    headers, lines = runs_table(rows, ["testbed", "testbed-2"])
    # The columns in the table's order, whichever order the rows came in; none without
    # a row (here the node CPU and the p99).
    assert headers == ["run", "ns per memory load", "latency p50 (ms)", "drops"]
    assert lines == [["testbed", "200", "60.0", "8,000"], ["testbed-2", "220", "100.0", "10,000"]]
    assert runs_table(rows[:1], ["testbed"])[1] == [], "one run: nothing to tell apart"
