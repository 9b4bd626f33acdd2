"""What the simnet backend tells its Go runner, and what it refuses (no Go needed).

RUN.json must give every pair of nodes the model's link: the expectations below are
built by hand from the scenario's own numbers and the nodes table (which node is in
which region and class), not from the code that writes RUN.json.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gossiplab.backends.model import engine_config
from gossiplab.backends.simnet.runconfig import run_config
from gossiplab.backends.simnet.support import quic_transport_advice, unsupported_features
from gossiplab.backends.testbed.nodeconfig import node_configs
from gossiplab.cli.main import app
from gossiplab.errors import ScenarioError
from gossiplab.geography import nodes_table
from gossiplab.runner import run
from gossiplab.scenario import load_scenario, parse_scenario
from gossiplab.topology import build_topology
from gossiplab.workload import build_schedule, end_time_ns

MS = 1_000_000
S = 1_000_000_000
REGIONS = {
    "names": ["a", "b"],
    "weights": [0.5, 0.5],
    "latency": [["1ms", "30ms"], ["70ms", "2ms"]],
}
CLASSES = [
    {"name": "fast", "share": 0.5, "upload": "1Gbit", "download": "1Gbit"},
    {
        "name": "slow",
        "share": 0.5,
        "upload": "50Mbit",
        "download": "20Mbit",
        "added_latency": "20ms",
        "added_loss": 0.01,
    },
]


def scenario(tmp_path: Path, **sections: Any) -> Any:
    return parse_scenario({"backend": "simnet", **sections}, base_dir=tmp_path)


def config_of(s: Any) -> dict[str, Any]:
    topology = build_topology(s)
    schedule = build_schedule(s, topology.nodes)
    return run_config(s, topology, schedule, end_time_ns(s, schedule))


def pair_latency(latency: dict[str, Any], a: int, b: int) -> int:
    """INTERFACE.md's rule for the latency of a packet from a to b."""
    added = latency["added_ns"][a] + latency["added_ns"][b]
    if latency["kind"] == "constant":
        return latency["ns"] + added
    region = latency["region"]
    return latency["matrix_ns"][region[a]][region[b]] + added


def test_every_pair_gets_the_region_matrix_plus_both_classes_added_latency(
    tmp_path: Path,
) -> None:
    s = scenario(
        tmp_path,
        topology={"kind": "random-regular", "nodes": 12, "degree": 3},
        network={"regions": REGIONS, "classes": CLASSES, "loss": 0.002},
    )
    network = config_of(s)["network"]
    nodes = nodes_table(s, 12).rows(named=True)
    matrix_ms = {("a", "a"): 1, ("a", "b"): 30, ("b", "a"): 70, ("b", "b"): 2}
    added_ms = {"fast": 0, "slow": 20}
    for a in nodes:
        for b in nodes:
            if a["node"] == b["node"]:
                continue
            expected_ms = matrix_ms[(a["region"], b["region"])] + added_ms[a["class"]]
            expected_ms += added_ms[b["class"]]
            assert pair_latency(network["latency"], a["node"], b["node"]) == expected_ms * MS
            # The model's loss: network.loss + each end's added_loss.
            extra = {"fast": 0.0, "slow": 0.01}
            loss = network["loss"][a["node"]] + network["loss"][b["node"]]
            assert loss == pytest.approx(0.002 + extra[a["class"]] + extra[b["class"]])
    assert network["upload_bps"] == [
        1_000_000_000 if n["class"] == "fast" else 50_000_000 for n in nodes
    ]
    assert network["download_bps"] == [
        1_000_000_000 if n["class"] == "fast" else 20_000_000 for n in nodes
    ]


def test_a_constant_latency_has_no_matrix_and_no_loss_means_no_loss_list(tmp_path: Path) -> None:
    s = scenario(tmp_path, topology={"kind": "line", "nodes": 3}, network={"latency": "25ms"})
    network = config_of(s)["network"]
    assert network["latency"] == {"kind": "constant", "ns": 25 * MS, "added_ns": [0, 0, 0]}
    assert "loss" not in network
    assert network["upload_bps"] == network["download_bps"] == [0, 0, 0]  # unlimited


def test_nodes_get_their_neighbours_their_publications_and_quic(tmp_path: Path) -> None:
    s = scenario(
        tmp_path,
        topology={"kind": "line", "nodes": 3},
        workload={"messages": 4, "rate": "2/s", "publishers": [2], "warmup": "1s"},
    )
    config = config_of(s)
    nodes = config["nodes"]
    assert [n["index"] for n in nodes] == [0, 1, 2]
    assert [[(p["index"], p["dial"]) for p in n["peers"]] for n in nodes] == [
        [(1, True)],
        [(0, False), (2, True)],
        [(1, False)],
    ]
    assert {(n["transport"], n["muxer"]) for n in nodes} == {("quic", "quic")}
    # Four messages at 2/s after a 1 s warm-up, all from node 2.
    published = sorted((p["t_ns"], n["index"]) for n in nodes for p in n["schedule"])
    assert published == [(1 * S, 2), (1500 * MS, 2), (2 * S, 2), (2500 * MS, 2)]
    assert config["dial_stagger_ns"] == 0  # the model opens every connection at 0
    assert config["seed"] == s.seed


