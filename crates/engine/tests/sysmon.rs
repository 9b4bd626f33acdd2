//! Go's `sysmon` thread on a shared host (`crates/engine/src/sysmon.rs`, `group.rs`,
//! `slices.rs`), against timelines computed by hand from Go's sleeps
//! (`runtime/proc.go:sysmon`: 20 µs, plus the timer's 50 µs of slack) and EEVDF's
//! eligibility and placing, at the root and inside a node's group
//! (`kernel/sched/fair.c`).

mod common;
use common::*;

use gossiplab_engine::goroutines::{Readied, NODE_THREAD, SYSMON_THREAD};
use gossiplab_engine::Simulation;
use serde_json::json;

const US: u64 = 1_000;

/// Node 0 publishes at 100 ms to `leaves` leaves (floodsub, 10 ms links); the nodes
/// share one core in slices of `slice`, ended on time; validating a copy costs
/// `validate`, publishing `publish`, a `sysmon` round 10 µs; every node's waits for the
/// core are recorded. The run, done.
fn sharing_a_core(leaves: u32, slice: u64, validate: u64, publish: u64) -> Simulation {
    let patch = json!({"cpu": {
        "nodes_per_host": leaves + 1, "cores": 1, "time_slice_ns": slice, "hrtick": true,
        "per_copy_ns": validate, "per_publish_ns": publish,
        "record_waits": (0..=leaves).collect::<Vec<u32>>(),
        "sysmon": true, "per_sysmon_round_ns": 10 * US
    }});
    let c = config(leaves + 1, "floodsub", 10 * MS, 2 * S, 1, patch);
    let mut sim = Simulation::new(&c, &star(leaves), &messages(0, 100 * MS, 0, 1, 100)).unwrap();
    sim.run();
    sim
}

/// `node`'s waits for the core (its working thread's), in µs, in order.
fn core_waits(sim: &Simulation, node: u32) -> Vec<u64> {
    let waits = sim.goroutine_waits();
    let own = waits
        .iter()
        .filter(|w| w.node == node && w.kind == NODE_THREAD);
    own.map(|w| w.wait / US).collect()
}

/// `node`'s recorded `sysmon` rounds: when (µs after `from`), and the wait for each (µs).
fn sysmon_rounds(sim: &Simulation, node: u32, from: u64) -> Vec<(u64, u64)> {
    let waits = sim.goroutine_waits();
    let rounds = waits
        .iter()
        .filter(|w| w.node == node && w.kind == SYSMON_THREAD);
    rounds.map(|w| ((w.at - from) / US, w.wait / US)).collect()
}

#[test]
fn a_sysmon_woken_with_no_lag_waits_in_its_group_for_the_working_thread_to_block() {
    // Both leaves get their copy at 110 ms. Leaf 1 takes the idle core and validates
    // to 115; leaf 2, placed at the same virtual runtime V, does not preempt it. Leaf
    // 1's first system call wakes its sysmon at 110, placed in the group at the
    // working thread's virtual runtime (it kept no lag): the working thread, still
    // eligible, keeps its slice, and sysmon waits. At 115 the working thread blocks;
    // its group, at V + 5 ms against leaf 2's V, is past the average and leaf 2 runs to
    // 120 (its wait: 5 ms), its sysmon waiting likewise. At 120 leaf 2 blocks at the
    // average and stays the pick: its sysmon runs 120.00-120.01 (woken by the system
    // call, it goes on to sleep 20 + 50 µs even though the node is idle), then leaf
    // 1's group runs its round alone, 120.01-120.02, not a wait of its working thread.
    // Each sysmon's next round (120.08, 120.09) finds its node idle and sleeps deeply.
    let sim = sharing_a_core(2, 100 * MS, 5 * MS, 0);
    assert_eq!(sorted_delivery_times(&sim), vec![115 * MS, 120 * MS]);
    assert_eq!(core_waits(&sim, 1), vec![0]);
    assert_eq!(core_waits(&sim, 2), vec![5_000]);
    assert_eq!(
        sysmon_rounds(&sim, 1, 110 * MS),
        vec![(10_010, 10_010), (10_090, 0)]
    );
    assert_eq!(
        sysmon_rounds(&sim, 2, 110 * MS),
        vec![(10_000, 5_000), (10_080, 0)]
    );
}

