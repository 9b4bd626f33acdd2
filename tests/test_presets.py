"""presets.toml, the one definition of the protocol presets: complete, in the plain shape
its header promises to other readers (the engine's tests, the Go node), read by the
scenario parser as written, and equal to go-libp2p-pubsub v0.17.0's own defaults."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest

from gossiplab.scenario import ProtocolConfig, ScoreConfig, parse_scenario
from gossiplab.scenario.presets import PRESETS_FILE
from gossiplab.units import parse_duration, parse_size

REPO = Path(__file__).resolve().parent.parent
FILE: dict[str, Any] = tomllib.loads(PRESETS_FILE.read_text(encoding="utf-8"))
PRESETS = ("go-default", "rust-default", "ethereum")
# Chosen per scenario, never by a preset.
NOT_PRESET = {
    "name",
    "version",
    "preset",
    "direct_peers",
    "score",
    # Per version (go v0.17.0 or the v2.0 fork), not per preset.
    "announce_own",
    "idontwant_on_publish",
    "idontwant_to_sender",
}
DURATION = re.compile(r"[0-9]+(ns|us|ms|s)")
SIZE = re.compile(r"[0-9]+B")
DURATION_FIELDS = {
    "heartbeat",
    "heartbeat_initial_delay",
    "fanout_ttl",
    "seen_ttl",
    "prune_backoff",
    "unsubscribe_backoff",
    "graft_flood_threshold",
    "iwant_followup_time",
    "ineed_timeout",
    "time_in_mesh_quantum",
    "mesh_message_deliveries_activation",
    "mesh_message_deliveries_window",
    "decay_interval",
    "retain_score",
}


def test_the_file_holds_the_three_presets_and_nothing_else() -> None:
    assert tuple(FILE) == PRESETS


@pytest.mark.parametrize("preset", PRESETS)
def test_every_preset_sets_every_parameter(preset: str) -> None:
    table = dict(FILE[preset])
    score = table.pop("score")
    assert set(table) == set(ProtocolConfig.model_fields) - NOT_PRESET
    assert set(score) == set(ScoreConfig.model_fields) - {"app_specific"}


@pytest.mark.parametrize("preset", PRESETS)
def test_values_keep_the_plain_shape_other_readers_parse(preset: str) -> None:
    # Durations are an integer and ns/us/ms/s, sizes an integer and B; no other strings
    # than these and the two enumerations.
    values = {**FILE[preset], **FILE[preset]["score"]}
    del values["score"]
    for name, value in values.items():
        assert isinstance(value, bool | int | float | str), name
        if name in DURATION_FIELDS:
            assert DURATION.fullmatch(value), f"{preset}.{name} = {value!r}"
        elif name == "idontwant_threshold":
            assert SIZE.fullmatch(value), f"{preset}.{name} = {value!r}"
        elif isinstance(value, str):
            assert name in ("signing", "message_id"), f"{preset}.{name} = {value!r}"


def _parsed(name: str, value: Any) -> Any:
    if name in DURATION_FIELDS:
        return parse_duration(value)
    if name == "idontwant_threshold":
        return parse_size(value)
    return value


@pytest.mark.parametrize("preset", PRESETS)
def test_naming_a_preset_gives_the_files_values(preset: str) -> None:
    protocol = parse_scenario({"protocol": {"preset": preset}}, REPO).protocol
    table = dict(FILE[preset])
    score = table.pop("score")
    assert {n: getattr(protocol, n) for n in table} == {n: _parsed(n, v) for n, v in table.items()}
    got_score = {n: getattr(protocol.score, n) for n in score}
    assert got_score == {n: _parsed(n, v) for n, v in score.items()}


def test_ethereum_follows_the_consensus_specs() -> None:
    # consensus-specs p2p-interface: D 8, D_low 6, D_high 12, D_lazy 6, heartbeat 0.7 s,
    # mcache_len 6, mcache_gossip 3, seen_ttl = SLOTS_PER_EPOCH * SECONDS_PER_SLOT * 2.
    slots_per_epoch, seconds_per_slot = 32, 12
    eth = FILE["ethereum"]
    assert (eth["D"], eth["D_lo"], eth["D_hi"], eth["D_lazy"]) == (8, 6, 12, 6)
    assert parse_duration(eth["heartbeat"]) == 700_000_000
    assert (eth["history_length"], eth["history_gossip"]) == (6, 3)
    assert parse_duration(eth["seen_ttl"]) == slots_per_epoch * seconds_per_slot * 2 * 10**9
    assert (eth["signing"], eth["message_id"]) == ("strict-no-sign", "ethereum")


def _go_module_dir() -> Path | None:
    go = shutil.which("go") or (
        "/usr/local/go/bin/go" if os.path.exists("/usr/local/go/bin/go") else None
    )
    if go is None:
        return None
    cache = subprocess.run([go, "env", "GOMODCACHE"], capture_output=True, text=True).stdout
    folder = Path(cache.strip()) / "github.com/libp2p/go-libp2p-pubsub@v0.17.0"
    return folder if (folder / "gossipsub.go").is_file() else None


GO_UNITS = {"time.Millisecond": 10**6, "time.Second": 10**9, "time.Minute": 60 * 10**9}
# A scenario field -> the go-libp2p-pubsub constant that holds go's default.
GO_NAMES = {
    "D": "GossipSubD",
    "D_lo": "GossipSubDlo",
    "D_hi": "GossipSubDhi",
    "D_score": "GossipSubDscore",
    "D_out": "GossipSubDout",
    "D_lazy": "GossipSubDlazy",
    "history_length": "GossipSubHistoryLength",
    "history_gossip": "GossipSubHistoryGossip",
    "gossip_factor": "GossipSubGossipFactor",
    "gossip_retransmission": "GossipSubGossipRetransmission",
    "heartbeat_initial_delay": "GossipSubHeartbeatInitialDelay",
    "heartbeat": "GossipSubHeartbeatInterval",
    "fanout_ttl": "GossipSubFanoutTTL",
    "prune_peers": "GossipSubPrunePeers",
    "prune_backoff": "GossipSubPruneBackoff",
    "unsubscribe_backoff": "GossipSubUnsubscribeBackoff",
    "opportunistic_graft_ticks": "GossipSubOpportunisticGraftTicks",
    "opportunistic_graft_peers": "GossipSubOpportunisticGraftPeers",
    "graft_flood_threshold": "GossipSubGraftFloodThreshold",
    "max_ihave_length": "GossipSubMaxIHaveLength",
    "max_ihave_messages": "GossipSubMaxIHaveMessages",
    "iwant_followup_time": "GossipSubIWantFollowupTime",
    "idontwant_threshold": "GossipSubIDontWantMessageThreshold",
    "seen_ttl": "TimeCacheDuration",
    "validate_queue": "defaultValidateQueueSize",
}


def _go_value(expression: str) -> int | float:
    """A Go constant expression of the forms go uses here: 6, 0.25, 100 * time.Millisecond,
    time.Minute."""
    factor = 1
    for unit, ns in GO_UNITS.items():
        if unit in expression:
            factor, expression = ns, expression.replace(unit, "1")
    terms = [t.strip() for t in expression.split("*")]
    value: int | float = factor
    for term in terms:
        value *= float(term) if "." in term else int(term)
    return value


def _go_defaults(folder: Path) -> dict[str, int | float]:
    text = "\n".join(
        (folder / f).read_text() for f in ("gossipsub.go", "pubsub.go", "validation.go")
    )
    found = {}
    for line in text.splitlines():
        match = re.fullmatch(r"\s*(\w+)\s+(?:uint64\s+)?=\s*([^/]+?)\s*(//.*)?", line)
        if match and match.group(1) in GO_NAMES.values():
            found.setdefault(match.group(1), _go_value(match.group(2)))
    return found


def test_go_default_is_go_libp2p_pubsubs_own_defaults() -> None:
    folder = _go_module_dir()
    if folder is None:
        pytest.skip("go-libp2p-pubsub v0.17.0 is not in the Go module cache (make test fetches it)")
    go = _go_defaults(folder)
    preset = FILE["go-default"]
    wrong = {
        name: (preset[name], go[const])
        for name, const in GO_NAMES.items()
        if _parsed(name, preset[name]) != go[const]
    }
    assert not wrong, f"go-default differs from go-libp2p-pubsub v0.17.0: {wrong}"
    # The outbound queue is a literal in pubsub.go's NewPubSub, not a named constant.
    assert re.search(r"peerOutboundQueueSize:\s*32,", (folder / "pubsub.go").read_text())
    assert preset["peer_outbound_queue"] == 32
