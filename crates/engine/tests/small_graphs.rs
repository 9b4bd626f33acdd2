//! The engine on hand-built graphs, checked against outcomes worked out on paper.

use gossiplab_engine::{Schedule, Simulation};
use serde_json::json;

mod common;
use common::*;

fn one_message(publisher: u32, at: u64) -> Schedule {
    messages(publisher, at, 0, 1, 1000)
}

#[test]
fn floodsub_on_a_line_delivers_hop_by_hop() {
    // Published at 100 ms, once every node has heard its neighbours' subscriptions.
    let mut sim = Simulation::new(
        &config(5, "floodsub", 10 * MS, S, 1, json!({})),
        &line(5),
        &one_message(0, 100 * MS),
    )
    .unwrap();
    sim.run();
    let d = &sim.output().deliveries;
    let mut rows: Vec<(u32, i64, u16, u32)> = (0..d.len())
        .map(|i| (d.node[i], d.t_ns[i], d.hop[i], d.from_node[i]))
        .collect();
    rows.sort();
    let expected: Vec<(u32, i64, u16, u32)> = (1..5)
        .map(|n| {
            (
                n,
                (100 * MS + 10 * MS * u64::from(n)) as i64,
                n as u16,
                n - 1,
            )
        })
        .collect();
    assert_eq!(rows, expected);
    assert!(d.duplicates.iter().all(|&x| x == 0));
}

#[test]
fn floodsub_on_a_full_graph_gives_n_minus_2_duplicates() {
    let n = 7;
    let mut sim = Simulation::new(
        &config(n, "floodsub", 5 * MS, S, 1, json!({})),
        &full(n),
        &one_message(3, 100 * MS),
    )
    .unwrap();
    sim.run();
    let d = &sim.output().deliveries;
    assert_eq!(d.len(), (n - 1) as usize);
    assert!(
        d.duplicates.iter().all(|&x| x == n - 2),
        "{:?}",
        d.duplicates
    );
    // Every first copy comes straight from the publisher.
    assert!(d.from_node.iter().all(|&f| f == 3));
    assert_eq!(sim.messages()[0].receipts, u64::from((n - 1) * (n - 1)));
}

#[test]
fn gossipsub_meshes_are_bounded_and_symmetric() {
    // Zero latency: no GRAFT or PRUNE is ever in flight when we look.
    let n = 50;
    let mut sim = Simulation::new(
        &config(n, "gossipsub", 0, 20 * S, 7, json!({})),
        &circulant(n, 5),
        &Schedule::default(),
    )
    .unwrap();
    sim.run_until(5 * S);
    for node in 0..n {
        let mesh = sim.mesh_peers(node, 0);
        assert!((5..=12).contains(&mesh.len()), "node {node} mesh {mesh:?}");
        for peer in mesh {
            assert!(
                sim.mesh_peers(peer, 0).contains(&node),
                "{node} -> {peer} not mutual"
            );
        }
    }
}

#[test]
fn gossipsub_delivers_everything_on_a_connected_graph() {
    let n = 50;
    let mut schedule = Schedule::default();
    for i in 0..20u32 {
        schedule.t_intended_ns.push(3 * S + u64::from(i) * 50 * MS);
        schedule.publisher.push(i * 7 % n);
        schedule.size.push(1000);
        schedule.topic.push(0);
        schedule.batch.push(i);
    }
    let mut sim = Simulation::new(
        &config(n, "gossipsub", 20 * MS, 12 * S, 3, json!({})),
        &circulant(n, 4),
        &schedule,
    )
    .unwrap();
    sim.run();
    assert_eq!(sim.output().deliveries.len(), 20 * (n as usize - 1));
    // A node never receives its own message back.
    let d = &sim.output().deliveries;
    for i in 0..d.len() {
        assert_ne!(d.node[i], sim.messages()[d.msg[i] as usize].publisher);
    }
}

#[test]
fn same_seed_same_events_other_seed_other_events() {
    let run = |seed| {
        let mut schedule = Schedule::default();
        for i in 0..30u32 {
            schedule.t_intended_ns.push(2 * S + u64::from(i) * 10 * MS);
            schedule.publisher.push(i % 40);
            schedule.size.push(500);
            schedule.topic.push(0);
            schedule.batch.push(i);
        }
        let mut sim = Simulation::new(
            &config(40, "gossipsub", 15 * MS, 6 * S, seed, json!({})),
            &circulant(40, 4),
            &schedule,
        )
        .unwrap();
        sim.run();
        let d = &sim.output().deliveries;
        (
            d.msg.clone(),
            d.node.clone(),
            d.t_ns.clone(),
            d.from_node.clone(),
            d.duplicates.clone(),
            sim.events(),
        )
    };
    assert_eq!(run(11), run(11));
    assert_ne!(run(11), run(12));
}
