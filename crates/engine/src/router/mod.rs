//! The routers: floodsub and gossipsub (v1.0 to v2.0), beside the network.
//!
//! A router keeps, per node, its protocol state (`RouterNode`: mesh, fanout, backoff,
//! message cache, promises, IDONTWANT and announcement bookkeeping) and, per directed
//! link, what the node knows of that peer (`PeerLinks`). It acts on the world only
//! through its `Outbox` and reads the rest through a `Ctx`: the time, the protocol
//! settings, the links, the message table and its node's host state (seen cache,
//! topics). The simulation (`sim.rs`) calls in when something reaches a node and
//! carries out what the router wrote.
//!
//! Follows go-libp2p-pubsub (`gossipsub.go`), the reference implementation. Without
//! peer scoring every score is 0 and every threshold 0, as in go without
//! `WithPeerScore`.

mod exchange;
mod floodsub;
mod gossipsub;
mod heartbeat;
mod lazy;
pub mod mcache;
mod peers;
pub mod score;
mod subscriptions;

use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use crate::config::{Config, ProtocolConfig, Router as Kind, Signing, Time, Version};
use crate::control::Control;
use crate::event_loop::NodeLoop;
use crate::inputs::Message;
use crate::links::Links;
use crate::node::NodeState;
use crate::outbox::Outbox;
use crate::partial::Role as PartialRole;
use crate::rng::Rng;
use crate::rpc::MsgRef;
pub(crate) use lazy::Announced;
use mcache::MessageCache;
pub(crate) use peers::PeerLinks;
use score::Scores;

/// IWANT promises of one node: message -> (link asked, deadline).
pub(crate) type Promises = FxHashMap<u32, SmallVec<[(u32, Time); 2]>>;

/// IHAVE parts for one peer: (topic, ids) per topic.
pub(crate) type Ihave = Vec<(u16, Vec<u32>)>;

/// A node's protocol state.
pub(crate) struct RouterNode {
    pub rng: Rng,
    /// Per topic: links in the mesh.
    pub mesh: Vec<SmallVec<[u32; 16]>>,
    pub fanout: Vec<SmallVec<[u32; 16]>>,
    pub fanout_lastpub: Vec<Option<Time>>,
    /// (topic, link) -> backoff expiry.
    pub backoff: FxHashMap<(u16, u32), Time>,
    pub mcache: MessageCache,
    /// Heartbeats run.
    pub ticks: u64,
    /// IWANT promises (go's gossip tracer).
    pub promises: Promises,
    /// When its scores last decayed.
    pub last_decay: Time,
    /// v1.2: (link, message) the peer said it does not want -> heartbeats left.
    pub unwanted: FxHashMap<(u32, u32), u8>,
    /// v2.0: messages announced to us that we are fetching with INEED.
    pub announced: FxHashMap<u32, Announced>,
    /// v1.0: IHAVEs emitted at the last heartbeat and not sent yet, per link (v0.1.1's
    /// `gs.gossip`).
    pub pending_ihave: Vec<(u32, Ihave)>,
}

impl RouterNode {
    fn new(rng: Rng, topics: usize, history_length: usize) -> Self {
        Self {
            rng,
            mesh: vec![SmallVec::new(); topics],
            fanout: vec![SmallVec::new(); topics],
            fanout_lastpub: vec![None; topics],
            backoff: FxHashMap::default(),
            mcache: MessageCache::new(history_length.max(1)),
            ticks: 0,
            promises: FxHashMap::default(),
            last_decay: 0,
            unwanted: FxHashMap::default(),
            announced: FxHashMap::default(),
            pending_ihave: Vec::new(),
        }
    }

    /// A restart: everything but the random stream is forgotten.
    fn forget(&mut self, history_length: usize, now: Time) {
        self.announced.clear();
        self.pending_ihave.clear();
        self.unwanted.clear();
        self.backoff.clear();
        self.mcache = MessageCache::new(history_length.max(1));
        for topic in 0..self.mesh.len() {
            self.mesh[topic].clear();
            self.fanout[topic].clear();
            self.fanout_lastpub[topic] = None;
        }
        self.promises.clear();
        self.last_decay = now;
    }
}

