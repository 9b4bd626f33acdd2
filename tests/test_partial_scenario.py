"""[workload.partial]: the schema, its refusals, and the roles and mempool draws every backend
shares (backends/partial_plan.py)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gossiplab.backends import model
from gossiplab.backends.partial_plan import _uniforms, draw_partial_plan
from gossiplab.backends.simnet import support as simnet_support
from gossiplab.backends.testbed import support as testbed_support
from gossiplab.errors import ScenarioError
from gossiplab.rng import SplitMix64
from gossiplab.scenario import Scenario, parse_scenario, scenario_to_toml
from gossiplab.workload import build_schedule

V13 = {"version": "1.3", "message_id": "ethereum"}


def scenario(partial: dict[str, Any], nodes: int = 20, **workload: Any) -> Scenario:
    data = {
        "topology": {"kind": "full", "nodes": nodes},
        "protocol": V13,
        "workload": {"messages": 6, "batch": 3, "partial": partial, **workload},
    }
    return parse_scenario(data, Path("."))


def problems(data: dict[str, Any]) -> set[str]:
    with pytest.raises(ScenarioError) as err:
        parse_scenario(data, Path("."))
    return {p.path for p in err.value.problems}


def test_the_message_size_is_the_groups_full_size() -> None:
    s = scenario({"parts": 6, "part_size": "2KiB", "part_overhead": "48B", "full_overhead": "100B"})
    assert s.workload.size == 6 * (2048 + 48) + 100
    # Written out resolved, the size agrees and the scenario reads back the same.
    assert parse_scenario(tomllib.loads(scenario_to_toml(s)), Path(".")) == s


def test_a_size_that_disagrees_is_refused() -> None:
    data = {"protocol": V13, "workload": {"size": "1000B", "partial": {"parts": 2}}}
    assert problems(data) == {"workload.size"}


def test_partial_needs_v13_and_content_ids() -> None:
    assert problems({"workload": {"partial": {}}}) == {
        "workload.partial",
        "workload.partial.full_fallback",
    }
    no_fallback = {
        "protocol": {"version": "1.3"},
        "workload": {"partial": {"full_fallback": False}},
    }
    parse_scenario(no_fallback, Path("."))  # go's ids are fine when nothing is re-published


def test_field_refusals_name_the_field() -> None:
    def bad(partial: dict[str, Any]) -> set[str]:
        return problems({"protocol": V13, "workload": {"partial": partial}})

    assert bad({"parts": 129}) == {"workload.partial.parts"}
    assert bad({"rule": "lighthouse"}) == {"workload.partial.rule"}
    assert bad({"mempool": {"p": 0.5, "missing": 1}}) == {"workload.partial.mempool.missing"}
    assert bad({"mempool": {"p": 1.5}}) == {"workload.partial.mempool.p"}
    assert bad({"parts": 4, "mempool": {"missing": 5}}) == {"workload.partial.mempool.missing"}
    assert bad({"roles": {"requests": 0.7, "supports": 0.4}}) == {"workload.partial.roles.supports"}
    assert bad({"eagerpush": True}) == {"workload.partial.eagerpush"}


def test_backends_refuse_what_they_cannot_run() -> None:
    s = scenario({})
    assert {p.path for p in testbed_support.unsupported_features(s)} >= {
        "workload.partial",
        "protocol.version",
    }
    assert "workload.partial" in {p.path for p in simnet_support.unsupported_features(s)}
    aggregate = parse_scenario(
        {"protocol": V13, "workload": {"partial": {}}, "output": {"mode": "aggregate"}}, Path(".")
    )
    assert "workload.partial" in {p.path for p in model.unsupported_features(aggregate)}
    assert model.unsupported_features(s) == []


def test_disabled_partial_messages_are_full_messages_of_the_same_size() -> None:
    s = scenario({"enabled": False, "parts": 4})
    assert s.workload.size == 4 * (2048 + 48)
    assert model.partial_config(s, build_schedule(s, 20)) is None


def test_roles_split_the_nodes_and_publishers_request() -> None:
    s = scenario(
        {"roles": {"requests": 0.25, "supports": 0.5}}, nodes=40, publishers=[0, 1], batch=2
    )
    plan = draw_partial_plan(s, build_schedule(s, 40), s.seed)
    assert plan.roles[0] == plan.roles[1] == "requests"
    others = plan.roles[2:]
    # round(0.25 × 40) = 10 request, round(0.5 × 40) = 20 support; publishers 0 and 1 may
    # have been drawn in any of the three.
    assert 8 <= others.count("requests") <= 10
    assert 18 <= others.count("supports") <= 20
    assert plan.roles.count("requests") + plan.roles.count("supports") + plan.roles.count(
        "none"
    ) == len(plan.roles)
    assert plan.roles.count("none") >= 40 - 10 - 20 - 2


def test_exactly_k_missing_parts() -> None:
    s = scenario({"parts": 16, "mempool": {"missing": 3}, "roles": {"requests": 0.5}})
    schedule = build_schedule(s, 20)
    plan = draw_partial_plan(s, schedule, s.seed)
    everything = (1 << 16) - 1
    for row, held in enumerate(plan.held):
        publisher = int(schedule.publisher[row])
        for node, bits in enumerate(held):
            if node == publisher:
                assert bits == everything
            elif plan.roles[node] == "none":
                assert bits == 0
            else:
                assert bin(bits).count("1") == 13


def test_groups_of_a_block_share_the_draw_and_blocks_differ() -> None:
    s = scenario({"parts": 48, "mempool": {"p": 0.5}}, publishers=[0, 1, 2])
    plan = draw_partial_plan(s, build_schedule(s, 20), s.seed)
    # Rows 0-2 are batch 0 and rows 3-5 batch 1; node 5 publishes nothing.
    assert plan.held[0][5] == plan.held[1][5] == plan.held[2][5]
    assert plan.held[3][5] == plan.held[4][5]
    assert plan.held[0][5] != plan.held[3][5]


@pytest.mark.parametrize("p", [0.0, 0.3, 0.9, 1.0])
def test_the_held_share_is_p(p: float) -> None:
    s = scenario({"parts": 128, "mempool": {"p": p}}, nodes=200, publishers=[0], batch=1)
    plan = draw_partial_plan(s, build_schedule(s, 200), s.seed)
    held = [bin(bits).count("1") for bits in plan.held[0][1:]]
    share = sum(held) / (128 * len(held))
    # 25,472 Bernoulli draws: the standard error is at most 0.0032.
    assert abs(share - p) < 0.015


def test_vectorised_uniforms_are_splitmix64s() -> None:
    for seed in (0, 1, 2**64 - 1, 0x1234_5678_9ABC_DEF0):
        reference = SplitMix64(seed)
        with np.errstate(over="ignore"):
            fast = _uniforms(seed, 50)
        assert fast.tolist() == [reference.uniform() for _ in range(50)]


def test_the_plan_is_deterministic_and_reads_back_from_json() -> None:
    s = scenario({"parts": 10, "mempool": {"p": 0.6}, "roles": {"requests": 0.6, "supports": 0.2}})
    schedule = build_schedule(s, 20)
    plan = draw_partial_plan(s, schedule, s.seed)
    assert draw_partial_plan(s, schedule, s.seed) == plan
    data = json.loads(plan.to_json())
    assert data["parts"] == 10
    assert tuple(data["roles"]) == plan.roles
    assert [[int(h, 16) for h in group] for group in data["held"]] == [
        list(group) for group in plan.held
    ]
    other = draw_partial_plan(s, schedule, s.seed + 1)
    assert other.held != plan.held
