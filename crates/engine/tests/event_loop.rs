//! pubsub's event loop (`cpu.event_loop`, `crates/engine/src/event_loop.rs`): one
//! goroutine handles every incoming RPC (`pubsub.go:processLoop`), fed by the readers
//! through a 32-slot channel (`pubsub.go:NewPubSub`, `incoming`) on which a reader
//! blocks when it is full (`comm.go:handleNewStream`). Hand-computed timelines.

mod common;
use common::*;

use gossiplab_engine::error::EngineError;
use gossiplab_engine::wire::WireSizes;
use gossiplab_engine::Simulation;
use serde_json::json;

/// Node 0 publishes `count` 100-byte floodsub messages 1 µs apart from 100 ms to node 1
/// over a 10 ms link; both share a host of one core (slices of 100 ms). Reading an RPC
/// costs 10 µs, the event loop's handling 100 µs; validating, sending and signing are
/// free. Node 1's delivery times, after the first copy's arrival at 110 ms (the others
/// follow 1 µs apart, each before the reader has read the one before).
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
    // 100 RPCs arrive from 110 ms. The reader reads them 10 µs each; the first goes
    // straight to the idle loop (chansend hands it to the waiting receiver), which
    // becomes runnable behind the reader; 2..33 fill the 32 slots; the reader parks
    // with 34 at 340 µs (runtime/chan.go:chansend). The loop handles 1..34 (each take
    // lets the parked RPC in; the reader, runnable again, waits for the loop's turn to
    // end or the loop to run dry): 440 .. 3,740 µs. The reader then reads 35 (taken at
    // once) and 36..67 into the slots, parks with 68 at 4,080; the loop handles 35..68,
    // 4,180 .. 7,480. The reader reads 69..100 (7,490 .. 7,800), the loop handles them
    // 7,900 .. 11,000. A channel that never fills would let the reader read all 100
    // first and deliver from 1,100 µs.
    let expected: Vec<u64> = (1..=100u64)
        .map(|k| match k {
            1..=34 => 340 + k * 100,
            35..=68 => 4_080 + (k - 34) * 100,
            _ => 7_800 + (k - 68) * 100,
        })
        .map(|t| t * US)
        .collect();
    assert_eq!(deliveries(true, 100), expected);
}

#[test]
fn below_the_channel_s_size_the_reader_reads_everything_first() {
    // 20 RPCs: 1 to the loop, 2..20 into the slots by 200 µs, no reader parks; the loop
    // runs after the reader: 300, 400, .. 2,200 µs.
    let expected: Vec<u64> = (1..=20).map(|k| (200 + k * 100) * US).collect();
    assert_eq!(deliveries(true, 20), expected);
}

#[test]
fn the_event_loop_needs_a_time_sliced_host() {
    let mut c = config(2, "floodsub", 10 * MS, 2 * S, 1, json!({}));
    c.cpu.event_loop = true; // one node per host of one core: not time-sliced
    let err = Simulation::new(&c, &[(0, 1)], &messages(0, 100 * MS, 0, 1, 100))
        .err()
        .expect("refused");
    match err {
        EngineError::Config { field, message } => {
            assert_eq!(field, "cpu.event_loop");
            assert!(message.contains("nodes_per_host"), "{message}");
        }
        other => panic!("{other}"),
    }
}

