//! pubsub's event loop (`cpu.event_loop`, `crates/engine/src/event_loop.rs`): one
//! goroutine handles every incoming RPC (`pubsub.go:processLoop`), fed by the readers
//! through a 32-slot channel (`pubsub.go:NewPubSub`, `incoming`) on which a reader
//! blocks when it is full (`comm.go:handleNewStream`). Hand-computed timelines.

mod common;
use common::*;

use gossiplab_engine::error::EngineError;
use gossiplab_engine::rpc::{Control, Kind};
use gossiplab_engine::wire::WireSizes;
use gossiplab_engine::{Schedule, Simulation};
use serde_json::json;

/// Node 0 publishes `count` 100-byte floodsub messages 1 µs apart from 100 ms to node 1
/// over a 10 ms link; both share a host of one core (slices of 100 ms). Reading an RPC
/// costs 10 µs, the event loop's handling 100 µs; validating, sending and signing are
/// free. Node 1's delivery times, after the first copy's arrival at 110 ms (the others
/// follow 1 µs apart, each before the reader has read the one before).
///
/// With the event loop, yamux's recvLoop reads the connection (free here: no cost per
/// kB) and readies the stream's reader (`runnext`), then parks on the network: an RPC
/// that arrives while the node runs waits in the kernel until the node's run queue
/// empties (`findRunnable`'s netpoll, `goroutines.rs`), and the recvLoop then reads
/// everything that arrived in one turn.
fn deliveries(event_loop: bool, count: u32) -> Vec<u64> {
    deliveries_at_costs(
        json!({"cpu": {
            "nodes_per_host": 2, "cores": 1, "time_slice_ns": 100 * MS,
            "per_rpc_received_ns": 10 * US, "per_rpc_loop_ns": 100 * US,
            "event_loop": event_loop,
        }}),
        count,
    )
}

/// Node 1's delivery times from 110 ms, for `count` messages from node 0 at these costs.
fn deliveries_at_costs(costs: serde_json::Value, count: u32) -> Vec<u64> {
    let c = config(2, "floodsub", 10 * MS, 2 * S, 1, costs);
    let mut sim = Simulation::new(&c, &[(0, 1)], &messages(0, 100 * MS, US, count, 100)).unwrap();
    sim.run();
    sorted_delivery_times(&sim)
        .into_iter()
        .map(|t| t - 110 * MS)
        .collect()
}

#[test]
fn without_the_event_loop_a_copy_is_handled_when_read() {
    let expected: Vec<u64> = (1..=100).map(|k| k * 10 * US).collect();
    assert_eq!(deliveries(false, 100), expected);
}

#[test]
fn a_reader_blocks_on_the_full_channel_and_lets_the_loop_run() {
    // 100 RPCs arrive from 110 ms. The recvLoop hands RPC 1 to the reader, which reads
    // it 0-10 µs and sends it straight to the idle loop (chansend hands it to the
    // waiting receiver), which runs 10-110 while 2..100 arrive: the run queue empties
    // at 110 and the recvLoop takes them all. The reader reads them 10 µs each: 2 goes
    // to the idle loop at 120, 3..34 fill the 32 slots; the reader parks with 35 at
    // 450 µs (runtime/chan.go:chansend). The loop handles 2..35 (each take lets the
    // parked RPC in; the reader, runnable again, waits for the loop's turn to end or
    // the loop to run dry): 550 .. 3,850 µs. The reader then reads 36 (taken at once)
    // and 37..68 into the slots, parks with 69 at 4,190; the loop handles 36..69,
    // 4,290 .. 7,590. The reader reads 70..100 (7,600 .. 7,900), the loop handles them
    // 8,000 .. 11,000. A channel that never fills would let the reader read 2..100
    // first and deliver them from 1,210 µs.
    let expected: Vec<u64> = (1..=100u64)
        .map(|k| match k {
            1 => 110,
            2..=35 => 350 + k * 100,
            36..=69 => 4_190 + (k - 35) * 100,
            _ => 7_900 + (k - 69) * 100,
        })
        .map(|t| t * US)
        .collect();
    assert_eq!(deliveries(true, 100), expected);
}

