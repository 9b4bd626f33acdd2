"""The up-front estimate refuses runs that cannot fit, and scales as runs do."""

from __future__ import annotations

from pathlib import Path

import pytest

from gossiplab.errors import ScenarioError
from gossiplab.estimate import BYTES_PER_CPU_SAMPLE, Estimate, check_fits, estimate
from gossiplab.scenario import parse_scenario
from gossiplab.topology import build_topology
from gossiplab.workload import build_schedule

GIB = 2**30


def estimate_for(tmp_path: Path, nodes: int, messages: int, **output: bool) -> Estimate:
    s = parse_scenario(
        {
            "topology": {"kind": "random-regular", "nodes": nodes, "degree": 8},
            "workload": {"messages": messages, "rate": "100/s"},
            "output": output,
        },
        base_dir=tmp_path,
    )
    topology = build_topology(s)
    return estimate(s, topology, build_schedule(s, nodes))


def test_memory_grows_with_recorded_receipts(tmp_path: Path) -> None:
    small = estimate_for(tmp_path, 100, 1_000)
    more_messages = estimate_for(tmp_path, 100, 4_000)
    with_receipts = estimate_for(tmp_path, 100, 1_000, receipts=True)
    assert small.deliveries == 1_000 * 99
    assert more_messages.memory_bytes > small.memory_bytes
    assert with_receipts.memory_bytes > small.memory_bytes
    assert more_messages.events > small.events


def test_a_run_that_charges_cpu_counts_a_cpu_sample_per_node_and_second(tmp_path: Path) -> None:
    def memory(cpu: dict[str, str]) -> int:
        data = {
            "topology": {"kind": "random-regular", "nodes": 100, "degree": 8},
            # 1,000 messages at 100/s from 10 s, 10 s of cooldown: 10 + 10 + 10 = 30 s.
            "workload": {"messages": 1_000, "rate": "100/s", "warmup": "10s", "cooldown": "10s"},
            "cpu": cpu,
        }
        s = parse_scenario(data, base_dir=tmp_path)
        return estimate(s, build_topology(s), build_schedule(s, 100)).memory_bytes

    # Samples at 0, 1, ..., 30 s: 31 per node (crates/engine/src/cpu_use.rs).
    extra = memory({"per_copy": "10us"}) - memory({})
    assert extra == 100 * 31 * BYTES_PER_CPU_SAMPLE


def test_a_run_that_does_not_fit_is_refused_with_the_estimate_and_a_way_out() -> None:
    too_big = Estimate(memory_bytes=30 * GIB, deliveries=10**8, events=10**9, seconds=400.0)
    with pytest.raises(ScenarioError) as caught:
        check_fits(too_big, available=16 * GIB)
    text = str(caught.value)
    assert "30.0 GiB" in text and "16.0 GiB" in text and "fewer messages" in text


def test_a_run_that_fits_passes() -> None:
    check_fits(Estimate(GIB, 10**6, 10**7, 4.0), available=16 * GIB)
    check_fits(Estimate(GIB, 10**6, 10**7, 4.0), available=None)


def test_a_run_that_would_take_days_is_refused_with_the_estimate() -> None:
    days = Estimate(memory_bytes=GIB, deliveries=10**9, events=10**12, seconds=4e5)
    with pytest.raises(ScenarioError) as caught:
        check_fits(days, available=16 * GIB)
    assert "111 hours" in str(caught.value) and "fewer nodes" in str(caught.value)
