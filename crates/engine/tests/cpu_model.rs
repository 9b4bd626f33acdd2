//! Hosts with shared cores and the CPU costs of publishing, sending, receiving and
//! validating, against hand-computed timelines (`crates/engine/src/cpu.rs`).

mod common;
use common::*;

use gossiplab_engine::wire::WireSizes;
use gossiplab_engine::Simulation;
use serde_json::{json, Value};

/// Costs used by the timelines below: sign 1 ms, encode 2 ms, decode 3 ms, validate 5 ms;
/// a host whose nodes outnumber its cores runs them in time slices of `slice`, each
/// ended on time (`hrtick`).
fn costs(nodes_per_host: u32, cores: u32, slice: u64) -> Value {
    json!({"cpu": {
        "nodes_per_host": nodes_per_host, "cores": cores, "time_slice_ns": slice, "hrtick": true,
        "per_publish_ns": MS, "per_rpc_sent_ns": 2 * MS,
        "per_rpc_received_ns": 3 * MS, "per_copy_ns": 5 * MS
    }})
}

fn delivery_times(nodes_per_host: u32, cores: u32, slice: u64) -> Vec<u64> {
    // Node 0 publishes at 100 ms to its two leaves over 10 ms links (floodsub).
    let c = config(
        3,
        "floodsub",
        10 * MS,
        2 * S,
        1,
        costs(nodes_per_host, cores, slice),
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
    assert_eq!(delivery_times(1, 1, MS), vec![121 * MS, 123 * MS]);
}

#[test]
fn signatures_cost_by_the_size_of_the_message_they_cover() {
    // go signs and checks the whole marshalled message (sign.go: signMessage hashes it
    // in ed25519.Sign, verifyMessageSignature in Verify), so a 2000-byte message adds
    // 2 × per_kb_publish (1 ms) at the publisher and 2 × per_kb_copy (2 ms) at each
    // validation: sign 1 + 2 → encode 2 → 10 ms link → decode 3 → validate 5 + 4:
    // 100 + 3 + 2 + 10 + 3 + 9 = 127 ms, the second copy 2 ms behind.
    let mut patch = costs(1, 1, MS);
    patch["cpu"]["per_kb_publish_ns"] = json!(MS);
    patch["cpu"]["per_kb_copy_ns"] = json!(2 * MS);
    let c = config(3, "floodsub", 10 * MS, 2 * S, 1, patch);
    let mut sim = Simulation::new(&c, &star(2), &messages(0, 100 * MS, 0, 1, 2000)).unwrap();
    sim.run();
    assert_eq!(sorted_delivery_times(&sim), vec![127 * MS, 129 * MS]);
}

#[test]
fn a_content_id_costs_by_the_size_of_every_copy_it_hashes() {
    // go computes a copy's id when it looks at it (pubsub.go:shouldPush), a publication's
    // in the publisher's call (validation.go:validate); a content id hashes the data.
    // 2000 bytes at 1 ms per kB: sign 1 + 2 → encode 2 → 10 ms link → decode 3 + 2 →
    // validate 5: 100 + 3 + 2 + 10 + 5 + 5 = 125 ms, the second copy 2 ms behind.
    let mut patch = costs(1, 1, MS);
    patch["cpu"]["per_kb_message_id_ns"] = json!(MS);
    let c = config(3, "floodsub", 10 * MS, 2 * S, 1, patch);
    let mut sim = Simulation::new(&c, &star(2), &messages(0, 100 * MS, 0, 1, 2000)).unwrap();
    sim.run();
    assert_eq!(sorted_delivery_times(&sim), vec![125 * MS, 127 * MS]);
}

/// The CPU time each node used over a run of the triangle 0-1-2, where node 0 publishes
/// 2000 bytes that its two peers forward to each other (floodsub): each leaf reads its
/// copy and a duplicate.
fn triangle_cpu(per_kb_message_id: u64) -> Vec<u64> {
    let mut patch = costs(1, 1, MS);
    patch["cpu"]["per_kb_message_id_ns"] = json!(per_kb_message_id);
    let c = config(3, "floodsub", 10 * MS, 2 * S, 1, patch);
    let triangle = vec![(0, 1), (0, 2), (1, 2)];
    let mut sim = Simulation::new(&c, &triangle, &messages(0, 100 * MS, 0, 1, 2000)).unwrap();
    sim.run();
    let s = sim.cpu_samples().expect("the scenario charges CPU");
    (0..3)
        .map(|node| {
            (0..s.node.len())
                .filter(|&i| s.node[i] == node)
                .map(|i| s.cpu_ns[i])
                .max()
        })
        .map(|used| used.unwrap_or(0))
        .collect()
}

#[test]
fn every_copy_pays_its_content_id_duplicates_included() {
    // go hashes each copy it receives before it checks the seen cache
    // (pubsub.go:shouldPush), and the publication once (validation.go:validate): at
    // 1 ms per kB, 2 ms for the publisher and 2 × 2 ms for each leaf.
    let with = triangle_cpu(MS);
    let without = triangle_cpu(0);
    let ids: Vec<u64> = with.iter().zip(&without).map(|(w, o)| w - o).collect();
    assert_eq!(ids, vec![2 * MS, 4 * MS, 4 * MS]);
}

#[test]
fn three_nodes_on_one_core_run_in_turn_while_they_have_work() {
    // Slices of 100 ms: a node keeps the core until it runs out of work. Node 0 signs
    // 100-101 and encodes 101-103, 103-105; the copies arrive at 113 and 115. Leaf 1
    // decodes 113-116 and, still on the core, validates 116-121; leaf 2, ready at 115,
    // waits for the core: decodes 121-124, validates 124-129.
    assert_eq!(delivery_times(3, 1, 100 * MS), vec![121 * MS, 129 * MS]);
}

#[test]
fn three_nodes_on_one_core_share_it_in_slices() {
    // Slices of 1 ms. Node 0 alone: 100-105 as above (a slice ends, nobody waits, it
    // goes on). Leaf 1 decodes alone 113-115; at 115 leaf 2 queues as leaf 1's slice
    // ends, and from then on the two alternate a slice each, leaf 2 first: leaf 1's
    // decode ends at 117, leaf 2's at 120 (their third slices); leaf 1 validates in its
    // slices 118-119, ..., 126-127; leaf 2 has done 3 ms of its 5 by then and, alone on
    // the core, ends at 129.
    assert_eq!(delivery_times(3, 1, MS), vec![127 * MS, 129 * MS]);
}

#[test]
fn a_node_runs_on_one_core_at_a_time() {
    // Two cores, slices of 100 ms: node 0's two writers take turns on one core (101-103,
    // 103-105); each leaf has a core: 113-116-121 and 115-118-123.
    assert_eq!(delivery_times(3, 2, 100 * MS), vec![121 * MS, 123 * MS]);
}

#[test]
fn a_burst_read_while_descheduled_overflows_the_validation_queue() {
    // Line 0 - 1 - 2; nodes 0 and 1 share a core (slices of 100 ms), node 2 has its own
    // host; reading costs 10 µs. Node 2 publishes message 0 at 2 ms: node 1 reads it at
    // 3 ms and validates it (1 ms, delivered at 4.01), node 0 reads it at 5.01 ms and
    // validates it for 200 ms, holding the core until its slice ends at 105.01 ms, which
    // the kernel notices at its next tick (4 ms apart: 108 ms; nothing wakes on the core
    // before). At 10 ms node 2 publishes 50 more at once; node 1 gets them at 11 ms but
    // waits for the core, then reads all 50 (reading became ready first: 108-108.5) and
    // pushes
    // each unseen copy into the validation queue: one for its single worker (go starts
    // runtime.NumCPU() = cores of them, validation.go:newValidation), 32 in the queue,
    // the rest dropped (validation.go:Push): 50 − 33 = 17. The 33 are validated a
    // millisecond each from 108.5 ms.
    let patch = json!({
        "cpu": {"nodes_per_host": 2, "cores": 1, "time_slice_ns": 100 * MS,
                "per_rpc_received_ns": 10 * US},
        "network": {"cpu_per_message_ns": [200 * MS, MS, 0]}
    });
    let c = config(3, "floodsub", MS, 5 * S, 1, patch);
    let schedule = then(
        messages(2, 2 * MS, 0, 1, 100),
        messages(2, 10 * MS, 0, 50, 100),
    );
    let mut sim = Simulation::new(&c, &line(3), &schedule).unwrap();
    sim.run();
    let at_node_1: u64 = sim
        .output()
        .drops
        .iter()
        .filter(|(key, _)| key.node == 1 && key.reason == "validation-queue-full")
        .map(|(_, count)| count)
        .sum();
    assert_eq!(at_node_1, 17);
    let d = &sim.output().deliveries;
    let node_1: Vec<(u32, u64)> = (0..d.len())
        .filter(|&i| d.node[i] == 1)
        .map(|i| (d.msg[i], d.t_ns[i] as u64))
        .collect();
    let expected: Vec<(u32, u64)> = std::iter::once((0, 4 * MS + 10 * US))
        .chain((1..=33).map(|m| (m, 108_500 * US + u64::from(m) * MS)))
        .collect();
    assert_eq!(node_1, expected);
}

#[test]
fn a_publication_s_time_is_when_its_publisher_s_application_runs() {
    // Line 0 - 1 - 2; nodes 0 and 1 share a core (slices of 100 ms, ended on time),
    // node 2 has its own host; signing costs 1 ms, validating at node 1 200 ms. Node 2
    // publishes message 0 at 2 ms on its idle core: published at 2 ms, signed at 3, at
    // node 1 at 4, whose validation holds the shared core for a whole slice, to 104 ms.
    // Node 0's application is due to publish message 1 at 10 ms; node 0, woken then,
    // is placed at the average virtual time with a deadline a slice on, later than node
    // 1's, so it waits for the slice's end (no wake-up preemption). Our Go node reads the
    // clock when its publishing goroutine runs, just before `topic.Publish`
    // (gossipnode/node.go:PublishOne): message 1 is published at 104 ms, not at 10.
    let patch = json!({
        "cpu": {"nodes_per_host": 2, "cores": 1, "time_slice_ns": 100 * MS, "hrtick": true,
                "per_publish_ns": MS},
        "network": {"cpu_per_message_ns": [0, 200 * MS, 0]}
    });
    let c = config(3, "floodsub", MS, 2 * S, 1, patch);
    let schedule = then(
        messages(2, 2 * MS, 0, 1, 100),
        messages(0, 10 * MS, 0, 1, 100),
    );
    let mut sim = Simulation::new(&c, &line(3), &schedule).unwrap();
    sim.run();
    let published: Vec<Option<u64>> = sim.messages().iter().map(|m| m.t_publish).collect();
    assert_eq!(published, vec![Some(2 * MS), Some(104 * MS)]);
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

#[test]
fn a_cost_given_sigma_zero_stays_exact_under_a_common_sigma() {
    // Reading 1 ms and validating 1 ms, σ = 1 for every cost but these two: 50 messages
    // 5 ms apart on a 10 ms link all arrive 12 ms after publication. With the common σ
    // for reading, they spread.
    let run = |read_sigma: f64| {
        let patch = json!({"cpu": {
            "per_rpc_received_ns": MS, "per_copy_ns": MS, "sigma": 1.0,
            "sigma_per_copy": 0.0, "sigma_per_rpc_received": read_sigma,
            "sigma_per_kb_received": read_sigma
        }});
        let c = config(2, "floodsub", 10 * MS, 5 * S, 3, patch);
        let mut sim =
            Simulation::new(&c, &line(2), &messages(0, 100 * MS, 5 * MS, 50, 100)).unwrap();
        sim.run();
        let d = &sim.output().deliveries;
        (0..d.len())
            .map(|i| d.t_ns[i] as u64 - (100 * MS + 5 * MS * u64::from(d.msg[i])))
            .collect::<Vec<u64>>()
    };
    assert!(run(0.0).iter().all(|&lat| lat == 12 * MS));
    assert!(run(1.0).iter().any(|&lat| lat != 12 * MS));
}

/// As `delivery_times`, with 2000-byte messages (an RPC of two 1460-byte segments:
/// `WireSizes` frames 2000 bytes in well under 2920) and the kernel's work at 1 ms per
/// segment sent.
fn delivery_times_with_kernel(nodes_per_host: u32, cores: u32, slice: u64) -> Vec<u64> {
    let patch = merged(
        costs(nodes_per_host, cores, slice),
        json!({"cpu": {"per_segment_kernel_ns": MS}}),
    );
    let c = config(3, "floodsub", 10 * MS, 2 * S, 1, patch);
    let bytes = WireSizes::frame(WireSizes::new(&c.protocol).publish_field(2_000));
    assert!(
        (1_461..=2_920).contains(&bytes),
        "two segments: {bytes} bytes"
    );
    let mut sim = Simulation::new(&c, &star(2), &messages(0, 100 * MS, 0, 1, 2_000)).unwrap();
    sim.run();
    sorted_delivery_times(&sim)
}

#[test]
fn the_kernel_s_work_per_segment_sent_runs_on_the_sender_s_core_at_the_write() {
    // Each node on its own core. The write syscall hands both segments to the kernel,
    // whose work runs on the sender's core before the writer goes on (veth_xmit →
    // __netif_rx, the softirq at local_bh_enable): sign 100-101, encode 101-103, the
    // kernel 103-105 (2 segments × 1 ms); copy 1 leaves at 105, is read 115-118 and
    // validated 118-123. Writer 2 waits for the core: 105-107, kernel 107-109, leaves at
    // 109, delivered 109 + 10 + 3 + 5 = 127. Without the kernel's work: 121 and 123;
    // charged once per RPC: 122 and 125; not on the sender's core: 123 and 125.
    assert_eq!(
        delivery_times_with_kernel(1, 1, MS),
        vec![123 * MS, 127 * MS]
    );
}

#[test]
fn the_kernel_s_work_delays_every_node_on_the_sender_s_core() {
    // Three nodes on one core, slices of 100 ms: node 0 as above (copies leave at 105
    // and 109, arrive at 115 and 119). Leaf 1 reads 115-118 and validates 118-123, in
    // one go; leaf 2, ready at 119, waits for the core: 123-126, 126-131. The leaves
    // send nothing, so no kernel work of theirs.
    assert_eq!(
        delivery_times_with_kernel(3, 1, 100 * MS),
        vec![123 * MS, 131 * MS]
    );
}

/// Node 0 publishes at 100 ms to its two leaves (floodsub, 10 ms links) on one core in
/// slices of `slice`; validating a copy is the only cost (5 ms); the leaves' waits are
/// recorded (`cpu.record_waits`). The run, done.
fn leaves_sharing_a_core(slice: u64, hrtick: bool) -> Simulation {
    let patch = json!({"cpu": {
        "nodes_per_host": 3, "cores": 1, "time_slice_ns": slice, "hrtick": hrtick,
        "per_copy_ns": 5 * MS, "record_waits": [1, 2]
    }});
    let c = config(3, "floodsub", 10 * MS, 2 * S, 1, patch);
    let mut sim = Simulation::new(&c, &star(2), &messages(0, 100 * MS, 0, 1, 100)).unwrap();
    sim.run();
    sim
}

/// Each leaf's own waits for the core (the kind "node thread"), in ms, in the order the
/// waits ended, and its delivery time.
fn leaves_waiting_for_the_core(slice: u64, hrtick: bool) -> Vec<(Vec<u64>, u64)> {
    let sim = leaves_sharing_a_core(slice, hrtick);
    let waits = sim.goroutine_waits();
    let thread = gossiplab_engine::goroutines::NODE_THREAD;
    let d = &sim.output().deliveries;
    [1, 2]
        .map(|leaf| {
            let own = waits.iter().filter(|w| w.node == leaf && w.kind == thread);
            let delivered = (0..d.len()).find(|&i| d.node[i] == leaf).unwrap();
            (
                own.map(|w| w.wait / MS).collect(),
                d.t_ns[delivered] as u64 / MS,
            )
        })
        .into()
}

#[test]
fn a_leaf_waits_for_the_core_while_the_other_validates() {
    // Both copies arrive at 110 ms. Slices of 100 ms: leaf 1 takes the idle core at once
    // (a wait of 0) and validates 110-115; leaf 2 waits 5 ms, validates 115-120.
    let got = leaves_waiting_for_the_core(100 * MS, false);
    assert_eq!(got, vec![(vec![0], 115), (vec![5], 120)]);
}

#[test]
fn a_slice_runs_on_to_the_kernel_s_next_tick() {
    // Slices of 1 ms, the kernel's tick every 4 ms (CONFIG_HZ=250: 108, 112, 116, 120
    // ms), no HRTICK: a slice is over when the tick (`task_tick_fair` → `update_curr` →
    // `update_deadline`) or a wake-up on the core (`enqueue_entity` → `update_curr`)
    // finds it over. Leaf 1 takes the core at 110; leaf 2, woken at the same instant,
    // finds leaf 1 inside its slice (no preemption) and waits. Nothing else wakes: leaf
    // 1 runs to the tick at 112 (2 ms), leaf 2 from 112 to the tick at 116 (4 ms), leaf
    // 1 from 116 to its end at 119, leaf 2 from 119 to 120. Waits: leaf 1 0 and 4 ms,
    // leaf 2 2 and 3 ms.
    let got = leaves_waiting_for_the_core(MS, false);
    assert_eq!(got, vec![(vec![0, 4], 119), (vec![2, 3], 120)]);
}

/// The same leaves: how long each held the core after each of its waits (ms), and
/// whether every goroutine wait has no time on the core of its own.
fn leaves_on_the_core(slice: u64, hrtick: bool) -> (Vec<Vec<u64>>, bool) {
    let sim = leaves_sharing_a_core(slice, hrtick);
    let waits = sim.goroutine_waits();
    let thread = gossiplab_engine::goroutines::NODE_THREAD;
    let ran = [1, 2]
        .map(|leaf| {
            let own = waits.iter().filter(|w| w.node == leaf && w.kind == thread);
            own.map(|w| w.ran / MS).collect()
        })
        .into();
    (ran, waits.iter().all(|w| w.kind == thread || w.ran == 0))
}

#[test]
fn a_node_s_time_on_the_core_after_each_wait_ends_when_it_leaves() {
    // As above, ticks every 4 ms: leaf 1 runs 110-112 and 116-119 (blocked: done), leaf 2
    // 112-116 and 119-120. With HRTICK they alternate 1 ms slices from 110 to 120.
    // Goroutine waits have no time on the core of their own.
    assert_eq!(
        leaves_on_the_core(MS, false),
        (vec![vec![2, 3], vec![4, 1]], true)
    );
    assert_eq!(
        leaves_on_the_core(MS, true),
        (vec![vec![1; 5], vec![1; 5]], true)
    );
}

#[test]
fn leaves_sharing_the_core_in_slices_wait_a_slice_each_turn() {
    // Slices of 1 ms ended on time (HRTICK): the leaves alternate, leaf 1 in 110-111,
    // 112-113, ..., 118-119 (done at 119), leaf 2 in 111-112, ..., 119-120. Leaf 1
    // waits 0, then 1 ms before each of its 4 other slices; leaf 2 waits 1 ms before
    // each of its 5.
    let got = leaves_waiting_for_the_core(MS, true);
    assert_eq!(
        got,
        vec![(vec![0, 1, 1, 1, 1], 119), (vec![1, 1, 1, 1, 1], 120)]
    );
}