/// Node 1's deliveries of two RPCs 1 µs apart (`deliveries`) with the event loop at
/// 100 µs per RPC and reading costs `per_kb` per kB and `wakeup` per wake-up from the
/// network (yamux's recvLoop) and 10 µs per RPC (the stream's reader); and the bytes
/// the recvLoop reads for each RPC, at `per_kb`.
fn recv_loop_deliveries(per_kb: u64, wakeup: u64) -> (Vec<u64>, u64) {
    let c = config(2, "floodsub", 10 * MS, 2 * S, 1, json!({}));
    let rpc = WireSizes::frame(WireSizes::new(&c.protocol).publish_field(100));
    let at = deliveries_at_costs(
        json!({"cpu": {
            "nodes_per_host": 2, "cores": 1, "time_slice_ns": 100 * MS,
            "per_kb_received_ns": per_kb, "per_read_wakeup_ns": wakeup,
            "per_rpc_received_ns": 10 * US, "per_rpc_loop_ns": 100 * US, "event_loop": true,
        }}),
        2,
    );
    (at, per_kb * rpc / 1000)
}

#[test]
fn yamux_s_recv_loop_reads_ahead_while_data_is_there_and_parks_when_not() {
    // go-yamux session.go:recvLoop reads the connection and decrypts (per_kb_received,
    // and the wake-up from the network, per_read_wakeup), puts each frame's data in its
    // stream's buffer and readies the reader parked in Stream.Read (stream.go:readData
    // → asyncNotify(recvNotifyCh) → goready: runnext); the reader decodes
    // (per_rpc_received, with no wake-up of its own: the recvLoop readied it).
    //
    // The recvLoop reads on while data is there: 5 µs of wake-up and k of bytes for RPC
    // 1 (k = 20 µs per kB), then RPC 2, arrived at 1 µs meanwhile; the reader, in
    // runnext, runs once it parks: both RPCs at 5 + 2k, decoded in 20 µs, the loop
    // handles them 100 µs each.
    let (at, k) = recv_loop_deliveries(20 * US, 5 * US);
    let read = 5 * US + 2 * k + 20 * US;
    assert_eq!(at, [read + 100 * US, read + 200 * US]);
    // At 1 µs per kB it has read RPC 1 before RPC 2 arrives, and parks on the network:
    // RPC 2 waits in the kernel while the reader and the loop run RPC 1 (k + 10 + 100
    // µs), then goes the same way.
    let (at, k) = recv_loop_deliveries(US, 0);
    assert!(k < US, "RPC 1 is read before RPC 2 arrives");
    assert_eq!(at, [k + 110 * US, 2 * k + 220 * US]);
}

#[test]
fn below_the_channel_s_size_the_reader_reads_everything_first() {
    // 20 RPCs: 1 read 0-10 µs and handled 10-110 (the recvLoop takes 2..20 once the
    // loop is done); 2 to the idle loop at 120, 3..20 into the slots by 300 µs, no
    // reader parks; the loop runs after the reader: 400, 500, .. 2,200 µs.
    let expected: Vec<u64> = (1..=20)
        .map(|k| if k == 1 { 110 } else { 200 + k * 100 } * US)
        .collect();
    assert_eq!(deliveries(true, 20), expected);
}

#[test]
fn the_event_loop_needs_a_time_sliced_host() {
    let mut c = config(2, "floodsub", 10 * MS, 2 * S, 1, json!({}));
    c.cpu.event_loop = true; // one node per host of one core: not time-sliced
    let (field, message) = refusal(&c, &[(0, 1)]);
    assert_eq!(field, "cpu.event_loop");
    assert!(message.contains("nodes_per_host"), "{message}");
}

/// Node 0 publishes 400 1000-byte floodsub messages `gap` apart from 100 ms to node 2
/// over a 10 ms link, reading costing 10 µs per RPC and the `[cpu]` fields `costs` the
/// rest; the run and one RPC's bytes on the wire. Hosts of two nodes, nodes 1 and 3
/// idle, so each end has a time-sliced core to itself.
fn window_sim(gap: u64, costs: serde_json::Value) -> (Simulation, u64) {
    let mut cpu = json!({
        "nodes_per_host": 2, "cores": 1, "time_slice_ns": 100 * MS,
        "per_rpc_received_ns": 10 * US, "event_loop": true,
    });
    cpu.as_object_mut()
        .unwrap()
        .extend(costs.as_object().unwrap().clone());
    let c = config(4, "floodsub", 10 * MS, 2 * S, 1, json!({ "cpu": cpu }));
    let schedule = messages(0, 100 * MS, gap, 400, 1000);
    let mut sim = Simulation::new(&c, &[(0, 2)], &schedule).unwrap();
    sim.run();
    let rpc = WireSizes::frame(WireSizes::new(&c.protocol).publish_field(1000));
    (sim, rpc)
}

