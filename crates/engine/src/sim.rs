//! The simulation: nodes, messages, and the loop that moves events.
//!
//! This file holds what every router shares: sending and receiving RPCs over the
//! network model, the seen cache, first-receipt bookkeeping and publishing. The
//! gossipsub-specific parts (heartbeat, control messages) are in `gossipsub.rs`.

use std::collections::VecDeque;

use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use crate::aggregate::{AggregateTables, Aggregates};
use crate::config::{
    Adversary, Config, LatencyModel, Misbehaviour, OutputMode, Placement, ProtocolConfig, Router,
    Time, Version,
};
use crate::error::EngineError;
use crate::exchange::Dial;
use crate::faults::{partitions, Partition};
use crate::lazy::Announced;
use crate::links::Links;
use crate::mcache::MessageCache;
use crate::network::{pair_latency, pair_loss, Network};
use crate::output::{Output, Receipts};
use crate::queue::{Event, EventQueue};
use crate::rng::Rng;
use crate::rpc::{Control, Kind, MsgRef, RpcSlab};
use crate::score::Scores;
use crate::seen::SeenCache;
use crate::transport::Transport;
use crate::wire::WireSizes;

/// The publish schedule, drawn by the caller (the testbed uses the same one).
#[derive(Clone, Debug, Default)]
pub struct Schedule {
    pub t_intended_ns: Vec<Time>,
    pub publisher: Vec<u32>,
    pub size: Vec<u32>,
    pub topic: Vec<u16>,
    pub batch: Vec<u32>,
}

impl Schedule {
    pub fn len(&self) -> usize {
        self.t_intended_ns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.t_intended_ns.is_empty()
    }

    fn check(&self, nodes: u32, topics: u16) -> Result<(), EngineError> {
        let n = self.len();
        if [
            self.publisher.len(),
            self.size.len(),
            self.topic.len(),
            self.batch.len(),
        ]
        .iter()
        .any(|&len| len != n)
        {
            return Err(EngineError::input(
                "schedule",
                "schedule columns have different lengths",
            ));
        }
        if self.t_intended_ns.windows(2).any(|w| w[0] > w[1]) {
            return Err(EngineError::input(
                "schedule",
                "schedule is not sorted by time",
            ));
        }
        if let Some(p) = self.publisher.iter().find(|&&p| p >= nodes) {
            return Err(EngineError::input(
                "schedule",
                format!("schedule names publisher {p} but there are {nodes} nodes"),
            ));
        }
        if let Some(t) = self.topic.iter().find(|&&t| t >= topics) {
            return Err(EngineError::input(
                "schedule",
                format!("schedule names topic {t} but there are {topics} topics"),
            ));
        }
        Ok(())
    }
}

/// Latency and loss of each edge in each direction: entry 2 i is edge i from dialer to
/// listener, 2 i + 1 the way back. Empty vectors mean "use the config's model".
#[derive(Clone, Debug, Default)]
pub struct EdgeProperties {
    pub latency_ns: Vec<Time>,
    pub loss: Vec<f64>,
}

impl EdgeProperties {
    fn check(&self, edges: usize) -> Result<(), EngineError> {
        for (name, len) in [
            ("edge_latency", self.latency_ns.len()),
            ("edge_loss", self.loss.len()),
        ] {
            if len != 0 && len != 2 * edges {
                return Err(EngineError::input(
                    name,
                    format!("{name} has {len} entries for {edges} edges (need 2 per edge)"),
                ));
            }
        }
        if let Some(p) = self.loss.iter().find(|p| !(0.0..1.0).contains(*p)) {
            return Err(EngineError::input(
                "edge_loss",
                format!("edge loss must be in [0, 1), got {p}"),
            ));
        }
        Ok(())
    }
}

/// One published message. Payload bytes are never materialised: only their size.
#[derive(Clone, Debug)]
pub struct Message {
    pub publisher: u32,
    pub topic: u16,
    pub size: u32,
    pub batch: u32,
    pub t_intended: Time,
    /// None until published.
    pub t_publish: Option<Time>,
    /// Payload copies received by all nodes (first receipts and duplicates).
    pub receipts: u64,
}

/// How a message reaches its recipients: flooding (floodsub, flood publish) ignores
/// IDONTWANT and never announces; mesh forwards honour both; fanout honours IDONTWANT.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Route {
    Flood,
    Mesh,
    Fanout,
}

