"""The scenario schema: every mistake reported with its path and a fix; defaults resolved."""

from __future__ import annotations

import textwrap
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gossiplab.errors import ScenarioError
from gossiplab.scenario import (
    Scenario,
    expand_sweep,
    load_scenario,
    parse_scenario,
    scenario_hash,
    scenario_to_toml,
    set_dotted,
    sweep_points,
)

REPO = Path(__file__).resolve().parent.parent
HERE = Path(".")


def load_text(tmp_path: Path, text: str) -> Scenario:
    path = tmp_path / "scenario.toml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return load_scenario(path)


def round_trip(s: Scenario, base_dir: Path = HERE) -> Scenario:
    return parse_scenario(tomllib.loads(scenario_to_toml(s)), base_dir)


# --------------------------------------------------------------------------------------------
# Malformed scenarios: (id, TOML text, a path the problems must name)
# --------------------------------------------------------------------------------------------

MALFORMED: list[tuple[str, str, str]] = [
    ("toml-syntax", 'name = "unterminated\n', ""),
    ("unknown-top-level-key", 'colour = "red"\n', "colour"),
    ("typo-section", "[topolgy]\nnodes = 10\n", "topolgy"),
    ("typo-key", "[workload]\nmesages = 10\n", "workload.mesages"),
    ("wrong-type-string-for-int", '[topology]\nnodes = "100"\n', "topology.nodes"),
    ("wrong-type-bool-for-int", "[topology]\nnodes = true\n", "topology.nodes"),
    ("wrong-type-table-for-section", 'network = "fast"\n', "network"),
    ("bad-unit", '[network]\nlatency = "150 mss"\n', "network.latency"),
    ("bad-bandwidth-unit", '[network]\nupload = "50 Mbits"\n', "network.upload"),
    ("negative-duration", '[workload]\nwarmup = "-5s"\n', "workload.warmup"),
    ("negative-size", "[workload]\nsize = -1\n", "workload.size"),
    ("bad-rate", '[workload]\nrate = "fast"\n', "workload.rate"),
    ("m-zero", "[topology]\nm = 0\n", "topology.m"),
    ("m-too-large", "[topology]\nnodes = 10\nm = 10\n", "topology.m"),
    (
        "odd-nodes-times-degree",
        '[topology]\nkind = "random-regular"\nnodes = 11\ndegree = 3\n',
        "topology.degree",
    ),
    ("p-zero", '[topology]\nkind = "erdos-renyi"\np = 0.0\n', "topology.p"),
    ("k-zero", '[topology]\nkind = "connect-random"\nk = 0\n', "topology.k"),
    ("one-node", '[topology]\nkind = "line"\nnodes = 1\n', "topology.nodes"),
    ("unknown-topology-kind", '[topology]\nkind = "small-world"\n', "topology.kind"),
    (
        "field-of-another-kind",
        '[topology]\nkind = "random-regular"\nm = 3\n',
        "topology.m",
    ),
    ("edges-without-file", '[topology]\nkind = "edges"\n', "topology.file"),
    ("D_lo-above-D", "[protocol]\nD_lo = 7\n", "protocol.D_lo"),
    ("D_hi-below-D", "[protocol]\nD_hi = 5\n", "protocol.D_hi"),
    ("D_out-too-big", "[protocol]\nD_out = 4\n", "protocol.D_out"),
    ("history-gossip-too-long", "[protocol]\nhistory_gossip = 6\n", "protocol.history_gossip"),
    ("gossip-factor-above-one", "[protocol]\ngossip_factor = 1.5\n", "protocol.gossip_factor"),
    ("zero-heartbeat", '[protocol]\nheartbeat = "0ms"\n', "protocol.heartbeat"),
    ("zero-queue", "[protocol]\npeer_outbound_queue = 0\n", "protocol.peer_outbound_queue"),
    ("unknown-preset", '[protocol]\npreset = "python-default"\n', "protocol.preset"),
    ("unknown-protocol-name", '[protocol]\nname = "plumtree"\n', "protocol.name"),
    ("unknown-version", '[protocol]\nversion = "3.0"\n', "protocol.version"),
    ("unknown-version-float", "[protocol]\nversion = 3.1\n", "protocol.version"),
    (
        "thresholds-out-of-order",
        "[protocol.score]\npublish_threshold = -100.0\n",
        "protocol.score.publish_threshold",
    ),
    ("score-typo", "[protocol.score]\nenable = true\n", "protocol.score.enable"),
    (
        "score-on-v1.0",
        '[protocol]\nversion = "1.0"\n[protocol.score]\nenabled = true\n',
        "protocol.score.enabled",
    ),
    ("loss-one", "[network]\nloss = 1.0\n", "network.loss"),
    ("loss-nan", "[network]\nloss = nan\n", "network.loss"),
    (
        "unknown-latency-distribution",
        '[network.latency]\ndistribution = "pareto"\n',
        "network.latency.distribution",
    ),
    (
        "uniform-latency-reversed",
        '[network.latency]\ndistribution = "uniform"\nmin = "50ms"\nmax = "10ms"\n',
        "network.latency.max",
    ),
    (
        "shares-not-summing-to-one",
        """
        [[network.classes]]
        name = "fast"
        share = 0.5
        upload = "1Gbit"
        [[network.classes]]
        name = "slow"
        share = 0.4
        upload = "50Mbit"
        """,
        "network.classes",
    ),
    (
        "duplicate-class-names",
        """
        [[network.classes]]
        name = "a"
        share = 0.5
        [[network.classes]]
        name = "a"
        share = 0.5
        """,
        "network.classes[1].name",
    ),
    (
        "publisher-out-of-range",
        "[topology]\nnodes = 10\n[workload]\npublishers = [3, 10]\n",
        "workload.publishers",
    ),
    ("publishers-not-a-list", '[workload]\npublishers = "all"\n', "workload.publishers"),
    (
        "batch-larger-than-publishers",
        "[workload]\npublishers = [1, 2]\nbatch = 3\n",
        "workload.batch",
    ),
    (
        "messages-rate-duration-disagree",
        '[workload]\nmessages = 100\nrate = "10/s"\nduration = "20s"\n',
        "workload.messages",
    ),
    ("no-messages", "[workload]\nmessages = 0\n", "workload.messages"),
    ("zero-topics", "[workload]\ntopics = 0\n", "workload.topics"),
    ("bad-sweep-path", '[sweep]\n"topology.mm" = [1, 2]\n', 'sweep."topology.mm"'),
    ("sweep-value-not-a-list", '[sweep]\n"topology.m" = 3\n', 'sweep."topology.m"'),
    ("bad-sweep-point", '[sweep]\n"topology.m" = [2, 0]\n', "topology.m"),
    ("crash-without-time", '[[faults]]\nkind = "crash"\ncount = 1\n', "faults[0].at"),
    ("fault-without-kind", '[[faults]]\nat = "1s"\n', "faults[0].kind"),
    (
        "fault-two-selectors",
        '[[faults]]\nkind = "crash"\nat = "1s"\ncount = 2\nshare = 0.1\n',
        "faults[0]",
    ),
    ("fault-after-run", '[[faults]]\nkind = "crash"\nat = "1h"\ncount = 1\n', "faults[0].at"),
    (
        "fault-node-out-of-range",
        '[topology]\nnodes = 10\n[[faults]]\nkind = "crash"\nat = "1s"\nnodes = [12]\n',
        "faults[0].nodes",
    ),
    (
        "partition-ends-before-start",
        '[[faults]]\nkind = "partition"\nstart = "5s"\nend = "2s"\nsplit = 0.5\n',
        "faults[0].end",
    ),
    (
        "delay-forwards-without-delay",
        '[[faults]]\nkind = "adversary"\ncount = 1\nbehaviour = "delay-forwards"\n',
        "faults[0].delay",
    ),
    (
        "ignore-ineed-before-v2",
        '[[faults]]\nkind = "adversary"\ncount = 1\nbehaviour = "ignore-ineed"\n',
        "faults[0].behaviour",
    ),
    (
        "slow-cpu-without-cpu-cost",
        '[[faults]]\nkind = "slow"\ncount = 1\ncpu_factor = 4.0\n',
        "faults[0].cpu_factor",
    ),
    ("bad-name", 'name = "my run"\n', "name"),
    ("unknown-backend", 'backend = "simulator"\n', "backend"),
    ("negative-seed", "seed = -1\n", "seed"),
    ("testbed-v2", 'backend = "testbed"\n[protocol]\nversion = "2.0"\n', "protocol.version"),
    ("bad-output-mode", '[output]\nmode = "summary"\n', "output.mode"),
]