/// The window run with an event loop of `loop_ns` per RPC at node 2 (sending free):
/// node 2's deliveries, the sender's outbound-queue drops, and one RPC's bytes.
fn window_run(loop_ns: u64, gap: u64) -> (usize, u64, u64) {
    let (sim, rpc) = window_sim(gap, json!({ "per_rpc_loop_ns": loop_ns }));
    let delivered = sim.output().deliveries.t_ns.len();
    (delivered, drops(&sim, "outbound-queue-full"), rpc)
}

#[test]
fn a_burst_larger_than_the_window_blocks_the_writer_and_fills_the_queue() {
    // 400 RPCs in 0.4 ms, the first window update 20 ms away at best. A fresh 256 KiB
    // window takes ceil(256 Ki / rpc) of them, the last partly (stream.go:Stream.Write
    // sends what the window allows, then blocks); the writer holds that one, 32 wait
    // in the queue (rpc_queue.go), the rest are dropped (gossipsub.go:doDropRPC). The
    // updates (each once half the window is read, util.go:GrowTo) then let every RPC
    // kept through, the blocked one included.
    let (delivered, dropped, rpc) = window_run(0, US);
    let through = (256 * 1024u64).div_ceil(rpc);
    assert!(
        rpc * through > 256 * 1024,
        "the last one is written in part"
    );
    assert_eq!(dropped, 400 - through - 32);
    assert_eq!(delivered as u64, through + 32);
}

#[test]
fn a_receiver_whose_loop_falls_behind_makes_its_sender_drop() {
    // One RPC a millisecond. A loop that costs nothing keeps the window open: the
    // bytes not yet granted stay under half a window plus a round trip's worth, about
    // 140 RPCs of the 238 a window holds. A loop of 2 ms per RPC takes one every 2 ms:
    // the reader parks on the full channel, reads one RPC per 2 ms, the window closes,
    // and the sender's queue overflows.
    assert_eq!(window_run(0, MS).0, 400);
    assert_eq!(window_run(0, MS).1, 0);
    let (_, dropped, _) = window_run(2 * MS, MS);
    assert!(dropped > 0, "no drop at the sender");
}

/// Node 2's CPU over the window run at one RPC a millisecond (one window update per
/// half window it reads, each written by its sendLoop), writing at `sent` per RPC: node
/// 2 has nothing else to write (floodsub sends a message back to no one). Also one
/// RPC's bytes.
fn receiver_cpu(sent: u64) -> (u64, u64) {
    let (sim, rpc) = window_sim(MS, json!({ "per_rpc_sent_ns": sent }));
    let s = sim.cpu_samples().expect("the scenario charges CPU");
    let used = (0..s.node.len())
        .filter(|&i| s.node[i] == 2)
        .map(|i| s.cpu_ns[i])
        .max()
        .expect("node 2 sampled");
    (used, rpc)
}

#[test]
fn the_receiver_s_send_loop_writes_each_window_update() {
    // stream.go:Stream.Read → sendWindowUpdate puts a header-only frame on the
    // connection's sendCh (session.go:sendMsg) once the bytes read since the last update
    // reach half the window (util.go:GrowTo); the sendLoop writes it like any frame. Node
    // 2 reads 400 RPCs (the window stays open at one a millisecond): 400 × 10 µs, plus
    // one write per 131,072 bytes read. Each side also reads and writes one RPC when
    // the connection comes up (its subscriptions, pubsub.go:handleNewPeer).
    let (without, rpc) = receiver_cpu(0);
    assert_eq!(without, 401 * 10 * US);
    let updates = 400 * rpc / (128 * 1024);
    assert!(
        updates >= 2,
        "the run crosses half the window at least twice"
    );
    let (with, _) = receiver_cpu(100 * US);
    assert_eq!(with, without + (1 + updates) * 100 * US);
}

/// Node 0 publishes `count` 100-byte floodsub messages 1 µs apart from 100 ms to node 1
/// on the same host of one core: reading 10 µs per RPC, validating 20 µs per copy, the
/// event loop 100 µs per RPC and 50 µs per message it publishes, and the `[cpu]` fields
/// of `more` (costs per turn). Node 1's delivery times from 110 ms.
fn validated_deliveries(event_loop: bool, count: u32, more: serde_json::Value) -> Vec<u64> {
    let mut cpu = json!({
        "nodes_per_host": 2, "cores": 1, "time_slice_ns": 100 * MS,
        "per_rpc_received_ns": 10 * US, "per_copy_ns": 20 * US,
        "per_rpc_loop_ns": 100 * US, "per_publish_loop_ns": 50 * US,
        "event_loop": event_loop,
    });
    let fields = cpu.as_object_mut().expect("an object");
    fields.extend(more.as_object().expect("an object").clone());
    deliveries_at_costs(json!({ "cpu": cpu }), count)
}

