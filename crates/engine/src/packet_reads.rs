//! On a time-sliced host a large RPC is read as its packets arrive, not whole.
//!
//! go-yamux's `session.go:recvLoop` reads the connection through Noise
//! (go-libp2p `p2p/security/noise/rw.go:Read`), which reads each transport message of up
//! to 65,535 bytes whole (`readNextMsgInsecure`: `io.ReadFull` on the connection) before
//! it decrypts it. Each read system call returns what the socket holds; one that finds
//! nothing parks the goroutine on the netpoller (`internal/poll/fd_unix.go:FD.Read`,
//! `pollDesc.waitRead`), and the next packet to arrive makes it runnable again (at once
//! on an idle node, at the next poll on a busy one: `goroutines.rs`). So while a large
//! RPC comes in over a limited uplink, the recvLoop takes a turn for each packet that
//! finds it parked, and one for all that arrived while it waited for its P or the core.
//!
//! How much comes at once is the sender's kernel's doing: TCP hands the device GSO
//! packets of about a millisecond of the connection's pacing rate
//! (`net/ipv4/tcp_output.c:tcp_tso_autosize`: `sk_pacing_rate >> sk_pacing_shift`, a
//! shift of 10, at least `tcp_min_tso_segs` = 2 segments, at most the device's 64 KiB),
//! the pacing rate being 120 % of the window over the round trip in congestion avoidance
//! (`tcp_input.c:tcp_update_pacing_rate`, `tcp_pacing_ca_ratio`), and such a packet
//! reaches the receiver's socket as one. Measured on the testbed (`perf record -e
//! syscalls:sys_exit_read` on a node of `scenarios/crosscheck/in-flight.toml`): the
//! recvLoop's reads held 4,725 bytes on average, 4,344 (three segments) at the median.
//! The model takes the connection's share of the uplink for the window over the round
//! trip; the real windows there are larger (kept from when fewer connections shared
//! the uplink: `bench/tcp_pacing.py` reads them), so the real packets are larger too.
//!
//! The model gives each such packet of an RPC but its last an arrival (`Event::Packet`):
//! the sender's uplink writes its chunks at the uplink's rate (`send.rs`), a connection
//! delivering the uplink's rate shared by the connections it serves, so each packet's
//! last byte leaves a known time into its chunk, and arrives a link latency later. Its
//! data is for the goroutine that reads the connection (the recvLoop; without the event
//! loop the stream's reader, which stands for the whole read path), a network read
//! (`Slices::submit`) that costs a turn when it finds that goroutine parked and nothing
//! otherwise; the RPC's own arrival (its last packet, `Event::Receive`) pays the
//! decryption of it all (`per_kb_received`). Simplified: the packets leave at the chunk's
//! pace, the slow-start rounds that the model adds to the RPC's arrival (`network.rs`)
//! and jitter delay its last packet only, and Noise's messages are decrypted together at
//! the end; a receiver's limited downlink, window sharing (`uplink_sharing = "window"`)
//! and a node with a core of its own (no goroutines modelled) read RPCs whole.

use crate::goroutines::Goroutine;
use crate::network::{serialization_ns, MSS};
use crate::queue::Event;
use crate::sim::Simulation;

/// TCP's pacing rate in congestion avoidance, in percent of the window over the round
/// trip (`net.ipv4.tcp_pacing_ca_ratio`); the model's rate is the connection's share.
const PACING_CA_RATIO: u64 = 120;

/// A GSO packet holds `pacing rate >> PACING_SHIFT` bytes (`sk_pacing_shift`: 1/1024 s).
const PACING_SHIFT: u32 = 10;

/// The fewest segments in a GSO packet (`net.ipv4.tcp_min_tso_segs`).
const MIN_TSO_SEGS: u64 = 2;

/// The most bytes in a GSO packet (`GSO_LEGACY_MAX_SIZE`, a veth's `gso_max_size`).
const GSO_MAX_BYTES: u64 = 65_536;

/// Bytes of the GSO packets a connection delivering `bytes_per_s` sends: whole segments,
/// `tcp_tso_autosize`'s count.
pub fn gso_packet_bytes(bytes_per_s: u64) -> u64 {
    let bytes = (bytes_per_s * PACING_CA_RATIO / 100) >> PACING_SHIFT;
    (bytes.min(GSO_MAX_BYTES) / MSS).max(MIN_TSO_SEGS) * MSS
}

