//! The network model against closed forms: serialization, ordering, fair sharing, TCP
//! loss, CPU saturation and the outbound queue.

mod common;
use common::*;

use gossiplab_engine::config::NetworkConfig;
use gossiplab_engine::network::{loss_cost, segments, serialization_ns, Network};
use gossiplab_engine::wire::WireSizes;
use gossiplab_engine::Simulation;
use serde_json::json;

/// Framed bytes of a signed message of `size` payload bytes (go ids, 20-char topic).
fn wire_bytes(size: u64) -> u64 {
    let c = config(2, "floodsub", 0, S, 1, json!({}));
    WireSizes::frame(WireSizes::new(&c.protocol).publish_field(size))
}

#[test]
fn one_megabyte_over_ten_megabytes_per_second_and_50ms_arrives_after_150ms() {
    let publish_at = 100 * MS;
    let c = config(
        2,
        "floodsub",
        50 * MS,
        2 * S,
        1,
        json!({"network": {"upload_bps": [80_000_000, 0]}}),
    );
    let mut sim = Simulation::new(&c, &line(2), &messages(0, publish_at, 0, 1, 1_000_000)).unwrap();
    sim.run();
    let bytes = wire_bytes(1_000_000);
    // 100 ms of serialization for the megabyte, plus the framing bytes, plus 50 ms.
    let expected = publish_at + 50 * MS + serialization_ns(bytes, 80_000_000);
    assert_eq!(sorted_delivery_times(&sim), vec![expected]);
    assert!(
        expected - publish_at - 150 * MS < MS,
        "framing adds well under a millisecond"
    );
}

#[test]
fn back_to_back_messages_arrive_in_order_spaced_by_serialization() {
    let c = config(
        2,
        "floodsub",
        20 * MS,
        2 * S,
        1,
        json!({"network": {"upload_bps": [8_000_000, 0]}}),
    );
    let mut sim = Simulation::new(&c, &line(2), &messages(0, 100 * MS, 0, 2, 50_000)).unwrap();
    sim.run();
    let d = &sim.output().deliveries;
    assert_eq!(d.msg, vec![0, 1], "published first, delivered first");
    let gap = (d.t_ns[1] - d.t_ns[0]) as u64;
    assert_eq!(gap, serialization_ns(wire_bytes(50_000), 8_000_000));
}

#[test]
fn eight_copies_of_128_kib_on_a_50_mbit_uplink_take_about_168ms_shared_fairly() {
    let leaves = 8;
    let mut upload = vec![0u64; leaves as usize + 1];
    upload[0] = 50_000_000;
    let c = config(
        leaves + 1,
        "floodsub",
        0,
        2 * S,
        1,
        json!({"network": {"upload_bps": upload}}),
    );
    let mut sim =
        Simulation::new(&c, &star(leaves), &messages(0, 100 * MS, 0, 1, 128 * 1024)).unwrap();
    sim.run();
    let times: Vec<u64> = sorted_delivery_times(&sim)
        .iter()
        .map(|t| t - 100 * MS)
        .collect();
    let total = serialization_ns(8 * wire_bytes(128 * 1024), 50_000_000);
    assert!(
        (total as f64 - 167.77e6).abs() < 0.5e6,
        "8 x 128 KiB at 50 Mbit is 167.8 ms"
    );
    assert_eq!(*times.last().unwrap(), total);
    // Fair sharing: nobody gets a full copy much before the others (FIFO would deliver
    // the first after 1/8 of the time).
    assert!(times[0] > total * 7 / 8 - 3 * MS, "{times:?}");
}

