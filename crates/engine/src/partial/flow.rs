//! Partial messages in the simulation: publishing a group, partial RPCs in and out, a
//! full message reaching a node that speaks the extension, heartbeat gossip and TTL,
//! peers leaving. Every function is a no-op when the scenario has no partial messages.

use super::app::{self, Incoming};
use super::library::own_groups;
use super::{AppGroup, Partial, PartialRows, PartialRpc, Role};
use crate::config::Time;
use crate::rpc::Kind;
use crate::seen::{Seen, NOT_CACHED};
use crate::sim::Simulation;

/// Bit `topic` of a peer's announced topics.
fn announced(topics: u64, topic: u16) -> bool {
    topics & (1 << topic) != 0
}

impl Partial {
    /// The application's group at `node`, learned now (its mempool) if unknown; and
    /// whether it was just learned.
    fn app(&mut self, node: u32, group: u32) -> (&mut AppGroup, bool) {
        let mempool = self.mempool(group, node);
        let apps = &mut self.nodes[node as usize].apps;
        let learned = !apps.contains_key(&group);
        let app = apps.entry(group).or_insert_with(|| AppGroup {
            have: mempool,
            held: mempool,
            ..AppGroup::default()
        });
        (app, learned)
    }
}

impl Simulation {
    /// Whether the peer on `node`'s `link` requests partial messages on `topic`, as
    /// `node` sees it (gossipsub.go:peerRequestsPartial: `node` enabled the extension
    /// and the peer's subscription carried requestsPartial).
    fn peer_requests(&self, p: &Partial, node: u32, link: u32, topic: u16) -> bool {
        let peer = self.links.peer[link as usize];
        p.role(node) != Role::None
            && p.role(peer) == Role::Requests
            && announced(self.router.peers.topics[link as usize], topic)
    }

    /// gossipsub.go:peerSupportsSendingPartial.
    fn peer_supports(&self, p: &Partial, node: u32, link: u32, topic: u16) -> bool {
        let peer = self.links.peer[link as usize];
        p.role(node) != Role::None
            && p.role(peer) != Role::None
            && announced(self.router.peers.topics[link as usize], topic)
    }

    /// extensions.go:partialMessageRouter.MeshPeers: the mesh (or, without one, the
    /// fanout) filtered by `ext && iRequest && peerSupports || iSupport && peerRequests`
    /// (go's precedence: the extension check binds to the first branch only).
    fn partial_mesh_peers(&self, p: &Partial, node: u32, topic: u16) -> Vec<u32> {
        let state = &self.router.nodes[node as usize];
        let mesh = if state.mesh[topic as usize].is_empty() {
            &state.fanout[topic as usize]
        } else {
            &state.mesh[topic as usize]
        };
        let (i_request, i_support) = (p.role(node) == Role::Requests, p.role(node) != Role::None);
        mesh.iter()
            .copied()
            .filter(|&l| {
                (p.ext_peer.contains(&l) && i_request && self.peer_supports(p, node, l, topic))
                    || (i_support && self.peer_requests(p, node, l, topic))
            })
            .collect()
    }

    /// The workload publishes group `msg` at its publisher, which holds every part.
    /// Returns whether the full message goes out too (`full_fallback`).
    pub(crate) fn partial_publish(&mut self, publisher: u32, msg: u32) -> bool {
        let now = self.now();
        let Some(p) = self.partial.as_deref_mut() else {
            return true;
        };
        let all = p.cfg.all();
        let (app, _) = p.app(publisher, msg);
        app.have = all;
        app.held = all;
        app.complete_at = Some(now);
        let fallback = p.cfg.full_fallback;
        let topic = self.messages[msg as usize].topic;
        self.publish_partial(publisher, msg, topic);
        fallback
    }

    /// go's `PublishPartial` with the go-reference actions (partialmsgs.go:
    /// PublishPartial and publish): take the group as the node's own, reset its TTL,
    /// track the partial mesh peers, and send each tracked peer, in link order, what
    /// the rule gives; data only to peers that request partial messages.
    pub(crate) fn publish_partial(&mut self, node: u32, group: u32, topic: u16) {
        let Some(p) = self.partial.as_deref() else {
            return;
        };
        let mesh = self.partial_mesh_peers(p, node, topic);
        let mut links: Vec<u32> = mesh.clone();
        if let Some(state) = p.nodes[node as usize].groups.get(&group) {
            links.extend(state.peers.iter().map(|(l, _)| *l));
        }
        links.sort_unstable();
        links.dedup();
        let requests: Vec<bool> = links
            .iter()
            .map(|&l| self.peer_requests(p, node, l, topic))
            .collect();
        let p = self.partial.as_deref_mut().expect("checked above");
        let (ttl, eager) = (p.cfg.ttl(), p.cfg.eager_push);
        let have = p.app(node, group).0.have;
        let state = p.nodes[node as usize].local_group(group, topic, ttl);
        let mut sends = Vec::new();
        for (&link, &requests) in links.iter().zip(&requests) {
            let (data, meta) = app::action(have, state.peer(link), requests, eager);
            // The library omits data for a peer that does not request it
            // (partialmsgs.go:publish; spec: MUST omit).
            let data = if requests { data } else { 0 };
            if data != 0 || meta.is_some() {
                sends.push((link, data, meta));
            }
        }
        for (link, data, meta) in sends {
            let partial = PartialRpc {
                topic,
                group,
                data,
                meta,
            };
            let rpc = self.rpcs.alloc();
            self.rpcs.get_mut(rpc).control.partial = Some(partial);
            self.send(node, link, rpc);
        }
    }

