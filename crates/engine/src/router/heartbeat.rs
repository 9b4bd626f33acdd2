//! Gossipsub's heartbeat, step by step; the step numbers are those of
//! `protocol-notes.md` §1. v1.0 has no backoff, no scoring and no outbound quota, and
//! trims only above D_hi.
//!
//! The simulation runs it in three calls so that an adversary's spam goes out between
//! the bookkeeping and the mesh maintenance, as in a heartbeat of the adversary's own:
//! `heartbeat_start` (steps 1-5), `heartbeat_mesh` (steps 6-9), then, once the
//! simulation retried GRAFT/PRUNE kept from dropped RPCs (step 10), `heartbeat_end`.

use super::{Ctx, Router};
use crate::config::Version;
use crate::rpc::{Control, MsgRef, Prune};

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

impl Router {
    /// Steps 1-5: count the tick, decay scores, clear backoffs, reset the flood
    /// counters, penalize broken promises, age IDONTWANTs.
    pub fn heartbeat_start(&mut self, cx: &mut Ctx) {
        self.flush_pending_ihave(cx);
        self.nodes[cx.node as usize].ticks += 1;
        self.decay_scores(cx);
        self.clear_backoffs(cx);
        self.reset_flood_counters(cx);
        self.penalize_broken_promises(cx);
        self.age_idontwant(cx);
    }

    /// Steps 6-9: maintain each mesh and fanout topic, gossip, and send each peer its
    /// GRAFTs, PRUNEs and IHAVEs in one RPC.
    pub fn heartbeat_mesh(&mut self, cx: &mut Ctx) {
        let mut out = HeartbeatOut::default();
        for topic in 0..self.nodes[cx.node as usize].mesh.len() as u16 {
            if cx.host.is_subscribed(topic) {
                self.maintain_mesh(cx, topic, &mut out);
            }
        }
        for topic in 0..self.nodes[cx.node as usize].fanout.len() as u16 {
            self.maintain_fanout(cx, topic, &mut out);
        }
        self.send_heartbeat_parts(cx, out);
    }

    /// Step 11: shift the message cache.
    pub fn heartbeat_end(&mut self, node: u32) {
        self.nodes[node as usize].mcache.shift();
    }

    /// Decay the score counters of the node's peers for every decay interval that passed.
    fn decay_scores(&mut self, cx: &Ctx) {
        let Some(scores) = &mut self.scores else {
            return;
        };
        let interval = scores.params().decay_interval_ns.max(1);
        let last = &mut self.nodes[cx.node as usize].last_decay;
        while *last + interval <= cx.now {
            *last += interval;
            scores.decay(cx.links.of(cx.node), cx.now);
        }
    }

    /// Step 1: clear backoffs that expired more than `backoff_slack_ticks` heartbeats
    /// ago, only every `backoff_clear_ticks` (go: 2 and 15).
    fn clear_backoffs(&mut self, cx: &Ctx) {
        let p = cx.proto;
        let state = &mut self.nodes[cx.node as usize];
        if cx.at_least(Version::V1_1) && state.ticks.is_multiple_of(p.backoff_clear_ticks) {
            let slack = p.backoff_slack_ticks * p.heartbeat_ns;
            let now = cx.now;
            state.backoff.retain(|_, expire| *expire + slack >= now);
        }
    }

    /// Steps 2-3: reset the IHAVE flood counters.
    fn reset_flood_counters(&mut self, cx: &Ctx) {
        for link in cx.links.of(cx.node) {
            self.peers.peerhave[link as usize] = 0;
            self.peers.iasked[link as usize] = 0;
        }
    }