#[test]
fn mean_retransmission_delay_matches_the_loss_formula() {
    let p = 0.02;
    let latency = 30 * MS;
    let bytes = 20 * 1460; // 20 segments
    let config = NetworkConfig {
        latency: gossiplab_engine::config::LatencyModel::Constant { ns: latency },
        jitter_ns: 0,
        loss: p,
        initial_window_segments: 0,
        slow_start_after_idle: true,
        pacing: false,
        uplink_sharing: Default::default(),
        downlink_sharing: Default::default(),
        send_buffer_bytes: 0,
        connect_round_trips: 0,
        upload_bps: vec![0, 0],
        download_bps: vec![0, 0],
        cpu_per_message_ns: vec![0, 0],
        placement: None,
        shared_ips: Vec::new(),
    };
    let mut net = Network::new(&config, vec![p], 9);
    let trials = 40_000u64;
    let mut extra = 0u64;
    for i in 0..trials {
        // Sends far apart, so head-of-line blocking never carries a delay over.
        let sent = i * 10 * S;
        extra += net.propagate(sent, sent, 0, latency, bytes) - sent - latency;
    }
    let k = segments(bytes);
    let expected: f64 = (0..k)
        .map(|i| p * loss_cost(i, k, 2 * latency) as f64)
        .sum();
    let measured = extra as f64 / trials as f64;
    // Standard error of the mean is about 1.5% here; allow 6%.
    assert!(
        (measured / expected - 1.0).abs() < 0.06,
        "measured {measured}, formula {expected}"
    );
}

#[test]
fn a_saturated_cpu_falls_behind_and_a_small_validation_queue_drops() {
    // Node 1 needs 10 ms per message; node 0 sends one every millisecond.
    let c = config(
        2,
        "floodsub",
        MS,
        5 * S,
        1,
        json!({"network": {"cpu_per_message_ns": [0, 10 * MS]}, "protocol": {"validate_queue": 5}}),
    );
    let count = 100;
    let mut sim = Simulation::new(&c, &line(2), &messages(0, 100 * MS, MS, count, 100)).unwrap();
    sim.run();
    let delivered = sim.output().deliveries.len() as u64;
    let dropped: u64 = sim
        .output()
        .drops
        .iter()
        .filter(|(k, _)| k.reason == "validation-queue-full")
        .map(|(_, c)| c)
        .sum();
    assert_eq!(delivered + dropped, u64::from(count));
    // 100 ms of arrivals: one in service + 5 waiting at first, then one per 10 ms.
    assert!((15..=18).contains(&delivered), "delivered {delivered}");
    // It falls behind: the last delivery comes long after the last publication.
    let last = *sorted_delivery_times(&sim).last().unwrap();
    assert!(last >= 100 * MS + delivered * 10 * MS);
}

#[test]
fn a_full_outbound_queue_drops_exactly_what_exceeds_it() {
    // 50 messages at once to one peer over a slow uplink; without a transport buffer
    // the queue holds 10 waiting RPCs besides the one being written.
    let c = config(
        2,
        "floodsub",
        MS,
        60 * S,
        1,
        json!({"network": {"upload_bps": [1_000_000, 0], "send_buffer_bytes": 0}, "protocol": {"peer_outbound_queue": 10}}),
    );
    let mut sim = Simulation::new(&c, &line(2), &messages(0, 100 * MS, 0, 50, 1000)).unwrap();
    sim.run();
    assert_eq!(sim.output().deliveries.len(), 11);
    let dropped: u64 = sim
        .output()
        .drops
        .iter()
        .filter(|(k, _)| k.reason == "outbound-queue-full")
        .map(|(_, c)| c)
        .sum();
    assert_eq!(dropped, 39);
}

/// When node 0 (the hub of a 3-leaf star, 10 ms links, 50 Mbit downlink, everyone else
/// unlimited) first has each message: leaves 1 and 2 publish 1 MB at 1 s, leaf 3 10 kB at
/// 1.01 s. Senders with unlimited uplinks deliver at once, so nothing was read before
/// an RPC's last byte arrived.
fn hub_receipts(sharing: &str) -> Vec<u64> {
    let c = config(
        4,
        "floodsub",
        10 * MS,
        3 * S,
        1,
        json!({"network": {"download_bps": [50_000_000u64, 0, 0, 0], "downlink_sharing": sharing}}),
    );
    let schedule = then(
        then(
            messages(1, S, 0, 1, 1_000_000),
            messages(2, S, 0, 1, 1_000_000),
        ),
        messages(3, S + 10 * MS, 0, 1, 10_000),
    );
    let mut sim = Simulation::new(&c, &star(3), &schedule).unwrap();
    sim.run();
    let d = &sim.output().deliveries;
    (0..3)
        .map(|msg| {
            let row = (0..d.msg.len())
                .find(|&i| d.node[i] == 0 && d.msg[i] == msg)
                .expect("the hub got every message");
            d.t_ns[row] as u64
        })
        .collect()
}

