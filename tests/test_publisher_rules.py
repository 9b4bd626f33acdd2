"""The publisher and IDONTWANT settings of [protocol] reach the engine, on hand-built graphs
where go's rules (and the v2.0 fork's) fix what each node may send.

The engine's tests (crates/engine/tests/publisher_rules.rs, idontwant_rules.rs) pin each
rule message by message; these check the scenario fields, their version defaults and what
the real-node backends refuse.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest

from gossiplab.backends.model import check_supported as model_check
from gossiplab.backends.simnet import support as simnet_support
from gossiplab.backends.testbed import support as testbed_support
from gossiplab.errors import ScenarioError
from gossiplab.runner import run
from gossiplab.scenario import parse_scenario

MESSAGES = 40
CHECKS = {"testbed": testbed_support.check_supported, "simnet": simnet_support.check_supported}


def pair_run(tmp_path: Path, name: str, **protocol: Any) -> dict[str, Any]:
    """Two connected nodes, each the other's only mesh peer; 40 messages of 4 KiB (over the
    IDONTWANT threshold) after the warm-up, so every one goes over the mesh."""
    edges = tmp_path / "pair.txt"
    edges.write_text("0 1\n")
    s = parse_scenario(
        {
            "seed": 3,
            "topology": {"kind": "edges", "file": "pair.txt"},
            "network": {"latency": "10ms"},
            "protocol": protocol,
            "workload": {"messages": MESSAGES, "rate": "20/s", "size": "4KiB"},
        },
        base_dir=tmp_path,
    )
    return run(s, tmp_path / name).summary


def test_go_s_publisher_tells_its_mesh_and_spares_the_sender(tmp_path: Path) -> None:
    # go v0.17.0: IDONTWANT on publish to the mesh (the one peer), none on receipt, since
    # the receiver's only mesh peer is the sender.
    control = pair_run(tmp_path, "go", version="1.2")["control"]
    assert control["idontwant"] == MESSAGES


def test_the_fork_tells_the_sender_and_not_on_publish(tmp_path: Path) -> None:
    # The v2.0 fork: nothing on publish, the receiver tells its sender. D_announce 0: no
    # coin, every copy is eager, so IDONTWANT is the only difference from 1.2.
    control = pair_run(tmp_path, "fork", version="2.0", D_announce=0)["control"]
    assert control["idontwant"] == MESSAGES


def test_each_rule_is_a_setting(tmp_path: Path) -> None:
    silent = pair_run(tmp_path, "silent", version="1.2", idontwant_on_publish=False)
    assert silent["control"]["idontwant"] == 0
    both = pair_run(tmp_path, "both", version="1.2", idontwant_to_sender=True)
    assert both["control"]["idontwant"] == 2 * MESSAGES


def test_the_publisher_tosses_the_coin_unless_eager(tmp_path: Path) -> None:
    # D_announce 3 of D 6: each own message is announced with probability 1/2 to the one
    # mesh peer; relays have nobody else to announce to. 40 tosses: P(none or all) ~ 2e-12.
    coin = pair_run(tmp_path, "coin", version="2.0", D_announce=3)
    assert 0 < coin["control"]["iannounce"] < MESSAGES
    eager = pair_run(tmp_path, "eager", version="2.0", D_announce=3, announce_own="eager")
    assert eager["control"]["iannounce"] == 0
    for summary in (coin, eager):
        assert summary["delivery"]["ratio"] == 1.0


@pytest.mark.parametrize("field", ["idontwant_on_publish", "idontwant_to_sender"])
def test_idontwant_settings_need_a_version_with_idontwant(tmp_path: Path, field: str) -> None:
    with pytest.raises(ScenarioError) as refused:
        parse_scenario({"protocol": {"version": "1.1", field: True}}, base_dir=tmp_path)
    assert f"protocol.{field}" in str(refused.value) and "v1.2" in str(refused.value)


@pytest.mark.parametrize("backend", ["testbed", "simnet"])
@pytest.mark.parametrize(
    ("field", "value"), [("idontwant_on_publish", False), ("idontwant_to_sender", True)]
)
def test_real_nodes_refuse_what_go_cannot_do(
    tmp_path: Path, backend: str, field: str, value: bool
) -> None:
    written = {"backend": backend, "protocol": {"version": "1.2", field: value}}
    s = parse_scenario(written, base_dir=tmp_path)
    with pytest.raises(ScenarioError) as refused:
        CHECKS[backend](s)
    assert f"protocol.{field}" in str(refused.value) and "v0.17.0" in str(refused.value)


@pytest.mark.parametrize("backend", ["testbed", "simnet"])
def test_real_nodes_accept_go_s_own_rules_written_out(tmp_path: Path, backend: str) -> None:
    protocol = {"version": "1.2", "idontwant_on_publish": True, "idontwant_to_sender": False}
    CHECKS[backend](parse_scenario({"backend": backend, "protocol": protocol}, base_dir=tmp_path))


def spread_run(tmp_path: Path, name: str, signing: str) -> tuple[dict[str, Any], pl.DataFrame]:
    """20 nodes of degree 8 with latencies spread 5-80 ms, so a relay's copy often reaches
    a mesh peer of the publisher before the publisher's own copy does. Version 1.1: no
    IDONTWANT to stop copies going back."""
    s = parse_scenario(
        {
            "seed": 4,
            "topology": {"kind": "random-regular", "nodes": 20, "degree": 8},
            "network": {"latency": {"distribution": "uniform", "min": "5ms", "max": "80ms"}},
            "protocol": {"version": "1.1", "signing": signing, "message_id": "ethereum"},
            "workload": {"messages": 30, "rate": "10/s", "size": "1KiB"},
        },
        base_dir=tmp_path,
    )
    result = run(s, tmp_path / name)
    return result.summary, pl.read_parquet(tmp_path / name / "publishes.parquet")


def test_copies_come_back_only_to_an_anonymous_author(tmp_path: Path) -> None:
    # go forwards to the mesh minus the sender and minus msg.GetFrom(): with an author
    # the publisher never gets its message back; without one it can.
    signed, signed_publishes = spread_run(tmp_path, "signed", "strict-sign")
    assert signed_publishes["publisher_duplicates"].sum() == 0
    assert signed["duplicates"]["publisher"] == 0
    anonymous, publishes = spread_run(tmp_path, "anonymous", "strict-no-sign")
    assert anonymous["duplicates"]["publisher"] == publishes["publisher_duplicates"].sum() > 0


def test_the_model_counts_control_in_entries_too(tmp_path: Path) -> None:
    summary, _ = spread_run(tmp_path, "entries", "strict-sign")
    ids, entries = summary["control"], summary["control_entries"]
    # One GRAFT or PRUNE entry per topic; an IHAVE entry carries one or more ids.
    assert entries["graft"] == ids["graft"] > 0
    assert 0 < entries["ihave"] <= ids["ihave"]


def test_a_pair_sends_each_message_once_and_the_first_ones_are_left_out(
    tmp_path: Path,
) -> None:
    # 1.1 on a pair: the publisher's copy to its one peer is the only payload copy (the
    # receiver has nobody else, and never the author), so per message: one copy.
    edges = tmp_path / "pair.txt"
    edges.write_text("0 1\n")
    s = parse_scenario(
        {
            "topology": {"kind": "edges", "file": "pair.txt"},
            "network": {"latency": "10ms"},
            "workload": {"messages": 10, "rate": "20/s", "size": "1KiB", "exclude_first": 3},
            "output": {"message_traffic": True},
        },
        base_dir=tmp_path,
    )
    summary = run(s, tmp_path / "out").summary
    per_message = pl.read_parquet(tmp_path / "out" / "message_traffic.parquet")
    payload = per_message.filter(pl.col("kind") == "payload")
    assert payload["msg"].to_list() == list(range(10))
    assert payload["msgs_sent"].to_list() == [1] * 10
    measured = summary["traffic_measured"]
    assert summary["messages"]["measured"] == measured["messages"] == 7
    assert measured["by_kind"]["payload"]["msgs_sent"] == 7
    # The message's publish field: at least its 1,024 data bytes per copy.
    assert measured["by_kind"]["payload"]["bytes_sent"] >= 7 * 1024


@pytest.mark.parametrize("backend", ["testbed", "simnet"])
def test_real_nodes_refuse_per_message_traffic(tmp_path: Path, backend: str) -> None:
    s = parse_scenario({"backend": backend, "output": {"message_traffic": True}}, tmp_path)
    with pytest.raises(ScenarioError, match=r"output\.message_traffic"):
        CHECKS[backend](s)


def test_aggregate_mode_refuses_exclude_first(tmp_path: Path) -> None:
    written = {"output": {"mode": "aggregate"}, "workload": {"exclude_first": 2}}
    s = parse_scenario(written, base_dir=tmp_path)
    with pytest.raises(ScenarioError, match=r"workload\.exclude_first"):
        model_check(s)
