//! Helpers shared by the engine's integration tests.
#![allow(dead_code)]

use gossiplab_engine::error::EngineError;
use gossiplab_engine::{Config, EdgeProperties, Schedule, Simulation};
use serde_json::{json, Value};

pub const MS: u64 = 1_000_000;
pub const US: u64 = 1_000;
pub const S: u64 = 1_000_000_000;

/// The protocol presets, from the one file that defines them for every language.
const PRESETS: &str = include_str!("../../../../python/gossiplab/scenario/presets.toml");

/// Preset keys that are not engine protocol fields (the engine reads them from `score`).
const NOT_ENGINE_PROTOCOL: [&str; 3] = [
    "graft_flood_threshold",
    "opportunistic_graft_ticks",
    "opportunistic_graft_peers",
];

/// A preset's `[protocol]` fields as the engine's config names them: durations in ns
/// under `<name>_ns` (`iwant_followup_time` is `iwant_followup_ns`), sizes in bytes, as
/// `python/gossiplab/backends/params.py` translates them for a run.
pub fn preset_protocol(preset: &str) -> Value {
    let presets: toml::Table = PRESETS.parse().expect("presets.toml parses");
    let table = presets[preset].as_table().expect("preset is a table");
    let protocol = engine_names(table, &["score"])
        .into_iter()
        .filter(|(key, _)| !NOT_ENGINE_PROTOCOL.iter().any(|k| key.starts_with(k)))
        .collect();
    Value::Object(protocol)
}

/// A preset table's keys and values as the engine's config names them, but `skip`.
fn engine_names(table: &toml::Table, skip: &[&str]) -> serde_json::Map<String, Value> {
    let mut out = serde_json::Map::new();
    for (key, value) in table {
        if skip.contains(&key.as_str()) {
            continue;
        }
        let (name, value) = match value {
            toml::Value::String(text) => match quantity(text) {
                Some((amount, "B")) => (key.clone(), json!(amount)),
                Some((amount, unit)) => {
                    let name = key.strip_suffix("_time").unwrap_or(key);
                    (format!("{name}_ns"), json!(amount * ns_per(unit)))
                }
                None => (key.clone(), json!(text)),
            },
            other => (
                key.clone(),
                serde_json::to_value(other).expect("plain value"),
            ),
        };
        out.insert(name, value);
    }
    out
}

/// "700ms" -> (700, "ms"); a plain string (a signing policy, say) -> None.
fn quantity(text: &str) -> Option<(u64, &str)> {
    let digits = text.find(|c: char| !c.is_ascii_digit())?;
    let unit = &text[digits..];
    let amount = text[..digits].parse().ok()?;
    ["ns", "us", "ms", "s", "B"]
        .contains(&unit)
        .then_some((amount, unit))
}

fn ns_per(unit: &str) -> u64 {
    match unit {
        "ns" => 1,
        "us" => 1_000,
        "ms" => MS,
        "s" => S,
        other => panic!("presets.toml: unknown duration unit {other}"),
    }
}

