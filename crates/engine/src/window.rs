//! One connection's congestion window, when a node's uplink is shared by windows
//! (`network.uplink_sharing = "window"`; the uplink side is in `send.rs`).
//!
//! A connection releases into its sender's uplink only what its window allows: bytes
//! released and not yet acknowledged count against it, including those still waiting in
//! the uplink's queue (Linux counts a segment in flight from the moment TCP hands it to
//! the qdisc: `tcp_output.c:tcp_write_xmit` checks `tcp_cwnd_test` against
//! `tcp_packets_in_flight`; quic-go's `sent_packet_handler.go:SentPacket` adds to
//! `bytesInFlight` when the packet is sent to the socket). The bytes that left the uplink
//! are acknowledged one round trip later; each acknowledgement frees its bytes and, in
//! slow start, grows the window by as many (Linux `tcp_cong.c:tcp_slow_start`,
//! `cwnd += acked`; quic-go `internal/congestion/cubic_sender.go:maybeIncreaseCwnd`, one
//! datagram per acknowledged datagram), but only while the connection used more than
//! half of its window (Linux `tcp.h:tcp_is_cwnd_limited` in slow start, quic-go
//! `cubic_sender.go:isCwndLimited`), so an idle or lightly used connection keeps its
//! window. No loss is modelled as a congestion event, so the window stays in slow start.
//!
//! Acknowledgements are kept per piece of at most 16 KiB that left the uplink, in order
//! (with packet downlinks, from when the receiver's downlink read the piece and the
//! sender's let the acknowledgement through: `downlink_packets.rs`), and applied when the connection next has something to release, or by an event when
//! it waits for them: events go with pieces and waits, not with packets.
//!
//! With `slow_start_after_idle`, a connection with nothing in flight that released
//! nothing for longer than its retransmission timeout restarts from a smaller window
//! (`tcp_output.c:tcp_cwnd_restart`, measured from `lsndtime`, the last transmission).
//! With pacing, releases also wait for quic-go's pacer (`internal/congestion/pacer.go`):
//! a bucket of at most `pacer_burst` bytes refilled at twice the window per round trip
//! (`cubic_sender.go:pacingRate` in slow start); a wait ends when the bucket holds the
//! whole next piece (at most one burst), so the last byte of each burst leaves when
//! quic-go's would, its first ones up to a burst's time later.

use std::collections::VecDeque;

use crate::config::Time;
use crate::network::{linux_rto, paced_bytes, pacer_burst, restart_window};

/// Largest piece a connection releases at once: the unit of the uplink's queue and of
/// acknowledgements.
pub const PIECE: u64 = 16 * 1024;

/// When an acknowledgement grows the window in slow start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Growth {
    /// Only while more than half of the window was in use (Linux
    /// `tcp.h:tcp_is_cwnd_limited`, quic-go `cubic_sender.go:isCwndLimited`).
    WhileUsed,
    /// By every acknowledged packet, whatever was in use (Shadow's legacy TCP,
    /// `tcp_cong_reno.c:ca_reno_slow_start_new_ack_ev_`: `cwnd += n`).
    Always,
}

/// The congestion window of one directed connection.
pub struct Window {
    /// Bytes the connection may have in flight.
    pub(crate) cwnd: u64,
    /// Bytes released into the uplink and not yet acknowledged.
    pub(crate) in_flight: u64,
    /// Acknowledgements on their way back: (when they reach the sender, bytes), in order.
    acks: VecDeque<(Time, u64)>,
    /// Index, among the link's RPCs, of the one being released (those before it are
    /// released whole), and its bytes still to release (0: none released yet).
    pub(crate) cursor: u32,
    pub(crate) cursor_left: u64,
    /// When the connection last released bytes (Linux's `lsndtime`); None: never.
    last_release: Option<Time>,
    /// Bytes in the pacer's bucket at `pace_at` (u64::MAX: full).
    pace_budget: u64,
    pace_at: Time,
    /// When a `WindowOpen` event is due for this connection, if any.
    pub(crate) wake_at: Option<Time>,
    /// Fair sharing with windows: the uplink turn of the last piece it released.
    last_turn: u64,
    /// Shadow sharing: when each RPC the transport holds was written (`Transport`'s
    /// order), oldest first; empty otherwise.
    pub(crate) written: VecDeque<u64>,
}