@pytest.mark.parametrize(
    ("text", "path"), [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED]
)
def test_malformed_scenario_is_reported(
    tmp_path: Path, text: str, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A fork node named in the environment would make testbed-v2 runnable.
    monkeypatch.delenv("GOSSIPLAB_FORK_NODE", raising=False)
    with pytest.raises(ScenarioError) as err:
        load_text(tmp_path, text)
    paths = [p.path for p in err.value.problems]
    assert path in paths
    assert "Traceback" not in str(err.value)
    assert all(p.message and p.hint for p in err.value.problems), err.value.problems
    assert str(tmp_path / "scenario.toml") in str(err.value)


def test_malformed_table_is_large_enough() -> None:
    assert len(MALFORMED) >= 25


def problems_of(data: dict[str, Any]) -> list[Any]:
    with pytest.raises(ScenarioError) as err:
        parse_scenario(data, HERE)
    return err.value.problems


def test_toml_syntax_error_gives_line_and_column(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError) as err:
        load_text(tmp_path, 'name = "x"\nseed = = 3\n')
    assert "line 2" in err.value.problems[0].message
    assert "column" in err.value.problems[0].message


def test_missing_file_is_a_scenario_error(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError) as err:
        load_scenario(tmp_path / "nope.toml")
    assert "cannot read" in err.value.problems[0].message


def test_did_you_mean_hints() -> None:
    (typo,) = problems_of({"topolgy": {}})
    assert typo.hint == "did you mean 'topology'?"
    (key,) = problems_of({"workload": {"mesages": 1}})
    assert key.path == "workload.mesages"
    assert key.hint == "did you mean 'messages'?"
    (kind,) = problems_of({"topology": {"kind": "random-regula"}})
    assert kind.hint == "did you mean 'random-regular'?"
    (preset,) = problems_of({"protocol": {"preset": "etherium"}})
    assert preset.hint == "did you mean 'ethereum'?"


def test_field_of_another_kind_lists_the_kinds_fields() -> None:
    (problem,) = problems_of({"topology": {"kind": "random-regular", "m": 3}})
    assert str(problem) == (
        "topology.m: not a field of kind 'random-regular' "
        "(its fields: nodes, degree, seed, allow_disconnected)"
    )


def test_m_zero_message() -> None:
    (problem,) = problems_of({"topology": {"m": 0}})
    assert str(problem) == "topology.m: must be >= 1, got 0 (use an integer from 1 to nodes-1)"


def test_bad_unit_message() -> None:
    (problem,) = problems_of({"network": {"latency": "150 mss"}})
    assert str(problem) == (
        "network.latency: cannot read '150 mss' as a duration "
        '(write e.g. "150ms", "1.5s", "200us")'
    )


def test_sweep_typo_message() -> None:
    (problem,) = problems_of({"sweep": {"topology.mm": [1]}})
    assert str(problem) == "sweep.\"topology.mm\": no such field (did you mean 'topology.m'?)"


def test_every_problem_in_a_file_is_reported(tmp_path: Path) -> None:
    text = """
        seed = "one"
        [topology]
        m = 0
        [network]
        latency = "5 parsecs"
        [protocol]
        D_lo = 9
        D_out = 5
        [workload]
        mesages = 10
        [output]
        mode = "tiny"
    """
    with pytest.raises(ScenarioError) as err:
        load_text(tmp_path, text)
    paths = {p.path for p in err.value.problems}
    expected = {
        "seed",
        "topology.m",
        "network.latency",
        "protocol.D_lo",
        "protocol.D_out",
        "workload.mesages",
        "output.mode",
    }
    assert expected <= paths
    assert f"{len(err.value.problems)} problem(s)" in str(err.value)


# --------------------------------------------------------------------------------------------
# Resolution: presets, derived defaults, round trips
# --------------------------------------------------------------------------------------------


def test_go_default_preset() -> None:
    p = parse_scenario({}, HERE).protocol
    assert (p.name, p.version, p.preset) == ("gossipsub", "1.1", "go-default")
    assert (p.D, p.D_lo, p.D_hi, p.D_lazy, p.D_score, p.D_out) == (6, 5, 12, 6, 4, 2)
    assert p.heartbeat == 1_000_000_000
    assert p.heartbeat_initial_delay == 100_000_000
    assert (p.history_length, p.history_gossip, p.gossip_factor) == (5, 3, 0.25)
    assert p.seen_ttl == 120_000_000_000
    assert p.flood_publish is False
    assert p.idontwant_threshold == 1024
    assert (p.peer_outbound_queue, p.validate_queue) == (32, 32)
    assert (p.signing, p.message_id) == ("strict-sign", "go")
    assert p.score.enabled is False
    assert p.score.gossip_threshold == -10.0


def test_ethereum_preset() -> None:
    p = parse_scenario({"protocol": {"preset": "ethereum"}}, HERE).protocol
    assert (p.D, p.D_lo, p.D_hi) == (8, 6, 12)
    assert p.heartbeat == 700_000_000
    assert (p.history_length, p.history_gossip) == (6, 3)
    assert p.seen_ttl == 768_000_000_000
    assert (p.signing, p.message_id) == ("strict-no-sign", "ethereum")
    assert (p.peer_outbound_queue, p.validate_queue) == (1000, 1000)
    assert p.flood_publish is False
    s = p.score
    thresholds = (s.gossip_threshold, s.publish_threshold, s.graylist_threshold)
    assert thresholds == (-4000.0, -8000.0, -16000.0)
    assert (s.accept_px_threshold, s.opportunistic_graft_threshold) == (100.0, 5.0)


def test_rust_preset() -> None:
    p = parse_scenario({"protocol": {"preset": "rust-default"}}, HERE).protocol
    assert p.heartbeat_initial_delay == 5_000_000_000
    assert p.seen_ttl == 60_000_000_000
    assert p.flood_publish is True
    assert p.peer_outbound_queue == 5000
    assert p.idontwant_threshold == 1001


def test_user_value_beats_preset() -> None:
    data = {"protocol": {"preset": "ethereum", "D": 10, "heartbeat": "1s"}}
    data["protocol"]["score"] = {"gossip_threshold": -1.0}
    p = parse_scenario(data, HERE).protocol
    assert (p.D, p.D_lo, p.heartbeat) == (10, 6, 1_000_000_000)
    assert p.score.gossip_threshold == -1.0
    assert p.score.publish_threshold == -8000.0  # the rest of the preset stays


def test_d_announce_is_bounded_by_d_only_on_version_2_0() -> None:
    # The presets' D_announce is 4; only v2.0 reads it, so D = 3 is fine on 1.1 and 1.2.
    small = {"D": 3, "D_lo": 2, "D_out": 1, "D_score": 2}
    for version in ("1.0", "1.1", "1.2"):
        p = parse_scenario({"protocol": {"version": version, **small}}, HERE).protocol
        assert (p.D, p.D_announce) == (3, 4)
    with pytest.raises(ScenarioError, match=r"protocol\.D_announce: must be <= D \(3\)"):
        parse_scenario({"protocol": {"version": "2.0", **small}}, HERE)


def test_version_as_toml_float(tmp_path: Path) -> None:
    s = load_text(tmp_path, "[protocol]\nversion = 1.2\n")
    assert s.protocol.version == "1.2"


def test_topology_seed_follows_scenario_seed() -> None:
    assert parse_scenario({"seed": 7}, HERE).topology.seed == 7
    assert parse_scenario({"seed": 7, "topology": {"seed": 3}}, HERE).topology.seed == 3
    line = parse_scenario({"seed": 7, "topology": {"kind": "line"}}, HERE).topology
    assert not hasattr(line, "seed")


def test_workload_defaults_and_derivations() -> None:
    w = parse_scenario({}, HERE).workload
    assert (w.messages, w.rate, w.duration) == (100, 10.0, 10_000_000_000)
    w = parse_scenario({"workload": {"rate": "200/s", "duration": "180s"}}, HERE).workload
    assert w.messages == 36_000
    w = parse_scenario({"workload": {"messages": 50, "rate": "25/s"}}, HERE).workload
    assert w.duration == 2_000_000_000
    w = parse_scenario({"workload": {"messages": 50, "duration": "10s"}}, HERE).workload
    assert w.rate == 5.0
    w = parse_scenario({"workload": {"duration": "3s"}}, HERE).workload
    assert (w.messages, w.rate) == (30, 10.0)
    consistent = {"messages": 100, "rate": "10/s", "duration": "10s"}
    assert parse_scenario({"workload": consistent}, HERE).workload.messages == 100


def test_node_classes_inherit_network_values() -> None:
    network = {
        "upload": "100Mbit",
        "cpu_per_message": "200us",
        "classes": [
            {"name": "fast", "share": 0.2, "upload": "1Gbit"},
            {"name": "slow", "share": 0.8},
        ],
    }
    classes = parse_scenario({"network": network}, HERE).network.classes
    assert [c.upload for c in classes] == [1_000_000_000, 100_000_000]
    assert [c.download for c in classes] == [0, 0]
    assert [c.cpu_per_message for c in classes] == [200_000, 200_000]


def test_constant_latency_is_int_nanoseconds() -> None:
    assert parse_scenario({"network": {"latency": "50ms"}}, HERE).network.latency == 50_000_000
    latency = parse_scenario(
        {"network": {"latency": {"distribution": "lognormal", "median": "40ms", "sigma": 0.5}}},
        HERE,
    ).network.latency
    assert latency.median == 40_000_000


RICH_SCENARIO: dict[str, Any] = {
    "name": "rich.example-1",
    "description": 'quotes " and\nnewlines',
    "seed": 2**40,
    "topology": {"kind": "connect-random", "nodes": 40, "k": 5},
    "network": {
        "latency": {"distribution": "uniform", "min": "10ms", "max": "120ms"},
        "jitter": "2ms",
        "loss": 0.01,
        "cpu_per_message": "150us",
        "classes": [
            {"name": "fast", "share": 0.2, "upload": "1Gbit", "download": "1Gbit"},
            {"name": "slow", "share": 0.8, "upload": "10MiB/s", "download": "50Mbit"},
        ],
        "shared_ips": [[7, 8, 9]],
    },
    "protocol": {
        "version": 1.2,
        "preset": "rust-default",
        "D": 8,
        "D_hi": 14,
        "peer_exchange": True,
        "score": {"app_specific": [{"nodes": [3], "score": -5.0}]},
    },
    "workload": {
        "rate": "12/min",
        "duration": "5min",
        "arrival": "poisson",
        "size": "128KiB",
        "publishers": [0, 1, 2],
        "batch": 2,
        "topics": 3,
    },
    "faults": [
        {"kind": "crash", "at": "60s", "share": 0.1},
        {"kind": "churn", "start": "10s", "end": "90s", "leave_rate": "1/s", "rejoin_after": "5s"},
        {"kind": "partition", "start": "20s", "end": "40s", "groups": [[0, 1], [2, 3, 4]]},
        {"kind": "slow", "nodes": [5, 6], "cpu_factor": 3.0, "bandwidth_factor": 0.5},
        {"kind": "adversary", "count": 2, "behaviour": "delay-forwards", "delay": "300ms"},
    ],
    "output": {"receipts": True, "mode": "aggregate"},
    "sweep": {"topology.k": [3, 5], "protocol.preset": ["go-default", "ethereum"]},
}


@pytest.mark.parametrize(
    "data",
    [
        {},
        {"protocol": {"preset": "ethereum"}, "topology": {"kind": "ring", "nodes": 9}},
        {"protocol": {"name": "floodsub"}, "network": {"latency": "1.5ms"}},
        {"protocol": {"score": {"enabled": True}}, "topology": {"kind": "erdos-renyi", "p": 0.3}},
        {"network": {"latency": {"distribution": "normal", "mean": "50ms", "std": "5ms"}}},
        RICH_SCENARIO,
    ],
    ids=["defaults", "ethereum-ring", "floodsub", "score", "normal-latency", "rich"],
)
def test_resolved_toml_round_trip(data: dict[str, Any]) -> None:
    s = parse_scenario(data, HERE)
    again = round_trip(s)
    assert again == s
    assert scenario_to_toml(again) == scenario_to_toml(s)
    assert scenario_hash(again) == scenario_hash(s)


@pytest.mark.parametrize("name", ["whiteblock/phase2-series1b.toml", "examples/quick.toml"])
def test_repository_scenarios_round_trip(name: str) -> None:
    s = load_scenario(REPO / "scenarios" / name)
    assert round_trip(s) == s


def test_whiteblock_scenario_values() -> None:
    s = load_scenario(REPO / "scenarios/whiteblock/phase2-series1b.toml")
    assert s.name == "whiteblock-phase2-series1b"
    assert "Whiteblock" in s.description and "Phase 2" in s.description
    assert (s.seed, s.topology.kind, s.topology.nodes, s.topology.m) == (
        42,
        "barabasi-albert",
        95,
        6,
    )
    assert s.topology.seed == 42
    # The testbed ran go-libp2p-pubsub v0.1.1: gossipsub v1.0, D_lo = 4.
    assert (s.protocol.version, s.protocol.D, s.protocol.D_lo, s.protocol.heartbeat) == (
        "1.0",
        6,
        4,
        1_000_000_000,
    )
    w = s.workload
    assert (w.messages, w.rate, w.size, w.warmup, w.cooldown) == (
        36_000,
        200.0,
        1000,
        10_000_000_000,
        10_000_000_000,
    )


def test_resolved_toml_writes_every_default() -> None:
    data = tomllib.loads(scenario_to_toml(parse_scenario({}, HERE)))
    assert data["network"]["latency"] == "0ms"
    assert data["network"]["upload"] == "unlimited"
    assert data["protocol"]["heartbeat"] == "1s"
    assert data["protocol"]["seen_ttl"] == "2min"
    assert data["protocol"]["score"]["retain_score"] == "1h"
    assert data["topology"]["seed"] == 1
    assert data["workload"]["rate"] == "10/s"
    assert list(data)[:4] == ["name", "description", "seed", "backend"]


def test_scenario_hash_changes_with_the_scenario() -> None:
    a = parse_scenario({}, HERE)
    b = parse_scenario({"seed": 2}, HERE)
    assert scenario_hash(a) == scenario_hash(parse_scenario({}, HERE))
    assert scenario_hash(a) != scenario_hash(b)
    assert len(scenario_hash(a)) == 64


def test_edges_path_kept_as_written_and_resolved_from_scenario_folder(tmp_path: Path) -> None:
    folder = tmp_path / "exp"
    folder.mkdir()
    (folder / "graph.txt").write_text("0 1\n1 2\n", encoding="utf-8")
    (folder / "s.toml").write_text('[topology]\nkind = "edges"\nfile = "graph.txt"\n')
    s = load_scenario(folder / "s.toml")
    assert s.topology.file == "graph.txt"
    assert s.topology.nodes == 3
    assert s.base_dir == folder.resolve()
    assert round_trip(s, base_dir=folder) == s


def test_scenario_is_frozen() -> None:
    s = parse_scenario({}, HERE)
    with pytest.raises(ValueError):
        s.seed = 5  # type: ignore[misc]


# --------------------------------------------------------------------------------------------
# set_dotted and sweeps
# --------------------------------------------------------------------------------------------


def test_set_dotted_copies_and_creates_tables() -> None:
    data = {"topology": {"m": 3}}
    changed = set_dotted(data, "protocol.score.enabled", True)
    assert changed == {"topology": {"m": 3}, "protocol": {"score": {"enabled": True}}}
    assert data == {"topology": {"m": 3}}
    assert set_dotted(data, "topology.m", 4)["topology"]["m"] == 4


def test_set_dotted_indexes_arrays() -> None:
    data = {"faults": [{"kind": "crash", "at": "1s"}]}
    assert set_dotted(data, "faults.0.at", "2s")["faults"][0]["at"] == "2s"


def test_set_dotted_refuses_a_value_in_the_middle() -> None:
    with pytest.raises(ScenarioError) as err:
        set_dotted({"network": {"latency": "50ms"}}, "network.latency.min", "1ms")
    (problem,) = err.value.problems
    assert problem.path == "network.latency.min"
    assert "'network.latency'" in problem.message


def test_set_dotted_index_must_be_ascii_digits() -> None:
    with pytest.raises(ScenarioError):
        set_dotted({"faults": [{}]}, "faults.²", 1)


def test_expand_sweep_cartesian_product() -> None:
    data = {"seed": 3, "sweep": {"topology.m": [2, 6], "protocol.D": [6, 8]}}
    points = expand_sweep(data)
    assert [a for a, _ in points] == [
        {"topology.m": 2, "protocol.D": 6},
        {"topology.m": 2, "protocol.D": 8},
        {"topology.m": 6, "protocol.D": 6},
        {"topology.m": 6, "protocol.D": 8},
    ]
    for assignments, point in points:
        assert "sweep" not in point
        assert point["topology"]["m"] == assignments["topology.m"]
        assert point["protocol"]["D"] == assignments["protocol.D"]
        assert point["seed"] == 3
    assert "sweep" in data  # the input is not modified


def test_expand_without_sweep_is_one_point() -> None:
    assert expand_sweep({"seed": 4}) == [({}, {"seed": 4})]


def test_sweep_point_problems_are_prefixed() -> None:
    with pytest.raises(ScenarioError) as err:
        expand_sweep({"sweep": {"topology.m": [2, 0, 200]}})
    messages = [(p.path, p.message) for p in err.value.problems]
    assert len(messages) == 2
    assert messages[0][0] == "topology.m"
    assert messages[0][1].startswith("at sweep point topology.m = 0: must be >= 1")
    assert messages[1][1].startswith("at sweep point topology.m = 200: must be <= nodes-1")


def test_problems_common_to_all_points_are_reported_once() -> None:
    with pytest.raises(ScenarioError) as err:
        expand_sweep({"colour": 1, "sweep": {"topology.m": [2, 3]}})
    assert [p.path for p in err.value.problems] == ["colour"]


def test_scenario_keeps_sweep_verbatim() -> None:
    s = parse_scenario({"sweep": {"topology.m": [2, 6, 12]}}, HERE)
    assert s.sweep == {"topology.m": [2, 6, 12]}


def test_sweep_points_follow_derived_defaults() -> None:
    # Sweeping the preset or the seed must change what they imply, so sweeps are expanded
    # from the data as written, not from the resolved scenario.
    s = parse_scenario(
        {"sweep": {"protocol.preset": ["go-default", "ethereum"], "seed": [1, 2]}}, HERE
    )
    points = sweep_points(s)
    assert len(points) == 4
    by_assignment = {(a["protocol.preset"], a["seed"]): p for a, p in points}
    assert by_assignment[("ethereum", 2)].protocol.D == 8
    assert by_assignment[("go-default", 2)].protocol.D == 6
    assert by_assignment[("ethereum", 2)].topology.seed == 2
    assert all(not p.sweep for _, p in points)


# --------------------------------------------------------------------------------------------
# Property: whatever the input, parse_scenario either succeeds or raises ScenarioError
# --------------------------------------------------------------------------------------------


def dotted_keys(table: dict[str, Any], prefix: str = "") -> list[str]:
    keys = []
    for key, value in table.items():
        keys.append(f"{prefix}{key}")
        if isinstance(value, dict):
            keys += dotted_keys(value, f"{prefix}{key}.")
    return keys


# Every key of a fully resolved scenario, plus the keys only other forms have.
FIELD_PATHS = sorted(
    set(dotted_keys(tomllib.loads(scenario_to_toml(parse_scenario({}, HERE)))))
    | {"topology.degree", "topology.p", "topology.k", "topology.file"}
    | {"network.latency.distribution", "network.latency.min", "network.latency.sigma"}
)

SCALARS = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.sampled_from(
        [
            "",
            "0",
            "1s",
            "-1s",
            "50ms",
            "10/s",
            "1e308/s",
            "1e-300/s",
            "unlimited",
            "1KiB",
            "edges",
            "ring",
            "line",
            "uniform",
            "poisson",
            "random",
            "ethereum",
            "crash",
            "partition",
            "2.0",
            "floodsub",
        ]
    ),
    st.text(max_size=8),
)
VALUES = st.recursive(
    SCALARS,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(["kind", "at", "count", "nodes", "x", "min"]), children, max_size=4
        )
    ),
    max_leaves=10,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(FIELD_PATHS), VALUES), max_size=5))