#[test]
fn a_validated_copy_is_delivered_by_the_event_loop() {
    // pubsub.go:processLoop → publishMessage: the worker hands the copy back to the
    // loop through sendMsg (validation.go:sendMsgBlocking). The reader reads RPC 1 0-10
    // µs and hands it to the idle loop, which handles it 10-110 and pushes the copy to
    // validation; the worker validates 110-130 and hands it to the idle loop, which
    // publishes it 130-180 (per_publish_loop). The run queue empty, the recvLoop takes
    // RPC 2 (arrived at 1 µs, while the node ran): read 180-190, handled 190-290,
    // validated 290-310, published 310-360. Without the loop the reader reads 0-10 and
    // 10-20 and each copy is delivered when validated: 20-40 and 40-60.
    assert_eq!(
        validated_deliveries(true, 2, json!({})),
        [180 * US, 360 * US]
    );
    assert_eq!(
        validated_deliveries(false, 2, json!({})),
        [40 * US, 60 * US]
    );
}

#[test]
fn each_goroutine_pays_its_turn_once_for_the_items_it_takes_in_it() {
    // The run of `a_validated_copy_is_delivered_by_the_event_loop`, with a cost per
    // goroutine turn (goroutines.rs, TurnCosts): each goroutine loops over its queue
    // without blocking while it has work (pubsub.go:processLoop's select,
    // validation.go:validateWorker, comm.go:handleNewStream), so a turn's cost goes
    // with its first item. The recvLoop's turn, 0-3 µs, takes RPC 1 and RPC 2 (arrived
    // at 1 µs: its next read finds it, it does not park); the reader, readied by the
    // first, reads both in one turn, 3-16 and 16-26; the loop, readied by the first,
    // handles both in one turn, 26-156 and 156-256; the worker validates both in one
    // turn, 256-283 and 283-303, and readies the loop, which publishes copy 1 in a new
    // turn, 303-383, and copy 2, 383-433.
    let turns = json!({
        "per_reader_turn_ns": 3 * US, "per_loop_turn_ns": 30 * US,
        "per_validator_turn_ns": 7 * US, "per_recv_loop_turn_ns": 3 * US,
    });
    assert_eq!(validated_deliveries(true, 2, turns), [383 * US, 433 * US]);
}

#[test]
fn a_message_with_nothing_to_validate_is_published_while_its_rpc_is_handled() {
    // Unsigned, no validator: validation.go:Push returns true and pubsub.go:pushMsg
    // calls publishMessage inside handleIncomingRPC, so the loop's piece for the RPC
    // costs 100 + 50 µs. 20 RPCs: RPC 1 read 0-10 and handled 10-160; then the reader
    // reads 2..20 by 350 µs (none parks), and the loop handles them: 500, 650, ..
    // 3,200 µs.
    let at = deliveries_at_costs(
        json!({"cpu": {
            "nodes_per_host": 2, "cores": 1, "time_slice_ns": 100 * MS,
            "per_rpc_received_ns": 10 * US, "per_rpc_loop_ns": 100 * US,
            "per_publish_loop_ns": 50 * US, "event_loop": true,
        }}),
        20,
    );
    let expected: Vec<u64> = (1..=20)
        .map(|k| if k == 1 { 160 } else { 200 + k * 150 } * US)
        .collect();
    assert_eq!(at, expected);
}

/// Node 0 (host {0, 1}) publishes its message A at 100 ms to node 4 (host {4, 5}) and
/// to node 2 (host {2, 3}), which forwards it to node 4; node 5 keeps node 4's core
/// busy (a 30 ms signature from 135 ms) until both copies are there. Nodes 1 and 3
/// are idle. Signing 30 ms, reading `read` per RPC, the loop `per_rpc` per RPC and 50 µs
/// per publication, validating `per_copy`, sending free; `extra` are more messages.
fn receiver_run(read: u64, per_rpc: u64, per_copy: u64, extra: Schedule) -> Simulation {
    let costs = json!({"cpu": {
        "nodes_per_host": 2, "cores": 1, "time_slice_ns": 100 * MS,
        "per_rpc_received_ns": read, "per_copy_ns": per_copy,
        "per_rpc_loop_ns": per_rpc, "per_publish_loop_ns": 50 * US,
        "per_publish_ns": 30 * MS, "event_loop": true,
    }});
    let c = config(6, "floodsub", 10 * MS, 2 * S, 1, costs);
    let schedule = then(
        then(
            messages(0, 100 * MS, 0, 1, 100),
            messages(5, 135 * MS, 0, 1, 100),
        ),
        extra,
    );
    let mut sim = Simulation::new(&c, &[(0, 2), (0, 4), (2, 4)], &schedule).unwrap();
    sim.run();
    sim
}

