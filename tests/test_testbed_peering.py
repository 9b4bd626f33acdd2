"""Peer exchange, direct peers and application scores (P5) on real go-libp2p-pubsub nodes.

Each expectation is derived from go-libp2p-pubsub v0.17.0's code, not from earlier runs:

- Peer exchange: a hub with six leaves and D_hi = 3 cannot keep every leaf in its mesh.
  It answers a GRAFT that finds its mesh full with a PRUNE (handleGraft) and trims its
  mesh to D at the heartbeat (|mesh| >= D_hi); with PX on, each PRUNE carries the hub's
  other topic peers with a score >= 0 (makePrune), and the pruned leaf dials them
  (handlePrune -> pxConnect -> connector). So leaf-to-leaf connections appear, each with
  at least one leaf the hub pruned, and every pruned leaf gets some. Without PX, leaves
  only know the hub: no connection beyond the topology.
- Direct peers: go never grafts a direct peer (heartbeat) and answers its GRAFT with
  PRUNE without adding it (handleGraft), but sends it every message (Publish). On the
  line 0-1-2-3 with 1-2 direct, no GRAFT event names the other end of the pair, and
  every message crosses 1-2 all the same.
- P5: node 0 gets app score -100 at everyone, weight 10: score -1000 < graylist -80
  (score.go: P5 = AppSpecificScore × AppSpecificWeight; P3/P3b weights 0 here, so honest
  peers never go negative). AcceptFrom drops every RPC from a graylisted peer, the
  heartbeat grafts only peers with score >= 0, and gossip and publish skip peers below
  their thresholds: nobody grafts node 0, nothing node 0 publishes is delivered, and
  node 0 receives nothing; the rest of the ring (a line 1..5) delivers everything.

Each run takes 5-10 s; the runner tears its namespaces down whatever happens.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from gossiplab.backends.testbed.convert import GRAFT, PRUNE, RECV_RPC
from gossiplab.runner import run
from gossiplab.scenario import parse_scenario
from testbed_marks import REAL_NODES

pytestmark = REAL_NODES

HUB = 0
LEAVES = range(1, 7)


def our_namespaces() -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True)
    return [
        line.split()[0] for line in out.stdout.splitlines() if line.startswith(f"gl{os.getpid()}-")
    ]


@pytest.fixture
def no_leftovers() -> Iterator[None]:
    yield
    assert our_namespaces() == [], "a run left namespaces behind"


def run_scenario(tmp: Path, name: str, **sections: Any) -> tuple[Path, dict[str, Any]]:
    s = parse_scenario(
        {"name": name, "backend": "testbed", "testbed": {"keep_traces": True}, **sections},
        base_dir=tmp,
    )
    result = run(s, tmp / name)
    return result.out_dir, result.summary


def node_ids(out: Path, nodes: int) -> dict[str, int]:
    return {
        json.loads((out / "testbed" / f"node{n}" / "node.json").read_text())["peer_id"]: n
        for n in range(nodes)
    }


def trace(out: Path, node: int) -> Iterator[dict[str, Any]]:
    with (out / "testbed" / f"node{node}" / "trace.ndjson").open() as lines:
        yield from map(json.loads, lines)


def mesh_events(out: Path, nodes: int) -> list[tuple[int, str, int]]:
    """(node, "graft" | "prune", peer) from every node's kept trace: peer joined / left its mesh."""
    ids = node_ids(out, nodes)
    events = []
    for n in range(nodes):
        for event in trace(out, n):
            if event["type"] in (GRAFT, PRUNE):
                kind = "graft" if event["type"] == GRAFT else "prune"
                events.append((n, kind, ids.get(event[kind]["peerID"], -1)))
    return events


def prunes_received(out: Path, nodes: int) -> list[tuple[int, int, set[int]]]:
    """(node, sender, peers offered) of every PRUNE a node received (needs trace_rpc)."""
    ids = node_ids(out, nodes)
    found = []
    for n in range(nodes):
        for event in trace(out, n):
            if event["type"] != RECV_RPC:
                continue
            sender = ids.get(event["recvRPC"]["receivedFrom"], -1)
            for prune in event["recvRPC"].get("meta", {}).get("control", {}).get("prune", []):
                found.append((n, sender, {ids.get(peer, -1) for peer in prune.get("peers", [])}))
    return found


