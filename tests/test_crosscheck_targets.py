"""The crosscheck's verdict against the fidelity targets (crosscheck_targets.py).

Expectations are hand-computed: a deviation is |model - real| / real (points for the
delivery ratio), within a target when at most its tolerance.
"""

from __future__ import annotations

import pytest

from gossiplab.backends.testbed.crosscheck_targets import (
    DROP_REASON,
    POINTS,
    RELATIVE,
    deviation,
    main_drop_reason,
    markdown,
    verdicts,
)


def _summary(drops: dict[str, int]) -> dict:
    return {"drops": {"by_kind": {"payload": drops}}}


def test_the_deviation_is_relative_to_the_real_value() -> None:
    # 43.0 against a real 37.1: 5.9 / 37.1 = 15.9 %, while (37.1 - 43.0) / 43.0 = -13.7 %.
    assert deviation(43.0, 37.1, RELATIVE) == pytest.approx(5.9 / 37.1)
    assert deviation(0.928, 0.997, POINTS) == pytest.approx(0.069)
    assert deviation(0.0, 0.0, RELATIVE) == 0.0
    assert deviation(1.0, 0.0, RELATIVE) is None
    assert deviation(None, 1.0, RELATIVE) is None


def test_the_main_drop_reason_is_the_most_frequent_one() -> None:
    both = {"validation-queue-full": 67_521, "outbound-queue-full": 44_634}
    assert main_drop_reason(_summary(both)) == "validation-queue-full"
    one = {"outbound-queue-full": 3, "validation-queue-full": 0}
    assert main_drop_reason(_summary(one)) == "outbound-queue-full"
    assert main_drop_reason(_summary({})) == "none"
    assert main_drop_reason({}) == "none"


def test_each_target_is_judged_at_its_tolerance() -> None:
    values = {
        "per-receipt latency p50": (43.0, 37.1),  # 15.9 %: out
        "per-receipt latency p99": (115.0, 100.0),  # 15 % exactly: in
        "payload bytes sent": (1_000.0, 1_120.0),  # 10.7 %: out
        "duplicates per node per message": (3.25, 3.44),  # 5.5 %: in
        "delivery ratio": (0.928, 0.997),  # 6.9 points: in
    }
    found = verdicts(
        values, [_summary({"validation-queue-full": 5})], [_summary({"outbound-queue-full": 9})]
    )
    within = {v.metric: v.within for v in found}
    assert within == {
        "per-receipt latency p50": False,
        "per-receipt latency p99": True,
        "payload bytes sent": False,
        "duplicates per node per message": True,
        "delivery ratio": True,
        DROP_REASON: False,
    }
    table = markdown(found, "testbed")
    assert "| per-receipt latency p50 | within 15% | 43 | 37.1 | 15.9% | no |" in table
    assert "| delivery ratio | within 10 points | 0.928 | 0.997 | 6.9 points | yes |" in table


def test_a_missing_value_is_not_judged() -> None:
    found = verdicts({}, [_summary({})], [_summary({})])
    assert [v.within for v in found] == [None] * 5 + [True]
