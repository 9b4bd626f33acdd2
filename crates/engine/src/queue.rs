//! The event queue: a binary heap with a total order and no time travel.
//!
//! Events are ordered by (time, kind, insertion sequence), packed into two integers.
//! Two events can never compare equal, so the order of simultaneous events is a property
//! of the scenario, not of heap internals. Among simultaneous events of one kind the
//! earlier-scheduled goes first (FIFO): causes precede effects even over zero-latency
//! links, where ordering by source node would let a low-numbered node's hop-2 copies
//! overtake another node's hop-1 copies. The source node is kept in every push for
//! assertions and future per-source parallelism. Popping an event earlier than the
//! current time is a bug and panics.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::config::Time;

/// What happens. Variants are small: RPC contents live in the simulation's RPC slab.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// An RPC sent on directed link `link` has fully arrived at the receiver's network
    /// interface; if the receiver's downlink is limited it still has to cross it.
    Arrive { link: u32, rpc: u32 },
    /// An RPC sent on `link` is in the receiver's hands.
    Receive { link: u32, rpc: u32 },
    /// A node's uplink finished writing its current chunk.
    UplinkDone { node: u32 },
    /// A node finished validating a copy of `msg` received on its link `link`; `hop` is
    /// the hop count the node gets if this copy is the first.
    Validated {
        node: u32,
        msg: u32,
        link: u32,
        hop: u16,
    },
    /// An adversary relays `msg` (received on its link `link`) late.
    DelayedForward { node: u32, msg: u32, link: u32 },
    /// An INEED for `msg` went unanswered for the timeout (v2.0).
    IneedTimeout { node: u32, msg: u32, attempt: u32 },
    /// A node's heartbeat.
    Heartbeat { node: u32 },
    /// The workload publishes message `msg`.
    Publish { msg: u32 },
    /// A node goes down (crash or churn)...
    Down { node: u32 },
    /// ...and comes back.
    Up { node: u32 },
}

impl Event {
    /// Tie-break among simultaneous events: network input first (as Shadow does),
    /// then local work, then timers, then new publications.
    fn rank(&self) -> u64 {
        match self {
            Event::Arrive { .. } => 0,
            Event::Receive { .. } => 1,
            Event::UplinkDone { .. } => 2,
            Event::Validated { .. } => 3,
            Event::DelayedForward { .. } => 4,
            Event::IneedTimeout { .. } => 5,
            Event::Heartbeat { .. } => 6,
            Event::Publish { .. } => 7,
            Event::Down { .. } => 8,
            Event::Up { .. } => 9,
        }
    }
}

const SOURCE_BITS: u32 = 24;
const SEQ_BITS: u32 = 60;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    time: Time,
    /// rank (4 bits) | insertion sequence (60 bits)
    order: u64,
}

#[derive(Debug)]
struct Entry {
    key: Key,
    event: Event,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key.cmp(&other.key)
    }
}

pub struct EventQueue {
    heap: BinaryHeap<Reverse<Entry>>,
    now: Time,
    /// Node count; the source id `sources` is the workload.
    sources: u32,
    next_seq: u64,
    popped: u64,
}

impl EventQueue {
    /// A queue for `sources` nodes plus one extra source (the workload).
    pub fn new(sources: usize) -> Self {
        assert!(
            sources < (1 << SOURCE_BITS) - 1,
            "at most 16.7 million nodes"
        );
        Self {
            heap: BinaryHeap::new(),
            now: 0,
            sources: sources as u32,
            next_seq: 0,
            popped: 0,
        }
    }

    /// The source id to use for events not caused by a node.
    pub fn workload_source(&self) -> u32 {
        self.sources
    }

    pub fn now(&self) -> Time {
        self.now
    }

    /// Events popped so far.
    pub fn popped(&self) -> u64 {
        self.popped
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Schedule `event`, caused by `source`, at `time` (never in the past).
    pub fn push(&mut self, time: Time, source: u32, event: Event) {
        assert!(
            time >= self.now,
            "event scheduled in the past: {time} < {}",
            self.now
        );
        assert!(source <= self.sources, "unknown event source {source}");
        assert!(self.next_seq < (1 << SEQ_BITS), "sequence overflow");
        let order = (event.rank() << SEQ_BITS) | self.next_seq;
        self.next_seq += 1;
        self.heap.push(Reverse(Entry {
            key: Key { time, order },
            event,
        }));
    }

    /// Time of the next event, if any.
    pub fn peek_time(&self) -> Option<Time> {
        self.heap.peek().map(|Reverse(e)| e.key.time)
    }

    /// Remove the earliest event and advance the clock to it.
    pub fn pop(&mut self) -> Option<(Time, Event)> {
        let Reverse(entry) = self.heap.pop()?;
        assert!(entry.key.time >= self.now, "time ran backwards");
        self.now = entry.key.time;
        self.popped += 1;
        Some((entry.key.time, entry.event))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_in_time_then_rank_then_insertion_order() {
        let mut q = EventQueue::new(4);
        q.push(10, 2, Event::Heartbeat { node: 2 });
        q.push(10, 1, Event::Heartbeat { node: 1 });
        q.push(10, 3, Event::Receive { link: 0, rpc: 0 });
        q.push(5, 0, Event::Publish { msg: 0 });
        q.push(10, 1, Event::Heartbeat { node: 9 });
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            order,
            vec![
                (5, Event::Publish { msg: 0 }),
                (10, Event::Receive { link: 0, rpc: 0 }),
                (10, Event::Heartbeat { node: 2 }),
                (10, Event::Heartbeat { node: 1 }),
                (10, Event::Heartbeat { node: 9 }),
            ]
        );
    }

    #[test]
    #[should_panic(expected = "past")]
    fn refuses_time_travel() {
        let mut q = EventQueue::new(1);
        q.push(10, 0, Event::Heartbeat { node: 0 });
        q.pop();
        q.push(9, 0, Event::Heartbeat { node: 0 });
    }
}