def star(tmp: Path) -> None:
    (tmp / "star.txt").write_text("".join(f"{leaf} {HUB}\n" for leaf in LEAVES))


PRUNE_PEERS = 3


def px_run(tmp: Path, peer_exchange: bool) -> tuple[Path, dict[str, Any]]:
    return run_scenario(
        tmp,
        f"px-{peer_exchange}",
        seed=3,
        topology={"kind": "edges", "file": "star.txt"},
        network={"latency": "5ms"},
        protocol={
            "D": 2,
            "D_lo": 1,
            "D_hi": 3,
            "D_score": 1,
            "D_out": 0,
            "D_announce": 2,
            "peer_exchange": peer_exchange,
            "prune_peers": PRUNE_PEERS,
        },
        workload={
            "messages": 4,
            "rate": "4/s",
            "publishers": [HUB],
            "warmup": "4s",
            "cooldown": "1s",
        },
        testbed={"keep_traces": True, "trace_rpc": True},
    )


def test_pruned_leaves_dial_the_peers_a_prune_names(tmp_path: Path, no_leftovers: None) -> None:
    star(tmp_path)
    out, summary = px_run(tmp_path, peer_exchange=True)
    testbed = summary["run"]["testbed"]
    assert testbed["crashed"] == []
    prunes = prunes_received(out, 7)
    # The hub prunes some leaf (or no connection beyond the star could follow). How many
    # is not fixed: a leaf that a PRUNE's peers dialled before its first heartbeat picks
    # its D mesh peers among the hub and them at random (getPeers), and may skip the hub.
    assert any(sender == HUB for _, sender, _ in prunes), prunes
    px: dict[int, set[int]] = {node: set() for node in range(7)}
    for node, sender, peers in prunes:
        # At most prune_peers of the sender's other topic peers, never the pruned node.
        assert len(peers) <= PRUNE_PEERS and node not in peers and sender not in peers
        if sender == HUB:  # the hub has 5 candidates: prune_peers of them exactly
            assert len(peers) == PRUNE_PEERS and peers <= set(LEAVES), peers
        px[node] |= peers
    connections = testbed["connections"]
    assert connections["edges_connected"] == connections["topology_edges"] == 6
    beyond = [tuple(pair) for pair in connections["beyond_pairs"]]
    assert beyond, "no connection beyond the topology"
    # Each new connection is a pruned node dialling a peer a PRUNE named: first the
    # hub's, then those of leaves whose meshes grew past D_hi in turn. (Not every
    # named peer need connect: two leaves pruned at the same instant may dial each other
    # at once, which go-libp2p's TCP, dialling from its listen port, turns into one
    # simultaneous-open connection whose security handshake fails on both sides.)
    for a, b in beyond:
        assert b in px[a] or a in px[b], (a, b, px)
    # The same connections table as the model writes, and the same summary count.
    opened = pl.read_parquet(out / "connections.parquet")
    table_pairs = {tuple(sorted(p)) for p in opened.select("node", "peer").iter_rows()}
    assert table_pairs == set(beyond)
    assert summary["control"]["px_connections"] == opened.height
    # Connections made during the run cross the impaired core like edges do: the delay
    # stage gave their packets the scenario's latency (its rule); none passed as they were.
    delay = testbed["delay_stage"]
    assert delay["pairs_by_rule"] >= 2 * len(beyond)
    assert delay["passed_undelayed"] == 0
    deliveries = pl.read_parquet(out / "deliveries.parquet")
    assert set(deliveries["from_node"].to_list()) <= set(range(7))  # every sender is known


def test_without_peer_exchange_leaves_only_know_the_hub(tmp_path: Path, no_leftovers: None) -> None:
    star(tmp_path)
    out, summary = px_run(tmp_path, peer_exchange=False)
    testbed = summary["run"]["testbed"]
    assert testbed["crashed"] == []
    prunes = prunes_received(out, 7)
    # Every leaf grafts the hub, its only peer. The hub refuses GRAFTs past D_hi from
    # inbound peers (handleGraft) and trims a mesh of D_hi or more to D at its heartbeat
    # (heartbeat: len(peers) >= Dhi), so after its first heartbeat that follows every
    # leaf's first, it keeps D = 2 and has pruned the rest.
    assert len({leaf for leaf, sender, _ in prunes if sender == HUB}) == len(LEAVES) - 2, prunes
    assert all(peers == set() for _, _, peers in prunes)
    assert testbed["connections"]["beyond_topology"] == 0
    assert testbed["connections"]["edges_connected"] == 6
    assert not (out / "connections.parquet").exists(), "written only with peer exchange on"
    assert testbed["delay_stage"]["pairs_by_rule"] == 0


