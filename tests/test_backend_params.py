"""The engine and the Go node get gossipsub's parameters from one translation: the same
names, the same nanoseconds, whichever section each backend reads them from."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gossiplab.backends.model import engine_config
from gossiplab.backends.testbed.nodeconfig import node_configs
from gossiplab.scenario import parse_scenario
from gossiplab.topology import build_topology
from gossiplab.workload import build_schedule

S = 1_000_000_000
MS = 1_000_000
GRAFT = ("graft_flood_threshold_ns", "opportunistic_graft_ticks", "opportunistic_graft_peers")
SCORED = {
    "topology": {"kind": "ring", "nodes": 6},
    "protocol": {
        "heartbeat": "700ms",
        "iwant_followup_time": "2s",
        "idontwant_threshold": "2KiB",
        "graft_flood_threshold": "7s",
        "opportunistic_graft_ticks": 30,
        "opportunistic_graft_peers": 3,
        "score": {
            "enabled": True,
            "gossip_threshold": -20.0,
            "time_in_mesh_quantum": "250ms",
            "mesh_message_deliveries_activation": "4s",
            "mesh_message_deliveries_window": "5ms",
            "decay_interval": "2s",
            "retain_score": "90s",
            "app_specific": [{"nodes": [1, 4], "score": 3.5}],
        },
    },
}


def both(sections: dict[str, Any], tmp_path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the engine's protocol section, one Go node's config) for the same scenario."""
    s = parse_scenario({"backend": "testbed", **sections}, tmp_path)
    topology = build_topology(s)
    schedule = build_schedule(s, topology.nodes)
    dirs = {i: f"/d{i}" for i in range(topology.nodes)}
    return engine_config(s, topology.nodes, 60 * S)["protocol"], node_configs(
        s, topology, schedule, dirs
    )[0]


def test_score_parameters_reach_both_backends_in_nanoseconds(tmp_path: Path) -> None:
    engine, node = both(SCORED, tmp_path)
    expected = {
        "gossip_threshold": -20.0,
        "time_in_mesh_quantum_ns": 250 * MS,
        "mesh_message_deliveries_activation_ns": 4 * S,
        "mesh_message_deliveries_window_ns": 5 * MS,
        "decay_interval_ns": 2 * S,
        "retain_score_ns": 90 * S,
        "app_specific": [{"nodes": [1, 4], "score": 3.5}],
    }
    for name, value in expected.items():
        assert engine["score"][name] == value, name
        assert node["score"][name] == value, name
    assert "enabled" not in engine["score"] and "enabled" not in node["score"]


def test_both_backends_get_the_same_score_section_apart_from_the_graft_parameters(
    tmp_path: Path,
) -> None:
    engine, node = both(SCORED, tmp_path)
    engine_score = {k: v for k, v in engine["score"].items() if k not in GRAFT}
    assert engine_score == node["score"]


def test_graft_parameters_are_the_same_where_each_backend_reads_them(tmp_path: Path) -> None:
    engine, node = both(SCORED, tmp_path)
    expected = {"graft_flood_threshold_ns": 7 * S, "opportunistic_graft_ticks": 30}
    expected["opportunistic_graft_peers"] = 3
    assert {k: engine["score"][k] for k in GRAFT} == expected  # the engine: in score
    assert {k: node["protocol"][k] for k in GRAFT} == expected  # the Go node: in protocol


def test_shared_protocol_parameters_are_identical(tmp_path: Path) -> None:
    engine, node = both(SCORED, tmp_path)
    # The first heartbeat's delay differs by the node's phase: the engine draws it at
    # start (setup.rs), the Go node gets initial delay + phase, within one interval.
    delay = "heartbeat_initial_delay_ns"
    shared = set(engine) & set(node["protocol"]) - {delay}
    assert {"heartbeat_ns", "iwant_followup_ns", "idontwant_threshold"} <= shared
    assert {k: engine[k] for k in shared} == {k: node["protocol"][k] for k in shared}
    assert (engine["heartbeat_ns"], engine["iwant_followup_ns"]) == (700 * MS, 2 * S)
    assert engine["idontwant_threshold"] == 2048
    phase = node["protocol"][delay] - engine[delay]
    assert 0 <= phase < engine["heartbeat_ns"]


def test_scoring_off_sends_no_score_section(tmp_path: Path) -> None:
    engine, node = both({"topology": {"kind": "ring", "nodes": 6}}, tmp_path)
    assert engine["score"] is None and node["score"] is None