/// What a router reads of the world, and its outbox, while it handles one node.
pub(crate) struct Ctx<'a> {
    pub node: u32,
    pub now: Time,
    pub proto: &'a ProtocolConfig,
    pub links: &'a Links,
    pub messages: &'a [Message],
    /// The node's host side (seen cache, topics, adversary role).
    pub host: &'a mut NodeState,
    /// The node's event loop, if the scenario models it (`event_loop.rs`).
    pub event_loop: Option<&'a NodeLoop>,
    pub out: Outbox<'a>,
}

impl Ctx<'_> {
    pub fn at_least(&self, v: Version) -> bool {
        self.proto.version >= v
    }

    /// go's `PubSub.seenMessage`: the seen cache, which a validation worker fills as soon
    /// as it has checked the signature (`validation.go:validate` → `markSeen`), before the
    /// event loop publishes the message.
    pub fn seen_message(&self, msg: u32) -> bool {
        self.host.seen.contains_key(&msg) || self.event_loop.is_some_and(|lp| lp.marked(msg))
    }
}

/// How a message reaches its recipients: flooding (floodsub, flood publish) ignores
/// IDONTWANT and never announces; mesh forwards honour both; fanout honours IDONTWANT.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Route {
    Flood,
    Mesh,
    Fanout,
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

/// Every node's router.
pub(crate) struct Router {
    pub kind: Kind,
    pub nodes: Vec<RouterNode>,
    pub peers: PeerLinks,
    /// Peer scores, when scoring is on.
    pub scores: Option<Scores>,
    /// Scoring: each node's application score (P5) and IP address (P6) as its peers
    /// see them; empty when nobody sets them.
    app_score: Vec<f64>,
    ip: Vec<u32>,
    /// v1.3 partial messages: each node's role (empty without partial messages).
    partial_roles: Vec<PartialRole>,
    /// Partial gossip peers picked at the heartbeat being run, per topic; the
    /// simulation sends them the node's groups (`partial::flow`).
    pub partial_gossip: Vec<(u16, Vec<u32>)>,
}

impl Router {
    /// Routers for the config's nodes over `links`; `direct` marks links to direct peers.
    pub fn new(config: &Config, links: &Links, direct: Vec<bool>) -> Self {
        let p = &config.protocol;
        let topics = config.topics as usize;
        let nodes = (0..config.nodes)
            .map(|i| {
                let rng = Rng::for_stream(config.seed, "protocol", u64::from(i));
                RouterNode::new(rng, topics, p.history_length)
            })
            .collect();
        let scores = p
            .score
            .clone()
            .filter(|_| p.version >= Version::V1_1)
            .map(|params| Scores::new(params, links.len(), topics));
        let mut router = Self {
            kind: p.router,
            nodes,
            peers: PeerLinks::new(direct),
            scores,
            app_score: app_scores(config),
            ip: ip_addresses(config),
            partial_roles: config
                .partial
                .as_ref()
                .map_or(Vec::new(), |p| p.roles.clone()),
            partial_gossip: Vec::new(),
        };
        if !router.app_score.is_empty() {
            for link in 0..links.len() as u32 {
                router.init_peer_scores(links, link);
            }
        }
        for node in 0..config.nodes {
            router.refresh_colocation(links, node);
        }
        router
    }

    pub fn is_gossipsub(&self) -> bool {
        self.kind == Kind::Gossipsub
    }

    /// Whether `node` supports partial messages (on every topic it is in).
    pub fn supports_partial(&self, node: u32) -> bool {
        self.partial_roles
            .get(node as usize)
            .is_some_and(|&r| r != PartialRole::None)
    }

    /// Whether `node` requests partial messages (on every topic it is in).
    pub fn requests_partial(&self, node: u32) -> bool {
        self.partial_roles.get(node as usize) == Some(&PartialRole::Requests)
    }

