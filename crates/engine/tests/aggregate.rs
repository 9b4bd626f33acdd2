//! The aggregate output mode against the full one: the same run, summarised by the engine
//! as it goes versus computed here from the full mode's rows; and its state staying flat.

mod common;
use common::*;

use std::collections::BTreeMap;

use gossiplab_engine::aggregate::{MessageAggregate, NEVER};
use gossiplab_engine::histogram::bin_of;
use gossiplab_engine::inspect::LiveState;
use gossiplab_engine::{Config, EdgeProperties, Schedule, Simulation};
use serde_json::{json, Value};

const NODES: u32 = 30;
const WARMUP: u64 = 3 * S;
const LIFETIME: u64 = 5 * S; // history_length 5 x 1 s heartbeat

/// 500 messages from rotating publishers over 100 s, with a node that restarts (right
/// after publishing message 65 at 15 s) and one that leaves for good, seen entries short
/// enough that sweeps finalize pairs mid-run.
fn setup(mode: &str) -> (Config, Vec<(u32, u32)>, EdgeProperties, Schedule) {
    let patch = json!({
        "network": {"jitter_ns": 2 * MS},
        "protocol": {"seen_ttl_ns": 10 * S},
        "output": {"receipts": false, "mode": mode, "measure_from_ns": WARMUP},
        "faults": [
            {"kind": "down", "node": 5, "from_ns": 15_100 * MS, "until_ns": 17 * S},
            {"kind": "down", "node": 7, "from_ns": 50 * S, "until_ns": Value::Null}
        ]
    });
    let c = config(NODES, "gossipsub", 0, 150 * S, 21, patch);
    let count = 500u32;
    let schedule = Schedule {
        t_intended_ns: (0..count)
            .map(|i| 2 * S + u64::from(i) * 200 * MS)
            .collect(),
        publisher: (0..count).map(|i| (i * 7) % NODES).collect(),
        size: vec![1200; count as usize],
        topic: vec![0; count as usize],
        batch: (0..count).map(|i| i / 4).collect(),
    };
    let edges = circulant(NODES, 3);
    // 5 to 40 ms, different each way.
    let props = EdgeProperties {
        latency_ns: (0..2 * edges.len() as u64)
            .map(|i| (5 + (i * 13) % 36) * MS)
            .collect(),
        loss: vec![],
    };
    (c, edges, props, schedule)
}

fn run(mode: &str) -> Simulation {
    let (c, edges, props, schedule) = setup(mode);
    let mut sim = Simulation::with_edge_properties(&c, &edges, &props, &schedule).unwrap();
    sim.run();
    sim
}

/// The liveness rule of DESIGN.md's delivery ratio, written out again here.
fn down_during(node: u32, published: u64) -> bool {
    let end = published + LIFETIME;
    match node {
        5 => 15_100 * MS <= end && 17 * S > published,
        7 => 50 * S <= end,
        _ => false,
    }
}

#[test]
fn aggregate_mode_changes_nothing_in_what_happens() {
    let full = run("full");
    let agg = run("aggregate");
    assert!(agg.output().deliveries.is_empty(), "no per-receipt rows");
    assert_eq!(full.events(), agg.events());
    for (a, b) in full.messages().iter().zip(agg.messages()) {
        assert_eq!((a.t_publish, a.receipts), (b.t_publish, b.receipts));
    }
    for node in 0..NODES {
        let (a, b) = (full.traffic(node), agg.traffic(node));
        for k in 0..a.len() {
            assert_eq!(a[k].bytes_sent, b[k].bytes_sent);
            assert_eq!(a[k].msgs_recv, b[k].msgs_recv);
        }
    }
    assert_eq!(
        full.output().drops.iter().collect::<Vec<_>>(),
        agg.output().drops.iter().collect::<Vec<_>>()
    );
}

