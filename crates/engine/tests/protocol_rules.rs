//! Gossipsub v1.1 rules as go-libp2p-pubsub implements them, each staged in a small
//! scripted scenario. Expected outcomes come from the spec and the go source
//! (`gossipsub.go`, `gossip_tracer.go`; protocol-notes.md), not from running the model.

mod common;
use common::*;

use gossiplab_engine::rpc::{Control, Kind};
use gossiplab_engine::{Schedule, Simulation};
use serde_json::{json, Value};

fn scoring() -> Value {
    json!({"protocol": {"score": score_params()}})
}

fn with(a: Value, b: Value) -> Value {
    merged(a, b)
}

fn sent(sim: &Simulation, node: u32, kind: Kind) -> u64 {
    sim.traffic(node)[kind as usize].msgs_sent
}

fn received(sim: &Simulation, node: u32, kind: Kind) -> u64 {
    sim.traffic(node)[kind as usize].msgs_recv
}

fn graft_during_backoff(graft_after_prune: u64) -> (Simulation, u64) {
    let c = config(2, "gossipsub", MS, 100 * S, 1, scoring());
    let mut sim = Simulation::new(&c, &line(2), &Schedule::default()).unwrap();
    sim.run_until(5 * S);
    // Node 0 prunes node 1: node 1 now backs off from node 0 for 60 s.
    sim.prune_now(0, 1, 0);
    sim.run_until(5 * S + 10 * MS);
    assert!(sim.has_backoff_entry(1, 0, 0));
    let prunes_before = received(&sim, 0, Kind::Prune);
    let t = 5 * S + graft_after_prune;
    sim.run_until(t);
    sim.inject(
        0,
        1,
        Control {
            graft: vec![0],
            ..Control::default()
        },
    );
    sim.run_until(t + 10 * MS);
    (sim, prunes_before)
}

#[test]
fn a_graft_during_backoff_is_answered_with_prune_and_penalized() {
    let (sim, prunes_before) = graft_during_backoff(2 * S);
    assert_eq!(
        received(&sim, 0, Kind::Prune),
        prunes_before + 1,
        "node 1 answers PRUNE"
    );
    assert!(!sim.mesh_peers(1, 0).contains(&0));
    // Within GraftFloodThreshold (10 s) of the prune: two penalty points.
    let penalty = sim.behaviour_penalty(1, 0);
    assert!((1.9..=2.0).contains(&penalty), "penalty {penalty}");
    assert!(sim.peer_score(1, 0) < -30.0);
}

#[test]
fn a_graft_later_in_the_backoff_costs_one_penalty_point() {
    let (sim, prunes_before) = graft_during_backoff(20 * S);
    assert_eq!(received(&sim, 0, Kind::Prune), prunes_before + 1);
    let penalty = sim.behaviour_penalty(1, 0);
    assert!((0.9..=1.0).contains(&penalty), "penalty {penalty}");
}

#[test]
fn a_full_outbound_queue_drops_gossip_but_keeps_prune_for_later() {
    // Node 0's uplink is slow, its queue holds 2 RPCs and its transport only the one
    // being written: a burst of messages fills the queue.
    let patch = json!({"network": {"upload_bps": [200_000, 0], "send_buffer_bytes": 0}, "protocol": {"peer_outbound_queue": 2}});
    let c = config(2, "gossipsub", MS, 100 * S, 1, patch);
    let mut sim = Simulation::new(&c, &line(2), &messages(0, 5 * S, 0, 10, 5000)).unwrap();
    sim.run_until(5 * S);
    assert_eq!(sim.mesh_peers(1, 0), vec![0], "meshed before the burst");
    // The burst is published at 5 s; the PRUNE comes right behind it.
    sim.run_until(5 * S + 1);
    sim.prune_now(0, 1, 0);
    let dropped_prunes: u64 = sim
        .output()
        .drops
        .iter()
        .filter(|(k, _)| k.kind == Kind::Prune as u8 && k.reason == "outbound-queue-full")
        .map(|(_, c)| c)
        .sum();
    assert_eq!(dropped_prunes, 1, "the PRUNE's RPC was dropped");
    // It still reaches node 1 later (next RPC or heartbeat) and node 1 leaves the mesh.
    sim.run_until(10 * S);
    assert_eq!(received(&sim, 1, Kind::Prune), 1);
    assert!(sim.mesh_peers(1, 0).is_empty());
    // Of the 10 messages, 1 was being written and 2 waited: 7 were dropped...
    let dropped_payload: u64 = sim
        .output()
        .drops
        .iter()
        .filter(|(k, _)| k.kind == Kind::Payload as u8)
        .map(|(_, c)| c)
        .sum();
    assert_eq!(dropped_payload, 7);
    // ...and gossip (IHAVE/IWANT, now that the two are out of each other's mesh) brought
    // them to node 1 anyway.
    assert_eq!(sim.output().deliveries.len(), 10);
}

