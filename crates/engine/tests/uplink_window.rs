//! An uplink shared by congestion windows (`uplink_sharing = "window"`), against closed
//! forms worked out from its rules (`window.rs`, `uplink_window.rs`): a connection
//! releases what its window allows (10 segments of 1,460 B to start) into one FIFO queue
//! in pieces of at most 16 KiB, and each piece's acknowledgement, a round trip after it
//! left, frees its bytes and grows the window by as many (slow start).

mod common;
use common::*;

use serde_json::json;

const INITIAL: u64 = 10 * 1460;
const PIECE: u64 = 16 * 1024;

#[test]
fn a_short_round_trip_takes_the_uplink_while_a_long_one_waits_for_its_acknowledgements() {
    // Leaf 1 at 0 ms: every piece of its is acknowledged as it leaves and releases twice
    // its size, so it always has a piece queued, and the only bytes written before its
    // last are its own and leaf 2's first window (released at the same instant).
    let (t, wire) = star_uplink_run(&[0, 50 * MS], 200_000, "window", json!({}));
    assert_eq!(t[0], uplink_write_ns(wire + INITIAL));
    // Leaf 2 (100 ms round trip) is bound by slow start: 14.6 + 29.2 + 58.4 kB do not
    // hold the copy, so it needs three extra round trips, with the uplink to itself.
    let (rounds, latency) = (3 * 100 * MS, 50 * MS);
    assert!(t[1] > rounds + latency, "{t:?}");
    assert!(
        t[1] < rounds + latency + uplink_write_ns(wire + INITIAL),
        "{t:?}"
    );
    // Fair sharing serves both in turns: leaf 1 waits for about both copies' writing.
    let (fair, _) = star_uplink_run(&[0, 50 * MS], 200_000, "fair", json!({}));
    assert!(fair[0] > uplink_write_ns(2 * wire - PIECE), "{fair:?}");
}

#[test]
fn equal_round_trips_keep_their_order_and_end_one_last_flight_apart() {
    // Eight leaves at 10 ms. A connection's pieces sit together in the queue, so their
    // acknowledgements come back together and what they release (twice as much, slow
    // start) goes to the queue's tail together: each round's flight is one block, double
    // the last, and the blocks keep the order of the first windows. 200 kB needs rounds
    // of 14.6, 29.2, 58.4 kB and the rest, so the copies end one after the other, each
    // after writing the previous's last flight, wire - 7 x 14.6 kB.
    let (t, wire) = star_uplink_run(&[10 * MS; 8], 200_000, "window", json!({}));
    let last_flight = uplink_write_ns(wire - 7 * INITIAL);
    for k in 1..8 {
        assert_eq!(t[k] - t[k - 1], last_flight, "{t:?}");
    }
    // FIFO sharing instead spreads them over seven whole copies' writing.
    let (fifo, _) = star_uplink_run(&[10 * MS; 8], 200_000, "fifo", json!({}));
    let spread = fifo.iter().max().unwrap() - fifo.iter().min().unwrap();
    assert_eq!(spread, uplink_write_ns(7 * wire));
}

/// Latencies of three 100 kB messages from node 0 to node 1 (20 ms links, a 10 Gbit
/// uplink: writing takes 80 µs a copy), published at 1 s, 1.1 s and 3.1 s (2 s idle).
fn three_messages(slow_start_after_idle: bool) -> Vec<u64> {
    three_message_latencies(json!({
        "initial_window_segments": 10, "slow_start_after_idle": slow_start_after_idle,
        "uplink_sharing": "window", "upload_bps": [10_000_000_000u64, 0]
    }))
}

/// `t` is `expected` plus at most the 10 Gbit uplink's writing of two copies (80 µs
/// each): the copy's own, and the offset of the acknowledgements that release it, which
/// come back a round trip after their pieces left, within the previous copy's writing.
fn within_writing(t: &[u64], expected: &[u64]) -> bool {
    t.iter()
        .zip(expected)
        .all(|(&t, &e)| t >= e && t <= e + 2 * 80_200)
}

#[test]
fn a_window_limited_transfer_takes_slow_starts_round_trips_and_restarts_after_idle() {
    // 100 kB from 10 segments takes two extra round trips of 40 ms (tcp_idle.rs). The
    // second message is published as the first arrives, while the acknowledgements of
    // the first's last round (56 kB) are still on their way back: its first 2 kB fill
    // the window (58.4 kB), and 20 ms later those acknowledgements free it and, as each
    // came while more than half of it was in use, grow it by 56 kB to 114.7 kB, which
    // holds the rest: it arrives 20 + 20 ms after its publication. After 2 s idle
    // (> 8 timeouts of 240 ms) the window is back to 10 segments; without the restart
    // the third message fits in the 114.7 kB window at once.
    let t = three_messages(true);
    assert!(within_writing(&t, &[100 * MS, 40 * MS, 100 * MS]), "{t:?}");
    let t = three_messages(false);
    assert!(within_writing(&t, &[100 * MS, 40 * MS, 20 * MS]), "{t:?}");
}

#[test]
fn paced_pieces_leave_at_twice_the_window_per_round_trip() {
    // quic-go's pacer with a window of 28 segments (40,880 B) and a 100 ms round trip:
    // 12,800 B at once, the rest at 2 x 40,880 B per 100 ms (817.6 kB/s); the copy fits
    // in the window, so pacing alone delays its last byte.
    let network = json!({"initial_window_segments": 28, "pacing": true});
    let (t, wire) = star_uplink_run(&[50 * MS], 30_000, "window", network);
    let paced = ((wire - 12_800) * 100 * MS).div_ceil(2 * 28 * 1460);
    // The last piece is written after it is released: at most 12,800 B at 100 ns each.
    assert!(t[0] >= 50 * MS + paced, "{t:?} {paced}");
    assert!(
        t[0] <= 50 * MS + paced + uplink_write_ns(12_800) + 10,
        "{t:?} {paced}"
    );
}
