//! What a publisher does with its own message, and what comes back to it: the v2.0
//! lazy-push coin, IDONTWANT on publish, copies back to an anonymous author. Each
//! expectation is worked out from the reference code named in the test: go-libp2p-pubsub
//! v0.17.0 for 1.1 and 1.2, the v2.0 fork (ppopth/go-libp2p-pubsub@cfecb8a) for 2.0.

mod common;
use common::*;

use gossiplab_engine::{EdgeProperties, Simulation};
use serde_json::{json, Value};

const PAYLOAD: usize = 0;
const IDONTWANT: usize = 5;
const IANNOUNCE: usize = 6;
const INEED: usize = 7;

/// Each edge's one-way latency in both directions, no loss.
fn latencies(ms: &[u64]) -> EdgeProperties {
    EdgeProperties {
        latency_ns: ms.iter().flat_map(|&m| [m * MS, m * MS]).collect(),
        loss: vec![],
    }
}

/// P(0), A(1), B(2): P-A, A-B and P-B with the given latencies; one message of `size`
/// bytes from P at 3 s.
fn triangle(ms: [u64; 3], size: u32, patch: Value) -> Simulation {
    let edges = [(0, 1), (1, 2), (0, 2)];
    let c = config(3, "gossipsub", 0, 10 * S, 1, patch);
    let mut sim = Simulation::with_edge_properties(
        &c,
        &edges,
        &latencies(&ms),
        &messages(0, 3 * S, 0, 1, size),
    )
    .unwrap();
    sim.run();
    sim
}

fn payload_sent(sim: &Simulation, node: u32) -> u64 {
    sim.traffic(node)[PAYLOAD].msgs_sent
}

fn duplicates_at(sim: &Simulation, node: u32) -> u32 {
    let d = &sim.output().deliveries;
    (0..d.len())
        .filter(|&i| d.node[i] == node)
        .map(|i| d.duplicates[i])
        .sum()
}

fn no_author() -> Value {
    json!({"signing": "strict-no-sign", "message_id": "ethereum"})
}

#[test]
fn copies_back_to_an_anonymous_author() {
    // go `gossipsub.go:rpcs` skips `pid == from || pid == msg.GetFrom()`. P's copy
    // reaches A at 10 ms, A's reaches B at 20 ms (B's first); B forwards to its mesh
    // minus A = {P}: without an author that is a copy back to P at 120 ms, which P
    // traces DUPLICATE_MESSAGE (`pubsub.go:shouldPush`). P's own copy reaches B at 100 ms.
    let sim = triangle([10, 10, 100], 1000, json!({"protocol": no_author()}));
    let sent: Vec<u64> = (0..3).map(|n| payload_sent(&sim, n)).collect();
    assert_eq!(sent, [2, 1, 1], "P to A and B, A to B, B back to P");
    assert_eq!(sim.output().publisher_duplicates(0), 1);
    assert_eq!(sim.messages()[0].receipts, 4, "A 1, B 2, P 1");
    assert_eq!((duplicates_at(&sim, 1), duplicates_at(&sim, 2)), (0, 1));
    let r = sim.output().receipts.as_ref().unwrap();
    let at_p: Vec<(i64, bool)> = (0..r.msg.len())
        .filter(|&i| r.node[i] == 0)
        .map(|i| (r.t_ns[i], r.duplicate[i]))
        .collect();
    assert_eq!(at_p, [((3 * S + 120 * MS) as i64, true)]);

    // With an author (strict-sign) nobody sends it back.
    let signed = triangle([10, 10, 100], 1000, json!({}));
    let sent: Vec<u64> = (0..3).map(|n| payload_sent(&signed, n)).collect();
    assert_eq!(sent, [2, 1, 0]);
    assert_eq!(signed.output().publisher_duplicates(0), 0);
}

#[test]
fn publisher_idontwant_stops_the_boomerang() {
    // P-A 10, A-B 10, P-B 30 ms; B validates for 50 ms. B's first copy is A's (20 ms),
    // validated until 70 ms; P's IDONTWANT (urgent, sent on publish in go v0.17.0,
    // `topic.go:validate`) reaches B at 30 ms, so at 70 ms B skips P
    // (`gossipsub.go:rpcs`, the `unwanted` check).
    let run = |version: &str| {
        let mut protocol = no_author();
        protocol["version"] = json!(version);
        let patch = json!({
            "network": {"cpu_per_message_ns": [0, 0, 50 * MS]},
            "protocol": protocol
        });
        triangle([10, 10, 30], 2000, patch)
    };
    let v12 = run("1.2");
    assert_eq!(v12.output().publisher_duplicates(0), 0);
    assert_eq!(payload_sent(&v12, 2), 0);
    assert_eq!(drops(&v12, "saved-by-idontwant"), 1);
    // 1.1 has no IDONTWANT; the fork (2.0) sends none on publish (`topic.go:Publish`):
    // B's copy reaches P at 100 ms.
    for version in ["1.1", "2.0"] {
        let sim = run(version);
        assert_eq!(sim.output().publisher_duplicates(0), 1, "version {version}");
        assert_eq!(payload_sent(&sim, 2), 1, "version {version}");
    }
}

