"""The trace converter on a small recorded trace (tests/data/testbed-ring3), checked by hand.

The trace was recorded by the testbed: three floodsub nodes on a ring (0-1, 1-2, 2-0),
10 ms per link; node 0 publishes message 0 at 1.0 s and message 1 at 1.1 s. Each of
nodes 1 and 2 gets every message first from node 0 (hop 1) and once more from the other
(a duplicate). The expected numbers below are read off the trace files by eye:
timestamps minus the run's start (epoch_unix_ns).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl

from gossiplab.backends.testbed.convert import NO_PEER, convert
from gossiplab.scenario import load_scenario
from gossiplab.topology import build_topology
from gossiplab.workload import build_schedule

DATA = Path(__file__).parent / "data" / "testbed-ring3"
EPOCH = 1795306098030145072  # DATA / "epoch_unix_ns"


def _convert(folder: Path, receipts: bool = True, end_ns: int | None = None):  # type: ignore[no-untyped-def]
    s = load_scenario(folder / "scenario.toml")
    schedule = build_schedule(s, build_topology(s).nodes)
    folders = {i: folder / f"node{i}" for i in range(3)}
    return convert(folders, schedule, EPOCH, end_ns=end_ns, receipts=receipts)


def test_recorded_epoch_is_the_one_used_here() -> None:
    assert int((DATA / "epoch_unix_ns").read_text()) == EPOCH


def test_publishes_from_the_publishers_record() -> None:
    publishes = _convert(DATA).tables.publishes
    assert publishes.rows() == [
        (0, 0, 1_000_000_000, 1795306099031098102 - EPOCH, 100, 0, 0, 4, 0),
        (1, 0, 1_100_000_000, 1795306099130670495 - EPOCH, 100, 0, 1, 4, 0),
    ]


def test_deliveries_first_receipts_with_sender_hop_and_duplicates() -> None:
    deliveries = _convert(DATA).tables.deliveries
    # msg, node, t_ns, from_node, hop, duplicates (sorted by msg, then time)
    assert deliveries.rows() == [
        (0, 2, 1795306099042472220 - EPOCH, 0, 1, 1),
        (0, 1, 1795306099042990114 - EPOCH, 0, 1, 1),
        (1, 1, 1795306099141855906 - EPOCH, 0, 1, 1),
        (1, 2, 1795306099142173542 - EPOCH, 0, 1, 1),
    ]


def test_receipts_include_the_duplicates_and_their_senders() -> None:
    receipts = _convert(DATA).tables.receipts
    assert receipts is not None
    duplicates = receipts.filter(pl.col("duplicate")).sort("msg", "node")
    assert duplicates.select("msg", "node", "from_node", "t_ns").rows() == [
        (0, 1, 2, 1795306099053546761 - EPOCH),
        (0, 2, 1, 1795306099053638855 - EPOCH),
        (1, 1, 2, 1795306099153248474 - EPOCH),
        (1, 2, 1, 1795306099153143521 - EPOCH),
    ]
    assert receipts.height == 8


def test_a_receipt_traced_after_the_runs_end_is_not_counted() -> None:
    # With the run ending at 1.1 s, message 1's two deliveries (1.1117 and 1.1120 s) and
    # two duplicates (1.1230 and 1.1231 s) were traced while the nodes stopped: the model
    # counts nothing after its end, and neither does the conversion. Message 0's last
    # receipt, at 1.0235 s, counts.
    conversion = _convert(DATA, end_ns=1_100_000_000)
    assert conversion.tables.deliveries.select("msg", "node").rows() == [(0, 2), (0, 1)]
    assert conversion.tables.receipts is not None
    assert conversion.tables.receipts["msg"].to_list() == [0, 0, 0, 0]
    assert conversion.tables.publishes["receipts"].to_list() == [4, 0]
    assert conversion.after_end == 4
    assert conversion.counts()["receipts_after_end"] == 4


def test_a_sender_missing_its_own_receipt_leaves_the_hop_unknown(tmp_path: Path) -> None:
    # Node 2's first copy of message 0 made to come from node 1, and node 1's delivery of
    # message 0 taken out of its trace: the tree cannot say node 2's hop, so it is null
    # (no number a metric would count), and message 1's hops stay 1.
    copy = tmp_path / "ring3"
    shutil.copytree(DATA, copy)
    ids = {i: json.loads((copy / f"node{i}" / "node.json").read_text())["peer_id"] for i in (0, 1)}
    node1 = copy / "node1" / "trace.ndjson"
    lines = node1.read_text().splitlines()
    first_delivery = next(i for i, line in enumerate(lines) if '"type":3' in line)
    node1.write_text("\n".join(lines[:first_delivery] + lines[first_delivery + 1 :]) + "\n")
    node2 = copy / "node2" / "trace.ndjson"
    text = node2.read_text()
    at = text.index('"type":3')
    end = text.index("\n", at)
    node2.write_text(text[:at] + text[at:end].replace(ids[0], ids[1]) + text[end:])
    deliveries = _convert(copy).tables.deliveries
    assert deliveries.select("msg", "node", "from_node", "hop").rows() == [
        (0, 2, 1, None),
        (1, 1, 0, 1),
        (1, 2, 0, 1),
    ]


def test_traffic_and_drops_from_the_raw_counters() -> None:
    conversion = _convert(DATA)
    traffic = conversion.tables.traffic.filter(pl.col("node") == 0).sort("kind")
    # Node 0 sent each 100-byte message to both neighbours: 4 copies of 245 bytes
    # (100 data + 145 bytes of signed-message overhead, protocol-notes §5), and one
    # subscription hello of 31 bytes to each.
    assert traffic.rows() == [(0, "payload", 4, 980, 0, 0), (0, "subscribe", 2, 62, 2, 62)]
    assert conversion.tables.drops.height == 0
    assert conversion.unknown_ids == 0 and conversion.unpublished == []


def test_a_truncated_trace_line_is_counted_not_fatal(tmp_path: Path) -> None:
    copy = tmp_path / "ring3"
    shutil.copytree(DATA, copy)
    with (copy / "node1" / "trace.ndjson").open("a") as trace:
        trace.write('{"type":3,"peerID":"AC')  # a node killed in the middle of a write
    conversion = _convert(copy)
    assert conversion.broken_lines == 1
    assert conversion.tables.deliveries.height == 4


def test_a_node_without_results_is_reported(tmp_path: Path) -> None:
    copy = tmp_path / "ring3"
    shutil.copytree(DATA, copy)
    (copy / "node2" / "node.json").unlink()
    conversion = _convert(copy, receipts=False)
    assert conversion.missing_results == [2]
    # Its trace still counts, but messages it sent are attributed to an unknown peer.
    assert conversion.tables.deliveries.filter(pl.col("node") == 2).height == 2


def test_connections_are_the_topologys_edges_here() -> None:
    conversion = _convert(DATA, receipts=False)
    # Every node opened a pubsub stream to both neighbours, and to no one else.
    assert sorted((node, peer) for _, node, peer in conversion.streams) == [
        (0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)
    ]  # fmt: skip
    assert conversion.connections([(0, 1), (1, 2), (2, 0)]) == {
        "topology_edges": 3,
        "edges_connected": 3,
        "beyond_topology": 0,
        "beyond_pairs": [],
        "first_beyond_t_ns": None,
        "unknown_peers": 0,
    }
    # Against a line 0-1-2, the 2-0 connection is one made during the run.
    line = conversion.connections([(0, 1), (1, 2)])
    assert (line["edges_connected"], line["beyond_pairs"]) == (2, [[0, 2]])
    first = min(t for t, node, peer in conversion.streams if {node, peer} == {0, 2})
    assert line["first_beyond_t_ns"] == first


def test_a_drop_towards_a_peer_met_during_the_run_names_it(tmp_path: Path) -> None:
    copy = tmp_path / "ring3"
    shutil.copytree(DATA, copy)
    path = copy / "node0" / "node.json"
    result = json.loads(path.read_text())
    node2 = json.loads((copy / "node2" / "node.json").read_text())["peer_id"]
    result["drops"] = [
        {
            "peer": -1,
            "peer_id": node2,
            "kind": "payload",
            "reason": "outbound-queue-full",
            "count": 3,
        },
        {"peer": -1, "kind": "payload", "reason": "undeliverable", "count": 1},
    ]
    path.write_text(json.dumps(result))
    drops = _convert(copy, receipts=False).tables.drops
    assert drops.select("node", "peer", "reason", "count").rows() == [
        (0, 2, "outbound-queue-full", 3),
        (0, NO_PEER, "undeliverable", 1),
    ]


def test_a_copy_back_to_the_publisher_is_its_duplicate(tmp_path: Path) -> None:
    # As go traces a copy of its own message coming back (no author, strict-no-sign): a
    # DUPLICATE_MESSAGE at the publisher. Node 1's duplicate of message 0, replayed at
    # node 0 as if node 2 had sent it there.
    copy = tmp_path / "ring3"
    shutil.copytree(DATA, copy)
    event = json.loads(
        next(
            line
            for line in (copy / "node1" / "trace.ndjson").read_text().splitlines()
            if '"type":2' in line
        )
    )
    peer_id = {
        i: json.loads((copy / f"node{i}" / "node.json").read_text())["peer_id"] for i in (0, 2)
    }
    event["peerID"] = peer_id[0]
    event["duplicateMessage"]["receivedFrom"] = peer_id[2]
    with (copy / "node0" / "trace.ndjson").open("a") as trace:
        trace.write(json.dumps(event, separators=(",", ":")) + "\n")
    tables = _convert(copy).tables
    assert tables.publishes.select("msg", "publisher_duplicates").rows() == [(0, 1), (1, 0)]
    assert tables.publishes["receipts"].to_list() == [5, 4]
    # No deliveries row for the publisher: it is no receiver of its own message.
    assert tables.deliveries.filter(pl.col("node") == 0).height == 0
