//! Hosts with shared cores and the CPU costs of publishing, sending, receiving and
//! validating, against hand-computed timelines (`crates/engine/src/cpu.rs`).

mod common;
use common::*;

use gossiplab_engine::wire::WireSizes;
use gossiplab_engine::Simulation;
use serde_json::{json, Value};

/// Costs used by the timelines below: sign 1 ms, encode 2 ms, decode 3 ms, validate 5 ms.
fn costs(nodes_per_host: u32, cores: u32) -> Value {
    json!({"cpu": {
        "nodes_per_host": nodes_per_host, "cores": cores,
        "per_publish_ns": MS, "per_rpc_sent_ns": 2 * MS,
        "per_rpc_received_ns": 3 * MS, "per_copy_ns": 5 * MS
    }})
}

fn delivery_times(nodes_per_host: u32, cores: u32) -> Vec<u64> {
    // Node 0 publishes at 100 ms to its two leaves over 10 ms links (floodsub).
    let c = config(
        3,
        "floodsub",
        10 * MS,
        2 * S,
        1,
        costs(nodes_per_host, cores),
    );
    let mut sim = Simulation::new(&c, &star(2), &messages(0, 100 * MS, 0, 1, 100)).unwrap();
    sim.run();
    sorted_delivery_times(&sim)
}

#[test]
fn each_node_on_its_own_core_pays_every_step_of_a_hop() {
    // Sign (1) → encode leaf 1 (2) → leaf 1: 10 ms link, decode 3, validate 5:
    // 100 + 1 + 2 + 10 + 3 + 5 = 121 ms. Node 0's two writers share its core, so the
    // second copy leaves 2 ms later: 123 ms.
    assert_eq!(delivery_times(1, 1), vec![121 * MS, 123 * MS]);
}

#[test]
fn three_nodes_on_one_core_queue_behind_each_other() {
    // Copies leave at 103 and 105 and arrive at 113 and 115. The single core decodes
    // leaf 1's copy 113-116; leaf 2's decode (ready at 115) runs 116-119; leaf 1's
    // validation, submitted at 116 behind it, runs 119-124; leaf 2's 124-129.
    assert_eq!(delivery_times(3, 1), vec![124 * MS, 129 * MS]);
}

#[test]
fn two_cores_run_both_writers_and_both_leaves_at_once() {
    // Both copies encoded 101-103, decoded 113-116, validated 116-121.
    assert_eq!(delivery_times(3, 2), vec![121 * MS, 121 * MS]);
}

#[test]
fn a_writer_that_falls_behind_overflows_its_32_rpc_queue() {
    // One message a millisecond to one peer, 10 ms of CPU to write each RPC
    // (comm.go:handleSendingMessages writes one RPC at a time). The writer holds one,
    // the queue 32 more. After arrival i (ms) the queue holds i − ⌊i/10⌋ RPCs: it is full
    // at i = 35; from then on each of the 6 completions (40, 50, …, 90 ms; a publication
    // at the same instant comes first) lets one more in. Accepted: 1 + 35 + 6 = 42 of
    // 100; dropped: 58, all payload, as "outbound-queue-full".
    let patch = json!({"cpu": {"per_rpc_sent_ns": 10 * MS}});
    let c = config(2, "floodsub", MS, 5 * S, 1, patch);
    let mut sim = Simulation::new(&c, &line(2), &messages(0, 100 * MS, MS, 100, 100)).unwrap();
    sim.run();
    assert_eq!(sim.output().deliveries.len(), 42);
    assert_eq!(drops(&sim, "outbound-queue-full"), 58);
    assert_eq!(drops(&sim, "validation-queue-full"), 0);
}

#[test]
fn bytes_cost_per_kilobyte_on_both_sides() {
    // 2 ms per KB to write and 1 ms per KB to read the framed RPC (100 kB of payload
    // plus its protobuf framing).
    let patch = json!({"cpu": {"per_kb_sent_ns": 2 * MS, "per_kb_received_ns": MS}});
    let c = config(2, "floodsub", 10 * MS, 2 * S, 1, patch);
    let mut sim = Simulation::new(&c, &line(2), &messages(0, 100 * MS, 0, 1, 100_000)).unwrap();
    sim.run();
    let t = sim.output().deliveries.t_ns[0] as u64;
    let bytes = WireSizes::frame(WireSizes::new(&c.protocol).publish_field(100_000));
    assert!((100_100..100_200).contains(&bytes), "framing {bytes}");
    let expected = 100 * MS + 2 * MS * bytes / 1000 + 10 * MS + MS * bytes / 1000;
    assert_eq!(t, expected);
}

#[test]
fn lognormal_costs_spread_delivery_and_stay_deterministic() {
    // 200 messages, 5 ms apart, 1 ms mean decode with σ = 1: the spread of per-receipt
    // latency comes from the draws; the same seed draws the same.
    let run = |sigma: f64| {
        let patch = json!({"cpu": {"per_rpc_received_ns": MS, "sigma": sigma}});
        let c = config(2, "floodsub", 10 * MS, 5 * S, 3, patch);
        let mut sim =
            Simulation::new(&c, &line(2), &messages(0, 100 * MS, 5 * MS, 200, 100)).unwrap();
        sim.run();
        let d = &sim.output().deliveries;
        let mut lat: Vec<u64> = (0..d.len())
            .map(|i| d.t_ns[i] as u64 - (100 * MS + 5 * MS * u64::from(d.msg[i])))
            .collect();
        lat.sort_unstable();
        lat
    };
    let constant = run(0.0);
    assert_eq!(constant.first(), constant.last(), "no spread without sigma");
    let spread = run(1.0);
    assert_eq!(spread, run(1.0));
    let (p50, p99) = (spread[100], spread[198]);
    // Lognormal of mean 1 ms, σ = 1: median e^(−1/2) ≈ 0.61 ms, p99 ≈ 0.61·e^2.33 ≈ 6.2 ms.
    assert!(p50 < 10 * MS + MS, "p50 {p50}");
    assert!(p99 > 10 * MS + 3 * MS, "p99 {p99}");
}

#[test]
fn on_a_limited_uplink_writing_follows_encoding() {
    // 2 ms to encode each RPC, then 1 byte per µs on the uplink (8 Mbit/s): two 10 kB
    // messages at once. The second is encoded while the first is on the wire (2-4 ms),
    // and waits for the uplink: it leaves at 2 + 2 × write.
    let patch = json!({
        "cpu": {"per_rpc_sent_ns": 2 * MS},
        "network": {"upload_bps": [8_000_000, 0]}
    });
    let c = config(2, "floodsub", 10 * MS, 2 * S, 1, patch);
    let mut sim = Simulation::new(&c, &line(2), &messages(0, 100 * MS, 0, 2, 10_000)).unwrap();
    sim.run();
    let bytes = WireSizes::frame(WireSizes::new(&c.protocol).publish_field(10_000));
    let write = bytes * 1_000; // ns at 1 byte per µs
    let t = sorted_delivery_times(&sim);
    let first = 100 * MS + 2 * MS + write + 10 * MS;
    assert_eq!(t, vec![first, first + write]);
}