/// A node's entry in its seen cache.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Seen {
    pub expire: Time,
    /// Full mode: row in the deliveries table. Aggregate mode: COUNTED or UNCOUNTED.
    /// Either mode: OWN for the node's own message.
    pub row: u32,
    pub hop: u16,
    /// Heartbeat count when the message entered the message cache (NOT_CACHED: never).
    pub cached_at: u32,
    /// Aggregate mode: copies received after the first (full mode counts them in the
    /// deliveries row). Fits in the entry's padding: the entry stays 24 bytes.
    pub dups: u32,
}

pub(crate) const NOT_CACHED: u32 = u32::MAX;

pub(crate) const OWN: u32 = u32::MAX;
/// Aggregate mode: a first receipt counted in the node totals and histograms...
pub(crate) const COUNTED: u32 = 0;
/// ...or one left out (a warm-up message, a receiver down during the message's
/// lifetime, or the message's own publisher after a restart).
pub(crate) const UNCOUNTED: u32 = u32::MAX - 1;
// A million messages stay in 100 nodes' seen caches for minutes: keep entries small.
const _: () = assert!(std::mem::size_of::<Seen>() == 24);

/// IWANT promises of one node: message -> (link asked, deadline).
pub(crate) type Promises = FxHashMap<u32, SmallVec<[(u32, Time); 2]>>;
/// go-libp2p-pubsub's timecache sweeps expired entries once a minute.
const SEEN_SWEEP_INTERVAL: Time = 60_000_000_000;

pub(crate) struct NodeState {
    pub rng: Rng,
    /// Bit t set: subscribed to topic t.
    pub subscribed: u64,
    pub seen: SeenCache,
    pub next_seen_sweep: Time,
    /// Per topic: links in the mesh.
    pub mesh: Vec<SmallVec<[u32; 16]>>,
    pub fanout: Vec<SmallVec<[u32; 16]>>,
    pub fanout_lastpub: Vec<Option<Time>>,
    /// (topic, link) -> backoff expiry.
    pub backoff: FxHashMap<(u16, u32), Time>,
    pub mcache: MessageCache,
    pub ticks: u64,
    /// When the node's CPU is next free to validate.
    pub cpu_free: Time,
    /// Copies queued for validation or being validated.
    pub cpu_pending: usize,
    /// Message -> links whose copies are in validation (go marks a message seen only
    /// once its first copy passed signature verification, so copies arriving meanwhile
    /// are validated too).
    pub validating: FxHashMap<u32, SmallVec<[u32; 4]>>,
    /// v1.2: (link, message) the peer said it does not want -> heartbeats left.
    pub unwanted: FxHashMap<(u32, u32), u8>,
    /// v2.0: messages announced to us that we are fetching with INEED.
    pub announced: FxHashMap<u32, Announced>,
    /// Down (crashed or left); see `faults.rs`.
    pub down: bool,
    pub misbehaviour: Option<Adversary>,
    /// Counter for the ids a spamming adversary invents.
    pub next_phantom: u32,
    /// Peer exchange: peers waiting to be dialed, and dials in progress.
    pub dial_queue: VecDeque<u32>,
    pub dials: SmallVec<[Dial; 2]>,
}

impl NodeState {
    pub fn is_subscribed(&self, topic: u16) -> bool {
        self.subscribed & (1 << topic) != 0
    }
}

pub struct Simulation {
    pub(crate) proto: ProtocolConfig,
    pub(crate) links: Links,
    pub(crate) net: Network,
    pub(crate) transport: Transport,
    pub(crate) queue: EventQueue,
    pub(crate) nodes: Vec<NodeState>,
    /// Topics the far end of each link has announced, as its owner knows them.
    pub(crate) link_topics: Vec<u64>,
    /// IDONTWANT RPCs received on each link this heartbeat (go's `peerdontsend`).
    pub(crate) link_dontsend: Vec<u32>,
    /// Links to a direct (explicit) peer, in both directions.
    pub(crate) link_direct: Vec<bool>,
    pub(crate) partitions: Vec<Partition>,
    /// IHAVE RPCs received on each link this heartbeat (go's `peerhave`).
    pub(crate) link_peerhave: Vec<u32>,
    /// Message ids asked for with IWANT on each link this heartbeat (go's `iasked`).
    pub(crate) link_iasked: Vec<u32>,
    pub(crate) messages: Vec<Message>,
    pub(crate) rpcs: RpcSlab,
    pub(crate) wire: WireSizes,
    pub(crate) out: Output,
    /// Peer scores, when scoring is on.
    pub(crate) scores: Option<Scores>,
    /// Per node: IWANT promises (go's gossip tracer).
    pub(crate) promises: Vec<Promises>,
    /// Per node: when its scores last decayed.
    pub(crate) last_decay: Vec<Time>,
    cpu_per_message: Vec<Time>,
    /// Some adversary sends invalid messages, of this many payload bytes.
    invalid_senders: bool,
    pub(crate) invalid_size: u32,
    /// Some node leaves a topic during the run (else every node is in every topic).
    subscriptions_change: bool,
    /// What links between any two nodes are made of (for connections opened later).
    pub(crate) placement: Option<Placement>,
    pub(crate) latency_model: LatencyModel,
    pub(crate) base_loss: f64,
    /// Latency draws for connections opened during the run, apart from the initial
    /// ones so that opening connections leaves the initial links' draws unchanged.
    pub(crate) dial_rng: Rng,
    /// Scoring: each node's application score (P5) and IP address (P6) as its peers
    /// see them; empty when nobody sets them.
    node_app_score: Vec<f64>,
    node_ip: Vec<u32>,
    topics: u16,
    end: Time,
    next_publish: usize,
}

