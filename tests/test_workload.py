"""The publish schedule: timing, publishers, batches, topics, determinism."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gossiplab.errors import ScenarioError
from gossiplab.scenario import Scenario, load_scenario, parse_scenario
from gossiplab.workload import Schedule, build_schedule, end_time_ns

REPO = Path(__file__).resolve().parent.parent


def scenario(workload: dict[str, Any], nodes: int = 20, seed: int = 1) -> Scenario:
    data = {"seed": seed, "topology": {"kind": "full", "nodes": nodes}, "workload": workload}
    return parse_scenario(data, Path("."))


def test_uniform_200_per_second_for_180_seconds() -> None:
    s = scenario({"rate": "200/s", "duration": "180s", "warmup": "10s"}, nodes=95)
    schedule = build_schedule(s, 95)
    assert len(schedule) == 36_000
    assert schedule.t_intended_ns[0] == 10_000_000_000
    assert (np.diff(schedule.t_intended_ns) == 5_000_000).all()
    assert schedule.t_intended_ns.dtype == np.int64
    assert schedule.publisher.dtype == np.uint32
    assert schedule.size.dtype == np.uint32
    assert schedule.topic.dtype == np.uint16
    assert schedule.batch.dtype == np.uint32
    assert (schedule.size == 1000).all()
    assert schedule.publisher.max() < 95
    assert end_time_ns(s, schedule) == 10_000_000_000 + 35_999 * 5_000_000 + 10_000_000_000


def test_whiteblock_scenario_schedule() -> None:
    s = load_scenario(REPO / "scenarios/whiteblock/phase2-series1b.toml")
    schedule = build_schedule(s, s.topology.nodes)
    assert len(schedule) == 36_000
    assert schedule.t_intended_ns[0] == s.workload.warmup == 10_000_000_000


def test_uniform_spacing_does_not_accumulate_rounding() -> None:
    s = scenario({"messages": 3000, "rate": "3/s"})  # 333.33... ms apart
    t = build_schedule(s, 20).t_intended_ns - s.workload.warmup
    assert t[2999] == round(2999 * 1e9 / 3)
    assert set(np.diff(t).tolist()) <= {333_333_333, 333_333_334}


def test_batches_publish_together_from_distinct_nodes() -> None:
    s = scenario({"messages": 10, "batch": 3, "rate": "30/s"})
    schedule = build_schedule(s, 20)
    assert schedule.batch.tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3]
    # Three messages per batch at 30 msg/s: one batch every 100 ms.
    offsets = (schedule.t_intended_ns - s.workload.warmup).tolist()
    assert offsets == [0] * 3 + [100_000_000] * 3 + [200_000_000] * 3 + [300_000_000]
    for j in range(4):
        publishers = schedule.publisher[schedule.batch == j]
        assert len(set(publishers.tolist())) == len(publishers)


def test_a_batch_from_the_same_publisher() -> None:
    s = scenario({"messages": 10, "batch": 4, "rate": "40/s", "batch_publisher": "same"})
    schedule = build_schedule(s, 20)
    assert schedule.batch.tolist() == [0, 0, 0, 0, 1, 1, 1, 1, 2, 2]
    offsets = (schedule.t_intended_ns - s.workload.warmup).tolist()
    assert offsets == [0] * 4 + [100_000_000] * 4 + [200_000_000] * 2
    for j in range(3):
        assert len(set(schedule.publisher[schedule.batch == j].tolist())) == 1
    # Batches of one draw their publisher the same way whichever the setting.
    one = {"messages": 30, "rate": "10/s"}
    same = build_schedule(scenario({**one, "batch_publisher": "same"}), 20)
    assert same == build_schedule(scenario(one), 20)


def test_a_batch_larger_than_the_publishers_needs_the_same_publisher() -> None:
    single = {"messages": 8, "batch": 8, "publishers": [0]}
    with pytest.raises(ScenarioError, match=r"workload\.batch: must be <= the number"):
        scenario(single)
    schedule = build_schedule(scenario({**single, "batch_publisher": "same"}), 20)
    assert schedule.publisher.tolist() == [0] * 8
    assert len(set(schedule.t_intended_ns.tolist())) == 1


def test_topics_round_robin() -> None:
    schedule = build_schedule(scenario({"messages": 7, "topics": 3}), 20)
    assert schedule.topic.tolist() == [0, 1, 2, 0, 1, 2, 0]


def test_fixed_publishers() -> None:
    schedule = build_schedule(scenario({"messages": 200, "publishers": [3, 7]}), 20)
    assert set(schedule.publisher.tolist()) == {3, 7}


def test_random_publishers_cover_the_nodes() -> None:
    schedule = build_schedule(scenario({"messages": 2000}), 20)
    assert set(schedule.publisher.tolist()) == set(range(20))


def test_poisson_arrival() -> None:
    s = scenario({"messages": 20_000, "rate": "100/s", "arrival": "poisson"})
    t = build_schedule(s, 20).t_intended_ns
    assert t[0] == s.workload.warmup
    gaps = np.diff(t)
    assert (gaps >= 0).all()
    assert gaps.mean() == pytest.approx(10_000_000, rel=0.03)
    assert gaps.std() == pytest.approx(10_000_000, rel=0.05)  # exponential: std = mean


def test_publishers_do_not_depend_on_arrival() -> None:
    uniform = build_schedule(scenario({"messages": 50}), 20)
    poisson = build_schedule(scenario({"messages": 50, "arrival": "poisson"}), 20)
    assert uniform.publisher.tolist() == poisson.publisher.tolist()


def test_deterministic_and_seed_dependent() -> None:
    assert build_schedule(scenario({"messages": 100}), 20) == build_schedule(
        scenario({"messages": 100}), 20
    )
    other = build_schedule(scenario({"messages": 100}, seed=2), 20)
    assert other != build_schedule(scenario({"messages": 100}), 20)


def test_the_workload_seed_fixes_the_schedule_whatever_the_scenario_seed() -> None:
    poisson = {"messages": 100, "arrival": "poisson"}
    # The scenario seed 4 alone draws the same schedule as seed 9 with [workload] seed 4.
    alone = build_schedule(scenario(poisson, seed=4), 20)
    pinned = build_schedule(scenario({**poisson, "seed": 4}, seed=9), 20)
    assert pinned == alone
    assert build_schedule(scenario(poisson, seed=9), 20) != alone


def test_a_workload_seed_out_of_range_is_refused_by_name() -> None:
    with pytest.raises(ScenarioError, match=r"workload\.seed"):
        scenario({"messages": 10, "seed": -1})


def test_schedule_is_read_only() -> None:
    schedule: Schedule = build_schedule(scenario({"messages": 3}), 20)
    with pytest.raises(ValueError):
        schedule.publisher[0] = 1


def test_publisher_beyond_given_nodes_is_a_scenario_error() -> None:
    s = scenario({"messages": 3, "publishers": [15]})
    with pytest.raises(ScenarioError) as err:
        build_schedule(s, 10)
    assert err.value.problems[0].path == "workload.publishers"


def test_quick_example() -> None:
    s = load_scenario(REPO / "scenarios/examples/quick.toml")
    schedule = build_schedule(s, s.topology.nodes)
    assert len(schedule) == 200
    assert (np.diff(schedule.t_intended_ns) == 20_000_000).all()
    assert s.network.latency == 50_000_000
