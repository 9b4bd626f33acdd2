//! Gossipsub v1.3 partial messages: the scripted cases T1-T5 of the design, with the
//! expectations worked out by hand from go-libp2p-pubsub v0.17.0 (partialmsgs.go,
//! extensions.go, gossipsub.go:rpcs) and go's test application
//! (gossipsub_test.go:minimalTestPartialMessage), generalised to P parts.
//!
//! Common set-up: a 20-character topic, 32-byte group ids, P = 48 parts of 2,048 bytes
//! with no overhead (so the full message carries 98,304 bytes), strict-no-sign with
//! 20-byte content ids, 25 ms one-way latency and no bandwidth limit (so a hop takes
//! exactly the latency), a group published at 5.5 s once meshes have formed.

mod common;
use common::*;

use gossiplab_engine::control::{Control, Kind};
use gossiplab_engine::partial::PartialRpc;
use gossiplab_engine::{Config, Simulation};
use serde_json::{json, Value};

const L: u64 = 25 * MS;
const T0: u64 = 5_500 * MS;
const P: u32 = 48;
const ALL: u128 = (1u128 << P) - 1;

/// Framed sizes of partial RPCs worked out by hand from rpc.proto (design §1.3): topic
/// field 22, group field 34, metadata field 1 + 1 + 6 = 8.
const META_ONLY: u64 = 67; // E = 22 + 34 + 8 = 64; field 66; framed 67
const FULL_MESSAGE: u64 = 98_337; // Message 22 + 1 + 3 + 98,304; publish field; frame

/// A v1.3 config on `roles.len()` nodes whose partial plan gives each node `roles[i]`
/// and `held[i]` for the one group; `patch` overrides partial fields.
fn partial_config(roles: &[&str], held: &[u128], patch: Value) -> Config {
    let n = roles.len() as u32;
    let held: Vec<String> = held.iter().map(|h| format!("{h:x}")).collect();
    let mut partial = json!({
        "parts": P, "part_bytes": 2048, "group_id_size": 32, "eager_push": false,
        "full_fallback": true, "group_ttl_heartbeats": 3, "peer_group_limit_per_topic": 255,
        "peer_group_limit_per_peer": 8, "roles": roles, "held": [held],
    });
    if let (Value::Object(base), Value::Object(extra)) = (&mut partial, patch) {
        base.extend(extra);
    }
    let protocol = json!({"version": "1.3", "signing": "strict-no-sign", "message_id": "ethereum"});
    config(
        n,
        "gossipsub",
        L,
        10 * S,
        1,
        json!({"protocol": protocol, "partial": partial}),
    )
}

fn run(c: &Config, edges: &[(u32, u32)]) -> Simulation {
    let size = P * 2048;
    let mut sim = Simulation::new(c, edges, &messages(0, T0, 0, 1, size)).unwrap();
    sim.run();
    sim
}

/// (entries, bytes) node `n` received of `kind`.
fn recv(sim: &Simulation, n: u32, kind: Kind) -> (u64, u64) {
    let c = &sim.traffic(n)[kind as usize];
    (c.entries_recv, c.bytes_recv)
}

/// (entries, bytes) node `n` sent of `kind`.
fn sent(sim: &Simulation, n: u32, kind: Kind) -> (u64, u64) {
    let c = &sim.traffic(n)[kind as usize];
    (c.entries_sent, c.bytes_sent)
}

/// Node `n`'s row of the `partial` table: (parts_recv, parts_dup, full_recv, t_complete).
fn row(sim: &Simulation, n: u32) -> (u32, u32, u32, i64) {
    let rows = sim.partial_rows().unwrap();
    let i = rows.node.iter().position(|&x| x == n).unwrap();
    (
        rows.parts_recv[i],
        rows.parts_dup[i],
        rows.full_recv[i],
        rows.t_complete_ns[i],
    )
}

/// Framed bytes of a data RPC with `k` parts and no metadata (design §1.3).
fn data_rpc(k: u64) -> u64 {
    let vl = |v: u64| (64 - (v | 1).leading_zeros() as u64).div_ceil(7);
    let d = 6 + k * 2048;
    let e = 22 + 34 + 1 + vl(d) + d;
    let body = 1 + vl(e) + e;
    vl(body) + body
}