impl Simulation {
    pub fn new(
        config: &Config,
        edges: &[(u32, u32)],
        schedule: &Schedule,
    ) -> Result<Self, EngineError> {
        Self::with_edge_properties(config, edges, &EdgeProperties::default(), schedule)
    }

    /// Like `new`, with latency and loss given per edge and direction (e.g. from a
    /// region matrix and node classes) instead of drawn from the config's model.
    pub fn with_edge_properties(
        config: &Config,
        edges: &[(u32, u32)],
        properties: &EdgeProperties,
        schedule: &Schedule,
    ) -> Result<Self, EngineError> {
        config.check()?;
        schedule.check(config.nodes, config.topics)?;
        properties.check(edges.len())?;
        let n = config.nodes;
        let placement = config.network.placement.as_ref();
        let mut latency_rng = Rng::for_stream(config.seed, "network.latency", 0);
        let links = Links::new(n, edges, |i| {
            if properties.latency_ns.is_empty() {
                let (a, b) = edges[i];
                pair_latency(&config.network.latency, placement, a, b, &mut latency_rng)
            } else {
                (
                    properties.latency_ns[2 * i],
                    properties.latency_ns[2 * i + 1],
                )
            }
        })?;
        let loss: Vec<f64> = if properties.loss.is_empty() {
            links
                .input_order
                .iter()
                .map(|&i| {
                    let (dialer, listener) = edges[i as usize / 2];
                    pair_loss(config.network.loss, placement, dialer, listener)
                })
                .collect()
        } else {
            links
                .input_order
                .iter()
                .map(|&i| properties.loss[i as usize])
                .collect()
        };
        let net = Network::new(&config.network, loss, config.seed);
        let proto = config.protocol.clone();
        let all_topics: u64 = if config.topics == 64 {
            u64::MAX
        } else {
            (1u64 << config.topics) - 1
        };
        let nodes = (0..n)
            .map(|i| NodeState {
                rng: Rng::for_stream(config.seed, "protocol", u64::from(i)),
                subscribed: all_topics,
                seen: SeenCache::default(),
                next_seen_sweep: SEEN_SWEEP_INTERVAL,
                mesh: vec![SmallVec::new(); config.topics as usize],
                fanout: vec![SmallVec::new(); config.topics as usize],
                fanout_lastpub: vec![None; config.topics as usize],
                backoff: FxHashMap::default(),
                mcache: MessageCache::new(proto.history_length.max(1)),
                ticks: 0,
                cpu_free: 0,
                cpu_pending: 0,
                validating: FxHashMap::default(),
                unwanted: FxHashMap::default(),
                announced: FxHashMap::default(),
                down: false,
                misbehaviour: config.adversaries.iter().find(|a| a.node == i).cloned(),
                next_phantom: 0,
                dial_queue: VecDeque::new(),
                dials: SmallVec::new(),
            })
            .collect();
        let messages = (0..schedule.len())
            .map(|i| Message {
                publisher: schedule.publisher[i],
                topic: schedule.topic[i],
                size: schedule.size[i],
                batch: schedule.batch[i],
                t_intended: schedule.t_intended_ns[i],
                t_publish: None,
                receipts: 0,
            })
            .collect();
        let out = Output {
            receipts: config.output.receipts.then(Receipts::default),
            traffic: vec![Default::default(); n as usize],
            aggregates: (config.output.mode == OutputMode::Aggregate)
                .then(|| Aggregates::new(config, schedule.len())),
            ..Default::default()
        };
        let link_count = links.len();
        let mut link_direct = vec![false; link_count];
        for &(a, b) in &config.protocol.direct_peers {
            let (Some(ab), Some(ba)) = (links.find(a, b), links.find(b, a)) else {
                return Err(EngineError::config(
                    "protocol.direct_peers",
                    format!("direct peers {a} and {b} are not connected"),
                ));
            };
            link_direct[ab as usize] = true;
            link_direct[ba as usize] = true;
        }
        let mut sim = Self {
            wire: WireSizes::new(&proto),
            transport: Transport::new(n as usize, link_count),
            scores: config
                .protocol
                .score
                .clone()
                .filter(|_| config.protocol.version >= Version::V1_1)
                .map(|params| Scores::new(params, link_count, config.topics as usize)),
            promises: vec![FxHashMap::default(); n as usize],
            last_decay: vec![0; n as usize],
            proto,
            links,
            net,
            queue: EventQueue::new(n as usize),
            nodes,
            link_topics: vec![0; link_count],
            link_peerhave: vec![0; link_count],
            link_dontsend: vec![0; link_count],
            link_direct,
            partitions: partitions(config),
            link_iasked: vec![0; link_count],
            messages,
            rpcs: RpcSlab::default(),
            out,
            cpu_per_message: config.network.cpu_per_message_ns.clone(),
            subscriptions_change: !config.subscription_changes.is_empty(),
            invalid_senders: config
                .adversaries
                .iter()
                .any(|a| a.behaviour == Misbehaviour::SpamInvalid),
            invalid_size: config
                .adversaries
                .iter()
                .find(|a| a.behaviour == Misbehaviour::SpamInvalid)
                .map_or(0, |a| a.spam_size),
            placement: config.network.placement.clone(),
            latency_model: config.network.latency.clone(),
            base_loss: config.network.loss,
            dial_rng: Rng::for_stream(config.seed, "network.latency.dialed", 0),
            node_app_score: app_scores(config),
            node_ip: ip_addresses(config),
            topics: config.topics,
            end: config.end_ns,
            next_publish: 0,
        };
        if !sim.node_app_score.is_empty() {
            for link in 0..sim.links.len() as u32 {
                sim.init_peer_scores(link);
            }
        }
        for node in 0..n {
            sim.refresh_colocation(node);
        }
        sim.start();
        sim.schedule_faults(&config.faults);
        sim.schedule_subscription_changes(&config.subscription_changes);
        Ok(sim)
    }

