//! Peer exchange (gossipsub v1.1): PRUNEs that offer other peers, and the connections
//! the pruned node opens to them during the run.
//!
//! As go-libp2p-pubsub does it (`gossipsub.go`):
//! - `makePrune` offers up to `prune_peers` random peers of the topic with a
//!   non-negative score, never the pruned peer itself, when PX is on, the peer speaks
//!   v1.1, and the PRUNE is not a punishment (a GRAFT during backoff, from a negative
//!   score, from a direct peer, or for an unknown topic; a heartbeat prune for a
//!   negative score);
//! - `handlePrune` takes the offer only from a peer whose score is at least
//!   `accept_px_threshold` (0 without scoring, so it is always taken);
//! - `pxConnect` keeps `prune_peers` of the offered peers, skips those already
//!   connected and queues the rest for 8 connector goroutines; at most 128 wait, and
//!   more are dropped.
//!
//! A dial takes `DIAL_ROUND_TRIPS` round trips of the new pair's latency (the TCP
//! handshake, multistream-select of the security protocol, Noise XX carrying the muxer
//! choice) before either end can send; then both announce their subscriptions, as on
//! any new connection. A dial to a node that is down fails. Handshake bytes are not
//! counted. Connections are never closed: go-libp2p-pubsub has no connection limit of
//! its own, and connection managers are not modelled.

use crate::config::{Time, Version};
use crate::network::{pair_latency, pair_loss};
use crate::queue::Event;
use crate::rpc::Prune;
use crate::sim::Simulation;

const NANOS_PER_SECOND: Time = 1_000_000_000;
/// go's `GossipSubConnectors`: dials in flight at once per node.
const CONNECTORS: usize = 8;
/// go's `GossipSubMaxPendingConnections`: dials waiting for a connector.
const MAX_PENDING: usize = 128;
/// Round trips before a dialed connection carries pub/sub traffic.
pub const DIAL_ROUND_TRIPS: u64 = 3;

/// A dial in progress: the peer, when it completes, and the pair's latencies.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Dial {
    pub peer: u32,
    pub done: Time,
    pub latency: (Time, Time),
}

impl Simulation {
    /// go's `makePrune`: the PRUNE `node` sends on `link` for `topic`, with a peer
    /// exchange offer when `do_px` and the protocol allow it.
    pub(crate) fn make_prune(&mut self, node: u32, link: u32, topic: u16, do_px: bool) -> Prune {
        if !self.version_at_least(Version::V1_1) {
            return Prune::new(topic, 0);
        }
        let mut prune = Prune::new(topic, self.proto.prune_backoff_ns / NANOS_PER_SECOND);
        if do_px && self.proto.peer_exchange {
            let offered = self.pick_topic_peers(node, topic, self.proto.prune_peers, |s, l| {
                l != link && s.score(l) >= 0.0
            });
            prune.px = offered
                .into_iter()
                .map(|l| self.links.peer[l as usize])
                .collect();
        }
        prune
    }

    /// go's `pxConnect`, after `handlePrune` checked the pruner's score (`score`, taken
    /// before the PRUNE was handled).
    pub(crate) fn accept_px(&mut self, node: u32, pruner_score: f64, px: &[u32]) {
        if px.is_empty() || pruner_score < self.thresholds().accept_px {
            return;
        }
        let mut offered = px.to_vec();
        if offered.len() > self.proto.prune_peers {
            self.nodes[node as usize].rng.shuffle(&mut offered);
            offered.truncate(self.proto.prune_peers);
        }
        let nodes = self.nodes.len() as u32;
        for peer in offered {
            if peer == node || peer >= nodes || self.links.find(node, peer).is_some() {
                continue;
            }
            let queue = &mut self.nodes[node as usize].dial_queue;
            if queue.len() < MAX_PENDING {
                queue.push_back(peer);
            }
        }
        self.start_dials(node);
    }

    /// Hand queued dials to free connectors.
    fn start_dials(&mut self, node: u32) {
        let now = self.now();
        while self.nodes[node as usize].dials.len() < CONNECTORS {
            let Some(peer) = self.nodes[node as usize].dial_queue.pop_front() else {
                break;
            };
            // The connector checks again: the peer may have dialed us meanwhile.
            let busy = self.nodes[node as usize]
                .dials
                .iter()
                .any(|d| d.peer == peer);
            if busy || self.links.find(node, peer).is_some() {
                continue;
            }
            let placement = self.placement.as_ref();
            let latency = pair_latency(
                &self.latency_model,
                placement,
                node,
                peer,
                &mut self.dial_rng,
            );
            let done = now + DIAL_ROUND_TRIPS * (latency.0 + latency.1);
            self.nodes[node as usize].dials.push(Dial {
                peer,
                done,
                latency,
            });
            self.queue.push(done, node, Event::DialDone { node, peer });
        }
    }

    /// A dial finished: connect unless either end is down or they connected meanwhile.
    #[cold]
    #[inline(never)]
    pub(crate) fn dial_done(&mut self, node: u32, peer: u32) {
        let now = self.now();
        let dials = &mut self.nodes[node as usize].dials;
        // A dial of an earlier life of the node (before a crash) matches nothing.
        let Some(i) = dials.iter().position(|d| d.peer == peer && d.done == now) else {
            return;
        };
        let dial = dials.swap_remove(i);
        if !self.is_down(node) && !self.is_down(peer) && self.links.find(node, peer).is_none() {
            self.connect(node, peer, dial.latency);
        }
        self.start_dials(node);
    }

    /// Open a connection from `dialer` to `listener`: links, queues, counters and score
    /// state for both directions, then each end's hello.
    fn connect(&mut self, dialer: u32, listener: u32, latency: (Time, Time)) {
        let (there, back) = self.links.connect(dialer, listener, latency);
        let loss = pair_loss(self.base_loss, self.placement.as_ref(), dialer, listener);
        for _ in [there, back] {
            self.transport.links.push(Default::default());
            self.net.add_link(loss);
            self.link_topics.push(0);
            self.link_peerhave.push(0);
            self.link_dontsend.push(0);
            self.link_iasked.push(0);
            self.link_direct.push(false);
            if let Some(scores) = &mut self.scores {
                scores.add_link();
            }
        }
        self.init_peer_scores(there);
        self.init_peer_scores(back);
        self.refresh_colocation(dialer);
        self.refresh_colocation(listener);
        self.out.connections.push(self.now(), dialer, listener);
        self.send_hello_on(dialer, there);
        self.send_hello_on(listener, back);
    }
}