/// Messages that exist in the run but are only published late, so nobody has seen them:
/// IHAVEs can advertise their ids.
fn unseen_ids(count: u32) -> Schedule {
    messages(0, 1000 * S, 0, count, 10)
}

#[test]
fn ihaves_beyond_max_ihave_messages_per_heartbeat_are_ignored() {
    let c = config(2, "gossipsub", MS, 2000 * S, 1, json!({}));
    let mut sim = Simulation::new(&c, &line(2), &unseen_ids(20)).unwrap();
    sim.run_until(5 * S);
    let before = sent(&sim, 1, Kind::Iwant);
    // Eleven IHAVEs land at the same instant, so no heartbeat resets the counter.
    for id in 0..11 {
        sim.inject(
            0,
            1,
            Control {
                ihave: vec![(0, vec![id])],
                ..Control::default()
            },
        );
    }
    sim.run_until(5 * S + 10 * MS);
    assert_eq!(
        sent(&sim, 1, Kind::Iwant) - before,
        10,
        "MaxIHaveMessages = 10"
    );
}

#[test]
fn no_more_than_max_ihave_length_ids_are_asked_per_heartbeat() {
    let c = config(2, "gossipsub", MS, 2000 * S, 1, json!({}));
    let mut sim = Simulation::new(&c, &line(2), &unseen_ids(6000)).unwrap();
    sim.run_until(5 * S);
    let before = sent(&sim, 1, Kind::Iwant);
    sim.inject(
        0,
        1,
        Control {
            ihave: vec![(0, (0..6000).collect())],
            ..Control::default()
        },
    );
    sim.inject(
        0,
        1,
        Control {
            ihave: vec![(0, vec![5999])],
            ..Control::default()
        },
    );
    sim.run_until(5 * S + 10 * MS);
    assert_eq!(
        sent(&sim, 1, Kind::Iwant) - before,
        5000,
        "MaxIHaveLength = 5000"
    );
}

#[test]
fn iwant_is_served_at_most_three_times_per_peer() {
    let c = config(2, "gossipsub", MS, 100 * S, 1, json!({}));
    let mut sim = Simulation::new(&c, &line(2), &messages(0, 5 * S, 0, 1, 100)).unwrap();
    sim.run_until(5 * S + 10 * MS);
    let before = sent(&sim, 0, Kind::Payload);
    for _ in 0..4 {
        sim.inject(
            1,
            0,
            Control {
                iwant: vec![0],
                ..Control::default()
            },
        );
    }
    sim.run_until(5 * S + 20 * MS);
    assert_eq!(
        sent(&sim, 0, Kind::Payload) - before,
        3,
        "GossipRetransmission = 3"
    );
}