/// Node 0 publishes 400 1000-byte floodsub messages `gap` apart from 100 ms to node 2
/// (10 ms link, reading 10 µs per RPC, sending free), whose event loop takes `loop_ns`
/// per RPC. Node 2's deliveries, the sender's outbound-queue drops, and
/// one RPC's bytes on the wire.
fn window_run(loop_ns: u64, gap: u64) -> (usize, u64, u64) {
    let costs = json!({"cpu": {
        "nodes_per_host": 2, "cores": 1, "time_slice_ns": 100 * MS,
        "per_rpc_received_ns": 10 * US, "per_rpc_loop_ns": loop_ns, "event_loop": true,
    }});
    // Node 0 to node 2: hosts of two nodes, nodes 1 and 3 idle, so each end has a
    // time-sliced core to itself.
    let c = config(4, "floodsub", 10 * MS, 2 * S, 1, costs);
    let schedule = messages(0, 100 * MS, gap, 400, 1000);
    let mut sim = Simulation::new(&c, &[(0, 2)], &schedule).unwrap();
    sim.run();
    let rpc = WireSizes::frame(WireSizes::new(&c.protocol).publish_field(1000));
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

/// Node 0 publishes `count` 100-byte floodsub messages 1 µs apart from 100 ms to node 1
/// on the same host of one core: reading 10 µs per RPC, validating 20 µs per copy, the
/// event loop 100 µs per RPC and 50 µs per message it publishes. Node 1's delivery times
/// from 110 ms.
fn validated_deliveries(event_loop: bool, count: u32) -> Vec<u64> {
    deliveries_at_costs(
        json!({"cpu": {
            "nodes_per_host": 2, "cores": 1, "time_slice_ns": 100 * MS,
            "per_rpc_received_ns": 10 * US, "per_copy_ns": 20 * US,
            "per_rpc_loop_ns": 100 * US, "per_publish_loop_ns": 50 * US,
            "event_loop": event_loop,
        }}),
        count,
    )
}

#[test]
fn a_validated_copy_is_delivered_by_the_event_loop() {
    // pubsub.go:processLoop → publishMessage: the worker hands the copy back to the
    // loop through sendMsg (validation.go:sendMsgBlocking). The reader reads 0-10 and
    // 10-20 µs (RPC 1 goes to the idle loop, RPC 2 into `incoming`); the loop handles
    // both 20-120 and 120-220, each pushing its copy to validation; the worker validates
    // 220-240 (hands copy 1 to the idle loop) and 240-260; the loop publishes copy 1
    // 260-310 and copy 2 310-360 (per_publish_loop). Without the loop the reader reads
    // 0-10 and 10-20 and each copy is delivered when validated: 20-40 and 40-60.
    assert_eq!(validated_deliveries(true, 2), [310 * US, 360 * US]);
    assert_eq!(validated_deliveries(false, 2), [40 * US, 60 * US]);
}

#[test]
fn a_message_with_nothing_to_validate_is_published_while_its_rpc_is_handled() {
    // Unsigned, no validator: validation.go:Push returns true and pubsub.go:pushMsg
    // calls publishMessage inside handleIncomingRPC, so the loop's piece for the RPC
    // costs 100 + 50 µs. 20 RPCs: the reader reads them all by 200 µs (none parks), then
    // the loop handles them: 350, 500, .. 3,200 µs.
    let at = deliveries_at_costs(
        json!({"cpu": {
            "nodes_per_host": 2, "cores": 1, "time_slice_ns": 100 * MS,
            "per_rpc_received_ns": 10 * US, "per_rpc_loop_ns": 100 * US,
            "per_publish_loop_ns": 50 * US, "event_loop": true,
        }}),
        20,
    );
    let expected: Vec<u64> = (1..=20).map(|k| (200 + k * 150) * US).collect();
    assert_eq!(at, expected);
}

/// When node 1 handles the copy of node 0's message that node 3 forwards to it.
/// Node 0 (host {0, 1}) sends it to nodes 1 and 3; node 1 forwards it to node 3, whose
/// host {2, 3} node 2 keeps busy (a 30 ms signature) when node 3's first copy arrives.
/// Reading 10 µs per RPC, the loop 100 µs per RPC and 50 µs per publication,
/// validating 20 µs, signing 30 ms, sending free.
fn forwarded_receipt() -> i64 {
    let costs = json!({"cpu": {
        "nodes_per_host": 2, "cores": 1, "time_slice_ns": 100 * MS,
        "per_rpc_received_ns": 10 * US, "per_copy_ns": 20 * US,
        "per_rpc_loop_ns": 100 * US, "per_publish_loop_ns": 50 * US,
        "per_publish_ns": 30 * MS, "event_loop": true,
    }});
    let c = config(4, "floodsub", 10 * MS, 2 * S, 1, costs);
    let schedule = then(
        messages(0, 100 * MS, 0, 1, 100),
        messages(2, 135 * MS, 0, 1, 100),
    );
    let mut sim = Simulation::new(&c, &[(0, 1), (0, 3), (1, 3)], &schedule).unwrap();
    sim.run();
    let r = sim.output().receipts.as_ref().expect("receipts");
    let i = (0..r.msg.len())
        .find(|&i| r.msg[i] == 0 && r.node[i] == 1 && r.from_node[i] == 3)
        .expect("node 3 forwards to node 1");
    r.t_ns[i] - 100 * MS as i64
}

#[test]
fn a_copy_that_comes_once_a_worker_marked_the_message_seen_is_not_validated() {
    // validation.go:validate marks the message seen once its signature is checked;
    // pubsub.go:handleIncomingRPC (shouldPush → seenMessage) then drops a copy without
    // validating it, even before the loop has published the message. Node 0 signs
    // 0-30 ms and sends; both copies arrive at 40 ms. Node 1 (its host idle): reads
    // 40.000-40.010, loop 40.010-40.110, validates -40.130, publishes -40.180 and
    // forwards to node 3, where it arrives at 50.180. Node 3's host runs node 2's
    // signature 35-65 ms, so node 3's reader waits; its first copy woke it at 40 (the
    // netpoll's last poll), so the second waits for the netpoller. From 65: node 3's
    // reader reads the first copy 65.000-65.010; sysmon (10 ms since the last poll)
    // lets the second reader in behind the loop. Loop 65.010-65.110 (the copy goes to
    // validation); second reader 65.110-65.120 (its copy to the idle loop); validation
    // 65.120-65.140: marked seen, handed to the loop (busy: buffered); loop 65.140-
    // 65.240: the second copy, marked seen, dropped; loop publishes 65.240-65.290 and
    // forwards to node 1 (its writer sends at once), which reads it at 75.290 and
    // handles it at 75.400 ms. Validating the second copy too (20 µs, before the
    // writer's turn) would make it 75.420.
    assert_eq!(forwarded_receipt(), 75_400 * US as i64);
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

/// When node 3 delivers node 0's second message, in the triangle of
/// `forwarded_receipt` with 15 ms signature checks: node 2 signs two messages from
/// 135 ms, node 0 its second message from 165 ms.
fn second_delivery_at_node_3() -> i64 {
    let costs = json!({"cpu": {
        "nodes_per_host": 2, "cores": 1, "time_slice_ns": 100 * MS,
        "per_rpc_received_ns": 10 * US, "per_copy_ns": 15 * MS,
        "per_rpc_loop_ns": 100 * US, "per_publish_loop_ns": 50 * US,
        "per_publish_ns": 30 * MS, "event_loop": true,
    }});
    let c = config(4, "floodsub", 10 * MS, 2 * S, 1, costs);
    let schedule = then(
        then(
            messages(0, 100 * MS, 0, 1, 100),
            messages(2, 135 * MS, 0, 2, 100),
        ),
        messages(0, 165 * MS, 0, 1, 100),
    );
    let mut sim = Simulation::new(&c, &[(0, 1), (0, 3), (1, 3)], &schedule).unwrap();
    sim.run();
    let d = &sim.output().deliveries;
    let i = (0..d.msg.len())
        .find(|&i| d.msg[i] == 3 && d.node[i] == 3)
        .expect("node 3 delivers it");
    d.t_ns[i] - 100 * MS as i64
}

#[test]
fn a_copy_a_worker_validates_once_the_message_is_marked_seen_goes_no_further() {
    // validation.go:validate: a copy validated after markSeen is a duplicate and is not
    // sent on sendMsg, so the loop never publishes it. Node 3's host runs node 2's two
    // signatures 135-195 ms; node 3's first copy (from 0) came at 140, node 1's at
    // 165.160 (node 1: 140-155.160). From 195: reader 0 reads it 195.000-195.010
    // (sysmon lets reader 1 in); loop 195.010-195.110 (to validation); reader 1
    // 195.110-195.120 (to the idle loop); the worker validates 195.120-205.120, its
    // 10 ms turn ends (sysmon lets node 0's second message in: it came at 205);
    // loop 205.120-205.220 (the second copy: not marked yet, to validation); reader 0
    // 205.220-205.230 (the second message, to the loop); the worker ends the first copy
    // 205.230-210.230 (marked, buffered in sendMsg) and runs the second 210.230-215.230;
    // loop: the second message 215.230-215.330 (to validation), publishes the first
    // 215.330-215.380 (forward queued); the worker ends the second copy 215.380-
    // 225.380: a duplicate; the writer sends; the worker validates the second message
    // 225.380-235.380, its turn ends (sysmon lets node 1's copy of it in, 230.160);
    // reader 1 235.380-235.390; the worker ends it 235.390-240.390 (marked); loop: node
    // 1's copy 240.390-240.490 (marked: dropped), publishes 240.490-240.540. Publishing
    // the duplicate too (50 µs after the writer) would make it 240.590.
    assert_eq!(second_delivery_at_node_3(), 140_540 * US as i64);
}