/// go-default gossipsub (or `router`) on `nodes` nodes with constant `latency_ns`, no
/// bandwidth or CPU limits; `patch` overrides any field (e.g. `{"protocol": {"D": 8}}`).
/// The tests run version 1.1 without v2.0 announcements unless they patch them in.
pub fn config(
    nodes: u32,
    router: &str,
    latency_ns: u64,
    end_ns: u64,
    seed: u64,
    patch: Value,
) -> Config {
    let n = nodes as usize;
    let protocol = merged(
        preset_protocol("go-default"),
        json!({"router": router, "version": "1.1", "topic_name_len": 20, "D_announce": 0}),
    );
    let mut value = json!({
        "seed": seed, "nodes": nodes, "end_ns": end_ns, "topics": 1,
        "network": {
            "latency": {"kind": "constant", "ns": latency_ns},
            "upload_bps": vec![0; n], "download_bps": vec![0; n], "cpu_per_message_ns": vec![0; n]
        },
        "protocol": protocol,
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

/// go-default's score parameters (rust-libp2p's: go ships none) as the engine names
/// them, with the graft rules the engine keeps beside them, and a behaviour-penalty decay
/// slow enough that a penalty can still be read a heartbeat later.
pub fn score_params() -> Value {
    let presets: toml::Table = PRESETS.parse().expect("presets.toml parses");
    let preset = presets["go-default"].as_table().expect("preset is a table");
    let score = preset["score"].as_table().expect("score is a table");
    let mut out = engine_names(score, &["enabled"]);
    let graft = engine_names(preset, &[]).into_iter().filter(|(key, _)| {
        key.starts_with("graft_flood") || key.starts_with("opportunistic_graft_")
    });
    out.extend(graft);
    merged(
        Value::Object(out),
        json!({
            "time_in_mesh_quantum_ns": S, "mesh_message_deliveries_activation_ns": 3600 * S,
            "behaviour_penalty_decay": 0.99, "decay_to_zero": 0.01
        }),
    )
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

/// Every delivery time of the run, in order.
pub fn sorted_delivery_times(sim: &Simulation) -> Vec<u64> {
    let mut t: Vec<u64> = sim
        .output()
        .deliveries
        .t_ns
        .iter()
        .map(|&t| t as u64)
        .collect();
    t.sort_unstable();
    t
}

/// Latency of each floodsub message of `schedule` from node 0 to node 1 (links of
/// `latency_ns`, the network as `network_patch` sets it), after its publication; the
/// one receiver gets them in order.
pub fn pair_latencies(latency_ns: u64, network_patch: Value, schedule: &Schedule) -> Vec<u64> {
    let patch = json!({ "network": network_patch });
    let c = config(2, "floodsub", latency_ns, 10 * S, 1, patch);
    let mut sim = Simulation::new(&c, &line(2), schedule).unwrap();
    sim.run();
    let d = &sim.output().deliveries;
    d.t_ns
        .iter()
        .zip(&schedule.t_intended_ns)
        .map(|(&t, &published)| t as u64 - published)
        .collect()
}

/// Latency of three 100 kB floodsub messages from node 0 to node 1 (20 ms links, the
/// network as `network_patch` sets it), published at 1 s, 1.1 s (100 ms later: not
/// idle) and 3.1 s (after 2 s of idle): the slow-start and restart-after-idle cases.
pub fn three_message_latencies(network_patch: Value) -> Vec<u64> {
    let schedule = then(
        messages(0, S, 100 * MS, 2, 100_000),
        messages(0, 3_100 * MS, 0, 1, 100_000),
    );
    pair_latencies(20 * MS, network_patch, &schedule)
}

/// The field and message with which the engine refuses `c` (one message over `edges`).
pub fn refusal(c: &Config, edges: &[(u32, u32)]) -> (String, String) {
    let err = Simulation::new(c, edges, &messages(0, 100 * MS, 0, 1, 100))
        .err()
        .expect("refused");
    match err {
        EngineError::Config { field, message } => (field, message),
        other => panic!("{other}"),
    }
}

/// The limited uplink of `star_uplink_run`'s hub: 10 bytes per microsecond.
pub const UPLINK_BPS: u64 = 80_000_000;

/// Time `UPLINK_BPS` takes to write `bytes`.
pub fn uplink_write_ns(bytes: u64) -> u64 {
    (bytes * 8 * 1_000_000_000).div_ceil(UPLINK_BPS)
}

/// A hub (node 0) with an uplink of `UPLINK_BPS` publishing one floodsub message of
/// `size` bytes at 1 s to leaves over links of the given one-way latencies (each way),
/// its windows from 10 segments unless `network` says otherwise; the receipts' times
/// after the publish, per leaf, and one copy's wire size.
pub fn star_uplink_run(
    latency: &[u64],
    size: u32,
    sharing: &str,
    network: Value,
) -> (Vec<u64>, u64) {
    let leaves = latency.len() as u32;
    let mut upload = vec![0u64; leaves as usize + 1];
    upload[0] = UPLINK_BPS;
    let patch = json!({"network": merged(
        json!({"upload_bps": upload, "uplink_sharing": sharing, "initial_window_segments": 10}),
        network,
    )});
    let c = config(leaves + 1, "floodsub", 0, 10 * S, 1, patch);
    let props = EdgeProperties {
        latency_ns: latency.iter().flat_map(|&l| [l, l]).collect(),
        loss: vec![],
    };
    let schedule = messages(0, S, 0, 1, size);
    let mut sim = Simulation::with_edge_properties(&c, &star(leaves), &props, &schedule).unwrap();
    sim.run();
    let d = &sim.output().deliveries;
    let mut per_leaf = vec![0; leaves as usize];
    for (node, t) in d.node.iter().zip(&d.t_ns) {
        per_leaf[*node as usize - 1] = *t as u64 - S;
    }
    (per_leaf, sim.traffic(0)[0].bytes_sent / u64::from(leaves))
}