/// When `node` delivers message `msg`, from 100 ms.
fn delivered_at(sim: &Simulation, node: u32, msg: u32) -> i64 {
    let d = &sim.output().deliveries;
    let i = (0..d.msg.len())
        .find(|&i| d.msg[i] == msg && d.node[i] == node)
        .expect("delivered");
    d.t_ns[i] - 100 * MS as i64
}

#[test]
fn a_copy_that_comes_once_a_worker_marked_the_message_seen_is_not_validated() {
    // validation.go:validate marks the message seen once its signature is checked;
    // pubsub.go:handleIncomingRPC (shouldPush → seenMessage) then drops a copy without
    // validating it, even before the loop has published the message. On one P the
    // copy reaches the loop in that window only if the loop is preempted in the middle
    // of it (goroutines.rs): here the loop takes 12 ms per RPC, more than a Go turn
    // (10 ms). Reading 10 µs, validating 20 µs. Node 0 also publishes B at 147 ms.
    //
    // Node 0 signs A 0-30 ms; both copies reach nodes 2 and 4 at 40. Node 2 (idle
    // host): reads 40.000-40.010, loop 40.010-52.010 (its turn ends at 50.000; alone,
    // it goes on), validates -52.030, publishes -52.080: node 4 gets its copy at
    // 62.080, into the netpoller (node 4 has its first copy to read; it woke at 40).
    // Node 4 runs once node 5's signature ends at 65: reader 0 reads A 65.000-65.010
    // and hands it to the idle loop (runnext); sysmon (10 ms since the poll at 40) puts
    // reader 2 at the tail. Loop 65.010-75.000: the turn (from 65) ends, the loop goes
    // to the tail behind reader 2. Reader 2 75.000-75.010: A's second copy into
    // `incoming` (the loop is busy). Loop 75.010-77.020: A's first copy to validation
    // (the worker takes runnext); the loop takes the second copy, 77.020-85.010: the
    // turn (from 75.010) ends, the worker in runnext runs, the loop goes to the tail.
    // Worker 85.010-85.030: A marked seen, buffered in sendMsg (loop busy). Loop
    // 85.030-89.040: the second copy, marked: dropped. B reached node 4 at 87
    // (netpoller; sysmon puts reader 0 at the tail at 89.040). The loop publishes A
    // 89.040-89.090 (delivered), its writer to node 2 sends; reader 0 reads B
    // 89.090-89.100, loop 89.100-101.100 (turn end at 99.090, alone), worker
    // -101.120, loop publishes B -101.170.
    //
    // Validating the second copy too (at 89.040 the worker takes runnext, the writer's
    // hand-off kicks it to the tail behind reader 0, the loop's turn on B ends at 99.090
    // and the worker runs it 99.090-99.110 ahead of the loop) would make B 101.190.
    let b = messages(0, 147 * MS, 0, 1, 100);
    let sim = receiver_run(10 * US, 12 * MS, 20 * US, b);
    assert_eq!(delivered_at(&sim, 4, 0), 89_090 * US as i64);
    // Messages in schedule order: A is 0, node 5's 1, B 2.
    assert_eq!(delivered_at(&sim, 4, 2), 101_170 * US as i64);
}

#[test]
fn the_event_loop_refuses_rpcs_larger_than_half_a_stream_window() {
    // The model hands an RPC to its receiver whole; go's reader reads a long message as
    // it comes and returns the window's credit meanwhile. A 200 kB message's RPC is
    // over half the 256 KiB window (131,072 bytes): refused; 100 kB is not.
    let costs = json!({"cpu": {"nodes_per_host": 2, "cores": 1, "event_loop": true}});
    let c = config(2, "floodsub", 10 * MS, 2 * S, 1, costs);
    assert!(Simulation::new(&c, &[(0, 1)], &messages(0, 100 * MS, 0, 1, 100_000)).is_ok());
    let err = Simulation::new(&c, &[(0, 1)], &messages(0, 100 * MS, 0, 1, 200_000))
        .err()
        .expect("refused");
    match err {
        EngineError::Config { field, message } => {
            assert_eq!(field, "cpu.event_loop");
            assert!(message.contains("131072"), "{message}");
        }
        other => panic!("{other}"),
    }
}

