//! Peer exchange (gossipsub v1.1), staged on hand-built graphs. Expected outcomes come
//! from go-libp2p-pubsub's `gossipsub.go` (makePrune, handlePrune, pxConnect,
//! connector) and from the wire encoding worked out by hand, not from running the model.

mod common;
use common::*;

use gossiplab_engine::rpc::{Control, Kind};
use gossiplab_engine::{Schedule, Simulation};
use serde_json::{json, Value};

/// One-way latency of every link in these tests: a dial takes 3 round trips = 60 ms.
const LATENCY: u64 = 10 * MS;
const DIAL: u64 = 3 * 2 * LATENCY;

fn px(on: bool) -> Value {
    json!({"protocol": {"peer_exchange": on}})
}

fn connections(sim: &Simulation) -> Vec<(u64, u32, u32)> {
    let c = &sim.output().connections;
    (0..c.len())
        .map(|i| (c.t_ns[i] as u64, c.node[i], c.peer[i]))
        .collect()
}

fn prune_bytes_received(sim: &Simulation, node: u32) -> u64 {
    sim.traffic(node)[Kind::Prune as usize].bytes_recv
}

/// A hub (node 0) with `leaves` leaves that know only the hub; once meshes have formed
/// (the last event before 5 s), the hub prunes leaf 1. Returns the simulation `run_for`
/// later, when the PRUNE reached leaf 1, and the PRUNE bytes leaf 1 had received before.
fn hub_prunes_leaf_one(leaves: u32, patch: Value, run_for: u64) -> (Simulation, u64, u64) {
    hub_prunes_leaf_one_after(5 * S, leaves, patch, run_for)
}

fn hub_prunes_leaf_one_after(
    ready: u64,
    leaves: u32,
    patch: Value,
    run_for: u64,
) -> (Simulation, u64, u64) {
    let c = config(leaves + 1, "gossipsub", LATENCY, 100 * S, 3, patch);
    let mut sim = Simulation::new(&c, &star(leaves), &Schedule::default()).unwrap();
    sim.run_until(ready);
    assert!(
        sim.mesh_peers(1, 0).contains(&0),
        "leaf 1 meshed with the hub"
    );
    let before = prune_bytes_received(&sim, 1);
    let pruned_at = sim.now();
    sim.prune_now(0, 1, 0);
    sim.run_until(pruned_at + run_for);
    (sim, pruned_at + LATENCY, before)
}

#[test]
fn a_pruned_leaf_dials_every_peer_the_prune_offers_and_meshes_with_them() {
    let (sim, arrival, before) = hub_prunes_leaf_one(5, px(true), 3 * S);
    // The PRUNE offers the hub's other topic peers, 2..=5 (fewer than prune_peers = 16);
    // each dial takes 3 round trips after it arrives.
    let mut made = connections(&sim);
    made.sort_by_key(|&(_, _, peer)| peer);
    let expected: Vec<(u64, u32, u32)> = (2..=5).map(|p| (arrival + DIAL, 1, p)).collect();
    assert_eq!(made, expected);
    // PRUNE with 4 records: entry 22 (topic) + 2 (backoff) + 4 x 233 = 956 -> 959, control
    // 962, framed 964 bytes.
    assert_eq!(prune_bytes_received(&sim, 1) - before, 964);
    // At its next heartbeats leaf 1 (empty mesh, hub backed off) grafts its new peers.
    assert_eq!(sim.mesh_peers(1, 0), vec![2, 3, 4, 5]);
}

#[test]
fn without_peer_exchange_the_prune_offers_nobody() {
    let (sim, _, before) = hub_prunes_leaf_one(5, px(false), 3 * S);
    assert!(connections(&sim).is_empty());
    assert_eq!(prune_bytes_received(&sim, 1) - before, 29); // a bare PRUNE (wire.rs)
    assert!(
        sim.mesh_peers(1, 0).is_empty(),
        "the hub is backed off, nobody else known"
    );
}

#[test]
fn eight_connectors_dial_sixteen_offered_peers_in_two_rounds() {
    // 17 leaves all in the hub's mesh (D_hi above 17): the PRUNE offers prune_peers = 16.
    let patch = json!({"protocol": {"peer_exchange": true, "D": 18, "D_lo": 17, "D_hi": 20}});
    let (sim, arrival, before) = hub_prunes_leaf_one(17, patch, 2 * S);
    let mut times: Vec<u64> = connections(&sim).iter().map(|c| c.0).collect();
    times.sort_unstable();
    let mut expected = vec![arrival + DIAL; 8];
    expected.extend(vec![arrival + 2 * DIAL; 8]);
    assert_eq!(times, expected);
    // 16 records: 22 + 2 + 16 x 233 = 3752 -> 3755, control 3758, framed 3760 bytes.
    assert_eq!(prune_bytes_received(&sim, 1) - before, 3760);
}