#[test]
fn per_message_aggregates_match_the_rows_of_the_full_mode() {
    let full = run("full");
    let agg = run("aggregate");
    let d = &full.output().deliveries;
    let messages = full.messages();
    // (t, hop) of each message's counted first receipts, in time order.
    let mut receipts: BTreeMap<u32, Vec<(u64, u16)>> = BTreeMap::new();
    let mut all: BTreeMap<u32, u32> = BTreeMap::new();
    for i in 0..d.len() {
        *all.entry(d.msg[i]).or_default() += 1;
        let m = &messages[d.msg[i] as usize];
        // A publisher is not a receiver of its own message (it may get it back after a
        // restart).
        if d.node[i] != m.publisher && !down_during(d.node[i], m.t_publish.unwrap()) {
            receipts
                .entry(d.msg[i])
                .or_default()
                .push((d.t_ns[i] as u64, d.hop[i]));
        }
    }
    let own = (0..d.len())
        .filter(|&i| d.node[i] == messages[d.msg[i] as usize].publisher)
        .count();
    assert!(
        own > 0,
        "node 5 restarts soon after publishing and gets its message back"
    );
    let got = &agg.output().aggregates.as_ref().unwrap().messages;
    let mut checked_with_faults = 0;
    for (msg, m) in messages.iter().enumerate() {
        let msg = msg as u32;
        let Some(published) = m.t_publish else {
            // Its publisher was down: never published, never received.
            assert_eq!(got[msg as usize].first_receipts, 0);
            continue;
        };
        let away = [5, 7]
            .iter()
            .filter(|&&n| n != m.publisher && down_during(n, published))
            .count() as u32;
        checked_with_faults += u32::from(away > 0);
        let mut rs = receipts.remove(&msg).unwrap_or_default();
        rs.sort_unstable();
        let targets = NODES - 1 - away;
        let reach = |p: u32| {
            let k = (targets * p).div_ceil(100) as usize;
            rs.get(k - 1).map_or(NEVER, |r| r.0)
        };
        let expected = MessageAggregate {
            targets,
            first_receipts: all.get(&msg).copied().unwrap_or(0),
            delivered: rs.len() as u32,
            // The latest receipt; on a tie in time the larger hop (sorted last).
            last_hop: rs.last().map_or(0, |r| r.1),
            max_hop: rs.iter().map(|r| r.1).max().unwrap_or(0),
            first_ns: rs.first().map_or(NEVER, |r| r.0),
            last_ns: rs.last().map_or(NEVER, |r| r.0),
            reach_ns: [reach(50), reach(90), reach(95), reach(99), reach(100)],
        };
        assert_eq!(got[msg as usize], expected, "message {msg}");
    }
    assert!(checked_with_faults > 20, "the faults must matter here");
}

