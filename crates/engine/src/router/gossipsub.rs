//! Gossipsub's message routing and control handling: where a message goes, and what a
//! node does with the GRAFT, PRUNE, IHAVE and IWANT it receives. The heartbeat is in
//! `heartbeat.rs`, peer exchange in `exchange.rs`, IDONTWANT and IANNOUNCE/INEED in
//! `lazy.rs`.
//!
//! Version 1.0 follows go-libp2p-pubsub v0.1.1 (2019, `/meshsub/1.0.0`): no backoff, no
//! scoring, GRAFTs always accepted (a PRUNE for an unknown topic), IHAVE to D random
//! topic peers minus the mesh, every IHAVE id asked for and every IWANT served, and
//! IHAVE held until the next RPC to that peer or the next heartbeat (`heartbeat.rs`).

use smallvec::SmallVec;

use super::{Ctx, Route, Router};
use crate::config::{Misbehaviour, Time, Version};
use crate::control::Control;
use crate::rpc::{MsgRef, Prune};

const NANOS_PER_SECOND: Time = 1_000_000_000;

impl Router {
    /// Where a new or relayed message goes (go's `rpcs()` recipient choice), and how.
    pub(super) fn gossipsub_recipients(
        &mut self,
        cx: &mut Ctx,
        msg: u32,
        topic: u16,
        own: bool,
    ) -> (SmallVec<[u32; 32]>, Route) {
        let (node, links) = (cx.node, cx.links);
        let state = &mut self.nodes[node as usize];
        state.mcache.put(msg);
        let ticks = state.ticks as u32;
        if let Some(seen) = cx.host.seen.get_mut(&msg) {
            seen.cached_at = ticks;
        }
        let publish = self.thresholds().publish;
        if own && cx.proto.flood_publish {
            let all = self
                .topic_links(links, node, topic)
                .filter(|&l| self.is_direct(l) || self.score(l) >= publish)
                .collect();
            return (all, Route::Flood);
        }
        // Direct peers in the topic get every message, besides the mesh or fanout.
        let mut recipients: SmallVec<[u32; 32]> = SmallVec::new();
        if !cx.proto.direct_peers.is_empty() {
            recipients.extend(
                self.topic_links(links, node, topic)
                    .filter(|&l| self.is_direct(l)),
            );
        }
        if cx.host.is_subscribed(topic) {
            recipients.extend_from_slice(&self.nodes[node as usize].mesh[topic as usize]);
            return (recipients, Route::Mesh);
        }
        // Not in the topic: publish through fanout peers, chosen once and kept.
        if self.nodes[node as usize].fanout[topic as usize].is_empty() {
            let picked = self.pick_topic_peers(links, node, topic, cx.proto.D, |s, l| {
                !s.is_direct(l) && s.score(l) >= publish
            });
            self.nodes[node as usize].fanout[topic as usize] = picked.into_iter().collect();
        }
        let state = &mut self.nodes[node as usize];
        state.fanout_lastpub[topic as usize] = Some(cx.now);
        recipients.extend_from_slice(&state.fanout[topic as usize]);
        (recipients, Route::Fanout)
    }

    /// go's `emitGossip`: IHAVE the cached ids of `topic` to max(D_lazy, factor x
    /// candidates) random peers outside `exclude` (v1.0: exactly D_lazy).
    pub(super) fn emit_gossip(
        &mut self,
        cx: &Ctx,
        topic: u16,
        exclude: &[u32],
    ) -> Vec<(u32, Vec<u32>)> {
        let (node, messages) = (cx.node, cx.messages);
        let mut ids = self.nodes[node as usize]
            .mcache
            .gossip_ids(cx.proto.history_gossip, |m| {
                messages[m as usize].topic == topic
            });
        // v1.3: partial gossip goes out even when no id is cached (gossipsub.go:2105).
        let partial = self.supports_partial(node);
        if ids.is_empty() && !partial {
            return Vec::new();
        }
        if !cx.at_least(Version::V1_1) {
            return self.emit_gossip_v10(cx, topic, exclude, ids);
        }
        let gossip_threshold = self.thresholds().gossip;
        let mut peers: Vec<u32> = self
            .topic_links(cx.links, node, topic)
            .filter(|&l| {
                !exclude.contains(&l) && !self.is_direct(l) && self.score(l) >= gossip_threshold
            })
            .collect();
        let max_len = cx.proto.max_ihave_length;
        let rng = &mut self.nodes[node as usize].rng;
        rng.shuffle(&mut ids);
        let mut target = cx.proto.D_lazy;
        target = target.max((cx.proto.gossip_factor * peers.len() as f64) as usize);
        if target > peers.len() {
            target = peers.len();
        } else {
            rng.shuffle(&mut peers);
        }
        peers.truncate(target);
        if partial {
            // Peers that request partial messages get the node's groups, not IHAVE
            // (gossipsub.go:emitGossip 2069-2080, partialmsgs.go:EmitGossip).
            let (to_partial, rest): (Vec<u32>, Vec<u32>) = peers
                .into_iter()
                .partition(|&l| self.partial_peer(node, cx.links.peer[l as usize]));
            self.partial_gossip.push((topic, to_partial));
            peers = rest;
            if ids.is_empty() {
                return Vec::new();
            }
        }
        let rng = &mut self.nodes[node as usize].rng;
        peers
            .into_iter()
            .map(|link| {
                if ids.len() > max_len {
                    // Each peer gets its own random subset when the list is too long.
                    rng.shuffle(&mut ids);
                    (link, ids[..max_len].to_vec())
                } else {
                    (link, ids.clone())
                }
            })
            .collect()
    }

