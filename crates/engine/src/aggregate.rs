//! The aggregate output mode: what the metrics need, without a row per receipt.
//!
//! In full mode every first receipt is a row of the deliveries table, so a run keeps
//! messages x nodes rows (99 million for a million messages through 100 nodes). In
//! aggregate mode the engine instead updates, as each first receipt happens:
//!
//! - per message (`MessageAggregate`, one fixed-size record allocated when the run
//!   starts): first receipts, those counted, first and last counted receipt time, the
//!   hop of the last one (on a tie in time the larger hop) and the largest hop, and the
//!   time the count reached ceil(p % x targets) for p in `REACH_PERCENTS`;
//! - per node (`NodeAggregate`): counted first receipts, the sum, minimum and maximum
//!   of their latencies (first receipt - publish), the sum of their hops, their
//!   duplicates, and a sparse histogram of their latencies over the fixed bins of
//!   `histogram.rs`;
//! - for the run: how many (message, node) pairs got d duplicates, for every d. A pair's
//!   count is final once the node forgets the message (its seen entry expires, or the node
//!   restarts) or the run ends.
//!
//! The same definitions as the metrics of DESIGN.md over the full tables: a first
//! receipt is *counted* unless its message was intended before `measure_from_ns` (the
//! warm-up; its per-message record is still kept, the histograms and node totals skip
//! it), or the receiver was down during part of the message's lifetime
//! [publish, publish + `message_lifetime_ns`], or it is the message's own publisher
//! (after a restart); the last two are skipped everywhere but `first_receipts`.
//! The targets of a message are the other nodes (every node subscribes to every topic)
//! minus those down during its lifetime.
//!
//! Memory: the per-message records are fixed for the run (72 bytes per message, written
//! once at the start), the per-node ones grow with the latency bins a node has
//! seen (a few hundred), and the only per (message, node) state is the duplicate count
//! kept in the node's seen entry, which goes when the entry does.

use rustc_hash::FxHashMap;

use crate::config::{Config, Fault, Time};
use crate::histogram;
use crate::inputs::Message;

/// Shares of a message's targets whose reach time is recorded.
pub const REACH_PERCENTS: [u32; 5] = [50, 90, 95, 99, 100];
/// A time that has not happened.
pub const NEVER: Time = Time::MAX;

/// One message's outcome so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MessageAggregate {
    /// Nodes expected to receive it (0 until published).
    pub targets: u32,
    /// Every first receipt, including those of receivers down during its lifetime.
    pub first_receipts: u32,
    /// Counted first receipts.
    pub delivered: u32,
    /// Hop of the last counted first receipt (the larger on a tie in time).
    pub last_hop: u16,
    pub max_hop: u16,
    pub first_ns: Time,
    pub last_ns: Time,
    /// When `delivered` reached ceil(p % x targets), per `REACH_PERCENTS`.
    pub reach_ns: [Time; 5],
}

impl MessageAggregate {
    const EMPTY: Self = Self {
        targets: 0,
        first_receipts: 0,
        delivered: 0,
        last_hop: 0,
        max_hop: 0,
        first_ns: NEVER,
        last_ns: NEVER,
        reach_ns: [NEVER; 5],
    };
}

/// One node's counted first receipts, as a receiver.
#[derive(Clone, Debug)]
pub struct NodeAggregate {
    pub first_receipts: u64,
    pub latency_sum_ns: u64,
    pub latency_min_ns: Time,
    pub latency_max_ns: Time,
    pub hop_sum: u64,
    /// Duplicates of the pairs already final (see `Aggregates::duplicates_final`).
    pub duplicates: u64,
    /// Latency bin -> first receipts.
    pub latency_bins: FxHashMap<u16, u64>,
}

impl Default for NodeAggregate {
    fn default() -> Self {
        Self {
            first_receipts: 0,
            latency_sum_ns: 0,
            latency_min_ns: NEVER,
            latency_max_ns: 0,
            hop_sum: 0,
            duplicates: 0,
            latency_bins: FxHashMap::default(),
        }
    }
}

/// A down interval applies to every topic.
const ALL_TOPICS: u16 = u16::MAX;

pub struct Aggregates {
    pub messages: Vec<MessageAggregate>,
    pub nodes: Vec<NodeAggregate>,
    /// Index d: final (message, node) pairs with d duplicates.
    pub duplicates: Vec<u64>,
    measure_from: Time,
    lifetime: Time,
    /// Per node: when it was not a receiver: down ([from, until), until NEVER when it
    /// stays down; topic ALL_TOPICS) or out of one topic.
    down: Vec<Vec<(Time, Time, u16)>>,
    /// Nodes with at least one down interval, ascending.
    down_nodes: Vec<u32>,
}