    /// Whether `node` supports partial messages and `peer` requests them: `peer` gets
    /// parts from `node`, never full messages or IHAVE (gossipsub.go:1413, 2069-2080).
    pub fn partial_peer(&self, node: u32, peer: u32) -> bool {
        self.supports_partial(node)
            && self.partial_roles.get(peer as usize) == Some(&PartialRole::Requests)
    }

    /// A connection opened: state for its two directed links, `there` and `back`.
    pub fn connected(&mut self, links: &Links, there: u32, back: u32) {
        for _ in [there, back] {
            self.peers.push();
            if let Some(scores) = &mut self.scores {
                scores.add_link();
            }
        }
        self.init_peer_scores(links, there);
        self.init_peer_scores(links, back);
        self.refresh_colocation(links, links.owner[there as usize]);
        self.refresh_colocation(links, links.owner[back as usize]);
    }

    /// `node` went down: its peers see the connections break.
    pub fn disconnected(&mut self, links: &Links, node: u32, now: Time) {
        for link in links.of(node) {
            let back = links.reverse[link as usize];
            let peer = links.peer[link as usize];
            self.peers.topics[back as usize] = 0;
            self.peers.topics[link as usize] = 0;
            // The score first (it sees the mesh as it was), then the mesh, without a
            // second sticky penalty (go's router drops the peer without a Prune trace).
            if let Some(scores) = &mut self.scores {
                scores.disconnect(back, now);
            }
            let peer_state = &mut self.nodes[peer as usize];
            for topic in 0..peer_state.mesh.len() {
                peer_state.mesh[topic].retain(|l| *l != back);
                peer_state.fanout[topic].retain(|l| *l != back);
            }
            peer_state.pending_ihave.retain(|(l, _)| *l != back);
            // go's gossip tracer forgets the promises of a peer that left.
            peer_state.promises.retain(|_, waiting| {
                waiting.retain(|&mut (l, _)| l != back);
                !waiting.is_empty()
            });
        }
    }

    /// `node` came back as a new process: a fresh protocol state; it scores its peers
    /// from scratch, and they find its retained score.
    pub fn restarted(&mut self, links: &Links, node: u32, history_length: usize, now: Time) {
        self.nodes[node as usize].forget(history_length, now);
        if let Some(scores) = &mut self.scores {
            for link in links.of(node) {
                scores.forget(link);
                scores.reconnect(links.reverse[link as usize], now);
            }
        }
    }

    /// Score state `link`'s owner keeps about the peer from the start: its P5.
    fn init_peer_scores(&mut self, links: &Links, link: u32) {
        let peer = links.peer[link as usize] as usize;
        if let (Some(scores), Some(&app)) = (&mut self.scores, self.app_score.get(peer)) {
            scores.set_app_score(link, app);
        }
    }

    /// P6: count, for each of `node`'s links, its peers behind the same address.
    fn refresh_colocation(&mut self, links: &Links, node: u32) {
        let Some(scores) = &mut self.scores else {
            return;
        };
        if self.ip.is_empty() {
            return;
        }
        let mut per_ip: FxHashMap<u32, u32> = FxHashMap::default();
        for link in links.of(node) {
            *per_ip
                .entry(self.ip[links.peer[link as usize] as usize])
                .or_default() += 1;
        }
        for link in links.of(node) {
            let ip = self.ip[links.peer[link as usize] as usize];
            scores.set_colocated(link, per_ip[&ip]);
        }
    }

