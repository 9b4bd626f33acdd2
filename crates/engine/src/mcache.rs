//! The message cache of one node: the ids it can gossip and serve to IWANT.
//!
//! As in go-libp2p-pubsub's `mcache.go`: one window per heartbeat, `put` on every
//! publish and forward, `gossip_ids` from the newest `history_gossip` windows, `shift`
//! at the end of each heartbeat, and a per (message, peer) counter of IWANT replies.
//! Message contents live in the global message table, so the cache holds only ids.

use std::collections::VecDeque;

use rustc_hash::FxHashMap;
use smallvec::SmallVec;

#[derive(Clone, Debug)]
pub struct MessageCache {
    windows: VecDeque<Vec<u32>>,
    /// Cached message -> (link, times served) for IWANT replies.
    served: FxHashMap<u32, SmallVec<[(u32, u32); 2]>>,
}

impl MessageCache {
    pub fn new(history_length: usize) -> Self {
        let mut windows = VecDeque::with_capacity(history_length);
        windows.resize_with(history_length, Vec::new);
        Self {
            windows,
            served: FxHashMap::default(),
        }
    }

    pub fn put(&mut self, msg: u32) {
        if self.served.insert(msg, SmallVec::new()).is_none() {
            self.windows[0].push(msg);
        }
    }

    pub fn contains(&self, msg: u32) -> bool {
        self.served.contains_key(&msg)
    }

    /// Ids of the newest `gossip` windows whose topic passes `in_topic`, newest first.
    pub fn gossip_ids(&self, gossip: usize, mut in_topic: impl FnMut(u32) -> bool) -> Vec<u32> {
        self.windows
            .iter()
            .take(gossip)
            .flatten()
            .copied()
            .filter(|&m| in_topic(m))
            .collect()
    }

    /// Count one IWANT reply of `msg` to `link`; returns the count including this one,
    /// or None if the message is no longer cached.
    pub fn serve(&mut self, msg: u32, link: u32) -> Option<u32> {
        let peers = self.served.get_mut(&msg)?;
        if let Some(entry) = peers.iter_mut().find(|(l, _)| *l == link) {
            entry.1 += 1;
            return Some(entry.1);
        }
        peers.push((link, 1));
        Some(1)
    }

    /// Drop the oldest window and open a new one (end of heartbeat).
    pub fn shift(&mut self) {
        if let Some(oldest) = self.windows.pop_back() {
            for msg in &oldest {
                self.served.remove(msg);
            }
            let mut recycled = oldest;
            recycled.clear();
            self.windows.push_front(recycled);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_leave_after_history_length_shifts() {
        let mut c = MessageCache::new(3);
        c.put(7);
        c.shift();
        c.shift();
        assert!(c.contains(7));
        c.shift();
        assert!(!c.contains(7));
    }

    #[test]
    fn gossip_covers_only_the_newest_windows() {
        let mut c = MessageCache::new(5);
        c.put(1);
        c.shift();
        c.put(2);
        c.shift();
        c.put(3);
        assert_eq!(c.gossip_ids(2, |_| true), vec![3, 2]);
        assert_eq!(c.gossip_ids(5, |m| m != 2), vec![3, 1]);
    }

    #[test]
    fn serve_counts_per_peer() {
        let mut c = MessageCache::new(2);
        c.put(1);
        assert_eq!(c.serve(1, 10), Some(1));
        assert_eq!(c.serve(1, 10), Some(2));
        assert_eq!(c.serve(1, 11), Some(1));
        assert_eq!(c.serve(9, 10), None);
    }
}
