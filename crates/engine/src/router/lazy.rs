//! Sending fewer copies: IDONTWANT (gossipsub v1.2) and IANNOUNCE/INEED (v2.0 draft).
//!
//! IDONTWANT, as go-libp2p-pubsub does it (`Preprocess`, `handleIDontWant`): when an
//! RPC brings messages the node has not marked seen (a copy arriving while an earlier
//! one is validated counts again) whose data is at least `idontwant_threshold` bytes,
//! the node tells every mesh peer of the topic but the sender, in one urgent RPC per
//! peer, before validating; it does the same for its own messages when it publishes.
//! The v2.0 fork (ppopth/go-libp2p-pubsub@cfecb8a) tells the sender too and sends
//! nothing on publish; `idontwant_to_sender` and `idontwant_on_publish` choose. A peer
//! remembers at most the first 10 ids of each IDONTWANT RPC, for 3 heartbeats, and
//! ignores IDONTWANTs beyond 1000 RPCs per heartbeat. Remembered ids stop mesh/fanout
//! forwards and IWANT replies of that message to that peer (not flood-publish); each
//! such skip is a transmission saved.
//!
//! IANNOUNCE/INEED (libp2p specs PR #653, go-libp2p-pubsub PR #587, neither merged):
//! a relay sends each mesh peer, with probability D_announce / D, an IANNOUNCE (topic,
//! id) instead of the message; a publisher tosses the same coin (the fork's rule,
//! `announce_own = coin`) or announces only when D_announce = D (the draft's). A node
//! accepts announcements from mesh peers for messages it has not seen, queues the
//! announcers in order, and asks one at a time with INEED; if the message has not
//! arrived `ineed_timeout` later, it asks the next. A peer answers an INEED with the
//! message. The queue is dropped when the message arrives (before validation).

use std::collections::VecDeque;

use super::{Ctx, Route, Router};
use crate::config::{AnnounceOwn, Misbehaviour, Version};
use crate::control::{Control, Kind};
use crate::queue::Event;
use crate::rpc::MsgRef;

/// go: ids stored per IDONTWANT RPC (`GossipSubMaxIDontWantLength`).
const MAX_IDONTWANT_IDS: usize = 10;
/// go: IDONTWANT RPCs accepted per peer per heartbeat (`GossipSubMaxIDontWantMessages`).
const MAX_IDONTWANT_RPCS: u32 = 1000;
/// go: heartbeats an IDONTWANT is remembered (`GossipSubIDontWantMessageTTL`).
const IDONTWANT_TTL: u8 = 3;

/// What a node knows about a message it was told about but does not have yet.
#[derive(Clone, Debug, Default)]
pub struct Announced {
    /// Announcers not asked yet, in the order they announced.
    pub waiting: VecDeque<u32>,
    /// Bumped on every INEED, so stale timeouts can be told apart.
    pub attempt: u32,
    /// True while an INEED is outstanding.
    pub asking: bool,
}

impl Router {
    /// Messages of an incoming RPC that the node has not seen yet, in any state: for
    /// each, stop any announcement queue, and tell the mesh (but `back`) we have them.
    pub fn preprocess(&mut self, cx: &mut Ctx, back: u32, msgs: &[MsgRef]) {
        if !cx.at_least(Version::V1_2) {
            return; // before v1.2 there is nothing to do (and 2.0 includes 1.2)
        }
        // Only a seen message is skipped (go's `shouldPush` looks at the seen cache): a
        // copy arriving while an earlier one waits for validation is told about again
        // (`handleIncomingRPC` -> `Preprocess`), this time sparing this copy's sender.
        let mut fresh: Vec<u32> = Vec::new();
        for m in msgs {
            if cx.seen_message(m.msg) {
                continue;
            }
            self.nodes[cx.node as usize].announced.remove(&m.msg);
            fresh.push(m.msg);
        }
        // go (since v0.14.0) spares the sender; the v2.0 fork tells it too.
        let except = (!cx.proto.idontwant_to_sender()).then_some(back);
        self.send_idontwant(cx, except, &fresh);
    }

