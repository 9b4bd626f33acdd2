//! Gossipsub's router: mesh maintenance, gossip, control messages, scoring hooks.
//!
//! Follows go-libp2p-pubsub (`gossipsub.go`), the reference implementation; the step
//! numbers in comments are those of the heartbeat in `protocol-notes.md` §1. Version
//! 1.0 follows the v1.0 spec instead: no backoff, no scoring, gossip to exactly D_lazy
//! peers, no outbound quota, trim only above D_hi.
//!
//! Without peer scoring every score is 0 and every threshold 0, as in go without
//! `WithPeerScore`. Peer exchange is in `exchange.rs`.

use smallvec::SmallVec;

use crate::config::{Misbehaviour, Time, Version};
use crate::rpc::{Control, MsgRef, Prune};
use crate::sim::{Route, Simulation, NOT_CACHED};

const NANOS_PER_SECOND: Time = 1_000_000_000;

/// Control parts to send to one peer at the end of a heartbeat.
#[derive(Default)]
struct Outgoing {
    graft: Vec<u16>,
    prune: Vec<u16>,
    /// Pruned for a negative score: no peer exchange in any of its PRUNEs (go's noPX).
    no_px: bool,
    ihave: Vec<(u16, Vec<u32>)>,
}

/// Per-peer parts gathered during a heartbeat, in the order peers first appear.
#[derive(Default)]
struct HeartbeatOut(Vec<(u32, Outgoing)>);

impl HeartbeatOut {
    fn to(&mut self, link: u32) -> &mut Outgoing {
        let i = match self.0.iter().position(|(l, _)| *l == link) {
            Some(i) => i,
            None => {
                self.0.push((link, Outgoing::default()));
                self.0.len() - 1
            }
        };
        &mut self.0[i].1
    }
}

/// Thresholds in force (all 0 without scoring, as in go).
#[derive(Clone, Copy, Default)]
pub(crate) struct Thresholds {
    pub gossip: f64,
    pub publish: f64,
    pub graylist: f64,
    pub accept_px: f64,
    pub opportunistic_graft: f64,
}

impl Simulation {
    pub(crate) fn score(&self, link: u32) -> f64 {
        self.scores.as_ref().map_or(0.0, |s| s.score(link))
    }

    pub(crate) fn thresholds(&self) -> Thresholds {
        self.scores.as_ref().map_or(Thresholds::default(), |s| {
            let p = s.params();
            Thresholds {
                gossip: p.gossip_threshold,
                publish: p.publish_threshold,
                graylist: p.graylist_threshold,
                accept_px: p.accept_px_threshold,
                opportunistic_graft: p.opportunistic_graft_threshold,
            }
        })
    }

    /// If `msg` is still in `node`'s message cache, its hop count there.
    pub(crate) fn in_mcache(&self, node: u32, msg: u32) -> Option<u16> {
        let state = &self.nodes[node as usize];
        let seen = state.seen.get(&msg)?;
        let shifts = (state.ticks as u32).wrapping_sub(seen.cached_at);
        (seen.cached_at != NOT_CACHED && (shifts as usize) < self.proto.history_length)
            .then_some(seen.hop)
    }

    /// The peer on `link` is a direct (explicit) peer: never meshed or gossiped with.
    pub(crate) fn is_direct(&self, link: u32) -> bool {
        self.link_direct[link as usize]
    }

    fn in_mesh(&self, node: u32, topic: u16, link: u32) -> bool {
        self.nodes[node as usize].mesh[topic as usize].contains(&link)
    }

    pub(crate) fn has_backoff(&self, node: u32, topic: u16, link: u32) -> bool {
        self.nodes[node as usize]
            .backoff
            .contains_key(&(topic, link))
    }

    /// Add `link` to `node`'s mesh for `topic` (go's tracer Graft).
    pub(crate) fn mesh_add(&mut self, node: u32, topic: u16, link: u32) {
        self.nodes[node as usize].mesh[topic as usize].push(link);
        let now = self.now();
        if let Some(s) = &mut self.scores {
            s.graft(link, topic, now);
        }
    }