#[test]
fn a_sysmon_behind_its_working_thread_preempts_it_at_each_wake_up() {
    // One leaf validates 1.5 ms from 110 ms in slices of 1 ms; the publisher is idle.
    // Its sysmon, woken at 110 with no lag, waits in the group to the slice's end at
    // 111; the group, alone on the host, gets the core again and picks sysmon (1 ms
    // behind the working thread): its round 111.00-111.01, after which it sleeps with
    // lag (1,000 - 10) / 2 = 495 µs. From then on each wake-up places it 990 µs behind
    // the working thread (its lag doubled), so it preempts it every 70 + 10 µs, its lag
    // 5 µs less each time: rounds at 111.08, 111.16, ..., 111.56, each taking 10 µs of
    // the core. The working thread's 1.5 ms end at 111.58 (without sysmon, 111.50);
    // sysmon's round at 111.64 finds the node idle.
    let sim = sharing_a_core(1, MS, 1_500 * US, 0);
    assert_eq!(sorted_delivery_times(&sim), vec![111_580 * US]);
    let mut rounds = vec![(1_000, 1_000)];
    rounds.extend((1..=8).map(|i| (1_000 + 80 * i, 0)));
    assert_eq!(sysmon_rounds(&sim, 1, 110 * MS), rounds);
    // The working thread waited for the core at 110, and 10 µs for sysmon's round in
    // the visit that began at 111.
    assert_eq!(core_waits(&sim, 1), vec![0, 10]);
}

#[test]
fn an_idle_node_s_visit_for_its_sysmon_s_round_is_not_a_wait_of_its_working_thread() {
    // Node 0 signs from 100 to 101 ms, its sysmon (woken as it starts, with no lag)
    // waiting in the group; it runs at 101 when the node blocks, and once more at
    // 101.08, when the node's group takes the idle core for that round alone and
    // sysmon sleeps deeply. Node 0's working thread waited once, at 100 ms, for
    // nothing; the leaves get their copies at 111.
    let sim = sharing_a_core(2, 100 * MS, 5 * MS, MS);
    assert_eq!(core_waits(&sim, 0), vec![0]);
    assert_eq!(
        sysmon_rounds(&sim, 0, 100 * MS),
        vec![(1_000, 1_000), (1_080, 0)]
    );
    assert_eq!(sorted_delivery_times(&sim), vec![116 * MS, 121 * MS]);
}