    /// Connections open at time 0: every node announces its subscriptions (the hello
    /// RPC), gossipsub nodes start their heartbeats, and the first publication is queued.
    fn start(&mut self) {
        for node in 0..self.nodes.len() as u32 {
            self.send_hello(node);
            if self.proto.router == Router::Gossipsub {
                // Real nodes do not start in the same nanosecond: each heartbeat timer
                // gets a random phase within one interval after the initial delay.
                let phase = self.nodes[node as usize].rng.below(self.proto.heartbeat_ns);
                let first = self.proto.heartbeat_initial_delay_ns + phase;
                if first <= self.end {
                    self.queue.push(first, node, Event::Heartbeat { node });
                }
            }
        }
        self.queue_next_publish();
    }

    fn queue_next_publish(&mut self) {
        if let Some(m) = self.messages.get(self.next_publish) {
            let source = self.queue.workload_source();
            self.queue.push(
                m.t_intended,
                source,
                Event::Publish {
                    msg: self.next_publish as u32,
                },
            );
            self.next_publish += 1;
        }
    }

    pub fn now(&self) -> Time {
        self.queue.now()
    }

    pub fn end(&self) -> Time {
        self.end
    }

    pub(crate) fn topics(&self) -> u16 {
        self.topics
    }

    /// Events processed so far.
    pub fn events(&self) -> u64 {
        self.queue.popped()
    }

    pub fn is_finished(&self) -> bool {
        self.queue.peek_time().is_none_or(|t| t > self.end)
    }

    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    pub fn output(&self) -> &Output {
        &self.out
    }

    /// Aggregate mode: the final duplicate counts and latency bins, counting the pairs
    /// nodes still remember as final now. None in full mode.
    pub fn aggregate_tables(&self) -> Option<AggregateTables> {
        let aggregates = self.out.aggregates.as_ref()?;
        let live = self.nodes.iter().enumerate().flat_map(|(node, state)| {
            state
                .seen
                .values()
                .filter(|s| s.row == COUNTED)
                .map(move |s| (node as u32, s.dups))
        });
        Some(AggregateTables::new(aggregates, live))
    }