#[test]
fn a_fair_downlink_lets_a_small_message_through_beside_large_ones() {
    // Both megabytes arrive at 1.010 s and share the link, 25 Mbit each; by 1.020 s each
    // has 250 kbit read. The 10 kB arrives then and gets a third: its bits over 50/3 Mbit.
    // The megabytes' bits left after that, at 25 Mbit each, end them together.
    let bits = |size: u64| 8 * wire_bytes(size);
    let small_read = 3 * bits(10_000) * 1_000 / 50; // ns at 50/3 Mbit
                                                    // Meanwhile each megabyte got as many bits as the 10 kB.
    let big_left = bits(1_000_000) - 250_000 - bits(10_000);
    let big_done = S + 20 * MS + small_read + big_left * 1_000 / 25;
    let t = hub_receipts("fair");
    assert_eq!(t[2], S + 20 * MS + small_read, "{t:?}");
    assert!(
        t[0].abs_diff(big_done) <= 1 && t[1].abs_diff(big_done) <= 1,
        "{t:?} vs {big_done}"
    );
    // One FIFO of whole RPCs (`Network::read`): the first megabyte as it arrives (an
    // idle downlink is taken to have read it meanwhile, whatever the sender's speed),
    // the second after it, then the 10 kB.
    let fifo = hub_receipts("fifo");
    let first = S + 10 * MS;
    let second = first + serialization_ns(wire_bytes(1_000_000), 50_000_000);
    let small = second + serialization_ns(wire_bytes(10_000), 50_000_000);
    assert_eq!(fifo, vec![first, second, small]);
}

#[test]
fn a_fair_downlink_slower_than_its_sender_reads_a_copy_from_its_first_byte() {
    // 1 MB from a 100 Mbit uplink to a 50 Mbit downlink over 20 ms: the first byte
    // arrives at 20 ms and the downlink reads at its own rate from then.
    let c = config(
        2,
        "floodsub",
        20 * MS,
        2 * S,
        1,
        json!({"network": {
            "upload_bps": [100_000_000u64, 0], "download_bps": [0, 50_000_000u64],
            "downlink_sharing": "fair"
        }}),
    );
    let publish_at = 100 * MS;
    let mut sim = Simulation::new(&c, &line(2), &messages(0, publish_at, 0, 1, 1_000_000)).unwrap();
    sim.run();
    let read = serialization_ns(wire_bytes(1_000_000), 50_000_000);
    let t = sorted_delivery_times(&sim)[0];
    assert!(t.abs_diff(publish_at + 20 * MS + read) <= 1, "{t}");
}

#[test]
fn a_fair_downlink_faster_than_the_sender_s_share_reads_a_copy_as_it_comes() {
    // Node 0 writes 500 kB to 4 peers in turn over 100 Mbit: each copy's bytes leave at
    // a quarter of that, 25 Mbit, and a 50 Mbit downlink keeps up with them, so every
    // copy is in its peer's hands when its last byte arrives, as with no downlink limit.
    // (Counted at the sender's line rate instead, the last half of each copy would
    // still be waiting: 40 ms late.)
    let times = |download: u64| {
        let mut down = vec![download; 5];
        down[0] = 0;
        let mut up = vec![0u64; 5];
        up[0] = 100_000_000;
        let c = config(
            5,
            "floodsub",
            10 * MS,
            2 * S,
            1,
            json!({"network": {"upload_bps": up, "download_bps": down, "downlink_sharing": "fair"}}),
        );
        let mut sim = Simulation::new(&c, &star(4), &messages(0, 100 * MS, 0, 1, 500_000)).unwrap();
        sim.run();
        sorted_delivery_times(&sim)
    };
    assert_eq!(times(50_000_000), times(0));
}
