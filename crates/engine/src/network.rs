//! How bytes cross the network once they leave a node's uplink.
//!
//! After serialization on the sender's uplink (`transport.rs`), an RPC travels the
//! link's propagation latency plus jitter, pays for lost TCP segments with
//! retransmission delays, and is read through the receiver's downlink. A connection
//! never reorders: an RPC never arrives before the one sent ahead of it on the same
//! link (TCP's in-order delivery, so a loss also delays what follows: head-of-line
//! blocking). Capacity 0 means unlimited.
//!
//! Loss as TCP sees it: an RPC of `k` segments (MSS 1460 bytes) loses each segment
//! independently with probability `p`; the network never loses a message. A lost
//! segment with at least three segments after it in the same RPC is recovered by fast
//! retransmit after one round trip; a lost tail segment waits for the retransmission
//! timeout, max(200 ms, RTT) (Linux's RTO floor). Losses are recovered one after the
//! other, so the extra delay is the sum of their costs.
//!
//! The downlink (`network.downlink_sharing`) reads whole RPCs one after the other in the
//! order they arrived, taking an idle downlink to have read an RPC while it arrived
//! (`read`), shares its capacity between the connections it is reading
//! (`downlink.rs`), or reads the pieces that windows release as one FIFO, through which
//! acknowledgements come back too (`read_piece`, `downlink_packets.rs`).
//!
//! Connection warm-up (optional): a new connection's congestion window starts at
//! `initial_window` segments and doubles per round trip while an RPC does not fit in it,
//! so the first large messages on a connection pay extra round trips (TCP slow start).
//! A round costs what the sender waits for acknowledgements: the round trip minus the
//! time the uplink took to write that round's window (at the rate it gave the RPC), so
//! on a busy uplink the waits overlap with writing. With `slow_start_after_idle` (Linux's
//! default), a connection idle for longer than its retransmission timeout restarts
//! from a smaller window, as the kernel's `tcp_cwnd_restart` (`tcp_output.c`, RFC 2861):
//! the window halves once per timeout of idle after the first, never below the initial
//! window. Linux's timeout with a steady round trip is the smoothed RTT plus its
//! `tcp_rto_min` floor (200 ms; `tcp_set_rto`, `rttvar` at least `rto_min`).
//!
//! Pacing (optional, with warm-up): QUIC hosts do not send a window at once. quic-go's
//! pacer (`internal/congestion/pacer.go`) is a token bucket that holds at most 10
//! packets of 1,280 B (or 2 ms at its rate, if more) and refills at twice the window per
//! round trip in slow start (`cubic_sender.go:pacingRate`), so the part of an RPC beyond
//! the bucket leaves at that rate: a 30 kB IHAVE on a fresh window of 40 kB and a 100 ms
//! round trip reaches its peer about 21 ms after its first packets. An RPC larger than
//! the window waits for acknowledgements anyway, each round paced within its round
//! trip; only its last round's bytes beyond a full bucket add time.

use crate::config::{Config, DownlinkSharing, Fault, LatencyModel, NetworkConfig, Placement, Time};
use crate::downlink::SharedDownlink;
use crate::rng::Rng;

const NANOS_PER_SECOND: u128 = 1_000_000_000;
/// TCP maximum segment size on a 1500-byte MTU path.
pub const MSS: u64 = 1460;
/// Linux's minimum retransmission timeout.
pub const RTO_MIN: Time = 200_000_000;
/// Segments after a loss needed for three duplicate ACKs (fast retransmit).
const DUPACK_THRESHOLD: u64 = 3;
/// Upper bound of the congestion window (bytes), far above any bandwidth-delay product
/// the scenarios use.
pub const MAX_CWND: u64 = 64 * 1024 * 1024;
/// quic-go's pacer burst: 10 packets (`pacer.go` maxBurstSizePackets) of 1,280 B
/// (`protocol/params.go` InitialPacketSize).
pub const PACER_BURST: u64 = 10 * 1280;
/// quic-go's pacer also lets 2 ms of its rate go at once (`pacer.go:maxBurstSize`,
/// minPacingDelay + TimerGranularity).
const PACER_BURST_NS: Time = 2_000_000;