#[test]
fn hand_worked_rpc_sizes() {
    assert_eq!(data_rpc(1), 2118);
    assert_eq!(data_rpc(5), 10_310);
    assert_eq!(data_rpc(8), 16_457);
}

// T1: a node that holds every part requests nothing and sends only metadata.
#[test]
fn t1_a_node_holding_every_part_sends_only_metadata() {
    let c = partial_config(&["requests", "requests"], &[ALL, ALL], json!({}));
    let sim = run(&c, &line(2));
    // A -> X: metadata only; X learns the group (complete at once) and answers with its
    // metadata once; no data either way.
    for n in [0, 1] {
        assert_eq!(sent(&sim, n, Kind::PartsMeta), (1, META_ONLY), "node {n}");
        assert_eq!(sent(&sim, n, Kind::Partial), (0, 0), "node {n}");
        // A's full message goes to nobody: X requests partial messages (gossipsub.go:1413);
        // nor does IDONTWANT, to a peer that sends parts (gossipsub.go:Preprocess 897-901).
        assert_eq!(sent(&sim, n, Kind::Payload).1, 0, "node {n}");
        assert_eq!(sent(&sim, n, Kind::Idontwant), (0, 0), "node {n}");
    }
    assert_eq!(row(&sim, 1), (0, 0, 0, (T0 + L) as i64));
}

#[test]
fn t1_with_eager_push_the_publisher_sends_every_part() {
    let c = partial_config(
        &["requests", "requests"],
        &[ALL, ALL],
        json!({"eager_push": true}),
    );
    let sim = run(&c, &line(2));
    // D = 6 + 98,304; data field 1 + 3 + D; E = 22 + 34 + 98,314 + 8 = 98,378; field
    // 1 + 3 + E = 98,382; framed 98,385, of which the metadata field's 8 are partsmeta.
    assert_eq!(sent(&sim, 0, Kind::Partial), (1, 98_385 - 8));
    assert_eq!(sent(&sim, 0, Kind::PartsMeta), (1, 8));
    assert_eq!(row(&sim, 1).1, P, "every part X got it had already");
}

// T2: a node missing k parts gets exactly those k parts' bytes (plus framing) from its
// one peer, eager push off: A's metadata, B's metadata, A's data.
#[test]
fn t2_a_node_missing_k_parts_receives_exactly_those_parts() {
    for k in [1u32, 5, 8] {
        let missing = (1u128 << k) - 1;
        let c = partial_config(&["requests", "requests"], &[ALL, ALL & !missing], json!({}));
        let sim = run(&c, &line(2));
        assert_eq!(recv(&sim, 1, Kind::PartsMeta), (1, META_ONLY), "k = {k}");
        assert_eq!(
            recv(&sim, 1, Kind::Partial),
            (1, data_rpc(k.into())),
            "k = {k}"
        );
        assert_eq!(sent(&sim, 1, Kind::PartsMeta), (1, META_ONLY), "k = {k}");
        assert_eq!(sent(&sim, 1, Kind::Partial), (0, 0), "k = {k}");
        // Three one-way trips; no bandwidth limit, so no serialization time.
        assert_eq!(row(&sim, 1), (k, 0, 0, (T0 + 3 * L) as i64), "k = {k}");
        // B delivers the group when it holds every part.
        let d = &sim.output().deliveries;
        assert_eq!(
            (d.node.clone(), d.t_ns.clone()),
            (vec![1], vec![(T0 + 3 * L) as i64])
        );
    }
}

// T2 at 50 Mbit upload: each of the three RPCs is also serialized on its sender's uplink
// (67, 67 and 2,118 bytes), and the small RPCs fit TCP's initial window, so B completes
// 3L + 2,252 x 8 bits / 50 Mbit/s = 75 ms + 360.32 us after the publish.
#[test]
fn t2_at_50_mbit_the_three_trips_add_their_serialization() {
    let mut c = partial_config(&["requests", "requests"], &[ALL, ALL & !1], json!({}));
    c.network.upload_bps = vec![50_000_000; 2];
    let sim = run(&c, &line(2));
    let serialization = (67 + 67 + 2118) * 8 * 1_000_000_000 / 50_000_000;
    assert_eq!(row(&sim, 1).3, (T0 + 3 * L + serialization) as i64);
}