    /// Remove `link` from `node`'s mesh for `topic` (go's tracer Prune).
    pub(crate) fn mesh_remove(&mut self, node: u32, topic: u16, link: u32) {
        let mesh = &mut self.nodes[node as usize].mesh[topic as usize];
        if let Some(i) = mesh.iter().position(|&l| l == link) {
            mesh.remove(i);
            if let Some(s) = &mut self.scores {
                s.prune(link, topic);
            }
        }
    }

    /// Record a backoff for (topic, link) that ends `duration` from now; an existing
    /// later expiry is kept (go's `doAddBackoff`).
    pub(crate) fn add_backoff(&mut self, node: u32, topic: u16, link: u32, duration: Time) {
        let expire = self.now() + duration;
        let entry = self.nodes[node as usize]
            .backoff
            .entry((topic, link))
            .or_insert(expire);
        *entry = (*entry).max(expire);
    }

    /// go's `getPeers`: every topic peer passing `keep`, shuffled, at most `count`.
    pub(crate) fn pick_topic_peers(
        &mut self,
        node: u32,
        topic: u16,
        count: usize,
        keep: impl Fn(&Self, u32) -> bool,
    ) -> Vec<u32> {
        let mut candidates: Vec<u32> = self
            .topic_links(node, topic)
            .filter(|&l| keep(self, l))
            .collect();
        self.nodes[node as usize].rng.shuffle(&mut candidates);
        candidates.truncate(count);
        candidates
    }

    /// Where a new or relayed message goes (go's `rpcs()` recipient choice), and how.
    pub(crate) fn gossipsub_recipients(
        &mut self,
        node: u32,
        msg: u32,
        topic: u16,
        own: bool,
    ) -> (SmallVec<[u32; 32]>, Route) {
        let state = &mut self.nodes[node as usize];
        state.mcache.put(msg);
        let ticks = state.ticks as u32;
        if let Some(seen) = state.seen.get_mut(&msg) {
            seen.cached_at = ticks;
        }
        let publish = self.thresholds().publish;
        if own && self.proto.flood_publish {
            let all = self
                .topic_links(node, topic)
                .filter(|&l| self.is_direct(l) || self.score(l) >= publish)
                .collect();
            return (all, Route::Flood);
        }
        // Direct peers in the topic get every message, besides the mesh or fanout.
        let mut recipients: SmallVec<[u32; 32]> = SmallVec::new();
        if !self.proto.direct_peers.is_empty() {
            recipients.extend(self.topic_links(node, topic).filter(|&l| self.is_direct(l)));
        }
        if self.nodes[node as usize].is_subscribed(topic) {
            recipients.extend(
                self.nodes[node as usize].mesh[topic as usize]
                    .iter()
                    .copied(),
            );
            return (recipients, Route::Mesh);
        }
        // Not in the topic: publish through fanout peers, chosen once and kept.
        let now = self.now();
        if self.nodes[node as usize].fanout[topic as usize].is_empty() {
            let picked = self.pick_topic_peers(node, topic, self.proto.D, |s, l| {
                !s.is_direct(l) && s.score(l) >= publish
            });
            self.nodes[node as usize].fanout[topic as usize] = picked.into_iter().collect();
        }
        let state = &mut self.nodes[node as usize];
        state.fanout_lastpub[topic as usize] = Some(now);
        recipients.extend(state.fanout[topic as usize].iter().copied());
        (recipients, Route::Fanout)
    }

    /// Decay the score counters of `node`'s peers for every decay interval that passed.
    fn decay_scores(&mut self, node: u32) {
        let now = self.now();
        let Some(scores) = &mut self.scores else {
            return;
        };
        let interval = scores.params().decay_interval_ns.max(1);
        let last = &mut self.last_decay[node as usize];
        while *last + interval <= now {
            *last += interval;
            scores.decay(self.links.of(node), now);
        }
    }