/// Each (message, leaf)'s delivery, µs after 110 ms: node 0 publishes two messages 100 µs
/// apart to its two leaves sharing one core; validating costs 40 µs, a node's wake-up
/// 20 µs, a `sysmon` round 5 µs.
fn two_messages_on_a_shared_core() -> Vec<(u32, u32, u64)> {
    let patch = json!({"cpu": {
        "nodes_per_host": 3, "cores": 1, "time_slice_ns": 100 * MS, "hrtick": true,
        "per_copy_ns": 40 * US, "per_node_wakeup_ns": 20 * US, "sysmon": true,
        "per_sysmon_round_ns": 5 * US
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
    // validation 40: done at 110.06), its sysmon woken and waiting in the group. As
    // its working thread blocks, leaf 1's group (V + 60 against leaf 2's V) is past
    // the average and queues for the round; leaf 2 runs (done at 110.12). Message 1
    // arrives at 110.10: leaf 1's working thread is blocked in netpoll while its group
    // waits for the core, so this work wakes it and pays the wake-up
    // (`per_node_wakeup`); leaf 2 is running and does not. Leaf 2 validates message 1
    // by 110.16 and blocks past the average; leaf 1's group gets the core and picks
    // sysmon (60 µs behind its working thread): its round 110.160-110.165, then the
    // working thread's 20 + 40 µs: 110.225 (110.205 without the wake-up).
    assert_eq!(
        two_messages_on_a_shared_core(),
        vec![(0, 1, 60), (0, 2, 120), (1, 1, 225), (1, 2, 160)]
    );
}

#[test]
fn a_round_s_cost_needs_sysmon() {
    let two_on_a_core = json!({"cpu": {"nodes_per_host": 2}});
    let mut c = config(2, "floodsub", 10 * MS, 2 * S, 1, two_on_a_core);
    c.cpu.per_sysmon_round_ns = 10 * US; // sysmon off
    let (field, message) = refusal(&c, &[(0, 1)]);
    assert_eq!(field, "cpu.per_sysmon_round_ns");
    assert!(message.contains("sysmon = true"), "{message}");
}

/// The times (µs after 110 ms) at which `node`'s validator began its turns.
fn validator_turns(sim: &Simulation, node: u32) -> Vec<u64> {
    let waits = sim.goroutine_waits();
    let validator = waits.iter().filter(|w| w.node == node && w.kind == 2);
    validator.map(|w| (w.at - 110 * MS) / US).collect()
}

#[test]
fn sysmon_ends_a_turn_ten_milliseconds_of_wall_time_after_it_saw_it() {
    // Three leaves validate 40 ms each from 110 ms, sharing one core in 4 ms slices.
    // runtime/proc.go:retake: a round notes the P's schedtick and when; the first round
    // at least 10 ms after that, finding the same schedtick, preempts the running
    // goroutine (preemptone), which starts a new turn (a new schedtick, noted by the
    // round after) when its thread runs again. The wall time counts, the waits for the
    // core included: each leaf gets a third of the core, so a turn ends after a few ms
    // of its CPU, and 40 ms of validation take more turns than the 4 that 10 ms turns
    // of CPU would.
    let sim = sharing_a_core(3, 4 * MS, 40 * MS, 0);
    for leaf in 1..=3 {
        let turns = validator_turns(&sim, leaf);
        let rounds: Vec<u64> = sysmon_rounds(&sim, leaf, 110 * MS)
            .into_iter()
            .map(|(at, _)| at)
            .collect();
        // Each turn after the first follows the first round at least 10 ms after the
        // first round of the turn before, with no round in between.
        for pair in turns.windows(2) {
            let (start, next) = (pair[0], pair[1]);
            let noted = *rounds.iter().find(|&&r| r >= start).expect("a round");
            let preempting = *rounds
                .iter()
                .find(|&&r| r >= noted + 10_000)
                .expect("a round 10 ms on");
            assert!(
                preempting <= next,
                "leaf {leaf}: turn at {next} before round"
            );
            let after = rounds.iter().find(|&&r| r > preempting);
            assert!(
                after.is_none_or(|&r| r >= next),
                "leaf {leaf}: the turn at {next} comes as its thread runs after the round at {preempting}"
            );
        }
        assert!(turns.len() > 4, "leaf {leaf}: {turns:?}");
    }
}

#[test]
fn a_node_alone_whose_slice_ends_during_a_sysmon_round_runs_on_in_a_new_slice() {
    // One leaf validates 50 ms alone on its core (the publisher idle), in slices of 1 ms
    // that the kernel notices at its 4 ms ticks (no hrtick); its sysmon, behind the
    // working thread, preempts it at its wake-ups for rounds of 900 µs, some of which
    // span a tick that ends the slice. When a round ends the kernel picks again
    // (schedule → put_prev_entity → update_curr gives the group a new deadline), finds
    // it alone and runs it on: the copy is validated after its 50 ms and the rounds
    // that came before, nothing lost, nothing counted twice.
    let patch = json!({"cpu": {
        "nodes_per_host": 2, "cores": 1, "time_slice_ns": MS,
        "per_copy_ns": 50 * MS, "sysmon": true, "per_sysmon_round_ns": 900 * US,
        "record_waits": [1]
    }});
    let c = config(2, "floodsub", 10 * MS, 2 * S, 1, patch);
    let mut sim = Simulation::new(&c, &star(1), &messages(0, 100 * MS, 0, 1, 100)).unwrap();
    sim.run();
    let delivered = sorted_delivery_times(&sim);
    assert_eq!(delivered.len(), 1);
    let done = (delivered[0] - 110 * MS) / US;
    let rounds = sysmon_rounds(&sim, 1, 110 * MS);
    let before = rounds.iter().filter(|&&(at, _)| at < done).count() as u64;
    assert!(before > 4, "rounds spanning the 4 ms ticks: {rounds:?}");
    assert_eq!(done, 50_000 + 900 * before);
}

#[test]
fn shared_cores_run_to_the_end_across_slices_rounds_and_costs() {
    // Every corner of the shared-core scheduling together (slices ended on time or at
    // the tick, sysmon rounds from free to longer than a slice, wake-up costs, copies
    // from quick to longer than sysmon's 10 ms turn), the event loop on: each run ends,
    // and each of the four leaves gets each of the five messages, published 100 ms
    // apart (the host is never overloaded for long).
    for (i, slice) in [200 * US, 750 * US, 4 * MS].into_iter().enumerate() {
        for round in [0, 11 * US, 900 * US, 3 * MS] {
            for copy in [40 * US, 4 * MS, 20 * MS] {
                let patch = json!({"cpu": {
                    "nodes_per_host": 5, "cores": 1, "time_slice_ns": slice,
                    "hrtick": i % 2 == 0, "per_copy_ns": copy, "per_node_wakeup_ns": 20 * US,
                    "per_rpc_received_ns": 5 * US, "per_rpc_loop_ns": 5 * US,
                    "event_loop": true, "sysmon": true, "per_sysmon_round_ns": round
                }});
                let c = config(5, "floodsub", 10 * MS, 4 * S, 1, patch);
                let schedule = messages(0, 100 * MS, 100 * MS, 5, 100);
                let mut sim = Simulation::new(&c, &star(4), &schedule).unwrap();
                sim.run();
                let delivered = sim.output().deliveries.msg.len();
                assert_eq!(
                    delivered,
                    5 * 4,
                    "slice {slice}, round {round}, copy {copy}"
                );
            }
        }
    }
}

#[test]
fn the_resources_count_each_sysmon_round_and_each_block_of_the_working_thread() {
    // The timeline of the first test: each leaf's sysmon runs two rounds (the first
    // after the system call that woke it, the second finding the node idle), each a
    // sleep after it, and each leaf's working thread blocks once, when its copy is
    // validated (leaf 1 at 115 ms, leaf 2 at 120). All of it falls in the run's first
    // second: the samples at 1 s and 2 s hold it, the one at 0 nothing.
    let sim = sharing_a_core(2, 100 * MS, 5 * MS, 0);
    let samples = sim.cpu_samples().expect("the run charges CPU");
    for leaf in [1, 2] {
        let rows: Vec<usize> = (0..samples.node.len())
            .filter(|&i| samples.node[i] == leaf)
            .collect();
        let at = |column: &[u64]| rows.iter().map(|&i| column[i]).collect::<Vec<u64>>();
        assert_eq!(at(&samples.sysmon_runs), vec![0, 2, 2], "leaf {leaf}");
        assert_eq!(
            at(&samples.sysmon_ns),
            vec![0, 20 * US, 20 * US],
            "leaf {leaf}"
        );
        assert_eq!(
            at(&samples.voluntary_switches),
            vec![0, 3, 3],
            "leaf {leaf}"
        );
    }
}

/// `node`'s involuntary switches at each sample (0 s, 1 s, 2 s): its working thread's
/// preemptions, by another node or by its own `sysmon`.
fn involuntary(sim: &Simulation, node: u32) -> Vec<u64> {
    let samples = sim.cpu_samples().expect("the run charges CPU");
    let rows = (0..samples.node.len()).filter(|&i| samples.node[i] == node);
    rows.map(|i| samples.involuntary_switches[i]).collect()
}

/// `leaves` leaves, each validating its copy for `validate`, share one core in slices of
/// 1 ms ended on time, without `sysmon`. The run, done.
fn slices_without_sysmon(leaves: u32, validate: u64) -> Simulation {
    let patch = json!({"cpu": {
        "nodes_per_host": leaves + 1, "cores": 1, "time_slice_ns": MS, "hrtick": true,
        "per_copy_ns": validate
    }});
    let c = config(leaves + 1, "floodsub", 10 * MS, 2 * S, 1, patch);
    let mut sim = Simulation::new(&c, &star(leaves), &messages(0, 100 * MS, 0, 1, 100)).unwrap();
    sim.run();
    sim
}

#[test]
fn a_working_thread_that_loses_its_core_with_work_left_is_an_involuntary_switch() {
    // Both leaves validate 5 ms from 110 ms, in turns of one slice: leaf 1 runs first
    // and loses the core at 111, 113, 115 and 117, leaf 2 at 112, 114, 116 and 118
    // (each time the other is behind it, the first queued on a tie); leaf 1 is done at
    // 119, leaf 2 at 120, each blocking then (voluntary).
    let sim = slices_without_sysmon(2, 5 * MS);
    assert_eq!(sorted_delivery_times(&sim), vec![119 * MS, 120 * MS]);
    assert_eq!(involuntary(&sim, 1), vec![0, 4, 4]);
    assert_eq!(involuntary(&sim, 2), vec![0, 4, 4]);
    assert_eq!(involuntary(&sim, 0), vec![0, 0, 0]);
}

#[test]
fn a_slice_that_ends_with_the_core_given_straight_back_is_no_switch() {
    // One leaf validates 1.5 ms from 110 ms: its slice ends at 111 and, alone on the
    // host, it is the kernel's pick again: the core never leaves it (`__schedule`
    // switches nothing when the pick is the running task).
    let sim = slices_without_sysmon(1, 1_500 * US);
    assert_eq!(sorted_delivery_times(&sim), vec![111_500 * US]);
    assert_eq!(involuntary(&sim, 1), vec![0, 0, 0]);
}

#[test]
fn a_working_thread_switched_out_for_its_own_sysmon_is_an_involuntary_switch() {
    // The timeline of `a_sysmon_behind_its_working_thread_preempts_it_at_each_wake_up`:
    // at 111 the slice ends and the group, picked again, runs sysmon first (the working
    // thread is switched out for it), then sysmon preempts the working thread at each of
    // its wake-ups at 111.08, 111.16, ..., 111.56 (seven), and the round at 111.64 finds
    // the node idle: eight involuntary switches, all in the first second.
    let sim = sharing_a_core(1, MS, 1_500 * US, 0);
    assert_eq!(sorted_delivery_times(&sim), vec![111_580 * US]);
    assert_eq!(involuntary(&sim, 1), vec![0, 8, 8]);
}

/// Where `node` was when its `sysmon` woke for each of its recorded rounds, in order.
fn woke_where(sim: &Simulation, node: u32) -> Vec<Readied> {
    let waits = sim.goroutine_waits();
    let rounds = waits
        .iter()
        .filter(|w| w.node == node && w.kind == SYSMON_THREAD);
    rounds
        .map(|w| w.readied.expect("a round says where"))
        .collect()
}

#[test]
fn each_sysmon_round_says_where_its_node_was_when_sysmon_woke() {
    // The timelines above. With no lag: each leaf's sysmon is woken by the leaf's first
    // system call (leaf 1 at 110, leaf 2 at 115, as each takes the core), and its next
    // round's wake-up finds the leaf idle.
    let (running, idle) = (Readied::SysmonNodeRunning, Readied::SysmonNodeIdle);
    let sim = sharing_a_core(2, 100 * MS, 5 * MS, 0);
    assert_eq!(woke_where(&sim, 1), vec![running, idle]);
    assert_eq!(woke_where(&sim, 2), vec![running, idle]);
    // Behind its working thread: woken by the system call at 110 and at each of its
    // seven wake-ups while the leaf validates (111.07, 111.15, ..., 111.55), and at
    // 111.63 with the leaf idle.
    let sim = sharing_a_core(1, MS, 1_500 * US, 0);
    let mut expected = vec![running; 8];
    expected.push(idle);
    assert_eq!(woke_where(&sim, 1), expected);
}

#[test]
fn a_sysmon_that_wakes_while_its_node_waits_for_the_core_says_so() {
    // Two leaves validating 5 ms from 110 ms in 1 ms slices: leaf 2 waits for the core
    // at 110, and its sysmon, in its deep sleep until leaf 2's first system call at 111,
    // then sleeps 70 µs at a time; those that end while leaf 1 holds the core wake it
    // with leaf 2 waiting.
    let patch = json!({"cpu": {
        "nodes_per_host": 3, "cores": 1, "time_slice_ns": MS, "hrtick": true,
        "per_copy_ns": 5 * MS, "record_waits": [1, 2], "sysmon": true,
        "per_sysmon_round_ns": 10 * US
    }});
    let c = config(3, "floodsub", 10 * MS, 2 * S, 1, patch);
    let mut sim = Simulation::new(&c, &star(2), &messages(0, 100 * MS, 0, 1, 100)).unwrap();
    sim.run();
    let places = woke_where(&sim, 2);
    assert!(places.contains(&Readied::SysmonNodeWaiting), "{places:?}");
    assert_eq!(places[0], Readied::SysmonNodeRunning);
    assert_eq!(places.last(), Some(&Readied::SysmonNodeIdle));
}

/// `sysmon`'s timed sleeps with its 10 µs round (20 µs doubled up to 10 ms, each plus
/// the timer's slack): a sleep of any other length was its deep sleep.
fn timed_sleep(sleep: u64) -> bool {
    (0..10).any(|i| sleep == ((20 * US) << i).min(10 * MS) + 50 * US)
}

#[test]
fn a_sysmon_round_before_its_thread_runs_back_from_netpoll_finds_the_p_idle() {
    // runtime/proc.go:findRunnable puts the P on the idle list before its blocking
    // netpoll and takes it back only once the thread runs: a sysmon round in the visit
    // that brings the thread back, before it runs, finds every P idle and sleeps deeply
    // (npidle == gomaxprocs); the thread's first system call, at once, wakes it
    // (entersyscall), its next round being due then with the node running. Six leaves
    // share a core, a copy of 300 µs each every 1.5 ms: they block between copies and
    // wake while another runs.
    let patch = json!({"cpu": {
        "nodes_per_host": 7, "cores": 1, "time_slice_ns": MS, "hrtick": true,
        "per_copy_ns": 300 * US, "record_waits": [1, 2, 3, 4, 5, 6], "sysmon": true,
        "per_sysmon_round_ns": 10 * US
    }});
    let c = config(7, "floodsub", 10 * MS, 2 * S, 1, patch);
    let schedule = messages(0, 100 * MS, 1_500 * US, 40, 100);
    let mut sim = Simulation::new(&c, &star(6), &schedule).unwrap();
    sim.run();
    let waits = sim.goroutine_waits();
    let mut found = 0;
    for leaf in 1..=6 {
        let own = |kind| {
            waits
                .iter()
                .filter(move |w| w.node == leaf && w.kind == kind)
        };
        let thread_runs: Vec<u64> = own(NODE_THREAD).map(|w| w.at).collect();
        let rounds: Vec<_> = own(SYSMON_THREAD).collect();
        for pair in rounds.windows(2) {
            let (round, next) = (pair[0], pair[1]);
            let done = round.at + 10 * US;
            let deep = !timed_sleep(next.at - next.wait - done);
            if deep && thread_runs.contains(&done) {
                found += 1;
                assert_eq!(next.at - next.wait, done, "leaf {leaf}: woken at once");
                assert_eq!(next.readied, Some(Readied::SysmonNodeRunning));
            }
        }
    }
    assert!(found > 0, "no round found the P idle before its thread ran");
}

#[test]
fn work_that_costs_nothing_is_done_before_sysmon_preempts_the_thread() {
    // Reading costs nothing (no cost per RPC or turn of the reader): such a piece is
    // done at the instant it starts, and a `sysmon` that preempts the working thread
    // then does so after its event, which is never lost: every leaf gets every message
    // (the host is busy, not overloaded).
    for leaves in [3, 6, 12] {
        for gap in [MS, 2 * MS] {
            let patch = json!({"cpu": {
                "nodes_per_host": leaves + 1, "cores": 1, "time_slice_ns": 1_500 * US,
                "per_copy_ns": 40 * US, "per_rpc_sent_ns": 4 * US, "per_kb_sent_ns": 4 * US,
                "per_rpc_loop_ns": 4 * US, "per_send_loop_turn_ns": 6 * US,
                "per_recv_loop_turn_ns": 9 * US, "per_kb_received_ns": 2 * US,
                "event_loop": true, "sysmon": true, "per_sysmon_round_ns": 10 * US,
                "send_loop_syscall_share": 0.82, "recv_loop_syscall_share": 0.34
            }});
            let c = config(leaves + 1, "floodsub", 10 * MS, 4 * S, 1, patch);
            let schedule = messages(0, 100 * MS, gap, 200, 1000);
            let mut sim = Simulation::new(&c, &star(leaves), &schedule).unwrap();
            sim.run();
            let delivered = sim.output().deliveries.msg.len();
            assert_eq!(
                delivered,
                200 * leaves as usize,
                "{leaves} leaves, gap {gap}"
            );
        }
    }
}
