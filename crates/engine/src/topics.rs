//! Nodes leaving and joining topics during the run: the host announces the change to
//! every peer, then its router leaves or joins the mesh (`router/subscriptions.rs`).
//! A node ignores messages of topics it is not in.

use crate::config::SubscriptionChange;
use crate::queue::Event;
use crate::sim::Simulation;

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
            self.router.nodes[node as usize].mesh[topic as usize].clear();
            return;
        }
        self.announce(node, topic, subscribe);
        if !self.router.is_gossipsub() {
            return;
        }
        self.with_router(node, |router, cx| {
            if subscribe {
                router.join(cx, topic);
            } else {
                router.leave(cx, topic);
            }
        });
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
}
