//! The transport buffer below the outbound queue and the urgent lane (go-libp2p-pubsub
//! v0.17.0 over yamux): an RPC leaves the 32-slot queue when the connection's transport
//! takes it, which it does while it holds less than 256 KiB unsent (go-yamux's initial
//! stream window; `comm.go:handleSendingMessages` pops the next RPC as soon as `Write`
//! returns). An urgent IDONTWANT overtakes only what is still queued (`rpc_queue.go`).

mod common;
use common::*;

use gossiplab_engine::Simulation;
use serde_json::json;

/// IDONTWANT ids node 1 has received by `t`, when node 0 (uplink 1 byte/µs, 10 ms away)
/// publishes two 100 kB messages at 1 s and a 2 kB one at 1.001 s (gossipsub v1.2).
fn idontwant_received_by(t: u64, buffer: u64) -> u64 {
    let patch = json!({
        "network": {"upload_bps": [8_000_000, 0], "send_buffer_bytes": buffer},
        "protocol": {"version": "1.2", "flood_publish": true}
    });
    let c = config(2, "gossipsub", 10 * MS, 10 * S, 1, patch);
    let schedule = then(
        messages(0, S, 0, 2, 100_000),
        messages(0, S + MS, 0, 1, 2_000),
    );
    let mut sim = Simulation::new(&c, &line(2), &schedule).unwrap();
    sim.run_until(t);
    sim.traffic(1)[IDONTWANT].msgs_recv
}

const IDONTWANT: usize = 5;

#[test]
fn idontwant_does_not_overtake_what_the_transport_took() {
    // Each publish queues IDONTWANT (urgent) then the message, and the transport takes
    // both at once (200 kB < 256 KiB), so the wire order is IDW1 M1 IDW2 M2 IDW3 M3:
    // IDW2 follows M1 (100 ms of writing), IDW3 follows M2.
    let got: Vec<u64> = [50, 150, 250]
        .iter()
        .map(|&ms| idontwant_received_by(S + ms * MS, 256 * 1024))
        .collect();
    assert_eq!(got, vec![1, 2, 3]);
}

#[test]
fn without_a_transport_buffer_idontwant_overtakes_every_waiting_rpc() {
    // Only the RPC being written is out of the queue: IDW2 overtakes M1's follower,
    // arriving right after IDW1... and IDW3 right after M1.
    let got: Vec<u64> = [50, 150, 250]
        .iter()
        .map(|&ms| idontwant_received_by(S + ms * MS, 0))
        .collect();
    assert_eq!(got, vec![2, 3, 3]);
}

/// Delivered and dropped of `count` 1,000 B messages sent at once over a slow uplink
/// to one peer with a queue of 10 and a transport buffer of `buffer` bytes.
fn queue_outcome(count: u32, buffer: u64) -> (u64, u64, u64) {
    let patch = json!({
        "network": {"upload_bps": [1_000_000, 0], "send_buffer_bytes": buffer},
        "protocol": {"peer_outbound_queue": 10}
    });
    let c = config(2, "floodsub", MS, 120 * S, 1, patch);
    let mut sim = Simulation::new(&c, &line(2), &messages(0, 100 * MS, 0, count, 1000)).unwrap();
    sim.run();
    let dropped = drops(&sim, "outbound-queue-full");
    let wire = sim.traffic(0)[0].bytes_sent / sim.traffic(0)[0].msgs_sent;
    (sim.output().deliveries.len() as u64, dropped, wire)
}

#[test]
fn the_queue_counts_only_what_the_transport_has_not_taken() {
    // Buffer 0: the head RPC is out of the queue, 10 wait, the rest is dropped.
    assert_eq!(queue_outcome(50, 0).0, 11);
    // 256 KiB: the transport takes RPCs while it holds < 262,144 bytes, i.e.
    // ceil(262,144 / wire) of them, then 10 wait.
    let (delivered, dropped, wire) = queue_outcome(400, 256 * 1024);
    let taken = 262_144u64.div_ceil(wire);
    assert_eq!(delivered, taken + 10);
    assert_eq!(dropped, 400 - taken - 10);
}

#[test]
fn a_full_queue_drops_an_urgent_idontwant_too() {
    // Queue of 2, transport holding only the RPC being written. Three publishes at
    // once, each queueing IDONTWANT (urgent) then the message (go: both lanes share
    // rpcQueue's maxSize; push fails when full, doDropRPC; IDONTWANT is never retried):
    // IDW1 written, M1 waits; IDW2 waits (ahead of M1), M2 dropped; IDW3, M3 dropped.
    let patch = json!({
        "network": {"upload_bps": [8_000_000, 0], "send_buffer_bytes": 0},
        "protocol": {"version": "1.2", "peer_outbound_queue": 2}
    });
    let c = config(2, "gossipsub", 10 * MS, 10 * S, 1, patch);
    let mut sim = Simulation::new(&c, &line(2), &messages(0, S, 0, 3, 2_000)).unwrap();
    sim.run();
    let dropped = |kind: usize| -> u64 {
        sim.output()
            .drops
            .iter()
            .filter(|(k, _)| k.reason == "outbound-queue-full" && k.kind as usize == kind)
            .map(|(_, c)| c)
            .sum()
    };
    assert_eq!((dropped(IDONTWANT), dropped(0)), (1, 2));
    assert_eq!(sim.traffic(1)[IDONTWANT].msgs_recv, 2);
}

#[test]
fn idontwant_never_cancels_a_copy_already_queued() {
    // P(0), R(1), S(2) in a triangle of 10 ms links; R's uplink is 1 byte/µs. R
    // publishes 200 kB at 2 s (its copy to S takes until ≈ 2.4 s), P publishes 2 kB at
    // 2.001 s. R has M at 2.011 s and queues it for S behind its own message; S has M
    // from P then too and tells R IDONTWANT, which R reads at 2.021 s: after R decided
    // to forward. go never takes a queued RPC back (issue #611): S gets M twice.
    let patch = json!({
        "network": {"upload_bps": [0, 8_000_000, 0]},
        "protocol": {"version": "1.2"}
    });
    let c = config(3, "gossipsub", 10 * MS, 10 * S, 1, patch);
    let schedule = then(
        messages(1, 2 * S, 0, 1, 200_000),
        messages(0, 2 * S + MS, 0, 1, 2_000),
    );
    let mut sim = Simulation::new(&c, &full(3), &schedule).unwrap();
    sim.run();
    let d = &sim.output().deliveries;
    let at_s = (0..d.len())
        .find(|&i| d.msg[i] == 1 && d.node[i] == 2)
        .unwrap();
    assert_eq!((d.from_node[at_s], d.duplicates[at_s]), (0, 1));
    assert_eq!(drops(&sim, "saved-by-idontwant"), 0);
}
