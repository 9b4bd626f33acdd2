//! A node's seen cache: message id -> what the node knows of it, plus a bitset.
//!
//! Nodes ask "have I seen this?" far more often than anything else: for every id of
//! every IHAVE (tens of millions in a long run) and every copy of every message. A hash
//! probe per question missed the caches and dominated profiles. Message ids are dense
//! (0..messages), so a bitset over them answers the question with one load, and the map
//! is consulted only for entries that exist. The bitset costs one bit per message and
//! node; entries removed from the map (expiry, restart) are cleared from it too.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use crate::config::Time;

/// A node's entry in its seen cache.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Seen {
    pub expire: Time,
    /// Full mode: row in the deliveries table. Aggregate mode: COUNTED or UNCOUNTED.
    /// Either mode: OWN for the node's own message.
    pub row: u32,
    pub hop: u16,
    /// Heartbeat count when the message entered the message cache (NOT_CACHED: never).
    pub cached_at: u32,
    /// Aggregate mode: copies received after the first (full mode counts them in the
    /// deliveries row). Fits in the entry's padding: the entry stays 24 bytes.
    pub dups: u32,
}

pub(crate) const NOT_CACHED: u32 = u32::MAX;

pub(crate) const OWN: u32 = u32::MAX;
/// Aggregate mode: a first receipt counted in the node totals and histograms...
pub(crate) const COUNTED: u32 = 0;
/// ...or one left out (a warm-up message, a receiver down during the message's
/// lifetime, or the message's own publisher after a restart).
pub(crate) const UNCOUNTED: u32 = u32::MAX - 1;
// A million messages stay in 100 nodes' seen caches for minutes: keep entries small.
const _: () = assert!(std::mem::size_of::<Seen>() == 24);

/// go-libp2p-pubsub's timecache sweeps expired entries once a minute.
pub(crate) const SEEN_SWEEP_INTERVAL: Time = 60_000_000_000;

/// The seen map's hash of a message id: the id itself, and its low 7 bits again in the
/// top ones (the tag hashbrown compares first, so that neighbouring ids do not share
/// it). Ids are dense and a node meets them nearly in order, so consecutive inserts and
/// lookups land in neighbouring slots and cache lines; a mixing hash scattered them over
/// a table of tens of thousands of entries per node, two memory misses per insert (its
/// control group and its slot), which made `insert` the costliest few instructions of
/// the run. Live ids span about the table's size (they expire in order), so they
/// rarely collide.
#[derive(Default)]
pub(crate) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn write(&mut self, _: &[u8]) {
        unreachable!("message ids are hashed as u32");
    }

    #[inline]
    fn write_u32(&mut self, id: u32) {
        let id = u64::from(id);
        self.0 = id | id << 57;
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

#[derive(Default)]
pub(crate) struct SeenCache {
    map: HashMap<u32, Seen, BuildHasherDefault<IdHasher>>,
    bits: Vec<u64>,
}

impl SeenCache {
    fn bit(msg: u32) -> (usize, u64) {
        ((msg / 64) as usize, 1u64 << (msg % 64))
    }

    pub fn contains_key(&self, msg: &u32) -> bool {
        let (word, mask) = Self::bit(*msg);
        self.bits.get(word).is_some_and(|w| w & mask != 0)
    }

    pub fn get(&self, msg: &u32) -> Option<&Seen> {
        if self.contains_key(msg) {
            self.map.get(msg)
        } else {
            None
        }
    }

    pub fn get_mut(&mut self, msg: &u32) -> Option<&mut Seen> {
        if self.contains_key(msg) {
            self.map.get_mut(msg)
        } else {
            None
        }
    }

    pub fn insert(&mut self, msg: u32, seen: Seen) {
        let (word, mask) = Self::bit(msg);
        if word >= self.bits.len() {
            self.bits.resize(word + 1, 0);
        }
        self.bits[word] |= mask;
        self.map.insert(msg, seen);
    }

    /// Keep the entries `keep` says to keep; forget the others entirely.
    pub fn retain(&mut self, mut keep: impl FnMut(&u32, &mut Seen) -> bool) {
        let bits = &mut self.bits;
        self.map.retain(|msg, seen| {
            let kept = keep(msg, seen);
            if !kept {
                let (word, mask) = Self::bit(*msg);
                bits[word] &= !mask;
            }
            kept
        });
    }

    #[allow(clippy::len_without_is_empty)] // only counted, never tested for emptiness
    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn values(&self) -> impl Iterator<Item = &Seen> {
        self.map.values()
    }

    pub fn clear(&mut self) {
        self.map.clear();
        self.bits.fill(0);
    }
}

#[cfg(test)]
mod tests {
    use super::NOT_CACHED;
    use super::*;

    fn entry() -> Seen {
        Seen {
            expire: 10,
            row: 0,
            hop: 1,
            cached_at: NOT_CACHED,
            dups: 0,
        }
    }

    #[test]
    fn an_id_hashes_to_its_own_slot_with_its_low_bits_as_tag() {
        let hash = |id: u32| {
            let mut h = IdHasher::default();
            h.write_u32(id);
            h.finish()
        };
        assert_eq!(hash(0), 0);
        assert_eq!(hash(1), 1 | 1 << 57);
        // 130 = 0b1000_0010: the slot bits are the id, the 7-bit tag is 130 mod 128.
        assert_eq!(hash(130) & 0xffff, 130);
        assert_eq!(hash(130) >> 57, 2);
        assert_eq!(hash(u32::MAX) >> 57, 127);
    }

    #[test]
    fn the_bitset_follows_the_map() {
        let mut c = SeenCache::default();
        assert!(!c.contains_key(&5) && c.get(&5).is_none());
        c.insert(5, entry());
        c.insert(700, entry());
        assert!(c.contains_key(&5) && c.contains_key(&700) && !c.contains_key(&6));
        c.retain(|msg, _| *msg == 700);
        assert!(!c.contains_key(&5) && c.get(&5).is_none());
        assert!(c.get(&700).is_some());
        c.clear();
        assert!(!c.contains_key(&700));
        assert!(
            !c.contains_key(&u32::MAX),
            "ids far beyond the table are simply unseen"
        );
    }
}
