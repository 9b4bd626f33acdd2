//! Helpers shared by the engine's integration tests.
#![allow(dead_code)]

use gossiplab_engine::{Config, Schedule, Simulation};
use serde_json::{json, Value};

pub const MS: u64 = 1_000_000;
pub const S: u64 = 1_000_000_000;

/// go-default gossipsub (or `router`) on `nodes` nodes with constant `latency_ns`, no
/// bandwidth or CPU limits; `patch` overrides any field (e.g. `{"protocol": {"D": 8}}`).
pub fn config(
    nodes: u32,
    router: &str,
    latency_ns: u64,
    end_ns: u64,
    seed: u64,
    patch: Value,
) -> Config {
    let n = nodes as usize;
    let mut value = json!({
        "seed": seed, "nodes": nodes, "end_ns": end_ns, "topics": 1,
        "network": {
            "latency": {"kind": "constant", "ns": latency_ns},
            "upload_bps": vec![0; n], "download_bps": vec![0; n], "cpu_per_message_ns": vec![0; n]
        },
        "protocol": {
            "router": router, "version": "1.1", "D": 6, "D_lo": 5, "D_hi": 12, "D_lazy": 6,
            "D_score": 4, "D_out": 2, "heartbeat_ns": S, "heartbeat_initial_delay_ns": 100 * MS,
            "history_length": 5, "history_gossip": 3, "gossip_factor": 0.25,
            "fanout_ttl_ns": 60 * S, "seen_ttl_ns": 120 * S, "flood_publish": false,
            "prune_backoff_ns": 60 * S, "unsubscribe_backoff_ns": 10 * S,
            "backoff_clear_ticks": 15, "backoff_slack_ticks": 2,
            "max_ihave_length": 5000, "max_ihave_messages": 10, "gossip_retransmission": 3,
            "iwant_followup_ns": 3 * S, "peer_outbound_queue": 32, "validate_queue": 32,
            "signing": "strict-sign", "message_id": "go", "topic_name_len": 20,
            "idontwant_threshold": 1024, "D_announce": 0, "ineed_timeout_ns": 400 * MS
        },
        "output": {"receipts": true}
    });
    merge(&mut value, patch);
    Config::from_json(&value.to_string()).expect("valid config")
}

/// `base` with `patch` merged in (objects key by key, anything else replaced).
pub fn merged(mut base: Value, patch: Value) -> Value {
    merge(&mut base, patch);
    base
}

/// rust-libp2p's default score parameters (go ships none), with a behaviour-penalty
/// decay slow enough that a penalty can still be read a heartbeat later.
pub fn score_params() -> Value {
    json!({
        "gossip_threshold": -10.0, "publish_threshold": -50.0, "graylist_threshold": -80.0,
        "accept_px_threshold": 10.0, "opportunistic_graft_threshold": 20.0,
        "topic_score_cap": 3600.0, "topic_weight": 0.5,
        "time_in_mesh_weight": 1.0, "time_in_mesh_quantum_ns": S, "time_in_mesh_cap": 3600.0,
        "first_message_deliveries_weight": 1.0, "first_message_deliveries_decay": 0.5,
        "first_message_deliveries_cap": 2000.0,
        "mesh_message_deliveries_weight": -1.0, "mesh_message_deliveries_decay": 0.5,
        "mesh_message_deliveries_threshold": 20.0, "mesh_message_deliveries_cap": 100.0,
        "mesh_message_deliveries_activation_ns": 3600 * S, "mesh_message_deliveries_window_ns": 10 * MS,
        "mesh_failure_penalty_weight": -1.0, "mesh_failure_penalty_decay": 0.5,
        "invalid_message_deliveries_weight": -1.0, "invalid_message_deliveries_decay": 0.3,
        "behaviour_penalty_weight": -10.0, "behaviour_penalty_threshold": 0.0,
        "behaviour_penalty_decay": 0.99, "decay_interval_ns": S, "decay_to_zero": 0.01,
        "graft_flood_threshold_ns": 10 * S, "opportunistic_graft_ticks": 60,
        "opportunistic_graft_peers": 2
    })
}

/// One schedule after the other; the second's batches are numbered after the first's.
pub fn then(mut first: Schedule, second: Schedule) -> Schedule {
    let offset = first.batch.iter().max().map_or(0, |b| b + 1);
    first.t_intended_ns.extend(second.t_intended_ns);
    first.publisher.extend(second.publisher);
    first.size.extend(second.size);
    first.topic.extend(second.topic);
    first.batch.extend(second.batch.iter().map(|b| b + offset));
    first
}

fn merge(base: &mut Value, patch: Value) {
    match (base, patch) {
        (Value::Object(b), Value::Object(p)) => {
            for (k, v) in p {
                merge(b.entry(k).or_insert(Value::Null), v);
            }
        }
        (b, p) => *b = p,
    }
}

/// `count` messages of `size` bytes from `publisher`, `gap` apart from `start`.
pub fn messages(publisher: u32, start: u64, gap: u64, count: u32, size: u32) -> Schedule {
    Schedule {
        t_intended_ns: (0..count).map(|i| start + u64::from(i) * gap).collect(),
        publisher: vec![publisher; count as usize],
        size: vec![size; count as usize],
        topic: vec![0; count as usize],
        batch: (0..count).collect(),
    }
}

pub fn line(n: u32) -> Vec<(u32, u32)> {
    (0..n - 1).map(|i| (i, i + 1)).collect()
}

pub fn full(n: u32) -> Vec<(u32, u32)> {
    (0..n)
        .flat_map(|a| (a + 1..n).map(move |b| (a, b)))
        .collect()
}

/// Node 0 in the middle, connected to nodes 1..=leaves.
pub fn star(leaves: u32) -> Vec<(u32, u32)> {
    (1..=leaves).map(|i| (0, i)).collect()
}

/// Each node connected to the `k` nearest on each side of a ring: 2k-regular.
pub fn circulant(n: u32, k: u32) -> Vec<(u32, u32)> {
    (0..n)
        .flat_map(|a| (1..=k).map(move |d| (a, (a + d) % n)))
        .collect()
}

/// Items dropped so far for `reason`, over every node, peer and kind.
pub fn drops(sim: &Simulation, reason: &str) -> u64 {
    sim.output()
        .drops
        .iter()
        .filter(|(key, _)| key.reason == reason)
        .map(|(_, count)| count)
        .sum()
}
