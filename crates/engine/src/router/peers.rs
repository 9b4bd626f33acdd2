//! What a node knows of each peer (per directed link), and the bookkeeping every
//! router decision reads: scores, thresholds, mesh membership, backoffs, topic peers.

use smallvec::SmallVec;

use super::{Ctx, Router, Thresholds};
use crate::config::Time;
use crate::links::Links;
use crate::seen::NOT_CACHED;

/// Per directed link, what its owner knows of the peer; indexed by link id.
pub(crate) struct PeerLinks {
    /// Topics the peer has announced (bit t: topic t).
    pub topics: Vec<u64>,
    /// The peer is a direct (explicit) peer: never meshed or gossiped with.
    pub direct: Vec<bool>,
    /// IHAVE RPCs received this heartbeat (go's `peerhave`).
    pub peerhave: Vec<u32>,
    /// Message ids asked for with IWANT this heartbeat (go's `iasked`).
    pub iasked: Vec<u32>,
    /// IDONTWANT RPCs received this heartbeat (go's `peerdontsend`).
    pub dontsend: Vec<u32>,
}

impl PeerLinks {
    pub fn new(direct: Vec<bool>) -> Self {
        let n = direct.len();
        Self {
            topics: vec![0; n],
            direct,
            peerhave: vec![0; n],
            iasked: vec![0; n],
            dontsend: vec![0; n],
        }
    }

    /// A new link (a connection opened during the run).
    pub fn push(&mut self) {
        self.topics.push(0);
        self.direct.push(false);
        self.peerhave.push(0);
        self.iasked.push(0);
        self.dontsend.push(0);
    }

    /// The peer on `link` announced topics it joined and left.
    pub fn announced(&mut self, link: u32, subscribe: &[u16], unsubscribe: &[u16]) {
        for &topic in subscribe {
            self.topics[link as usize] |= 1 << topic;
        }
        for &topic in unsubscribe {
            self.topics[link as usize] &= !(1 << topic);
        }
    }
}

impl Router {
    pub fn score(&self, link: u32) -> f64 {
        self.scores.as_ref().map_or(0.0, |s| s.score(link))
    }

    pub fn thresholds(&self) -> Thresholds {
        self.scores.as_ref().map_or(Thresholds::default(), |s| {
            let p = s.params();
            Thresholds {
                gossip: p.gossip_threshold,
                publish: p.publish_threshold,
                graylist: p.graylist_threshold,
                accept_px: p.accept_px_threshold,
                opportunistic_graft: p.opportunistic_graft_threshold,
            }
        })
    }

    /// A graylisted peer's messages and control are ignored (never a direct peer's).
    #[inline]
    pub fn graylisted(&self, link: u32) -> bool {
        self.scores.is_some()
            && !self.is_direct(link)
            && self.score(link) < self.thresholds().graylist
    }

    /// The peer on `link` is a direct (explicit) peer: never meshed or gossiped with.
    pub fn is_direct(&self, link: u32) -> bool {
        self.peers.direct[link as usize]
    }

    pub fn in_mesh(&self, node: u32, topic: u16, link: u32) -> bool {
        self.nodes[node as usize].mesh[topic as usize].contains(&link)
    }

    pub fn has_backoff(&self, node: u32, topic: u16, link: u32) -> bool {
        self.nodes[node as usize]
            .backoff
            .contains_key(&(topic, link))
    }

    /// Add `link` to `node`'s mesh for `topic` (go's tracer Graft).
    pub fn mesh_add(&mut self, node: u32, topic: u16, link: u32, now: Time) {
        self.nodes[node as usize].mesh[topic as usize].push(link);
        if let Some(s) = &mut self.scores {
            s.graft(link, topic, now);
        }
    }

    /// Remove `link` from `node`'s mesh for `topic` (go's tracer Prune).
    pub fn mesh_remove(&mut self, node: u32, topic: u16, link: u32) {
        let mesh = &mut self.nodes[node as usize].mesh[topic as usize];
        if let Some(i) = mesh.iter().position(|&l| l == link) {
            mesh.remove(i);
            if let Some(s) = &mut self.scores {
                s.prune(link, topic);
            }
        }
    }

    /// Record a backoff for (topic, link) that ends at `expire`; an existing later
    /// expiry is kept (go's `doAddBackoff`).
    pub fn add_backoff(&mut self, node: u32, topic: u16, link: u32, expire: Time) {
        let entry = self.nodes[node as usize]
            .backoff
            .entry((topic, link))
            .or_insert(expire);
        *entry = (*entry).max(expire);
    }

    /// Links of `node` whose peer has announced `topic`.
    pub fn topic_links<'a>(
        &'a self,
        links: &'a Links,
        node: u32,
        topic: u16,
    ) -> impl Iterator<Item = u32> + 'a {
        links
            .of(node)
            .filter(move |&l| self.peers.topics[l as usize] & (1 << topic) != 0)
    }

    /// go's `getPeers`: every topic peer passing `keep`, shuffled, at most `count`.
    pub fn pick_topic_peers(
        &mut self,
        links: &Links,
        node: u32,
        topic: u16,
        count: usize,
        keep: impl Fn(&Self, u32) -> bool,
    ) -> Vec<u32> {
        let mut candidates: Vec<u32> = self
            .topic_links(links, node, topic)
            .filter(|&l| keep(self, l))
            .collect();
        self.nodes[node as usize].rng.shuffle(&mut candidates);
        candidates.truncate(count);
        candidates
    }

    /// If `msg` is still in the node's message cache, its hop count there.
    pub fn in_mcache(&self, cx: &Ctx, msg: u32) -> Option<u16> {
        let seen = cx.host.seen.get(&msg)?;
        let shifts = (self.nodes[cx.node as usize].ticks as u32).wrapping_sub(seen.cached_at);
        (seen.cached_at != NOT_CACHED && (shifts as usize) < cx.proto.history_length)
            .then_some(seen.hop)
    }

    /// `node` delivered `msg` of `topic`, first received on `back`: first delivery for
    /// that peer; copies still in validation (on `validating` links) count as
    /// near-first deliveries for theirs (go's DeliverMessage); promises are kept.
    pub fn delivered(
        &mut self,
        node: u32,
        back: u32,
        msg: u32,
        topic: u16,
        validating: Option<&SmallVec<[u32; 4]>>,
    ) {
        let Some(scores) = &mut self.scores else {
            return;
        };
        scores.first_delivery(back, topic);
        if let Some(others) = validating {
            for &other in others.iter().filter(|&&l| l != back) {
                scores.near_first_delivery(other, topic);
            }
        }
        self.nodes[node as usize].promises.remove(&msg);
    }
}