// T3: a peer that does not request partial messages gets the full message.
#[test]
fn t3_a_peer_without_the_extension_gets_the_full_message() {
    let c = partial_config(&["requests", "none"], &[ALL, 0], json!({}));
    let sim = run(&c, &line(2));
    assert_eq!(recv(&sim, 1, Kind::Payload), (1, FULL_MESSAGE));
    assert_eq!(recv(&sim, 1, Kind::Partial), (0, 0));
    assert_eq!(recv(&sim, 1, Kind::PartsMeta), (0, 0));
    // A full message goes with go's IDONTWANT on publish (topic.go:validate).
    assert_eq!(recv(&sim, 1, Kind::Idontwant).0, 1);
    let (parts_recv, _, full_recv, t) = row(&sim, 1);
    assert_eq!((parts_recv, full_recv, t), (P, 1, (T0 + L) as i64));
}

#[test]
fn t3_hellos_carry_the_extensions_control_message() {
    // One SubOpts is 30 bytes (both partial flags, go v0.17.0) and the frame 1: 31 B.
    // A node with the extension adds ControlExtensions in the control field: 6 B more.
    let c = partial_config(&["requests", "none"], &[ALL, 0], json!({}));
    let mut sim = Simulation::new(&c, &line(2), &messages(0, T0, 0, 1, P * 2048)).unwrap();
    sim.run_until(MS);
    let hello = |n: u32| sim.traffic(n).iter().map(|k| k.bytes_sent).sum::<u64>();
    assert_eq!((hello(0), hello(1)), (37, 31));
    assert_eq!(sent(&sim, 0, Kind::Extensions), (1, 4));
}

#[test]
fn t3_a_supporting_peer_gets_the_full_message_and_only_metadata() {
    let c = partial_config(&["requests", "supports"], &[ALL, 0], json!({}));
    let sim = run(&c, &line(2));
    assert_eq!(recv(&sim, 1, Kind::Payload), (1, FULL_MESSAGE));
    // No parts ever go to a peer that does not request them (partialmsgs.go:187-189).
    assert_eq!(recv(&sim, 1, Kind::Partial), (0, 0));
    assert_eq!(recv(&sim, 1, Kind::PartsMeta), (1, META_ONLY));
    // C' sends its metadata when it learns the group (nothing held) and again when the
    // full message gives it every part.
    assert_eq!(sent(&sim, 1, Kind::PartsMeta), (2, 2 * META_ONLY));
}

#[test]
fn t3_a_supporting_relay_serves_a_requester_with_parts_not_the_full_message() {
    // Line A - C' - B, B requests: C' forwards the full message to nobody and serves B
    // with parts after B's metadata.
    let c = partial_config(
        &["requests", "supports", "requests"],
        &[ALL, 0, 0],
        json!({}),
    );
    let sim = run(&c, &line(3));
    assert_eq!(recv(&sim, 2, Kind::Payload), (0, 0));
    assert_eq!(recv(&sim, 2, Kind::Partial).0, 1);
    let (parts_recv, dup, full, t) = row(&sim, 2);
    assert_eq!((parts_recv, dup, full), (P, 0, 0));
    assert!(t > 0);
}

// T4: group state expires after its TTL: a group last published before heartbeat h1
// lives through h3 (TTL 3, 2, 1, 0) and is deleted at h4 (partialmsgs.go:Heartbeat).
#[test]
fn t4_group_state_expires_at_the_fourth_heartbeat_after_the_last_publish() {
    for ttl in [3, 1] {
        let c = partial_config(
            &["requests", "requests"],
            &[ALL, ALL & !1],
            json!({"group_ttl_heartbeats": ttl}),
        );
        let mut sim = Simulation::new(&c, &line(2), &messages(0, T0, 0, 1, P * 2048)).unwrap();
        // The exchange of T2 ends at T0 + 3L; A last publishes at T0 + 2L.
        sim.run_until(T0 + 3 * L + MS);
        let start = sim.heartbeat_ticks(0);
        let mut t = T0 + 3 * L + MS;
        while sim.heartbeat_ticks(0) < start + 4 {
            assert!(sim.partial_group_alive(0, 0), "ttl {ttl}");
            t += MS;
            sim.run_until(t);
        }
        assert!(!sim.partial_group_alive(0, 0), "ttl {ttl}: deleted at h4");
    }
}