#[test]
fn a_copy_a_worker_validates_once_the_message_is_marked_seen_goes_no_further() {
    // validation.go:validate: a copy validated after markSeen is a duplicate and is not
    // sent on sendMsg, so the loop never publishes it. The worker validates both copies
    // of A in one turn while the loop it readied waits in runnext. Reading 5 ms per
    // RPC, the loop 6 ms, validating 1 ms: a reader and the loop together outrun a Go
    // turn (10 ms), so both copies reach the loop before the worker runs.
    //
    // Node 0 signs A 0-30 ms; both copies reach nodes 2 and 4 at 40. Node 2 (idle
    // host): reads 40-45, loop 45-51 (its turn ends at 50; alone, it goes on),
    // validates 51-52, publishes 52.000-52.050: node 4 gets its copy at 62.050, into
    // the netpoller (node 4 has its first copy to read; it woke at 40). Node 4 runs
    // once node 5's signature ends at 65: reader 0 reads A 65-70 and hands it to the
    // idle loop (runnext); sysmon (10 ms since the poll at 40) puts reader 2 at the
    // tail. Loop 70-75: the turn (from 65) ends, the loop goes to the tail. Reader 2
    // 75-80: the second copy into `incoming`. Loop 80-81: the first copy to validation
    // (the worker takes runnext); the loop takes the second copy, 81-87: to validation
    // too (not marked yet). The worker, in the rest of the turn (from 80): the first
    // copy 87-88 (marked seen, handed to the idle loop, which takes runnext), the
    // second 88-89: marked, a duplicate, not sent. Loop publishes A 89.000-89.050, its
    // writer sends to node 2, which gets it at 99.050 (idle): reads -104.050, loop
    // -110.050.
    //
    // Sending the duplicate on sendMsg too would make the loop publish it (50 µs)
    // before the writer runs: node 2's receipt would be at 110.100.
    let sim = receiver_run(5 * MS, 6 * MS, MS, Schedule::default());
    assert_eq!(delivered_at(&sim, 4, 0), 89_050 * US as i64);
    let r = sim.output().receipts.as_ref().expect("receipts");
    let i = (0..r.msg.len())
        .find(|&i| r.msg[i] == 0 && r.node[i] == 2 && r.from_node[i] == 4)
        .expect("node 4 forwards to node 2");
    assert_eq!(r.t_ns[i] - 100 * MS as i64, 110_050 * US as i64);
}

/// Leaf 1 of a star around node 0 (leaves 1-4, all five nodes on one host of one core,
/// slices of 100 ms) publishes one 100-byte floodsub message at 100 ms over 10 ms links.
/// Reading 10 µs per RPC, the loop 100 µs per RPC and 50 µs per message it publishes plus
/// `per_forward` per peer it forwards to, validating `per_copy`; sending and signing free.
/// Every delivery time, in order.
fn star_deliveries(per_forward: u64, per_copy: u64) -> Vec<u64> {
    let costs = json!({"cpu": {
        "nodes_per_host": 5, "cores": 1, "time_slice_ns": 100 * MS,
        "per_rpc_received_ns": 10 * US, "per_rpc_loop_ns": 100 * US,
        "per_publish_loop_ns": 50 * US, "per_forward_loop_ns": per_forward,
        "per_copy_ns": per_copy, "event_loop": true,
    }});
    let c = config(5, "floodsub", 10 * MS, 2 * S, 1, costs);
    let mut sim = Simulation::new(&c, &star(4), &messages(1, 100 * MS, 0, 1, 100)).unwrap();
    sim.run();
    sorted_delivery_times(&sim)
}

#[test]
fn the_loop_pays_per_peer_it_forwards_to_but_the_sender() {
    // gossipsub.go/floodsub.go:Publish call sendRPC once per topic peer but the one the
    // message came from and its author. The hub (node 0) forwards leaf 1's message to
    // leaves 2, 3 and 4: it reads 110.00-110.01 ms, handles the RPC to 110.11, validates
    // to 110.13 and publishes for 50 + 3 × 30 µs: delivered at 110.27 ms, 90 µs later
    // than without the cost per forward. The leaves forward to nobody (their one peer
    // sent it), so each of their deliveries is those 90 µs later, no more.
    let with = star_deliveries(30 * US, 20 * US);
    let without = star_deliveries(0, 20 * US);
    assert_eq!(with[0], 110 * MS + 270 * US);
    assert_eq!(without[0], 110 * MS + 180 * US);
    assert_eq!(with.len(), 4);
    let shifted: Vec<u64> = without.iter().map(|t| t + 90 * US).collect();
    assert_eq!(with, shifted);
    // Nothing to validate: the message is published while its RPC is handled
    // (pubsub.go:pushMsg), the forwards with it: 100 + 50 + 90 µs after the read.
    assert_eq!(star_deliveries(30 * US, 0)[0], 110 * MS + 250 * US);
}