    /// A partial RPC of `bytes` bytes reached `receiver` on its link `back`
    /// (gossipsub.go:HandleRPC → extensions.go:extensionsHandleRPC →
    /// partialmsgs.go:HandleRPC → the application's OnIncomingRPC).
    pub(crate) fn partial_receive(
        &mut self,
        receiver: u32,
        back: u32,
        rpc: PartialRpc,
        bytes: u64,
    ) {
        let now = self.now();
        let sender = self.links.peer[back as usize];
        let Some(p) = self.partial.as_deref_mut() else {
            return;
        };
        // Only between peers that both advertised the extension (extensions.go:185-190).
        if p.role(receiver) == Role::None || !p.ext_peer.contains(&back) {
            return;
        }
        let (ttl, limits) = (
            p.cfg.ttl(),
            (
                p.cfg.peer_group_limit_per_topic,
                p.cfg.peer_group_limit_per_peer,
            ),
        );
        let node = &mut p.nodes[receiver as usize];
        let peer_state = match node.peer_group(rpc.group, rpc.topic, back, ttl, limits) {
            Ok(state) => *state.peer(back),
            Err(reason) => {
                // The RPC never reaches the application; go only logs it.
                self.count_drop(receiver, sender, Kind::Partial, reason);
                return;
            }
        };
        let sender_hop = p.nodes[sender as usize]
            .apps
            .get(&rpc.group)
            .map_or(0, |a| a.hop);
        let all = p.cfg.all();
        let (app, learned) = p.app(receiver, rpc.group);
        let mut peer_state = peer_state;
        let Incoming {
            new,
            dup,
            republish,
        } = app::incoming(&mut app.have, &mut peer_state, rpc.data, rpc.meta);
        app.parts_recv += new.count_ones();
        app.parts_dup += dup.count_ones();
        app.bytes_partial_recv += bytes;
        let complete = app.complete_at.is_none() && app.have == all;
        if complete {
            app.complete_at = Some(now);
            app.hop = sender_hop.saturating_add(1);
        }
        let hop = app.hop;
        let state = p.nodes[receiver as usize]
            .groups
            .get_mut(&rpc.group)
            .expect("opened above");
        *state.peer(back) = peer_state;
        // go's application publishes from a goroutine (`go PublishPartial`), which runs
        // once this RPC is handled: here, at the same instant, right after. A node that
        // learns a group publishes once to send its metadata (its request), as go's
        // mixed-network test does for a node with no data.
        if republish || learned {
            self.publish_partial(receiver, rpc.group, rpc.topic);
        }
        if complete {
            self.partial_complete(receiver, back, rpc.group, hop);
        }
    }

    /// `node` holds every part of `msg`: it delivers the message, and with
    /// `full_fallback` publishes it in full for peers that do not request partial
    /// messages (gossipsub_test.go: TestPartialMessages' mixed network `ps.Publish`).
    fn partial_complete(&mut self, node: u32, back: u32, msg: u32, hop: u16) {
        if self.nodes[node as usize].seen.contains_key(&msg) {
            return; // delivered already, in full
        }
        let now = self.now();
        let sender = self.links.peer[back as usize];
        let row = self.out.deliveries.push(msg, node, now, sender, hop);
        let seen = Seen {
            expire: now + self.proto.seen_ttl_ns,
            row,
            hop,
            cached_at: NOT_CACHED,
            dups: 0,
        };
        self.nodes[node as usize].seen.insert(msg, seen);
        let fallback = self.partial.as_deref().is_some_and(|p| p.cfg.full_fallback);
        if fallback {
            self.with_router(node, |router, cx| {
                if cx.proto.idontwant_on_publish() {
                    router.send_idontwant(cx, None, &[msg]);
                }
                router.forward(cx, msg, None);
            });
        }
    }

    /// A full copy of `msg` reached `node` (counted for the `partial` table).
    pub(crate) fn partial_full_copy(&mut self, node: u32, msg: u32) {
        if let Some(p) = self.partial.as_deref_mut() {
            p.app(node, msg).0.full_recv += 1;
        }
    }

