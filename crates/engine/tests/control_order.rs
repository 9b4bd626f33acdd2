//! The order in which a node handles the control parts of one RPC, as go-libp2p-pubsub
//! v0.17.0 (`gossipsub.go:HandleRPC`: IHAVE, IWANT, GRAFT, PRUNE, IDONTWANT) and the
//! v2.0 fork (ppopth/go-libp2p-pubsub@cfecb8a `HandleRPC`: IHAVE, IWANT, INEED, GRAFT,
//! IANNOUNCE, PRUNE, IDONTWANT) do. Each case is staged with D_lo = 0, so no heartbeat
//! ever grafts and meshes hold only what the test grafts; the message then sits in its
//! publisher's message cache and reaches others only through the injected control.

mod common;
use common::*;

use gossiplab_engine::rpc::{Control, Kind};
use gossiplab_engine::Simulation;
use serde_json::json;

/// Two nodes 10 ms apart with empty meshes; node 0 publishes message 0 (2,000 B) at 3 s,
/// and the run stops shortly after.
fn unmeshed_pair(version: &str) -> Simulation {
    let patch = json!({"protocol": {"version": version, "D": 0, "D_lo": 0, "D_out": 0, "D_score": 0, "D_announce": 0}});
    let c = config(2, "gossipsub", 10 * MS, 20 * S, 1, patch);
    let mut sim = Simulation::new(&c, &line(2), &messages(0, 3 * S, 0, 1, 2000)).unwrap();
    sim.run_until(3 * S + 100 * MS);
    assert!(sim.mesh_peers(0, 0).is_empty() && sim.mesh_peers(1, 0).is_empty());
    sim
}

fn payloads_sent(sim: &Simulation, node: u32) -> u64 {
    sim.traffic(node)[Kind::Payload as usize].msgs_sent
}

#[test]
fn an_iwant_beside_an_idontwant_for_the_same_message_is_served() {
    // go handles IWANT before IDONTWANT (`HandleRPC`), so the IWANT of the same RPC is
    // answered; the IDONTWANT is remembered and stops the next IWANT (`handleIWant`
    // skips `gs.unwanted`, v0.13.0 #591).
    let mut sim = unmeshed_pair("1.2");
    assert_eq!(
        payloads_sent(&sim, 0),
        0,
        "an empty mesh: nothing forwarded"
    );
    let both = Control {
        iwant: vec![0],
        idontwant: vec![0],
        ..Control::default()
    };
    let t = sim.now();
    sim.inject(1, 0, both);
    sim.run_until(3 * S + 200 * MS);
    assert_eq!(payloads_sent(&sim, 0), 1, "served: IWANT comes first");
    let d = &sim.output().deliveries;
    assert_eq!(d.len(), 1, "node 1 has the message");
    assert_eq!(d.t_ns[0] as u64, t + 20 * MS, "IWANT over, message back");
    let again = Control {
        iwant: vec![0],
        ..Control::default()
    };
    sim.inject(1, 0, again);
    sim.run_until(3 * S + 300 * MS);
    assert_eq!(
        payloads_sent(&sim, 0),
        1,
        "the remembered IDONTWANT holds it back"
    );
    assert_eq!(drops(&sim, "saved-by-idontwant"), 1);
}

#[test]
fn an_iannounce_beside_a_graft_comes_from_a_mesh_peer() {
    // The fork handles GRAFT before IANNOUNCE, and accepts IANNOUNCE only from mesh (or
    // direct) peers (`handleIAnnounce`): the GRAFT makes node 0 a mesh peer of node 1,
    // so its IANNOUNCE of the same RPC is taken, node 1 asks with INEED and node 0
    // answers from its message cache (`handleINeed`).
    let mut sim = unmeshed_pair("2.0");
    let graft_and_announce = Control {
        graft: vec![0],
        iannounce: vec![(0, 0)],
        ..Control::default()
    };
    let t = sim.now();
    sim.inject(0, 1, graft_and_announce);
    sim.run_until(3 * S + 200 * MS);
    assert_eq!(sim.mesh_peers(1, 0), [0]);
    assert_eq!(sim.traffic(1)[Kind::Ineed as usize].msgs_sent, 1);
    // GRAFT+IANNOUNCE over, INEED back, the message over: three 10 ms hops.
    let d = &sim.output().deliveries;
    assert_eq!(d.len(), 1);
    assert_eq!(d.t_ns[0] as u64, t + 30 * MS);
}

#[test]
fn an_iannounce_beside_a_prune_is_still_taken() {
    // IANNOUNCE before PRUNE in the fork: the pruning peer is still in the mesh when its
    // announcement is read.
    let mut sim = unmeshed_pair("2.0");
    sim.graft_now(0, 1, 0);
    sim.run_until(3 * S + 150 * MS);
    assert_eq!(sim.mesh_peers(1, 0), [0], "node 1 accepted the GRAFT");
    let prune_and_announce = Control {
        prune: vec![gossiplab_engine::rpc::Prune::new(0, 60)],
        iannounce: vec![(0, 0)],
        ..Control::default()
    };
    sim.inject(0, 1, prune_and_announce);
    sim.run_until(3 * S + 300 * MS);
    assert!(sim.mesh_peers(1, 0).is_empty(), "the PRUNE took effect");
    assert_eq!(sim.traffic(1)[Kind::Ineed as usize].msgs_sent, 1);
    assert_eq!(sim.output().deliveries.len(), 1);
}

#[test]
fn an_iwant_reply_above_one_mib_goes_out_in_parts() {
    // go v0.17.0 `sendRPC` splits an RPC above 1 MiB (`pubsub.go:split`): messages packed
    // in order up to the limit, so an IWANT reply of three 500,000 B messages is two
    // RPCs, {0, 1} (about 1,000,100 B) and {2}, and node 1 has the first two once the
    // first part is read. Node 0's uplink is 8 Mbit/s (1 B/us), so the third arrives
    // one part's serialization (about 500 ms) later; unsplit, all three would arrive
    // together. Version 1.0 (v0.1.1) does not split.
    for (version, gap_ms) in [("1.1", 490..=520), ("1.0", 0..=0)] {
        let patch = json!({"protocol": {"version": version, "D": 0, "D_lo": 0, "D_out": 0,
            "D_score": 0, "D_announce": 0},
            "network": {"upload_bps": [8_000_000, 0]}});
        let c = config(2, "gossipsub", 10 * MS, 40 * S, 1, patch);
        let schedule = messages(0, 3 * S, 0, 3, 500_000);
        let mut sim = Simulation::new(&c, &line(2), &schedule).unwrap();
        sim.run_until(3 * S + 100 * MS);
        let want = Control {
            iwant: vec![0, 1, 2],
            ..Control::default()
        };
        sim.inject(1, 0, want);
        sim.run();
        let d = &sim.output().deliveries;
        let at = |m: u32| {
            (0..d.len())
                .find(|&i| d.msg[i] == m)
                .map(|i| d.t_ns[i] as u64)
        };
        let (t0, t1, t2) = (at(0).unwrap(), at(1).unwrap(), at(2).unwrap());
        assert_eq!(t0, t1, "version {version}: the first two come together");
        let gap = (t2 - t0) / MS;
        assert!(
            gap_ms.contains(&gap),
            "version {version}: third {gap} ms later"
        );
    }
}