impl Aggregates {
    pub fn new(config: &Config, messages: usize) -> Self {
        let nodes = config.nodes as usize;
        let mut down = config.unsubscribed();
        for fault in &config.faults {
            if let Fault::Down {
                node,
                from_ns,
                until_ns,
            } = *fault
            {
                down[node as usize].push((from_ns, until_ns.unwrap_or(NEVER), ALL_TOPICS));
            }
        }
        let down_nodes = (0..config.nodes)
            .filter(|&n| !down[n as usize].is_empty())
            .collect();
        let lifetime = config
            .output
            .message_lifetime_ns
            .unwrap_or(config.protocol.history_length as Time * config.protocol.heartbeat_ns);
        Self {
            // Written in full now, so that the memory they take is there from the start.
            messages: vec![MessageAggregate::EMPTY; messages],
            nodes: vec![NodeAggregate::default(); nodes],
            duplicates: Vec::new(),
            measure_from: config.output.measure_from_ns,
            lifetime,
            down,
            down_nodes,
        }
    }

    /// True if `node` was down, or out of `topic`, during part of the lifetime of a
    /// message published at `published` (the liveness rule of the delivery ratio).
    fn down_during(&self, node: u32, published: Time, topic: u16) -> bool {
        let end = published.saturating_add(self.lifetime);
        self.down[node as usize].iter().any(|&(from, until, t)| {
            (t == ALL_TOPICS || t == topic) && from <= end && until > published
        })
    }

    /// `msg` on `topic` was published by `publisher` at `now`: fix its targets.
    pub fn published(&mut self, msg: u32, publisher: u32, now: Time, topic: u16) {
        let nodes = self.nodes.len() as u32;
        let away = self
            .down_nodes
            .iter()
            .filter(|&&n| n != publisher && self.down_during(n, now, topic))
            .count() as u32;
        self.messages[msg as usize].targets = nodes - 1 - away;
    }

    /// First receipt of `msg` at `node` at `now` through `hop` hops. Returns true if it
    /// is counted in the node totals and histograms.
    pub fn first_receipt(
        &mut self,
        msg: u32,
        info: &Message,
        node: u32,
        now: Time,
        hop: u16,
    ) -> bool {
        let published = info
            .t_publish
            .expect("a message is published before it is received");
        let m = &mut self.messages[msg as usize];
        m.first_receipts += 1;
        // Not a receiver: its own publisher (which gets it back only after a restart
        // emptied its seen cache), or a node down during the message's lifetime.
        if node == info.publisher
            || !self.down[node as usize].is_empty() && self.down_during(node, published, info.topic)
        {
            return false;
        }
        let m = &mut self.messages[msg as usize];
        m.delivered += 1;
        if m.first_ns == NEVER {
            m.first_ns = now;
        }
        // Events come in time order: a later receipt is the new last one; one at the
        // same time replaces it only with a larger hop.
        if m.last_ns == NEVER || now > m.last_ns {
            m.last_hop = hop;
        } else {
            m.last_hop = m.last_hop.max(hop);
        }
        m.last_ns = now;
        m.max_hop = m.max_hop.max(hop);
        for (i, &p) in REACH_PERCENTS.iter().enumerate() {
            let k = (u64::from(m.targets) * u64::from(p)).div_ceil(100);
            if k >= 1 && u64::from(m.delivered) == k {
                m.reach_ns[i] = now;
            }
        }
        if info.t_intended < self.measure_from {
            return false;
        }
        let latency = now - published;
        let n = &mut self.nodes[node as usize];
        n.first_receipts += 1;
        n.latency_sum_ns += latency;
        n.latency_min_ns = n.latency_min_ns.min(latency);
        n.latency_max_ns = n.latency_max_ns.max(latency);
        n.hop_sum += u64::from(hop);
        *n.latency_bins
            .entry(histogram::bin_of(latency))
            .or_insert(0) += 1;
        true
    }

    /// A counted (message, node) pair is final with `duplicates` duplicates.
    pub fn duplicates_final(&mut self, node: u32, duplicates: u32) {
        let d = duplicates as usize;
        if self.duplicates.len() <= d {
            self.duplicates.resize(d + 1, 0);
        }
        self.duplicates[d] += 1;
        self.nodes[node as usize].duplicates += u64::from(duplicates);
    }
}

/// The aggregate tables at the end of a run (pairs still remembered are final now).
pub struct AggregateTables {
    /// One entry per node: (bin, first receipts), sorted by bin.
    pub latency_bins: Vec<Vec<(u16, u64)>>,
    /// Index d: (message, node) pairs with d duplicates.
    pub duplicates: Vec<u64>,
    /// Per node: duplicates over its counted pairs.
    pub node_duplicates: Vec<u64>,
}

impl AggregateTables {
    /// Close the books: `live` lists (node, duplicates) of counted pairs still open.
    pub fn new(aggregates: &Aggregates, live: impl Iterator<Item = (u32, u32)>) -> Self {
        let mut duplicates = aggregates.duplicates.clone();
        let mut node_duplicates: Vec<u64> = aggregates.nodes.iter().map(|n| n.duplicates).collect();
        for (node, d) in live {
            let d = d as usize;
            if duplicates.len() <= d {
                duplicates.resize(d + 1, 0);
            }
            duplicates[d] += 1;
            node_duplicates[node as usize] += d as u64;
        }
        let latency_bins = aggregates
            .nodes
            .iter()
            .map(|n| {
                let mut bins: Vec<(u16, u64)> =
                    n.latency_bins.iter().map(|(&b, &c)| (b, c)).collect();
                bins.sort_unstable();
                bins
            })
            .collect();
        Self {
            latency_bins,
            duplicates,
            node_duplicates,
        }
    }
}
