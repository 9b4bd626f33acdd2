//! IDONTWANT (v1.2), IANNOUNCE/INEED (v2.0), adversaries and faults, each staged on a
//! small graph whose outcome is worked out by hand from the spec.

mod common;
use common::*;

use gossiplab_engine::{EdgeProperties, Schedule, Simulation};
use serde_json::json;

/// Each edge's one-way latency in both directions, no loss.
fn latencies(ms: &[u64]) -> EdgeProperties {
    EdgeProperties {
        latency_ns: ms.iter().flat_map(|&m| [m * MS, m * MS]).collect(),
        loss: vec![],
    }
}

fn delivery_at(sim: &Simulation, node: u32) -> Option<(u64, u32, u32)> {
    let d = &sim.output().deliveries;
    (0..d.len())
        .find(|&i| d.node[i] == node)
        .map(|i| (d.t_ns[i] as u64, d.from_node[i], d.duplicates[i]))
}

/// A publishes; M hears it in 10 ms and tells T (50 ms away) it has it; T heard it from A
/// too but needs 200 ms to validate, so by the time T relays, M's IDONTWANT is there.
fn idontwant_triangle(version: &str) -> Simulation {
    let edges = [(0, 1), (0, 2), (1, 2)];
    let patch = json!({
        "network": {"cpu_per_message_ns": [0, 0, 200 * MS]},
        "protocol": {"version": version, "idontwant_threshold": 1024}
    });
    let c = config(3, "gossipsub", 0, 10 * S, 1, patch);
    let props = latencies(&[10, 10, 50]);
    let mut sim =
        Simulation::with_edge_properties(&c, &edges, &props, &messages(0, 3 * S, 0, 1, 2000))
            .unwrap();
    sim.run();
    sim
}

#[test]
fn the_middle_nodes_idontwant_stops_the_duplicate_from_the_third() {
    let without = idontwant_triangle("1.1");
    let (_, _, duplicates) = delivery_at(&without, 1).unwrap();
    assert_eq!(duplicates, 1, "v1.1: T relays its copy to M");

    let with = idontwant_triangle("1.2");
    let (t, from, duplicates) = delivery_at(&with, 1).unwrap();
    assert_eq!((t, from), (3 * S + 10 * MS, 0));
    assert_eq!(duplicates, 0, "v1.2: T skips M, which said IDONTWANT");
    assert_eq!(drops(&with, "saved-by-idontwant"), 1);
    assert!(with.traffic(1)[5].msgs_sent >= 1, "M sent IDONTWANT");
}

#[test]
fn small_messages_send_no_idontwant() {
    let c = config(
        3,
        "gossipsub",
        10 * MS,
        10 * S,
        1,
        json!({"protocol": {"version": "1.2"}}),
    );
    let mut sim = Simulation::new(&c, &full(3), &messages(0, 3 * S, 0, 5, 1000)).unwrap();
    sim.run();
    assert!(
        (0..3).all(|n| sim.traffic(n)[5].msgs_sent == 0),
        "1000 B < 1024 B threshold"
    );
}

#[test]
fn announcing_to_every_mesh_peer_costs_one_round_trip_per_hop() {
    // On a line every mesh holds both neighbours; with D_announce = D every forward (and
    // the publication) is an IANNOUNCE, then INEED, then the message: 3 latencies a hop.
    let n = 5;
    for (d_announce, per_hop) in [(0, 10 * MS), (6, 30 * MS)] {
        let patch = json!({"protocol": {"version": "2.0", "D_announce": d_announce}});
        let c = config(n, "gossipsub", 10 * MS, 10 * S, 1, patch);
        let mut sim = Simulation::new(&c, &line(n), &messages(0, 3 * S, 0, 1, 1000)).unwrap();
        sim.run();
        for node in 1..n {
            let (t, from, _) = delivery_at(&sim, node).unwrap();
            assert_eq!(
                t - 3 * S,
                u64::from(node) * per_hop,
                "node {node}, D_announce {d_announce}"
            );
            assert_eq!(from, node - 1);
        }
    }
}

#[test]
fn an_ineed_to_a_silent_announcer_times_out_and_the_next_one_serves() {
    // P(0) publishes to A(1) and B(2); both announce to T(3). A announces first but
    // ignores INEED; after the 400 ms timeout T asks B.
    let edges = [(0, 1), (0, 2), (1, 3), (2, 3)];
    let patch = json!({
        "protocol": {"version": "2.0", "D_announce": 6, "ineed_timeout_ns": 400 * MS},
        "adversaries": [{"node": 1, "behaviour": "ignore-ineed"}]
    });
    let c = config(4, "gossipsub", 0, 10 * S, 1, patch);
    let props = latencies(&[10, 20, 10, 10]);
    let mut sim =
        Simulation::with_edge_properties(&c, &edges, &props, &messages(0, 3 * S, 0, 1, 1000))
            .unwrap();
    sim.run();
    // A has it at 30 ms (announce, INEED, message) and announces to T at 40 ms; B has it
    // at 60 ms and announces at 70 ms. T asks A at 40 ms, gives up at 440 ms, asks B
    // (arrives 450 ms), which answers (460 ms).
    let (t, from, _) = delivery_at(&sim, 3).unwrap();
    assert_eq!((t - 3 * S, from), (460 * MS, 2));
    assert_eq!(drops(&sim, "ineed-timeout"), 1);
}