def test_direct_peers_never_mesh_and_still_carry_every_message(
    tmp_path: Path, no_leftovers: None
) -> None:
    out, summary = run_scenario(
        tmp_path,
        "direct",
        seed=4,
        topology={"kind": "line", "nodes": 4},
        network={"latency": "5ms"},
        protocol={"direct_peers": [[1, 2]]},
        workload={
            "messages": 6,
            "rate": "4/s",
            "publishers": [0, 3],
            "warmup": "3s",
            "cooldown": "1s",
        },
    )
    testbed = summary["run"]["testbed"]
    assert testbed["crashed"] == []
    # Direct peers are not counted towards the mesh a node waits for: all were ready.
    assert testbed["readiness"]["ready_by_mesh"] == 4
    grafts = [(n, peer) for n, kind, peer in mesh_events(out, 4) if kind == "graft"]
    assert grafts, "no mesh formed at all"
    assert (1, 2) not in grafts and (2, 1) not in grafts, grafts
    assert {(0, 1), (3, 2)} <= set(grafts)  # the ends' only mesh peers
    # The only path between the halves is the direct pair: every message crosses it.
    assert summary["delivery"]["ratio"] == 1.0
    deliveries = pl.read_parquet(out / "deliveries.parquet")
    publishes = pl.read_parquet(out / "publishes.parquet")
    assert set(publishes["publisher"].to_list()) == {0, 3}
    joined = deliveries.join(publishes.select("msg", "publisher"), on="msg")
    crossing = joined.filter(
        ((pl.col("publisher") == 0) & (pl.col("node") == 2))
        | ((pl.col("publisher") == 3) & (pl.col("node") == 1))
    )
    assert len(crossing) == len(publishes)
    assert (crossing["from_node"] == 3 - crossing["node"]).all()  # 2 hears 1, 1 hears 2
    distance = (joined["node"].cast(pl.Int64) - joined["publisher"].cast(pl.Int64)).abs()
    assert (joined["hop"].cast(pl.Int64) == distance).all()


def test_a_graylisted_app_score_cuts_the_node_off(tmp_path: Path, no_leftovers: None) -> None:
    out, summary = run_scenario(
        tmp_path,
        "p5",
        seed=6,
        topology={"kind": "ring", "nodes": 6},
        network={"latency": "5ms"},
        protocol={
            "score": {
                "enabled": True,
                "mesh_message_deliveries_weight": 0.0,
                "mesh_failure_penalty_weight": 0.0,
                "app_specific_weight": 10.0,
                "graylist_threshold": -80.0,
                "app_specific": [{"nodes": [0], "score": -100.0}],
            }
        },
        workload={
            "messages": 8,
            "rate": "4/s",
            "publishers": [0, 3],
            "warmup": "3s",
            "cooldown": "1s",
        },
    )
    assert summary["run"]["testbed"]["crashed"] == []
    grafted_zero = [n for n, kind, peer in mesh_events(out, 6) if kind == "graft" and peer == 0]
    assert grafted_zero == [], "a node put the graylisted node 0 in its mesh"
    deliveries = pl.read_parquet(out / "deliveries.parquet")
    publishes = pl.read_parquet(out / "publishes.parquet")
    assert set(publishes["publisher"].to_list()) == {0, 3}
    joined = deliveries.join(publishes.select("msg", "publisher"), on="msg")
    assert joined.filter(pl.col("publisher") == 0).is_empty(), "node 0's messages got through"
    assert deliveries.filter((pl.col("node") == 0) | (pl.col("from_node") == 0)).is_empty()
    from_three = joined.filter(pl.col("publisher") == 3)
    expected = {(m, n) for m in from_three["msg"].unique().to_list() for n in (1, 2, 4, 5)}
    assert (
        set(zip(from_three["msg"].to_list(), from_three["node"].to_list(), strict=True)) == expected
    )