    /// go-libp2p-pubsub v0.1.1's `emitGossip` (gossipsub v1.0): D random topic peers,
    /// the mesh (or fanout) among them skipped, so fewer than D get the IHAVE; every id,
    /// no length limit.
    fn emit_gossip_v10(
        &mut self,
        cx: &Ctx,
        topic: u16,
        exclude: &[u32],
        mut ids: Vec<u32>,
    ) -> Vec<(u32, Vec<u32>)> {
        let node = cx.node;
        let peers = self.pick_topic_peers(cx.links, node, topic, cx.proto.D, |_, _| true);
        self.nodes[node as usize].rng.shuffle(&mut ids);
        peers
            .into_iter()
            .filter(|l| !exclude.contains(l))
            .map(|link| (link, ids.clone()))
            .collect()
    }

    /// A received control part, handled in go's order, then answered with one RPC
    /// holding IWANT requests, served messages and PRUNEs. go v0.17.0 (`gossipsub.go:
    /// HandleRPC`): IHAVE, IWANT, GRAFT, PRUNE, IDONTWANT; the v2.0 fork (`HandleRPC`,
    /// cfecb8a): IHAVE, IWANT, INEED, GRAFT, IANNOUNCE, PRUNE, IDONTWANT. So an IWANT
    /// is served even if the same RPC says IDONTWANT for it, and an IANNOUNCE rides in
    /// on the GRAFT beside it (accepted from the new mesh peer) but not past a PRUNE.
    pub fn handle_control(&mut self, cx: &mut Ctx, link: u32, control: &Control) {
        let iwant = self.handle_ihave(cx, link, control);
        let mut served = self.handle_iwant(cx, link, &control.iwant);
        served.extend(self.handle_ineed(cx, link, &control.ineed));
        let (refused, do_px) = self.handle_graft(cx, link, &control.graft);
        self.handle_iannounce(cx, link, &control.iannounce);
        self.handle_prune(cx, link, &control.prune);
        self.handle_idontwant(cx, link, &control.idontwant);
        if iwant.is_empty() && served.is_empty() && refused.is_empty() {
            return;
        }
        let prune: Vec<Prune> = refused
            .into_iter()
            .map(|t| self.make_prune(cx, link, t, do_px))
            .collect();
        let reply = Control {
            iwant,
            prune,
            ..Control::default()
        };
        self.send_with_held_gossip(cx, link, &served, reply);
    }

    /// IHAVE: ask (IWANT) for unseen ids of topics we are in, within go's limits, and
    /// expect one of them (a promise) within the follow-up time.
    fn handle_ihave(&mut self, cx: &mut Ctx, link: u32, control: &Control) -> Vec<u32> {
        if control.ihave.is_empty() || self.score(link) < self.thresholds().gossip {
            return Vec::new();
        }
        let v11 = cx.at_least(Version::V1_1);
        let max_len = cx.proto.max_ihave_length;
        let l = link as usize;
        if v11 {
            self.peers.peerhave[l] += 1;
            if self.peers.peerhave[l] as usize > cx.proto.max_ihave_messages
                || self.peers.iasked[l] as usize >= max_len
            {
                return Vec::new();
            }
        }
        let mut want: Vec<u32> = Vec::new();
        for (topic, ids) in &control.ihave {
            if !cx.host.is_subscribed(*topic) {
                continue;
            }
            // v0.1.1 (v1.0) asks for every unseen id.
            let limit = if v11 { max_len } else { usize::MAX };
            for &id in ids.iter().take(limit) {
                if !cx.seen_message(id) {
                    want.push(id);
                }
            }
        }
        want.sort_unstable();
        want.dedup();
        if want.is_empty() {
            return want;
        }
        let state = &mut self.nodes[cx.node as usize];
        state.rng.shuffle(&mut want);
        if v11 {
            let room = max_len - self.peers.iasked[l] as usize;
            want.truncate(room);
            self.peers.iasked[l] += want.len() as u32;
        }
        if self.scores.is_some() && !want.is_empty() {
            // go's gossip tracer tracks one random id of each IWANT.
            let state = &mut self.nodes[cx.node as usize];
            let promised = want[state.rng.below(want.len() as u64) as usize];
            let expire = cx.now + cx.proto.iwant_followup_ns;
            let waiting = state.promises.entry(promised).or_default();
            if !waiting.iter().any(|&(l, _)| l == link) {
                waiting.push((link, expire));
            }
        }
        want
    }