/// Time to push `bytes` through a `bps` bit/s pipe, rounded up; 0 when unlimited.
pub fn serialization_ns(bytes: u64, bps: u64) -> Time {
    if bps == 0 {
        return 0;
    }
    let bits = u128::from(bytes) * 8 * NANOS_PER_SECOND;
    bits.div_ceil(u128::from(bps)) as Time
}

/// A new connection's window in bytes; `segments` 0 (no slow start) opens it fully.
pub fn initial_window_bytes(segments: u64) -> u64 {
    if segments == 0 {
        MAX_CWND
    } else {
        (segments * MSS).min(MAX_CWND)
    }
}

/// Segments of an RPC of `bytes` bytes.
pub fn segments(bytes: u64) -> u64 {
    bytes.div_ceil(MSS).max(1)
}

/// Extra round trips slow start needs to send `bytes` with window `cwnd`, which grows.
pub fn slow_start_rounds(bytes: u64, cwnd: &mut u64) -> u64 {
    let mut remaining = bytes;
    let mut rounds = 0;
    while remaining > *cwnd {
        remaining -= *cwnd;
        *cwnd = (*cwnd * 2).min(MAX_CWND);
        rounds += 1;
    }
    rounds
}

/// Extra time slow start adds to an RPC of `bytes` that took `write_ns` to write, with
/// window `cwnd` (which grows): per round whose window does not hold the rest, the
/// round trip minus the time that window took to write.
pub fn slow_start_wait(bytes: u64, write_ns: Time, rtt: Time, cwnd: &mut u64) -> Time {
    let mut remaining = bytes;
    let mut wait = 0;
    while remaining > *cwnd {
        let writing = (u128::from(write_ns) * u128::from(*cwnd) / u128::from(bytes)) as Time;
        wait += rtt.saturating_sub(writing);
        remaining -= *cwnd;
        *cwnd = (*cwnd * 2).min(MAX_CWND);
    }
    wait
}

/// Bytes quic-go's pacer lets out in `ns` with window `cwnd` and round trip `rtt`: its
/// slow-start rate is twice the window per round trip (`cubic_sender.go:pacingRate`).
pub fn paced_bytes(ns: Time, cwnd: u64, rtt: Time) -> u128 {
    u128::from(ns) * 2 * u128::from(cwnd) / u128::from(rtt.max(1))
}

/// The pacer's bucket size with window `cwnd` (`pacer.go:maxBurstSize`).
pub fn pacer_burst(cwnd: u64, rtt: Time) -> u64 {
    (paced_bytes(PACER_BURST_NS, cwnd, rtt) as u64).max(PACER_BURST)
}

/// Time the pacer needs to let out the part of `bytes` beyond the `budget` its bucket
/// holds, at twice the window `cwnd` per round trip `rtt`.
pub fn pacing_time(bytes: u64, budget: u64, cwnd: u64, rtt: Time) -> Time {
    let beyond = u128::from(bytes.saturating_sub(budget));
    (beyond * u128::from(rtt)).div_ceil(2 * u128::from(cwnd.max(1))) as Time
}

/// Bytes of an RPC of `bytes` sent in slow start's last round with window `cwnd`.
fn last_round(bytes: u64, mut cwnd: u64) -> (u64, u64) {
    let mut remaining = bytes;
    while remaining > cwnd {
        remaining -= cwnd;
        cwnd = (cwnd * 2).min(MAX_CWND);
    }
    (remaining, cwnd)
}

/// Linux's retransmission timeout on a path with a steady round trip `rtt`.
pub fn linux_rto(rtt: Time) -> Time {
    rtt + RTO_MIN
}

/// The window after `idle` ns without sending (Linux `tcp_cwnd_restart`): halved once
/// per timeout beyond the first, never below `initial` (or the window, if smaller).
pub fn restart_window(cwnd: u64, initial: u64, idle: Time, rto: Time) -> u64 {
    if idle <= rto {
        return cwnd;
    }
    let restart = initial.min(cwnd);
    let halvings = (idle - 1) / rto; // ceil(idle / rto) - 1
    let shifted = if halvings >= 64 { 0 } else { cwnd >> halvings };
    shifted.max(restart)
}

/// Retransmission delay of losing segment `index` of `count`, given the round trip.
pub fn loss_cost(index: u64, count: u64, rtt: Time) -> Time {
    if count - 1 - index >= DUPACK_THRESHOLD {
        rtt
    } else {
        RTO_MIN.max(rtt)
    }
}