def test_faults_become_crashes_partitions_and_leaves_at_the_model_times(tmp_path: Path) -> None:
    s = scenario(
        tmp_path,
        topology={"kind": "ring", "nodes": 6},
        faults=[
            {"kind": "crash", "nodes": [4], "at": "5s"},
            {"kind": "partition", "groups": [[0, 1, 2], [3, 4, 5]], "start": "2s", "end": "3s"},
            {"kind": "leave", "nodes": [1], "topic": 0, "at": "4s", "rejoin_after": "2s"},
            {"kind": "leave", "nodes": [2], "at": "7s"},
        ],
    )
    faults = config_of(s)["faults"]
    assert {"kind": "crash", "node": 4, "at_ns": 5 * S, "restart_ns": None} in faults
    assert {
        "kind": "partition",
        "groups": [[0, 1, 2], [3, 4, 5]],
        "from_ns": 2 * S,
        "until_ns": 3 * S,
    } in faults
    assert {"kind": "leave", "node": 1, "topic": 0, "at_ns": 4 * S, "rejoin_ns": 6 * S} in faults
    assert {"kind": "leave", "node": 2, "topic": 0, "at_ns": 7 * S, "rejoin_ns": None} in faults
    assert len(faults) == 4


def test_churn_is_crashes_that_restart(tmp_path: Path) -> None:
    s = scenario(
        tmp_path,
        topology={"kind": "ring", "nodes": 10},
        faults=[
            {"kind": "churn", "start": "1s", "end": "9s", "leave_rate": "1/s", "rejoin_after": "2s"}
        ],
    )
    faults = config_of(s)["faults"]
    assert faults, "a 1/s churn over 8 s makes some node leave"
    for fault in faults:
        assert fault["kind"] == "crash"
        assert 1 * S <= fault["at_ns"] < 9 * S
        assert fault["restart_ns"] == fault["at_ns"] + 2 * S


@pytest.mark.parametrize(
    ("sections", "field"),
    [
        ({"protocol": {"version": "2.0"}}, "protocol.version"),
        ({"faults": [{"kind": "adversary", "behaviour": "ignore-iwant", "count": 1}]}, "faults[0]"),
        (
            {
                "network": {"upload": "10Mbit"},
                "faults": [{"kind": "slow", "count": 1, "bandwidth_factor": 0.5}],
            },
            "faults[0]",
        ),
        ({"network": {"jitter": "5ms"}}, "network.jitter"),
        (
            {"network": {"latency": {"distribution": "uniform", "min": "10ms", "max": "20ms"}}},
            "network.latency",
        ),
        ({"output": {"mode": "aggregate"}}, "output.mode"),
        ({"network": {"shared_ips": [[0, 1]]}}, "network.shared_ips"),
        ({"testbed": {"profile": True}}, "testbed.profile"),
        ({"testbed": {"go_trace": [0]}}, "testbed.go_trace"),
    ],
)
def test_what_simnet_cannot_run_is_refused_by_its_field(
    tmp_path: Path, sections: dict[str, Any], field: str
) -> None:
    s = scenario(tmp_path, **sections)
    assert [p.path for p in unsupported_features(s)] == [field]


def test_a_refused_scenario_fails_before_anything_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gossiplab.backends.simnet as simnet

    def no_build() -> Path:
        raise AssertionError("the runner must not be built for a refused scenario")

    monkeypatch.setattr(simnet, "ensure_runner", no_build)
    s = scenario(tmp_path, topology={"kind": "line", "nodes": 4}, protocol={"version": "2.0"})
    with pytest.raises(ScenarioError) as refused:
        run(s, tmp_path / "out")
    assert "protocol.version" in str(refused.value) and "v2.0" in str(refused.value)
    assert not (tmp_path / "out").exists()


def test_validate_names_what_simnet_refuses(tmp_path: Path) -> None:
    scenario_file = tmp_path / "v2.toml"
    scenario_file.write_text('backend = "simnet"\n[protocol]\nversion = "2.0"\n')
    result = CliRunner().invoke(app, ["validate", str(scenario_file)])
    assert result.exit_code == 2
    assert "protocol.version" in result.output and "IANNOUNCE" in result.output


def test_a_default_scenario_is_accepted(tmp_path: Path) -> None:
    assert unsupported_features(scenario(tmp_path)) == []