    /// Tell the node's mesh peers (but `except`) that it has `msgs` (those large enough).
    pub fn send_idontwant(&mut self, cx: &mut Ctx, except: Option<u32>, msgs: &[u32]) {
        if !cx.at_least(Version::V1_2) || !self.is_gossipsub() {
            return;
        }
        let threshold = cx.proto.idontwant_threshold;
        // v1.3: no IDONTWANT to a peer that sends us parts, not full messages
        // (gossipsub.go:Preprocess 897-901: iRequestPartial && peerSupportsSendingPartial).
        let skip: Vec<u32> = if self.requests_partial(cx.node) {
            let node_links = cx.links.of(cx.node);
            node_links
                .filter(|&l| self.supports_partial(cx.links.peer[l as usize]))
                .collect()
        } else {
            Vec::new()
        };
        let state = &mut self.nodes[cx.node as usize];
        for topic in 0..state.mesh.len() as u16 {
            let mut ids: Vec<u32> = msgs
                .iter()
                .copied()
                .filter(|&m| {
                    let info = &cx.messages[m as usize];
                    info.topic == topic && u64::from(info.size) >= threshold
                })
                .collect();
            if ids.is_empty() {
                continue;
            }
            state.rng.shuffle(&mut ids);
            for &link in state.mesh[topic as usize]
                .iter()
                .filter(|&&l| Some(l) != except && !skip.contains(&l))
            {
                let control = Control {
                    idontwant: ids.clone(),
                    ..Control::default()
                };
                cx.out.send_urgent_control(link, control);
            }
        }
    }

    /// Remember what the peer on `link` does not want (go's `handleIDontWant`).
    pub(super) fn handle_idontwant(&mut self, cx: &Ctx, link: u32, ids: &[u32]) {
        if ids.is_empty() {
            return;
        }
        let count = &mut self.peers.dontsend[link as usize];
        if *count >= MAX_IDONTWANT_RPCS {
            return;
        }
        *count += 1;
        let unwanted = &mut self.nodes[cx.node as usize].unwanted;
        for &id in ids.iter().take(MAX_IDONTWANT_IDS) {
            unwanted.insert((link, id), IDONTWANT_TTL);
        }
    }

    /// True if the peer on `link` said it does not want `msg`; counts a saved copy.
    #[inline]
    pub(super) fn unwanted(&mut self, cx: &mut Ctx, link: u32, msg: u32) -> bool {
        let unwanted = &self.nodes[cx.node as usize].unwanted;
        if unwanted.is_empty() {
            return false;
        }
        let unwanted = unwanted.contains_key(&(link, msg));
        if unwanted {
            let peer = cx.links.peer[link as usize];
            cx.out.count_drop(peer, Kind::Payload, "saved-by-idontwant");
        }
        unwanted
    }

    /// Heartbeat: reset the IDONTWANT flood counters and age remembered ids.
    pub(super) fn age_idontwant(&mut self, cx: &Ctx) {
        for link in cx.links.of(cx.node) {
            self.peers.dontsend[link as usize] = 0;
        }
        self.nodes[cx.node as usize].unwanted.retain(|_, ttl| {
            *ttl -= 1;
            *ttl > 0
        });
    }

    /// v2.0: may this copy be an IANNOUNCE? The fork (`Publish`) tosses its coin for
    /// the mesh and direct peers of a topic the node is in, among flood-publish
    /// recipients too; fanout and other flood recipients get the message.
    #[inline]
    pub(super) fn may_announce(
        &self,
        cx: &Ctx,
        route: Route,
        topic: u16,
        link: u32,
        direct: bool,
    ) -> bool {
        if !cx.at_least(Version::V2_0) || !self.is_gossipsub() {
            return false;
        }
        match route {
            Route::Mesh => true,
            Route::Flood => direct || self.in_mesh(cx.node, topic, link),
            Route::Fanout => false,
        }
    }