/// Draw one link latency.
pub fn sample_latency(model: &LatencyModel, rng: &mut Rng) -> Time {
    let clamp = |x: f64| {
        if x.is_finite() && x > 0.0 {
            x.round() as Time
        } else {
            0
        }
    };
    match *model {
        LatencyModel::Constant { ns } => ns,
        LatencyModel::Uniform { min_ns, max_ns } => {
            if max_ns <= min_ns {
                min_ns
            } else {
                min_ns + rng.below(max_ns - min_ns + 1)
            }
        }
        LatencyModel::Normal { mean_ns, std_ns } => {
            clamp(mean_ns as f64 + std_ns as f64 * rng.normal())
        }
        LatencyModel::Lognormal { median_ns, sigma } => {
            clamp(median_ns as f64 * (sigma * rng.normal()).exp())
        }
    }
}

/// One-way latencies (a to b, b to a) of a connection between two nodes: the region
/// matrix, or a draw from the latency model (one draw for both directions), plus what
/// each end's access link adds.
pub fn pair_latency(
    model: &LatencyModel,
    placement: Option<&Placement>,
    a: u32,
    b: u32,
    rng: &mut Rng,
) -> (Time, Time) {
    let Some(p) = placement else {
        let one_way = sample_latency(model, rng);
        return (one_way, one_way);
    };
    let (ia, ib) = (a as usize, b as usize);
    let (forward, backward) = if p.region.is_empty() {
        let one_way = sample_latency(model, rng);
        (one_way, one_way)
    } else {
        let (ra, rb) = (p.region[ia] as usize, p.region[ib] as usize);
        (p.region_latency_ns[ra][rb], p.region_latency_ns[rb][ra])
    };
    let added = p.added_latency_ns[ia] + p.added_latency_ns[ib];
    (forward + added, backward + added)
}

/// Segment loss of a connection between two nodes: the network's plus what each end's
/// access link adds (ethshadow's rule).
pub fn pair_loss(base: f64, placement: Option<&Placement>, a: u32, b: u32) -> f64 {
    placement.map_or(base, |p| {
        base + p.added_loss[a as usize] + p.added_loss[b as usize]
    })
}

pub struct Network {
    upload_bps: Vec<u64>,
    download_bps: Vec<u64>,
    /// With FIFO and packet downlinks: when each node's downlink has read what reached
    /// it.
    downlink_free: Vec<Time>,
    /// Packet downlinks: windows' pieces cross them one by one (`downlink_packets.rs`).
    reads_pieces: bool,
    /// With fair downlinks, one per node (empty when no downlink is limited).
    shared_downlinks: Vec<SharedDownlink>,
    /// RPCs a fair downlink has just read, (link, rpc).
    pub(crate) read_scratch: Vec<(u32, u32)>,
    /// Latest arrival scheduled per directed link, to keep each connection in order.
    last_arrival: Vec<Time>,
    jitter_ns: Time,
    /// Segment loss probability per directed link.
    loss: Vec<f64>,
    /// Congestion window per directed link in bytes (0: warm-up not modelled).
    cwnd: Vec<u64>,
    initial_cwnd: u64,
    /// When each directed link last finished sending (for slow start after idle).
    last_sent: Vec<Time>,
    slow_start_after_idle: bool,
    /// quic-go's pacer on every connection (needs the window, so warm-up on).
    pacing: bool,
    /// Bytes in each directed link's pacer bucket at `pace_at` (u64::MAX: full).
    pace_budget: Vec<u64>,
    pace_at: Vec<Time>,
    jitter_rng: Rng,
    loss_rng: Rng,
}

impl Network {
    /// `loss` gives each directed link's segment loss probability.
    pub fn new(config: &NetworkConfig, loss: Vec<f64>, seed: u64) -> Self {
        let nodes = config.upload_bps.len();
        let links = loss.len();
        Self {
            upload_bps: config.upload_bps.clone(),
            download_bps: config.download_bps.clone(),
            downlink_free: vec![0; nodes],
            reads_pieces: config.downlink_sharing == DownlinkSharing::Packets,
            shared_downlinks: shared_downlinks(config),
            read_scratch: Vec::new(),
            last_arrival: vec![0; links],
            jitter_ns: config.jitter_ns,
            loss,
            cwnd: vec![config.initial_window_segments * MSS; links],
            initial_cwnd: config.initial_window_segments * MSS,
            last_sent: vec![0; links],
            slow_start_after_idle: config.slow_start_after_idle,
            pacing: config.pacing,
            pace_budget: vec![u64::MAX; links],
            pace_at: vec![0; links],
            jitter_rng: Rng::for_stream(seed, "network.jitter", 0),
            loss_rng: Rng::for_stream(seed, "network.loss", 0),
        }
    }