    /// How many peers a relay of `msg` from `from` goes to, as `forward` would choose
    /// them now: go's `Publish` (`gossipsub.go`, `floodsub.go`) calls `sendRPC` once for
    /// each, which is most of what the event loop spends publishing a message (the
    /// loop's cost per forward). Read-only; the peers IDONTWANT, a partial-message
    /// request or a v2.0 announce spare later are counted (the loop checks them too).
    pub fn relay_count(&self, cx: &Ctx, msg: u32, from: u32) -> u64 {
        let node = cx.node;
        let m = &cx.messages[msg as usize];
        let author = author(cx, m.publisher);
        let counted = |l: &u32| *l != from && cx.links.peer[*l as usize] != author;
        let topic_links = self.topic_links(cx.links, node, m.topic);
        if let Kind::Floodsub = self.kind {
            return topic_links.filter(counted).count() as u64;
        }
        // As `gossipsub_recipients`: direct peers only when the scenario has some.
        let direct = if cx.proto.direct_peers.is_empty() {
            0
        } else {
            topic_links
                .filter(|&l| self.is_direct(l))
                .filter(counted)
                .count()
        };
        let state = &self.nodes[node as usize];
        let peers = if cx.host.is_subscribed(m.topic) {
            &state.mesh[m.topic as usize]
        } else {
            &state.fanout[m.topic as usize]
        };
        (direct + peers.iter().copied().filter(counted).count()) as u64
    }

    /// Relay (or, with `from` = None, publish) a validated message.
    pub fn forward(&mut self, cx: &mut Ctx, msg: u32, from: Option<u32>) {
        let own = from.is_none();
        let (topic, publisher) = {
            let m = &cx.messages[msg as usize];
            (m.topic, m.publisher)
        };
        let author = author(cx, publisher);
        let hop = cx.host.seen.get(&msg).map_or(0, |s| s.hop);
        let (recipients, route) = match self.kind {
            Kind::Floodsub => self.floodsub_recipients(cx, topic),
            Kind::Gossipsub => self.gossipsub_recipients(cx, msg, topic, own),
        };
        for link in recipients {
            if Some(link) == from || cx.links.peer[link as usize] == author {
                continue;
            }
            // A node that supports partial messages sends a peer that requests them no
            // full message (gossipsub.go:rpcs, 1413-1416).
            if self.partial_peer(cx.node, cx.links.peer[link as usize]) {
                continue;
            }
            // IDONTWANT never spares a direct peer (go's `rpcs`, the fork's `Publish`); in
            // 2.0 a direct peer tosses the announce coin as a mesh peer does.
            let direct = self.is_direct(link);
            if route != Route::Flood && !direct && self.unwanted(cx, link, msg) {
                continue;
            }
            if self.may_announce(cx, route, topic, link, direct) && self.announce_instead(cx, own) {
                self.send_announce(cx, link, msg);
                continue;
            }
            // v1.0 holds gossip for the next RPC to the peer, a forward included.
            if self.holds_gossip_for(cx.node, link) {
                let msgs = [MsgRef { msg, hop }];
                self.send_with_held_gossip(cx, link, &msgs, Control::default());
                continue;
            }
            cx.out.send_message(link, msg, hop);
        }
    }
}

/// The node go skips as a message's author when forwarding it (`gossipsub.go:rpcs`,
/// `pid == from || pid == msg.GetFrom()`): its publisher; none without an author
/// (strict-no-sign is go's WithNoAuthor), so copies go back to the publisher, a
/// duplicate there.
fn author(cx: &Ctx, publisher: u32) -> u32 {
    match cx.proto.signing {
        Signing::StrictSign => publisher,
        Signing::StrictNoSign => u32::MAX,
    }
}

/// Each node's application score as every peer sees it (empty: nobody has one).
fn app_scores(config: &Config) -> Vec<f64> {
    let Some(score) = &config.protocol.score else {
        return Vec::new();
    };
    if score.app_specific.is_empty() {
        return Vec::new();
    }
    let mut app = vec![0.0; config.nodes as usize];
    for entry in &score.app_specific {
        for &node in &entry.nodes {
            app[node as usize] = entry.score;
        }
    }
    app
}

/// Each node's IP address: its own id, or one shared by its group (empty: no groups).
fn ip_addresses(config: &Config) -> Vec<u32> {
    let groups = &config.network.shared_ips;
    if groups.is_empty() {
        return Vec::new();
    }
    let mut ip: Vec<u32> = (0..config.nodes).collect();
    for (g, group) in groups.iter().enumerate() {
        for &node in group {
            ip[node as usize] = config.nodes + g as u32;
        }
    }
    ip
}
