//! Faults and adversaries: nodes that go down and come back, partitions, and nodes that
//! break the protocol on purpose.
//!
//! A node that goes down stops sending, receiving and publishing; its neighbours notice
//! the broken connections at once and drop it from their meshes and topic tables (as
//! go-libp2p-pubsub does on a disconnect). When it comes back it restarts with an empty
//! state (no seen cache, mesh or message cache) and reconnects: both ends announce
//! their subscriptions again, and meshes re-form at the next heartbeats.
//!
//! A partition cuts every link between nodes of different groups for an interval: RPCs
//! that would cross it are lost (the connections are treated as broken but the meshes
//! kept), and gossip recovers what it can after the heal.

use smallvec::SmallVec;

use crate::config::{Fault, Misbehaviour};
use crate::queue::Event;
use crate::rpc::{Control, Kind, MsgRef};
use crate::sim::Simulation;

impl Simulation {
    /// Queue the down/up events of the config's faults.
    pub(crate) fn schedule_faults(&mut self, faults: &[Fault]) {
        for fault in faults {
            if let Fault::Down {
                node,
                from_ns,
                until_ns,
            } = *fault
            {
                if from_ns <= self.end() {
                    self.queue.push(from_ns, node, Event::Down { node });
                }
                if let Some(until) = until_ns.filter(|&t| t <= self.end()) {
                    self.queue.push(until, node, Event::Up { node });
                }
            }
        }
    }

    pub(crate) fn is_down(&self, node: u32) -> bool {
        self.nodes[node as usize].down
    }

    /// True if a partition cuts `link` now.
    pub(crate) fn partitioned(&self, link: u32) -> bool {
        let now = self.now();
        let (a, b) = (
            self.links.owner[link as usize] as usize,
            self.links.peer[link as usize] as usize,
        );
        self.partitions.iter().any(|p| p.cuts(a, b, now))
    }

    /// The node goes down: its peers see the connections break.
    pub(crate) fn go_down(&mut self, node: u32) {
        if self.is_down(node) {
            return;
        }
        let now = self.now();
        let state = &mut self.nodes[node as usize];
        state.down = true;
        state.dial_queue.clear();
        state.dials.clear();
        self.router.disconnected(&self.links, node, now);
        self.partial_disconnected(node);
    }

    /// The node comes back with a fresh state and reconnects to its neighbours.
    pub(crate) fn come_up(&mut self, node: u32) {
        if !self.is_down(node) {
            return;
        }
        self.forget_seen(node);
        let state = &mut self.nodes[node as usize];
        state.down = false;
        state.validating.clear();
        state.cpu_pending = 0;
        let (history, now) = (self.proto.history_length, self.now());
        self.router.restarted(&self.links, node, history, now);
        self.partial_restarted(node);
        self.send_hello(node);
        for link in self.links.of(node) {
            let peer = self.links.peer[link as usize];
            if !self.is_down(peer) {
                let back = self.links.reverse[link as usize];
                self.send_hello_on(peer, back);
            }
        }
    }

    /// Announce `node`'s subscriptions to every neighbour (a new connection's hello).
    pub(crate) fn send_hello(&mut self, node: u32) {
        for link in self.links.of(node) {
            self.send_hello_on(node, link);
        }
    }

    pub(crate) fn send_hello_on(&mut self, node: u32, link: u32) {
        let topics: SmallVec<[u16; 2]> = (0..self.topics())
            .filter(|&t| self.nodes[node as usize].is_subscribed(t))
            .collect();
        let rpc = self.rpcs.alloc();
        self.rpcs.get_mut(rpc).subscribe.extend_from_slice(&topics);
        // go adds its extensions to the hello (extensions.go:OnNewOutboundStream).
        self.rpcs.get_mut(rpc).control.extensions = self.partial_extension(node);
        self.send(node, link, rpc);
    }

    /// An adversary that spams IHAVE: ids nobody has, to every topic peer.
    pub(crate) fn spam_ihave(&mut self, node: u32) {
        let Some(count) = self.nodes[node as usize]
            .misbehaviour
            .as_ref()
            .filter(|a| a.behaviour == Misbehaviour::SpamIhave)
            .map(|a| a.spam_ids)
        else {
            return;
        };
        let first_phantom = self.messages.len() as u32;
        for topic in 0..self.topics() {
            let links: Vec<u32> = self.router.topic_links(&self.links, node, topic).collect();
            for link in links {
                // Ids past the message table: they never exist, so asking for them
                // always breaks a promise.
                let state = &mut self.nodes[node as usize];
                let ids: Vec<u32> = (0..count)
                    .map(|_| {
                        state.next_phantom = state.next_phantom.wrapping_add(1);
                        first_phantom + state.next_phantom % (u32::MAX - first_phantom)
                    })
                    .collect();
                let control = Control {
                    ihave: vec![(topic, ids)],
                    ..Control::default()
                };
                self.send_control(node, link, control);
            }
        }
    }

    /// An adversary that sends invalid messages: `spam_ids` per topic peer and heartbeat,
    /// each a new id past the message table whose topic is in its low 6 bits.
    pub(crate) fn spam_invalid(&mut self, node: u32) {
        let Some(count) = self.nodes[node as usize]
            .misbehaviour
            .as_ref()
            .filter(|a| a.behaviour == Misbehaviour::SpamInvalid)
            .map(|a| a.spam_ids)
        else {
            return;
        };
        let first_phantom = self.messages.len() as u64;
        let room = (u64::from(u32::MAX) - first_phantom) / 64 * 64;
        for topic in 0..self.topics() {
            let links: Vec<u32> = self.router.topic_links(&self.links, node, topic).collect();
            for link in links {
                let rpc = self.rpcs.alloc();
                for _ in 0..count {
                    let state = &mut self.nodes[node as usize];
                    state.next_phantom = state.next_phantom.wrapping_add(1);
                    let k = (u64::from(state.next_phantom) * 64 + u64::from(topic)) % room;
                    let msg = (first_phantom + k) as u32;
                    self.rpcs.get_mut(rpc).msgs.push(MsgRef { msg, hop: 0 });
                }
                self.send(node, link, rpc);
            }
        }
    }

    /// The topic of an invalid message an adversary made up (see `spam_invalid`).
    pub(crate) fn invalid_topic(&self, msg: u32) -> u16 {
        ((msg - self.messages.len() as u32) % 64) as u16
    }

    /// A relay delayed by an adversary happens now.
    pub(crate) fn delayed_forward(&mut self, node: u32, msg: u32, link: u32) {
        if !self.is_down(node) {
            self.forward(node, msg, link);
        }
    }

    /// Count an RPC lost to a fault.
    pub(crate) fn count_fault_drop(&mut self, node: u32, peer: u32, reason: &'static str) {
        self.count_drop(node, peer, Kind::Payload, reason);
    }
}
