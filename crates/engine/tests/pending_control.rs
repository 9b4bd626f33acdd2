//! Where a node's pending control goes. go-libp2p-pubsub v0.17.0 sends a peer's pending
//! gossip (the IHAVE a heartbeat queued for it) and GRAFT/PRUNE kept from a dropped RPC
//! as an RPC of their own, just before the RPC that finds them (`gossipsub.go:sendRPC`,
//! "Any pending control messages?"); the v2.0 fork (ppopth/go-libp2p-pubsub@cfecb8a,
//! `sendRPC`) piggybacks them on that RPC.
//!
//! Seen in the receiver's byte counts: an RPC's framing (its length prefix and the
//! control field's header) is counted with the first kind it carries, in the order
//! payload, subscribe, GRAFT, PRUNE, IHAVE (as the testbed's tracer counts go's RPCs). An
//! IHAVE in an RPC of its own carries its own framing; beside a PRUNE, the PRUNE does.

mod common;
use common::*;

use gossiplab_engine::rpc::{Control, Kind};
use gossiplab_engine::Simulation;
use serde_json::json;

/// Node 0 dialed 4 leaves (10 ms links); D = 1, D_hi = 2, and D_lo = 0 so no heartbeat
/// grafts. At 3 s node 0 publishes a 2,000 B message to its empty mesh and leaves 1, 2
/// and 3 GRAFT it (peers it dialed: accepted past D_hi, `handleGraft`); its next
/// heartbeat trims the mesh to one of them, PRUNEs the two others and gossips the
/// message to every leaf outside the mesh. Returns the run and the pruned leaves.
fn trimmed_hub(version: &str) -> (Simulation, Vec<u32>) {
    let patch = json!({"protocol": {
        "version": version, "D": 1, "D_lo": 0, "D_hi": 2, "D_out": 0, "D_score": 0,
        "D_announce": 0
    }});
    let c = config(5, "gossipsub", 10 * MS, 6 * S, 1, patch);
    let mut sim = Simulation::new(&c, &star(4), &messages(0, 3 * S, 0, 1, 2000)).unwrap();
    sim.run_until(3 * S);
    for leaf in 1..=3 {
        let graft = Control {
            graft: vec![0],
            ..Control::default()
        };
        sim.inject(leaf, 0, graft);
    }
    sim.run_until(3 * S + 15 * MS);
    assert_eq!(
        sim.mesh_peers(0, 0),
        vec![1, 2, 3],
        "all three grafts taken"
    );
    sim.run();
    let kept = sim.mesh_peers(0, 0);
    assert_eq!(kept.len(), 1, "trimmed to D");
    let pruned: Vec<u32> = (1..=3).filter(|leaf| !kept.contains(leaf)).collect();
    (sim, pruned)
}

fn ihave_received(sim: &Simulation, node: u32) -> (u64, u64) {
    let t = &sim.traffic(node)[Kind::Ihave as usize];
    (t.msgs_recv, t.bytes_recv)
}

#[test]
fn go_sends_the_ihave_of_a_peer_it_prunes_in_an_rpc_of_its_own() {
    // Leaf 4 is never in the mesh: it gets the heartbeats' IHAVEs alone. A pruned leaf
    // gets the same IHAVEs, the first in the heartbeat that prunes it: go v0.17.0 sends
    // that IHAVE first, as its own RPC, then the PRUNE, so the IHAVE bytes are the same.
    let (sim, pruned) = trimmed_hub("1.2");
    assert_eq!(pruned.len(), 2);
    let alone = ihave_received(&sim, 4);
    assert!(alone.0 > 0, "the message was gossiped");
    for leaf in pruned {
        assert!(sim.traffic(leaf)[Kind::Prune as usize].msgs_recv > 0);
        assert_eq!(ihave_received(&sim, leaf), alone, "leaf {leaf}");
    }
}

#[test]
fn the_v2_fork_sends_the_ihave_beside_the_prune() {
    // The fork piggybacks the gossip on the PRUNE's RPC: the same IHAVE ids, but that
    // RPC's framing counts with the PRUNE.
    let (sim, pruned) = trimmed_hub("2.0");
    let alone = ihave_received(&sim, 4);
    for leaf in pruned {
        let (msgs, bytes) = ihave_received(&sim, leaf);
        assert_eq!(msgs, alone.0, "leaf {leaf}: the same IHAVE ids");
        assert!(bytes < alone.1, "leaf {leaf}: {bytes} against {}", alone.1);
    }
}

/// Node 0 (100 kbit/s uplink, no transport buffer, an outbound queue of 1) with leaves 1
/// and 2 in its mesh publishes 50 kB at 3 s: each copy takes 4 s to write. Behind leaf
/// 1's copy an IDONTWANT fills the queue, and the PRUNE node 0 then sends leaf 1 is
/// dropped and kept for a retry (`doDropRPC` → `pushControl`). No heartbeat comes before
/// the end (it would flush the retry in an RPC of its own, `flush`). At 12 s, the uplink
/// idle, node 0 sends both leaves the same IHAVE.
fn retried_prune(version: &str) -> Simulation {
    let patch = json!({
        "network": {"upload_bps": [100_000u64, 0, 0], "send_buffer_bytes": 0},
        "protocol": {
            "version": version, "D": 2, "D_lo": 0, "D_out": 0, "D_score": 0,
            "D_announce": 0, "peer_outbound_queue": 1, "heartbeat_initial_delay_ns": 60 * S
        }
    });
    let c = config(3, "gossipsub", 10 * MS, 14 * S, 1, patch);
    let mut sim = Simulation::new(&c, &star(2), &messages(0, 3 * S, 0, 1, 50_000)).unwrap();
    sim.run_until(3 * S - MS);
    sim.graft_now(0, 1, 0);
    sim.graft_now(0, 2, 0);
    sim.run_until(3 * S + MS);
    let filler = Control {
        idontwant: vec![7],
        ..Control::default()
    };
    sim.inject(0, 1, filler);
    sim.prune_now(0, 1, 0);
    let prunes_dropped: u64 = sim
        .output()
        .drops
        .iter()
        .filter(|(k, _)| k.reason == "outbound-queue-full" && k.kind == Kind::Prune as u8)
        .map(|(_, count)| count)
        .sum();
    assert_eq!(prunes_dropped, 1, "the queue was full");
    sim.run_until(12 * S);
    assert_eq!(
        sim.traffic(1)[Kind::Prune as usize].msgs_recv,
        0,
        "kept, not sent"
    );
    for leaf in [1, 2] {
        let ihave = Control {
            ihave: vec![(0, vec![0])],
            ..Control::default()
        };
        sim.inject(0, leaf, ihave);
    }
    sim.run();
    sim
}

#[test]
fn go_retries_a_dropped_prune_in_an_rpc_of_its_own_before_the_next_one() {
    let sim = retried_prune("1.2");
    assert_eq!(sim.traffic(1)[Kind::Prune as usize].msgs_recv, 1, "retried");
    assert_eq!(ihave_received(&sim, 1), ihave_received(&sim, 2));
}

#[test]
fn the_v2_fork_retries_a_dropped_prune_on_the_next_rpc() {
    let sim = retried_prune("2.0");
    assert_eq!(sim.traffic(1)[Kind::Prune as usize].msgs_recv, 1, "retried");
    let (with_prune, alone) = (ihave_received(&sim, 1), ihave_received(&sim, 2));
    assert_eq!(with_prune.0, alone.0);
    assert!(with_prune.1 < alone.1, "{with_prune:?} against {alone:?}");
}
