//! The message cache of one node: the ids it can gossip and serve to IWANT.
//!
//! As in go-libp2p-pubsub's `mcache.go`: one window per heartbeat, `put` on every
//! publish and forward, `gossip_ids` from the newest `history_gossip` windows, `shift`
//! at the end of each heartbeat, and a per (message, peer) counter of IWANT replies.
//!
//! Whether a message is still cached is not looked up here: the node's seen-cache entry
//! records the heartbeat count at which it was put, and the message stays cached for
//! `history_length` shifts (see `Simulation::in_mcache`). That spares a hash-map insert
//! and removal per message and node on the hot path; only IWANT replies, which are rare,
//! touch the map of serve counts.

use std::collections::VecDeque;

use rustc_hash::FxHashMap;

#[derive(Clone, Debug)]
pub struct MessageCache {
    windows: VecDeque<Vec<u32>>,
    /// (message, link) -> IWANT replies so far, for cached messages only.
    served: FxHashMap<(u32, u32), u32>,
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

    /// Add `msg` to the newest window; the caller puts each message at most once.
    pub fn put(&mut self, msg: u32) {
        self.windows[0].push(msg);
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

    /// Count one IWANT reply of cached message `msg` to `link`; returns the count
    /// including this one.
    pub fn serve(&mut self, msg: u32, link: u32) -> u32 {
        let count = self.served.entry((msg, link)).or_insert(0);
        *count += 1;
        *count
    }

    /// Ids in all windows, and (message, peer) IWANT counters kept (for inspection).
    pub fn sizes(&self) -> (usize, usize) {
        (self.windows.iter().map(Vec::len).sum(), self.served.len())
    }

    /// Drop the oldest window and open a new one (end of heartbeat).
    pub fn shift(&mut self) {
        if let Some(mut oldest) = self.windows.pop_back() {
            if !self.served.is_empty() {
                let gone: rustc_hash::FxHashSet<u32> = oldest.iter().copied().collect();
                self.served.retain(|(msg, _), _| !gone.contains(msg));
            }
            oldest.clear();
            self.windows.push_front(oldest);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn messages_leave_the_gossip_windows_after_history_length_shifts() {
        let mut c = MessageCache::new(3);
        c.put(7);
        c.shift();
        c.shift();
        assert_eq!(c.gossip_ids(3, |_| true), vec![7]);
        c.shift();
        assert!(c.gossip_ids(3, |_| true).is_empty());
    }

    #[test]
    fn serve_counts_per_peer_and_forgets_expired_messages() {
        let mut c = MessageCache::new(1);
        c.put(1);
        assert_eq!(c.serve(1, 10), 1);
        assert_eq!(c.serve(1, 10), 2);
        assert_eq!(c.serve(1, 11), 1);
        c.shift();
        assert!(c.served.is_empty());
    }
}
