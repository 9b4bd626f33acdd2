//! The router's side of a node leaving or joining a topic, as go-libp2p-pubsub does it
//! (the announcement to every peer is the host's: `topics.rs`).
//!
//! Leaving (`handleRemoveSubscription`, then gossipsub's `Leave`): announce the
//! unsubscription to every peer, then PRUNE every mesh peer with the unsubscribe
//! backoff (and peer exchange, when on) and back off from each for as long. Joining
//! (`handleAddSubscription`, then `Join`): announce the subscription, then take the
//! topic's fanout peers, if any, minus those with a negative score or a backoff, topped
//! up with random eligible topic peers to D, and GRAFT them all. Peers that learn a
//! node left stop counting it as a topic peer (gossip, fanout, mesh candidates); a node
//! ignores messages of topics it is not in.

use super::{Ctx, Router};
use crate::config::Version;
use crate::control::Control;

const NANOS_PER_SECOND: u64 = 1_000_000_000;

impl Router {
    /// go's `Leave`: PRUNE the whole mesh with the unsubscribe backoff.
    pub fn leave(&mut self, cx: &mut Ctx, topic: u16) {
        let v11 = cx.at_least(Version::V1_1);
        let (node, backoff) = (cx.node, cx.proto.unsubscribe_backoff_ns);
        let mesh = std::mem::take(&mut self.nodes[node as usize].mesh[topic as usize]);
        for link in mesh {
            if let Some(scores) = &mut self.scores {
                scores.prune(link, topic);
            }
            let mut prune = self.make_prune(cx, link, topic, true);
            if v11 {
                prune.backoff_s = backoff / NANOS_PER_SECOND;
                self.add_backoff(node, topic, link, cx.now + backoff);
            }
            let control = Control {
                prune: vec![prune],
                ..Control::default()
            };
            self.send_with_held_gossip(cx, link, &[], control);
        }
    }

    /// go's `Join`: a mesh from the fanout, topped up to D, all GRAFTed.
    pub fn join(&mut self, cx: &mut Ctx, topic: u16) {
        let v11 = cx.at_least(Version::V1_1);
        let (node, d) = (cx.node, cx.proto.D);
        let state = &mut self.nodes[node as usize];
        let mut mesh = std::mem::take(&mut state.fanout[topic as usize]);
        state.fanout_lastpub[topic as usize] = None;
        mesh.retain(|l| !(self.score(*l) < 0.0 || v11 && self.has_backoff(node, topic, *l)));
        if mesh.len() < d {
            let have = mesh.clone();
            let more = self.pick_topic_peers(cx.links, node, topic, d - mesh.len(), |s, l| {
                let taken = have.contains(&l) || s.is_direct(l);
                !(taken || v11 && s.has_backoff(node, topic, l)) && s.score(l) >= 0.0
            });
            mesh.extend(more);
        }
        for link in mesh {
            self.mesh_add(node, topic, link, cx.now);
            let control = Control {
                graft: vec![topic],
                ..Control::default()
            };
            self.send_with_held_gossip(cx, link, &[], control);
        }
    }
}