/// Node 0 publishes message 0 at 5 s to node 1 (gossipsub, 1 ms link) and right behind
/// it sends node 1 an IHAVE for it; both nodes share a host of one core. Node 1's loop
/// takes 12 ms per RPC, more than a Go turn (10 ms); validating costs 20 µs. The IWANTs
/// node 1 sends.
fn iwants_for_an_ihave_behind_the_copy() -> (u64, u64) {
    let costs = json!({"cpu": {
        "nodes_per_host": 2, "cores": 1, "time_slice_ns": 100 * MS,
        "per_copy_ns": 20 * US, "per_rpc_loop_ns": 12 * MS, "event_loop": true,
    }});
    let c = config(2, "gossipsub", MS, 6 * S, 1, costs);
    let mut sim = Simulation::new(&c, &line(2), &messages(0, 5 * S, 0, 1, 100)).unwrap();
    sim.run_until(5 * S);
    let before = sim.traffic(1)[Kind::Iwant as usize].msgs_sent;
    sim.inject(
        0,
        1,
        Control {
            ihave: vec![(0, vec![0])],
            ..Control::default()
        },
    );
    sim.run();
    let iwants = sim.traffic(1)[Kind::Iwant as usize].msgs_sent - before;
    (iwants, sim.traffic(1)[Kind::Payload as usize].msgs_recv)
}

#[test]
fn an_ihave_for_a_message_a_worker_marked_seen_asks_for_nothing() {
    // gossipsub.go:handleIHave asks only for ids that pubsub.go:seenMessage does not
    // know, and validation.go:validate marks the message seen as soon as its signature
    // is checked, before the loop publishes it. Node 1 reads both RPCs at 5.001 s; its
    // loop handles the copy's 5.001-5.013 (its turn ends at 5.011; alone, it goes on),
    // pushes the copy to validation and takes the IHAVE's RPC, whose handling the end of
    // its turn at 5.021 interrupts; the worker validates 5.021-5.02102, marks the
    // message seen and leaves it in sendMsg (the loop is busy); the loop finishes the
    // IHAVE at 5.02502: the message is seen, so no IWANT, and node 1 receives one copy.
    // Checking only the published messages would ask for it and receive a second.
    assert_eq!(iwants_for_an_ihave_behind_the_copy(), (0, 1));
}

#[test]
fn a_reader_whose_update_finds_send_ch_full_parks_behind_the_writer() {
    // Writing an RPC takes a sendLoop 1 s. Node 0 sends node 2 a 4000-byte message a
    // second (arriving at 6.01 s + k s); node 2 publishes 100 of its own at 20 s, a
    // millisecond apart: its sendLoop writes one a second (a slot of its connection's
    // sendCh frees at 21 s, 22 s, ...) and its writer, parked on the full sendCh
    // (session.go:sendMsg), puts the next in at once. The read that brings node 2's
    // reading past half the window (message h - 1) owes node 0 an update
    // (stream.go:Stream.Read → sendWindowUpdate): the reader parks on the full sendCh
    // behind the writer (runtime/chan.go: first come, first served), the writer takes
    // the slot freed at the next whole second, the reader the one after it. Until then
    // it reads nothing: the message that arrives meanwhile waits too.
    let costs = json!({"cpu": {
        "nodes_per_host": 2, "cores": 1, "time_slice_ns": 100 * MS,
        "per_rpc_sent_ns": S, "event_loop": true,
    }});
    let c = config(4, "floodsub", 10 * MS, 200 * S, 1, costs);
    let schedule = then(
        messages(0, 5 * S, MS, 150, 4000),
        messages(2, 20 * S, MS, 100, 1000),
    );
    let mut sim = Simulation::new(&c, &[(0, 2)], &schedule).unwrap();
    sim.run();
    let rpc = WireSizes::frame(WireSizes::new(&c.protocol).publish_field(4000));
    let h = (128 * 1024u64).div_ceil(rpc) as u32;
    let arrival = |k: u32| (6 * S + 10 * MS + u64::from(k) * S) as i64 - 100 * MS as i64;
    assert!(
        arrival(h - 1) > 21 * S as i64,
        "node 2's sendCh is full by then"
    );
    assert_eq!(
        delivered_at(&sim, 2, h - 2),
        arrival(h - 2),
        "read as it comes"
    );
    let parked_until = (arrival(h - 1) as u64 + 100 * MS).div_ceil(S) * S + S;
    assert_eq!(
        delivered_at(&sim, 2, h - 1),
        parked_until as i64 - 100 * MS as i64
    );
    assert_eq!(
        delivered_at(&sim, 2, h),
        parked_until as i64 - 100 * MS as i64
    );
    assert_eq!(
        delivered_at(&sim, 2, h + 1),
        arrival(h + 1),
        "read as it comes again"
    );
}

