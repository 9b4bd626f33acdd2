//! Scripted interventions and read-only views of protocol state.
//!
//! The tests use these to stage situations the spec describes (a GRAFT during backoff,
//! an IHAVE flood) and to look at what a node decided, without reaching into private
//! fields. Interventions act through the same code paths a node's own decisions take.

use crate::output::NodeTraffic;
use crate::rpc::Control;
use crate::sim::Simulation;

/// Entries of the simulation's per-message state right now, summed over nodes: what
/// must not grow with the number of messages in a long run (aggregate mode).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LiveState {
    /// Seen-cache entries (freed by the once-a-minute sweep after seen_ttl).
    pub seen: usize,
    /// Ids in message-cache windows (freed by the heartbeat's shift).
    pub mcache_ids: usize,
    /// (message, peer) IWANT reply counters (freed with their window).
    pub mcache_served: usize,
    /// Messages with copies in validation.
    pub validating: usize,
    /// v2.0: messages announced and being fetched.
    pub announced: usize,
    /// v1.2: (peer, message) IDONTWANTs remembered (3 heartbeats).
    pub unwanted: usize,
    /// IWANT promises (scoring).
    pub promises: usize,
    /// RPC slots ever allocated (in flight or recycled).
    pub rpc_slots: usize,
    /// Events queued.
    pub events: usize,
    /// Rows of the deliveries table (full mode; always 0 in aggregate mode).
    pub deliveries: usize,
}

impl Simulation {
    fn link_between(&self, node: u32, peer: u32) -> u32 {
        self.links
            .find(node, peer)
            .unwrap_or_else(|| panic!("nodes {node} and {peer} are not connected"))
    }

    /// Make `from` send `control` to `to` now, through its outbound queue.
    pub fn inject(&mut self, from: u32, to: u32, control: Control) {
        let link = self.link_between(from, to);
        self.send_control(from, link, control);
    }

    /// `node` prunes `peer` from its `topic` mesh now, as its heartbeat trimming would:
    /// remove, back off, send PRUNE (offering peers when peer exchange is on).
    pub fn prune_now(&mut self, node: u32, peer: u32, topic: u16) {
        let link = self.link_between(node, peer);
        self.with_router(node, |router, cx| {
            router.mesh_remove(node, topic, link);
            router.add_backoff(node, topic, link, cx.now + cx.proto.prune_backoff_ns);
            let control = Control {
                prune: vec![router.make_prune(cx, link, topic, true)],
                ..Control::default()
            };
            cx.out.send_control(link, control);
        });
    }

    /// `node` grafts `peer` into its `topic` mesh now, as its heartbeat would.
    pub fn graft_now(&mut self, node: u32, peer: u32, topic: u16) {
        let link = self.link_between(node, peer);
        let now = self.now();
        self.router.mesh_add(node, topic, link, now);
        self.inject(
            node,
            peer,
            Control {
                graft: vec![topic],
                ..Control::default()
            },
        );
    }

    /// The behaviour penalty (P7 counter) `node` holds against `peer`; 0 without scoring.
    pub fn behaviour_penalty(&self, node: u32, peer: u32) -> f64 {
        let link = self.link_between(node, peer);
        self.router
            .scores
            .as_ref()
            .map_or(0.0, |s| s.behaviour_penalty(link))
    }

    /// `peer`'s score as `node` sees it (0 without scoring).
    pub fn peer_score(&self, node: u32, peer: u32) -> f64 {
        self.router.score(self.link_between(node, peer))
    }

    /// True if `node` holds a backoff entry for `peer` on `topic`.
    pub fn has_backoff_entry(&self, node: u32, peer: u32, topic: u16) -> bool {
        let link = self.link_between(node, peer);
        self.router.has_backoff(node, topic, link)
    }

    /// How much per-message state the simulation holds now.
    pub fn live_state(&self) -> LiveState {
        let mut live = LiveState {
            rpc_slots: self.rpcs.slots(),
            events: self.queue.len(),
            deliveries: self.out.deliveries.len(),
            ..LiveState::default()
        };
        for state in &self.nodes {
            live.seen += state.seen.len();
            live.validating += state.validating.len();
        }
        for state in &self.router.nodes {
            let (ids, served) = state.mcache.sizes();
            live.mcache_ids += ids;
            live.mcache_served += served;
            live.announced += state.announced.len();
            live.unwanted += state.unwanted.len();
            live.promises += state.promises.len();
        }
        live
    }

    /// Heartbeats `node` has run.
    pub fn heartbeat_ticks(&self, node: u32) -> u64 {
        self.router.nodes[node as usize].ticks
    }

    /// Items and bytes `node` sent and received so far, per kind.
    pub fn traffic(&self, node: u32) -> &NodeTraffic {
        &self.out.traffic[node as usize]
    }
}
