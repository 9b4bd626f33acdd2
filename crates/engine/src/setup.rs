//! Building a simulation from a config, the topology's edges and the schedule, and the
//! first events: every connection's hello, the heartbeats, the first publication.

use crate::aggregate::Aggregates;
use crate::config::{Config, DownlinkSharing, Misbehaviour, OutputMode};
use crate::cpu::Cpu;
use crate::error::EngineError;
use crate::event_loop::NodeLoop;
use crate::inputs::{EdgeProperties, Message, Schedule};
use crate::links::Links;
use crate::network::{initial_window_bytes, pair_latency, pair_loss, partitions, Network};
use crate::node::NodeState;
use crate::output::{MessageTraffic, Output, Receipts};
use crate::partial::Partial;
use crate::queue::{Event, EventQueue};
use crate::rng::Rng;
use crate::router::Router;
use crate::rpc::RpcSlab;
use crate::sim::Simulation;
use crate::transport::Transport;
use crate::wire::WireSizes;

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
        let links = build_links(config, edges, properties)?;
        let loss = link_loss(config, edges, properties, &links);
        let net = Network::new(&config.network, loss, config.seed);
        let direct = direct_links(config, &links)?;
        let router = Router::new(config, &links, direct);
        let all_topics: u64 = if config.topics == 64 {
            u64::MAX
        } else {
            (1u64 << config.topics) - 1
        };
        let nodes = (0..n)
            .map(|i| {
                let adversary = config.adversaries.iter().find(|a| a.node == i).cloned();
                NodeState::new(all_topics, adversary)
            })
            .collect();
        let invalid = config
            .adversaries
            .iter()
            .find(|a| a.behaviour == Misbehaviour::SpamInvalid);
        let partial = match &config.partial {
            Some(cfg) => Some(Box::new(Partial::new(cfg, n)?)),
            None => None,
        };
        let mut wire = WireSizes::new(&config.protocol);
        if let Some(cfg) = &config.partial {
            wire = wire.with_partial(u64::from(cfg.parts), cfg.part_bytes, cfg.group_id_size);
        }
        if config.cpu.event_loop {
            crate::event_loop::check_rpc_sizes(&wire, &schedule.size)?;
        }
        let mut sim = Self {
            wire,
            transport: Transport::new(
                n as usize,
                links.len(),
                config.network.uplink_sharing,
                config.network.send_buffer_bytes,
                config.network.downlink_sharing == DownlinkSharing::Packets,
            )
            .with_initial_window(initial_window_bytes(config.network.initial_window_segments)),
            proto: config.protocol.clone(),
            links,
            net,
            queue: EventQueue::new(n as usize),
            nodes,
            router,
            partitions: partitions(config),
            messages: messages(schedule),
            rpcs: RpcSlab::default(),
            actions: Vec::new(),
            dials: Vec::new(),
            out: output(config, schedule),
            cpu_per_message: config
                .network
                .cpu_per_message_ns
                .iter()
                .map(|c| c + config.cpu.per_copy_ns)
                .collect(),
            cpu: Cpu::new(&config.cpu, n, config.seed, config.end_ns),
            loops: if config.cpu.event_loop {
                (0..n).map(|i| NodeLoop::new(config.seed, i)).collect()
            } else {
                Vec::new()
            },
            windows: Vec::new(),
            subscriptions_change: !config.subscription_changes.is_empty(),
            invalid_senders: invalid.is_some(),
            invalid_size: invalid.map_or(0, |a| a.spam_size),
            placement: config.network.placement.clone(),
            latency_model: config.network.latency.clone(),
            base_loss: config.network.loss,
            dial_rng: Rng::for_stream(config.seed, "network.latency.dialed", 0),
            topics: config.topics,
            end: config.end_ns,
            next_publish: 0,
            partial,
        };
        sim.start(config.network.connect_round_trips);
        sim.schedule_faults(&config.faults);
        sim.schedule_subscription_changes(&config.subscription_changes);
        Ok(sim)
    }

    /// The topology's connections are dialed at time 0: every node announces its
    /// subscriptions (the hello RPC) on each as soon as its end is up, gossipsub nodes
    /// start their heartbeats, and the first publication is queued.
    fn start(&mut self, connect_round_trips: u64) {
        for node in 0..self.nodes.len() as u32 {
            if connect_round_trips == 0 {
                self.send_hello(node);
            } else {
                self.schedule_hellos(node, connect_round_trips);
            }
            if self.router.is_gossipsub() {
                // Real nodes do not start in the same nanosecond: each heartbeat timer
                // gets a random phase within one interval after the initial delay.
                let rng = &mut self.router.nodes[node as usize].rng;
                let phase = rng.below(self.proto.heartbeat_ns);
                let first = self.proto.heartbeat_initial_delay_ns + phase;
                if first <= self.end {
                    self.queue.push(first, node, Event::Heartbeat { node });
                }
            }
        }
        self.queue_next_publish();
    }
}