impl Window {
    /// A new connection's window of `initial` bytes.
    pub fn new(initial: u64) -> Self {
        Self {
            cwnd: initial,
            in_flight: 0,
            acks: VecDeque::new(),
            cursor: 0,
            cursor_left: 0,
            last_release: None,
            pace_budget: u64::MAX,
            pace_at: 0,
            wake_at: None,
            last_turn: 0,
            written: VecDeque::new(),
        }
    }

    /// Bytes the window lets the connection release now.
    pub fn room(&self) -> u64 {
        self.cwnd.saturating_sub(self.in_flight)
    }

    /// Apply the acknowledgements that reached the sender by `now`; the window grows by
    /// each one's bytes, up to `max`, while more than half of it was in use, or always
    /// (`growth`).
    pub fn acknowledge(&mut self, now: Time, max: u64, growth: Growth) {
        while let Some(&(at, bytes)) = self.acks.front() {
            if at > now {
                return;
            }
            self.acks.pop_front();
            let prior = self.in_flight;
            self.in_flight -= bytes;
            if growth == Growth::Always || prior > self.cwnd / 2 {
                self.cwnd = (self.cwnd + bytes).min(max);
            }
        }
    }

    /// The key, in the order of writing, of the piece released next (Shadow sharing).
    pub fn next_written(&self) -> u64 {
        self.written.get(self.cursor as usize).copied().unwrap_or(0)
    }

    /// The turn of the piece released now, the uplink writing turn `serving` (fair
    /// sharing with windows): the one after the connection's last, or `serving` if it
    /// fell behind (it had nothing to send for a while).
    pub fn next_turn(&mut self, serving: u64) -> u64 {
        self.last_turn = (self.last_turn + 1).max(serving);
        self.last_turn
    }

    /// When the next acknowledgement reaches the sender, if one is on its way.
    pub fn next_ack(&self) -> Option<Time> {
        self.acks.front().map(|&(at, _)| at)
    }

    /// A piece of `bytes` left the uplink at `now`; its acknowledgement comes `rtt` later.
    pub fn left(&mut self, now: Time, bytes: u64, rtt: Time) {
        self.acknowledged_at(now + rtt, bytes);
    }

    /// The acknowledgement of `bytes` reaches the sender at `at` (with packet
    /// downlinks, when it crossed the sender's downlink: `downlink_packets.rs`); they
    /// come in order.
    pub fn acknowledged_at(&mut self, at: Time, bytes: u64) {
        debug_assert!(self.acks.back().is_none_or(|&(last, _)| last <= at));
        self.acks.push_back((at, bytes));
    }

    /// Linux's restart after idle: nothing in flight and nothing released for longer
    /// than the retransmission timeout of a path with round trip `rtt`.
    pub fn restart_if_idle(&mut self, now: Time, initial: u64, rtt: Time) {
        if self.in_flight > 0 {
            return;
        }
        if let Some(last) = self.last_release {
            self.cwnd = restart_window(self.cwnd, initial, now - last, linux_rto(rtt));
        }
    }

    /// `bytes` released at `now`.
    pub fn release(&mut self, now: Time, bytes: u64) {
        self.in_flight += bytes;
        self.last_release = Some(now);
        self.cursor_left -= bytes;
        if self.cursor_left == 0 {
            self.cursor += 1;
        }
    }

    /// The pacer's bucket at `now` on a path with round trip `rtt`, after its refill.
    pub fn pacer_budget(&mut self, now: Time, rtt: Time) -> u64 {
        let burst = pacer_burst(self.cwnd, rtt);
        let refill = paced_bytes(now - self.pace_at, self.cwnd, rtt);
        let budget = (u128::from(self.pace_budget) + refill).min(u128::from(burst)) as u64;
        self.pace_budget = budget;
        self.pace_at = now;
        budget
    }

    /// `bytes` left the pacer's bucket (after `pacer_budget` at the same instant).
    pub fn pace(&mut self, bytes: u64) {
        self.pace_budget -= bytes;
    }