    /// v2.0: should this copy to a mesh or direct peer be an IANNOUNCE (the coin)?
    pub(super) fn announce_instead(&mut self, cx: &Ctx, own: bool) -> bool {
        let p = cx.proto;
        if !cx.at_least(Version::V2_0) || p.D_announce == 0 {
            return false;
        }
        let d = p.D.max(1);
        if own && p.announce_own == AnnounceOwn::Eager {
            return p.D_announce >= d;
        }
        (self.nodes[cx.node as usize].rng.below(d as u64) as usize) < p.D_announce
    }

    pub(super) fn send_announce(&mut self, cx: &mut Ctx, link: u32, msg: u32) {
        let topic = cx.messages[msg as usize].topic;
        let control = Control {
            iannounce: vec![(topic, msg)],
            ..Control::default()
        };
        cx.out.send_control(link, control);
    }

    /// IANNOUNCE from the peer on `link`: queue it, and ask if nobody is being asked.
    /// The fork (`handleIAnnounce`) takes announcements of topics it is in from mesh or
    /// direct peers, for messages it has not marked seen: one it is still validating is
    /// asked for again (its queue was cleared on arrival, `PreValidation` ->
    /// `acache.Clear`).
    pub(super) fn handle_iannounce(&mut self, cx: &mut Ctx, link: u32, announced: &[(u16, u32)]) {
        for &(topic, msg) in announced {
            let subscribed = cx.host.is_subscribed(topic);
            let known_peer = self.in_mesh(cx.node, topic, link) || self.is_direct(link);
            if !subscribed || !known_peer || cx.seen_message(msg) {
                continue;
            }
            let entry = self.nodes[cx.node as usize]
                .announced
                .entry(msg)
                .or_default();
            entry.waiting.push_back(link);
            if !entry.asking {
                self.ask_next(cx, msg);
            }
        }
    }

    /// Send INEED for `msg` to the next announcer in line, with a timeout.
    fn ask_next(&mut self, cx: &mut Ctx, msg: u32) {
        let node = cx.node;
        let announced = &mut self.nodes[node as usize].announced;
        let Some(entry) = announced.get_mut(&msg) else {
            return;
        };
        let Some(link) = entry.waiting.pop_front() else {
            announced.remove(&msg);
            return;
        };
        entry.asking = true;
        entry.attempt += 1;
        let attempt = entry.attempt;
        let control = Control {
            ineed: vec![msg],
            ..Control::default()
        };
        cx.out.send_control(link, control);
        let at = cx.now + cx.proto.ineed_timeout_ns;
        cx.out
            .set_timer(at, Event::IneedTimeout { node, msg, attempt });
    }

    /// The INEED timer fired: if the message still has not come, ask the next announcer.
    pub fn ineed_timeout(&mut self, cx: &mut Ctx, msg: u32, attempt: u32) {
        let Some(entry) = self.nodes[cx.node as usize].announced.get_mut(&msg) else {
            return;
        };
        if entry.attempt != attempt {
            return;
        }
        entry.asking = false;
        let peer = u32::MAX; // not tied to one peer in the drops table
        cx.out.count_drop(peer, Kind::Ineed, "ineed-timeout");
        self.ask_next(cx, msg);
    }

    /// INEED from the peer on `link`: answer with the messages still in the message
    /// cache that the peer did not say IDONTWANT for (the fork's `handleINeed`:
    /// `gs.unwanted`, then `mcache.GetForPeer`, which counts a transmission to the peer,
    /// shared with IWANT's limit, but sets none of its own).
    pub(super) fn handle_ineed(&mut self, cx: &mut Ctx, link: u32, ids: &[u32]) -> Vec<MsgRef> {
        if ids.is_empty() || cx.host.misbehaves(Misbehaviour::IgnoreIneed) {
            return Vec::new();
        }
        let mut served = Vec::new();
        for &msg in ids {
            if self.unwanted(cx, link, msg) {
                continue;
            }
            if let Some(hop) = self.in_mcache(cx, msg) {
                self.nodes[cx.node as usize].mcache.serve(msg, link);
                served.push(MsgRef { msg, hop });
            }
        }
        served
    }
}
