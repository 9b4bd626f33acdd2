//! Go's `sysmon` thread on a shared host (`crates/engine/src/sysmon.rs`, `slices.rs`),
//! against timelines computed by hand from Go's sleeps (`runtime/proc.go:sysmon`: 20 µs,
//! plus the timer's 50 µs of slack) and EEVDF's eligibility (`kernel/sched/fair.c`).

mod common;
use common::*;

use gossiplab_engine::goroutines::{NODE_THREAD, SYSMON_THREAD};
use gossiplab_engine::Simulation;
use serde_json::json;

const US: u64 = 1_000;

/// Node 0 publishes at 100 ms to its two leaves (floodsub, 10 ms links); the three share
/// one core in slices of 100 ms; validating a copy costs 5 ms, publishing `publish`;
/// every node's waits for the core are recorded. The run, done.
fn leaves_sharing_a_core(sysmon: bool, publish: u64) -> Simulation {
    let patch = json!({"cpu": {
        "nodes_per_host": 3, "cores": 1, "time_slice_ns": 100 * MS, "hrtick": true,
        "per_copy_ns": 5 * MS, "per_publish_ns": publish, "record_waits": [0, 1, 2],
        "sysmon": sysmon
    }});
    let c = config(3, "floodsub", 10 * MS, 2 * S, 1, patch);
    let mut sim = Simulation::new(&c, &star(2), &messages(0, 100 * MS, 0, 1, 100)).unwrap();
    sim.run();
    sim
}

/// Each node's waits for the core (its working thread's), in µs, in order.
fn core_waits(sim: &Simulation) -> Vec<Vec<u64>> {
    let waits = sim.goroutine_waits();
    (0..3)
        .map(|node| {
            let own = waits
                .iter()
                .filter(|w| w.node == node && w.kind == NODE_THREAD);
            own.map(|w| w.wait / US).collect()
        })
        .collect()
}

/// `node`'s recorded `sysmon` rounds: when (µs after 110 ms), and the wait for each (µs).
fn sysmon_rounds(sim: &Simulation, node: u32) -> Vec<(u64, u64)> {
    let waits = sim.goroutine_waits();
    let rounds = waits
        .iter()
        .filter(|w| w.node == node && w.kind == SYSMON_THREAD);
    rounds
        .map(|w| ((w.at - 110 * MS) / US, w.wait / US))
        .collect()
}

#[test]
fn a_leaf_s_sysmon_hands_the_core_to_the_other_leaf_70us_after_it_started() {
    // Without sysmon: leaf 1 takes the idle core at 110 ms and validates to 115; leaf 2,
    // woken at the same instant with the same virtual runtime, does not preempt it and
    // waits 5 ms.
    let without = leaves_sharing_a_core(false, 0);
    assert_eq!(core_waits(&without)[2], vec![5_000]);
    assert_eq!(sorted_delivery_times(&without), vec![115 * MS, 120 * MS]);

    // With it: leaf 1's first system call (reading the copy) wakes its sysmon from its
    // deep sleep at 110; it sleeps 20 µs + 50 µs of slack and wakes at 110.07. Leaf 1 then
    // ran 70 µs past leaf 2 (both placed at the same virtual runtime V), so it is past
    // the average (V + 35 µs) and the kernel, picking again, runs leaf 2 (its wait: 70
    // µs). Leaf 2's sysmon, woken at 110.07, wakes at 110.14: both at V + 70 µs, leaf 2
    // is not past the average and keeps the core; at 110.21 it is (V + 140 µs against
    // V + 105) and leaf 1 runs again (its wait: 140 µs), its sysmon's round that was due
    // at 110.07 first; and so on, each leaf losing the core at every second wake-up.
    let with = leaves_sharing_a_core(true, 0);
    let waits = core_waits(&with);
    assert_eq!(waits[1][..2], [0, 140]);
    assert_eq!(waits[2][..2], [70, 140]);
    // The sysmons' rounds (when, µs after 110 ms; how long after the wake-up): leaf 1's
    // at 110 (woken by the system call: at once), then the one due at 110.07 at 110.21;
    // leaf 2's at 110.07 (at once) and 110.14 (on the core when it woke).
    assert_eq!(sysmon_rounds(&with, 1)[..2], [(0, 0), (210, 140)]);
    assert_eq!(sysmon_rounds(&with, 2)[..2], [(70, 0), (140, 0)]);
    // Rounds cost nothing and the core never idles while a leaf has work: the last copy
    // is validated at 120 ms still, and the first no longer at 115.
    let delivered = sorted_delivery_times(&with);
    assert_eq!(delivered[1], 120 * MS);
    assert!(delivered[0] > 115 * MS, "{delivered:?}");
}

#[test]
fn an_idle_node_s_visit_for_its_sysmon_s_round_is_not_a_wait_of_its_working_thread() {
    // Node 0 signs from 100 to 101 ms and blocks. Its sysmon, woken from its deep sleep
    // as the node starts, wakes every 70 µs while the node runs alone (no pick to make),
    // and once more after 101, to find the node idle: the node's group takes the idle
    // core for that round alone, and its sysmon sleeps deeply. Node 0's working thread
    // waited once, at 100 ms, for nothing; the leaves get their copies at 111.
    let with = leaves_sharing_a_core(true, MS);
    assert_eq!(core_waits(&with)[0], vec![0]);
    assert_eq!(core_waits(&with)[1][..2], [0, 140]);
}

/// Each (message, leaf)'s delivery, µs after 110 ms: node 0 publishes two messages 100 µs
/// apart to its two leaves sharing one core; validating costs 50 µs, a node's wake-up
/// 20 µs.
fn two_messages_on_a_shared_core() -> Vec<(u32, u32, u64)> {
    let patch = json!({"cpu": {
        "nodes_per_host": 3, "cores": 1, "time_slice_ns": 100 * MS, "hrtick": true,
        "per_copy_ns": 50 * US, "per_node_wakeup_ns": 20 * US, "sysmon": true
    }});
    let c = config(3, "floodsub", 10 * MS, 2 * S, 1, patch);
    let schedule = messages(0, 100 * MS, 100 * US, 2, 100);
    let mut sim = Simulation::new(&c, &star(2), &schedule).unwrap();
    sim.run();
    let d = &sim.output().deliveries;
    let mut got: Vec<(u32, u32, u64)> = (0..d.msg.len())
        .filter(|&i| d.node[i] != 0)
        .map(|i| (d.msg[i], d.node[i], (d.t_ns[i] as u64 - 110 * MS) / US))
        .collect();
    got.sort_unstable();
    got
}

#[test]
fn work_for_a_node_queued_for_its_sysmon_alone_wakes_its_blocked_thread() {
    // Message 0 reaches both leaves at 110 ms: leaf 1 takes the idle core (wake-up 20 +
    // validation 50: done at 110.07, as its sysmon wakes). Blocking with its sysmon due,
    // leaf 1 is past the average (70 µs against 35), so its group queues for the round
    // and leaf 2 runs (70 µs: done at 110.14). Message 1 arrives at 110.10: leaf 1's
    // working thread is blocked in netpoll while its group waits for the core, so this
    // work wakes it and pays the wake-up (`per_node_wakeup`); leaf 2 is running and does
    // not. At 110.14 leaf 2 goes on (its sysmon, due then, finds it at the average and
    // it keeps the core) and validates message 1 by 110.19; then leaf 1 runs its round
    // and its 20 + 50 µs: 110.26.
    assert_eq!(
        two_messages_on_a_shared_core(),
        vec![(0, 1, 70), (0, 2, 140), (1, 1, 260), (1, 2, 190)]
    );
}
