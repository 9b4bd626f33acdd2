//! Each node's CPU time (`crates/engine/src/cpu_use.rs`), sampled at every whole second,
//! against counts of the work go-libp2p-pubsub does.
//!
//! Three floodsub nodes, all connected, 10 ms links; node 0 publishes one 100-byte
//! message at 1.5 s, 2.5 s and 3.5 s; the run ends at 4 s. Costs: sign 1 ms, write an RPC
//! 2 ms, read one 3 ms, validate a copy 5 ms. What each node does:
//! - at the start, every node writes its hello (its subscriptions) to both peers and reads
//!   both peers' hellos: 2 × 2 + 2 × 3 = 10 ms each;
//! - per message, node 0 signs it and writes it to both peers (go's floodsub sends to
//!   every topic peer but the sender and the author, `floodsub.go:Publish`): 1 + 2 × 2 =
//!   5 ms. Each of nodes 1 and 2 reads node 0's copy, validates it and writes it to the
//!   other (not back to node 0, its sender and author), then reads the other's copy,
//!   already seen, which go drops unvalidated (`pubsub.go:handleIncomingRPC`): 3 + 5 +
//!   2 + 3 = 13 ms. The other's copy comes 10 ms (a link) after its sender's last
//!   write, when the first copy is long validated.

mod common;
use common::*;

use gossiplab_engine::Simulation;
use serde_json::{json, Value};

const HELLOS: u64 = 10 * MS;
const PER_MESSAGE: [u64; 3] = [5 * MS, 13 * MS, 13 * MS];

fn cpu(extra: Value) -> Value {
    let costs = json!({
        "per_publish_ns": MS, "per_rpc_sent_ns": 2 * MS,
        "per_rpc_received_ns": 3 * MS, "per_copy_ns": 5 * MS
    });
    json!({ "cpu": merged(costs, extra) })
}

/// Each node's samples (t_ns, cumulative CPU ns) for the costs above plus `extra`.
fn samples(extra: Value) -> Vec<Vec<(i64, u64)>> {
    let c = config(3, "floodsub", 10 * MS, 4 * S, 1, cpu(extra));
    let schedule = messages(0, 1_500 * MS, S, 3, 100);
    let mut sim = Simulation::new(&c, &full(3), &schedule).unwrap();
    sim.run();
    assert_eq!(
        sim.output().deliveries.len(),
        6,
        "every message reached both peers"
    );
    let s = sim.cpu_samples().expect("the scenario charges CPU");
    (0..3)
        .map(|node| {
            (0..s.node.len())
                .filter(|&i| s.node[i] == node)
                .map(|i| (s.t_ns[i], s.cpu_ns[i]))
                .collect()
        })
        .collect()
}

/// Hellos in the first second, then one message in each of the next three.
fn expected() -> Vec<Vec<(i64, u64)>> {
    (0..3)
        .map(|node| {
            (0..=4u64)
                .map(|k| {
                    let used = if k == 0 {
                        0
                    } else {
                        HELLOS + (k - 1) * PER_MESSAGE[node]
                    };
                    ((k * S) as i64, used)
                })
                .collect()
        })
        .collect()
}

#[test]
fn each_node_on_its_own_host_uses_the_cost_of_what_it_did() {
    assert_eq!(samples(json!({})), expected());
}

#[test]
fn three_nodes_time_sliced_on_one_core_use_the_same() {
    // One host, one core: the nodes take turns (1 ms slices split every piece of work
    // longer than that), each node's time on the core adds up to the same.
    for slice in [MS, 100 * MS] {
        let sliced = json!({"nodes_per_host": 3, "cores": 1, "time_slice_ns": slice});
        assert_eq!(samples(sliced), expected(), "slices of {slice} ns");
    }
}

#[test]
fn a_wake_up_is_charged_with_the_work_it_starts() {
    // A node wake-up of 100 µs (cpu.rs, node_wakeup) each time a node with nothing to
    // run gets work. Per message: node 0 wakes to sign it (its writes follow at once);
    // node 1 wakes for node 0's copy at 13.1 ms after publication, is done at 23.2 ms, and
    // wakes again for node 2's copy (node 2 wrote it at 25.2 ms, + 10 ms); node 2 likewise.
    let wake = 100 * US;
    let s = samples(json!({"per_node_wakeup_ns": wake}));
    for (node, samples) in s.iter().enumerate() {
        let wakes = if node == 0 { 1 } else { 2 };
        for k in 2..=4 {
            let second = samples[k].1 - samples[k - 1].1;
            assert_eq!(
                second,
                PER_MESSAGE[node] + wakes * wake,
                "node {node}, second {k}"
            );
        }
    }
}

#[test]
fn a_scenario_that_charges_no_cpu_has_no_samples() {
    let c = config(3, "floodsub", 10 * MS, 4 * S, 1, json!({}));
    let mut sim = Simulation::new(&c, &full(3), &messages(0, S, S, 1, 100)).unwrap();
    sim.run();
    assert!(sim.cpu_samples().is_none());
}

#[test]
fn a_run_that_ends_between_whole_seconds_has_a_last_sample_at_its_end() {
    // Ends at 2.2 s, after the first message (1.5 s) and before the second.
    let c = config(3, "floodsub", 10 * MS, 2_200 * MS, 1, cpu(json!({})));
    let schedule = messages(0, 1_500 * MS, S, 3, 100);
    let mut sim = Simulation::new(&c, &full(3), &schedule).unwrap();
    sim.run();
    let s = sim.cpu_samples().unwrap();
    let node_1: Vec<(i64, u64)> = (0..s.node.len())
        .filter(|&i| s.node[i] == 1)
        .map(|i| (s.t_ns[i], s.cpu_ns[i]))
        .collect();
    let t = |ms: u64| (ms * MS) as i64;
    assert_eq!(
        node_1,
        [
            (0, 0),
            (t(1_000), HELLOS),
            (t(2_000), HELLOS + PER_MESSAGE[1]),
            (t(2_200), HELLOS + PER_MESSAGE[1])
        ]
    );
}
