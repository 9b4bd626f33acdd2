//! Score terms beyond the mesh counters (P4 invalid messages, P5 application score, P6
//! IP colocation) and what a score becomes when a peer goes down and comes back, or the
//! node itself restarts, as go-libp2p-pubsub's `score.go` decides it
//! (`RejectMessage`, `OnClosedOutboundStream`, `refreshScores`): a positive score is
//! forgotten, any other kept for `retain_score` without decay; a restarted process
//! starts from zero.

mod common;
use common::*;

use gossiplab_engine::rpc::Control;
use gossiplab_engine::{Schedule, Simulation};
use serde_json::{json, Value};

fn scored(faults: Value, retain_ns: u64) -> Value {
    let mut score = score_params();
    score["retain_score_ns"] = json!(retain_ns);
    // A 10 s backoff: node 1, back after a restart, may GRAFT node 0 without a penalty.
    json!({"protocol": {"score": score, "prune_backoff_ns": 10 * S}, "faults": faults})
}

fn down(node: u32, from: u64, until: u64) -> Value {
    json!([{"kind": "down", "node": node, "from_ns": from, "until_ns": until}])
}

/// Two nodes; at ~5 s node 0 prunes node 1 and node 1 GRAFTs back at once, which node
/// 0 punishes with two behaviour-penalty points. Returns the simulation at 5.2 s.
fn node_one_misbehaves(patch: Value) -> Simulation {
    let c = config(2, "gossipsub", MS, 100 * S, 1, patch);
    let mut sim = Simulation::new(&c, &line(2), &Schedule::default()).unwrap();
    sim.run_until(5 * S);
    sim.prune_now(0, 1, 0);
    sim.run_until(5 * S + 50 * MS);
    sim.inject(
        1,
        0,
        Control {
            graft: vec![0],
            ..Control::default()
        },
    );
    sim.run_until(5 * S + 200 * MS);
    assert!(sim.behaviour_penalty(0, 1) >= 1.9);
    sim
}

#[test]
fn a_positive_score_is_forgotten_when_the_peer_goes_down() {
    let patch = scored(down(1, 6 * S, 9 * S), 3600 * S);
    let c = config(2, "gossipsub", MS, 20 * S, 1, patch);
    // Node 1's messages reach node 0 first from node 1: P2 makes its score positive.
    let mut sim = Simulation::new(&c, &line(2), &messages(1, 2 * S, 100 * MS, 10, 100)).unwrap();
    sim.run_until(6 * S - 1);
    assert!(sim.peer_score(0, 1) > 0.0);
    sim.run_until(6 * S + MS);
    assert_eq!(sim.peer_score(0, 1), 0.0);
}

#[test]
fn a_negative_score_is_kept_without_decay_while_the_peer_is_down() {
    let mut sim = node_one_misbehaves(scored(down(1, 6 * S, 36 * S), 3600 * S));
    sim.run_until(6 * S - 1);
    let at_crash = sim.behaviour_penalty(0, 1);
    sim.run_until(35 * S);
    assert_eq!(sim.behaviour_penalty(0, 1), at_crash, "no decay while down");
    // Back up: the retained counter decays again (0.99 per second).
    sim.run_until(46 * S);
    let later = sim.behaviour_penalty(0, 1);
    assert!(
        later < at_crash * 0.92 && later > 0.0,
        "{later} vs {at_crash}"
    );
}

#[test]
fn a_retained_score_expires_after_retain_score() {
    let mut sim = node_one_misbehaves(scored(down(1, 6 * S, 36 * S), 10 * S));
    sim.run_until(37 * S);
    assert_eq!(sim.behaviour_penalty(0, 1), 0.0);
}

#[test]
fn a_restarted_node_scores_its_peers_from_scratch() {
    let mut sim = node_one_misbehaves(scored(down(0, 6 * S, 8 * S), 3600 * S));
    sim.run_until(8 * S + MS);
    assert_eq!(sim.behaviour_penalty(0, 1), 0.0);
}

#[test]
fn an_application_score_below_the_graylist_silences_a_peer() {
    // Node 0 scores node 1 at app_specific_weight (10) x -100 = -1000 < graylist (-80),
    // so it ignores node 1's messages (go: AcceptFrom returns AcceptNone).
    let mut score = score_params();
    score["app_specific_weight"] = json!(10.0);
    score["app_specific"] = json!([{"nodes": [1], "score": -100.0}]);
    let c = config(
        2,
        "gossipsub",
        10 * MS,
        10 * S,
        1,
        json!({"protocol": {"score": score}}),
    );
    let mut sim = Simulation::new(&c, &line(2), &messages(1, 3 * S, 0, 1, 100)).unwrap();
    assert_eq!(sim.peer_score(0, 1), -1000.0);
    assert_eq!(sim.peer_score(1, 0), 0.0);
    sim.run();
    assert_eq!(sim.output().deliveries.len(), 0);
}

#[test]
fn peers_behind_one_address_beyond_the_threshold_are_penalized_by_the_square() {
    // Leaves 1..=12 share an address; the hub counts 12 peers there, 2 over the
    // threshold of 10: P6 = 4, weighted -5: -20. Leaf 13 has its own address.
    let mut score = score_params();
    score["ip_colocation_factor_weight"] = json!(-5.0);
    score["ip_colocation_factor_threshold"] = json!(10.0);
    let shared: Vec<u32> = (1..=12).collect();
    let patch = json!({"protocol": {"score": score}, "network": {"shared_ips": [shared]}});
    let c = config(14, "gossipsub", 10 * MS, 10 * S, 1, patch);
    let sim = Simulation::new(&c, &star(13), &Schedule::default()).unwrap();
    assert_eq!(sim.peer_score(0, 1), -20.0);
    assert_eq!(sim.peer_score(0, 12), -20.0);
    assert_eq!(sim.peer_score(0, 13), 0.0);
    // A leaf knows one peer at that address (none: the hub has its own): no penalty.
    assert_eq!(sim.peer_score(1, 0), 0.0);
}

#[test]
fn invalid_messages_cost_their_sender_the_square_of_their_count() {
    // Node 0 sends node 1 forty invalid messages at each of its heartbeats. Node 1
    // rejects them (P4 += 40): with topic weight 0.5 and weight -1 that is -800. P4
    // decays x 0.3 per second: 12 (-72, above the graylist at -80) when the second batch
    // comes, which is validated too: 52, then 15.6 (-122) when the third comes, which
    // node 1 drops unvalidated (graylisted).
    let patch = json!({
        "protocol": {"score": score_params()},
        "adversaries": [{"node": 0, "behaviour": "spam-invalid", "spam_ids": 40, "spam_size": 100}]
    });
    let c = config(2, "gossipsub", MS, 10 * S, 1, patch);
    let mut sim = Simulation::new(&c, &line(2), &Schedule::default()).unwrap();
    let (mut t, mut first_batch) = (0, 0);
    while first_batch == 0 && t < 3 * S {
        t += 10 * MS;
        sim.run_until(t);
        first_batch = drops(&sim, "rejected-invalid");
    }
    assert_eq!(first_batch, 40);
    let score = sim.peer_score(1, 0);
    // P1 (time in mesh, 0.5 per second) is all that offsets -800.
    assert!((-800.0..-795.0).contains(&score), "{score}");
    let t = sim.now();
    sim.run_until(t + 1500 * MS);
    assert_eq!(
        drops(&sim, "rejected-invalid"),
        80,
        "the second batch is validated"
    );
    sim.run();
    assert!(drops(&sim, "graylisted") > 0);
    assert_eq!(sim.output().deliveries.len(), 0);
}