    /// Heartbeat step 4: IWANT promises nobody kept within the follow-up time.
    fn penalize_broken_promises(&mut self, node: u32) {
        let now = self.now();
        let Some(scores) = &mut self.scores else {
            return;
        };
        let promises = &mut self.promises[node as usize];
        promises.retain(|_, waiting| {
            waiting.retain(|&mut (link, expire)| {
                if expire < now {
                    scores.add_penalty(link, 1.0);
                    false
                } else {
                    true
                }
            });
            !waiting.is_empty()
        });
    }

    /// A heartbeat (protocol-notes.md §1), step by step.
    pub(crate) fn heartbeat(&mut self, node: u32) {
        self.nodes[node as usize].ticks += 1;
        self.decay_scores(node);
        self.clear_backoffs(node);
        self.reset_flood_counters(node);
        self.penalize_broken_promises(node);
        self.age_idontwant(node);
        self.spam_ihave(node);
        self.spam_invalid(node);
        let mut out = HeartbeatOut::default();
        for topic in 0..self.nodes[node as usize].mesh.len() as u16 {
            if self.nodes[node as usize].is_subscribed(topic) {
                self.maintain_mesh(node, topic, &mut out);
            }
        }
        for topic in 0..self.nodes[node as usize].fanout.len() as u16 {
            self.maintain_fanout(node, topic, &mut out);
        }
        self.send_heartbeat_parts(node, out);
        self.flush_stashed_control(node);
        // Step 11.
        self.nodes[node as usize].mcache.shift();
    }

    /// Step 1: clear backoffs that expired more than `backoff_slack_ticks` heartbeats
    /// ago, only every `backoff_clear_ticks` (go: 2 and 15).
    fn clear_backoffs(&mut self, node: u32) {
        let p = &self.proto;
        let ticks = self.nodes[node as usize].ticks;
        if self.proto.version >= Version::V1_1 && ticks.is_multiple_of(p.backoff_clear_ticks) {
            let slack = p.backoff_slack_ticks * p.heartbeat_ns;
            let now = self.now();
            self.nodes[node as usize]
                .backoff
                .retain(|_, expire| *expire + slack >= now);
        }
    }

    /// Steps 2-3: reset the IHAVE flood counters.
    fn reset_flood_counters(&mut self, node: u32) {
        for link in self.links.of(node) {
            self.link_peerhave[link as usize] = 0;
            self.link_iasked[link as usize] = 0;
        }
    }

    /// Step 6: one mesh topic.
    fn maintain_mesh(&mut self, node: u32, topic: u16, out: &mut HeartbeatOut) {
        self.prune_negative(node, topic, out);
        self.graft_up_to_d(node, topic, out);
        self.trim_to_d(node, topic, out);
        self.graft_outbound(node, topic, out);
        self.graft_opportunistically(node, topic, out);
        // (f) Gossip to peers outside the mesh.
        let exclude = self.nodes[node as usize].mesh[topic as usize].clone();
        for (link, ids) in self.emit_gossip(node, topic, &exclude) {
            out.to(link).ihave.push((topic, ids));
        }
    }

    /// Step 6 (a): drop peers with a negative score.
    fn prune_negative(&mut self, node: u32, topic: u16, out: &mut HeartbeatOut) {
        if self.scores.is_none() {
            return;
        }
        let negative: Vec<u32> = self.nodes[node as usize].mesh[topic as usize]
            .iter()
            .copied()
            .filter(|&l| self.score(l) < 0.0)
            .collect();
        for link in negative {
            self.mesh_remove(node, topic, link);
            self.add_backoff(node, topic, link, self.proto.prune_backoff_ns);
            let parts = out.to(link);
            parts.prune.push(topic);
            parts.no_px = true;
        }
    }