#[test]
fn prune_peers_caps_the_offer() {
    let patch = json!({"protocol": {"peer_exchange": true, "prune_peers": 2}});
    let (sim, _, _) = hub_prunes_leaf_one(5, patch, 2 * S);
    assert_eq!(connections(&sim).len(), 2);
}

#[test]
fn a_dial_to_a_node_that_went_down_after_the_offer_fails() {
    // The run is deterministic: learn when the PRUNE arrives, then crash node 3 between
    // the offer and the end of leaf 1's dial to it.
    let (_, arrival, _) = hub_prunes_leaf_one(5, px(true), 2 * S);
    let mut patch = px(true);
    let crash = arrival + DIAL / 2;
    patch["faults"] = json!([{"kind": "down", "node": 3, "from_ns": crash, "until_ns": null}]);
    let pruned_at = arrival - LATENCY;
    let (sim, arrival_again, before) = hub_prunes_leaf_one_after(pruned_at, 5, patch, 2 * S);
    assert_eq!(arrival_again, arrival);
    assert_eq!(
        prune_bytes_received(&sim, 1) - before,
        964,
        "node 3 was offered"
    );
    let mut peers: Vec<u32> = connections(&sim).iter().map(|c| c.2).collect();
    peers.sort_unstable();
    assert_eq!(peers, vec![2, 4, 5]);
}

fn scored_px(accept_px_threshold: f64) -> Value {
    let mut score = score_params();
    score["accept_px_threshold"] = json!(accept_px_threshold);
    json!({"protocol": {"peer_exchange": true, "score": score}})
}

#[test]
fn an_offer_from_a_peer_scored_below_accept_px_threshold_is_ignored() {
    // After 5 s the hub has earned leaf 1 at most 0.5 x 5 s of time in mesh (quantum 1 s,
    // topic weight 0.5) and no deliveries: far below 1000.
    let (sim, _, _) = hub_prunes_leaf_one(5, scored_px(1000.0), 2 * S);
    assert!(connections(&sim).is_empty());
    let (sim, _, _) = hub_prunes_leaf_one(5, scored_px(0.0), 2 * S);
    assert_eq!(connections(&sim).len(), 4);
}

#[test]
fn a_graft_during_backoff_is_answered_without_an_offer() {
    let (mut sim, _, _) = hub_prunes_leaf_one(2, px(true), 2 * S);
    let before = prune_bytes_received(&sim, 1);
    // Leaf 1 GRAFTs the hub during the hub's backoff: a PRUNE, but no PX (go: doPX = false).
    sim.inject(
        1,
        0,
        Control {
            graft: vec![0],
            ..Control::default()
        },
    );
    let t = sim.now();
    sim.run_until(t + 100 * MS);
    assert_eq!(prune_bytes_received(&sim, 1) - before, 29);
}

#[test]
fn a_heartbeat_trim_offers_peers_to_every_pruned_leaf() {
    // 14 leaves graft the hub (it dialed them all, so GRAFTs beyond D_hi are still
    // accepted); at its next heartbeat |mesh| = 14 >= D_hi = 12 and it keeps D = 6,
    // pruning 8 leaves with offers of its 13 other topic peers each. The 8 dial every
    // leaf they do not know: the 28 pairs among themselves (a pair dialing each other
    // connects once) and 8 x 6 pairs with the kept leaves, in two rounds of dials.
    let c = config(15, "gossipsub", LATENCY, 20 * S, 5, px(true));
    let mut sim = Simulation::new(&c, &star(14), &Schedule::default()).unwrap();
    sim.run_until(3 * S);
    let made = connections(&sim);
    assert!(!made.is_empty());
    let first = made[0].0;
    let rounds: Vec<_> = made.iter().filter(|c| c.0 <= first + DIAL).collect();
    let dialers: std::collections::BTreeSet<u32> = rounds.iter().map(|c| c.1).collect();
    assert_eq!(dialers.len(), 8, "{rounds:?}");
    assert!(dialers.iter().all(|&d| !sim.mesh_peers(0, 0).contains(&d)));
    let mut pairs: Vec<(u32, u32)> = rounds
        .iter()
        .map(|c| (c.1.min(c.2), c.1.max(c.2)))
        .collect();
    pairs.sort_unstable();
    pairs.dedup();
    assert_eq!(pairs.len(), 28 + 48);
}