#[test]
fn node_totals_and_histograms_match_the_rows_of_the_full_mode() {
    let full = run("full");
    let agg = run("aggregate");
    let d = &full.output().deliveries;
    let messages = full.messages();
    let n = NODES as usize;
    let mut count = vec![0u64; n];
    let mut sum = vec![0u64; n];
    let mut min = vec![u64::MAX; n];
    let mut max = vec![0u64; n];
    let mut hops = vec![0u64; n];
    let mut dups = vec![0u64; n];
    let mut bins: Vec<BTreeMap<u16, u64>> = vec![BTreeMap::new(); n];
    let mut dup_pairs: BTreeMap<u32, u64> = BTreeMap::new();
    for i in 0..d.len() {
        let m = &messages[d.msg[i] as usize];
        let published = m.t_publish.unwrap();
        let node = d.node[i] as usize;
        if m.t_intended < WARMUP || d.node[i] == m.publisher || down_during(d.node[i], published) {
            continue;
        }
        let latency = d.t_ns[i] as u64 - published;
        count[node] += 1;
        sum[node] += latency;
        min[node] = min[node].min(latency);
        max[node] = max[node].max(latency);
        hops[node] += u64::from(d.hop[i]);
        dups[node] += u64::from(d.duplicates[i]);
        *bins[node].entry(bin_of(latency)).or_default() += 1;
        *dup_pairs.entry(d.duplicates[i]).or_default() += 1;
    }
    let a = agg.output().aggregates.as_ref().unwrap();
    let tables = agg.aggregate_tables().unwrap();
    for node in 0..n {
        let got = &a.nodes[node];
        assert_eq!(got.first_receipts, count[node], "node {node}");
        assert_eq!(got.latency_sum_ns, sum[node]);
        assert_eq!(
            got.latency_min_ns,
            if count[node] > 0 { min[node] } else { NEVER }
        );
        assert_eq!(got.latency_max_ns, max[node]);
        assert_eq!(got.hop_sum, hops[node]);
        assert_eq!(tables.node_duplicates[node], dups[node], "node {node}");
        let expected: Vec<(u16, u64)> = bins[node].iter().map(|(&b, &c)| (b, c)).collect();
        assert_eq!(tables.latency_bins[node], expected);
    }
    let got: BTreeMap<u32, u64> = tables
        .duplicates
        .iter()
        .enumerate()
        .filter(|(_, &c)| c > 0)
        .map(|(d, &c)| (d as u32, c))
        .collect();
    assert_eq!(got, dup_pairs);
    assert!(dup_pairs.keys().any(|&d| d > 0), "duplicates must occur");
    // The sweep at 60 s finalized the pairs of the messages before 50 s during the run
    // (about half); the others were closed at the end.
    let finalized: u64 = a.duplicates.iter().sum();
    let total: u64 = dup_pairs.values().sum();
    assert!(
        finalized * 3 > total && finalized < total,
        "{finalized} of {total}"
    );
}

#[test]
fn on_a_tie_in_time_the_last_delivery_hop_is_the_larger_one() {
    // 0 -10ms- 1 -10ms- 2, and 0 -20ms- 3: nodes 2 (hop 2) and 3 (hop 1) both at 20 ms.
    let edges = [(0, 1), (1, 2), (0, 3)];
    let props = EdgeProperties {
        latency_ns: [10, 10, 10, 10, 20, 20].iter().map(|m| m * MS).collect(),
        loss: vec![],
    };
    let patch = json!({"output": {"receipts": false, "mode": "aggregate"}});
    let c = config(4, "floodsub", 0, 5 * S, 1, patch);
    let mut sim =
        Simulation::with_edge_properties(&c, &edges, &props, &messages(0, S, 0, 1, 100)).unwrap();
    sim.run();
    let m = sim.output().aggregates.as_ref().unwrap().messages[0];
    let t = S + 20 * MS;
    assert_eq!((m.targets, m.delivered, m.first_receipts), (3, 3, 3));
    assert_eq!((m.first_ns, m.last_ns), (S + 10 * MS, t));
    assert_eq!((m.last_hop, m.max_hop), (2, 2));
    // ceil(50% of 3) = 2nd receipt, ceil(90%) = 3rd: both at 20 ms.
    assert_eq!(m.reach_ns, [t; 5]);
}

/// Peak per-message state over a run of `count` messages at 10/s on 20 nodes.
fn peak_state(count: u32, mode: &str) -> LiveState {
    peak_state_with(count, mode, json!({}))
}