def test_hosts_get_the_testbed_s_heartbeat_phases(tmp_path: Path) -> None:
    # Every simnet host starts at virtual time 0: the phase (drawn as the engine draws
    # it, tests/test_testbed_config.py) goes into go's HeartbeatInitialDelay, the same
    # per node as on the testbed for the same scenario.
    s = scenario(
        tmp_path,
        topology={"kind": "random-regular", "nodes": 50, "degree": 8},
        protocol={"heartbeat": "700ms", "heartbeat_initial_delay": "100ms"},
    )
    delays = [n["protocol"]["heartbeat_initial_delay_ns"] for n in config_of(s)["nodes"]]
    topology = build_topology(s)
    schedule = build_schedule(s, topology.nodes)
    testbed = node_configs(s, topology, schedule, {i: "" for i in range(topology.nodes)})
    assert delays == [testbed[i]["protocol"]["heartbeat_initial_delay_ns"] for i in range(50)]
    assert len(set(delays)) > 45 and all(100 * MS <= d < 800 * MS for d in delays)


def test_floodsub_hosts_keep_go_s_initial_delay(tmp_path: Path) -> None:
    s = scenario(tmp_path, topology={"kind": "line", "nodes": 3}, protocol={"name": "floodsub"})
    delays = {n["protocol"]["heartbeat_initial_delay_ns"] for n in config_of(s)["nodes"]}
    assert len(delays) == 1


# quic-go v0.64.1 starts every connection at 32 packets (internal/congestion/
# cubic_sender.go:18, initialCongestionWindow) of 1,280 B (internal/protocol/params.go:6,
# InitialPacketSize) and its cubic sender never restarts after idle; in the model's TCP
# segments of 1,460 B that is 28 segments.
QUIC_INITIAL_WINDOW_SEGMENTS = 32 * 1280 // 1460
SIMNET_SCENARIOS = sorted(
    (Path(__file__).resolve().parents[1] / "scenarios" / "simnet").glob("*.toml")
)


@pytest.mark.parametrize("path", SIMNET_SCENARIOS, ids=lambda p: p.name)
def test_simnet_scenarios_give_the_model_quic_s_congestion_start_pacing_and_streams(
    path: Path,
) -> None:
    # With Linux's IW10 (14.6 kB) and restart after idle, a heartbeat IHAVE of three
    # heartbeats' ids (about 30 kB at 200 msg/s) takes a second round trip in the model
    # but one trip on the real QUIC hosts, so the model's IHAVEs lose every race against
    # the message and it asks (IWANT) for a seventh of what go does.
    # quic-go also paces every connection (internal/congestion/pacer.go), which delays
    # those IHAVEs by up to 20 ms more.
    s = load_scenario(path)
    assert s.network.initial_window == QUIC_INITIAL_WINDOW_SEGMENTS
    assert s.network.slow_start_after_idle is False
    assert s.network.pacing is True
    # No yamux stream window of 256 KiB (the model's default) lies between go's writer
    # and a QUIC connection: quic-go's SendStream.Write returns once all but a packet of
    # its data is packed (send_stream.go, canBufferStreamFrame), so the writer holds only
    # the RPC being written and IDONTWANT overtakes everything still queued.
    assert s.network.send_buffer == 0


# Simnet's QUIC hosts send their hello two round trips after the dial (the handshake, then
# multistream-select of the pub/sub stream), the listener one latency later: measured in
# simnet's traces (docs/protocol.md, "Connections").
@pytest.mark.parametrize("path", SIMNET_SCENARIOS, ids=lambda p: p.name)
def test_simnet_scenarios_bring_connections_up_as_quic_does(path: Path) -> None:
    s = load_scenario(path)
    assert s.network.connect_round_trips == 2
    nodes = build_topology(s).nodes
    schedule = build_schedule(s, nodes)
    config = engine_config(s, nodes, end_time_ns(s, schedule), schedule)
    assert config["network"]["connect_round_trips"] == 2


def test_a_crosscheck_against_simnet_names_the_model_s_tcp_fields(tmp_path: Path) -> None:
    # A scenario left at the model's defaults describes Linux TCP and yamux; simnet's
    # hosts run QUIC. Each field that differs is named with QUIC's value; the simnet
    # files, which set them all, get no advice.
    s = scenario(tmp_path, topology={"kind": "line", "nodes": 3}, network={"pacing": True})
    advice = quic_transport_advice(s)
    assert advice is not None
    for named in (
        f"initial_window = 10 (QUIC: {QUIC_INITIAL_WINDOW_SEGMENTS})",
        "slow_start_after_idle = true (QUIC: false)",
        "send_buffer = 262144 (QUIC: 0)",
        "connect_round_trips = 0 (QUIC: 2)",
    ):
        assert named in advice
    assert "pacing" not in advice
    assert all(quic_transport_advice(load_scenario(p)) is None for p in SIMNET_SCENARIOS)
