"""[cpu] event_loop: the schema, what reaches the engine, and where it is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from gossiplab.backends.model import engine_config
from gossiplab.errors import ScenarioError
from gossiplab.scenario import parse_scenario

HERE = Path(__file__).parent


def test_the_engine_gets_the_event_loop_and_its_costs_in_nanoseconds() -> None:
    cpu = {
        "nodes_per_host": 40,
        "event_loop": True,
        "per_rpc_loop": "3us",
        "per_publish_loop": "7us",
        "per_forward_loop": "2us",
        "per_app_message": "5us",
    }
    s = parse_scenario({"cpu": cpu}, HERE)
    engine = engine_config(s, 40, 10**9)["cpu"]
    names = (
        "event_loop",
        "per_rpc_loop_ns",
        "per_publish_loop_ns",
        "per_forward_loop_ns",
        "per_app_message_ns",
    )
    assert tuple(engine[n] for n in names) == (True, 3000, 7000, 2000, 5000)
    off = engine_config(parse_scenario({}, HERE), 40, 10**9)["cpu"]
    assert tuple(off[n] for n in names) == (False, 0, 0, 0, 0)


def test_the_application_s_cost_is_refused_without_the_event_loop() -> None:
    # The application's goroutine reads what the loop delivers (pubsub.go:notifySubs).
    with pytest.raises(ScenarioError, match=r"cpu\.per_app_message.*event_loop = true"):
        parse_scenario({"cpu": {"nodes_per_host": 40, "per_app_message": "5us"}}, HERE)


def test_the_event_loop_is_refused_on_a_host_that_is_not_time_sliced() -> None:
    with pytest.raises(ScenarioError, match=r"cpu\.event_loop.*nodes_per_host"):
        parse_scenario({"cpu": {"event_loop": True, "nodes_per_host": 2, "cores": 2}}, HERE)
