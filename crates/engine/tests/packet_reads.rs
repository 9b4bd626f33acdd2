//! On a time-sliced host the goroutine that reads a connection (yamux's recvLoop with the
//! event loop, else the stream's reader) reads a large RPC as its packets arrive
//! (`crates/engine/src/packet_reads.rs`): Noise reads each transport message whole with
//! `io.ReadFull` on the connection, so every packet that finds the recvLoop parked on the
//! netpoller makes it runnable for a read (go-libp2p `p2p/security/noise/rw.go:Read`,
//! `internal/poll/fd_unix.go:FD.Read`), and the packets that arrive while the node runs
//! other goroutines wait for the next poll and are read in one turn
//! (`runtime/proc.go:findRunnable`). Hand-computed timelines.

mod common;
use common::*;

use gossiplab_engine::goroutines::KIND_NAMES;
use gossiplab_engine::wire::WireSizes;
use gossiplab_engine::Simulation;
use serde_json::json;

/// Bytes per µs of node 0's uplink: 8 Mbit/s, one connection paced at 1.2 MB/s, so its
/// GSO packets are of the least size, 2 segments (`tcp_tso_autosize`).
const UPLOAD_BPS: u64 = 8_000_000;
const PACKET: u64 = 2 * 1460;

/// The line 0 - 1 - 2 on one core (slices of 100 ms), floodsub over 10 ms links, with
/// the event loop. Node 0 publishes a 10,000-byte message at 100 ms over its limited
/// uplink; with `busy`, node 2 publishes a 100-byte one at the same time over an
/// unlimited one, which node 1 takes 9 ms to validate. A recvLoop turn costs 100 µs,
/// nothing else costs. Node 1's recvLoop turns from 100 ms (the peers' hellos come
/// before), and the large RPC's wire size.
fn recv_loop_turns(busy: bool, upload_bps: u64) -> (usize, u64) {
    read_turns(busy, upload_bps, true)
}

/// `recv_loop_turns`, or without the event loop (`event_loop` false) the turns of the
/// stream's reader, which then reads the connection (a turn costs 100 µs).
fn read_turns(busy: bool, upload_bps: u64, event_loop: bool) -> (usize, u64) {
    let mut upload = vec![0u64; 3];
    upload[0] = upload_bps;
    let patch = json!({
        "network": {"upload_bps": upload},
        "cpu": {
            "nodes_per_host": 3, "cores": 1, "time_slice_ns": 100 * MS,
            "event_loop": event_loop,
            "per_recv_loop_turn_ns": 100 * US, "per_reader_turn_ns": 100 * US,
            "per_copy_ns": if busy { 9 * MS } else { 0 },
            "record_waits": [1]
        }
    });
    let c = config(3, "floodsub", 10 * MS, 2 * S, 1, patch);
    let large = messages(0, 100 * MS, 0, 1, 10_000);
    let schedule = if busy {
        then(messages(2, 100 * MS, 0, 1, 100), large)
    } else {
        large
    };
    let mut sim = Simulation::new(&c, &line(3), &schedule).unwrap();
    sim.run();
    let name = if event_loop {
        "yamux recvLoop"
    } else {
        "reader"
    };
    let reads = KIND_NAMES.iter().position(|&k| k == name).unwrap() as u8;
    let turns = sim
        .goroutine_waits()
        .iter()
        .filter(|w| w.node == 1 && w.kind == reads && w.at >= 100 * MS)
        .count();
    let wire = WireSizes::frame(WireSizes::new(&c.protocol).publish_field(10_000));
    (turns, wire)
}

#[test]
fn an_idle_node_reads_each_packet_of_a_large_rpc_as_it_arrives() {
    // The RPC leaves node 0 at 1 byte a µs from 100 ms: packets end at 2,920, 5,840 and
    // 8,760 bytes and arrive 10 ms later, 2.92 ms apart; the rest is the RPC's own
    // arrival. Each finds the recvLoop parked (its 100 µs turn ended long before).
    let (turns, wire) = recv_loop_turns(false, UPLOAD_BPS);
    assert!(3 * PACKET < wire && wire < 4 * PACKET, "{wire}");
    assert_eq!(turns, 4);
}

#[test]
fn an_rpc_that_arrives_at_once_is_read_in_one_turn() {
    // An unlimited uplink writes the RPC at once: it arrives whole.
    assert_eq!(recv_loop_turns(false, 0).0, 1);
}

#[test]
fn packets_that_arrive_while_the_node_runs_others_share_one_turn() {
    // Node 2's copy arrives at 110 ms: a recvLoop turn (that connection's) to 110.1,
    // then the validator to 119.1 ms. The large RPC's packets arrive at 112.92, 115.84
    // and 118.76 ms, while the P runs the validator: the netpoller is polled once the
    // run queue empties, at 119.1, and one turn reads all three. The RPC's last packet,
    // at 110 ms + its wire time (about 120.1 ms), finds the recvLoop parked: a turn.
    let (turns, wire) = recv_loop_turns(true, UPLOAD_BPS);
    assert!(wire > 9_100 && wire < 3 * PACKET + 9_000, "{wire}");
    assert_eq!(turns, 1 + 1 + 1);
}

#[test]
fn without_the_event_loop_the_reader_reads_the_packets() {
    // The same timelines: the reader reads the connection.
    assert_eq!(read_turns(false, UPLOAD_BPS, false).0, 4);
    assert_eq!(read_turns(true, UPLOAD_BPS, false).0, 3);
}
