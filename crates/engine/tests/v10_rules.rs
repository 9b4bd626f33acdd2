//! Gossipsub v1.0 as go-libp2p-pubsub v0.1.1 (2019, `/meshsub/1.0.0`, what the
//! Whiteblock testbed ran) does it; each expectation from v0.1.1's `gossipsub.go`.

mod common;
use common::*;

use gossiplab_engine::Simulation;
use serde_json::json;

const PAYLOAD: usize = 0;
const IHAVE: usize = 1;
const PRUNE: usize = 4;

/// Star of 16 leaves around a hub (node 0), latency 0, D 6, D_hi 12; `count` messages
/// of 1,000 B from the hub, one a second from 3.5 s.
fn star16(version: &str, d_lo: usize, count: u32, end: u64) -> Simulation {
    let patch = json!({"protocol": {"version": version, "D_lo": d_lo}});
    let c = config(17, "gossipsub", 0, end, 3, patch);
    let schedule = messages(0, 3 * S + 500 * MS, S, count, 1000);
    Simulation::new(&c, &star(16), &schedule).unwrap()
}

#[test]
fn version_1_0_leaves_regraft_next_heartbeat() {
    // v0.1.1: a leaf's mesh {hub} is below D_lo = 4, so at each of its heartbeats it
    // GRAFTs every topic peer not in its mesh (`heartbeat`, no backoff filter); the hub
    // accepts every GRAFT (`handleGraft`) and, with 16 > D_hi, prunes 16 - 6 = 10 at each
    // of its heartbeats (`len(peers) > GossipSubDhi`). PRUNE sets no backoff
    // (`handlePrune`), so the same happens every heartbeat: 10 heartbeats in [5 s, 15 s),
    // 100 PRUNEs. Under go v0.17.0 rules (1.1) the pruned leaves back off for 60 s and
    // the hub prunes nobody in that window.
    for (version, d_lo, expected) in [("1.0", 4, 100), ("1.1", 5, 0)] {
        let mut sim = star16(version, d_lo, 0, 20 * S);
        sim.run_until(5 * S);
        let before = sim.traffic(0)[PRUNE].msgs_sent;
        sim.run_until(15 * S);
        let pruned = sim.traffic(0)[PRUNE].msgs_sent - before;
        assert_eq!(pruned, expected, "version {version}");
    }
}

#[test]
fn version_1_0_held_gossip_rides_on_the_next_forward() {
    // H(0)-Y(1), 1 ms, D 1, D_lo 0: Y is pruned at 1 s and nobody grafts again, so
    // H's messages (one every 100 ms from 2 s) go nowhere and sit in its cache. At its
    // first heartbeat h after 2 s, H gossips to D = 1 random topic peer, Y, outside its
    // mesh; with no GRAFT or PRUNE for Y that heartbeat, v0.1.1 holds the IHAVE
    // (`emitGossip` -> `pushGossip`). Y grafts H at h; H's next message is forwarded to
    // Y, and `sendRPC` piggybacks the held IHAVE on it (`piggybackGossip`), well before
    // H's next heartbeat would flush it: Y hears of every message published up to h.
    let patch = json!({"protocol": {"version": "1.0", "D": 1, "D_lo": 0, "D_hi": 1,
        "D_out": 0, "D_score": 0}});
    let c = config(2, "gossipsub", MS, 10 * S, 1, patch);
    let schedule = messages(0, 2 * S, 100 * MS, 30, 1000);
    let mut sim = Simulation::new(&c, &line(2), &schedule).unwrap();
    sim.run_until(S);
    sim.prune_now(0, 1, 0);
    sim.run_until(2 * S);
    let ticks = sim.heartbeat_ticks(0);
    let mut t = 2 * S;
    while sim.heartbeat_ticks(0) == ticks {
        t += MS;
        sim.run_until(t);
    }
    assert!(sim.mesh_peers(0, 0).is_empty() && sim.mesh_peers(1, 0).is_empty());
    let h = sim.now();
    let announced = schedule.t_intended_ns.iter().filter(|&&p| p <= h).count() as u64;
    assert_eq!(sim.traffic(1)[IHAVE].msgs_recv, 0, "held, not sent");
    sim.graft_now(1, 0, 0);
    sim.run_until(h + 500 * MS);
    assert_eq!(sim.traffic(1)[IHAVE].msgs_recv, announced);
    assert_eq!(
        sim.traffic(1)[IHAVE].entries_recv,
        1,
        "one IHAVE entry, on the forward"
    );
    let forwards = sim.traffic(0)[PAYLOAD].msgs_sent;
    assert!(forwards >= 1, "H forwarded to Y after the GRAFT");
}

#[test]
fn version_1_0_gossips_to_d_random_topic_peers_minus_the_mesh() {
    // v0.1.1 `emitGossip`: `getPeers(topic, GossipSubD, all)` then skip mesh peers. At
    // each hub heartbeat the mesh is the 6 kept of 16, so the IHAVE targets are the
    // non-mesh ones among 6 drawn from 16: hypergeometric, mean 6 x 10/16 = 3.75,
    // variance 6 (10/16)(6/16)(10/15) = 0.9375. One message a second and history_gossip
    // 3 put 3 ids in each IHAVE. Over the 100 hub heartbeats in [10 s, 110 s): targets
    // 375 +- 4 x 9.68, ids 3x that. (go v0.17.0's rule, D_lazy non-mesh peers, would
    // give 6 targets a heartbeat: 1,800 ids.)
    let mut sim = star16("1.0", 4, 120, 115 * S);
    sim.run_until(10 * S);
    let before = sim.traffic(0)[IHAVE].msgs_sent;
    let entries_before = sim.traffic(0)[IHAVE].entries_sent;
    sim.run_until(110 * S);
    let ids = sim.traffic(0)[IHAVE].msgs_sent - before;
    assert!((3 * 337..=3 * 413).contains(&ids), "{ids} IHAVE ids");
    // One topic: each IHAVE is one protobuf entry holding the 3 ids.
    let entries = sim.traffic(0)[IHAVE].entries_sent - entries_before;
    assert_eq!(ids, 3 * entries);
}