fn peak_state_with(count: u32, mode: &str, features: Value) -> LiveState {
    let base = json!({
        "protocol": {"seen_ttl_ns": 5 * S},
        "output": {"receipts": false, "mode": mode}
    });
    let patch = merged(base, features);
    let end = u64::from(count) * 100 * MS + 10 * S;
    let c = config(20, "gossipsub", 10 * MS, end, 3, patch);
    let schedule = Schedule {
        t_intended_ns: (0..count).map(|i| S + u64::from(i) * 100 * MS).collect(),
        publisher: (0..count).map(|i| i % 20).collect(),
        size: vec![500; count as usize],
        topic: vec![0; count as usize],
        batch: (0..count).collect(),
    };
    let mut sim = Simulation::new(&c, &circulant(20, 3), &schedule).unwrap();
    let mut peak = LiveState::default();
    let mut t = 0;
    while !sim.is_finished() {
        t += S / 4;
        sim.run_until(t);
        let live = sim.live_state();
        peak.seen = peak.seen.max(live.seen);
        peak.mcache_ids = peak.mcache_ids.max(live.mcache_ids);
        peak.mcache_served = peak.mcache_served.max(live.mcache_served);
        peak.validating = peak.validating.max(live.validating);
        peak.announced = peak.announced.max(live.announced);
        peak.unwanted = peak.unwanted.max(live.unwanted);
        peak.promises = peak.promises.max(live.promises);
        peak.rpc_slots = peak.rpc_slots.max(live.rpc_slots);
        peak.events = peak.events.max(live.events);
        peak.deliveries = peak.deliveries.max(live.deliveries);
    }
    peak
}

/// `long` is at most 25 % (plus `slack`) above `short`.
fn no_growth(name: &str, short: usize, long: usize, slack: usize) {
    assert!(
        long * 4 <= short * 5 + slack * 4,
        "{name}: {short} in the short run, {long} in the long one"
    );
}

#[test]
fn per_message_state_stays_flat_as_the_run_gets_longer() {
    let short = peak_state(2_000, "aggregate");
    let long = peak_state(6_000, "aggregate");
    // Seen entries live seen_ttl plus up to one sweep interval (60 s): at 10 messages/s
    // on 20 nodes at most 20 x 10 x 66 entries, however long the run.
    let bound = 20 * 10 * 66;
    assert!(
        short.seen <= bound && long.seen <= bound,
        "{short:?} {long:?}"
    );
    // Sweeps fall at different phases in the two runs: allow 15 %.
    assert!(long.seen * 100 <= short.seen * 115, "{short:?} {long:?}");
    // Five heartbeats of message-cache windows.
    assert!(long.mcache_ids <= 20 * 10 * 6, "{long:?}");
    assert!(
        long.rpc_slots * 10 <= short.rpc_slots * 12,
        "{short:?} {long:?}"
    );
    assert!(long.events * 10 <= short.events * 12, "{short:?} {long:?}");
    assert_eq!(long.deliveries, 0);
    // The full mode's rows do grow with the messages: what the aggregate mode avoids.
    let full = peak_state(1_000, "full");
    assert_eq!(full.deliveries, 1_000 * 19);
}

#[test]
fn validation_idontwant_announcements_and_promises_stay_flat_too() {
    // Every map keyed by message: copies in validation (CPU cost), IDONTWANTs remembered
    // (v1.2, messages above the threshold), announcements being fetched (v2.0), IWANT
    // promises (scoring) and replies (losses delay copies past the IHAVEs), over 1,000
    // and 3,000 messages.
    let features = json!({
        "network": {"cpu_per_message_ns": vec![2 * MS; 20], "loss": 0.05},
        "protocol": {"version": "2.0", "D_announce": 3, "idontwant_threshold": 100,
                     "score": score_params()}
    });
    let short = peak_state_with(1_000, "aggregate", features.clone());
    let long = peak_state_with(3_000, "aggregate", features);
    for (name, s, l) in [
        ("validating", short.validating, long.validating),
        ("announced", short.announced, long.announced),
        ("unwanted", short.unwanted, long.unwanted),
        ("promises", short.promises, long.promises),
        ("mcache_served", short.mcache_served, long.mcache_served),
    ] {
        assert!(s > 0, "{name} must be exercised: {short:?}");
        no_growth(name, s, l, 20);
    }
    no_growth("seen", short.seen, long.seen, 0);
    no_growth("rpc_slots", short.rpc_slots, long.rpc_slots, 20);
    no_growth("events", short.events, long.events, 50);
}
