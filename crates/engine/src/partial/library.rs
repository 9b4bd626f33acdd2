//! The library's group state, as go-libp2p-pubsub v0.17.0 keeps it
//! (`partialmessages/partialmsgs.go`): per group, the tracked peers and their
//! application state, a TTL in heartbeats, and who opened it; per topic, counters
//! that cap the groups peers may open.

use rustc_hash::FxHashMap;

use super::{PartSet, PartialNode};

/// The application's state for one peer in one group (go's test `peerState`): the
/// parts it is known to have (`recvd`) and the metadata last sent to it (`sent`);
/// `None` until known or sent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PeerPart {
    pub recvd: Option<PartSet>,
    pub sent: Option<PartSet>,
}

/// One group's library state (partialmsgs.go `partialMessageStatePerGroupPerTopic`).
#[derive(Clone, Debug, Default)]
pub struct LibGroup {
    pub topic: u16,
    pub ttl: u32,
    /// The link of the peer that opened the group, if a peer did.
    pub initiated_by: Option<u32>,
    /// Tracked peers (links) and their state, in the order they were added.
    pub peers: Vec<(u32, PeerPart)>,
}

impl LibGroup {
    pub fn tracks(&self, link: u32) -> bool {
        self.peers.iter().any(|(l, _)| *l == link)
    }

    /// `link`'s state, tracked with zero state if it was not.
    pub fn peer(&mut self, link: u32) -> &mut PeerPart {
        let i = match self.peers.iter().position(|(l, _)| *l == link) {
            Some(i) => i,
            None => {
                self.peers.push((link, PeerPart::default()));
                self.peers.len() - 1
            }
        };
        &mut self.peers[i].1
    }
}

/// Why a peer could not open a group (partialmsgs.go `errPeerInitiatedGroup...`).
pub const TOTAL_LIMIT: &str = "partial-group-limit-total";
pub const PEER_LIMIT: &str = "partial-group-limit";

impl PartialNode {
    /// The group as `PublishPartial` finds it (partialmsgs.go:groupState with
    /// peerInitiated false, then the TTL reset of PublishPartial): created as the
    /// node's own, or taken over from the peer that opened it, releasing its counter.
    pub fn local_group(&mut self, group: u32, topic: u16, ttl: u32) -> &mut LibGroup {
        let opener = self.groups.get(&group).and_then(|g| g.initiated_by);
        if let Some(link) = opener {
            self.release(topic, link);
        }
        let state = self.groups.entry(group).or_insert_with(|| LibGroup {
            topic,
            ..LibGroup::default()
        });
        state.initiated_by = None;
        state.ttl = ttl;
        state
    }

    /// The group as `HandleRPC` finds it for an RPC from `link` (partialmsgs.go:
    /// groupState with peerInitiated true): an unknown group is opened by the peer
    /// if the per-topic limits allow (`peerInitiatedGroupCounter.Inc`), else refused.
    pub fn peer_group(
        &mut self,
        group: u32,
        topic: u16,
        link: u32,
        ttl: u32,
        limits: (u32, u32),
    ) -> Result<&mut LibGroup, &'static str> {
        if !self.groups.contains_key(&group) {
            let (total, per_peer) = self.opened.entry(topic).or_default();
            let mine = per_peer.entry(link).or_default();
            if *total >= limits.0 {
                return Err(TOTAL_LIMIT);
            }
            if *mine >= limits.1 {
                return Err(PEER_LIMIT);
            }
            *total += 1;
            *mine += 1;
            let state = LibGroup {
                topic,
                ttl,
                initiated_by: Some(link),
                peers: Vec::new(),
            };
            self.groups.insert(group, state);
        }
        Ok(self.groups.get_mut(&group).expect("inserted above"))
    }

    /// One group opened by `link` on `topic` is gone.
    fn release(&mut self, topic: u16, link: u32) {
        if let Some((total, per_peer)) = self.opened.get_mut(&topic) {
            if let Some(mine) = per_peer.get_mut(&link) {
                *mine -= 1;
                *total = total.saturating_sub(1);
                if *mine == 0 {
                    per_peer.remove(&link);
                }
            }
        }
    }

    /// The library's heartbeat (partialmsgs.go:Heartbeat): a group whose TTL ran out or
    /// that tracks no peer is deleted, the others age by one. Returns how many went.
    pub fn heartbeat(&mut self) -> u64 {
        let mut ids: Vec<u32> = self.groups.keys().copied().collect();
        ids.sort_unstable();
        let mut gone = 0;
        for id in ids {
            let state = self.groups.get_mut(&id).expect("listed");
            if state.ttl > 0 && !state.peers.is_empty() {
                state.ttl -= 1;
                continue;
            }
            let state = self.groups.remove(&id).expect("listed");
            if let Some(link) = state.initiated_by {
                self.release(state.topic, link);
            }
            gone += 1;
        }
        gone
    }

    /// The peer on `link` left (partialmsgs.go:OnClosedOutboundStream): it is no longer
    /// tracked in any group, and the groups it opened no longer count against it.
    pub fn remove_link(&mut self, link: u32) {
        for state in self.groups.values_mut() {
            state.peers.retain(|(l, _)| *l != link);
        }
        for (total, per_peer) in self.opened.values_mut() {
            if let Some(mine) = per_peer.remove(&link) {
                *total = total.saturating_sub(mine);
            }
        }
    }
}