impl Simulation {
    /// When each end of `node`'s connections is up, measured on go-libp2p v0.51.0 over
    /// QUIC in simnet (docs/protocol.md, "Connections"): the dialer opens its pub/sub
    /// stream and sends its hello `trips` round trips after the dial (the QUIC
    /// handshake, then multistream-select of the pub/sub protocol: go-libp2p-pubsub's
    /// `handleNewPeer` offers several protocol ids, so the stream waits for the answer);
    /// the listener learns of the connection from the dialer's last handshake packet, one
    /// latency later, and does the same. Until a hello arrives the peer's topics are
    /// unknown, so heartbeats neither graft nor gossip to it (go's `getPeers` reads the
    /// topics its peers announced).
    fn schedule_hellos(&mut self, node: u32, trips: u64) {
        for link in self.links.of(node) {
            let there = self.links.latency[link as usize];
            let back = self.links.latency[self.links.reverse[link as usize] as usize];
            let mut up = trips * (there + back);
            if !self.links.outbound[link as usize] {
                up += back; // the dialer's last handshake packet travels peer -> node
            }
            if up <= self.end {
                self.queue.push(up, node, Event::Hello { link });
            }
        }
    }

    /// `link`'s owner has its end of the connection up: the hello goes out, unless the
    /// node is down by then (it says hello again when it comes back).
    pub(crate) fn connection_up(&mut self, link: u32) {
        let node = self.links.owner[link as usize];
        if !self.is_down(node) {
            self.send_hello_on(node, link);
        }
    }
}

/// The directed links of the topology, with each direction's latency.
fn build_links(
    config: &Config,
    edges: &[(u32, u32)],
    properties: &EdgeProperties,
) -> Result<Links, EngineError> {
    let placement = config.network.placement.as_ref();
    let mut latency_rng = Rng::for_stream(config.seed, "network.latency", 0);
    Links::new(config.nodes, edges, |i| {
        if properties.latency_ns.is_empty() {
            let (a, b) = edges[i];
            pair_latency(&config.network.latency, placement, a, b, &mut latency_rng)
        } else {
            (
                properties.latency_ns[2 * i],
                properties.latency_ns[2 * i + 1],
            )
        }
    })
}

/// Each directed link's segment loss, in link order.
fn link_loss(
    config: &Config,
    edges: &[(u32, u32)],
    properties: &EdgeProperties,
    links: &Links,
) -> Vec<f64> {
    let placement = config.network.placement.as_ref();
    if properties.loss.is_empty() {
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
    }
}

/// Links to a direct (explicit) peer, in both directions.
fn direct_links(config: &Config, links: &Links) -> Result<Vec<bool>, EngineError> {
    let mut direct = vec![false; links.len()];
    for &(a, b) in &config.protocol.direct_peers {
        let (Some(ab), Some(ba)) = (links.find(a, b), links.find(b, a)) else {
            return Err(EngineError::config(
                "protocol.direct_peers",
                format!("direct peers {a} and {b} are not connected"),
            ));
        };
        direct[ab as usize] = true;
        direct[ba as usize] = true;
    }
    Ok(direct)
}

fn messages(schedule: &Schedule) -> Vec<Message> {
    (0..schedule.len())
        .map(|i| Message {
            publisher: schedule.publisher[i],
            topic: schedule.topic[i],
            size: schedule.size[i],
            batch: schedule.batch[i],
            t_intended: schedule.t_intended_ns[i],
            t_publish: None,
            receipts: 0,
        })
        .collect()
}

fn output(config: &Config, schedule: &Schedule) -> Output {
    Output {
        receipts: config.output.receipts.then(Receipts::default),
        traffic: vec![Default::default(); config.nodes as usize],
        aggregates: (config.output.mode == OutputMode::Aggregate)
            .then(|| Aggregates::new(config, schedule.len())),
        message_traffic: config
            .output
            .message_traffic
            .then(|| MessageTraffic::new(schedule.len())),
        ..Default::default()
    }
}
