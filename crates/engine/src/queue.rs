//! The event queue: a radix heap with a total order and no time travel.
//!
//! Events are ordered by (time, kind, insertion sequence). Two events never tie, so the
//! order of simultaneous events is a property of the scenario, not of queue internals.
//! Among simultaneous events of one kind the earlier-scheduled goes first (FIFO): causes
//! precede effects even over zero-latency links, where ordering by source node would
//! let a low-numbered node's hop-2 copies overtake another node's hop-1 copies. The
//! source node is checked on every push and kept free for per-source parallelism.
//! Scheduling or popping an event earlier than the current time is a bug and panics.
//!
//! Why a radix heap: a discrete-event simulation never schedules into the past, so the
//! keys are monotone, and a radix heap (Ahuja et al. 1990) pushes and pops in amortized
//! constant time instead of a binary heap's log n. The key is `time << 5 | kind`; bucket
//! 0 holds keys equal to the last popped key, and bucket (level, digit) the keys whose
//! highest 6-bit digit differing from it is at `level` and is `digit` (a radix heap of
//! base 64). Every bucket keeps insertion order, so equal keys come out first in, first
//! out.
//! Kinds order simultaneous events known in advance; an event scheduled for the very
//! instant being processed goes after everything already due then.

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
    /// `node` joins (`subscribe`) or leaves `topic`.
    Subscription {
        node: u32,
        topic: u16,
        subscribe: bool,
    },
    /// A dial from `node` to `peer` (peer exchange) completed or failed.
    DialDone { node: u32, peer: u32 },
    /// A node goes down (crash or churn)...
    Down { node: u32 },
    /// ...and comes back.
    Up { node: u32 },
    /// The reading goroutine of `link`'s receiver finished decoding RPC `rpc` (CPU).
    Decoded { link: u32, rpc: u32 },
    /// The reading goroutine of `link`'s receiver finished decoding RPC `rpc` and hands
    /// it to the node's event loop (`event_loop.rs`).
    Read { link: u32, rpc: u32 },
    /// `node`'s event loop handled a validated copy of `msg` from `link`
    /// (`pubsub.go:publishMessage`).
    LoopValidated {
        node: u32,
        msg: u32,
        link: u32,
        hop: u16,
    },
    /// A yamux window update of `delta` bytes for `link`'s stream reaches its sender.
    WindowUpdate { link: u32, delta: u32 },
    /// The writer goroutine of `link` finished encoding its RPC (CPU).
    Encoded { link: u32 },
    /// The application's goroutine on the publisher of `msg` runs and calls `Publish`
    /// (CPU): the publication's time.
    PublishCalled { msg: u32 },
    /// The publisher of `msg` finished signing it (CPU).
    Signed { msg: u32 },
    /// `link`'s congestion window or pacer may let it release more (`window.rs`).
    WindowOpen { link: u32 },
    /// A core of a time-sliced host finished a piece of work or a slice (`slices.rs`);
    /// a tick whose `generation` is not the core's (the node it timed was preempted) is
    /// stale and does nothing.
    CoreTick {
        host: u32,
        core: u32,
        generation: u32,
    },
    /// `link`'s owner has its end of a topology connection up: it sends its hello.
    Hello { link: u32 },
    /// The yamux sendLoop of `link`'s connection wrote an RPC (CPU).
    SendLoopDone { link: u32 },
    /// The yamux recvLoop of the connection `link` arrives on read RPC `rpc` into the
    /// stream's buffer (CPU); the stream's reader reads it from there.
    Demuxed { link: u32, rpc: u32 },
    /// `node`'s Go runtime `sysmon` thread's sleep ends (`sysmon.rs`, `slices.rs`).
    SysmonWake { node: u32 },
    /// `node`'s application is done with a message from its subscription (CPU,
    /// `subscription.rs`).
    AppRead { node: u32 },
    /// A GSO packet of an RPC on `link`, not its last, reached the receiver
    /// (`packet_reads.rs`).
    Packet { link: u32 },
    /// The goroutine reading a connection read a packet that arrived (CPU);
    /// nothing follows until the RPC's last packet.
    PacketRead,
    /// `node`'s fair downlink may have read RPCs (`downlink.rs`); a read whose
    /// `generation` is not the downlink's is stale and does nothing.
    DownlinkRead { node: u32, generation: u32 },
    /// A piece a window released on `link` reached the receiver's packet downlink
    /// (`downlink_packets.rs`); `rpc` is the RPC it ends, or `NO_RPC`.
    PieceArrive { link: u32, bytes: u32, rpc: u32 },
    /// The acknowledgement of `bytes` sent on `link` reached the sender's packet
    /// downlink.
    AckArrive { link: u32, bytes: u32 },
    /// A yamux window update of `delta` bytes for `link`'s stream reached its sender's
    /// packet downlink (`downlink_packets.rs`); it becomes a `WindowUpdate` once through.
    UpdateArrive { link: u32, delta: u32 },
}

