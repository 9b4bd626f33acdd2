"""The uplink, TCP-after-idle and transport-buffer settings: defaults, refusals, and
that the model runs what they say (docs/network-calibration.md)."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from gossiplab import runner
from gossiplab.errors import ScenarioError
from gossiplab.scenario import parse_scenario
from gossiplab.scenario.cpu import CpuConfig

HERE = Path(__file__).parent
SCENARIO = HERE.parent / "scenarios/crosscheck/uplink-500k.toml"


def network(**fields: Any) -> Any:
    return parse_scenario({"network": fields}, HERE).network


def test_defaults_are_linux_and_yamux() -> None:
    net = network()
    assert net.slow_start_after_idle is True  # net.ipv4.tcp_slow_start_after_idle = 1
    assert net.uplink_sharing == "fair"
    assert net.send_buffer == 262_144  # go-yamux initialStreamWindow
    assert network(send_buffer="1MiB").send_buffer == 1 << 20


@pytest.mark.parametrize(
    ("fields", "path"),
    [
        ({"uplink_sharing": "round-robin"}, "network.uplink_sharing"),
        ({"send_buffer": -1}, "network.send_buffer"),
    ],
)
def test_bad_values_name_the_field(fields: dict[str, Any], path: str) -> None:
    with pytest.raises(ScenarioError) as error:
        network(**fields)
    assert path in str(error.value)


def first_and_last_copy_ms(sharing: str, tmp_path: Path) -> tuple[float, float]:
    """Median over messages of the first and the last of 8 copies' latency."""
    data = tomllib.loads(SCENARIO.read_text())
    data["network"]["uplink_sharing"] = sharing  # validated: "shadow" brings its TCP
    s = parse_scenario(data, SCENARIO.parent)
    # The closed forms below count the network alone, not the nodes' CPU.
    s = s.model_copy(update={"backend": "model", "cpu": CpuConfig()})
    out = tmp_path / sharing
    runner.run(s, out, force=True)
    pubs = pl.read_parquet(out / "publishes.parquet").select("msg", "t_publish_ns")
    d = pl.read_parquet(out / "deliveries.parquet").join(pubs, on="msg")
    per_msg = d.group_by("msg").agg(
        ((pl.col("t_ns") - pl.col("t_publish_ns")).min() / 1e6).alias("first"),
        ((pl.col("t_ns") - pl.col("t_publish_ns")).max() / 1e6).alias("last"),
    )
    return float(per_msg["first"].median()), float(per_msg["last"].median())


def slow_start_wait_ms(size: int, write_ms: float, rtt_ms: float) -> float:
    """Linux slow start from IW10 (10 × 1460 B), doubling per round trip: per round whose
    window does not hold the rest, the round trip less that window's writing time."""
    window, left, wait = 14_600, size, 0.0
    while left > window:
        wait += max(0.0, rtt_ms - write_ms * window / size)
        left -= window
        window *= 2
    return wait


def test_fifo_sends_the_copies_one_after_the_other_fair_together(tmp_path: Path) -> None:
    # 500 kB at 50 Mbit is 80 ms a copy, 640 ms for eight, plus 20 ms of link. Every
    # message follows 2 s of idle: the window is back at 10 segments (RTO 240 ms).
    fifo_first, fifo_last = first_and_last_copy_ms("fifo", tmp_path)
    fair_first, fair_last = first_and_last_copy_ms("fair", tmp_path)
    # FIFO: each copy has the whole uplink for 80 ms, so its slow start barely overlaps.
    assert fifo_first == pytest.approx(80 + 20 + slow_start_wait_ms(500_000, 80, 40), abs=1)
    # Fair: the copies are written together over 640 ms, which hides most of the
    # waiting. The last to finish is the connection served last in the first round of
    # 16 KiB turns: it started 7 turns (18.35 ms) late, so it took 621.7 ms.
    assert fair_first > 7 * 80 + 20, "fair: no copy is done before all but one are"
    late_start = 7 * 16_384 * 8 / 50e6 * 1e3
    expected = 640 + 20 + slow_start_wait_ms(500_000, 640 - late_start, 40)
    assert fair_last == pytest.approx(expected, abs=1)
    # FIFO's last copy is written in the last 80 ms and then waits its own rounds.
    assert fifo_last == pytest.approx(640 + 20 + slow_start_wait_ms(500_000, 80, 40), abs=1)


def test_window_copies_end_one_last_round_apart(tmp_path: Path) -> None:
    # Every message follows 2 s of idle, so every connection restarts from 10 segments:
    # 500 kB takes rounds of 14.6, 29.2, 58.4, 116.8 and 233.6 kB (31 x 14.6 kB), then
    # the rest. A connection's round is one block in the uplink's FIFO queue, so the 8
    # copies end one after the other, each one last round's writing after the previous.
    first, last = first_and_last_copy_ms("window", tmp_path)
    traffic = pl.read_parquet(tmp_path / "window" / "traffic.parquet")
    payload = traffic.filter((pl.col("node") == 0) & (pl.col("kind") == "payload"))
    copy = payload["bytes_sent"][0] / payload["msgs_sent"][0]
    last_round_ms = (copy - 31 * 14_600) * 8 / 50e6 * 1e3
    assert last - first == pytest.approx(7 * last_round_ms, abs=0.05)


def test_shadow_sharing_brings_shadows_tcp_unless_given() -> None:
    # Shadow's legacy TCP: cwnd 1 (tcp_cong_reno.c:tcp_cong_reno_init) plus the SYN's
    # acknowledgement, and no restart after idle.
    net = network(uplink_sharing="shadow")
    assert (net.initial_window, net.slow_start_after_idle) == (2, False)
    assert network(uplink_sharing="shadow", initial_window=10).initial_window == 10
    # Shadow's upstream router is one CoDel packet queue (routing/router.c): the packets
    # of connections arriving together interleave, as the default has it.
    assert net.downlink_sharing == "fair"


@pytest.mark.parametrize("field", ["pacing", "slow_start_after_idle"])
def test_shadow_sharing_refuses_what_shadows_tcp_does_not_do(field: str) -> None:
    with pytest.raises(ScenarioError) as error:
        network(uplink_sharing="shadow", **{field: True})
    assert f"network.{field}" in str(error.value)
    assert 'uplink_sharing = "window"' in str(error.value)


def test_shadow_sends_grown_windows_copies_one_after_the_other(tmp_path: Path) -> None:
    # Shadow never restarts a window, and every acknowledged packet grows it: after the
    # first message each connection's window holds a whole copy, so the interface sends
    # the copies in the order they were written, each whole (80 ms a copy at 50 Mbit),
    # as one FIFO queue: the first after 80 + 20 ms, the last after 8 x 80 + 20 ms.
    first, last = first_and_last_copy_ms("shadow", tmp_path)
    assert first == pytest.approx(80 + 20, abs=0.5)
    assert last == pytest.approx(8 * 80 + 20, abs=0.5)
