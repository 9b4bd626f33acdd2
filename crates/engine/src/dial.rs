//! Connections opened during the run (peer exchange): the node's connectors dial the
//! peers its router accepted from a PRUNE (`router/exchange.rs`).
//!
//! As go-libp2p-pubsub's `pxConnect` does it: skip peers already connected and queue
//! the rest for 8 connector goroutines; at most 128 wait, and more are dropped. A dial
//! takes `DIAL_ROUND_TRIPS` round trips of the new pair's latency (the TCP handshake,
//! multistream-select of the security protocol, Noise XX carrying the muxer choice)
//! before either end can send; then both announce their subscriptions, as on any new
//! connection. A dial to a node that is down fails. Handshake bytes are not counted.
//! Connections are never closed: go-libp2p-pubsub has no connection limit of its own,
//! and connection managers are not modelled.

use crate::config::Time;
use crate::network::{pair_latency, pair_loss};
use crate::node::Dial;
use crate::queue::Event;
use crate::sim::Simulation;

/// go's `GossipSubConnectors`: dials in flight at once per node.
const CONNECTORS: usize = 8;
/// go's `GossipSubMaxPendingConnections`: dials waiting for a connector.
const MAX_PENDING: usize = 128;
/// Round trips before a dialed connection carries pub/sub traffic.
pub const DIAL_ROUND_TRIPS: u64 = 3;

impl Simulation {
    /// Queue dials to `offered` peers not connected yet, and start what connectors can.
    pub(crate) fn queue_dials(&mut self, node: u32, offered: &[u32]) {
        let nodes = self.nodes.len() as u32;
        for &peer in offered {
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
        }
        self.router.connected(&self.links, there, back);
        self.out.connections.push(self.now(), dialer, listener);
        self.send_hello_on(dialer, there);
        self.send_hello_on(listener, back);
    }
}
