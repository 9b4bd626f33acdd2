"""Partial messages on the real Go nodes: what Python hands them and what it reads back.

The node config carries each node's role and held parts in go's bitmap layout; the
converter turns the nodes' records into ``partial.parquet`` and makes a node's delivery
of a group the moment it held every part; and a small mixed network on simnet (real
go-libp2p-pubsub hosts in virtual time) completes every group at every node, each part
accounted for once.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from gossiplab.backends.simnet import run_simnet
from gossiplab.backends.testbed.convert import convert
from gossiplab.backends.testbed.crosscheck import PARTIAL_METRICS, partial_rows
from gossiplab.backends.testbed.nodeconfig import held_hex, node_configs, partial_plan
from gossiplab.backends.testbed.partialcheck import partial_figures
from gossiplab.runner import run
from gossiplab.scenario import Scenario, parse_scenario
from gossiplab.topology import build_topology
from gossiplab.workload import build_schedule, end_time_ns

NEEDS_GO = pytest.mark.skipif(shutil.which("go") is None, reason="the simnet runner needs Go")
V13 = {"version": "1.3", "message_id": "ethereum", "signing": "strict-no-sign"}


def scenario(nodes: int = 6, **partial: Any) -> Scenario:
    data = {
        "seed": 3,
        "topology": {"kind": "full", "nodes": nodes},
        "network": {"latency": "20ms", "upload": "50Mbit", "download": "50Mbit"},
        "protocol": V13,
        "workload": {
            "messages": 3,
            "rate": "1/s",
            "warmup": "3s",
            "cooldown": "3s",
            "publishers": [0],
            "partial": {"parts": 12, "part_size": "1KiB", **partial},
        },
    }
    return parse_scenario(data, Path("."))


def test_held_parts_are_written_in_gos_bitmap_layout() -> None:
    # bitmap.go Set: part i is bit i % 8 of byte i // 8. Parts 0 and 9 of 12: bytes
    # 0x01 (part 0) and 0x02 (part 9 = bit 1 of byte 1).
    assert held_hex((1 << 0) | (1 << 9), 12) == "0102"
    assert held_hex((1 << 48) - 1, 48) == "ff" * 6
    assert held_hex(0, 1) == "00"


def test_disabled_partial_messages_reach_the_go_nodes_as_whole_messages() -> None:
    s = scenario(enabled=False)
    schedule = build_schedule(s, 6)
    configs = node_configs(s, build_topology(s), schedule, {i: f"n{i}" for i in range(6)})
    assert all("partial" not in config for config in configs.values())
    # The same bytes as a group's full message: 12 parts of 1 KiB with 48 B of proof.
    assert {pub["size"] for pub in configs[0]["schedule"]} == {12 * (1024 + 48)}


def test_each_node_gets_its_role_and_its_parts_of_every_group() -> None:
    s = scenario(roles={"requests": 0.5, "supports": 0.25}, mempool={"missing": 2})
    schedule = build_schedule(s, 6)
    plan = partial_plan(s, schedule)
    assert plan is not None
    configs = node_configs(s, build_topology(s), schedule, {i: f"n{i}" for i in range(6)})
    for node, config in configs.items():
        partial = config["partial"]
        assert partial["role"] == plan.roles[node]
        assert sorted(partial["held"]) == ["0", "1", "2"]
        for msg, value in partial["held"].items():
            held = int.from_bytes(bytes.fromhex(value), "little")
            assert held == plan.held[int(msg)][node]
            # The publisher holds all 12; a node with the extension misses exactly 2;
            # one without holds none (it takes the full message).
            want = 12 if node == 0 else (0 if plan.roles[node] == "none" else 10)
            assert held.bit_count() == want
        assert partial["parts"] == 12 and partial["part_size"] == 1024
        assert config["version"] == "1.3"


def write_node(folder: Path, result: dict[str, Any], events: list[dict[str, Any]]) -> None:
    folder.mkdir(parents=True)
    (folder / "node.json").write_text(json.dumps(result), encoding="utf-8")
    lines = "".join(json.dumps(e) + "\n" for e in events)
    (folder / "trace.ndjson").write_text(lines, encoding="utf-8")


def test_a_group_is_delivered_when_the_node_holds_every_part(tmp_path: Path) -> None:
    """Three nodes, one group from node 0: node 1 completes from parts at 50 ms (its
    full-message copy at 80 ms is later), node 2 (no extension) by the full message at
    60 ms; node 1's own re-publish is delivered locally and is no receipt."""
    s = scenario(nodes=3, roles={"requests": 0.34, "supports": 0.0})
    schedule = build_schedule(s, 3)
    plan = partial_plan(s, schedule)
    assert plan is not None
    ids = ["aWQw", "aWQx", "aWQy"]
    ms = 1_000_000
    t0 = 4000 * ms

    def deliver(kind: int, at: int, sender: str, mid: str = "bWlk") -> dict[str, Any]:
        body = {"messageID": mid, "receivedFrom": sender}
        name = "deliverMessage" if kind == 3 else "duplicateMessage"
        return {"type": kind, "timestamp": t0 + at, name: body}

    publishes = [
        {"msg": m, "id": ["bWlk", "bWlkMQ==", "bWlkMg=="][m], "t_publish_unix_ns": t0}
        for m in range(len(schedule))
    ]
    record = {
        "msg": 0,
        "learned_ns": t0 + 20 * ms,
        "held": 6,
        "parts_recv": 6,
        "parts_dup": 2,
        "parts_via_full": 0,
        "complete_ns": t0 + 50 * ms,
        "complete_via": "partial",
        "complete_from": 0,
        "rpcs_recv": 3,
        "bytes_partial_recv": 7000,
        "bad_parts": 0,
    }
    full = {
        "msg": 0,
        "learned_ns": t0 + 60 * ms,
        "held": 0,
        "parts_recv": 0,
        "parts_dup": 0,
        "parts_via_full": 12,
        "complete_ns": t0 + 61 * ms,
        "complete_via": "full",
        "complete_from": 1,
        "rpcs_recv": 0,
        "bytes_partial_recv": 0,
        "bad_parts": 0,
    }
    # Message 1: node 1 completes from parts at 30 ms; a full copy is delivered at 90 ms.
    late = {**record, "msg": 1, "complete_ns": t0 + 30 * ms}
    # ... and node 2 completes from node 1's parts at 20 ms, before node 1 held them all:
    # parts do not form a tree, and node 2 is counted one hop from the publisher.
    early = {**record, "msg": 1, "complete_ns": t0 + 20 * ms, "complete_from": 1}
    base = {"traffic": {}, "drops": []}
    write_node(tmp_path / "0", {**base, "peer_id": ids[0], "publishes": publishes}, [])
    write_node(
        tmp_path / "1",
        {**base, "peer_id": ids[1], "publishes": [], "partial": [record, late]},
        [
            deliver(3, 55 * ms, ids[1]),
            deliver(2, 80 * ms, ids[0]),
            deliver(3, 90 * ms, ids[0], "bWlkMQ=="),
        ],
    )
    write_node(
        tmp_path / "2",
        {**base, "peer_id": ids[2], "publishes": [], "partial": [full, early]},
        [deliver(3, 60 * ms, ids[1])],
    )
    conversion = convert({i: tmp_path / str(i) for i in range(3)}, schedule, 0, plan=plan)
    deliveries = conversion.tables.deliveries.filter(pl.col("msg") == 0).sort("node")
    assert deliveries["node"].to_list() == [1, 2]
    assert deliveries["t_ns"].to_list() == [t0 + 50 * ms, t0 + 60 * ms]
    assert deliveries["from_node"].to_list() == [0, 1]
    assert deliveries["hop"].to_list() == [1, 2]
    partial = conversion.tables.partial
    assert partial is not None
    rows = {r["node"]: r for r in partial.filter(pl.col("msg") == 0).iter_rows(named=True)}
    assert sorted(rows) == [1, 2]  # the publisher is no receiver
    assert rows[1]["parts_recv"] == 6 and rows[1]["parts_dup"] == 2
    assert rows[1]["full_recv"] == 1  # the duplicate from node 0; its own publish is none
    assert rows[1]["bytes_partial_recv"] == 7000
    assert rows[2]["parts_recv"] == 12 and rows[2]["full_recv"] == 1
    assert rows[2]["t_complete_ns"] == t0 + 60 * ms  # the delivery, before its record
    assert rows[1]["held"] == plan.held[0][1].bit_count()
    second = conversion.tables.deliveries.filter(pl.col("msg") == 1).sort("node")
    assert second["t_ns"].to_list() == [t0 + 30 * ms, t0 + 20 * ms]
    assert second["hop"].to_list() == [1, 1]


