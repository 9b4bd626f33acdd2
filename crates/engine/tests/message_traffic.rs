//! Per-message traffic accounting (`output.message_traffic`): what nodes sent about
//! each message, so traffic can be reported for measured messages only.

mod common;
use common::*;

use gossiplab_engine::wire::WireSizes;
use gossiplab_engine::Simulation;
use serde_json::json;

const PAYLOAD: usize = 0;
const IDONTWANT: usize = 5;

#[test]
fn each_message_counts_its_own_copies_and_ids() {
    // Line 0-1-2, version 1.2, two 2,000 B messages from node 0. Per message: 2 payload
    // copies (0 -> 1, 1 -> 2); IDONTWANT from 0 on publish (to 1) and from 1 on receipt
    // (to its mesh but the sender: 2); node 2's mesh but the sender is empty. Bytes: the
    // message's publish field for a copy, one id field for an id.
    let patch = json!({"protocol": {"version": "1.2"}, "output": {"message_traffic": true}});
    let c = config(3, "gossipsub", 10 * MS, 10 * S, 1, patch);
    let schedule = then(
        messages(0, 3 * S, 0, 1, 2000),
        messages(0, 4 * S, 0, 1, 3000),
    );
    let mut sim = Simulation::new(&c, &line(3), &schedule).unwrap();
    sim.run();
    let wire = WireSizes::new(&c.protocol);
    let counts = &sim.output().message_traffic.as_ref().unwrap().counts;
    for (msg, size) in [(0, 2000), (1, 3000)] {
        assert_eq!(counts[msg][PAYLOAD], (2, 2 * wire.publish_field(size)));
        assert_eq!(counts[msg][IDONTWANT], (2, 2 * wire.id_field()));
    }
    // The per-message counts add up to the traffic table's payload and IDONTWANT ids.
    let total = |k: usize| (0..3).map(|n| sim.traffic(n)[k].msgs_sent).sum::<u64>();
    assert_eq!(total(PAYLOAD), 4);
    assert_eq!(total(IDONTWANT), 4);
}

#[test]
fn off_by_default() {
    let c = config(3, "gossipsub", 10 * MS, 10 * S, 1, json!({}));
    let mut sim = Simulation::new(&c, &line(3), &messages(0, 3 * S, 0, 1, 2000)).unwrap();
    sim.run();
    assert!(sim.output().message_traffic.is_none());
}
