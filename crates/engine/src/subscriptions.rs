//! Nodes leaving and joining topics during the run, as go-libp2p-pubsub does it.
//!
//! Leaving (`handleRemoveSubscription`, then gossipsub's `Leave`): announce the
//! unsubscription to every peer, then PRUNE every mesh peer with the unsubscribe
//! backoff (and peer exchange, when on) and back off from each for as long. Joining
//! (`handleAddSubscription`, then `Join`): announce the subscription, then take the
//! topic's fanout peers, if any, minus those with a negative score or a backoff, topped
//! up with random eligible topic peers to D, and GRAFT them all. Peers that learn a
//! node left stop counting it as a topic peer (gossip, fanout, mesh candidates); a node
//! ignores messages of topics it is not in.

use crate::config::{SubscriptionChange, Version};
use crate::queue::Event;
use crate::rpc::Control;
use crate::sim::Simulation;

const NANOS_PER_SECOND: u64 = 1_000_000_000;

impl Simulation {
    pub(crate) fn schedule_subscription_changes(&mut self, changes: &[SubscriptionChange]) {
        let end = self.end();
        for c in changes.iter().filter(|c| c.at_ns <= end) {
            let event = Event::Subscription {
                node: c.node,
                topic: c.topic,
                subscribe: c.subscribe,
            };
            self.queue.push(c.at_ns, c.node, event);
        }
    }

    #[cold]
    #[inline(never)]
    pub(crate) fn change_subscription(&mut self, node: u32, topic: u16, subscribe: bool) {
        let state = &mut self.nodes[node as usize];
        if state.is_subscribed(topic) == subscribe {
            return;
        }
        if subscribe {
            state.subscribed |= 1 << topic;
        } else {
            state.subscribed &= !(1 << topic);
        }
        // A node that is down changes its mind quietly: its hello says so when it is back.
        if self.is_down(node) {
            self.nodes[node as usize].mesh[topic as usize].clear();
            return;
        }
        self.announce(node, topic, subscribe);
        if self.proto.router != crate::config::Router::Gossipsub {
            return;
        }
        if subscribe {
            self.join(node, topic);
        } else {
            self.leave(node, topic);
        }
    }

    /// Tell every peer that `node` joined or left `topic`.
    fn announce(&mut self, node: u32, topic: u16, subscribe: bool) {
        for link in self.links.of(node) {
            if self.is_down(self.links.peer[link as usize]) {
                continue;
            }
            let rpc = self.rpcs.alloc();
            let r = self.rpcs.get_mut(rpc);
            if subscribe {
                r.subscribe.push(topic);
            } else {
                r.unsubscribe.push(topic);
            }
            self.send(node, link, rpc);
        }
    }

    /// go's `Leave`: PRUNE the whole mesh with the unsubscribe backoff.
    fn leave(&mut self, node: u32, topic: u16) {
        let v11 = self.version_at_least(Version::V1_1);
        let backoff = self.proto.unsubscribe_backoff_ns;
        let mesh = std::mem::take(&mut self.nodes[node as usize].mesh[topic as usize]);
        for link in mesh {
            if let Some(scores) = &mut self.scores {
                scores.prune(link, topic);
            }
            let mut prune = self.make_prune(node, link, topic, true);
            if v11 {
                prune.backoff_s = backoff / NANOS_PER_SECOND;
                self.add_backoff(node, topic, link, backoff);
            }
            let control = Control {
                prune: vec![prune],
                ..Control::default()
            };
            self.send_control(node, link, control);
        }
    }

    /// go's `Join`: a mesh from the fanout, topped up to D, all GRAFTed.
    fn join(&mut self, node: u32, topic: u16) {
        let v11 = self.version_at_least(Version::V1_1);
        let state = &mut self.nodes[node as usize];
        let mut mesh = std::mem::take(&mut state.fanout[topic as usize]);
        state.fanout_lastpub[topic as usize] = None;
        mesh.retain(|l| !(self.score(*l) < 0.0 || v11 && self.has_backoff(node, topic, *l)));
        if mesh.len() < self.proto.D {
            let have = mesh.clone();
            let more = self.pick_topic_peers(node, topic, self.proto.D - mesh.len(), |s, l| {
                let taken = have.contains(&l) || s.is_direct(l);
                !(taken || v11 && s.has_backoff(node, topic, l)) && s.score(l) >= 0.0
            });
            mesh.extend(more);
        }
        for link in mesh {
            self.mesh_add(node, topic, link);
            let control = Control {
                graft: vec![topic],
                ..Control::default()
            };
            self.send_control(node, link, control);
        }
    }
}