    /// Peers in `node`'s mesh for `topic`, sorted (for inspection and tests).
    pub fn mesh_peers(&self, node: u32, topic: u16) -> Vec<u32> {
        let mut peers: Vec<u32> = self.nodes[node as usize].mesh[topic as usize]
            .iter()
            .map(|&l| self.links.peer[l as usize])
            .collect();
        peers.sort_unstable();
        peers
    }

    /// Process every event up to and including `until` (capped at the run's end).
    pub fn run_until(&mut self, until: Time) {
        let until = until.min(self.end);
        while let Some(t) = self.queue.peek_time() {
            if t > until {
                break;
            }
            let (_, event) = self.queue.pop().expect("peeked");
            self.dispatch(event);
        }
    }

    pub fn run(&mut self) {
        self.run_until(self.end);
    }

    fn dispatch(&mut self, event: Event) {
        match event {
            Event::Arrive { link, rpc } => {
                let receiver = self.links.peer[link as usize];
                let bytes = self.rpcs.get(rpc).total_bytes();
                let done = self.net.read(self.now(), receiver, bytes);
                self.queue
                    .push(done, receiver, Event::Receive { link, rpc });
            }
            Event::Receive { link, rpc } => self.receive(link, rpc),
            Event::UplinkDone { node } => self.uplink_done(node),
            Event::Validated {
                node,
                msg,
                link,
                hop,
            } => self.validated(node, msg, link, hop),
            Event::DelayedForward { node, msg, link } => self.delayed_forward(node, msg, link),
            Event::IneedTimeout { node, msg, attempt } => {
                if !self.is_down(node) {
                    self.ineed_timeout(node, msg, attempt);
                }
            }
            Event::DialDone { node, peer } => self.dial_done(node, peer),
            Event::Subscription {
                node,
                topic,
                subscribe,
            } => self.change_subscription(node, topic, subscribe),
            Event::Down { node } => self.go_down(node),
            Event::Up { node } => self.come_up(node),
            Event::Heartbeat { node } => {
                if !self.is_down(node) {
                    self.heartbeat(node);
                }
                let next = self.now() + self.proto.heartbeat_ns;
                if next <= self.end {
                    self.queue.push(next, node, Event::Heartbeat { node });
                }
            }
            Event::Publish { msg } => {
                self.publish(msg);
                self.queue_next_publish();
            }
        }
    }

    /// Send control parts on `link` in an RPC of their own.
    pub(crate) fn send_control(&mut self, sender: u32, link: u32, control: Control) {
        let rpc = self.rpcs.alloc();
        self.rpcs.get_mut(rpc).control = control;
        self.send(sender, link, rpc);
    }

    /// Send one message on `link` in an RPC of its own.
    pub(crate) fn send_message(&mut self, sender: u32, link: u32, msg: u32, hop: u16) {
        let rpc = self.rpcs.alloc();
        self.rpcs.get_mut(rpc).msgs.push(MsgRef { msg, hop });
        self.send(sender, link, rpc);
    }

    #[inline]
    fn receive(&mut self, link: u32, rpc_id: u32) {
        let receiver = self.links.peer[link as usize];
        let sender = self.links.owner[link as usize];
        let back = self.links.reverse[link as usize];
        if self.is_down(receiver) {
            self.rpcs.free(rpc_id);
            return;
        }
        // Copy out the small parts and take the control part, then recycle the RPC in
        // place: moving whole RPCs in and out of the slab showed up in profiles.
        let rpc = self.rpcs.get_mut(rpc_id);
        let counters = &mut self.out.traffic[receiver as usize];
        for (k, c) in counters.iter_mut().enumerate() {
            c.msgs_recv += rpc.items[k];
            c.bytes_recv += rpc.bytes[k];
        }
        for &topic in &rpc.subscribe {
            self.link_topics[back as usize] |= 1 << topic;
        }
        for &topic in &rpc.unsubscribe {
            self.link_topics[back as usize] &= !(1 << topic);
        }
        let msgs = rpc.msgs.clone();
        let control = (!rpc.control.is_empty()).then(|| std::mem::take(&mut rpc.control));
        self.rpcs.free(rpc_id);
        // A graylisted peer's messages and control are ignored; its subscriptions count.
        let direct = self.link_direct[back as usize];
        if self.scores.is_some() && !direct && self.score(back) < self.thresholds().graylist {
            if !msgs.is_empty() || control.is_some() {
                self.count_drop(receiver, sender, Kind::Payload, "graylisted");
            }
            return;
        }
        let mut msgs = msgs;
        if self.invalid_senders || self.subscriptions_change {
            self.set_aside_unusual(receiver, back, sender, &mut msgs);
        }
        if self.proto.router == Router::Gossipsub && !msgs.is_empty() {
            self.preprocess(receiver, back, &msgs);
        }
        for m in &msgs {
            self.receive_payload(receiver, back, sender, *m);
        }
        if let Some(control) = control.filter(|_| self.proto.router == Router::Gossipsub) {
            self.handle_control(receiver, back, &control);
        }
    }