    /// `node` validated the full message `msg`: it holds every part now, and a node
    /// with the extension publishes the group (the subscription reader's
    /// `go PublishPartial` in go's mixed-network test).
    pub(crate) fn partial_full_delivered(&mut self, node: u32, msg: u32, hop: u16) {
        let now = self.now();
        let Some(p) = self.partial.as_deref_mut() else {
            return;
        };
        let all = p.cfg.all();
        let role = p.role(node);
        let (app, _) = p.app(node, msg);
        app.parts_recv += (all & !app.have).count_ones();
        app.have = all;
        if app.complete_at.is_none() {
            app.complete_at = Some(now);
            app.hop = hop;
        }
        if role != Role::None {
            let topic = self.messages[msg as usize].topic;
            self.publish_partial(node, msg, topic);
        }
    }

    /// Heartbeat gossip (partialmsgs.go:EmitGossip → OnEmitGossip): for each topic the
    /// router picked partial gossip peers for, every group the node opened itself
    /// tracks the new ones, and the node publishes those groups to them.
    pub(crate) fn partial_gossip(&mut self, node: u32) {
        let picked = std::mem::take(&mut self.router.partial_gossip);
        let Some(p) = self.partial.as_deref_mut() else {
            return;
        };
        let mut publish = Vec::new();
        for (topic, peers) in picked {
            let groups = &mut p.nodes[node as usize].groups;
            for group in own_groups(groups, topic) {
                let state = groups.get_mut(&group).expect("listed");
                let fresh: Vec<u32> = peers
                    .iter()
                    .copied()
                    .filter(|&l| !state.tracks(l))
                    .collect();
                for &link in &fresh {
                    state.peer(link);
                }
                if !fresh.is_empty() {
                    publish.push((group, topic));
                }
            }
        }
        for (group, topic) in publish {
            self.publish_partial(node, group, topic);
        }
    }

    /// The library's heartbeat step, after the message cache shift (extensions.go:
    /// Heartbeat, called last in gossipsub.go:heartbeat).
    pub(crate) fn partial_heartbeat(&mut self, node: u32) {
        if let Some(p) = self.partial.as_deref_mut() {
            p.expired += p.nodes[node as usize].heartbeat();
        }
    }

    /// `node` went down: its peers stop tracking it (partialmsgs.go:
    /// OnClosedOutboundStream), and it forgets what they advertised.
    pub(crate) fn partial_disconnected(&mut self, node: u32) {
        let Some(p) = self.partial.as_deref_mut() else {
            return;
        };
        for link in self.links.of(node) {
            let back = self.links.reverse[link as usize];
            let peer = self.links.peer[link as usize];
            p.nodes[peer as usize].remove_link(back);
            p.ext_peer.remove(&back);
            p.ext_peer.remove(&link);
        }
    }

    /// `node` restarted as a new process: no library state; its application keeps the
    /// parts it had (its store).
    pub(crate) fn partial_restarted(&mut self, node: u32) {
        if let Some(p) = self.partial.as_deref_mut() {
            let state = &mut p.nodes[node as usize];
            state.groups.clear();
            state.opened.clear();
        }
    }

    /// Whether `node` advertises the extension in its hello.
    pub(crate) fn partial_extension(&self, node: u32) -> bool {
        self.partial
            .as_deref()
            .is_some_and(|p| p.role(node) != Role::None)
    }

    /// The peer on `back` advertised the extension (the first RPC on the link: its
    /// hello; extensions.go:extensionsState.HandleRPC).
    pub(crate) fn partial_advertised(&mut self, back: u32) {
        if let Some(p) = self.partial.as_deref_mut() {
            p.ext_peer.insert(back);
        }
    }

    /// Whether `node` still has library state for `group` (for tests).
    pub fn partial_group_alive(&self, node: u32, group: u32) -> bool {
        self.partial
            .as_deref()
            .is_some_and(|p| p.nodes[node as usize].groups.contains_key(&group))
    }

    /// Groups deleted at heartbeats so far (TTL or no peers left).
    pub fn partial_groups_expired(&self) -> u64 {
        self.partial.as_deref().map_or(0, |p| p.expired)
    }

    /// The `partial` table, or None without partial messages.
    pub fn partial_rows(&self) -> Option<PartialRows> {
        let p = self.partial.as_deref()?;
        let mut rows = PartialRows::default();
        for (msg, m) in self.messages.iter().enumerate() {
            let msg = msg as u32;
            for node in (0..self.nodes.len() as u32).filter(|&n| n != m.publisher) {
                let app = p.nodes[node as usize].apps.get(&msg);
                let default = AppGroup::default();
                let app = app.unwrap_or(&default);
                rows.msg.push(msg);
                rows.node.push(node);
                rows.role.push(p.role(node).code());
                rows.parts.push(p.cfg.parts);
                rows.held.push(p.mempool(msg, node).count_ones());
                rows.parts_recv.push(app.parts_recv);
                rows.parts_dup.push(app.parts_dup);
                rows.full_recv.push(app.full_recv);
                rows.t_complete_ns
                    .push(app.complete_at.map_or(-1, |t: Time| t as i64));
                rows.bytes_partial_recv.push(app.bytes_partial_recv);
            }
        }
        Some(rows)
    }
}