    /// Step 6 (b): too few peers: graft random eligible ones up to D.
    fn graft_up_to_d(&mut self, node: u32, topic: u16, out: &mut HeartbeatOut) {
        let v11 = self.version_at_least(Version::V1_1);
        let size = self.nodes[node as usize].mesh[topic as usize].len();
        if size >= self.proto.D_lo {
            return;
        }
        let picked = self.pick_topic_peers(node, topic, self.proto.D - size, |s, l| {
            let taken = s.in_mesh(node, topic, l) || s.is_direct(l);
            !(taken || v11 && s.has_backoff(node, topic, l)) && s.score(l) >= 0.0
        });
        for link in picked {
            self.mesh_add(node, topic, link);
            out.to(link).graft.push(topic);
        }
    }

    /// Step 6 (c): too many peers: keep the D_score best, then random ones up to D with
    /// at least D_out outbound (v1.1); prune the rest.
    fn trim_to_d(&mut self, node: u32, topic: u16, out: &mut HeartbeatOut) {
        let v11 = self.version_at_least(Version::V1_1);
        let (d, d_hi) = (self.proto.D, self.proto.D_hi);
        let size = self.nodes[node as usize].mesh[topic as usize].len();
        if !((v11 && size >= d_hi) || (!v11 && size > d_hi)) {
            return;
        }
        let mut plist: Vec<u32> = self.nodes[node as usize].mesh[topic as usize].to_vec();
        self.nodes[node as usize].rng.shuffle(&mut plist);
        if v11 {
            if self.scores.is_some() {
                plist.sort_by(|&a, &b| self.score(b).total_cmp(&self.score(a)));
            }
            let keep = self.proto.D_score.min(plist.len());
            self.nodes[node as usize].rng.shuffle(&mut plist[keep..]);
            self.keep_outbound_quota(&mut plist, d, self.proto.D_out);
        }
        for &link in &plist[d..] {
            self.mesh_remove(node, topic, link);
            if v11 {
                self.add_backoff(node, topic, link, self.proto.prune_backoff_ns);
            }
            out.to(link).prune.push(topic);
        }
    }

    /// Step 6 (d): enough peers but too few outbound: graft outbound peers (v1.1).
    fn graft_outbound(&mut self, node: u32, topic: u16, out: &mut HeartbeatOut) {
        let mesh = &self.nodes[node as usize].mesh[topic as usize];
        if !self.version_at_least(Version::V1_1) || mesh.len() < self.proto.D_lo {
            return;
        }
        let outbound = mesh
            .iter()
            .filter(|&&l| self.links.outbound[l as usize])
            .count();
        if outbound >= self.proto.D_out {
            return;
        }
        let picked = self.pick_topic_peers(node, topic, self.proto.D_out - outbound, |s, l| {
            !s.in_mesh(node, topic, l)
                && !s.has_backoff(node, topic, l)
                && !s.is_direct(l)
                && s.links.outbound[l as usize]
                && s.score(l) >= 0.0
        });
        for link in picked {
            self.mesh_add(node, topic, link);
            out.to(link).graft.push(topic);
        }
    }

    /// Step 6 (e): opportunistic grafting: a mesh whose median score is poor takes in a
    /// few better peers.
    fn graft_opportunistically(&mut self, node: u32, topic: u16, out: &mut HeartbeatOut) {
        let Some(scores) = &self.scores else {
            return;
        };
        let params = scores.params();
        let (every, count) = (
            params.opportunistic_graft_ticks.max(1),
            params.opportunistic_graft_peers,
        );
        let state = &self.nodes[node as usize];
        let mesh = &state.mesh[topic as usize];
        if !state.ticks.is_multiple_of(every) || mesh.len() <= 1 {
            return;
        }
        let mut sorted: Vec<f64> = mesh.iter().map(|&l| self.score(l)).collect();
        sorted.sort_by(f64::total_cmp);
        let median = sorted[sorted.len() / 2];
        if median >= self.thresholds().opportunistic_graft {
            return;
        }
        let picked = self.pick_topic_peers(node, topic, count, |s, l| {
            !s.in_mesh(node, topic, l)
                && !s.has_backoff(node, topic, l)
                && !s.is_direct(l)
                && s.score(l) > median
        });
        for link in picked {
            self.mesh_add(node, topic, link);
            out.to(link).graft.push(topic);
        }
    }

