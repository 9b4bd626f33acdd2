//! Packet downlinks (`downlink_sharing = "packets"`), against closed forms of their
//! rules (`downlink_packets.rs`): the pieces that windows release cross the receiver's
//! downlink as one FIFO, each is acknowledged once read, and an acknowledgement crosses
//! its sender's downlink behind every byte queued there. A 10 Mbit downlink reads a byte
//! in exactly 800 ns, so reading times are whole numbers.

mod common;
use common::*;

use gossiplab_engine::config::{DownlinkSharing, UplinkSharing};
use gossiplab_engine::{EdgeProperties, Simulation};
use serde_json::{json, Value};

const DOWN_BPS: u64 = 10_000_000;
const NS_PER_BYTE: u64 = 800;

/// Uplink disciplines with windows: their pieces cross packet downlinks.
const WINDOWED: [&str; 3] = ["fair", "window", "shadow"];

/// Floodsub on a line 1 - 0 - 2 with 20 ms links; `network` patches the network.
fn line_run(network: Value, schedule: &gossiplab_engine::Schedule) -> Simulation {
    let patch = json!({ "network": network });
    let c = config(3, "floodsub", 20 * MS, 10 * S, 1, patch);
    let edges = [(0, 1), (0, 2)];
    let props = EdgeProperties {
        latency_ns: vec![20 * MS; 4],
        loss: vec![],
    };
    let mut sim = Simulation::with_edge_properties(&c, &edges, &props, schedule).unwrap();
    sim.run();
    sim
}

/// When `node` received message `msg`.
fn receipt(sim: &Simulation, msg: u32, node: u32) -> u64 {
    let d = &sim.output().deliveries;
    (0..d.msg.len())
        .find(|&i| d.msg[i] == msg && d.node[i] == node)
        .map(|i| d.t_ns[i] as u64)
        .expect("delivered")
}

/// Wire bytes of one copy of the message that `node`, the only sender of messages,
/// sent `copies` times.
fn copy_bytes(sim: &Simulation, node: u32, copies: u64) -> u64 {
    sim.traffic(node)[0].bytes_sent / copies
}

#[test]
fn an_open_window_reaches_a_slow_downlink_at_once_and_is_read_piece_after_piece() {
    // Node 0 sends 1 MB to node 1 through node 1's 10 Mbit downlink, the window open
    // (no slow start) and the uplink unlimited: every piece arrives one latency after
    // the publication and the downlink reads them back to back, a byte per 800 ns.
    for uplink in WINDOWED {
        let network = json!({
            "initial_window_segments": 0,
            "slow_start_after_idle": uplink != "shadow",
            "uplink_sharing": uplink,
            "downlink_sharing": "packets",
            "download_bps": [0, DOWN_BPS, 0],
        });
        let sim = line_run(network, &messages(0, S, 0, 1, 1_000_000));
        let copy = copy_bytes(&sim, 0, 2);
        assert_eq!(
            receipt(&sim, 0, 1) - S,
            20 * MS + copy * NS_PER_BYTE,
            "{uplink}"
        );
        // Node 2's downlink is unlimited: one latency.
        assert_eq!(receipt(&sim, 0, 2) - S, 20 * MS, "{uplink}");
    }
}

#[test]
fn slow_start_is_clocked_by_the_downlink_it_fills() {
    // From 10 segments, 1 MB needs six extra round trips of 40 ms when a window's bytes
    // arrive all at once (the whole-RPC downlinks' closed form): 240 ms on top of the
    // 800 ms the downlink takes to read it. Read as packets, each round's bytes are read
    // while the next rounds are on their way: once the window holds the path's
    // bandwidth-delay product (50 kB at 10 Mbit and 40 ms, from the third round) the
    // downlink never idles, so the copy is read at most three round trips after it would
    // be with the window open.
    let network = |sharing: &str| {
        json!({
            "initial_window_segments": 10,
            "slow_start_after_idle": false,
            "uplink_sharing": "fair",
            "downlink_sharing": sharing,
            "download_bps": [0, DOWN_BPS, 0],
        })
    };
    let packets = line_run(network("packets"), &messages(0, S, 0, 1, 1_000_000));
    let fair = line_run(network("fair"), &messages(0, S, 0, 1, 1_000_000));
    let open = 20 * MS + 1_000_000 * NS_PER_BYTE;
    let t = receipt(&packets, 0, 1) - S;
    assert!(t > open && t < open + 3 * 40 * MS, "{t}");
    let whole = receipt(&fair, 0, 1) - S;
    assert!(whole >= open + 6 * 40 * MS - 6 * 12 * MS, "{whole}");
    assert!(whole > t + 100 * MS, "{whole} {t}");
}

