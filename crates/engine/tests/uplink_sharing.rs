//! How a node's uplink serves its connections, against closed forms: a hub sends one
//! message to each of its 8 leaves over an uplink of 10 bytes per microsecond.
//! `fifo` writes the copies whole one after the other;
//! `fair` serves the connections in turns of 16 KiB (TCP flows through the kernel's
//! FIFO qdisc, as measured on the testbed).

mod common;
use common::*;

use gossiplab_engine::Simulation;
use serde_json::json;

const RATE_BPS: u64 = 80_000_000; // 10 bytes per microsecond
const CHUNK: u64 = 16 * 1024;

/// Arrival times (after the publish) of the 8 copies, sorted, and one copy's wire size.
fn arrivals(sharing: &str) -> (Vec<u64>, u64) {
    let mut upload = vec![0u64; 9];
    upload[0] = RATE_BPS;
    let patch = json!({"network": {"upload_bps": upload, "uplink_sharing": sharing}});
    let c = config(9, "floodsub", 10 * MS, 10 * S, 1, patch);
    let mut sim = Simulation::new(&c, &star(8), &messages(0, S, 0, 1, 200_000)).unwrap();
    sim.run();
    let t: Vec<u64> = sorted_delivery_times(&sim).iter().map(|&t| t - S).collect();
    let wire = sim.traffic(0)[0].bytes_sent / 8;
    (t, wire)
}

fn write_ns(bytes: u64) -> u64 {
    (bytes * 8 * 1_000_000_000).div_ceil(RATE_BPS)
}

#[test]
fn fifo_delivers_the_kth_copy_after_k_copies_time() {
    let (t, wire) = arrivals("fifo");
    let expected: Vec<u64> = (1..=8).map(|k| write_ns(k * wire) + 10 * MS).collect();
    assert_eq!(t, expected);
}

#[test]
fn fair_delivers_every_copy_within_one_round_of_turns_of_the_end() {
    let (t, wire) = arrivals("fair");
    let all = write_ns(8 * wire) + 10 * MS;
    assert_eq!(*t.last().unwrap(), all);
    // The last turn of each connection is its remainder; before it, every connection
    // had its full turns, so the first copy ends at most 7 remainders before the last.
    let remainder = wire % CHUNK;
    assert!(t[0] >= all - write_ns(7 * remainder) - 7, "{t:?}");
    assert!(
        t[0] > write_ns(7 * wire),
        "the first copy is not early: {t:?}"
    );
}