/// Leaves dial the center, so the center can refuse their GRAFTs once its mesh is full:
/// with D_lo = D = D_hi = 4 its mesh holds exactly 4 of the leaves.
fn star_center_gossip(d_lazy: u64) -> (Simulation, usize) {
    let leaves = 40;
    let edges: Vec<(u32, u32)> = (1..=leaves).map(|i| (i, 0)).collect();
    let patch = json!({"protocol": {"D": 4, "D_lo": 4, "D_hi": 4, "D_out": 0, "D_lazy": d_lazy,
        "history_length": 1, "history_gossip": 1}});
    let c = config(leaves + 1, "gossipsub", MS, 200 * S, 4, patch);
    let mut sim = Simulation::new(&c, &edges, &messages(0, 70 * S, 0, 1, 100)).unwrap();
    sim.run_until(73 * S);
    assert_eq!(sim.mesh_peers(0, 0).len(), 4);
    let told = (1..=leaves)
        .filter(|&leaf| received(&sim, leaf, Kind::Ihave) > 0)
        .count();
    (sim, told)
}

#[test]
fn gossip_goes_to_a_quarter_of_the_candidates_when_that_exceeds_d_lazy() {
    // 36 candidates (40 leaves - 4 in the mesh): max(6, 0.25 x 36) = 9.
    assert_eq!(star_center_gossip(6).1, 9);
}

#[test]
fn gossip_goes_to_d_lazy_peers_when_that_is_more() {
    // max(12, 9) = 12.
    assert_eq!(star_center_gossip(12).1, 12);
}

#[test]
fn a_pruned_peer_is_not_regrafted_before_its_backoff_entry_is_cleared() {
    // Node 0 hangs off node 1, which sits in a clique of 8 and keeps a full mesh there,
    // so only node 0's heartbeat can bring the two back together.
    let mut edges = full(8);
    edges.retain(|&(a, _)| a != 0);
    edges.push((0, 1));
    let c = config(8, "gossipsub", MS, 300 * S, 2, json!({}));
    let mut sim = Simulation::new(&c, &edges, &Schedule::default()).unwrap();
    sim.run_until(10 * S);
    if !sim.mesh_peers(0, 0).contains(&1) {
        sim.graft_now(0, 1, 0);
        sim.run_until(11 * S);
    }
    let pruned_at = sim.now();
    sim.prune_now(0, 1, 0);
    let mut t = pruned_at;
    let regrafted = loop {
        t += 100 * MS;
        sim.run_until(t);
        if sim.mesh_peers(0, 0).contains(&1) {
            break t;
        }
        assert!(t < pruned_at + 120 * S, "never regrafted");
    };
    // Backoff 60 s, cleared 2 heartbeats after expiry, only on ticks that are multiples
    // of 15: so between 62 s and 62 + 15 + 1 s later, on such a tick.
    assert!(
        regrafted >= pruned_at + 62 * S,
        "regrafted after {} ms",
        (regrafted - pruned_at) / MS
    );
    assert!(
        regrafted <= pruned_at + 78 * S,
        "regrafted after {} ms",
        (regrafted - pruned_at) / MS
    );
    assert_eq!(sim.heartbeat_ticks(0) % 15, 0);
}

#[test]
fn flood_publish_sends_to_every_topic_peer() {
    let leaves = 20;
    for flood in [true, false] {
        let patch = json!({"protocol": {"flood_publish": flood}});
        let c = config(leaves + 1, "gossipsub", 10 * MS, 30 * S, 5, patch);
        let mut sim = Simulation::new(&c, &star(leaves), &messages(0, 5 * S, 0, 1, 100)).unwrap();
        sim.run_until(5 * S);
        let mesh = sim.mesh_peers(0, 0).len();
        sim.run();
        let d = &sim.output().deliveries;
        let direct = (0..d.len())
            .filter(|&i| d.t_ns[i] as u64 == 5 * S + 10 * MS)
            .count();
        if flood {
            assert_eq!(
                direct, leaves as usize,
                "every leaf hears the publisher at once"
            );
        } else {
            assert_eq!(direct, mesh, "only the mesh hears it at once");
            assert!(mesh < leaves as usize);
        }
    }
}