    /// IWANT: serve cached messages, each at most gossip_retransmission times per peer.
    fn handle_iwant(&mut self, cx: &mut Ctx, link: u32, ids: &[u32]) -> Vec<MsgRef> {
        if ids.is_empty()
            || self.score(link) < self.thresholds().gossip
            || cx.host.misbehaves(Misbehaviour::IgnoreIwant)
        {
            return Vec::new();
        }
        // v0.1.1 (v1.0) serves every IWANT, without a retransmission limit.
        let limit = if cx.at_least(Version::V1_1) {
            cx.proto.gossip_retransmission
        } else {
            u32::MAX
        };
        let mut served = Vec::new();
        for &msg in ids {
            // IDONTWANT also cancels IWANT replies (go v0.13.0, #591).
            if self.unwanted(cx, link, msg) {
                continue;
            }
            let Some(hop) = self.in_mcache(cx, msg) else {
                continue;
            };
            if self.nodes[cx.node as usize].mcache.serve(msg, link) <= limit {
                served.push(MsgRef { msg, hop });
            }
        }
        served
    }

    /// GRAFT: join the peer to our mesh, or answer PRUNE (go's `handleGraft`). Returns
    /// the topics to answer with PRUNE, and whether those PRUNEs may offer peers: not
    /// to a peer that broke a rule or named a topic we are not in.
    fn handle_graft(&mut self, cx: &mut Ctx, link: u32, topics: &[u16]) -> (Vec<u16>, bool) {
        let v11 = cx.at_least(Version::V1_1);
        let (node, now) = (cx.node, cx.now);
        let backoff = cx.proto.prune_backoff_ns;
        let mut prune = Vec::new();
        let mut do_px = true;
        for &topic in topics {
            // Unknown topic: ignored, without PRUNE (spam hardening in go); v0.1.1 (v1.0)
            // answered PRUNE (`handleGraft`).
            if !cx.host.is_subscribed(topic) {
                if !v11 {
                    prune.push(topic);
                }
                do_px = false;
                continue;
            }
            let mesh = &self.nodes[node as usize].mesh[topic as usize];
            if mesh.contains(&link) {
                continue;
            }
            // A direct peer never joins the mesh (a non-reciprocal configuration in go).
            if self.is_direct(link) {
                prune.push(topic);
                do_px = false;
                continue;
            }
            if v11 {
                let state = &self.nodes[node as usize];
                if let Some(&expire) = state.backoff.get(&(topic, link)).filter(|&&e| now < e) {
                    // A GRAFT during our backoff is a protocol violation; one within the
                    // flood threshold of our PRUNE is penalized twice.
                    if let Some(scores) = &mut self.scores {
                        scores.add_penalty(link, 1.0);
                        let flood_cutoff = (expire + scores.params().graft_flood_threshold_ns)
                            .saturating_sub(backoff);
                        if now < flood_cutoff {
                            scores.add_penalty(link, 1.0);
                        }
                    }
                    self.add_backoff(node, topic, link, now + backoff);
                    prune.push(topic);
                    do_px = false;
                    continue;
                }
                let negative = self.score(link) < 0.0;
                let full = state.mesh[topic as usize].len() >= cx.proto.D_hi
                    && !cx.links.outbound[link as usize];
                if negative || full {
                    self.add_backoff(node, topic, link, now + backoff);
                    prune.push(topic);
                    do_px &= !negative;
                    continue;
                }
            }
            self.mesh_add(node, topic, link, now);
        }
        (prune, do_px)
    }

    /// PRUNE: leave the peer's mesh, respect its backoff, and dial the peers it offers
    /// if its score (before this PRUNE) earns our trust.
    fn handle_prune(&mut self, cx: &mut Ctx, link: u32, prunes: &[Prune]) {
        let v11 = cx.at_least(Version::V1_1);
        let pruner_score = self.score(link);
        for prune in prunes {
            let (topic, backoff_s) = (prune.topic, prune.backoff_s);
            if !cx.host.is_subscribed(topic) {
                continue;
            }
            self.mesh_remove(cx.node, topic, link);
            if v11 {
                let duration = if backoff_s > 0 {
                    backoff_s * NANOS_PER_SECOND
                } else {
                    cx.proto.prune_backoff_ns
                };
                self.add_backoff(cx.node, topic, link, cx.now + duration);
            }
            self.accept_px(cx, pruner_score, &prune.px);
        }
    }
}
