//! Limited downlinks read as one packet FIFO, acknowledgements included
//! (`network.downlink_sharing = "packets"`). Every sender then releases through
//! congestion windows (`uplink_window.rs`; a `"fair"` uplink serves them in turns, an
//! unlimited one writes what they allow at once).
//!
//! A real downlink queues packets: the testbed's is HTB with a 10,000-packet `pfifo`
//! (`netns.py`), simnet's a FIFO link. Two things follow that whole RPCs cannot show:
//!
//! - A TCP sender's window opens as its segments are acknowledged, and a receiver
//!   acknowledges a segment when it has it, after the downlink's queue. So a window
//!   larger than the path's bandwidth-delay product only lengthens that queue; what
//!   reaches the receiver each round trip is what its downlink read.
//! - Acknowledgements come back through the sender's own downlink, behind the packets
//!   queued there. A node that relays a large message while new copies fill its
//!   downlink gets its acknowledgements late, and its window, kept closed, stalls the
//!   relay. Senders in slow start (where Linux puts a connection back after idle,
//!   `tcp_slow_start_after_idle`) send two bytes for each acknowledged, so their
//!   copies reach that queue at twice the rate it drains, and the wait grows.
//!
//! Each piece a window releases (at most 16 KiB, `window.rs`) travels its link's latency
//! once its last byte left the uplink and joins the receiver's downlink queue
//! (`Network::read_piece`), in order behind its connection's earlier pieces. Once read,
//! its acknowledgement travels back the reverse link's latency and crosses the sender's
//! downlink as soon as everything queued there before it has been read
//! (`Network::ack_through`); then the window applies it (`Window::acknowledged_at`). The
//! RPC a piece ends is in the receiver's hands when that piece has been read; jitter and
//! lost segments delay that last piece (`Network::propagate_windowed`) and, in order,
//! what follows it on the connection.
//!
//! Simplified: acknowledgements take no room in the queue they cross (about 2 % of the
//! data's bytes: one 66-byte frame per two 1,514-byte ones), the queue never drops
//! (the testbed's holds 14.6 MB), the receiver acknowledges each piece at once (no
//! delayed acknowledgements). yamux's window updates (`cpu.event_loop`), data frames
//! of the reverse direction, cross the downlink as acknowledgements do
//! (`update_arrive`).
//!
//! Events: two per piece (its arrival, its acknowledgement's), instead of one per RPC.

use crate::config::Time;
use crate::queue::{Event, NO_RPC};
use crate::sim::Simulation;

impl Simulation {
    /// `sender`'s uplink wrote a piece of `bytes` on `link`, the last of `rpc` if one:
    /// it travels to the receiver's downlink.
    pub(crate) fn send_piece(&mut self, sender: u32, link: u32, bytes: u64, rpc: Option<u32>) {
        let now = self.now();
        let latency = self.links.latency[link as usize];
        let rpc = rpc.filter(|&r| !self.lost_to_fault(sender, link, r));
        let arrival = match rpc {
            Some(r) => {
                let rpc_bytes = self.rpcs.get(r).total_bytes();
                self.net.propagate_windowed(now, link, latency, rpc_bytes)
            }
            None => self.net.arrive(link, now + latency),
        };
        let event = Event::PieceArrive {
            link,
            bytes: bytes as u32,
            rpc: rpc.unwrap_or(NO_RPC),
        };
        self.queue.push(arrival, sender, event);
    }

    /// A piece reached the receiver's downlink: read in its turn, it completes its RPC
    /// if it ends one, and its acknowledgement heads back.
    pub(crate) fn piece_arrive(&mut self, link: u32, bytes: u32, rpc: u32) {
        let now = self.now();
        let l = link as usize;
        let (sender, receiver) = (self.links.owner[l], self.links.peer[l]);
        let up_bps = self.net.upload_bps(sender);
        let read = self.net.read_piece(now, receiver, u64::from(bytes), up_bps);
        if rpc != NO_RPC {
            self.queue
                .push(read, receiver, Event::Receive { link, rpc });
        }
        let back = self.links.latency[self.links.reverse[l] as usize];
        self.queue
            .push(read + back, receiver, Event::AckArrive { link, bytes });
    }

    /// The acknowledgement of `bytes` sent on `link` reached the sender: its window
    /// has it once the sender's downlink let it through, and a connection waiting for
    /// room looks again then.
    pub(crate) fn ack_arrive(&mut self, link: u32, bytes: u32) {
        let sender = self.links.owner[link as usize];
        let at: Time = self.net.ack_through(self.now(), sender);
        self.transport
            .window(link)
            .acknowledged_at(at, u64::from(bytes));
        if self.transport.links[link as usize].has_unreleased() {
            self.wake_window(sender, link, at);
        }
    }

    /// A yamux window update for `stream` reached the stream's sender: it applies once
    /// the sender's downlink let it through.
    pub(crate) fn update_arrive(&mut self, stream: u32, delta: u32) {
        let sender = self.links.owner[stream as usize];
        let at = self.net.ack_through(self.now(), sender);
        let update = Event::WindowUpdate {
            link: stream,
            delta,
        };
        self.queue.push(at, sender, update);
    }
}