#[test]
fn a_broken_iwant_promise_costs_a_penalty_after_the_followup_time() {
    let c = config(2, "gossipsub", MS, 2000 * S, 1, with(scoring(), json!({})));
    let mut sim = Simulation::new(&c, &line(2), &unseen_ids(1)).unwrap();
    sim.run_until(5 * S);
    // Node 0 advertises a message it does not have; node 1 asks for it in vain.
    sim.inject(
        0,
        1,
        Control {
            ihave: vec![(0, vec![0])],
            ..Control::default()
        },
    );
    sim.run_until(7 * S);
    assert_eq!(
        sim.behaviour_penalty(1, 0),
        0.0,
        "not before the 3 s follow-up"
    );
    sim.run_until(10 * S);
    let penalty = sim.behaviour_penalty(1, 0);
    assert!((0.9..=1.0).contains(&penalty), "penalty {penalty}");
}

#[test]
fn first_deliveries_raise_the_senders_score() {
    // Only P2 counts here (P1 weight 0): 0.5 x first deliveries, halved every second.
    let patch = with(
        scoring(),
        json!({"protocol": {"score": {"time_in_mesh_weight": 0.0}}}),
    );
    let c = config(2, "gossipsub", MS, 10 * S, 1, patch);
    let mut sim = Simulation::new(&c, &line(2), &messages(0, 5 * S, 0, 10, 100)).unwrap();
    sim.run_until(5 * S + 10 * MS);
    // Ten first deliveries, at most one decay (x 0.5) since: a score of 2.5 to 5.
    let score = sim.peer_score(1, 0);
    assert!((2.5..=5.0).contains(&score), "score {score}");
    assert_eq!(
        sim.peer_score(0, 1),
        0.0,
        "node 1 delivered nothing first to node 0"
    );
}

#[test]
fn a_direct_peer_gets_every_message_but_never_joins_the_mesh() {
    // A star whose center keeps a mesh of 4 leaves (D_lo = D = D_hi = 4, leaves dial
    // in); leaf 1 is a direct peer of the center on both ends.
    let leaves = 12;
    let edges: Vec<(u32, u32)> = (1..=leaves).map(|i| (i, 0)).collect();
    let patch =
        json!({"protocol": {"D": 4, "D_lo": 4, "D_hi": 4, "D_out": 0, "direct_peers": [[0, 1]]}});
    let c = config(leaves + 1, "gossipsub", 10 * MS, 30 * S, 2, patch);
    let mut sim = Simulation::new(&c, &edges, &messages(0, 5 * S, 100 * MS, 20, 100)).unwrap();
    sim.run_until(5 * S);
    assert!(!sim.mesh_peers(0, 0).contains(&1) && !sim.mesh_peers(1, 0).contains(&0));
    assert_eq!(sim.mesh_peers(0, 0).len(), 4);
    let leaf_grafts = received(&sim, 0, Kind::Graft);
    // A GRAFT from the direct peer is answered with PRUNE.
    let prunes_before = received(&sim, 1, Kind::Prune);
    sim.inject(
        1,
        0,
        Control {
            graft: vec![0],
            ..Control::default()
        },
    );
    sim.run();
    assert_eq!(received(&sim, 1, Kind::Prune), prunes_before + 1);
    assert!(!sim.mesh_peers(0, 0).contains(&1));
    assert!(received(&sim, 0, Kind::Graft) > leaf_grafts);
    // Every message reached leaf 1 straight from the center, one link away.
    let d = &sim.output().deliveries;
    let direct: Vec<u64> = (0..d.len())
        .filter(|&i| d.node[i] == 1)
        .map(|i| d.t_ns[i] as u64 - (5 * S + u64::from(d.msg[i]) * 100 * MS))
        .collect();
    assert_eq!(direct, vec![10 * MS; 20]);
    // And the center never gossiped to it: IHAVE only ever went to non-mesh, non-direct leaves.
    assert_eq!(received(&sim, 1, Kind::Ihave), 0);
}

#[test]
fn direct_peers_must_be_connected() {
    let patch = json!({"protocol": {"direct_peers": [[0, 2]]}});
    let c = config(3, "gossipsub", MS, S, 1, patch);
    let err = Simulation::new(&c, &line(3), &Schedule::default())
        .err()
        .unwrap();
    assert!(err.to_string().contains("not connected"), "{err}");
}