    /// Take out of `msgs` what `receiver` does not process as usual: invalid messages an
    /// adversary made up (validated, then rejected) and messages of topics it is not in
    /// (ignored, as go does). Kept out of `receive`, whose common case it would slow.
    #[cold]
    #[inline(never)]
    fn set_aside_unusual(
        &mut self,
        receiver: u32,
        back: u32,
        sender: u32,
        msgs: &mut SmallVec<[MsgRef; 2]>,
    ) {
        let known = self.messages.len() as u32;
        for m in msgs.iter().filter(|m| m.msg >= known) {
            self.receive_invalid(receiver, back, sender, m.msg);
        }
        msgs.retain(|m| m.msg < known);
        let subscribed = self.nodes[receiver as usize].subscribed;
        let messages = &self.messages;
        let before = msgs.len();
        msgs.retain(|m| subscribed & (1u64 << messages[m.msg as usize].topic) != 0);
        for _ in msgs.len()..before {
            self.count_drop(receiver, sender, Kind::Payload, "not-subscribed");
        }
    }

    fn receive_payload(&mut self, node: u32, back: u32, sender: u32, m: MsgRef) {
        let now = self.now();
        self.messages[m.msg as usize].receipts += 1;
        self.sweep_seen(node);
        let seen = self.seen_counting_duplicate(node, m.msg);
        let state = &self.nodes[node as usize];
        let duplicate = seen.is_some() || state.validating.contains_key(&m.msg);
        if let Some(r) = &mut self.out.receipts {
            r.msg.push(m.msg);
            r.node.push(node);
            r.from_node.push(sender);
            r.t_ns.push(now as i64);
            r.duplicate.push(duplicate);
        }
        let hop = m.hop.saturating_add(1);
        if let Some(seen) = seen {
            self.count_duplicate(seen);
            self.score_duplicate(back, m.msg, seen);
            return;
        }
        if !self.queue_for_validation(node, back, sender, m.msg, hop) {
            self.accept(node, back, m.msg, hop);
        }
    }

    /// Validation takes CPU time: put the copy of `msg` from `back` in `node`'s queue,
    /// which its CPU works through in order; go drops a message outright when the queue
    /// is full. Returns false when validating costs no time: the copy is validated now.
    #[inline]
    fn queue_for_validation(
        &mut self,
        node: u32,
        back: u32,
        sender: u32,
        msg: u32,
        hop: u16,
    ) -> bool {
        let cpu = self.cpu_per_message[node as usize];
        if cpu == 0 {
            return false;
        }
        let now = self.now();
        let state = &mut self.nodes[node as usize];
        // One copy is in service; `validate_queue` more may wait.
        if state.cpu_pending > self.proto.validate_queue {
            self.count_drop(node, sender, Kind::Payload, "validation-queue-full");
            return true;
        }
        let done = now.max(state.cpu_free) + cpu;
        state.cpu_free = done;
        state.cpu_pending += 1;
        state.validating.entry(msg).or_default().push(back);
        let event = Event::Validated {
            node,
            msg,
            link: back,
            hop,
        };
        self.queue.push(done, node, event);
        true
    }

    /// A message an adversary made up: validated like any other (its CPU cost and place
    /// in the validation queue are the attack), then rejected.
    fn receive_invalid(&mut self, node: u32, back: u32, sender: u32, msg: u32) {
        if !self.queue_for_validation(node, back, sender, msg, 0) {
            self.reject(node, back, msg);
        }
    }

    /// An invalid message failed validation: the peer that sent it pays (P4, go's
    /// `RejectMessage`), and it goes no further.
    fn reject(&mut self, node: u32, back: u32, msg: u32) {
        let topic = self.invalid_topic(msg);
        if let Some(scores) = &mut self.scores {
            scores.invalid_delivery(back, topic);
        }
        let sender = self.links.peer[back as usize];
        self.count_drop(node, sender, Kind::Payload, "rejected-invalid");
    }

