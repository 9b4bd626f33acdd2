//! The simulation: the network (links, uplinks, loss, CPU, the event queue) and the
//! nodes, each with a host side (`node.rs`) and a router (`router/`).
//!
//! The loop pops events and hands each to the part it concerns: arrivals to the node's
//! input (`receive.rs`), uplink turns to its output (`send.rs`), timers and
//! control to the router. A router acts through its outbox; `with_router` lends it
//! the world for one call and then carries out what it wrote, in order.

use crate::aggregate::AggregateTables;
use crate::config::{LatencyModel, Placement, ProtocolConfig, Time};
use crate::cpu::Cpu;
use crate::cpu_use::CpuSamples;
use crate::event_loop::NodeLoop;
pub use crate::inputs::{EdgeProperties, Message, Schedule};
use crate::links::Links;
use crate::network::{Network, Partition};
use crate::node::NodeState;
use crate::outbox::{Action, Outbox};
use crate::output::Output;
use crate::queue::{Event, EventQueue};
use crate::rng::Rng;
use crate::router::{Ctx, Router};
use crate::rpc::{Control, RpcSlab};
use crate::seen::COUNTED;
use crate::stream_window::StreamWindow;
use crate::transport::Transport;
use crate::wire::WireSizes;

pub struct Simulation {
    pub(crate) proto: ProtocolConfig,
    pub(crate) links: Links,
    pub(crate) net: Network,
    pub(crate) transport: Transport,
    pub(crate) queue: EventQueue,
    /// Host side of each node.
    pub(crate) nodes: Vec<NodeState>,
    /// Every node's router.
    pub(crate) router: Router,
    pub(crate) partitions: Vec<Partition>,
    pub(crate) messages: Vec<Message>,
    pub(crate) rpcs: RpcSlab,
    /// What the router being called asked for; carried out when it returns.
    pub(crate) actions: Vec<Action>,
    /// Peers the router being called asked to dial.
    pub(crate) dials: Vec<u32>,
    pub(crate) wire: WireSizes,
    pub(crate) out: Output,
    pub(crate) cpu_per_message: Vec<Time>,
    /// Hosts, cores and the CPU costs of receiving, sending and publishing.
    pub(crate) cpu: Cpu,
    /// Each node's event loop, with `cpu.event_loop` (else empty).
    pub(crate) loops: Vec<NodeLoop>,
    /// Each directed link's yamux stream window, with `cpu.event_loop` (grown on use).
    pub(crate) windows: Vec<StreamWindow>,
    /// Some adversary sends invalid messages, of this many payload bytes.
    pub(crate) invalid_senders: bool,
    pub(crate) invalid_size: u32,
    /// Some node leaves a topic during the run (else every node is in every topic).
    pub(crate) subscriptions_change: bool,
    /// What links between any two nodes are made of (for connections opened later).
    pub(crate) placement: Option<Placement>,
    pub(crate) latency_model: LatencyModel,
    pub(crate) base_loss: f64,
    /// Latency draws for connections opened during the run, apart from the initial
    /// ones so that opening connections leaves the initial links' draws unchanged.
    pub(crate) dial_rng: Rng,
    pub(crate) topics: u16,
    pub(crate) end: Time,
    pub(crate) next_publish: usize,
    /// v1.3 partial messages (None: every message is sent whole).
    pub(crate) partial: Option<Box<crate::partial::Partial>>,
}

