"""Node CPU use: the model's resources table, the analysis every backend shares, and where
it shows (summary.json's cpu section, the report, the crosscheck table)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest

from gossiplab.analysis.cpu_use import cpu_at, cpu_text, cpu_while_publishing, machine_speed_text
from gossiplab.analysis.tables import from_rows
from gossiplab.backends.testbed.crosscheck import table_rows
from gossiplab.runner import run
from gossiplab.scenario import parse_scenario

S = 1_000_000_000
MS = 1_000_000


def _publishes(*times_ns: int) -> pl.DataFrame:
    return from_rows("publishes", [(i, 0, t, t, 100, 0, i, 0, 0) for i, t in enumerate(times_ns)])


def _resources(rows: list[tuple[int, int, float]]) -> pl.DataFrame:
    # As the model writes it: no memory, syscalls or switches.
    return from_rows(
        "resources",
        [(node, t, cpu, None, None, None, None, None, None, None) for node, t, cpu in rows],
    )


HAND_MADE = _resources(
    [
        # Node 0: 0.5 CPU s in the first second, 1 in the second.
        (0, 0, 0.0),
        (0, 1 * S, 0.5),
        (0, 2 * S, 1.5),
        # Node 1: its samples stop at 1.5 s, before the window ends.
        (1, 500 * MS, 0.2),
        (1, 1_500 * MS, 0.4),
        # Node 2: sampled at the window's bounds exactly.
        (2, 750 * MS, 1.0),
        (2, 1_750 * MS, 1.25),
    ]
)


def test_a_node_s_cpu_between_two_samples_is_interpolated_linearly() -> None:
    at = cpu_at(HAND_MADE, 750 * MS)
    # Node 0: 0 + 0.75 × 0.5; node 1: 0.2 + 0.25 × 0.2; node 2: its sample.
    assert at["node"].to_list() == [0, 1, 2]
    assert at["cpu_s"].to_list() == pytest.approx([0.375, 0.25, 1.0])
    # After node 1's last sample: unknown, so node 1 is left out.
    assert cpu_at(HAND_MADE, 1_750 * MS)["node"].to_list() == [0, 2]


def test_cpu_while_publishing_spans_the_first_to_the_last_publication() -> None:
    # Published at 0.75 s and 1.75 s (the message at -1 never was): a window of 1 s.
    # Node 0: 0.5 + 0.75 × 1.0 − 0.375 = 0.875 cores; node 2: 0.25; node 1 left out.
    publishes = _publishes(1_750 * MS, 750 * MS, -1, 1_000 * MS)
    cpu = cpu_while_publishing(HAND_MADE, publishes)
    assert cpu is not None
    assert (cpu["publishing_from_ns"], cpu["publishing_to_ns"]) == (750 * MS, 1_750 * MS)
    assert cpu["nodes_measured"] == 2
    assert cpu["cores_all_nodes"] == pytest.approx(1.125)
    assert cpu["cores_per_node_mean"] == pytest.approx(0.5625)
    assert cpu["cores_per_node_max"] == pytest.approx(0.875)


def _read_counts(**columns: list[float]) -> dict[str, Any]:
    """The CPU section over 0.75 s - 1.75 s of HAND_MADE with the named columns' values,
    one per sample in its order."""
    table = HAND_MADE.with_columns(
        pl.Series(name, values, dtype=HAND_MADE.schema[name]) for name, values in columns.items()
    )
    cpu = cpu_while_publishing(table, _publishes(750 * MS, 1_750 * MS))
    assert cpu is not None
    return cpu


def test_the_sysmon_threads_part_is_read_as_the_cpu_is() -> None:
    # Node 0's sysmon ran 0.1 s in each second: 0.1 cores over 0.75 s - 1.75 s; node 2's
    # 0.05 between its two samples, which are the window's bounds. Node 1 left out. Node
    # 0's ran 1,000 times a second, node 2's 500 times in its second: 1,500 runs a
    # second, 0.15 s / 1,500 = 100 µs a run.
    cpu = _read_counts(
        sysmon_cpu_s=[0.0, 0.1, 0.2, 0.0, 0.3, 0.0, 0.05],
        sysmon_runs=[0, 1_000, 2_000, 0, 9, 0, 500],
    )
    assert cpu["sysmon_cores_all_nodes"] == pytest.approx(0.15)
    assert cpu["sysmon_runs_per_s_all_nodes"] == pytest.approx(1_500)
    assert cpu["sysmon_us_per_run"] == pytest.approx(100)
    text = cpu_text({"cpu": cpu}) or ""
    assert "Go's sysmon threads 0.150 of them (1,500 runs a second, 100.0 µs each)" in text
    # The model's table has none.
    assert "sysmon_cores_all_nodes" not in (cpu_while_publishing(HAND_MADE, _publishes(0, S)) or {})


def test_the_threads_blocks_and_preemptions_are_read_as_the_cpu_is() -> None:
    # Node 0's threads blocked 400 times in each second and were preempted 30 times:
    # 400 and 30 a second over 0.75 s - 1.75 s; node 2's 100 and 20 times between its
    # samples at the window's bounds. Node 1 left out.
    cpu = _read_counts(
        voluntary_switches=[0, 400, 800, 0, 7, 10, 110],
        involuntary_switches=[0, 30, 60, 0, 1, 5, 25],
    )
    assert cpu["voluntary_switches_per_s_all_nodes"] == pytest.approx(500)
    assert cpu["involuntary_switches_per_s_all_nodes"] == pytest.approx(50)
    text = cpu_text({"cpu": cpu}) or ""
    assert "threads blocked 500 times a second, preempted 50 times" in text
    for key in ("voluntary_switches_per_s_all_nodes", "involuntary_switches_per_s_all_nodes"):
        assert key not in (cpu_while_publishing(HAND_MADE, _publishes(0, S)) or {})


def test_no_cpu_section_without_samples_or_a_publishing_span() -> None:
    assert cpu_while_publishing(None, _publishes(0, S)) is None
    assert cpu_while_publishing(HAND_MADE, _publishes(S)) is None, "one publication: no span"
    assert cpu_while_publishing(HAND_MADE, _publishes(-1, -1)) is None


# Three floodsub nodes, all connected, 10 ms links; node 0 publishes a 100-byte message at
# 1.5 s, 2.5 s and 3.5 s; the run ends at 4 s. As in crates/engine/tests/cpu_use.rs:
# hellos cost each node 2 writes and 2 reads (10 ms); per message node 0 signs and writes
# two copies (1 + 2 × 2 = 5 ms), nodes 1 and 2 each read, validate, forward to the other
# and read the other's copy, already seen (3 + 5 + 2 + 3 = 13 ms).
SCENARIO: dict[str, Any] = {
    "seed": 3,
    "topology": {"kind": "full", "nodes": 3},
    "protocol": {"name": "floodsub"},
    "network": {"latency": "10ms"},
    "workload": {
        "messages": 3,
        "rate": "1/s",
        "size": "100B",
        "publishers": [0],
        "warmup": "1500ms",
        "cooldown": "500ms",
    },
    "cpu": {
        "per_publish": "1ms",
        "per_rpc_sent": "2ms",
        "per_rpc_received": "3ms",
        "per_copy": "5ms",
    },
}
PER_MESSAGE_S = [0.005, 0.013, 0.013]
HELLOS_S = 0.010


def test_the_model_writes_each_node_s_cpu_seconds_and_no_memory(tmp_path: Path) -> None:
    result = run(parse_scenario(SCENARIO, tmp_path), tmp_path / "run")
    resources = pl.read_parquet(result.out_dir / "resources.parquet")
    assert resources["t_ns"].unique().sort().to_list() == [k * S for k in range(5)]
    end = resources.filter(pl.col("t_ns") == 4 * S).sort("node")
    assert end["cpu_s"].to_list() == pytest.approx([HELLOS_S + 3 * c for c in PER_MESSAGE_S])
    for column in ("rss_bytes", "read_syscalls", "voluntary_switches", "involuntary_switches"):
        assert resources[column].null_count() == resources.height
    # From 1.5 s to 3.5 s: at 1.5 s each node is half-way (by interpolation) through the
    # second of the first message, at 3.5 s through that of the third: 2 messages' work
    # in 2 s.
    cpu = result.summary["cpu"]
    assert cpu["cores_per_node_max"] == pytest.approx(0.013)
    assert cpu["cores_all_nodes"] == pytest.approx(sum(PER_MESSAGE_S))
    report = (result.out_dir / "report.html").read_text(encoding="utf-8")
    assert "Node CPU while publishing" in report


def test_hosts_twice_as_fast_pay_half_of_every_cost(tmp_path: Path) -> None:
    # The same three nodes at speed 2: each node's CPU is half the hand-counted one, the
    # network section's cost per message included.
    costs = {**SCENARIO["cpu"], "per_copy": "3ms", "speed": 2}
    fast = {**SCENARIO, "cpu": costs, "network": {"latency": "10ms", "cpu_per_message": "2ms"}}
    result = run(parse_scenario(fast, tmp_path), tmp_path / "run")
    resources = pl.read_parquet(result.out_dir / "resources.parquet")
    end = resources.filter(pl.col("t_ns") == 4 * S).sort("node")
    expected = [(HELLOS_S + 3 * c) / 2 for c in PER_MESSAGE_S]
    assert end["cpu_s"].to_list() == pytest.approx(expected)


def test_the_same_scenario_writes_the_same_resources_bytes(tmp_path: Path) -> None:
    # Time-sliced hosts with lognormal costs: the seeded draws and the slices too.
    shared = {**SCENARIO, "cpu": {**SCENARIO["cpu"], "nodes_per_host": 3, "sigma": 0.5}}
    files = [
        run(parse_scenario(shared, tmp_path), tmp_path / name).out_dir / "resources.parquet"
        for name in ("a", "b")
    ]
    assert files[0].read_bytes() == files[1].read_bytes()


def test_the_model_counts_its_threads_switches_on_a_time_sliced_host(tmp_path: Path) -> None:
    # The three nodes on one core, with sysmon: each round costs 10 µs, so a node's sysmon
    # CPU is its rounds times that; every round ends in a sleep, a voluntary switch, and
    # each node's working thread blocks at least once a message (it has nothing to run
    # between them).
    cpu = {**SCENARIO["cpu"], "nodes_per_host": 3, "sysmon": True, "per_sysmon_round": "10us"}
    result = run(parse_scenario({**SCENARIO, "cpu": cpu}, tmp_path), tmp_path / "run")
    resources = pl.read_parquet(result.out_dir / "resources.parquet").sort("node", "t_ns")
    end = resources.filter(pl.col("t_ns") == 4 * S)
    assert (end["sysmon_runs"] > 0).all()
    assert end["sysmon_cpu_s"].to_list() == pytest.approx((end["sysmon_runs"] * 10e-6).to_list())
    assert (end["voluntary_switches"] >= end["sysmon_runs"] + 3).all()
    # The engine's hand-made timelines check each preemption (crates/engine/tests/
    # sysmon.rs); here the column arrives, counted as the others are.
    assert resources["involuntary_switches"].null_count() == 0
    for column in ("voluntary_switches", "involuntary_switches", "sysmon_runs"):
        steps = resources.select(pl.col(column).diff().over("node").drop_nulls())
        assert (steps[column] >= 0).all(), f"{column} is cumulative"
    assert result.summary["cpu"]["sysmon_runs_per_s_all_nodes"] > 0
    assert "involuntary_switches_per_s_all_nodes" in result.summary["cpu"]


def test_a_model_without_cpu_costs_writes_no_resources(tmp_path: Path) -> None:
    free = {key: value for key, value in SCENARIO.items() if key != "cpu"}
    result = run(parse_scenario(free, tmp_path), tmp_path / "run")
    assert not (result.out_dir / "resources.parquet").exists()
    assert "cpu" not in result.summary


def test_the_crosscheck_compares_node_cpu_where_the_partner_samples_it() -> None:
    base = {
        "delivery": {},
        "last_delivery_hop": {"histogram": {}},
        "duplicates": {},
        "traffic": {},
        "control": {},
        "drops": {},
    }
    model = {**base, "cpu": {"cores_all_nodes": 0.5}}
    testbed = {**base, "cpu": {"cores_all_nodes": 0.6}}
    rows = {r.metric: r for r in table_rows(model, testbed)}
    row = rows["node CPU while publishing"]
    assert (row.model, row.partner, row.unit) == (0.5, 0.6, "cores")
    assert row.relative == pytest.approx(0.2)
    simnet = base  # simnet samples no CPU: no row
    assert "node CPU while publishing" not in {r.metric for r in table_rows(model, simnet)}
    # A real run's machine speed has a row of its own, the model's side empty.
    gauged = {**testbed, "run": {"testbed": {"machine_speed": {"load_ns": {"p50": 166.6}}}}}
    speed = {r.metric: r for r in table_rows(model, gauged)}[MACHINE_SPEED_ROW]
    assert (speed.model, speed.partner, speed.unit) == (None, 166.6, "ns")
    assert MACHINE_SPEED_ROW not in {r.metric for r in table_rows(model, testbed)}
    # The threads' counts have rows where both sides have them (the model has them on
    # time-sliced hosts only).
    counts = {
        "sysmon_runs_per_s_all_nodes": 100.0,
        "voluntary_switches_per_s_all_nodes": 150.0,
        "involuntary_switches_per_s_all_nodes": 40.0,
    }
    counted = {**base, "cpu": {"cores_all_nodes": 0.6, **counts}}
    both = {
        r.metric: r
        for r in table_rows({**base, "cpu": {"cores_all_nodes": 0.5, **counts}}, counted)
    }
    assert both[SYSMON_ROW].partner == 100.0 and both[BLOCKS_ROW].model == 150.0
    assert both[PREEMPTIONS_ROW].model == 40.0
    one_side = {r.metric for r in table_rows(model, counted)}
    assert not {SYSMON_ROW, BLOCKS_ROW, PREEMPTIONS_ROW} & one_side


MACHINE_SPEED_ROW = "machine speed: ns per memory load (p50)"
SYSMON_ROW = "sysmon runs per second while publishing"
BLOCKS_ROW = "thread blocks per second while publishing"
PREEMPTIONS_ROW = "thread preemptions per second while publishing"


def test_a_testbed_run_s_machine_speed_is_one_line_and_a_model_run_has_none() -> None:
    speed = {
        "cpu": 0,
        "readings": 12,
        "load_ns": {"p10": 156.0, "p50": 166.6, "p90": 172.9},
        "verify_us": {"p10": 38.35, "p50": 43.33, "p90": 51.22},
    }
    summary = {"run": {"testbed": {"machine_speed": speed}}}
    assert machine_speed_text(summary) == (
        "167 ns per memory load, 43.3 µs per signature check "
        "(p50 of 12 readings on CPU 0; higher: slower)"
    )
    assert machine_speed_text({"run": {"backend": "model"}}) is None
    assert machine_speed_text({"run": {"testbed": {"machine_speed": None}}}) is None
