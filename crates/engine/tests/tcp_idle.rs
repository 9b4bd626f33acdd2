//! Slow start and its restart after idle, against Linux's rules worked out by hand:
//! the window starts at 10 segments and doubles per round trip (RFC 5681), and after
//! an idle period longer than the retransmission timeout (RTT + 200 ms) it halves once
//! per timeout beyond the first, down to the initial window (`tcp_cwnd_restart`,
//! RFC 2861), unless `slow_start_after_idle` is off.

mod common;
use common::*;

use serde_json::json;

/// Latency of three 100 kB messages from node 0 to node 1 (20 ms links, unlimited
/// bandwidth), published at 1 s, 1.1 s (100 ms later: not idle) and 3.1 s (2 s idle).
fn latencies(slow_start_after_idle: bool) -> Vec<u64> {
    three_message_latencies(json!({
        "initial_window_segments": 10, "slow_start_after_idle": slow_start_after_idle
    }))
}

#[test]
fn an_idle_connection_falls_back_to_slow_start() {
    // 100 kB (a little more on the wire) needs windows of 14.6 + 29.2 + 58.4 kB: two
    // extra round trips of 40 ms. The second message finds 58.4 kB open: one more round.
    // After 2 s idle (> 8 timeouts of 240 ms) the window is back to 10 segments.
    assert_eq!(latencies(true), vec![100 * MS, 60 * MS, 100 * MS]);
}

#[test]
fn without_restart_the_grown_window_is_kept() {
    // The second message opened the window to 116.8 kB: the third fits in one round.
    assert_eq!(latencies(false), vec![100 * MS, 60 * MS, 20 * MS]);
}