def test_random_inputs_raise_only_scenario_errors(assignments: list[tuple[str, Any]]) -> None:
    data: dict[str, Any] = {}
    for path, value in assignments:
        try:
            data = set_dotted(data, path, value)
        except ScenarioError:
            continue
    try:
        parse_scenario(data, HERE)
    except ScenarioError as err:
        assert err.problems
        assert "Traceback" not in str(err)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(max_size=10), VALUES, max_size=5))
def test_random_top_level_tables_raise_only_scenario_errors(data: dict[str, Any]) -> None:
    try:
        parse_scenario(data, HERE)
    except ScenarioError as err:
        assert err.problems


def test_reference_documents_every_field() -> None:
    # docs/scenario.md, and the protocol parameter table in docs/protocol.md it points to.
    reference = (REPO / "docs" / "scenario.md").read_text(encoding="utf-8")
    reference += (REPO / "docs" / "protocol.md").read_text(encoding="utf-8")
    resolved = parse_scenario(RICH_SCENARIO, HERE).model_dump(mode="json")
    other_forms = {"degree", "p", "k", "file", "mean", "std", "median", "sigma", "at"}
    fault_fields = {key for fault in RICH_SCENARIO["faults"] for key in fault}
    names = {path.rsplit(".", 1)[-1] for path in dotted_keys(resolved) + FIELD_PATHS}
    names |= other_forms | fault_fields
    # A field is documented when it is named in code, as a [section], or in an example.
    forms = ("`{}`", "[{}]", ".{}]", "{} = ")
    missing = sorted(n for n in names if not any(f.format(n) in reference for f in forms))
    assert not missing, f"docs/scenario.md and docs/protocol.md do not mention {missing}"


