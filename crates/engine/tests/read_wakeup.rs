//! The wake-up of a reading goroutine (`per_read_wakeup`, `crates/engine/src/cpu.rs`):
//! paid by the RPC that finds its reader waiting on the network, shared by the RPCs that
//! arrive before the reader has read everything, on both CPU paths (a node with a core
//! of its own, and nodes sharing a core in time slices); and on time-sliced hosts, when
//! Go's netpoller makes a waiting reader runnable (`crates/engine/src/goroutines.rs`).
//! Hand-computed timelines.

mod common;
use common::*;

use gossiplab_engine::Simulation;
use serde_json::json;

/// Wake-up 1 ms, read 3 ms, validate 5 ms; sending and signing are free. Node 0
/// publishes one 100-byte floodsub message at each of `at` to its two leaves over 10 ms
/// links; `nodes_per_host` nodes share one core (time slices of 100 ms when they
/// outnumber it). The leaves' delivery times.
fn deliveries(nodes_per_host: u32, at: [u64; 2]) -> Vec<u64> {
    let costs = json!({"cpu": {
        "nodes_per_host": nodes_per_host, "cores": 1, "time_slice_ns": 100 * MS,
        "per_read_wakeup_ns": MS, "per_rpc_received_ns": 3 * MS, "per_copy_ns": 5 * MS
    }});
    let c = config(3, "floodsub", 10 * MS, 2 * S, 1, costs);
    let mut schedule = messages(0, at[0], 0, 2, 100);
    schedule.t_intended_ns = at.to_vec();
    let mut sim = Simulation::new(&c, &star(2), &schedule).unwrap();
    sim.run();
    sorted_delivery_times(&sim)
}

#[test]
fn rpcs_far_apart_wake_the_reader_each_time() {
    // Own core each. Each copy arrives at a waiting reader: wake 1 + read 3, validate 5.
    // Message 0: 110 → 114 → 119; message 1: 210 → 214 → 219 (both leaves alike).
    let expected = [119, 119, 219, 219].map(|t| t * MS);
    assert_eq!(deliveries(1, [100 * MS, 200 * MS]), expected);
}

#[test]
fn an_rpc_arriving_while_its_reader_reads_shares_the_wake_up() {
    // Own core each (the first-in first-out path). Copies arrive at 110 and 111 ms. The
    // reader wakes and reads the first 110-114; the second, there since 111, is read
    // without a wake-up, 114-117 (submitted at 111, before the first copy's validation,
    // submitted at 114). Validations 117-122 and 122-127. A wake-up per copy would make
    // the second read 114-118 and deliver at 123 and 128.
    let expected = [122, 122, 127, 127].map(|t| t * MS);
    assert_eq!(deliveries(1, [100 * MS, 101 * MS]), expected);
}

#[test]
fn rpcs_arriving_while_the_node_is_descheduled_pay_one_wake_up() {
    // The three nodes share one core (slices of 100 ms); node 0 has no CPU work. Copies
    // arrive at 110 and 111 ms. Leaf 1 takes the core at 110: wakes and reads 110-114,
    // reads the second copy (its reader still runnable) 114-117, validates 117-122 and
    // 122-127, then blocks. Leaf 2 waited for the core from 110: both copies arrived
    // while it was descheduled, so its reader wakes once: 127-131 (wake + read),
    // 131-134, validations 134-139 and 139-144. A wake-up per copy: 123, 128, 141, 146.
    let expected = [122, 127, 139, 144].map(|t| t * MS);
    assert_eq!(deliveries(3, [100 * MS, 101 * MS]), expected);
}

#[test]
fn a_reader_that_blocked_pays_again_on_a_shared_core() {
    // Shared core, copies at 110 and 210: leaf 1 110-114-119, leaf 2 119-123-128; then
    // each has blocked, so message 1 wakes them again: 210-214-219, 219-223-228.
    let expected = [119, 128, 219, 228].map(|t| t * MS);
    assert_eq!(deliveries(3, [100 * MS, 200 * MS]), expected);
}

/// Node 2 between leaves 0 and 1 (floodsub, 10 ms links); leaf 0 publishes at 100 ms,
/// leaf 1 at `second`. Wake-up 1 ms, read 3 ms, validate `validate` ms, sending and
/// signing free. Node 2 has host 1 and its core to itself, time-sliced (two nodes per host of
/// one core, slices of 100 ms); the leaves share host 0. Node 2's delivery times.
fn middle_deliveries(second: u64, validate: u64) -> Vec<u64> {
    let costs = json!({"cpu": {
        "nodes_per_host": 2, "cores": 1, "time_slice_ns": 100 * MS,
        "per_read_wakeup_ns": MS, "per_rpc_received_ns": 3 * MS, "per_copy_ns": validate * MS
    }});
    let c = config(3, "floodsub", 10 * MS, 2 * S, 1, costs);
    let schedule = then(
        messages(0, 100 * MS, 0, 1, 100),
        messages(1, second, 0, 1, 100),
    );
    let mut sim = Simulation::new(&c, &[(0, 2), (1, 2)], &schedule).unwrap();
    sim.run();
    let d = &sim.output().deliveries;
    let mut t: Vec<u64> = (0..d.node.len())
        .filter(|&i| d.node[i] == 2)
        .map(|i| d.t_ns[i] as u64)
        .collect();
    t.sort_unstable();
    t
}

#[test]
fn data_for_a_waiting_reader_waits_until_its_node_has_nothing_else_to_run() {
    // runtime/proc.go:findRunnable polls the network only when the run queues are empty.
    // Node 2 wakes for leaf 0's copy at 110: its reader wakes and reads 110-114, and the
    // validation 114-119 delivers it. Leaf 1's copy arrives at 111, while the node runs:
    // its reader becomes runnable only when nothing else is (119), wakes and reads
    // 119-123, validation 123-128. Woken at 111 instead, that reader would run 114-118
    // before the validation queued at 114 and deliver at 123 and 128.
    assert_eq!(middle_deliveries(101 * MS, 5), [119 * MS, 128 * MS]);
}

#[test]
fn data_arriving_at_an_idle_node_wakes_its_reader_at_once() {
    // Leaf 1's copy arrives at 130, after node 2 finished leaf 0's (119): the node was
    // waiting in epoll, so the reader wakes at once: 130-134, validation 134-139.
    assert_eq!(middle_deliveries(120 * MS, 5), [119 * MS, 139 * MS]);
}

#[test]
fn sysmon_polls_a_busy_node_ten_milliseconds_after_the_last_poll() {
    // runtime/proc.go:sysmon polls once lastpoll + 10 ms has passed. Validation takes
    // 25 ms, in turns of 10 ms (forcePreemptNS). Node 2 wakes at 110 (lastpoll = 110),
    // reads 110-114 and validates from 114. Leaf 1's copy arrives at 111. At the end of
    // the validator's first turn (124) sysmon polls: the reader runs first, 124-128, the
    // validator 128-143 (leaf 0's copy), then 143-168 (leaf 1's). Without sysmon the
    // reader would wait for the run queue to empty: deliveries at 139 and 168.
    assert_eq!(middle_deliveries(101 * MS, 25), [143 * MS, 168 * MS]);
}
