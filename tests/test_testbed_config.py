"""What the orchestrator tells the Go nodes and the delay stage (no root needed).

Peer exchange, direct peers and application scores reach every node's config; the delay
stage's latency rule gives any pair of nodes, edge or not, the scenario's latency (a
region matrix plus both ends' class added_latency, as the model does).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gossiplab.backends.testbed.congestion import idle_restart_warning
from gossiplab.backends.testbed.links import has_latency, latency_rule, link_latencies, rule_latency
from gossiplab.backends.testbed.nodeconfig import node_configs
from gossiplab.geography import place_nodes
from gossiplab.scenario import parse_scenario
from gossiplab.topology import build_topology
from gossiplab.workload import build_schedule

MS = 1_000_000
TWO_REGIONS = {
    "names": ["a", "b"],
    "weights": [0.5, 0.5],
    "latency": [["1ms", "30ms"], ["70ms", "2ms"]],
}


def load(tmp_path: Path, **sections: Any) -> Any:
    return parse_scenario({"backend": "testbed", **sections}, base_dir=tmp_path)


def configs(tmp_path: Path, **sections: Any) -> dict[int, dict[str, Any]]:
    s = load(tmp_path, **sections)
    topology = build_topology(s)
    schedule = build_schedule(s, topology.nodes)
    return node_configs(s, topology, schedule, {i: f"/d{i}" for i in range(topology.nodes)})


def test_peer_exchange_and_prune_peers_reach_the_nodes(tmp_path: Path) -> None:
    c = configs(tmp_path, protocol={"peer_exchange": True, "prune_peers": 5})
    assert {(n["protocol"]["peer_exchange"], n["protocol"]["prune_peers"]) for n in c.values()} == {
        (True, 5)
    }
    default = configs(tmp_path)[0]["protocol"]
    assert (default["peer_exchange"], default["prune_peers"]) == (False, 16)  # go's defaults


def test_direct_peers_are_configured_on_both_ends(tmp_path: Path) -> None:
    c = configs(
        tmp_path,
        topology={"kind": "line", "nodes": 4},
        protocol={"direct_peers": [[1, 2], [2, 1], [2, 3]]},
    )
    direct = {i: [(d["index"], d["addr"]) for d in n["direct"]] for i, n in c.items()}
    assert direct == {
        0: [],
        1: [(2, "/ip4/10.77.0.10/tcp/4001")],
        2: [(1, "/ip4/10.77.0.6/tcp/4001"), (3, "/ip4/10.77.0.14/tcp/4001")],
        3: [(2, "/ip4/10.77.0.10/tcp/4001")],
    }


def test_app_scores_go_to_every_node_as_written(tmp_path: Path) -> None:
    app = [{"nodes": [0, 2], "score": -5.0}, {"nodes": [1], "score": 2.5}]
    c = configs(tmp_path, protocol={"score": {"enabled": True, "app_specific": app}})
    assert all(n["score"]["app_specific"] == app for n in c.values())
    assert configs(tmp_path)[0]["score"] is None  # scoring off: no score section at all


def test_the_rule_gives_non_edges_the_region_matrix_plus_both_ends(tmp_path: Path) -> None:
    s = load(
        tmp_path,
        topology={"kind": "line", "nodes": 6},
        network={
            "regions": TWO_REGIONS,
            "classes": [
                {"name": "near", "share": 0.5, "added_latency": "5ms"},
                {"name": "far", "share": 0.5, "added_latency": "40ms"},
            ],
        },
    )
    placement = place_nodes(s, 6)
    matrix, added = [[1, 30], [70, 2]], [5, 40]

    def expected(a: int, b: int) -> int:
        ra, rb = placement.region[a], placement.region[b]
        both = added[placement.node_class[a]] + added[placement.node_class[b]]
        return (matrix[ra][rb] + both) * MS

    rule = latency_rule(s, 6)
    assert rule["kind"] == "matrix" and rule["first_ip"] == "10.77.0.2" and rule["nodes"] == 6
    for a in range(6):
        for b in range(6):
            if a != b:
                assert rule_latency(rule, a, b) == expected(a, b), (a, b)
    topology = build_topology(s)
    assert link_latencies(s, topology) == [
        (expected(a, b), expected(b, a)) for a, b in topology.edges.tolist()
    ]
    # The matrix alone, with latency = "0ms" by default, still needs the delay stage.
    assert has_latency(s)


def test_constants_and_distributions_have_rules_too(tmp_path: Path) -> None:
    constant = load(tmp_path, network={"latency": "20ms"})
    rule = latency_rule(constant, 3)
    assert rule["kind"] == "matrix" and rule_latency(rule, 0, 2) == 20 * MS
    assert "region" not in rule and "added_ns" not in rule
    drawn = load(
        tmp_path, network={"latency": {"distribution": "uniform", "min": "10ms", "max": "30ms"}}
    )
    rule = latency_rule(drawn, 3)
    assert (rule["kind"], rule["min_ns"], rule["max_ns"]) == ("uniform", 10 * MS, 30 * MS)
    assert not has_latency(load(tmp_path))  # 0 ms and no jitter: no delay stage


def test_first_heartbeats_get_a_random_phase_within_one_interval_as_in_the_model(
    tmp_path: Path,
) -> None:
    # The testbed starts its processes within about 0.2 s; go's heartbeatTimer sleeps the
    # initial delay and then ticks, so with one shared delay the heartbeats nearly
    # coincide. The engine gives each node initial delay + a uniform phase in
    # [0, heartbeat) (setup.rs `start`); the nodes get the same rule through the delay.
    c = configs(
        tmp_path,
        topology={"kind": "random-regular", "nodes": 200, "degree": 8},
        protocol={"heartbeat": "700ms", "heartbeat_initial_delay": "100ms"},
    )
    delays = [c[i]["protocol"]["heartbeat_initial_delay_ns"] for i in sorted(c)]
    assert all(100 * MS <= d < 800 * MS for d in delays)
    assert len(set(delays)) > 190  # distinct, not one shared instant
    quarters = [
        sum(100 * MS + q * 175 * MS <= d < 100 * MS + (q + 1) * 175 * MS for d in delays)
        for q in range(4)
    ]
    assert all(30 <= count <= 70 for count in quarters)  # uniform: 50 expected per quarter
    assert {c[i]["protocol"]["heartbeat_ns"] for i in c} == {700 * MS}  # the interval stays


def test_floodsub_nodes_keep_go_s_initial_delay(tmp_path: Path) -> None:
    c = configs(tmp_path, topology={"kind": "line", "nodes": 3}, protocol={"name": "floodsub"})
    assert {n["protocol"]["heartbeat_initial_delay_ns"] for n in c.values()} == {100 * MS}


def test_a_tcp_that_keeps_idle_windows_is_named_when_the_model_restarts_them(
    tmp_path: Path,
) -> None:
    # Linux restarts an idle window only for congestion controls without their own
    # cong_control (tcp_slow_start_after_idle_check): cubic and reno do, BBR does not.
    # The model restarts with network.slow_start_after_idle (default true); a message
    # that one initial window (10 x 1460 B) holds pays nothing either way.
    s = load(tmp_path)
    warning = idle_restart_warning(s, "bbr", 131_072)
    assert warning is not None
    assert "testbed.congestion_control" in warning and "slow_start_after_idle" in warning
    assert idle_restart_warning(s, "cubic", 131_072) is None
    assert idle_restart_warning(s, "reno", 131_072) is None
    assert idle_restart_warning(s, "bbr", 14_600) is None
    assert idle_restart_warning(s, "bbr", 14_601) is not None
    kept = load(tmp_path, network={"slow_start_after_idle": False})
    assert idle_restart_warning(kept, "bbr", 131_072) is None
    quic = load(tmp_path, testbed={"transport": "quic"})
    assert idle_restart_warning(quic, "bbr", 131_072) is None  # quic-go's own cubic