/// Copies lost at a (node, peer): how many.
type Lost = ((u32, u32), u64);

/// Undeliverable copies at each (node, peer), and node 1's deliveries, for `count`
/// messages `gap` apart from node 0 to node 1 whose application takes `per_app` per
/// message; node 0 leaves the topic before it publishes (a fanout publisher: no
/// subscription of its own).
fn undeliverable(count: u32, gap: u64, per_app: u64) -> (Vec<Lost>, usize) {
    let costs = json!({"cpu": {
        "nodes_per_host": 2, "cores": 1, "time_slice_ns": 100 * MS,
        "per_rpc_received_ns": 10 * US, "per_rpc_loop_ns": 100 * US,
        "event_loop": true, "per_app_message_ns": per_app,
    }});
    let leaves = json!({"subscription_changes": [
        {"node": 0, "topic": 0, "at_ns": 50 * MS, "subscribe": false}
    ]});
    let c = config(2, "floodsub", 10 * MS, 2 * S, 1, merged(costs, leaves));
    let mut sim = Simulation::new(&c, &[(0, 1)], &messages(0, 100 * MS, gap, count, 100)).unwrap();
    sim.run();
    let mut drops: Vec<Lost> = sim
        .output()
        .drops
        .iter()
        .filter(|(key, _)| key.reason == "undeliverable")
        .map(|(key, &n)| ((key.node, key.peer), n))
        .collect();
    drops.sort_unstable();
    (drops, sorted_delivery_times(&sim).len())
}

#[test]
fn a_busy_application_holds_one_message_buffers_thirty_two_and_loses_the_rest() {
    // pubsub.go:notifySubs sends each delivered message on the subscription's channel of
    // 32 without blocking. Node 1's application takes 1 s a message (longer than the
    // run's publishing): it holds the first while 32 wait in the buffer, and the other
    // 60 - 33 = 27 are dropped as undeliverable, from node 0. Node 1 gets all 60 all the
    // same: the message is delivered (the tracer's DeliverMessage) before the send.
    let (drops, delivered) = undeliverable(60, US, S);
    assert_eq!(drops, vec![((1, 0), 27)]);
    assert_eq!(delivered, 60);
    // An application that only reads runs whenever the loop waits for the next RPC
    // (readied into the loop's `runnext`): with RPCs 1 ms apart, after each; nothing is
    // lost.
    assert_eq!(undeliverable(60, MS, 0), (vec![], 60));
    // But the loop takes RPCs from a non-empty channel without waiting, and the
    // application waits in the run queue meanwhile: a burst loses copies even so.
    assert!(!undeliverable(60, US, 0).0.is_empty());
}

#[test]
fn the_event_loop_computes_each_copy_s_content_id() {
    // pubsub.go:handleIncomingRPC → shouldPush computes the copy's id in the loop: node 0
    // computes its publication's id (2000 bytes at 1 ms per kB: 100-102 ms, the host's
    // one core), the copy reaches node 1 at 112 ms, its reader takes 10 µs and its loop
    // 100 µs for the RPC and 2 ms for the id: delivered 4.11 ms after 110.
    let c = config(
        2,
        "floodsub",
        10 * MS,
        2 * S,
        1,
        json!({"cpu": {
            "nodes_per_host": 2, "cores": 1, "time_slice_ns": 100 * MS,
            "per_rpc_received_ns": 10 * US, "per_rpc_loop_ns": 100 * US,
            "per_kb_message_id_ns": MS, "event_loop": true,
        }}),
    );
    let mut sim = Simulation::new(&c, &[(0, 1)], &messages(0, 100 * MS, 0, 1, 2000)).unwrap();
    sim.run();
    assert_eq!(sorted_delivery_times(&sim), vec![114_110 * US]);
}
