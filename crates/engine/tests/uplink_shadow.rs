//! An uplink as Shadow's network stack shares it (`uplink_sharing = "shadow"`), against
//! expectations from Shadow's code: its default interface queue sends, among the sockets
//! with packets in their windows, the packet whose data was written first
//! (`network_interface.c:_networkinterface_selectFirstInFirstOut`, a priority taken in
//! `tcp.c:tcp_sendUserData`), and its legacy TCP grows the window by every acknowledged
//! packet in slow start (`tcp_cong_reno.c:ca_reno_slow_start_new_ack_ev_`).

mod common;
use common::*;

use serde_json::json;

const PIECE: u64 = 16 * 1024;

/// `star_uplink_run` with windows from `initial` segments that never restart.
fn star_run(latency: &[u64], size: u32, sharing: &str, initial: u64) -> (Vec<u64>, u64) {
    let network = json!({"initial_window_segments": initial, "slow_start_after_idle": false});
    star_uplink_run(latency, size, sharing, network)
}

#[test]
fn with_open_windows_the_copies_leave_whole_in_the_order_they_were_written() {
    // Windows larger than any copy: every socket has all its packets in its window, and
    // the interface sends them oldest write first, so each copy leaves whole, one after
    // the other, as one FIFO of RPCs does.
    let (t, wire) = star_run(&[10 * MS; 8], 200_000, "shadow", 100_000);
    for (k, &t) in t.iter().enumerate() {
        assert_eq!(
            t,
            10 * MS + uplink_write_ns((k as u64 + 1) * wire),
            "copy {k}"
        );
    }
    let (fifo, _) = star_run(&[10 * MS; 8], 200_000, "fifo", 100_000);
    assert_eq!(t, fifo);
}

#[test]
fn a_copy_written_first_is_not_held_by_a_later_one_whose_window_opens_sooner() {
    // Leaf 1's copy (written first) has a 100 ms round trip; leaf 2's, written next, 0 ms,
    // so its window opens as fast as its pieces leave and its whole 2 MB copy is released
    // in the first milliseconds. Ordered by writing, each flight leaf 1's acknowledgements
    // release goes ahead of it and waits only for the piece being written: leaf 1 takes
    // what it takes alone, plus at most a piece per flight (8 flights of slow start from
    // 10 segments for 2 MB). In release order it waits behind leaf 2's copy instead.
    let size = 2_000_000;
    let (alone, _) = star_run(&[50 * MS], size, "shadow", 10);
    let (shadow, _) = star_run(&[50 * MS, 0], size, "shadow", 10);
    assert!(shadow[0] >= alone[0], "{shadow:?} {alone:?}");
    assert!(
        shadow[0] <= alone[0] + 8 * uplink_write_ns(PIECE),
        "{shadow:?} {alone:?}"
    );
    let (window, _) = star_run(&[50 * MS, 0], size, "window", 10);
    assert!(window[0] > alone[0] + 50 * MS, "{window:?} {alone:?}");
}

/// Latency of a 100 kB message from node 0 to node 1 (50 ms links, a 10 Gbit uplink)
/// published at 6 s, after twenty 1 kB messages from 1 s, 200 ms apart (each
/// acknowledged before the next).
fn after_small_messages(sharing: &str) -> u64 {
    let network = json!({
        "upload_bps": [10_000_000_000u64, 0], "uplink_sharing": sharing,
        "initial_window_segments": 10, "slow_start_after_idle": false,
    });
    let schedule = then(
        messages(0, S, 200 * MS, 20, 1_000),
        messages(0, 6 * S, 0, 1, 100_000),
    );
    pair_latencies(50 * MS, network, &schedule)[20]
}

#[test]
fn shadow_grows_the_window_by_every_acknowledged_packet() {
    // Twenty copies of about 1,050 B, each acknowledged, grow Shadow's 14.6 kB window by
    // about 21 kB to 35-39 kB: 100 kB then needs one extra round trip (35 + 70 kB). The
    // Linux rule grows it only while more than half was in use, which 1 kB of 14.6 never
    // is: two extra round trips (14.6 + 29.2 + 58.4 kB). Writing 100 kB at 10 Gbit/s
    // takes 80 µs.
    let writing = 200 * US;
    let shadow = after_small_messages("shadow");
    assert!((150 * MS..150 * MS + writing).contains(&shadow), "{shadow}");
    let window = after_small_messages("window");
    assert!((250 * MS..250 * MS + writing).contains(&window), "{window}");
}