/// `Event::PieceArrive` of a piece that ends no RPC.
pub const NO_RPC: u32 = u32::MAX;

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
            Event::DialDone { .. } => 10,
            Event::Subscription { .. } => 11,
            // After the kinds above, so that runs without CPU costs keep their order.
            Event::Decoded { .. } => 12,
            Event::Encoded { .. } => 13,
            Event::Signed { .. } => 14,
            Event::WindowOpen { .. } => 15,
            Event::CoreTick { .. } => 16,
            Event::Hello { .. } => 17,
            Event::Read { .. } => 18,
            Event::WindowUpdate { .. } => 19,
            Event::LoopValidated { .. } => 20,
            Event::SendLoopDone { .. } => 21,
            Event::Demuxed { .. } => 22,
            Event::SysmonWake { .. } => 23,
            Event::AppRead { .. } => 24,
            Event::Packet { .. } => 25,
            Event::PacketRead => 26,
            Event::PublishCalled { .. } => 27,
            Event::DownlinkRead { .. } => 28,
            Event::PieceArrive { .. } => 29,
            Event::AckArrive { .. } => 30,
            Event::UpdateArrive { .. } => 31,
        }
    }
}

// Events are copied through the radix heap's buckets: a tick's generation fits beside
// the largest variant's fields without growing them.
const _: () = assert!(std::mem::size_of::<Event>() == 16);

const SOURCE_BITS: u32 = 24;
const RANK_BITS: u32 = 5;
/// Bits per radix digit: bucket (level, digit) > 0 holds keys whose highest digit
/// differing from `last` is at `level`, with value `digit`. With 64 buckets per level an
/// event moves at most 10 times (a bucket of level 0 is taken whole), and in practice
/// once or twice: on the demo with CPU costs, whose events are spread over many
/// distinct times, 1.4 moves per event against 2.2 with 4-bit digits (8-bit digits move
/// as many and were slower on the 1,000-node benchmark).
const DIGIT_BITS: u32 = 6;
const DIGITS: usize = 1 << DIGIT_BITS;
const LEVELS: usize = 64usize.div_ceil(DIGIT_BITS as usize);
const BUCKETS: usize = 1 + LEVELS * DIGITS;
const _: () = assert!(DIGITS == 64, "one filled word per level");

#[derive(Clone, Copy, Debug)]
struct Entry {
    /// time << RANK_BITS | rank
    key: u64,
    event: Event,
}

pub struct EventQueue {
    /// Bucket 0 holds keys equal to `last`, in insertion order, from `head` on; the
    /// others are appended to and emptied whole (plain vectors: cheaper than deques).
    buckets: Box<[Vec<Entry>; BUCKETS]>,
    /// Where bucket 0's queued entries start.
    head: usize,
    /// The smallest key of each bucket i > 0 (`u64::MAX` when empty), so that the next
    /// minimum needs no pass over a bucket.
    mins: [u64; BUCKETS],
    /// Bit `digit` of word `level` set: bucket (level, digit) is not empty.
    filled: [u64; LEVELS],
    /// Bit `level` set: `filled[level]` is not 0 (the first non-empty bucket in two
    /// steps).
    summary: u64,
    /// Smallest key still queued is >= last; every key in bucket (level, digit) differs
    /// from it first in the digit at `level`, which it has as `digit`.
    last: u64,
    len: usize,
    now: Time,
    /// Node count; the source id `sources` is the workload.
    sources: u32,
    popped: u64,
}

/// The index of bucket (level, digit).
#[inline]
fn bucket(level: usize, digit: usize) -> usize {
    1 + level * DIGITS + digit
}