    /// Step 4: IWANT promises nobody kept within the follow-up time.
    fn penalize_broken_promises(&mut self, cx: &Ctx) {
        let Some(scores) = &mut self.scores else {
            return;
        };
        let now = cx.now;
        let promises = &mut self.nodes[cx.node as usize].promises;
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

    /// Step 6: one mesh topic.
    fn maintain_mesh(&mut self, cx: &Ctx, topic: u16, out: &mut HeartbeatOut) {
        self.prune_negative(cx, topic, out);
        self.graft_up_to_d(cx, topic, out);
        self.trim_to_d(cx, topic, out);
        self.graft_outbound(cx, topic, out);
        self.graft_opportunistically(cx, topic, out);
        // (f) Gossip to peers outside the mesh.
        let exclude = self.nodes[cx.node as usize].mesh[topic as usize].clone();
        for (link, ids) in self.emit_gossip(cx, topic, &exclude) {
            out.to(link).ihave.push((topic, ids));
        }
    }

    /// Step 6 (a): drop peers with a negative score.
    fn prune_negative(&mut self, cx: &Ctx, topic: u16, out: &mut HeartbeatOut) {
        if self.scores.is_none() {
            return;
        }
        let node = cx.node;
        let negative: Vec<u32> = self.nodes[node as usize].mesh[topic as usize]
            .iter()
            .copied()
            .filter(|&l| self.score(l) < 0.0)
            .collect();
        for link in negative {
            self.mesh_remove(node, topic, link);
            self.add_backoff(node, topic, link, cx.now + cx.proto.prune_backoff_ns);
            let parts = out.to(link);
            parts.prune.push(topic);
            parts.no_px = true;
        }
    }

    /// Step 6 (b): too few peers: graft random eligible ones up to D.
    fn graft_up_to_d(&mut self, cx: &Ctx, topic: u16, out: &mut HeartbeatOut) {
        let v11 = cx.at_least(Version::V1_1);
        let node = cx.node;
        let size = self.nodes[node as usize].mesh[topic as usize].len();
        if size >= cx.proto.D_lo {
            return;
        }
        let picked = self.pick_topic_peers(cx.links, node, topic, cx.proto.D - size, |s, l| {
            let taken = s.in_mesh(node, topic, l) || s.is_direct(l);
            !(taken || v11 && s.has_backoff(node, topic, l)) && s.score(l) >= 0.0
        });
        for link in picked {
            self.mesh_add(node, topic, link, cx.now);
            out.to(link).graft.push(topic);
        }
    }

    /// Step 6 (c): too many peers: keep the D_score best, then random ones up to D with
    /// at least D_out outbound (v1.1); prune the rest.
    fn trim_to_d(&mut self, cx: &Ctx, topic: u16, out: &mut HeartbeatOut) {
        let v11 = cx.at_least(Version::V1_1);
        let (node, p) = (cx.node, cx.proto);
        let size = self.nodes[node as usize].mesh[topic as usize].len();
        if !((v11 && size >= p.D_hi) || (!v11 && size > p.D_hi)) {
            return;
        }
        let mut plist: Vec<u32> = self.nodes[node as usize].mesh[topic as usize].to_vec();
        self.nodes[node as usize].rng.shuffle(&mut plist);
        if v11 {
            if self.scores.is_some() {
                plist.sort_by(|&a, &b| self.score(b).total_cmp(&self.score(a)));
            }
            let keep = p.D_score.min(plist.len());
            self.nodes[node as usize].rng.shuffle(&mut plist[keep..]);
            keep_outbound_quota(cx, &mut plist, p.D, p.D_out);
        }
        for &link in &plist[p.D..] {
            self.mesh_remove(node, topic, link);
            if v11 {
                self.add_backoff(node, topic, link, cx.now + p.prune_backoff_ns);
            }
            out.to(link).prune.push(topic);
        }
    }

    /// Step 6 (d): enough peers but too few outbound: graft outbound peers (v1.1).
    fn graft_outbound(&mut self, cx: &Ctx, topic: u16, out: &mut HeartbeatOut) {
        let (node, links) = (cx.node, cx.links);
        let mesh = &self.nodes[node as usize].mesh[topic as usize];
        if !cx.at_least(Version::V1_1) || mesh.len() < cx.proto.D_lo {
            return;
        }
        let outbound = mesh.iter().filter(|&&l| links.outbound[l as usize]).count();
        if outbound >= cx.proto.D_out {
            return;
        }
        let count = cx.proto.D_out - outbound;
        let picked = self.pick_topic_peers(links, node, topic, count, |s, l| {
            !s.in_mesh(node, topic, l)
                && !s.has_backoff(node, topic, l)
                && !s.is_direct(l)
                && links.outbound[l as usize]
                && s.score(l) >= 0.0
        });
        for link in picked {
            self.mesh_add(node, topic, link, cx.now);
            out.to(link).graft.push(topic);
        }
    }

    /// Step 6 (e): opportunistic grafting: a mesh whose median score is poor takes in a
    /// few better peers.
    fn graft_opportunistically(&mut self, cx: &Ctx, topic: u16, out: &mut HeartbeatOut) {
        let Some(scores) = &self.scores else {
            return;
        };
        let params = scores.params();
        let (every, count) = (
            params.opportunistic_graft_ticks.max(1),
            params.opportunistic_graft_peers,
        );
        let node = cx.node;
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
        let picked = self.pick_topic_peers(cx.links, node, topic, count, |s, l| {
            !s.in_mesh(node, topic, l)
                && !s.has_backoff(node, topic, l)
                && !s.is_direct(l)
                && s.score(l) > median
        });
        for link in picked {
            self.mesh_add(node, topic, link, cx.now);
            out.to(link).graft.push(topic);
        }
    }

    /// Steps 7-8: expire a fanout topic, or refill it and gossip to it too.
    fn maintain_fanout(&mut self, cx: &Ctx, topic: u16, out: &mut HeartbeatOut) {
        let node = cx.node;
        let publish = self.thresholds().publish;
        let state = &mut self.nodes[node as usize];
        if let Some(last) = state.fanout_lastpub[topic as usize] {
            if last + cx.proto.fanout_ttl_ns < cx.now {
                state.fanout_lastpub[topic as usize] = None;
                state.fanout[topic as usize].clear();
            }
        }
        if state.fanout_lastpub[topic as usize].is_none() {
            return;
        }
        let mut fanout = std::mem::take(&mut state.fanout[topic as usize]);
        fanout.retain(|l| {
            self.peers.topics[*l as usize] & (1 << topic) != 0 && self.score(*l) >= publish
        });
        let d = cx.proto.D;
        if fanout.len() < d {
            let have = fanout.clone();
            let picked = self.pick_topic_peers(cx.links, node, topic, d - fanout.len(), |s, l| {
                !have.contains(&l) && !s.is_direct(l) && s.score(l) >= publish
            });
            fanout.extend(picked);
        }
        for (link, ids) in self.emit_gossip(cx, topic, &fanout) {
            out.to(link).ihave.push((topic, ids));
        }
        self.nodes[node as usize].fanout[topic as usize] = fanout;
    }

    /// v1.0: IHAVEs not piggybacked since the last heartbeat go out now, each in an RPC
    /// of its own (v0.1.1's `heartbeat` -> `flush`).
    fn flush_pending_ihave(&mut self, cx: &mut Ctx) {
        let pending = std::mem::take(&mut self.nodes[cx.node as usize].pending_ihave);
        for (link, ihave) in pending {
            let control = Control {
                ihave,
                ..Control::default()
            };
            cx.out.send_control(link, control);
        }
    }

    /// v1.0: whether IHAVEs are held for `link`, to ride on the next RPC there. Checked
    /// before building a control part, so that a plain forward stays a plain forward.
    pub(super) fn holds_gossip_for(&self, node: u32, link: u32) -> bool {
        self.nodes[node as usize]
            .pending_ihave
            .iter()
            .any(|(l, _)| *l == link)
    }

    /// Send `msgs` and `control` in one RPC on `link`. v1.0 piggybacks the IHAVEs held
    /// for that peer on every RPC to it (v0.1.1's `sendRPC` -> `piggybackGossip`:
    /// forwards, IWANT replies, GRAFTs and PRUNEs alike); later versions hold none
    /// between heartbeats (go v0.17.0 flushes them at the heartbeat's end).
    pub(super) fn send_with_held_gossip(
        &mut self,
        cx: &mut Ctx,
        link: u32,
        msgs: &[MsgRef],
        mut control: Control,
    ) {
        let pending = &mut self.nodes[cx.node as usize].pending_ihave;
        if let Some(i) = pending.iter().position(|(l, _)| *l == link) {
            control.ihave.extend(pending.swap_remove(i).1);
        }
        cx.out.send(link, msgs, control);
    }

    /// Step 9: a peer's GRAFTs, PRUNEs and IHAVEs. go v0.17.0 sends the IHAVE of a peer
    /// it also GRAFTs or PRUNEs as an RPC of its own first (`sendGraftPrune` →
    /// `sendRPC`, the pending gossip ahead of the RPC); the v2.0 fork sends one RPC with
    /// all three. v1.0 (v0.1.1) queues gossip instead (`pushGossip`): it rides on this
    /// heartbeat's GRAFT/PRUNE to the peer, else waits for the next RPC to it or the next
    /// heartbeat.
    fn send_heartbeat_parts(&mut self, cx: &mut Ctx, out: HeartbeatOut) {
        let v10 = !cx.at_least(Version::V1_1);
        for (link, parts) in out.0 {
            if v10 && parts.graft.is_empty() && parts.prune.is_empty() {
                self.nodes[cx.node as usize]
                    .pending_ihave
                    .push((link, parts.ihave));
                continue;
            }
            let prune: Vec<Prune> = parts
                .prune
                .into_iter()
                .map(|t| self.make_prune(cx, link, t, !parts.no_px))
                .collect();
            let mut control = Control {
                graft: parts.graft,
                prune,
                ihave: parts.ihave,
                ..Control::default()
            };
            let mesh_change = !control.graft.is_empty() || !control.prune.is_empty();
            if mesh_change && !control.ihave.is_empty() && cx.proto.separates_pending_control() {
                let ihave = std::mem::take(&mut control.ihave);
                cx.out.send_control(
                    link,
                    Control {
                        ihave,
                        ..Control::default()
                    },
                );
            }
            cx.out.send_control(link, control);
        }
    }
}

/// go's outbound rotation: make sure at least `d_out` of the first `d` entries are
/// outbound links, moving outbound ones forward while keeping the others' order.
fn keep_outbound_quota(cx: &Ctx, plist: &mut [u32], d: usize, d_out: usize) {
    let d = d.min(plist.len());
    let is_out = |l: u32| cx.links.outbound[l as usize];
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