def test_reference_example_is_valid() -> None:
    reference = (REPO / "docs" / "scenario.md").read_text(encoding="utf-8")
    example = reference.split("```toml\n", 1)[1].split("```", 1)[0]
    s = parse_scenario(tomllib.loads(example), HERE)
    assert s.sweep == {"protocol.D": [6, 8, 10]}
    assert [p.protocol.D for _, p in sweep_points(s)] == [6, 8, 10]


def test_a_sweep_key_naming_several_fields_sets_them_in_lockstep() -> None:
    sweep = {"protocol.D_announce": [0, 7], "workload.messages,workload.batch": [[1, 1], [4, 4]]}
    points = expand_sweep({"sweep": sweep, "protocol": {"version": "2.0", "D": 8}})
    assert [assignments for assignments, _ in points] == [
        {"protocol.D_announce": 0, "workload.messages": 1, "workload.batch": 1},
        {"protocol.D_announce": 0, "workload.messages": 4, "workload.batch": 4},
        {"protocol.D_announce": 7, "workload.messages": 1, "workload.batch": 1},
        {"protocol.D_announce": 7, "workload.messages": 4, "workload.batch": 4},
    ]
    assert points[3][1]["workload"] == {"messages": 4, "batch": 4}


def test_a_linked_sweep_value_must_set_every_field() -> None:
    with pytest.raises(ScenarioError) as caught:
        expand_sweep({"sweep": {"workload.messages,workload.batch": [[1, 1], [4]]}})
    assert caught.value.problems[0].path == 'sweep."workload.messages,workload.batch"'
