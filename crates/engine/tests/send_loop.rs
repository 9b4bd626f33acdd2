//! yamux's send side with the event loop (`cpu.event_loop`, `crates/engine/src/
//! transport.rs`, `SendLoop`): the writer goroutine's `Stream.Write` only copies an RPC's
//! frames onto the connection's 64-slot `sendCh` (go-yamux v5.1.0 `session.go:sendMsg`)
//! and the connection's `sendLoop` pays the write (Noise, the syscall). Hand-computed
//! timelines from go's code.

mod common;
use common::*;

use gossiplab_engine::Simulation;
use serde_json::json;

/// Node 0 publishes `count` 100-byte floodsub messages `gap` apart from `start` to node 2
/// over a 10 ms link. Hosts of two nodes on one core (slices of 100 ms), nodes 1 and 3
/// idle, so each end has a time-sliced core to itself. Writing an RPC costs `sent`
/// (`per_rpc_sent`); nothing else costs CPU. Returns the run.
fn run(sent: u64, start: u64, gap: u64, count: u32, end: u64) -> Simulation {
    let costs = json!({"cpu": {
        "nodes_per_host": 2, "cores": 1, "time_slice_ns": 100 * MS,
        "per_rpc_sent_ns": sent, "event_loop": true,
    }});
    let c = config(4, "floodsub", 10 * MS, end, 1, costs);
    let schedule = messages(0, start, gap, count, 100);
    let mut sim = Simulation::new(&c, &[(0, 2)], &schedule).unwrap();
    sim.run();
    sim
}

/// The messages node 2 delivered, in order.
fn delivered_messages(sim: &Simulation) -> Vec<u32> {
    let d = &sim.output().deliveries;
    let mut msgs: Vec<u32> = (0..d.msg.len())
        .filter(|&i| d.node[i] == 2)
        .map(|i| d.msg[i])
        .collect();
    msgs.sort_unstable();
    msgs
}

#[test]
fn a_stalled_send_loop_holds_ninety_eight_rpcs_before_the_first_drop() {
    // Writing an RPC takes the sendLoop 1 s of CPU; one message a millisecond from 5 s
    // (the connection's first RPCs are long written). Message 0 finds the writer idle: its
    // Write hands the frame straight to the sendLoop parked on `sendCh`
    // (runtime/chan.go:chansend → send: no slot used), which writes it 5-6 s, preempted
    // every 10 ms (forcePreemptNS). In each gap the writer (nothing to pay) moves what
    // its queue holds onto `sendCh`. What the peer's side holds once `sendCh` is full:
    //   1  in the sendLoop's hand (message 0, taken off the channel),
    //   64 in `sendCh` (session.go:newSession, make(chan []byte, 64); one frame each),
    //   1  in the writer's hand: `rpc_queue.go:Pop` took it off the queue, and its
    //      Write is parked in `sendMsg` on the full channel,
    //   32 in the writer's queue (`peer_outbound_queue`; rpc_queue.go:Push with
    //      block = false returns ErrQueueFull at 32 → gossipsub.go:doDropRPC).
    // 98: message 98 (the 99th) is the first dropped, at 5.098 s, long before the
    // sendLoop frees a slot (6 s); every later one too. Then one RPC a second leaves,
    // message k at 6 + k s: 0..97 have arrived by 103.01 s.
    // Without the sendLoop the writer pays the 1 s and holds 1 + 32: 167 dropped.
    let sim = run(S, 5 * S, MS, 200, 105 * S);
    assert_eq!(drops(&sim, "outbound-queue-full"), 200 - 98);
    assert_eq!(delivered_messages(&sim), (0..98).collect::<Vec<u32>>());
}

#[test]
fn the_writer_pays_nothing_and_the_send_loop_s_write_delays_departure() {
    // Writing an RPC takes 1 ms of the sendLoop; 40 messages 50 µs apart from 100 ms.
    // Message 0: the idle writer runs at once (nothing to pay), hands it to the idle
    // sendLoop (runnext), which writes it 100-101 ms. Messages 1..20 arrive meanwhile
    // (the one at 101.000 before the core's tick: network input and publications come
    // first): the writer is runnable behind the sendLoop, holding message 1, 2..20 in
    // its queue. At 101 the sendLoop has nothing on `sendCh` and waits; the writer runs
    // in no time: message 1 straight to the sendLoop, 2..20 into `sendCh`, and waits.
    // The sendLoop writes 1..10 101-111 ms, in the writer's turn (runnext inherits it,
    // proc.go:runqget); preempted at 111, it goes behind the writer, readied by message
    // 21 at 101.05, which moves 21..39 onto `sendCh`; the sendLoop goes on. So message k
    // leaves at 100 + (k + 1) ms and is delivered 10 ms later; none is dropped.
    // Without the sendLoop the writer pays the 1 ms per RPC: it holds message 0 until
    // 101 ms, then 1; 2..33 fill its queue by 101.65 ms and 34..39 come before it takes
    // 2 at 102 ms: 6 dropped.
    let sim = run(MS, 100 * MS, 50 * US, 40, 2 * S);
    assert_eq!(drops(&sim, "outbound-queue-full"), 0);
    let expected: Vec<u64> = (0..40).map(|k| 110 * MS + (k + 1) * MS).collect();
    assert_eq!(sorted_delivery_times(&sim), expected);
}
