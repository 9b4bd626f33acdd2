"""Regions, node classes and the TCP window through the real engine, against closed forms.

Two or five nodes, floodsub (a message goes straight to every peer), no CPU cost: the time
from publish to first receipt is exactly what the link adds, so each expectation is a sum
of the scenario's numbers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest

from gossiplab.runner import run
from gossiplab.scenario import parse_scenario

MS = 1_000_000


def run_two_nodes(tmp_path: Path, network: dict[str, Any], **workload: Any) -> pl.DataFrame:
    """Receipts of a 2-node floodsub run, with the publisher's and receiver's placement."""
    data = {
        "name": "links",
        "topology": {"kind": "line", "nodes": 2},
        "network": network,
        "protocol": {"name": "floodsub"},
        "workload": {"warmup": "1s", "cooldown": "2s", **workload},
    }
    return receipts(run(parse_scenario(data, tmp_path), tmp_path / "out").out_dir)


def receipts(out: Path) -> pl.DataFrame:
    nodes = pl.read_parquet(out / "nodes.parquet")
    publishes = pl.read_parquet(out / "publishes.parquet")
    return (
        pl.read_parquet(out / "deliveries.parquet")
        .join(publishes.select("msg", "publisher", "t_publish_ns"), on="msg")
        .with_columns(latency_ns=pl.col("t_ns") - pl.col("t_publish_ns"))
        .join(
            nodes.select(publisher="node", from_region="region", from_class="class"), on="publisher"
        )
        .join(nodes.select(node="node", to_region="region", to_class="class"), on="node")
        .sort("msg")
    )


# Two regions, one node each (weights 1/2 and 1/2 of 2 nodes), different latency each way.
ASYMMETRIC = {
    "names": ["a", "b"],
    "weights": [0.5, 0.5],
    "latency": [["1ms", "30ms"], ["70ms", "2ms"]],
}


def test_region_matrix_gives_each_direction_its_latency(tmp_path: Path) -> None:
    # Both nodes publish at once (a batch of 2), so each direction carries one message.
    got = run_two_nodes(tmp_path, {"regions": ASYMMETRIC}, messages=2, batch=2, publishers=[0, 1])
    assert sorted(zip(got["from_region"], got["to_region"], strict=True)) == [
        ("a", "b"),
        ("b", "a"),
    ]
    expected = {("a", "b"): 30 * MS, ("b", "a"): 70 * MS}
    for row in got.iter_rows(named=True):
        assert row["latency_ns"] == expected[(row["from_region"], row["to_region"])]


def test_class_added_latency_counts_at_both_ends(tmp_path: Path) -> None:
    classes = [
        {"name": "near", "share": 0.5, "added_latency": "5ms"},
        {"name": "far", "share": 0.5, "added_latency": "40ms"},
    ]
    got = run_two_nodes(
        tmp_path,
        {"regions": ASYMMETRIC, "classes": classes},
        messages=2,
        batch=2,
        publishers=[0, 1],
    )
    assert set(got["from_class"]) == {"near", "far"}
    expected = {("a", "b"): (30 + 5 + 40) * MS, ("b", "a"): (70 + 5 + 40) * MS}
    for row in got.iter_rows(named=True):
        assert row["latency_ns"] == expected[(row["from_region"], row["to_region"])]


def test_two_nodes_on_the_ethereum_matrix(tmp_path: Path) -> None:
    # 2 nodes by ethereum's weights: quotas europe 0.72, na_west 0.44, na_east 0.44, ...:
    # the two largest remainders are europe and na_west (the tie goes to the earlier name).
    # ethshadow: europe -> na_west 110 ms, na_west -> europe 110 ms.
    got = run_two_nodes(tmp_path, {"regions": "ethereum"}, messages=2, batch=2, publishers=[0, 1])
    assert set(got["from_region"]) == {"europe", "na_west"}
    assert got["latency_ns"].to_list() == [110 * MS, 110 * MS]


def test_class_preset_bandwidth_shows_in_serialization_time(tmp_path: Path) -> None:
    # "constrained": 5 Mbit up and down. Loss and slow start off so only bytes cost time.
    network = {
        "initial_window": 0,
        "classes": [{"preset": "constrained", "share": 1.0, "added_loss": 0.0}],
    }

    def latency(size: str, name: str) -> int:
        got = run_two_nodes(tmp_path / name, network, messages=1, publishers=[0], size=size)
        return int(got["latency_ns"].item())

    small, large = latency("20000B", "small"), latency("100000B", "large")
    # 20 ms added at each end, plus the RPC's bytes at 5 Mbit/s: 20,000 payload bytes take
    # 32 ms; framing (ids, topic, signature, length prefixes) adds well under 400 bytes.
    assert 72 * MS < small < 72 * MS + 400 * 8 * 1000 // 5
    # Both sizes frame with equally long length prefixes (3-byte varints), so the
    # difference is the payload alone: 80,000 bytes x 8 / 5 Mbit/s = 128 ms, to the ns.
    assert large - small == 128 * MS


@pytest.mark.parametrize(
    ("window", "extra_round_trips"),
    # A 100,000-byte RPC with a 10-segment (14,600-byte) window: 14,600 then 29,200 bytes
    # go in the first two round trips, the remaining ~56,200 fit the 58,400-byte window.
    [(0, 0), (10, 2), (100, 0)],
)
def test_initial_window_costs_round_trips(
    tmp_path: Path, window: int, extra_round_trips: int
) -> None:
    got = run_two_nodes(
        tmp_path,
        {"latency": "10ms", "initial_window": window},
        messages=1,
        publishers=[0],
        size="100000B",
    )
    assert got["latency_ns"].item() == 10 * MS + extra_round_trips * 20 * MS


def test_quic_pacing_sends_ten_packets_then_twice_the_window_per_round_trip(
    tmp_path: Path,
) -> None:
    # quic-go v0.64.1's pacer (internal/congestion/pacer.go): 10 packets of 1,280 B at
    # once, then 2 x cwnd / RTT in slow start (cubic_sender.go:pacingRate). Window 28 x
    # 1,460 = 40,880 B, RTT 100 ms: 817,600 B/s. Both RPCs fit the window (no extra round
    # trip), so pacing alone delays the bytes beyond the first 12,800.
    network = {"latency": "50ms", "initial_window": 28, "slow_start_after_idle": False}

    def latency(size: str, pacing: bool) -> int:
        name = f"{size}-{pacing}"
        net = {**network, "pacing": pacing}
        got = run_two_nodes(tmp_path / name, net, messages=1, publishers=[0], size=size)
        return int(got["latency_ns"].item())

    assert latency("20000B", False) == 50 * MS
    small, large = latency("20000B", True), latency("36000B", True)
    # Framing adds well under 400 B to the 20,000 payload bytes.
    paced_ns = 1_000_000_000 / 817_600
    assert 50 * MS + 7_200 * paced_ns < small < 50 * MS + 7_600 * paced_ns
    # Equal framing: 16,000 more bytes take 19,569,471.6 ns more (two roundings up).
    assert abs(large - small - 16_000 * paced_ns) <= 1


def test_class_added_loss_reaches_the_links(tmp_path: Path) -> None:
    # Both ends add 0.3: each 1-segment RPC is lost with probability 0.6 and, being the
    # tail segment, waits for the 200 ms retransmission timeout (RTT 20 ms < 200 ms).
    network = {"latency": "10ms", "classes": [{"name": "lossy", "share": 1.0, "added_loss": 0.3}]}
    got = run_two_nodes(tmp_path, network, messages=60, rate="2/s", publishers=[0])
    latencies = set(got["latency_ns"].to_list())
    assert latencies <= {10 * MS, 210 * MS}
    lost = (got["latency_ns"] == 210 * MS).sum() / got.height
    # 60 draws of p = 0.6: the share lies within 0.6 +- 4 standard deviations (0.063).
    assert 0.35 < lost < 0.85


def test_breakdown_of_a_line_matches_hop_by_hop_times(tmp_path: Path) -> None:
    # Line 0 - 1 - 2 - 3 - 4, 10 ms per link, node 0 publishes: node n receives at 10 n ms,
    # hop n. Classes x (2 nodes) and y (3 nodes) by share 0.4 / 0.6.
    data = {
        "name": "line",
        "topology": {"kind": "line", "nodes": 5},
        "network": {
            "latency": "10ms",
            "classes": [{"name": "x", "share": 0.4}, {"name": "y", "share": 0.6}],
        },
        "protocol": {"name": "floodsub"},
        "workload": {"messages": 1, "publishers": [0], "warmup": "1s", "cooldown": "1s"},
    }
    result = run(parse_scenario(data, tmp_path), tmp_path / "out")
    nodes = pl.read_parquet(result.out_dir / "nodes.parquet")
    members = {c: nodes.filter(pl.col("class") == c)["node"].to_list() for c in ("x", "y")}
    assert sorted(len(m) for m in members.values()) == [2, 3]
    for name, group in result.summary["by_class"].items():
        receivers = sorted(n for n in members[name] if n != 0)
        latencies = [10.0 * n for n in receivers]
        p50_rank = -(-50 * len(latencies) // 100)  # nearest rank: ceil(n / 2)
        assert group["nodes"] == len(members[name])
        assert group["expected_first_receipts"] == len(receivers)
        assert group["delivery_ratio"] == 1.0
        assert group["latency_ms"]["p50"] == latencies[p50_rank - 1]
        assert group["latency_ms"]["max"] == latencies[-1]
        assert group["mean_hop"] == pytest.approx(sum(receivers) / len(receivers))