    /// A copy finished validation: the first one is delivered, later ones are duplicates.
    fn validated(&mut self, node: u32, msg: u32, back: u32, hop: u16) {
        let state = &mut self.nodes[node as usize];
        // A node that went down (and maybe restarted) meanwhile lost this work.
        let Some(copies) = state.validating.get_mut(&msg) else {
            return;
        };
        let Some(i) = copies.iter().position(|&l| l == back) else {
            return;
        };
        state.cpu_pending -= 1;
        copies.remove(i);
        if copies.is_empty() {
            state.validating.remove(&msg);
        }
        if state.down {
            return; // validated by a node that is down: nobody will ever see it
        }
        if msg >= self.messages.len() as u32 {
            self.reject(node, back, msg);
            return;
        }
        match self.seen_counting_duplicate(node, msg) {
            Some(seen) => self.count_duplicate(seen),
            None => self.accept(node, back, msg, hop),
        }
    }

    /// A copy after the first counts for the sender's mesh deliveries (P3) if it came
    /// within the delivery window of the first's validation.
    fn score_duplicate(&mut self, back: u32, msg: u32, seen: Seen) {
        let now = self.now();
        let topic = self.messages[msg as usize].topic;
        let validated = seen.expire - self.proto.seen_ttl_ns;
        if let Some(scores) = &mut self.scores {
            if seen.row != OWN && now <= validated + scores.window() {
                scores.near_first_delivery(back, topic);
            }
        }
    }

    /// `node`'s seen entry for `msg`, if it has one; a copy arriving now is then a
    /// duplicate, which aggregate mode counts in the entry (one lookup for both).
    #[inline]
    fn seen_counting_duplicate(&mut self, node: u32, msg: u32) -> Option<Seen> {
        let aggregate = self.out.aggregates.is_some();
        let seen = self.nodes[node as usize].seen.get_mut(&msg)?;
        if aggregate && seen.row != OWN {
            seen.dups += 1;
        }
        Some(*seen)
    }

    /// Full mode: count a duplicate in the first receipt's row.
    fn count_duplicate(&mut self, seen: Seen) {
        if seen.row != OWN && self.out.aggregates.is_none() {
            self.out.deliveries.duplicates[seen.row as usize] += 1;
        }
    }

    /// First valid copy of `msg` at `node`, received on its link `back`: deliver, mark
    /// seen, relay.
    fn accept(&mut self, node: u32, back: u32, msg: u32, hop: u16) {
        let now = self.now();
        let sender = self.links.peer[back as usize];
        let row = match &mut self.out.aggregates {
            None => self.out.deliveries.push(msg, node, now, sender, hop),
            Some(aggregates) => {
                if aggregates.first_receipt(msg, &self.messages[msg as usize], node, now, hop) {
                    COUNTED
                } else {
                    UNCOUNTED
                }
            }
        };
        let expire = now + self.proto.seen_ttl_ns;
        let seen = Seen {
            expire,
            row,
            hop,
            cached_at: NOT_CACHED,
            dups: 0,
        };
        self.nodes[node as usize].seen.insert(msg, seen);
        if let Some(scores) = &mut self.scores {
            // First delivery for the sender; copies that were still in validation count
            // as near-first deliveries for theirs (go's DeliverMessage).
            let topic = self.messages[msg as usize].topic;
            scores.first_delivery(back, topic);
            if let Some(others) = self.nodes[node as usize].validating.get(&msg) {
                for &other in others.iter().filter(|&&l| l != back) {
                    scores.near_first_delivery(other, topic);
                }
            }
            self.promises[node as usize].remove(&msg);
        }
        let delay = self.nodes[node as usize]
            .misbehaviour
            .as_ref()
            .filter(|a| a.behaviour == Misbehaviour::DelayForwards)
            .map(|a| a.delay_ns);
        if let Some(delay) = delay {
            self.queue.push(
                now + delay,
                node,
                Event::DelayedForward {
                    node,
                    msg,
                    link: back,
                },
            );
            return;
        }
        self.forward(node, msg, Some(back));
    }

    /// Drop expired seen entries, at most once a minute, as go's timecache does (so
    /// the effective TTL is between seen_ttl and seen_ttl + 1 min).
    fn sweep_seen(&mut self, node: u32) {
        let now = self.now();
        let state = &mut self.nodes[node as usize];
        if now >= state.next_seen_sweep {
            match &mut self.out.aggregates {
                None => state.seen.retain(|_, s| s.expire > now),
                // A forgotten message's duplicate count at this node is final.
                Some(aggregates) => state.seen.retain(|_, s| {
                    let keep = s.expire > now;
                    if !keep && s.row == COUNTED {
                        aggregates.duplicates_final(node, s.dups);
                    }
                    keep
                }),
            }
            state.next_seen_sweep = now + SEEN_SWEEP_INTERVAL;
        }
    }