/// The ends (bytes into the RPC) of the packets of `packet` bytes that a chunk writing
/// `[from, to)` of an RPC of `bytes` sends, the RPC's last packet excepted: every
/// `packet` bytes from `from`, and the chunk's end (the uplink then serves another
/// connection).
fn packet_ends(from: u64, to: u64, bytes: u64, packet: u64) -> impl Iterator<Item = u64> {
    (1..)
        .map(move |k| (from + k * packet).min(to))
        .take_while(move |&end| end < bytes)
        .scan(from, |last, end| {
            let fresh = end > *last;
            *last = end;
            fresh.then_some(end)
        })
}

impl Simulation {
    /// True if RPCs on `link` reach the goroutine that reads the connection packet by
    /// packet: on a time-sliced host (whose goroutines the model runs) where reading
    /// costs CPU, from an uplink of limited rate shared in chunks, with no limit on the
    /// receiver's downlink.
    pub(crate) fn reads_packets(&self, link: u32) -> bool {
        let reads_cost = self.cpu.charges_receiving() || !self.loops.is_empty();
        if !reads_cost || !self.cpu.time_sliced() || self.transport.windows {
            return false;
        }
        let sender = self.links.owner[link as usize];
        let receiver = self.links.peer[link as usize];
        self.net.upload_bps(sender) > 0 && !self.net.has_downlink_limit(receiver)
    }

    /// `node`'s uplink starts writing the next `chunk` bytes of RPC `rpc` on `link`: the
    /// GSO packets that end in the chunk, the RPC's last excepted, arrive one link
    /// latency after their last byte leaves. The connection delivers the uplink's rate
    /// shared by the connections it serves.
    pub(crate) fn send_packets(&mut self, node: u32, link: u32, rpc: u32, chunk: u64) {
        let bytes = self.rpcs.get(rpc).total_bytes().max(1);
        let from = bytes - self.transport.links[link as usize].head_left;
        let connections = self.transport.uplinks[node as usize].ring.len().max(1) as u64;
        let bps = self.net.upload_bps(node);
        let packet = gso_packet_bytes(bps / 8 / connections);
        let latency = self.links.latency[link as usize];
        let now = self.now();
        for end in packet_ends(from, from + chunk, bytes, packet) {
            let at = now + serialization_ns(end - from, bps) + latency;
            self.queue.push(at, node, Event::Packet { link });
        }
    }

    /// A packet of an RPC on `link`, not its last, arrived: its data is the recvLoop's
    /// to read (the reader's, without the event loop), a turn if that finds it parked.
    pub(crate) fn packet_arrived(&mut self, link: u32) {
        let receiver = self.links.peer[link as usize];
        if self.is_down(receiver) || self.partitioned(link) {
            return;
        }
        // Without the event loop the stream's reader stands for the whole read path.
        let reader = if self.loops.is_empty() {
            Goroutine::Reader(link)
        } else {
            Goroutine::RecvLoop(link)
        };
        self.cpu
            .submit(&mut self.queue, receiver, reader, 0, Event::PacketRead);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gso_packet_holds_a_millisecond_of_the_pacing_rate_in_whole_segments() {
        // 50 Mbit/s alone: 6.25 MB/s, paced at 7.5 MB/s, 7,324 bytes a ms: 5 segments.
        assert_eq!(gso_packet_bytes(6_250_000), 5 * MSS);
        // Shared by two: 3,662 bytes, 2 segments; by four, still the least, 2.
        assert_eq!(gso_packet_bytes(3_125_000), 2 * MSS);
        assert_eq!(gso_packet_bytes(1_562_500), 2 * MSS);
        // 10 Gbit/s: the device's 64 KiB, 44 segments.
        assert_eq!(gso_packet_bytes(1_250_000_000), 44 * MSS);
    }

    #[test]
    fn packets_end_every_packet_bytes_and_at_the_chunk_s_end_but_the_last() {
        let ends: Vec<u64> = packet_ends(0, 16_384, 100_000, 4_380).collect();
        assert_eq!(ends, vec![4_380, 8_760, 13_140, 16_384]);
        // The chunk that ends the RPC: its last packet is the RPC's arrival.
        let ends: Vec<u64> = packet_ends(16_384, 20_000, 20_000, 2_920).collect();
        assert_eq!(ends, vec![19_304]);
        // An RPC of one packet has none before its arrival.
        assert_eq!(packet_ends(0, 1_000, 1_000, 2_920).count(), 0);
    }
}
