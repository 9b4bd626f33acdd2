//! Leaving and joining a topic during a run, as go-libp2p-pubsub's `Leave` and `Join`
//! (gossipsub.go) and `handleRemoveSubscription`/`handleAddSubscription` (pubsub.go) do
//! it. Expected outcomes come from that code, not from running the model.

mod common;
use common::*;

use gossiplab_engine::rpc::Kind;
use gossiplab_engine::{Schedule, Simulation};
use serde_json::{json, Value};

fn changes(list: &[(u32, u64, bool)]) -> Value {
    let changes: Vec<Value> = list
        .iter()
        .map(|&(node, at, subscribe)| {
            json!({"node": node, "topic": 0, "at_ns": at, "subscribe": subscribe})
        })
        .collect();
    json!({"subscription_changes": changes})
}

fn delivered_to(sim: &Simulation, node: u32) -> Vec<u32> {
    let d = &sim.output().deliveries;
    (0..d.len())
        .filter(|&i| d.node[i] == node)
        .map(|i| d.msg[i])
        .collect()
}

#[test]
fn leaving_prunes_the_mesh_with_the_unsubscribe_backoff_and_stops_deliveries() {
    // Four nodes, all connected; node 0 leaves at 5 s. One message a second from node 1.
    let c = config(
        4,
        "gossipsub",
        10 * MS,
        30 * S,
        2,
        changes(&[(0, 5 * S, false)]),
    );
    let schedule = messages(1, 2 * S, S, 20, 100);
    let mut sim = Simulation::new(&c, &full(4), &schedule).unwrap();
    sim.run_until(5 * S - 1);
    let peers = sim.mesh_peers(0, 0);
    assert!(!peers.is_empty());
    let prunes: Vec<u64> = (1..4)
        .map(|p| sim.traffic(p)[Kind::Prune as usize].msgs_recv)
        .collect();
    sim.run_until(5 * S + 50 * MS);
    assert!(sim.mesh_peers(0, 0).is_empty());
    for p in 1..4u32 {
        assert!(
            !sim.mesh_peers(p, 0).contains(&0),
            "node {p} still meshes with 0"
        );
        let got = sim.traffic(p)[Kind::Prune as usize].msgs_recv - prunes[p as usize - 1];
        assert_eq!(
            got,
            u64::from(peers.contains(&p)),
            "a PRUNE from 0 to each mesh peer"
        );
        // Node 0 backs off from its former mesh peers for the unsubscribe backoff (10 s).
        assert_eq!(sim.has_backoff_entry(0, p, 0), peers.contains(&p));
    }
    sim.run();
    // Messages 0..=2 were published at 2, 3 and 4 s; none after 5 s reaches node 0.
    let got = delivered_to(&sim, 0);
    assert_eq!(got, vec![0, 1, 2]);
    // Everyone else still gets everything.
    for p in 2..4 {
        assert_eq!(delivered_to(&sim, p).len(), 20);
    }
}

#[test]
fn a_node_that_rejoins_within_its_backoff_grafts_nobody_until_it_ends() {
    // Node 0 leaves at 5 s and rejoins at 7 s, while it backs off from its former mesh
    // peers (10 s): Join skips them, so its mesh stays empty for now...
    let c = config(
        4,
        "gossipsub",
        10 * MS,
        40 * S,
        2,
        changes(&[(0, 5 * S, false), (0, 7 * S, true)]),
    );
    let mut sim = Simulation::new(&c, &full(4), &messages(1, 2 * S, S, 30, 100)).unwrap();
    sim.run_until(5 * S - 1);
    let before = sim.mesh_peers(0, 0);
    sim.run_until(7 * S + 50 * MS);
    let left_out: Vec<u32> = sim.mesh_peers(0, 0);
    assert!(
        left_out.iter().all(|p| !before.contains(p)),
        "{left_out:?} vs {before:?}"
    );
    // ...and it delivers again: peers know it is back in the topic (gossip, then mesh).
    sim.run();
    let got = delivered_to(&sim, 0);
    assert!(got.contains(&29), "{got:?}");
    assert!(!sim.mesh_peers(0, 0).is_empty());
}

#[test]
fn joining_once_the_backoff_entries_are_gone_grafts_up_to_d_peers_at_once() {
    // Leave at 5 s: backoff entries until 15 s, which go sweeps only at every 15th
    // heartbeat once 2 s past expiry: at tick 30 (~30 s), not tick 15 (~15 s). Join
    // skips peers with an entry, so a rejoin at 20 s grafts nobody, one at 32 s GRAFTs
    // D peers (all 3 here) at once, without waiting for a heartbeat.
    let run = |rejoin: u64| {
        let patch = changes(&[(0, 5 * S, false), (0, rejoin, true)]);
        let c = config(4, "gossipsub", 10 * MS, 40 * S, 2, patch);
        let mut sim = Simulation::new(&c, &full(4), &Schedule::default()).unwrap();
        sim.run_until(rejoin + 30 * MS);
        sim.mesh_peers(0, 0)
    };
    assert_eq!(run(20 * S), Vec::<u32>::new());
    assert_eq!(run(32 * S), vec![1, 2, 3]);
}