#[test]
fn a_partition_stops_delivery_across_it_and_gossip_recovers_after_the_heal() {
    let n = 30;
    let side_a: Vec<u32> = (0..15).collect();
    let side_b: Vec<u32> = (15..30).collect();
    let patch = json!({"faults": [{"kind": "partition", "groups": [side_a, side_b], "start_ns": 5 * S, "end_ns": 8 * S}]});
    let c = config(n, "gossipsub", 10 * MS, 20 * S, 3, patch);
    let mut sim =
        Simulation::new(&c, &circulant(n, 4), &messages(0, 7500 * MS, 0, 1, 1000)).unwrap();
    sim.run();
    let d = &sim.output().deliveries;
    for i in 0..d.len() {
        if d.node[i] >= 15 {
            assert!(
                d.t_ns[i] as u64 >= 8 * S,
                "node {} got it during the partition",
                d.node[i]
            );
        }
    }
    // Everyone has it, the far side within the gossip window (3 heartbeats) of the heal.
    assert_eq!(d.len(), (n - 1) as usize);
    let last = d.t_ns.iter().max().copied().unwrap() as u64;
    assert!(
        last <= 8 * S + 3 * S + 200 * MS,
        "last delivery at {} ms",
        last / MS
    );
    assert!(drops(&sim, "partition") > 0);
}

#[test]
fn a_node_that_is_down_misses_messages_and_catches_up_after_it_returns() {
    let n = 20;
    let patch =
        json!({"faults": [{"kind": "down", "node": 5, "from_ns": 3 * S, "until_ns": 10 * S}]});
    let c = config(n, "gossipsub", 10 * MS, 30 * S, 4, patch);
    let schedule = then(
        messages(0, 5 * S, 0, 1, 500),
        messages(1, 20 * S, 0, 1, 500),
    );
    let mut sim = Simulation::new(&c, &circulant(n, 3), &schedule).unwrap();
    sim.run_until(9 * S);
    for peer in [2, 3, 4, 6, 7, 8] {
        assert!(
            !sim.mesh_peers(peer, 0).contains(&5),
            "{peer} still meshes with the dead node"
        );
    }
    sim.run();
    let d = &sim.output().deliveries;
    let got = |msg: u32| (0..d.len()).any(|i| d.node[i] == 5 && d.msg[i] == msg);
    assert!(!got(0), "down at 5 s");
    assert!(got(1), "back since 10 s, meshed again by 20 s");
    assert_eq!(d.len(), 2 * (n as usize - 1) - 1);
}

#[test]
fn a_node_that_drops_forwards_is_routed_around() {
    // Node 1 never relays; on a ring the message still goes the other way round.
    let n = 10;
    let patch = json!({"adversaries": [{"node": 1, "behaviour": "drop-forwards"}]});
    let c = config(n, "gossipsub", 10 * MS, 10 * S, 1, patch);
    let ring: Vec<(u32, u32)> = (0..n).map(|i| (i, (i + 1) % n)).collect();
    let mut sim = Simulation::new(&c, &ring, &messages(0, 3 * S, 0, 1, 100)).unwrap();
    sim.run();
    // Node 2 is two hops from 0 through 1, but 1 stays silent: it gets it the long way.
    let (t, from, _) = delivery_at(&sim, 2).unwrap();
    assert_eq!((t - 3 * S, from), (80 * MS, 3));
    assert_eq!(sim.output().deliveries.len(), (n - 1) as usize);
}

#[test]
fn an_ihave_spammer_is_penalized_for_broken_promises() {
    let c = config(
        2,
        "gossipsub",
        MS,
        20 * S,
        1,
        json!({
            "protocol": {"score": merged(score_params(), json!({
                "time_in_mesh_weight": 0.0, "behaviour_penalty_decay": 0.9
            }))},
            "adversaries": [{"node": 0, "behaviour": "spam-ihave", "spam_ids": 100}]
        }),
    );
    let mut sim = Simulation::new(&c, &line(2), &Schedule::default()).unwrap();
    sim.run();
    // Every heartbeat node 1 asks for ids that never come: a broken promise each time.
    assert!(sim.behaviour_penalty(1, 0) > 1.0);
    assert!(
        sim.peer_score(1, 0) < -10.0,
        "below the gossip threshold: its IHAVEs are ignored"
    );
}

#[test]
fn a_delaying_relay_adds_its_delay_to_the_hop_behind_it() {
    let patch =
        json!({"adversaries": [{"node": 1, "behaviour": "delay-forwards", "delay_ns": 500 * MS}]});
    let c = config(3, "gossipsub", 10 * MS, 10 * S, 1, patch);
    let mut sim = Simulation::new(&c, &line(3), &messages(0, 3 * S, 0, 1, 100)).unwrap();
    sim.run();
    assert_eq!(delivery_at(&sim, 1).unwrap().0 - 3 * S, 10 * MS);
    assert_eq!(delivery_at(&sim, 2).unwrap().0 - 3 * S, 520 * MS);
}

#[test]
fn a_node_that_goes_down_while_validating_records_nothing_and_restarts_clean() {
    // Node 1 needs 500 ms per message and goes down 100 ms after the copy arrives.
    let patch = json!({
        "network": {"cpu_per_message_ns": [0, 500 * MS, 0]},
        "faults": [{"kind": "down", "node": 1, "from_ns": 3100 * MS, "until_ns": 5 * S}]
    });
    let c = config(3, "gossipsub", 10 * MS, 20 * S, 1, patch);
    let schedule = then(
        messages(0, 3 * S, 0, 1, 100),
        messages(0, 12 * S, 0, 1, 100),
    );
    let mut sim = Simulation::new(&c, &line(3), &schedule).unwrap();
    sim.run();
    let d = &sim.output().deliveries;
    let at_1: Vec<u32> = (0..d.len())
        .filter(|&i| d.node[i] == 1)
        .map(|i| d.msg[i])
        .collect();
    assert_eq!(
        at_1,
        vec![1],
        "message 0 was lost with the crash; message 1 came after the restart"
    );
}