impl Simulation {
    pub(crate) fn queue_next_publish(&mut self) {
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

    /// Each node's cumulative CPU time at every whole second and at the end of the run
    /// (`cpu_use.rs`), with its threads' switches on time-sliced hosts; None when the
    /// scenario charges no CPU.
    pub fn cpu_samples(&self) -> Option<CpuSamples> {
        let charges = self.cpu.costs.charges() || self.cpu_per_message.iter().any(|&c| c > 0);
        charges.then(|| self.cpu.samples())
    }

    /// The waits recorded for the nodes in `cpu.record_waits`: their goroutines' for
    /// their P and their own for a core (`goroutines::Waited`).
    pub fn goroutine_waits(&self) -> Vec<crate::goroutines::Waited> {
        self.cpu.goroutine_waits()
    }

    /// Peers in `node`'s mesh for `topic`, sorted (for inspection and tests).
    pub fn mesh_peers(&self, node: u32, topic: u16) -> Vec<u32> {
        let mut peers: Vec<u32> = self.router.nodes[node as usize].mesh[topic as usize]
            .iter()
            .map(|&l| self.links.peer[l as usize])
            .collect();
        peers.sort_unstable();
        peers
    }

    /// Process every event up to and including `until` (capped at the run's end).
    pub fn run_until(&mut self, until: Time) {
        let until = until.min(self.end);
        while let Some((_, event)) = self.queue.pop_due(until) {
            self.dispatch(event);
        }
    }

    pub fn run(&mut self) {
        self.run_until(self.end);
    }

    fn dispatch(&mut self, event: Event) {
        match event {
            Event::Arrive { link, rpc } => self.arrive_at_downlink(link, rpc),
            Event::DownlinkRead { node, generation } => self.downlink_read(node, generation),
            Event::PieceArrive { link, bytes, rpc } => self.piece_arrive(link, bytes, rpc),
            Event::AckArrive { link, bytes } => self.ack_arrive(link, bytes),
            Event::UpdateArrive { link, delta } => self.update_arrive(link, delta),
            Event::Receive { link, rpc } => {
                if self.cpu.charges_receiving() || !self.loops.is_empty() {
                    self.decode(link, rpc);
                } else {
                    self.receive(link, rpc);
                }
            }
            Event::Decoded { link, rpc } => {
                self.receive(link, rpc);
                if !self.loops.is_empty() {
                    self.loop_next(self.links.peer[link as usize]);
                }
            }
            Event::Read { link, rpc } => self.hand_to_loop(link, rpc),
            Event::Demuxed { link, rpc } => self.read_stream(link, rpc),
            Event::SysmonWake { node } => self.cpu.sysmon_wake(&mut self.queue, node),
            Event::AppRead { node } => self.app_read(node),
            Event::Packet { link } => self.packet_arrived(link),
            Event::PacketRead => {}
            Event::WindowUpdate { link, delta } => self.window_update(link, u64::from(delta)),
            Event::LoopValidated {
                node,
                msg,
                link,
                hop,
            } => {
                self.publish_validated(node, msg, link, hop, false);
                self.count_marked_duplicates(node, msg);
                self.loop_next(node);
            }
            Event::Encoded { link } => self.encoded(link),
            Event::SendLoopDone { link } => self.send_loop_done(link),
            Event::PublishCalled { msg } => self.publish_called(msg),
            Event::Signed { msg } => self.signed(msg),
            Event::CoreTick {
                host,
                core,
                generation,
            } => {
                if !self.cpu.tick_is_current(host, core, generation) {
                    return;
                }
                let now = self.now();
                if let Some(done) = self.cpu.tick_finish(host, core, now) {
                    self.dispatch(done);
                }
                self.cpu.tick_next(&mut self.queue, host, core);
            }
            Event::UplinkDone { node } => self.uplink_done(node),
            Event::WindowOpen { link } => self.window_open(link),
            Event::Validated {
                node,
                msg,
                link,
                hop,
            } => self.validated(node, msg, link, hop),
            Event::DelayedForward { node, msg, link } => self.delayed_forward(node, msg, link),
            Event::IneedTimeout { node, msg, attempt } => {
                if !self.is_down(node) {
                    self.with_router(node, |router, cx| router.ineed_timeout(cx, msg, attempt));
                }
            }
            Event::DialDone { node, peer } => self.dial_done(node, peer),
            Event::Hello { link } => self.connection_up(link),
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

    /// Let `node`'s router act: it reads the world through a `Ctx` and writes to its
    /// outbox, which is carried out, in order, as soon as it returns.
    #[inline]
    pub(crate) fn with_router<R>(
        &mut self,
        node: u32,
        act: impl FnOnce(&mut Router, &mut Ctx) -> R,
    ) -> R {
        let mut cx = Ctx {
            node,
            now: self.queue.now(),
            proto: &self.proto,
            links: &self.links,
            messages: &self.messages,
            host: &mut self.nodes[node as usize],
            event_loop: self.loops.get(node as usize),
            out: Outbox {
                rpcs: &mut self.rpcs,
                actions: &mut self.actions,
                dials: &mut self.dials,
            },
        };
        let result = act(&mut self.router, &mut cx);
        if !self.actions.is_empty() {
            self.carry_out(node);
        }
        result
    }

    /// Carry out what `node`'s router wrote to its outbox.
    fn carry_out(&mut self, node: u32) {
        // Carrying out an action never calls a router, so nothing is added meanwhile.
        let count = self.actions.len();
        for i in 0..count {
            match self.actions[i] {
                Action::Send { link, rpc, urgent } => self.enqueue(node, link, rpc, urgent),
                Action::Timer { at, event } => self.queue.push(at, node, event),
                Action::Drop { peer, kind, reason } => self.count_drop(node, peer, kind, reason),
                Action::Dial { start, end } => {
                    let peers = self.dials[start as usize..end as usize].to_vec();
                    self.queue_dials(node, &peers);
                }
            }
        }
        debug_assert_eq!(self.actions.len(), count);
        self.actions.clear();
        self.dials.clear();
    }

    /// A heartbeat: the router's bookkeeping, an adversary's spam, the mesh
    /// maintenance and gossip, GRAFT/PRUNE kept from dropped RPCs, the cache shift.
    fn heartbeat(&mut self, node: u32) {
        self.with_router(node, |router, cx| router.heartbeat_start(cx));
        self.spam_ihave(node);
        self.spam_invalid(node);
        self.with_router(node, |router, cx| router.heartbeat_mesh(cx));
        self.partial_gossip(node);
        self.flush_stashed_control(node);
        self.router.heartbeat_end(node);
        self.partial_heartbeat(node);
    }

    /// Send control parts on `link` in an RPC of their own.
    pub(crate) fn send_control(&mut self, sender: u32, link: u32, control: Control) {
        self.enqueue_control(sender, link, control, false);
    }

    /// Like `send_control`; `urgent` takes go's urgent lane.
    pub(crate) fn enqueue_control(
        &mut self,
        sender: u32,
        link: u32,
        control: Control,
        urgent: bool,
    ) {
        let rpc = self.rpcs.alloc();
        self.rpcs.get_mut(rpc).control = control;
        self.enqueue(sender, link, rpc, urgent);
    }
}
