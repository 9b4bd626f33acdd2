"""bench/tcp_pacing.py reads `ss -tin` and groups arriving segments into bursts: checked
on hand-written `ss` output in its format, on tcp_tso_autosize's closed form, and on
hand-made arrival times whose bursts are known."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from tcp_pacing import burst_sizes, gso_segments, parse_ss

SS_TEXT = """0      0      10.77.0.14:4001 10.77.0.38:4001
\t cubic wscale:10,10 rto:244 rtt:45.6/3.1 mss:1448 cwnd:59 ssthresh:51 bytes_sent:912345 \
bytes_acked:900000 send 14987000bps pacing_rate 17984000bps delivery_rate 14000000bps \
unacked:59
0      34     10.77.0.14:4001 10.77.0.10:4001
\t cubic wscale:10,10 rto:244 rtt:40.155/15.063 mss:1448 cwnd:10 bytes_sent:62 \
send 2884821bps pacing_rate 5769528bps delivery_rate 288584bps app_limited
"""


def test_each_connection_s_window_threshold_and_rates_are_read() -> None:
    states = parse_ss(SS_TEXT)
    assert set(states) == {"10.77.0.38:4001", "10.77.0.10:4001"}
    busy = states["10.77.0.38:4001"]
    assert busy["cwnd"] == 59 and busy["ssthresh"] == 51 and busy["rtt"] == 45.6
    assert busy["pacing_rate"] == 17_984_000 and busy["delivery_rate"] == 14_000_000
    # A connection still in its first slow start has no ssthresh in ss's output.
    assert "ssthresh" not in states["10.77.0.10:4001"]


def test_a_gso_packet_holds_a_1024th_of_a_second_of_the_pacing_rate() -> None:
    # 28.2 Mbit/s: 3,442 bytes a 1/1024 s, two whole segments; 40 Mbit/s: 4,882, three.
    assert gso_segments(28.2e6) == 2
    assert gso_segments(40e6) == 3
    # Slow pacing still sends tcp_min_tso_segs = 2; fast pacing at most 64 KiB.
    assert gso_segments(1e6) == 2
    assert gso_segments(10e9) == 65_536 // 1448


def test_segments_under_100_us_apart_are_one_burst_per_connection() -> None:
    arrivals = {
        "a": [0.0, 0.000005, 0.000010, 0.001, 0.001002, 0.01],
        "b": [0.0, 0.00009, 0.00018],
        "c": [],
    }
    # a: 3, 2, 1; b: one burst of 3 (each gap under 100 µs).
    assert burst_sizes(arrivals) == {3: 2, 2: 1, 1: 1}