impl EventQueue {
    /// A queue for `sources` nodes plus one extra source (the workload).
    pub fn new(sources: usize) -> Self {
        assert!(
            sources < (1 << SOURCE_BITS) - 1,
            "at most 16.7 million nodes"
        );
        Self {
            buckets: Box::new(std::array::from_fn(|_| Vec::new())),
            head: 0,
            mins: [u64::MAX; BUCKETS],
            filled: [0; LEVELS],
            summary: 0,
            last: 0,
            len: 0,
            now: 0,
            sources: sources as u32,
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
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Schedule `event`, caused by `source`, at `time` (never in the past).
    #[inline(always)]
    pub fn push(&mut self, time: Time, source: u32, event: Event) {
        assert!(
            time >= self.now,
            "event scheduled in the past: {time} < {}",
            self.now
        );
        assert!(source <= self.sources, "unknown event source {source}");
        assert!(
            time < (1 << (64 - RANK_BITS)),
            "time beyond 36 years of simulation"
        );
        // An event scheduled for the instant being processed may rank below the one just
        // popped; it cannot jump back, so it queues behind (first in, first out).
        let key = ((time << RANK_BITS) | event.rank()).max(self.last);
        self.put(Entry { key, event });
        self.len += 1;
    }

    /// File `entry` in its bucket relative to `last`.
    #[inline]
    fn put(&mut self, entry: Entry) {
        let differ = entry.key ^ self.last;
        if differ == 0 {
            self.buckets[0].push(entry);
            return;
        }
        let level = ((63 - differ.leading_zeros()) / DIGIT_BITS) as usize;
        let digit = (entry.key >> (level as u32 * DIGIT_BITS)) as usize & (DIGITS - 1);
        let b = bucket(level, digit);
        self.buckets[b].push(entry);
        self.mins[b] = self.mins[b].min(entry.key);
        self.filled[level] |= 1 << digit;
        self.summary |= 1 << level;
    }

    /// True if bucket 0 holds an entry.
    #[inline]
    fn ready(&self) -> bool {
        self.head < self.buckets[0].len()
    }

    /// The first non-empty bucket after bucket 0, as (level, digit).
    #[inline]
    fn first_filled(&self) -> Option<(usize, usize)> {
        if self.summary == 0 {
            return None;
        }
        let level = self.summary.trailing_zeros() as usize;
        Some((level, self.filled[level].trailing_zeros() as usize))
    }

    /// Make bucket 0 hold the smallest key, redistributing the first non-empty bucket.
    fn settle(&mut self) -> bool {
        if self.ready() {
            return true;
        }
        let Some((level, digit)) = self.first_filled() else {
            return false;
        };
        self.redistribute(level, digit);
        true
    }

    /// Make the smallest key of bucket (level, digit), the first non-empty one, the new
    /// `last`, and spread the bucket over the lower ones. Bucket 0 is empty then.
    /// Not inlined: its loop would make every pop save and restore registers, though
    /// most pops find bucket 0 ready.
    #[inline(never)]
    fn redistribute(&mut self, level: usize, digit: usize) {
        let i = bucket(level, digit);
        self.buckets[0].clear();
        self.head = 0;
        self.last = self.mins[i];
        self.mins[i] = u64::MAX;
        self.filled[level] &= !(1 << digit);
        if self.filled[level] == 0 {
            self.summary &= !(1 << level);
        }
        if level == 0 {
            // A bucket of level 0 holds keys that differ from the old `last` in the
            // lowest digit only, all with the same value there: they are all equal (the
            // new `last`), in insertion order, so the bucket becomes bucket 0 as it is.
            self.buckets.swap(0, i);
            return;
        }
        let moving = std::mem::take(&mut self.buckets[i]);
        // In order, so that equal keys keep their insertion order.
        for entry in &moving {
            self.put(*entry);
        }
        let mut emptied = moving;
        emptied.clear();
        self.buckets[i] = emptied;
    }

    /// Time of the next event, if any. Does not move `last`, which only popping may do
    /// (a push may still come for any time from now on).
    pub fn peek_time(&self) -> Option<Time> {
        if self.ready() {
            return Some(self.buckets[0][self.head].key >> RANK_BITS);
        }
        self.first_filled()
            .map(|(level, digit)| self.mins[bucket(level, digit)] >> RANK_BITS)
    }

    /// Remove the earliest event if it is due by `until`, and advance the clock to it.
    #[inline]
    pub fn pop_due(&mut self, until: Time) -> Option<(Time, Event)> {
        if !self.ready() {
            // One look for the first non-empty bucket, for the test and the pop.
            let (level, digit) = self.first_filled()?;
            if self.mins[bucket(level, digit)] >> RANK_BITS > until {
                return None; // `last` stays: a push may still come for any time from now
            }
            if self.buckets[bucket(level, digit)].len() == 1 {
                // With CPU costs most times are distinct and a bucket often holds one
                // event: spreading it would only move it to bucket 0 to be taken.
                return Some(self.take_lone(level, digit));
            }
            self.redistribute(level, digit);
        } else if self.buckets[0][self.head].key >> RANK_BITS > until {
            return None;
        }
        Some(self.take_head())
    }

    /// Remove the earliest event and advance the clock to it.
    pub fn pop(&mut self) -> Option<(Time, Event)> {
        if !self.settle() {
            return None;
        }
        Some(self.take_head())
    }

    /// Take the one entry of bucket (level, digit), the first non-empty one while bucket
    /// 0 is empty, as `redistribute` and `take_head` would: it becomes `last`.
    fn take_lone(&mut self, level: usize, digit: usize) -> (Time, Event) {
        let i = bucket(level, digit);
        let entry = self.buckets[i].pop().expect("one entry");
        self.last = entry.key;
        self.mins[i] = u64::MAX;
        self.filled[level] &= !(1 << digit);
        if self.filled[level] == 0 {
            self.summary &= !(1 << level);
        }
        self.buckets[0].clear();
        self.head = 0;
        self.advance(entry)
    }

    /// Take the entry at the head of bucket 0 (which holds one) and advance the clock.
    #[inline(always)]
    fn take_head(&mut self) -> (Time, Event) {
        let entry = self.buckets[0][self.head];
        self.head += 1;
        if !self.ready() {
            self.buckets[0].clear(); // keep the vector's room for the next instant
            self.head = 0;
        }
        self.advance(entry)
    }

    /// The clock moves to a taken entry's time.
    #[inline(always)]
    fn advance(&mut self, entry: Entry) -> (Time, Event) {
        let time = entry.key >> RANK_BITS;
        assert!(time >= self.now, "time ran backwards");
        self.now = time;
        self.len -= 1;
        self.popped += 1;
        (time, entry.event)
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

    /// A heartbeat (`pick` 0) or a receive, numbered `n` to tell it apart: two ranks.
    fn heartbeat_or_receive(pick: u64, n: u32) -> Event {
        if pick == 0 {
            Event::Heartbeat { node: n }
        } else {
            Event::Receive { link: n, rpc: 0 }
        }
    }

    #[test]
    fn matches_a_sorted_reference_on_random_monotone_schedules() {
        let mut rng = crate::rng::Rng::new(5);
        let mut q = EventQueue::new(8);
        let mut reference: Vec<(u64, u64, u64, Event)> = Vec::new();
        let mut seq = 0u64;
        let mut popped = Vec::new();
        for _ in 0..20_000 {
            if rng.below(3) > 0 || q.is_empty() {
                // Strictly in the future: ranks then always order equal times.
                let time = q.now() + 1 + rng.below(4) * 1000;
                let event = heartbeat_or_receive(rng.below(2), seq as u32);
                q.push(time, 0, event);
                reference.push((time, event.rank(), seq, event));
                seq += 1;
            } else {
                popped.push(q.pop().unwrap());
            }
        }
        while let Some(e) = q.pop() {
            popped.push(e);
        }
        // Popping in between never reorders: a full sort of everything pushed is the
        // order everything came out in.
        reference.sort_by_key(|&(t, rank, s, _)| (t, rank, s));
        let expected: Vec<(u64, Event)> =
            reference.into_iter().map(|(t, _, _, e)| (t, e)).collect();
        assert_eq!(popped, expected);
    }

    #[test]
    fn matches_a_sorted_reference_when_few_times_share_many_events() {
        // Times a few ns to a few hundred µs ahead, many events per time, some at the
        // current instant (of any rank, so some are bumped behind the entry just taken):
        // the buckets hold runs of equal keys, which must come out in insertion order.
        let mut rng = crate::rng::Rng::new(9);
        let mut q = EventQueue::new(8);
        let mut reference: Vec<(u64, u64, Event)> = Vec::new();
        let (mut seq, mut taken) = (0u64, 0u64);
        let mut popped = Vec::new();
        for _ in 0..50_000 {
            if rng.below(2) > 0 || q.is_empty() {
                let time = q.now() + [0, 3, 3, 40, 5_000, 300_000][rng.below(6) as usize];
                let event = heartbeat_or_receive(rng.below(2), seq as u32);
                q.push(time, 0, event);
                // The key the queue orders by: never before the entry taken last.
                let key = ((time << RANK_BITS) | event.rank()).max(taken);
                reference.push((key, seq, event));
                seq += 1;
            } else {
                let (time, event) = q.pop().unwrap();
                taken = taken.max((time << RANK_BITS) | event.rank());
                popped.push((time, event));
            }
        }
        while let Some(e) = q.pop() {
            popped.push(e);
        }
        reference.sort_by_key(|&(key, s, _)| (key, s));
        let expected: Vec<(u64, Event)> = reference
            .into_iter()
            .map(|(key, _, e)| (key >> RANK_BITS, e))
            .collect();
        assert_eq!(popped, expected);
    }

    /// An event of rank `kind % 6` spread over the kinds, numbered `n` to tell it apart.
    fn event_of_kind(kind: u64, n: u32) -> Event {
        match kind % 6 {
            0 => Event::Arrive { link: n, rpc: 0 },
            1 => Event::Receive { link: n, rpc: 0 },
            2 => Event::Heartbeat { node: n },
            3 => Event::Decoded { link: n, rpc: 0 },
            4 => Event::CoreTick {
                host: n,
                core: 0,
                generation: 0,
            },
            _ => Event::SendLoopDone { link: n },
        }
    }

    #[test]
    fn matches_an_ordered_map_with_pushes_just_ahead_and_pop_due() {
        // Most pushes land a few ns ahead (distinct keys, often alone in their bucket),
        // some at the current instant with any rank (clamped behind the entry taken
        // last), some far ahead; pops are bounded by a random `until`. The reference is
        // a map ordered by (key, push number) with the same clamp.
        use std::collections::BTreeMap;
        let mut rng = crate::rng::Rng::new(17);
        let mut q = EventQueue::new(8);
        let mut reference: BTreeMap<(u64, u64), Event> = BTreeMap::new();
        let (mut seq, mut taken, mut popped) = (0u64, 0u64, 0u64);
        for _ in 0..200_000 {
            if rng.below(2) == 0 {
                let ahead = [0, 0, 1, 2, 5, 7, 40, 3_000, 1 << 20][rng.below(9) as usize];
                let time = q.now() + ahead;
                let event = event_of_kind(rng.below(6), seq as u32);
                q.push(time, 0, event);
                let key = ((time << RANK_BITS) | event.rank()).max(taken);
                reference.insert((key, seq), event);
                seq += 1;
            } else {
                let until = q.now() + rng.below(8);
                let due = reference
                    .first_key_value()
                    .filter(|((key, _), _)| key >> RANK_BITS <= until)
                    .map(|(&k, &e)| (k, e));
                let got = q.pop_due(until);
                match due {
                    Some(((key, s), event)) => {
                        assert_eq!(got, Some((key >> RANK_BITS, event)));
                        reference.remove(&(key, s));
                        taken = key;
                        popped += 1;
                        assert_eq!(q.now(), key >> RANK_BITS);
                    }
                    None => assert_eq!(got, None),
                }
            }
            assert_eq!(q.len(), reference.len());
            assert_eq!(q.popped(), popped);
            let next = reference
                .first_key_value()
                .map(|((key, _), _)| key >> RANK_BITS);
            assert_eq!(q.peek_time(), next);
        }
        while let Some((&(key, _), &event)) = reference.first_key_value() {
            assert_eq!(q.pop(), Some((key >> RANK_BITS, event)));
            reference.pop_first();
        }
        assert_eq!(q.pop(), None);
        assert!(q.is_empty());
    }

    #[test]
    fn an_event_for_the_current_instant_queues_behind_what_is_due() {
        let mut q = EventQueue::new(2);
        q.push(10, 0, Event::Heartbeat { node: 0 });
        q.push(10, 0, Event::Heartbeat { node: 1 });
        assert_eq!(q.pop(), Some((10, Event::Heartbeat { node: 0 })));
        q.push(10, 0, Event::Receive { link: 7, rpc: 0 });
        assert_eq!(q.pop(), Some((10, Event::Heartbeat { node: 1 })));
        assert_eq!(q.pop(), Some((10, Event::Receive { link: 7, rpc: 0 })));
    }

    #[test]
    fn pop_due_stops_before_later_events_and_keeps_the_order() {
        let mut q = EventQueue::new(2);
        q.push(30, 0, Event::Heartbeat { node: 2 });
        q.push(10, 0, Event::Heartbeat { node: 0 });
        q.push(20, 0, Event::Heartbeat { node: 1 });
        assert_eq!(q.pop_due(15), Some((10, Event::Heartbeat { node: 0 })));
        assert_eq!(q.pop_due(15), None);
        // Nothing moved: an event for 16 still goes first.
        q.push(16, 0, Event::Heartbeat { node: 9 });
        assert_eq!(q.pop_due(25), Some((16, Event::Heartbeat { node: 9 })));
        assert_eq!(q.pop_due(25), Some((20, Event::Heartbeat { node: 1 })));
        assert_eq!(q.pop_due(100), Some((30, Event::Heartbeat { node: 2 })));
        assert_eq!(q.pop_due(100), None);
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
