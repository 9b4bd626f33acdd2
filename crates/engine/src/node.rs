//! A node's host side: what it keeps whatever its router speaks — the topics it is in,
//! its seen cache, the CPU that validates, fault flags and the dials it has open.
//! Protocol state (mesh, fanout, backoff, gossip) is its router's (`router/`).

use std::collections::VecDeque;

use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use crate::config::{Adversary, Misbehaviour, Time};
use crate::seen::{SeenCache, SEEN_SWEEP_INTERVAL};

/// A dial in progress: the peer, when it completes, and the pair's latencies.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Dial {
    pub peer: u32,
    pub done: Time,
    pub latency: (Time, Time),
}

pub(crate) struct NodeState {
    /// Bit t set: subscribed to topic t.
    pub subscribed: u64,
    pub seen: SeenCache,
    pub next_seen_sweep: Time,
    /// Copies queued for validation or being validated.
    pub cpu_pending: usize,
    /// Message -> links whose copies are in validation (go marks a message seen only
    /// once its first copy passed signature verification, so copies arriving meanwhile
    /// are validated too).
    pub validating: FxHashMap<u32, SmallVec<[u32; 4]>>,
    /// Down (crashed or left); see `faults.rs`.
    pub down: bool,
    pub misbehaviour: Option<Adversary>,
    /// Counter for the ids a spamming adversary invents.
    pub next_phantom: u32,
    /// Peer exchange: peers waiting to be dialed, and dials in progress.
    pub dial_queue: VecDeque<u32>,
    pub dials: SmallVec<[Dial; 2]>,
}

impl NodeState {
    pub fn new(subscribed: u64, misbehaviour: Option<Adversary>) -> Self {
        Self {
            subscribed,
            seen: SeenCache::default(),
            next_seen_sweep: SEEN_SWEEP_INTERVAL,
            cpu_pending: 0,
            validating: FxHashMap::default(),
            down: false,
            misbehaviour,
            next_phantom: 0,
            dial_queue: VecDeque::new(),
            dials: SmallVec::new(),
        }
    }

    pub fn is_subscribed(&self, topic: u16) -> bool {
        self.subscribed & (1 << topic) != 0
    }

    /// True if the node misbehaves in way `m`.
    pub fn misbehaves(&self, m: Misbehaviour) -> bool {
        self.misbehaviour.as_ref().is_some_and(|a| a.behaviour == m)
    }
}