// T5: the limits on groups peers open (partialmsgs.go:peerInitiatedGroupCounter, 8 per
// peer and 255 in all per topic by default) count groups only while they stay
// peer-initiated. The go-reference application answers every group it learns with
// PublishPartial (its request), which makes the group its own and releases the count
// (partialmsgs.go:groupState, 141-145): so 9 groups from one peer all get through.
// The limits themselves are checked on the library (partial/library.rs tests).
#[test]
fn t5_groups_the_application_adopts_do_not_count_against_the_limit() {
    let c = partial_config(&["requests", "requests"], &[ALL, ALL], json!({}));
    let mut sim = Simulation::new(&c, &line(2), &messages(0, 9 * S, 0, 1, P * 2048)).unwrap();
    sim.run_until(2 * S);
    for group in 100..109 {
        let partial = PartialRpc {
            topic: 0,
            group,
            data: 0,
            meta: Some(ALL),
        };
        let control = Control {
            partial: Some(partial),
            ..Control::default()
        };
        sim.inject(1, 0, control);
    }
    sim.run_until(2 * S + 100 * MS);
    assert_eq!(drops(&sim, "partial-group-limit"), 0);
    let opened = (100..109)
        .filter(|&g| sim.partial_group_alive(0, g))
        .count();
    assert_eq!(opened, 9);
    // Each adopted group is answered with node 0's metadata (it holds none of them).
    assert_eq!(sent(&sim, 0, Kind::PartsMeta).0, 9);
}

// Heartbeat gossip: a node that supports partial messages sends no IHAVE to a peer that
// requests them (gossipsub.go:emitGossip 2069-2080); it sends that peer its groups'
// metadata instead (partialmsgs.go:EmitGossip, the application's OnEmitGossip). On a
// 12-node full graph (D = 6, so each node has non-mesh peers) every node requests.
#[test]
fn gossip_to_requesting_peers_is_partial_metadata_not_ihave() {
    let gossip = |role: &str| {
        let roles = vec![role; 12];
        let mut held = vec![0u128; 12];
        held[0] = ALL;
        let c = partial_config(&roles, &held, json!({}));
        let mut sim = Simulation::new(&c, &full(12), &messages(0, T0, 0, 1, P * 2048)).unwrap();
        sim.run();
        let total = |k: Kind| (0..12).map(|n| sent(&sim, n, k).0).sum::<u64>();
        let complete = sim
            .partial_rows()
            .unwrap()
            .t_complete_ns
            .iter()
            .all(|&t| t > 0);
        (total(Kind::Ihave), complete)
    };
    let (ihave, complete) = gossip("requests");
    assert_eq!(ihave, 0);
    assert!(complete);
    // The same graph without the extension gossips the message with IHAVE.
    assert!(gossip("none").0 > 0);
}

#[test]
fn without_partial_messages_version_1_3_sends_what_1_2_sends() {
    // go without WithPartialMessagesExtension sends no extensions message, and 1.3 is
    // 1.2 otherwise: the same run, byte for byte.
    let run_version = |version: &str| {
        let patch = json!({"protocol": {"version": version}});
        let c = config(6, "gossipsub", 10 * MS, 8 * S, 3, patch);
        let mut sim =
            Simulation::new(&c, &full(6), &messages(0, 6 * S, 100 * MS, 5, 2000)).unwrap();
        sim.run();
        let traffic: Vec<u64> = (0..6)
            .flat_map(|n| {
                sim.traffic(n)
                    .iter()
                    .map(|k| k.bytes_sent)
                    .collect::<Vec<_>>()
            })
            .collect();
        (traffic, sim.output().deliveries.t_ns.clone())
    };
    assert_eq!(run_version("1.3"), run_version("1.2"));
}