    /// A directed link opened during the run, with its segment loss; it starts in slow
    /// start like the initial ones.
    pub fn add_link(&mut self, loss: f64) {
        self.last_arrival.push(0);
        self.loss.push(loss);
        self.cwnd.push(self.initial_cwnd);
        self.last_sent.push(0);
        self.pace_budget.push(u64::MAX);
        self.pace_at.push(0);
    }

    pub fn upload_bps(&self, node: u32) -> u64 {
        self.upload_bps[node as usize]
    }

    /// Whether connections pace their packets (quic-go's pacer).
    pub fn pacing(&self) -> bool {
        self.pacing
    }

    /// Whether an idle connection's window restarts (Linux's default).
    pub fn restarts_after_idle(&self) -> bool {
        self.slow_start_after_idle
    }

    /// Extra delay from lost segments of an RPC of `bytes` on `link` with this RTT.
    fn retransmission_delay(&mut self, link: u32, bytes: u64, rtt: Time) -> Time {
        let p = self.loss[link as usize];
        if p <= 0.0 {
            return 0;
        }
        let count = segments(bytes);
        (0..count)
            .filter(|_| self.loss_rng.chance(p))
            .map(|i| loss_cost(i, count, rtt))
            .sum()
    }

    /// Extra delay of slow start for an RPC of `bytes` on `link` written from `started`
    /// to `sent`, with this RTT.
    fn warm_up_delay(
        &mut self,
        link: u32,
        started: Time,
        sent: Time,
        bytes: u64,
        rtt: Time,
    ) -> Time {
        let l = link as usize;
        if self.cwnd[l] == 0 {
            return 0;
        }
        let last = std::mem::replace(&mut self.last_sent[l], sent);
        if self.slow_start_after_idle && last > 0 {
            let idle = started.saturating_sub(last);
            self.cwnd[l] = restart_window(self.cwnd[l], self.initial_cwnd, idle, linux_rto(rtt));
        }
        let pace = self.pacing_delay(link, started, sent, bytes, rtt);
        pace + slow_start_wait(bytes, sent - started, rtt, &mut self.cwnd[l])
    }

    /// Extra time quic-go's pacer adds to an RPC of `bytes` on `link` that the uplink
    /// wrote from `started` to `sent` (see the module notes): the pacer and the uplink
    /// work at once, so only what pacing takes beyond the writing counts.
    fn pacing_delay(
        &mut self,
        link: u32,
        started: Time,
        sent: Time,
        bytes: u64,
        rtt: Time,
    ) -> Time {
        let l = link as usize;
        let cwnd = self.cwnd[l];
        if !self.pacing || rtt == 0 {
            return 0;
        }
        let (last, cwnd_last) = last_round(bytes, cwnd);
        let pace = if last < bytes {
            // Slow start's waits refilled the bucket before the last round.
            let burst = pacer_burst(cwnd_last, rtt);
            self.pace_budget[l] = burst.saturating_sub(last);
            pacing_time(last, burst, cwnd_last, rtt)
        } else {
            let burst = u128::from(pacer_burst(cwnd, rtt));
            let refill = paced_bytes(started.saturating_sub(self.pace_at[l]), cwnd, rtt);
            let budget = (u128::from(self.pace_budget[l]) + refill).min(burst) as u64;
            self.pace_budget[l] = budget.saturating_sub(bytes);
            pacing_time(bytes, budget, cwnd, rtt)
        };
        self.pace_at[l] = started + pace;
        pace.saturating_sub(sent - started)
    }

