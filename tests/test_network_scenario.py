"""The network section's regions, class presets and TCP window: resolution and refusals."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, get_args

import pytest

from gossiplab.errors import ScenarioError
from gossiplab.geography import exact_counts
from gossiplab.network_presets import CLASS_PRESETS, REGION_PRESETS
from gossiplab.scenario import (
    ClassPreset,
    RegionPreset,
    expand_sweep,
    load_scenario,
    parse_scenario,
    scenario_to_toml,
)

HERE = Path(__file__).parent
REPO = HERE.parent
MS = 1_000_000


def network(**fields: Any) -> Any:
    return parse_scenario({"network": fields}, HERE).network


def test_preset_names_match_the_preset_tables() -> None:
    assert set(get_args(RegionPreset)) == set(REGION_PRESETS)
    assert set(get_args(ClassPreset)) == set(CLASS_PRESETS)


def test_ethereum_regions_are_ethshadows_matrix() -> None:
    regions = network(regions="ethereum").regions
    assert regions.preset == "ethereum"
    assert len(regions.names) == 8
    index = {name: i for i, name in enumerate(regions.names)}

    def one_way(a: str, b: str) -> int:
        return regions.latency[index[a]][index[b]]

    # Spot checks against ethshadow's add_default_builtins, asymmetry kept as published.
    assert one_way("europe", "na_east") == 70 * MS
    assert one_way("south_africa", "south_america") == 190 * MS
    assert one_way("south_america", "south_africa") == 195 * MS
    assert one_way("australia", "south_africa") == 220 * MS
    assert one_way("east_asia", "east_asia") == 4 * MS
    assert dict(zip(regions.names, regions.weights, strict=True)) == {
        "australia": 0.05,
        "east_asia": 0.08,
        "europe": 0.36,
        "na_west": 0.22,
        "na_east": 0.22,
        "south_america": 0.01,
        "south_africa": 0.01,
        "west_asia": 0.05,
    }


def test_a_region_preset_table_overrides_what_it_names() -> None:
    weights = [0.125] * 8
    regions = network(regions={"preset": "ethereum", "weights": weights}).regions
    assert regions.weights == weights
    assert regions.latency == network(regions="ethereum").regions.latency


def test_pubsub_shadow_regions_are_the_v2_studys_weights() -> None:
    # ppopth/pubsub-shadow network_graph.py: Location weights, ethshadow's latency matrix.
    study = {
        "australia": 290,
        "europe": 5599,
        "east_asia": 1059,
        "west_asia": 161,
        "na_east": 2894,
        "na_west": 1240,
        "south_africa": 47,
        "south_america": 36,
    }
    regions = network(regions="pubsub-shadow").regions
    assert regions.latency == network(regions="ethereum").regions.latency
    weights = dict(zip(regions.names, regions.weights, strict=True))
    assert weights == pytest.approx({name: n / 11_326 for name, n in study.items()}, abs=1e-6)
    counts = exact_counts(regions.weights, 11_326)
    assert dict(zip(regions.names, counts, strict=True)) == study


def test_region_weights_may_miss_1_by_rounding_and_count_in_proportion() -> None:
    table = {"names": ["a", "b"], "latency": [["1ms", "2ms"], ["2ms", "1ms"]]}
    regions = network(regions={**table, "weights": [0.5, 0.500001]}).regions
    assert exact_counts(regions.weights, 10) == [5, 5]
    with pytest.raises(ScenarioError, match=r"network\.regions\.weights: must add up to 1"):
        network(regions={**table, "weights": [0.5, 0.51]})


def test_class_presets_fill_fields_and_written_fields_win() -> None:
    classes = network(
        upload="1Gbit",
        classes=[
            {"preset": "laggy", "share": 0.5},
            {"preset": "bad", "name": "worst", "share": 0.5, "added_latency": "1s"},
        ],
    ).classes
    laggy, worst = classes
    assert (laggy.name, laggy.upload, laggy.download) == ("laggy", 50_000_000, 50_000_000)
    assert (laggy.added_latency, laggy.added_loss) == (300 * MS, 0.05)
    assert (worst.name, worst.preset, worst.upload) == ("worst", "bad", 2_000_000)
    assert (worst.added_latency, worst.added_loss) == (1000 * MS, 0.2)


def test_initial_window_defaults_to_linux_iw10() -> None:
    assert network().initial_window == 10
    assert network(initial_window=0).initial_window == 0


@pytest.mark.parametrize("name", ["ethereum/blobs-1000.toml"])
def test_repository_scenarios_round_trip(name: str) -> None:
    s = load_scenario(REPO / "scenarios" / name)
    again = parse_scenario(tomllib.loads(scenario_to_toml(s)), HERE)
    assert again == s


def test_ethereum_blobs_scenario_is_what_it_says() -> None:
    s = load_scenario(REPO / "scenarios/ethereum/blobs-1000.toml")
    assert (s.topology.kind, s.topology.nodes, s.topology.k) == ("dial-until", 1000, 35)
    assert s.network.regions is not None and s.network.regions.preset == "ethereum"
    assert [(c.name, c.share, c.upload) for c in s.network.classes] == [
        ("reliable", 0.2, 1_000_000_000),
        ("home", 0.8, 50_000_000),
    ]
    w = s.workload
    assert (w.size, w.batch, w.messages) == (128 * 1024, 8, 64)
    # One batch per 12 s slot.
    assert w.batch / w.rate == pytest.approx(12.0)
    assert s.protocol.preset == "ethereum"


TABLE = {"names": ["a", "b"], "weights": [0.5, 0.5], "latency": [["1ms", "2ms"], ["2ms", "1ms"]]}

MALFORMED: list[tuple[str, dict[str, Any], str]] = [
    ("unknown-region-preset", {"regions": "ethereun"}, "network.regions"),
    ("regions-not-a-table", {"regions": 3}, "network.regions"),
    ("region-field-typo", {"regions": {**TABLE, "wieghts": [1]}}, "network.regions.wieghts"),
    ("no-region-names", {"regions": {**TABLE, "names": []}}, "network.regions.names"),
    ("duplicate-region", {"regions": {**TABLE, "names": ["a", "a"]}}, "network.regions.names[1]"),
    ("empty-region-name", {"regions": {**TABLE, "names": ["a", " "]}}, "network.regions.names[1]"),
    ("weights-count", {"regions": {**TABLE, "weights": [1.0]}}, "network.regions.weights"),
    ("zero-weight", {"regions": {**TABLE, "weights": [1.0, 0.0]}}, "network.regions.weights[1]"),
    ("weights-sum", {"regions": {**TABLE, "weights": [0.5, 0.6]}}, "network.regions.weights"),
    (
        "latency-rows",
        {"regions": {**TABLE, "latency": [["1ms", "2ms"]]}},
        "network.regions.latency",
    ),
    (
        "latency-not-square",
        {"regions": {**TABLE, "latency": [["1ms", "2ms"], ["2ms"]]}},
        "network.regions.latency[1]",
    ),
    (
        "negative-latency",
        {"regions": {**TABLE, "latency": [["1ms", "-2ms"], ["2ms", "1ms"]]}},
        "network.regions.latency[0][1]",
    ),
    ("latency-and-regions", {"regions": TABLE, "latency": "50ms"}, "network.latency"),
    (
        "distribution-and-class-latency",
        {
            "latency": {"distribution": "uniform", "min": "1ms", "max": "9ms"},
            "classes": [{"preset": "home", "share": 1.0}],
        },
        "network.latency",
    ),
    (
        "unknown-class-preset",
        {"classes": [{"preset": "fiber", "share": 1.0}]},
        "network.classes[0].preset",
    ),
    ("class-without-name", {"classes": [{"share": 1.0}]}, "network.classes[0].name"),
    (
        "negative-added-latency",
        {"classes": [{"name": "x", "share": 1.0, "added_latency": "-5ms"}]},
        "network.classes[0].added_latency",
    ),
    (
        "added-loss-one",
        {"classes": [{"name": "x", "share": 1.0, "added_loss": 1.0}]},
        "network.classes[0].added_loss",
    ),
    (
        "link-loss-reaches-one",
        {
            "loss": 0.7,
            "classes": [{"preset": "home", "share": 0.5}, {"preset": "bad", "share": 0.5}],
        },
        "network.classes[1].added_loss",
    ),
    ("negative-initial-window", {"initial_window": -1}, "network.initial_window"),
    ("pacing-without-window", {"initial_window": 0, "pacing": True}, "network.pacing"),
    ("negative-connect-round-trips", {"connect_round_trips": -1}, "network.connect_round_trips"),
    (
        "packets-without-windows",
        {"downlink_sharing": "packets", "uplink_sharing": "fifo"},
        "network.downlink_sharing",
    ),
    ("unknown-downlink-sharing", {"downlink_sharing": "fq"}, "network.downlink_sharing"),
]


@pytest.mark.parametrize(
    ("fields", "path"), [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED]
)
def test_malformed_network_is_reported_with_its_field(fields: dict[str, Any], path: str) -> None:
    with pytest.raises(ScenarioError) as err:
        parse_scenario({"network": fields}, HERE)
    paths = [p.path for p in err.value.problems]
    assert path in paths, err.value.problems
    assert all(p.message and p.hint for p in err.value.problems), err.value.problems


def test_ethereum_announce_sweep_is_the_v2_study_setup() -> None:
    # ppopth/pubsub-shadow: main.go (dial until 35, D 8/6/12, history 6/3, INEED timeout
    # 1 s, queues 600, StrictNoSign, node 0 publishing every message) and run_sim.sh
    # (heartbeat 700 ms for D_announce 0, 1.5 s for 7 and 8).
    s = load_scenario(REPO / "scenarios/ethereum/announce-sweep.toml")
    assert (s.topology.kind, s.topology.nodes, s.topology.k) == ("dial-until", 1000, 35)
    assert s.network.regions is not None and s.network.regions.preset == "pubsub-shadow"
    # shadow.yaml: Shadow's legacy TCP from 2 packets, no restart after idle.
    net = s.network
    assert (net.uplink_sharing, net.initial_window, net.slow_start_after_idle) == (
        "shadow",
        2,
        False,
    )
    # Shadow's upstream router: one CoDel queue of packets (routing/router.c), as the default.
    assert net.downlink_sharing == "fair"
    assert [(c.share, c.upload, c.added_latency) for c in s.network.classes] == [
        (0.2, 1024 * 10**6, 0),
        (0.8, 50 * 10**6, 0),
    ]
    p = s.protocol
    assert (p.version, p.D, p.D_lo, p.D_hi, p.history_length, p.history_gossip) == (
        "2.0",
        8,
        6,
        12,
        6,
        3,
    )
    assert (p.ineed_timeout, p.peer_outbound_queue, p.validate_queue) == (1000 * MS, 600, 600)
    assert p.signing == "strict-no-sign"
    assert s.workload.batch_publisher == "same"
    heartbeat = {}
    for _, point in expand_sweep(s.source_data, base_dir=s.base_dir):
        resolved = parse_scenario(point, s.base_dir).protocol
        heartbeat[resolved.D_announce] = resolved.heartbeat
    assert heartbeat == {0: 700 * MS, 7: 1500 * MS, 8: 1500 * MS}