@NEEDS_GO
def test_a_mixed_network_completes_every_group_on_simnet() -> None:
    """Real go nodes: every node completes every group; a node with the extension gets
    exactly the parts it lacked as new parts (each counted once, by partial message or
    by the full message), and one without gets the full message."""
    s = scenario(nodes=8, roles={"requests": 0.5, "supports": 0.25}, mempool={"p": 0.5}).model_copy(
        update={"backend": "simnet"}
    )
    topology = build_topology(s)
    schedule = build_schedule(s, topology.nodes)
    run = run_simnet(s, topology, schedule, end_time_ns(s, schedule))
    try:
        deliveries = run.tables.deliveries
        assert deliveries.height == len(schedule) * (topology.nodes - 1)
        partial = run.tables.partial
        assert partial is not None and partial["t_complete_ns"].null_count() == 0
        assert (partial["held"] + partial["parts_recv"] == 12).all()
        none = partial.filter(pl.col("role") == "none")
        assert none.height > 0 and (none["full_recv"] >= 1).all()
        assert (none["bytes_partial_recv"] == 0).all()
        requests = partial.filter(pl.col("role") == "requests")
        assert requests["bytes_partial_recv"].sum() > 0
    finally:
        shutil.rmtree(run.work, ignore_errors=True)


def test_crosscheck_partial_rows_read_each_results_folder(tmp_path: Path) -> None:
    """The crosscheck's partial rows, on a model run: every group completes at every
    node, and the parts from the network are what the plan left each node to get."""
    s = scenario(roles={"requests": 0.5, "supports": 0.25}, mempool={"p": 0.5})
    data = {**(s.source_data or {}), "backend": "model"}
    out = run(parse_scenario(data, Path(".")), tmp_path / "model").out_dir
    figures = partial_figures(out)
    schedule = build_schedule(s, 6)
    plan = partial_plan(s, schedule)
    assert plan is not None
    lacking = sum(
        12 - plan.held[msg][node].bit_count()
        for msg in range(len(schedule))
        for node in range(6)
        if node != int(schedule.publisher[msg])
    )
    assert figures["groups complete (share of group × node)"] == 1.0
    assert figures["parts received from the network"] == lacking
    p50 = figures["group completion p50"]
    assert p50 is not None and p50 >= 20  # at least one 20 ms link from the publisher
    rows = partial_rows(out, out)
    assert [r.metric for r in rows] == [name for name, _ in PARTIAL_METRICS]
    assert all(r.relative in (0.0, None) for r in rows)