    /// An RPC of `bytes` on `link` started leaving its sender at `started` and finished
    /// at `sent`; returns when its last byte reaches the receiver's interface.
    pub fn propagate(
        &mut self,
        started: Time,
        sent: Time,
        link: u32,
        latency: Time,
        bytes: u64,
    ) -> Time {
        let jitter = self.jitter();
        let rtt = 2 * latency;
        let lost = self.retransmission_delay(link, bytes, rtt)
            + self.warm_up_delay(link, started, sent, bytes, rtt);
        self.arrive(link, sent + latency + jitter + lost)
    }

    /// Like `propagate`, for an RPC whose congestion window and pacing the sender's
    /// uplink already applied (`uplink_sharing = "window"`): only jitter and loss add.
    pub fn propagate_windowed(&mut self, sent: Time, link: u32, latency: Time, bytes: u64) -> Time {
        let jitter = self.jitter();
        let lost = self.retransmission_delay(link, bytes, 2 * latency);
        self.arrive(link, sent + latency + jitter + lost)
    }

    fn jitter(&mut self) -> Time {
        if self.jitter_ns > 0 {
            self.jitter_rng.below(self.jitter_ns + 1)
        } else {
            0
        }
    }

    /// The RPC's last byte reaches the receiver at `at`, or behind the connection's
    /// previous RPC (in-order delivery).
    pub(crate) fn arrive(&mut self, link: u32, at: Time) -> Time {
        let last = &mut self.last_arrival[link as usize];
        let arrival = at.max(*last);
        *last = arrival;
        arrival
    }

    /// True if `node` reads through a limited downlink (so arrivals need a second step).
    pub fn has_downlink_limit(&self, node: u32) -> bool {
        self.download_bps[node as usize] > 0
    }

    pub fn download_bps(&self, node: u32) -> u64 {
        self.download_bps[node as usize]
    }

    /// Whether limited downlinks are shared by their connections (`downlink.rs`) rather
    /// than read in turn (`read`).
    pub fn shares_downlinks(&self) -> bool {
        !self.shared_downlinks.is_empty()
    }

    /// `node`'s downlink, if downlinks are shared fairly (`downlink.rs`); None: FIFO.
    pub fn shared_downlink(&mut self, node: u32) -> Option<&mut SharedDownlink> {
        self.shared_downlinks.get_mut(node as usize)
    }

    /// With FIFO downlinks: an RPC of `bytes` fully reached `receiver`'s interface at
    /// `now`; returns when the downlink has read it, after every RPC that reached it
    /// before.
    pub fn read(&mut self, now: Time, receiver: u32, bytes: u64) -> Time {
        let r = receiver as usize;
        let done = now.max(self.downlink_free[r] + serialization_ns(bytes, self.download_bps[r]));
        self.downlink_free[r] = done;
        done
    }

    /// Whether windows' pieces cross the downlinks one by one (`downlink_sharing =
    /// "packets"`).
    pub fn reads_pieces(&self) -> bool {
        self.reads_pieces
    }

    /// With packet downlinks: a piece of `bytes`, written at `up_bps` by its sender,
    /// had its last byte reach `receiver` at `now`; returns when the downlink has read
    /// it. Its first byte came the uplink's writing time earlier, so an idle downlink
    /// reads it from then; a busy one after everything that came before it.
    pub fn read_piece(&mut self, now: Time, receiver: u32, bytes: u64, up_bps: u64) -> Time {
        let r = receiver as usize;
        let bps = self.download_bps[r];
        if bps == 0 {
            return now;
        }
        let first_byte = now.saturating_sub(serialization_ns(bytes, up_bps));
        let start = first_byte.max(self.downlink_free[r]);
        let done = now.max(start + serialization_ns(bytes, bps));
        self.downlink_free[r] = done;
        done
    }

    /// With packet downlinks: when an acknowledgement reaching `node` at `now` has
    /// crossed its downlink, behind every byte queued there (an acknowledgement's own
    /// few bytes are not counted).
    pub fn ack_through(&self, now: Time, node: u32) -> Time {
        now.max(self.downlink_free[node as usize])
    }
}

