//! How the topology's connections come up (`network.connect_round_trips`), and what the
//! first heartbeats can do before they have. Expected times come from the handshake as
//! simnet's go-libp2p v0.51.0 QUIC hosts go through it (docs/protocol.md,
//! "Connections"): the dialer sends its hello two round trips after the dial, the
//! listener one latency later; go-libp2p-pubsub's heartbeat grafts only peers whose
//! subscriptions it has read (`gossipsub.go:heartbeat` -> `getPeers`, which walks
//! `p.topics[topic]`, filled by the hello).

mod common;
use common::*;

use gossiplab_engine::rpc::Kind;
use gossiplab_engine::{Schedule, Simulation};
use serde_json::json;

fn received(sim: &Simulation, node: u32, kind: Kind) -> u64 {
    sim.traffic(node)[kind as usize].msgs_recv
}

fn sent(sim: &Simulation, node: u32, kind: Kind) -> u64 {
    sim.traffic(node)[kind as usize].msgs_sent
}

/// Two nodes, 0 dialing 1, `latency_ns` each way, hellos after `trips` round trips.
fn pair(latency_ns: u64, trips: u64, seed: u64) -> Simulation {
    let patch = json!({"network": {"connect_round_trips": trips}});
    let c = config(2, "gossipsub", latency_ns, 10 * S, seed, patch);
    Simulation::new(&c, &line(2), &Schedule::default()).unwrap()
}

#[test]
fn the_dialers_hello_arrives_after_five_latencies_and_the_listeners_after_six() {
    let l = 50 * MS;
    let mut sim = pair(l, 2, 1);
    // Dialer: hello sent at 2 RTT = 4 L, read by the listener at 5 L.
    sim.run_until(5 * l - 1);
    assert_eq!(received(&sim, 1, Kind::Subscribe), 0);
    sim.run_until(5 * l);
    assert_eq!(received(&sim, 1, Kind::Subscribe), 1);
    // Listener: its end is up at 5 L, its hello read by the dialer at 6 L.
    sim.run_until(6 * l - 1);
    assert_eq!(received(&sim, 0, Kind::Subscribe), 0);
    sim.run_until(6 * l);
    assert_eq!(received(&sim, 0, Kind::Subscribe), 1);
}

#[test]
fn without_round_trips_both_hellos_arrive_after_one_latency() {
    let l = 50 * MS;
    let mut sim = pair(l, 0, 1);
    sim.run_until(l);
    assert_eq!(received(&sim, 0, Kind::Subscribe), 1);
    assert_eq!(received(&sim, 1, Kind::Subscribe), 1);
}

/// GRAFTs either node sent by `t`, and heartbeats run by then, over `seeds`.
fn grafts_by(t: u64, latency_ns: u64, trips: u64, seeds: u64) -> (u64, u64) {
    let (mut grafts, mut heartbeats) = (0, 0);
    for seed in 1..=seeds {
        let mut sim = pair(latency_ns, trips, seed);
        sim.run_until(t);
        grafts += sent(&sim, 0, Kind::Graft) + sent(&sim, 1, Kind::Graft);
        heartbeats += sim.heartbeat_ticks(0) + sim.heartbeat_ticks(1);
    }
    (grafts, heartbeats)
}

#[test]
fn a_heartbeat_before_the_peers_hello_grafts_nobody() {
    // 200 ms each way: the listener reads the dialer's hello at 1.0 s, the dialer the
    // listener's at 1.2 s. Every first heartbeat falls in [0.1, 1.1) s, so by 1 s - 1 ns
    // many heartbeats ran, none knew its peer's topic, and none grafted.
    let l = 200 * MS;
    let before = 5 * l - 1;
    let (grafts, heartbeats) = grafts_by(before, l, 2, 20);
    assert!(heartbeats > 10, "heartbeats ran: {heartbeats}");
    assert_eq!(grafts, 0);
    // With the hellos at time 0 (read at 0.2 s), the same heartbeats graft.
    let (grafts, _) = grafts_by(before, l, 0, 20);
    assert!(grafts > 0);
    // And once the hellos are read, the next heartbeats graft.
    let (grafts, _) = grafts_by(3 * S, l, 2, 20);
    assert!(grafts >= 20, "each pair meshes: {grafts}");
}