    /// Aggregate mode: `node` forgets every message (a restart); their duplicate counts
    /// are final.
    pub(crate) fn forget_seen(&mut self, node: u32) {
        let state = &mut self.nodes[node as usize];
        if let Some(aggregates) = &mut self.out.aggregates {
            for s in state.seen.values().filter(|s| s.row == COUNTED) {
                aggregates.duplicates_final(node, s.dups);
            }
        }
        state.seen.clear();
    }

    /// The workload publishes `msg` at its publisher.
    fn publish(&mut self, msg: u32) {
        let now = self.now();
        let publisher = self.messages[msg as usize].publisher;
        if self.is_down(publisher) {
            return; // a node that is down publishes nothing: t_publish stays unset
        }
        self.messages[msg as usize].t_publish = Some(now);
        if let Some(aggregates) = &mut self.out.aggregates {
            let topic = self.messages[msg as usize].topic;
            aggregates.published(msg, publisher, now, topic);
        }
        self.sweep_seen(publisher);
        let expire = now + self.proto.seen_ttl_ns;
        let seen = Seen {
            expire,
            row: OWN,
            hop: 0,
            cached_at: NOT_CACHED,
            dups: 0,
        };
        self.nodes[publisher as usize].seen.insert(msg, seen);
        // go (since v0.14.0) sends IDONTWANT for its own large messages too.
        self.send_idontwant(publisher, None, &[msg]);
        self.forward(publisher, msg, None);
    }

    /// Relay (or, with `from` = None, publish) a validated message.
    pub(crate) fn forward(&mut self, node: u32, msg: u32, from: Option<u32>) {
        let own = from.is_none();
        if !own && self.misbehaves(node, Misbehaviour::DropForwards) {
            return;
        }
        let (topic, publisher) = {
            let m = &self.messages[msg as usize];
            (m.topic, m.publisher)
        };
        let hop = self.nodes[node as usize]
            .seen
            .get(&msg)
            .map_or(0, |s| s.hop);
        let (recipients, route) = match self.proto.router {
            Router::Floodsub => (self.topic_links(node, topic).collect(), Route::Flood),
            Router::Gossipsub => self.gossipsub_recipients(node, msg, topic, own),
        };
        for link in recipients {
            // Never back to the peer it came from, nor to its author.
            if Some(link) == from || self.links.peer[link as usize] == publisher {
                continue;
            }
            // Direct peers always get the full message, IDONTWANT or not.
            let direct = self.link_direct[link as usize];
            if route != Route::Flood && !direct && self.unwanted(node, link, msg) {
                continue;
            }
            if route == Route::Mesh && !direct && self.announce_instead(node, own) {
                self.send_announce(node, link, msg);
                continue;
            }
            self.send_message(node, link, msg, hop);
        }
    }

    /// Score state `link`'s owner keeps about the peer from the start: its P5.
    pub(crate) fn init_peer_scores(&mut self, link: u32) {
        let peer = self.links.peer[link as usize] as usize;
        if let (Some(scores), Some(&app)) = (&mut self.scores, self.node_app_score.get(peer)) {
            scores.set_app_score(link, app);
        }
    }

    /// P6: count, for each of `node`'s links, its peers behind the same address.
    pub(crate) fn refresh_colocation(&mut self, node: u32) {
        let Some(scores) = &mut self.scores else {
            return;
        };
        if self.node_ip.is_empty() {
            return;
        }
        let mut per_ip: FxHashMap<u32, u32> = FxHashMap::default();
        for link in self.links.of(node) {
            *per_ip
                .entry(self.node_ip[self.links.peer[link as usize] as usize])
                .or_default() += 1;
        }
        for link in self.links.of(node) {
            let ip = self.node_ip[self.links.peer[link as usize] as usize];
            scores.set_colocated(link, per_ip[&ip]);
        }
    }

    /// Links of `node` whose peer has announced `topic`.
    pub(crate) fn topic_links(&self, node: u32, topic: u16) -> impl Iterator<Item = u32> + '_ {
        self.links
            .of(node)
            .filter(move |&l| self.link_topics[l as usize] & (1 << topic) != 0)
    }

    pub(crate) fn version_at_least(&self, v: Version) -> bool {
        self.proto.version >= v
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