    /// Steps 7-8: expire a fanout topic, or refill it and gossip to it too.
    fn maintain_fanout(&mut self, node: u32, topic: u16, out: &mut HeartbeatOut) {
        let now = self.now();
        let publish = self.thresholds().publish;
        let state = &mut self.nodes[node as usize];
        if let Some(last) = state.fanout_lastpub[topic as usize] {
            if last + self.proto.fanout_ttl_ns < now {
                state.fanout_lastpub[topic as usize] = None;
                state.fanout[topic as usize].clear();
            }
        }
        if state.fanout_lastpub[topic as usize].is_none() {
            return;
        }
        let mut fanout = std::mem::take(&mut state.fanout[topic as usize]);
        fanout.retain(|l| {
            self.link_topics[*l as usize] & (1 << topic) != 0 && self.score(*l) >= publish
        });
        let d = self.proto.D;
        if fanout.len() < d {
            let have = fanout.clone();
            let picked = self.pick_topic_peers(node, topic, d - fanout.len(), |s, l| {
                !have.contains(&l) && !s.is_direct(l) && s.score(l) >= publish
            });
            fanout.extend(picked);
        }
        for (link, ids) in self.emit_gossip(node, topic, &fanout) {
            out.to(link).ihave.push((topic, ids));
        }
        self.nodes[node as usize].fanout[topic as usize] = fanout;
    }

    /// Step 9: one RPC per peer with its GRAFTs, PRUNEs and IHAVEs together (step 10,
    /// GRAFT/PRUNE kept from dropped RPCs, follows).
    fn send_heartbeat_parts(&mut self, node: u32, out: HeartbeatOut) {
        for (link, parts) in out.0 {
            let prune: Vec<Prune> = parts
                .prune
                .into_iter()
                .map(|t| self.make_prune(node, link, t, !parts.no_px))
                .collect();
            let rpc = self.rpcs.alloc();
            let r = self.rpcs.get_mut(rpc);
            r.control.graft = parts.graft;
            r.control.prune = prune;
            r.control.ihave = parts.ihave;
            self.send(node, link, rpc);
        }
    }

    /// go's outbound rotation: make sure at least `d_out` of the first `d` entries are
    /// outbound links, moving outbound ones forward while keeping the others' order.
    fn keep_outbound_quota(&self, plist: &mut [u32], d: usize, d_out: usize) {
        let d = d.min(plist.len());
        let is_out = |l: u32| self.links.outbound[l as usize];
        let outbound = plist[..d].iter().filter(|&&l| is_out(l)).count();
        if outbound >= d_out {
            return;
        }
        let rotate = |plist: &mut [u32], i: usize| plist[..=i].rotate_right(1);
        // First bring the outbound peers already selected to the front...
        let mut left = outbound;
        let mut i = 1;
        while i < d && left > 0 {
            if is_out(plist[i]) {
                rotate(plist, i);
                left -= 1;
            }
            i += 1;
        }
        // ...then pull enough outbound peers from beyond the selection.
        let mut need = d_out - outbound;
        let mut i = d;
        while i < plist.len() && need > 0 {
            if is_out(plist[i]) {
                rotate(plist, i);
                need -= 1;
            }
            i += 1;
        }
    }