/// A fair downlink per node, if any downlink is limited and they are shared fairly.
fn shared_downlinks(config: &NetworkConfig) -> Vec<SharedDownlink> {
    let limited = config.download_bps.iter().any(|&bps| bps > 0);
    if config.downlink_sharing != DownlinkSharing::Fair || !limited {
        return Vec::new();
    }
    (0..config.download_bps.len())
        .map(|_| SharedDownlink::default())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn network(down: u64, jitter: Time, loss: f64) -> Network {
        let config = NetworkConfig {
            latency: LatencyModel::Constant { ns: 0 },
            jitter_ns: jitter,
            loss,
            initial_window_segments: 0,
            slow_start_after_idle: true,
            pacing: false,
            uplink_sharing: Default::default(),
            downlink_sharing: DownlinkSharing::Fifo,
            send_buffer_bytes: 0,
            connect_round_trips: 0,
            upload_bps: vec![0, 0],
            download_bps: vec![down, down],
            cpu_per_message_ns: vec![0, 0],
            placement: None,
            shared_ips: Vec::new(),
        };
        Network::new(&config, vec![loss; 2], 1)
    }

    fn paced(initial_window: u64) -> Network {
        let mut net = network(0, 0, 0.0);
        net.cwnd = vec![initial_window * MSS; 2];
        net.initial_cwnd = initial_window * MSS;
        net.slow_start_after_idle = false;
        net.pacing = true;
        net
    }

    #[test]
    fn quic_pacing_sends_ten_packets_at_once_then_twice_the_window_per_round_trip() {
        // quic-go v0.64.1: a full bucket of 10 x 1,280 B (pacer.go maxBurstSizePackets,
        // params.go InitialPacketSize), then 2 x cwnd / srtt (cubic_sender.go:
        // pacingRate in slow start). 28 segments = 40,880 B, RTT 100 ms: an RPC of
        // 28,800 B leaves its last byte (28,800 - 12,800) x 100 ms / 81,760 B later.
        let (latency, rtt) = (50_000_000, 100_000_000);
        let mut net = paced(28);
        let expected = (16_000u128 * rtt as u128).div_ceil(2 * 40_880) as Time;
        assert_eq!(expected, 19_569_472); // 16,000 B at 817.6 kB/s
        assert_eq!(net.propagate(0, 0, 0, latency, 28_800), latency + expected);
        // Within the burst nothing waits: the other direction's bucket is full.
        assert_eq!(net.propagate(0, 0, 1, latency, 12_800), latency);
        // The first RPC emptied the bucket; 5 ms later it holds 5 ms x 817.6 kB/s =
        // 4,088 B, so 8,088 B leave their last 4,000 B paced.
        let t = expected + 5_000_000;
        let pace = (4_000u128 * rtt as u128).div_ceil(2 * 40_880) as Time;
        assert_eq!(net.propagate(t, t, 0, latency, 8_088), t + latency + pace);
        // A round trip later it is full again.
        let t = t + rtt;
        assert_eq!(net.propagate(t, t, 0, latency, 12_800), t + latency);
        // An uplink slower than the pacer hides it: writing took longer than pacing.
        let mut net = paced(28);
        let writing = 30_000_000;
        assert_eq!(
            net.propagate(0, writing, 0, latency, 28_800),
            writing + latency
        );
    }

    #[test]
    fn pacing_of_an_rpc_larger_than_the_window_adds_only_its_last_round() {
        // 100,000 B on a 40,880 B window: rounds of 40,880 and 59,120 B (the window
        // doubled to 81,760 B); the last round's 59,120 - 12,800 B leave at 2 x 81,760
        // B per 100 ms, after slow start's one extra round trip.
        let (latency, rtt) = (50_000_000, 100_000_000);
        let mut net = paced(28);
        let pace = (46_320u128 * rtt as u128).div_ceil(2 * 81_760) as Time;
        assert_eq!(
            net.propagate(0, 0, 0, latency, 100_000),
            latency + rtt + pace
        );
    }

    #[test]
    fn slow_start_doubles_the_window_per_round_trip() {
        let mut cwnd = 10 * MSS; // 14,600 bytes
        assert_eq!(slow_start_rounds(14_600, &mut cwnd), 0);
        // 14.6 + 29.2 + 58.4 = 102.2 kB in three windows: two extra round trips.
        assert_eq!(slow_start_rounds(100_000, &mut cwnd), 2);
        assert_eq!(cwnd, 40 * MSS);
        assert_eq!(
            slow_start_rounds(50_000, &mut cwnd),
            0,
            "the window stays open"
        );
    }

    #[test]
    fn slow_start_waits_overlap_with_writing() {
        // Unlimited uplink: every round is a full round trip (2 rounds, see above).
        let mut cwnd = 10 * MSS;
        assert_eq!(slow_start_wait(100_000, 0, 40, &mut cwnd), 80);
        // 100 kB written in 100 ms: the first window (14.6 kB) takes 14.6 ms, the second
        // 29.2 ms; a 40 ms round trip leaves 25.4 + 10.8 ms of waiting.
        let mut cwnd = 10 * MSS;
        assert_eq!(
            slow_start_wait(100_000, 100_000_000, 40_000_000, &mut cwnd),
            25_400_000 + 10_800_000
        );
    }

    #[test]
    fn an_idle_connection_restarts_as_linux_tcp_cwnd_restart() {
        let (init, rto) = (10 * MSS, 240);
        // Idle up to one RTO: kept. Up to two: halved once. Three: twice. Floor: initial.
        assert_eq!(restart_window(160 * MSS, init, 240, rto), 160 * MSS);
        assert_eq!(restart_window(160 * MSS, init, 241, rto), 80 * MSS);
        assert_eq!(restart_window(160 * MSS, init, 480, rto), 80 * MSS);
        assert_eq!(restart_window(160 * MSS, init, 481, rto), 40 * MSS);
        assert_eq!(restart_window(160 * MSS, init, 100_000, rto), init);
        assert_eq!(linux_rto(40_000_000), 240_000_000);
    }

    #[test]
    fn serialization_of_one_megabyte_at_ten_megabytes_per_second_is_100ms() {
        assert_eq!(serialization_ns(1_000_000, 80_000_000), 100_000_000);
        assert_eq!(serialization_ns(1, 0), 0);
    }

    #[test]
    fn jitter_never_reorders_a_connection() {
        let mut net = network(0, 5_000_000, 0.0);
        let mut last = 0;
        for t in 0..1000 {
            let arrival = net.propagate(t * 1_000, t * 1_000, 0, 1_000_000, 100);
            assert!(arrival >= last);
            last = arrival;
        }
    }

    #[test]
    fn a_fast_idle_downlink_adds_nothing_a_busy_one_queues() {
        let mut net = network(8_000_000, 0, 0.0); // 1 byte per microsecond
        assert_eq!(net.read(5_000_000, 1, 1_000), 5_000_000);
        // Two RPCs of 4000 bytes landing together: the second waits for the first.
        assert_eq!(net.read(10_000_000, 1, 4_000), 10_000_000);
        assert_eq!(net.read(10_000_000, 1, 4_000), 14_000_000);
    }

    #[test]
    fn fast_retransmit_costs_a_round_trip_a_tail_loss_the_rto() {
        assert_eq!(loss_cost(0, 10, 80), 80);
        assert_eq!(loss_cost(6, 10, 80), 80);
        assert_eq!(loss_cost(7, 10, 80), RTO_MIN);
        assert_eq!(loss_cost(0, 1, 300_000_000), 300_000_000);
    }

    #[test]
    fn uniform_latency_stays_in_bounds() {
        let mut rng = Rng::new(3);
        let model = LatencyModel::Uniform {
            min_ns: 10,
            max_ns: 20,
        };
        for _ in 0..1000 {
            assert!((10..=20).contains(&sample_latency(&model, &mut rng)));
        }
    }
}

/// A partition in effect during [start, end).
#[derive(Clone, Debug)]
pub struct Partition {
    /// Group of each node.
    group: Vec<u16>,
    start: Time,
    end: Time,
}

impl Partition {
    /// True if the partition separates nodes `a` and `b` at `now`.
    pub fn cuts(&self, a: usize, b: usize, now: Time) -> bool {
        self.start <= now && now < self.end && self.group[a] != self.group[b]
    }
}

/// Read the config's partitions.
pub fn partitions(config: &Config) -> Vec<Partition> {
    config
        .faults
        .iter()
        .filter_map(|f| match f {
            Fault::Partition {
                groups,
                start_ns,
                end_ns,
            } => {
                let mut group = vec![0u16; config.nodes as usize];
                for (g, members) in groups.iter().enumerate() {
                    for &n in members {
                        group[n as usize] = g as u16;
                    }
                }
                Some(Partition {
                    group,
                    start: *start_ns,
                    end: *end_ns,
                })
            }
            Fault::Down { .. } => None,
        })
        .collect()
}
