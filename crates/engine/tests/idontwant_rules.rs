//! When a node sends IDONTWANT, as go-libp2p-pubsub v0.17.0 (1.2) and the v2.0 fork
//! (ppopth/go-libp2p-pubsub@cfecb8a, 2.0) decide it; each case worked out by hand from
//! the code named in the test.

mod common;
use common::*;

use gossiplab_engine::{EdgeProperties, Simulation};
use serde_json::json;

const IDONTWANT: usize = 5;

/// P(0), A(1), T(2): P-A 10, A-T 10, P-T 50 ms; T validates for 200 ms; one 2,000 B
/// message from P at 3 s.
fn slow_validator(version: &str) -> Simulation {
    let edges = [(0, 1), (1, 2), (0, 2)];
    let patch = json!({
        "network": {"cpu_per_message_ns": [0, 0, 200 * MS]},
        "protocol": {"version": version}
    });
    let c = config(3, "gossipsub", 0, 10 * S, 1, patch);
    let props = EdgeProperties {
        latency_ns: [10, 10, 50]
            .iter()
            .flat_map(|&m| [m * MS, m * MS])
            .collect(),
        loss: vec![],
    };
    let mut sim =
        Simulation::with_edge_properties(&c, &edges, &props, &messages(0, 3 * S, 0, 1, 2000))
            .unwrap();
    sim.run();
    sim
}

#[test]
fn a_copy_arriving_during_validation_is_told_about_again() {
    // go v0.17.0: `shouldPush` only checks the seen cache (`pubsub.go:1630-1635`), and a
    // message is marked seen after validation (`validation.go:329`). T's first copy (A's,
    // 20 ms) makes T tell its mesh but A, i.e. P; P's copy (50 ms) arrives while the
    // first is still validating, so `Preprocess` runs again and tells the mesh but P,
    // i.e. A. P told A and T on publish (`topic.go:validate`); A told T.
    let go = slow_validator("1.2");
    let sent: Vec<u64> = (0..3).map(|n| go.traffic(n)[IDONTWANT].msgs_sent).collect();
    assert_eq!(sent, [2, 1, 2]);
    // The fork: nothing on publish, and `PreValidation` tells every mesh peer, the
    // sender too (`gossipsub.go:792-798`): A tells P and T; T tells both, twice.
    let fork = slow_validator("2.0");
    let sent: Vec<u64> = (0..3)
        .map(|n| fork.traffic(n)[IDONTWANT].msgs_sent)
        .collect();
    assert_eq!(sent, [0, 2, 4]);
    // Either way T delivers once and counts P's copy as a duplicate.
    for sim in [&go, &fork] {
        let d = &sim.output().deliveries;
        let t = (0..d.len()).find(|&i| d.node[i] == 2).unwrap();
        assert_eq!((d.t_ns[t] as u64, d.from_node[t]), (3 * S + 220 * MS, 1));
        assert_eq!(d.duplicates[t], 1);
    }
}
