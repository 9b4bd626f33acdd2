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
//! The dials themselves (connectors, the handshake's round trips, the new links) are
//! the host's: `dial.rs`.

use super::{Ctx, Router};
use crate::config::{Time, Version};
use crate::rpc::Prune;

const NANOS_PER_SECOND: Time = 1_000_000_000;

impl Router {
    /// go's `makePrune`: the PRUNE the node sends on `link` for `topic`, with a peer
    /// exchange offer when `do_px` and the protocol allow it.
    pub fn make_prune(&mut self, cx: &Ctx, link: u32, topic: u16, do_px: bool) -> Prune {
        if !cx.at_least(Version::V1_1) {
            return Prune::new(topic, 0);
        }
        let p = cx.proto;
        let mut prune = Prune::new(topic, p.prune_backoff_ns / NANOS_PER_SECOND);
        if do_px && p.peer_exchange {
            let offered = self.pick_topic_peers(cx.links, cx.node, topic, p.prune_peers, |s, l| {
                l != link && s.score(l) >= 0.0
            });
            prune.px = offered
                .into_iter()
                .map(|l| cx.links.peer[l as usize])
                .collect();
        }
        prune
    }

    /// go's `pxConnect`, after `handlePrune` checked the pruner's score (`score`, taken
    /// before the PRUNE was handled): keep `prune_peers` of the offer and dial them.
    pub(super) fn accept_px(&mut self, cx: &mut Ctx, pruner_score: f64, px: &[u32]) {
        if px.is_empty() || pruner_score < self.thresholds().accept_px {
            return;
        }
        let mut offered = px.to_vec();
        if offered.len() > cx.proto.prune_peers {
            self.nodes[cx.node as usize].rng.shuffle(&mut offered);
            offered.truncate(cx.proto.prune_peers);
        }
        cx.out.dial(&offered);
    }
}