#[test]
fn publisher_idontwant_go_vs_fork() {
    // P(0)-A(1), one 2,000 B message. go v0.17.0: P tells its mesh on publish
    // (`topic.go:validate` -> `Preprocess`), A's only mesh peer is its sender, spared
    // (`Preprocess`, `from`). The fork: nothing on publish, and A's on-receipt IDONTWANT
    // goes to every mesh peer, the sender included (`PreValidation`).
    let idontwant_ids = |protocol: Value, size: u32| {
        let c = config(
            2,
            "gossipsub",
            10 * MS,
            10 * S,
            1,
            json!({"protocol": protocol}),
        );
        let mut sim = Simulation::new(&c, &line(2), &messages(0, 3 * S, 0, 1, size)).unwrap();
        sim.run();
        assert_eq!(sim.output().deliveries.len(), 1, "A has the message");
        (
            sim.traffic(0)[IDONTWANT].msgs_sent,
            sim.traffic(1)[IDONTWANT].msgs_sent,
        )
    };
    assert_eq!(idontwant_ids(json!({"version": "1.2"}), 2000), (1, 0));
    assert_eq!(idontwant_ids(json!({"version": "2.0"}), 2000), (0, 1));
    // D_announce = D: P announces, A asks (INEED), P serves; A still tells P.
    assert_eq!(
        idontwant_ids(json!({"version": "2.0", "D_announce": 6}), 2000),
        (0, 1)
    );
    // go's threshold is on the data length: `len(msg.GetData()) < 1024` skips.
    assert_eq!(idontwant_ids(json!({"version": "1.2"}), 1023), (0, 0));
    assert_eq!(idontwant_ids(json!({"version": "1.2"}), 1024), (1, 0));
    // Each rule is a setting: the fork's on 1.2, go's on 2.0.
    let fork_on_12 = json!({"version": "1.2", "idontwant_on_publish": false,
                            "idontwant_to_sender": true});
    assert_eq!(idontwant_ids(fork_on_12, 2000), (0, 1));
    let go_on_20 = json!({"version": "2.0", "idontwant_on_publish": true,
                          "idontwant_to_sender": false});
    assert_eq!(idontwant_ids(go_on_20, 2000), (1, 0));
}

/// Star of 6 leaves around P (node 0): P's mesh is every leaf, each leaf's is {P}.
/// 2,000 messages of 1,000 B (no IDONTWANT) from P, 10 ms apart, version 2.0.
fn star_publisher(d_announce: usize, announce_own: &str) -> Simulation {
    let patch = json!({"protocol": {
        "version": "2.0", "D_announce": d_announce, "announce_own": announce_own
    }});
    let c = config(7, "gossipsub", 10 * MS, 30 * S, 7, patch);
    let mut sim = Simulation::new(&c, &star(6), &messages(0, 3 * S, 10 * MS, 2000, 1000)).unwrap();
    sim.run();
    assert_eq!(sim.mesh_peers(0, 0).len(), 6);
    assert_eq!(
        sim.output().deliveries.len(),
        12_000,
        "every leaf has every message"
    );
    sim
}

#[test]
fn publisher_coin_follows_the_fork() {
    // The fork tosses `rand.Intn(D) < Dannounce` for every mesh recipient of its own
    // messages as for relays (`gossipsub.go:Publish`, no own-message case): with
    // D_announce 3 of D 6, P's IANNOUNCEs ~ Binomial(12,000, 1/2), mean 6,000,
    // sigma 54.8; we accept +-4 sigma. Each announced leaf asks P (its only announcer),
    // so P still sends 12,000 payload copies (eager ones plus INEED answers).
    let coin = star_publisher(3, "coin");
    let announced = coin.traffic(0)[IANNOUNCE].msgs_sent;
    assert!((5781..=6219).contains(&announced), "{announced} IANNOUNCEs");
    let ineeds: u64 = (1..7).map(|n| coin.traffic(n)[INEED].msgs_sent).sum();
    assert_eq!(ineeds, announced);
    assert_eq!(payload_sent(&coin, 0), 12_000);

    // The spec draft (PR #653): the full message to the mesh unless D_announce = D.
    let eager = star_publisher(3, "eager");
    assert_eq!(eager.traffic(0)[IANNOUNCE].msgs_sent, 0);
    assert_eq!(payload_sent(&eager, 0), 12_000);
    for setting in ["coin", "eager"] {
        let all = star_publisher(6, setting);
        assert_eq!(all.traffic(0)[IANNOUNCE].msgs_sent, 12_000, "{setting}");
        let none = star_publisher(0, setting);
        assert_eq!(none.traffic(0)[IANNOUNCE].msgs_sent, 0, "{setting}");
    }
}