    /// When the bucket, refilled from its level at the last `pacer_budget`, holds `bytes`.
    pub fn pacer_ready_at(&self, bytes: u64, rtt: Time) -> Time {
        let missing = u128::from(bytes.saturating_sub(self.pace_budget));
        let ns = (missing * u128::from(rtt.max(1))).div_ceil(2 * u128::from(self.cwnd.max(1)));
        self.pace_at + ns as Time
    }

    /// The largest piece the pacer ever lets out at once.
    pub fn pacer_limit(&self, rtt: Time) -> u64 {
        pacer_burst(self.cwnd, rtt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::network::MSS;

    const MAX: u64 = 64 * 1024 * 1024;

    #[test]
    fn an_acknowledgement_grows_a_used_window_by_its_bytes() {
        // tcp_slow_start: cwnd += acked; only while more than half of it is in flight.
        let mut w = Window::new(10 * MSS);
        w.cursor_left = 100_000;
        w.release(0, 10 * MSS);
        w.left(5, 10 * MSS, 100);
        w.acknowledge(104, MAX, Growth::WhileUsed);
        assert_eq!((w.cwnd, w.in_flight), (10 * MSS, 10 * MSS), "not due yet");
        w.acknowledge(105, MAX, Growth::WhileUsed);
        assert_eq!((w.cwnd, w.in_flight), (20 * MSS, 0));
        // A quarter of the window in flight: acknowledged without growth.
        w.release(200, 5 * MSS);
        w.left(200, 5 * MSS, 100);
        w.acknowledge(300, MAX, Growth::WhileUsed);
        assert_eq!((w.cwnd, w.in_flight), (20 * MSS, 0));
    }

    #[test]
    fn shadow_grows_the_window_by_every_acknowledgement() {
        // tcp_cong_reno.c: cwnd += packets acked in slow start, however few were in use.
        let mut w = Window::new(10 * MSS);
        w.cursor_left = 100_000;
        w.release(0, MSS);
        w.left(0, MSS, 100);
        w.acknowledge(100, MAX, Growth::Always);
        assert_eq!((w.cwnd, w.in_flight), (11 * MSS, 0));
    }

    #[test]
    fn the_release_cursor_moves_to_the_next_rpc_when_one_is_released_whole() {
        let mut w = Window::new(10 * MSS);
        w.cursor_left = 3_000;
        w.release(0, 1_000);
        assert_eq!((w.cursor, w.cursor_left), (0, 2_000));
        w.release(0, 2_000);
        assert_eq!((w.cursor, w.cursor_left), (1, 0));
    }

    #[test]
    fn an_idle_window_restarts_only_with_nothing_in_flight() {
        // Linux: RTO = RTT + 200 ms; idle 2 s with a 40 ms round trip: back to initial.
        let mut w = Window::new(80 * MSS);
        w.cursor_left = 1_000;
        w.release(0, 1_000);
        w.restart_if_idle(2_000_000_000, 10 * MSS, 40_000_000);
        assert_eq!(w.cwnd, 80 * MSS, "in flight: kept");
        w.left(0, 1_000, 40_000_000);
        w.acknowledge(40_000_000, MAX, Growth::WhileUsed);
        w.restart_if_idle(2_000_000_000, 10 * MSS, 40_000_000);
        assert_eq!(w.cwnd, 10 * MSS);
    }

    #[test]
    fn the_pacer_refills_at_twice_the_window_per_round_trip() {
        // 28 segments (40,880 B) over 100 ms: 817.6 kB/s; burst 12,800 B (pacer.go).
        let rtt = 100_000_000;
        let mut w = Window::new(28 * MSS);
        assert_eq!(w.pacer_budget(0, rtt), 12_800);
        w.pace(12_800);
        // 12,800 B more take 12,800 / 817.6 kB/s = 15.656 ms.
        let ready = w.pacer_ready_at(12_800, rtt);
        assert_eq!(ready, (12_800u64 * rtt).div_ceil(2 * 28 * MSS));
        assert_eq!(w.pacer_budget(ready, rtt), 12_800);
    }
}