/// Groups of `topic` a node opened itself, sorted (the ones it gossips).
pub fn own_groups(groups: &FxHashMap<u32, LibGroup>, topic: u16) -> Vec<u32> {
    let mut ids: Vec<u32> = groups
        .iter()
        .filter(|(_, g)| g.topic == topic && g.initiated_by.is_none())
        .map(|(&id, _)| id)
        .collect();
    ids.sort_unstable();
    ids
}

#[cfg(test)]
mod tests {
    use super::*;

    // partialmsgs.go:peerInitiatedGroupCounter.Inc: refused once the peer has opened
    // `per_peer` groups on the topic, or every peer together `total`.
    #[test]
    fn a_peer_opens_at_most_its_limit_and_all_peers_the_total() {
        let mut node = PartialNode::default();
        for group in 0..8 {
            assert!(node.peer_group(group, 0, 7, 3, (255, 8)).is_ok());
        }
        assert_eq!(
            node.peer_group(8, 0, 7, 3, (255, 8)).err(),
            Some(PEER_LIMIT)
        );
        // Known groups are not counted again; another topic has its own counters.
        assert!(node.peer_group(3, 0, 7, 3, (255, 8)).is_ok());
        assert!(node.peer_group(9, 1, 7, 3, (255, 8)).is_ok());
        let mut node = PartialNode::default();
        for (group, link) in (0..4).zip([1, 2, 3, 4]) {
            assert!(node.peer_group(group, 0, link, 3, (4, 8)).is_ok());
        }
        assert_eq!(node.peer_group(4, 0, 5, 3, (4, 8)).err(), Some(TOTAL_LIMIT));
    }

    #[test]
    fn publishing_a_peer_group_releases_its_count() {
        let mut node = PartialNode::default();
        for group in 0..8 {
            node.peer_group(group, 0, 7, 3, (255, 8)).unwrap();
        }
        node.local_group(0, 0, 3);
        assert!(node.peer_group(8, 0, 7, 3, (255, 8)).is_ok());
        assert_eq!(
            node.peer_group(9, 0, 7, 3, (255, 8)).err(),
            Some(PEER_LIMIT)
        );
    }

    // partialmsgs.go:Heartbeat: deleted when the TTL is 0 or no peer is tracked,
    // else one less; a deleted peer group releases its count.
    #[test]
    fn heartbeats_age_and_delete_groups() {
        let mut node = PartialNode::default();
        node.local_group(0, 0, 3).peer(5);
        node.peer_group(1, 0, 7, 3, (255, 1)).unwrap(); // no peer tracked
        assert_eq!(node.heartbeat(), 1);
        assert!(
            node.peer_group(2, 0, 7, 3, (255, 1)).is_ok(),
            "count released"
        );
        for ttl in [1, 0] {
            node.heartbeat();
            assert_eq!(node.groups[&0].ttl, ttl);
        }
        assert_eq!(node.groups[&0].ttl, 0);
        node.heartbeat();
        assert!(!node.groups.contains_key(&0));
    }
}