#[test]
fn acknowledgements_wait_behind_the_senders_downlink_queue() {
    // Windows of 1,000 segments (1.46 MB). At 1 s node 0 publishes 2 MB and node 2
    // publishes 1 MB; node 0 reads through a 10 Mbit downlink, the others without limit.
    // Node 2's copy reaches node 0 whole at 1.02 s and is read by 1.02 s + its bytes x
    // 800 ns. Node 0's first window reaches node 1 at 1.02 s and is acknowledged at once,
    // but the acknowledgements reach node 0's downlink at 1.04 s, behind node 2's copy:
    // they cross it when node 0 has that copy, and the rest of node 0's message reaches
    // node 1 one latency later.
    let schedule = then(
        messages(0, S, 0, 1, 2_000_000),
        messages(2, S, 0, 1, 1_000_000),
    );
    let network = |uplink: &str, downlink: &str| {
        json!({
            "initial_window_segments": 1000,
            "slow_start_after_idle": false,
            "uplink_sharing": uplink,
            "downlink_sharing": downlink,
            "download_bps": [DOWN_BPS, 0, 0],
        })
    };
    for uplink in WINDOWED {
        let sim = line_run(network(uplink, "packets"), &schedule);
        let has_copy = receipt(&sim, 1, 0);
        let read = copy_bytes(&sim, 2, 1) * NS_PER_BYTE;
        assert_eq!(has_copy, S + 20 * MS + read, "{uplink}");
        assert_eq!(receipt(&sim, 0, 1), has_copy + 20 * MS, "{uplink}");
    }
    // Whole-RPC downlinks take acknowledgements to come back a round trip after the
    // bytes left: the second window leaves at 1.04 s and arrives at 1.06 s.
    let fair = line_run(network("window", "fair"), &schedule);
    assert_eq!(receipt(&fair, 0, 1), S + 60 * MS);
}

#[test]
fn a_fair_uplink_serves_the_windows_in_turns_a_piece_each() {
    // The hub writes 200 kB to each of two leaves (10 ms links, windows open, 10 bytes a
    // microsecond). In turns the two copies' pieces alternate, so the first copy is done
    // once all but the second's last piece are written; one FIFO of pieces in release
    // order writes the first copy whole, then the second.
    let network = json!({"initial_window_segments": 0, "downlink_sharing": "packets"});
    let (mut turns, wire) = star_uplink_run(&[10 * MS; 2], 200_000, "fair", network.clone());
    turns.sort_unstable();
    let last_piece = wire % (16 * 1024);
    assert_eq!(turns[0], uplink_write_ns(2 * wire - last_piece) + 10 * MS);
    assert_eq!(turns[1], uplink_write_ns(2 * wire) + 10 * MS);
    let (mut fifo, _) = star_uplink_run(&[10 * MS; 2], 200_000, "window", network);
    fifo.sort_unstable();
    assert_eq!(fifo[0], uplink_write_ns(wire) + 10 * MS);
    assert_eq!(fifo[1], uplink_write_ns(2 * wire) + 10 * MS);
}

#[test]
fn packets_need_windows_which_a_fifo_of_whole_rpcs_has_not() {
    let mut c = config(2, "floodsub", 0, S, 1, json!({}));
    c.network.uplink_sharing = UplinkSharing::Fifo;
    c.network.downlink_sharing = DownlinkSharing::Packets;
    let (field, message) = refusal(&c, &line(2));
    assert_eq!(field, "network.downlink_sharing");
    assert!(message.contains("uplink_sharing"), "{message}");
}

/// Node 0 bursts 400 RPCs of 1,000 bytes at 100 ms to node 2 through yamux's 256 KiB
/// stream window (event loop on hosts of two nodes, open TCP windows, 10 ms links)
/// while node 3 sends node 0 one 20 kB copy; node 0 reads through `node0_down` bit/s.
/// Node 2's receipts of node 0's messages, in order, and node 0's of node 3's.
fn burst_behind_a_copy(node0_down: u64) -> (Vec<u64>, u64) {
    let cpu = json!({
        "nodes_per_host": 2, "cores": 1, "time_slice_ns": 100 * MS,
        "per_rpc_received_ns": 10 * US, "event_loop": true,
    });
    let network = json!({
        "initial_window_segments": 0, "downlink_sharing": "packets",
        "download_bps": [node0_down, 0, 0, 0],
    });
    let c = config(
        4,
        "floodsub",
        10 * MS,
        2 * S,
        1,
        json!({"cpu": cpu, "network": network}),
    );
    let schedule = then(
        messages(3, 100 * MS, 0, 1, 20_000),
        messages(0, 100 * MS, US, 400, 1000),
    );
    let mut sim = Simulation::new(&c, &[(0, 2), (3, 0)], &schedule).unwrap();
    sim.run();
    let d = &sim.output().deliveries;
    let mut burst: Vec<u64> = (0..d.msg.len())
        .filter(|&i| d.node[i] == 2 && d.msg[i] > 0)
        .map(|i| d.t_ns[i] as u64)
        .collect();
    burst.sort_unstable();
    (burst, receipt(&sim, 0, 0))
}

#[test]
fn a_yamux_window_update_waits_behind_the_senders_downlink_queue() {
    // Node 2 grants the window back once it has read half of it (util.go:GrowTo), about
    // 11 ms after the burst; the update reaches node 0 10 ms later, where node 3's copy
    // (at 1 Mbit: 160 ms of reading from 110 ms) fills the downlink: the update comes
    // through when node 0 has that copy, so node 2 gets nothing more of the burst until
    // one latency after that. With node 0's downlink unlimited, it comes 20 ms later.
    let (burst, has_copy) = burst_behind_a_copy(1_000_000);
    assert!(has_copy >= 270 * MS, "{has_copy}");
    let first_window = burst.iter().filter(|&&t| t < has_copy).count();
    assert!(
        first_window > 100 && first_window < burst.len(),
        "{first_window}"
    );
    assert!(burst[first_window] >= has_copy + 10 * MS, "{burst:?}");
    let (open, _) = burst_behind_a_copy(0);
    assert_eq!(open.len(), burst.len());
    assert!(open[first_window] < 150 * MS, "{open:?}");
}