    /// go's `emitGossip`: IHAVE the cached ids of `topic` to max(D_lazy, factor x
    /// candidates) random peers outside `exclude` (v1.0: exactly D_lazy).
    fn emit_gossip(&mut self, node: u32, topic: u16, exclude: &[u32]) -> Vec<(u32, Vec<u32>)> {
        let messages = &self.messages;
        let mut ids = self.nodes[node as usize]
            .mcache
            .gossip_ids(self.proto.history_gossip, |m| {
                messages[m as usize].topic == topic
            });
        if ids.is_empty() {
            return Vec::new();
        }
        let gossip_threshold = self.thresholds().gossip;
        let mut peers: Vec<u32> = self
            .topic_links(node, topic)
            .filter(|&l| {
                !exclude.contains(&l) && !self.is_direct(l) && self.score(l) >= gossip_threshold
            })
            .collect();
        let v11 = self.version_at_least(Version::V1_1);
        let max_len = self.proto.max_ihave_length;
        let rng = &mut self.nodes[node as usize].rng;
        rng.shuffle(&mut ids);
        let mut target = self.proto.D_lazy;
        if v11 {
            target = target.max((self.proto.gossip_factor * peers.len() as f64) as usize);
        }
        if target > peers.len() {
            target = peers.len();
        } else {
            rng.shuffle(&mut peers);
        }
        peers.truncate(target);
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

    /// Handle the control part of an RPC that `node` received on its link `link`, and
    /// answer with one RPC holding IWANT requests, served messages and PRUNEs.
    pub(crate) fn handle_control(&mut self, node: u32, link: u32, control: &Control) {
        self.handle_idontwant(node, link, &control.idontwant);
        self.handle_iannounce(node, link, &control.iannounce);
        let iwant = self.handle_ihave(node, link, control);
        let mut served = self.handle_iwant(node, link, &control.iwant);
        served.extend(self.handle_ineed(node, &control.ineed));
        let (refused, do_px) = self.handle_graft(node, link, &control.graft);
        self.handle_prune(node, link, &control.prune);
        if iwant.is_empty() && served.is_empty() && refused.is_empty() {
            return;
        }
        let prune: Vec<Prune> = refused
            .into_iter()
            .map(|t| self.make_prune(node, link, t, do_px))
            .collect();
        let rpc = self.rpcs.alloc();
        let r = self.rpcs.get_mut(rpc);
        r.msgs.extend(served);
        r.control.iwant = iwant;
        r.control.prune = prune;
        self.send(node, link, rpc);
    }

    /// IHAVE: ask (IWANT) for unseen ids of topics we are in, within go's limits, and
    /// expect one of them (a promise) within the follow-up time.
    fn handle_ihave(&mut self, node: u32, link: u32, control: &Control) -> Vec<u32> {
        if control.ihave.is_empty() || self.score(link) < self.thresholds().gossip {
            return Vec::new();
        }
        let v11 = self.version_at_least(Version::V1_1);
        let max_len = self.proto.max_ihave_length;
        let l = link as usize;
        if v11 {
            self.link_peerhave[l] += 1;
            if self.link_peerhave[l] as usize > self.proto.max_ihave_messages
                || self.link_iasked[l] as usize >= max_len
            {
                return Vec::new();
            }
        }
        let state = &mut self.nodes[node as usize];
        let mut want: Vec<u32> = Vec::new();
        for (topic, ids) in &control.ihave {
            if !state.is_subscribed(*topic) {
                continue;
            }
            for &id in ids.iter().take(max_len) {
                if !state.seen.contains_key(&id) {
                    want.push(id);
                }
            }
        }
        want.sort_unstable();
        want.dedup();
        if want.is_empty() {
            return want;
        }
        state.rng.shuffle(&mut want);
        if v11 {
            let room = max_len - self.link_iasked[l] as usize;
            want.truncate(room);
            self.link_iasked[l] += want.len() as u32;
        }
        if self.scores.is_some() && !want.is_empty() {
            // go's gossip tracer tracks one random id of each IWANT.
            let promised = want[self.nodes[node as usize].rng.below(want.len() as u64) as usize];
            let expire = self.now() + self.proto.iwant_followup_ns;
            let waiting = self.promises[node as usize].entry(promised).or_default();
            if !waiting.iter().any(|&(l, _)| l == link) {
                waiting.push((link, expire));
            }
        }
        want
    }

    /// IWANT: serve cached messages, each at most gossip_retransmission times per peer.
    fn handle_iwant(&mut self, node: u32, link: u32, ids: &[u32]) -> Vec<MsgRef> {
        if ids.is_empty()
            || self.score(link) < self.thresholds().gossip
            || self.misbehaves(node, Misbehaviour::IgnoreIwant)
        {
            return Vec::new();
        }
        let limit = self.proto.gossip_retransmission;
        let mut served = Vec::new();
        for &msg in ids {
            // IDONTWANT also cancels IWANT replies (go v0.13.0, #591).
            if self.unwanted(node, link, msg) {
                continue;
            }
            let Some(hop) = self.in_mcache(node, msg) else {
                continue;
            };
            if self.nodes[node as usize].mcache.serve(msg, link) <= limit {
                served.push(MsgRef { msg, hop });
            }
        }
        served
    }

    /// GRAFT: join the peer to our mesh, or answer PRUNE (go's `handleGraft`). Returns
    /// the topics to answer with PRUNE, and whether those PRUNEs may offer peers: not
    /// to a peer that broke a rule or named a topic we are not in.
    fn handle_graft(&mut self, node: u32, link: u32, topics: &[u16]) -> (Vec<u16>, bool) {
        let v11 = self.version_at_least(Version::V1_1);
        let now = self.now();
        let mut prune = Vec::new();
        let mut do_px = true;
        for &topic in topics {
            let state = &self.nodes[node as usize];
            // Unknown topic: ignored, without PRUNE (spam hardening in go).
            if !state.is_subscribed(topic) {
                do_px = false;
                continue;
            }
            if state.mesh[topic as usize].contains(&link) {
                continue;
            }
            // A direct peer never joins the mesh (a non-reciprocal configuration in go).
            if self.is_direct(link) {
                prune.push(topic);
                do_px = false;
                continue;
            }
            if v11 {
                if let Some(&expire) = state.backoff.get(&(topic, link)).filter(|&&e| now < e) {
                    // A GRAFT during our backoff is a protocol violation; one within the
                    // flood threshold of our PRUNE is penalized twice.
                    if let Some(scores) = &mut self.scores {
                        scores.add_penalty(link, 1.0);
                        let flood_cutoff = (expire + scores.params().graft_flood_threshold_ns)
                            .saturating_sub(self.proto.prune_backoff_ns);
                        if now < flood_cutoff {
                            scores.add_penalty(link, 1.0);
                        }
                    }
                    self.add_backoff(node, topic, link, self.proto.prune_backoff_ns);
                    prune.push(topic);
                    do_px = false;
                    continue;
                }
                let negative = self.score(link) < 0.0;
                let full = state.mesh[topic as usize].len() >= self.proto.D_hi
                    && !self.links.outbound[link as usize];
                if negative || full {
                    self.add_backoff(node, topic, link, self.proto.prune_backoff_ns);
                    prune.push(topic);
                    do_px &= !negative;
                    continue;
                }
            }
            self.mesh_add(node, topic, link);
        }
        (prune, do_px)
    }

    /// PRUNE: leave the peer's mesh, respect its backoff, and dial the peers it offers
    /// if its score (before this PRUNE) earns our trust.
    fn handle_prune(&mut self, node: u32, link: u32, prunes: &[Prune]) {
        let v11 = self.version_at_least(Version::V1_1);
        let pruner_score = self.score(link);
        for prune in prunes {
            let (topic, backoff_s) = (prune.topic, prune.backoff_s);
            if !self.nodes[node as usize].is_subscribed(topic) {
                continue;
            }
            self.mesh_remove(node, topic, link);
            if v11 {
                let duration = if backoff_s > 0 {
                    backoff_s * NANOS_PER_SECOND
                } else {
                    self.proto.prune_backoff_ns
                };
                self.add_backoff(node, topic, link, duration);
            }
            self.accept_px(node, pruner_score, &prune.px);
        }
    }
}
