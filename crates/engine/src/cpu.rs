//! Hosts and their cores: where a node's CPU work runs, and how long it takes.
//!
//! Nodes sit on hosts, `nodes_per_host` consecutive node ids per host, and each host has
//! `cores` cores that its nodes share. On a host with at least as many cores as nodes, a
//! piece of work becomes ready at some time and runs on the host's core that frees up
//! first, after everything submitted before it (one first-in first-out run queue per
//! host, as Go's scheduler runs goroutines that became runnable in order); with one node
//! per host and one core (the default) this is a per-node CPU. A host whose nodes
//! outnumber its cores runs them in time slices, as the kernel runs processes
//! (`slices.rs`), and each node's goroutines in turn (`goroutines.rs`).
//!
//! What costs CPU, and where it sits in go-libp2p-pubsub v0.17.0:
//! - a received RPC: `per_rpc_received` + `per_kb_received` × size (decryption, yamux
//!   framing, protobuf decoding), in the reading goroutine of the peer's stream
//!   (`comm.go:handleNewStream`), one RPC after the other per peer, before the event
//!   loop sees it. With the event loop the two parts sit where go spends them: the
//!   connection's yamux `recvLoop` (`Goroutine::RecvLoop`, go-yamux
//!   `session.go:recvLoop`: the read syscalls, Noise's decryption, the copy into the
//!   stream's buffer) pays `per_kb_received` × size, then readies the stream's reader,
//!   which pays `per_rpc_received` (msgio's read from that buffer, protobuf decoding;
//!   `recv_loop_cost`, `stream_read_cost`);
//! - a wake-up of the goroutine that waited on the network (the reader, or the
//!   `recvLoop`): `per_read_wakeup`, once each time it goes from waiting on the network
//!   to runnable, whatever it then reads (see `read_wakeup`);
//! - a copy validated: `per_copy` (the signature check and the validators,
//!   `validation.go:validateWorker` → `validate` → `validateSignature`);
//! - a sent RPC: `per_rpc_sent` + `per_kb_sent` × size (protobuf encoding, encryption,
//!   framing, the write syscall). Without the event loop all in the peer's writer
//!   goroutine (`comm.go:handleSendingMessages`), which pops the next RPC from the
//!   peer's 32-RPC queue (`rpc_queue.go:Pop`) only when the previous `writeRPC`
//!   returned. With it (`event_loop.rs`) in the connection's yamux `sendLoop`
//!   (`Goroutine::SendLoop`, go-yamux `session.go:sendLoop`: Noise encryption and the
//!   syscall), which the writer feeds through the 64-frame `sendCh` (`transport.rs`);
//!   the writer's own encoding is in the measured wake-up, so it pays nothing;
//! - the kernel's work for the TCP segments of a sent RPC: `per_segment_kernel` each, on
//!   the sender's host with the RPC's write (see `kernel_send_cost`);
//! - a wake-up of the node: `per_node_wakeup`, once each time a node with nothing to run
//!   gets work (see `node_wakeup`);
//! - a publication: `per_publish` (signing, `sign.go:signMessage`, plus whatever the
//!   application computes before `topic.go:Publish` returns).
//!
//! Each cost is a mean; with `sigma` > 0 each piece of work draws its time from a
//! lognormal distribution of that mean (median = mean × exp(−σ²/2)), from a seeded
//! stream per host, so the model's latency tails come from the costs themselves.

use crate::config::{CpuConfig, Time};
use crate::cpu_use::{CpuSamples, CpuUse};
use crate::goroutines::{Goroutine, SyscallShares, Waited, Wake};
use crate::network::segments;
use crate::queue::{Event, EventQueue};
use crate::rng::Rng;
use crate::slices::{kernel_default_slice, Kernel, Slices};

/// The costs, in the order of `CpuConfig::sigmas`.
#[derive(Clone, Copy)]
pub enum Cost {
    RpcReceived = 0,
    KbReceived = 1,
    RpcSent = 2,
    KbSent = 3,
    Copy = 4,
    Publish = 5,
    ReadWakeup = 6,
    NodeWakeup = 7,
    SegmentKernel = 8,
}

/// What each piece of work costs: its mean, or a lognormal draw from its host's stream.
/// Kept apart from the cores' state, so that a piece of work holds its core's entry
/// while it draws (one bounds check, and nothing reloaded after an out-of-line draw).
struct Draws {
    /// Consecutive node ids per host: which host, and so which stream, a node has.
    nodes_per_host: u32,
    /// Lognormal draws per host (unused when every sigma is 0).
    rng: Vec<Rng>,
    /// Each cost's σ, and exp(−σ²/2): a lognormal's median over its mean.
    sigma: [f64; 9],
    median_over_mean: [f64; 9],
    /// Some σ > 0 (else every cost is its mean, with no draw).
    spread: bool,
}

impl Draws {
    /// The time one piece of work of mean cost `mean` of kind `cost` takes on `node`'s
    /// host (a lognormal draw when its σ > 0; none for a mean of 0).
    #[inline]
    fn draw(&mut self, node: u32, mean: Time, cost: Cost) -> Time {
        if !self.spread {
            return mean;
        }
        self.draw_spread(node, mean, cost)
    }

    /// `draw` when some σ > 0: out of line, so that exact costs need no call.
    #[inline(never)]
    fn draw_spread(&mut self, node: u32, mean: Time, cost: Cost) -> Time {
        let sigma = self.sigma[cost as usize];
        if mean == 0 || sigma == 0.0 {
            return mean;
        }
        let host = self.host_of(node);
        let median = mean as f64 * self.median_over_mean[cost as usize];
        let x = median * (sigma * self.rng[host].normal()).exp();
        x.round().max(0.0) as Time
    }

    /// The host `node` sits on: `nodes_per_host` consecutive node ids per host.
    #[inline]
    fn host_of(&self, node: u32) -> usize {
        if self.nodes_per_host == 1 {
            return node as usize; // no division on the common path
        }
        (node / self.nodes_per_host) as usize
    }
}

pub struct Cpu {
    cores: usize,
    /// When each core of each host is next free (host h's cores at h × cores ..).
    core_free: Vec<Time>,
    /// When each directed link's reading goroutine (at its receiver) is next free.
    reader_free: Vec<Time>,
    draws: Draws,
    /// One node per host, one core per host.
    own_core: bool,
    /// Reading, writing RPCs costs CPU (asked once per RPC, so kept).
    charges_receiving: bool,
    charges_sending: bool,
    /// Hosts whose nodes outnumber their cores run them in time slices.
    slices: Option<Slices>,
    /// The time each node's work ran on a core (`cpu_use.rs`).
    pub(crate) used: CpuUse,
    pub(crate) costs: CpuConfig,
}

impl Cpu {
    /// Hosts for `nodes` nodes, whose CPU use is counted up to `end`.
    pub fn new(config: &CpuConfig, nodes: u32, seed: u64, end: Time) -> Self {
        let per_host = config.nodes_per_host.max(1);
        let hosts = nodes.div_ceil(per_host).max(1) as usize;
        let cores = config.cores.max(1);
        let sigma = config.sigmas().map(|(_, s)| s);
        let rng = if sigma.iter().any(|&s| s > 0.0) {
            (0..hosts)
                .map(|h| Rng::for_stream(seed, "cpu", h as u64))
                .collect()
        } else {
            Vec::new()
        };
        let slices = (per_host > cores).then(|| {
            let kernel = Kernel {
                slice: config
                    .time_slice_ns
                    .unwrap_or_else(|| kernel_default_slice(cores)),
                tick: config.kernel_tick_ns,
                hrtick: config.hrtick,
                sysmon: config.sysmon,
                sysmon_round: config.per_sysmon_round_ns,
                syscall_shares: SyscallShares::new(
                    config.send_loop_syscall_share,
                    config.recv_loop_syscall_share,
                ),
            };
            Slices::new(
                nodes,
                per_host,
                cores,
                kernel,
                config.turn_costs(),
                config.event_loop,
                &config.record_waits,
            )
        });
        Self {
            cores: cores as usize,
            core_free: vec![0; hosts * cores as usize],
            reader_free: Vec::new(),
            draws: Draws {
                nodes_per_host: per_host,
                rng,
                sigma,
                median_over_mean: sigma.map(|s| (-s * s / 2.0).exp()),
                spread: sigma.iter().any(|&s| s > 0.0),
            },
            own_core: per_host == 1 && cores == 1,
            slices,
            used: CpuUse::new(nodes, end),
            charges_receiving: config.per_rpc_received_ns > 0
                || config.per_kb_received_ns > 0
                || config.per_reader_turn_ns > 0
                || config.per_read_wakeup_ns > 0
                || config.per_node_wakeup_ns > 0,
            charges_sending: config.per_rpc_sent_ns > 0
                || config.per_kb_sent_ns > 0
                || config.per_segment_kernel_ns > 0,
            costs: config.clone(),
        }
    }

    #[inline]
    pub fn host_of(&self, node: u32) -> usize {
        self.draws.host_of(node)
    }

    /// True if `node`'s host runs its nodes in time slices (`slices.rs`).
    pub fn time_sliced(&self) -> bool {
        self.slices.is_some()
    }

    /// The time one piece of work of mean cost `mean` of kind `cost` takes on `node`'s
    /// host (a lognormal draw when its σ > 0).
    #[inline]
    pub fn draw(&mut self, node: u32, mean: Time, cost: Cost) -> Time {
        self.draws.draw(node, mean, cost)
    }

    /// A per-RPC cost plus a per-kB one: one draw for the sum when both have the same
    /// σ, else one each.
    #[inline]
    fn draw_pair(&mut self, node: u32, rpc: (Time, Cost), kb: (Time, Cost)) -> Time {
        if !self.draws.spread {
            return rpc.0 + kb.0;
        }
        if self.draws.sigma[rpc.1 as usize] == self.draws.sigma[kb.1 as usize] {
            return self.draw(node, rpc.0 + kb.0, rpc.1);
        }
        self.draw(node, rpc.0, rpc.1) + self.draw(node, kb.0, kb.1)
    }

    /// CPU time `node` takes to read an RPC of `bytes` bytes.
    #[inline]
    pub fn read_cost(&mut self, node: u32, bytes: u64) -> Time {
        let rpc = (self.costs.per_rpc_received_ns, Cost::RpcReceived);
        let kb = (
            self.costs.per_kb_received_ns * bytes / 1000,
            Cost::KbReceived,
        );
        self.draw_pair(node, rpc, kb)
    }

    /// CPU time `node`'s yamux `recvLoop` takes to read and decrypt an RPC of `bytes`
    /// bytes and put it in its stream's buffer (with the event loop).
    #[inline]
    pub fn recv_loop_cost(&mut self, node: u32, bytes: u64) -> Time {
        let mean = self.costs.per_kb_received_ns * bytes / 1000;
        self.draw(node, mean, Cost::KbReceived)
    }

    /// CPU time `node`'s reader of a stream takes to take an RPC out of the stream's
    /// buffer and decode it, after its `recvLoop` put it there (with the event loop).
    #[inline]
    pub fn stream_read_cost(&mut self, node: u32) -> Time {
        self.draw(node, self.costs.per_rpc_received_ns, Cost::RpcReceived)
    }

    /// CPU time `node`'s host takes to write an RPC of `bytes` bytes: its writer's
    /// work, then the kernel's for the RPC's TCP segments (`kernel_send_cost`).
    /// Inlined for exact costs (every σ 0, the common case: a few arithmetic steps);
    /// a draw goes out of line.
    #[inline(always)]
    pub fn write_cost(&mut self, node: u32, bytes: u64) -> Time {
        if self.draws.spread {
            return self.write_cost_spread(node, bytes);
        }
        let kb = self.costs.per_kb_sent_ns * bytes / 1000;
        self.costs.per_rpc_sent_ns + kb + self.kernel_send_cost(node, bytes)
    }

    /// `write_cost` when some σ > 0.
    #[inline(never)]
    fn write_cost_spread(&mut self, node: u32, bytes: u64) -> Time {
        let rpc = (self.costs.per_rpc_sent_ns, Cost::RpcSent);
        let kb = (self.costs.per_kb_sent_ns * bytes / 1000, Cost::KbSent);
        self.draw_pair(node, rpc, kb) + self.kernel_send_cost(node, bytes)
    }

    /// The kernel's work for the segments of an RPC of `bytes` bytes (MSS-sized,
    /// `network::segments`) a node sends: `per_segment_kernel` each. The write syscall
    /// (`tcp_sendmsg` → `tcp_push` → `ip_queue_xmit` → `dev_queue_xmit`) hands each
    /// segment to the device; a veth (`veth_xmit` → `__netif_rx`) queues it on the
    /// sending CPU's backlog, whose NET_RX softirq runs as the syscall re-enables
    /// bottom halves (`local_bh_enable` → `do_softirq`): the receiving side's routing,
    /// qdiscs and netfilter hooks run there too, on the sender's core and time, and
    /// with IRQ time accounting they count as softirq time, in no task's CPU time. One
    /// draw per RPC: its segments go out in one syscall.
    #[inline]
    fn kernel_send_cost(&mut self, node: u32, bytes: u64) -> Time {
        let per_segment = self.costs.per_segment_kernel_ns;
        if per_segment == 0 {
            return 0;
        }
        let mean = per_segment * segments(bytes);
        self.draw(node, mean, Cost::SegmentKernel)
    }

    /// CPU time of one wake-up of a reading goroutine of `node`. An RPC that finds its
    /// reader waiting on the network wakes it; the RPCs that arrive before the reader
    /// has read everything (while it waits for a core, or reads) share that wake-up.
    /// go's reads (`internal/poll/fd_unix.go:FD.Read`): a read that finds no data
    /// (EAGAIN) parks the goroutine on the netpoller (`pollDesc.waitRead`,
    /// `runtime/netpoll.go:netpollblock`); when data arrives `netpoll` makes it runnable
    /// again and it retries the read. So a wake-up is an empty read, a park, a wake by
    /// the netpoller (an `epoll_pwait` return, often an OS thread woken from `futex`), a
    /// data read, and the same hand-off from yamux's reading goroutine
    /// (`go-yamux session.go:recvLoop`) to pubsub's (`comm.go:handleNewStream`) over the
    /// stream's buffer; none of it depends on how many RPCs the data holds.
    #[inline]
    fn read_wakeup(&mut self, node: u32) -> Time {
        self.draw(node, self.costs.per_read_wakeup_ns, Cost::ReadWakeup)
    }

    /// CPU time of one wake-up of `node`: it had nothing to run, and work arrived. With
    /// nothing runnable, go's scheduler ends `runtime/proc.go:findRunnable` in the
    /// blocking `netpoll(delay)` ("block until new work is available"; `stopm` for the
    /// other Ms): the thread blocks in `epoll_pwait` and the kernel switches it out.
    /// Data or a timer wakes it: the switch back in, `netpoll`'s return, `injectglist`
    /// and the scheduler's way back to `execute`; the first syscall then wakes `sysmon`
    /// from its deep sleep (`entersyscall` → `entersyscallWakeSysmon`, since
    /// `sysmon` sleeps on `sched.sysmonnote` while every P is idle). None of it depends
    /// on how much work the node then does before it idles again, so a busy node pays
    /// it less often per copy. Charged with the first work of the wake-up.
    #[inline]
    fn node_wakeup(&mut self, node: u32) -> Time {
        self.draw(node, self.costs.per_node_wakeup_ns, Cost::NodeWakeup)
    }

    /// Run work taking `cost` for `node`, ready at `ready`, on a host that is not
    /// time-sliced: it takes the host's first free core after the work submitted before
    /// it. Returns when it is done. Inlined into its three callers (reading, writing,
    /// validating): as a call it cost as much again as its few comparisons.
    #[inline(always)]
    pub fn run(&mut self, node: u32, ready: Time, cost: Time) -> Time {
        if !self.own_core {
            return self.run_shared(node, ready, cost);
        }
        // One node on a host of one core, the common case: its core is idle at `ready`
        // exactly when `idle_at` says so, with one comparison. The core's entry is held
        // through the wake-up's draw (`Draws`); a wake-up of mean 0 draws nothing.
        let free = &mut self.core_free[node as usize];
        let cost = if *free < ready {
            let wakeup = self.costs.per_node_wakeup_ns;
            cost + self.draws.draw(node, wakeup, Cost::NodeWakeup)
        } else {
            cost
        };
        let done = ready.max(*free) + cost;
        *free = done;
        self.used.charge(node, done - cost, done);
        done
    }

    /// `run` on a host of several cores or several nodes.
    #[inline(never)]
    fn run_shared(&mut self, node: u32, ready: Time, cost: Time) -> Time {
        let core = self.core_of(node);
        let cost = if self.costs.per_node_wakeup_ns > 0 && self.idle_at(node, ready) {
            cost + self.node_wakeup(node)
        } else {
            cost
        };
        let done = ready.max(self.core_free[core]) + cost;
        self.core_free[core] = done;
        self.used.charge(node, done - cost, done);
        done
    }

    /// True if `node`, alone on its host (not time-sliced), has nothing to run at
    /// `ready`: every core of its host finished its work before then. Work handed on
    /// at the instant the last piece ends (an event at `core_free`) runs on without a
    /// wake-up, as the goroutine that finished hands it on before the thread could
    /// block. A host shared by several nodes without time slices is not charged: its
    /// cores do not tell which node idles.
    fn idle_at(&self, node: u32, ready: Time) -> bool {
        if self.draws.nodes_per_host != 1 {
            return false;
        }
        let first = self.host_of(node) * self.cores;
        self.core_free[first..first + self.cores]
            .iter()
            .all(|&free| free < ready)
    }

    /// The core of `node`'s host that frees up first.
    fn core_of(&self, node: u32) -> usize {
        let host = self.host_of(node);
        let first = host * self.cores;
        if self.cores == 1 {
            first
        } else {
            let cores = &self.core_free[first..first + self.cores];
            first + (0..cores.len()).min_by_key(|&c| cores[c]).expect("a core")
        }
    }

    /// Work taking `cost` for `node`'s goroutine `g`, ready now; `event` happens when it
    /// is done (the goroutine matters on time-sliced hosts only).
    pub fn submit(
        &mut self,
        queue: &mut EventQueue,
        node: u32,
        g: Goroutine,
        mut cost: Time,
        event: Event,
    ) {
        let woken = self.costs.per_read_wakeup_ns > 0
            && self
                .slices
                .as_ref()
                .is_some_and(|s| s.reads_network(node, g) && s.waits_on_network(node, g));
        // A time-sliced node with no runnable goroutine and no data waiting for the
        // netpoller is not on a core, its thread blocked in `netpoll` (`slices.rs`; its
        // group may wait for a core for its `sysmon` alone): this work wakes it
        // (`node_wakeup`).
        let idle =
            self.costs.per_node_wakeup_ns > 0 && self.slices.as_ref().is_some_and(|s| s.idle(node));
        if woken {
            cost += self.read_wakeup(node);
        }
        if idle {
            cost += self.node_wakeup(node);
        }
        match &mut self.slices {
            Some(slices) => {
                let wake = Self::wake(slices, node, g);
                slices.submit(queue, node, g, wake, cost, event, &mut self.used);
            }
            None => {
                let done = self.run(node, queue.now(), cost);
                queue.push(done, node, event);
            }
        }
    }

    /// Where `node`'s goroutine `g`, given work now, goes if it was waiting
    /// (`goroutines.rs`): work given during the event of a piece of the node's running
    /// goroutine is that goroutine's hand-off (`runnext`); the publisher is readied by
    /// the application's timer; the rest comes from the network (a reader's data, a
    /// writer's socket or stream window) or from the model's timers without a goroutine
    /// of their own (the heartbeat), and goes to the back of the run queue.
    fn wake(slices: &Slices, node: u32, g: Goroutine) -> Wake {
        if slices.handing_off(node) {
            Wake::Next
        } else if g == Goroutine::Publisher {
            Wake::Timer
        } else {
            Wake::Tail
        }
    }

    /// True if a tick of a time-sliced host's core is its pending one: a tick pushed
    /// before a preemption on the core (an older `generation`) is stale and does
    /// nothing. The core's generation cannot change while its own tick is carried out
    /// (a core whose tick is due now is not preempted), so one check serves
    /// `tick_finish` and `tick_next`.
    pub fn tick_is_current(&self, host: u32, core: u32, generation: u32) -> bool {
        let slices = self.slices.as_ref().expect("ticks come from time slices");
        slices.current(host, core, generation)
    }

    /// A time-sliced host's core ticked: the event of the piece of work it finished.
    pub fn tick_finish(&mut self, host: u32, core: u32, now: Time) -> Option<Event> {
        let slices = self.slices.as_mut().expect("ticks come from time slices");
        slices.finish(host, core, now, &mut self.used)
    }

    /// `node`'s Go `sysmon` thread's sleep ended (`slices.rs`).
    pub fn sysmon_wake(&mut self, queue: &mut EventQueue, node: u32) {
        let slices = self
            .slices
            .as_mut()
            .expect("sysmon runs on time-sliced hosts");
        slices.sysmon_wake(queue, node, &mut self.used);
    }

    /// After `tick_finish` and its event: the core goes on.
    pub fn tick_next(&mut self, queue: &mut EventQueue, host: u32, core: u32) {
        let slices = self.slices.as_mut().expect("ticks come from time slices");
        slices.next(queue, host, core, &mut self.used);
    }

    /// `receiver` reads an RPC taking `cost` that arrived on `link` at `now`: after
    /// the RPCs before it on that stream (one reading goroutine per stream,
    /// `comm.go:handleNewStream`). Returns when it is decoded (hosts not time-sliced).
    #[inline]
    pub fn read(&mut self, link: u32, receiver: u32, now: Time, cost: Time) -> Time {
        let l = link as usize;
        if l >= self.reader_free.len() {
            self.reader_free.resize(l + 1, 0);
        }
        // The reading goroutine waits on the network once it has read everything that
        // arrived (its last read is done by `now`): this RPC wakes it up (a wake-up of
        // mean 0 draws nothing).
        let free = self.reader_free[l];
        let cost = if free <= now {
            cost + self.read_wakeup(receiver)
        } else {
            cost
        };
        let done = self.run(receiver, now.max(free), cost);
        self.reader_free[l] = done;
        done
    }

    /// `node`'s running goroutine `g` parks on a full channel (`goroutines.rs`).
    pub fn block(&mut self, node: u32, g: Goroutine) {
        let slices = self
            .slices
            .as_mut()
            .expect("channels on time-sliced hosts only");
        slices.process(node).block(g);
    }

    /// `node`'s parked goroutine `g` is let in by the channel's receiver.
    pub fn unblock(&mut self, node: u32, g: Goroutine) {
        let slices = self
            .slices
            .as_mut()
            .expect("channels on time-sliced hosts only");
        slices.process(node).unblock(g);
    }

    /// Each node's cumulative CPU time at every whole second and at the end of the run
    /// (`cpu_use.rs`), with its threads' switches on time-sliced hosts.
    pub fn samples(&self) -> CpuSamples {
        let mut samples = self.used.samples();
        if let Some(slices) = &self.slices {
            slices.add_switches(&mut samples, &self.used.sample_times());
        }
        samples
    }

    /// The waits recorded for the nodes in `cpu.record_waits` (their goroutines' for
    /// their P, their own for a core); empty without time slices.
    pub fn goroutine_waits(&self) -> Vec<Waited> {
        let Some(slices) = &self.slices else {
            return Vec::new();
        };
        slices.waits().collect()
    }

    /// A node's validation workers: go starts one per CPU of its machine
    /// (`validation.go:newValidation`, `runtime.NumCPU()`).
    pub fn validate_workers(&self) -> usize {
        self.cores
    }

    /// True if reading RPCs costs CPU.
    #[inline]
    pub fn charges_receiving(&self) -> bool {
        self.charges_receiving
    }

    /// True if writing RPCs costs CPU.
    #[inline]
    pub fn charges_sending(&self) -> bool {
        self.charges_sending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::FOREVER;

    fn cpu(nodes_per_host: u32, cores: u32, sigma: f64) -> Cpu {
        let config = CpuConfig {
            nodes_per_host,
            cores,
            sigma,
            ..CpuConfig::default()
        };
        Cpu::new(&config, 4, 7, FOREVER)
    }

    #[test]
    fn nodes_on_one_core_queue_behind_each_other() {
        let mut c = cpu(2, 1, 0.0);
        // Nodes 0 and 1 share host 0's core; node 2 has host 1 to itself.
        assert_eq!(c.run(0, 0, 100), 100);
        assert_eq!(c.run(1, 0, 100), 200);
        assert_eq!(c.run(2, 0, 100), 100);
        assert_eq!(c.run(1, 500, 10), 510, "an idle core starts at once");
    }

    #[test]
    fn two_cores_serve_two_pieces_at_once() {
        let mut c = cpu(4, 2, 0.0);
        let done: Vec<Time> = (0..4).map(|n| c.run(n, 0, 100)).collect();
        assert_eq!(done, [100, 100, 200, 200]);
    }

    /// `n` draws of a 1 µs mean `cost` with σ = 1 in common and `own` for `cost`.
    fn draws(cost: Cost, own: f64, n: usize) -> Vec<f64> {
        let config = CpuConfig {
            sigma: 1.0,
            sigma_per_copy: Some(own),
            sigma_per_publish: Some(own),
            ..CpuConfig::default()
        };
        let mut c = Cpu::new(&config, 1, 11, FOREVER);
        (0..n).map(|_| c.draw(0, 1_000, cost) as f64).collect()
    }

    #[test]
    fn a_cost_with_sigma_zero_is_exact_whatever_the_common_sigma() {
        assert!(draws(Cost::Copy, 0.0, 1_000).iter().all(|&x| x == 1_000.0));
        let common = draws(Cost::RpcSent, 0.0, 1_000);
        assert!(common.iter().any(|&x| x != 1_000.0), "σ = 1 for the others");
    }

    #[test]
    fn a_cost_with_its_own_sigma_keeps_its_mean_and_has_the_lognormal_spread() {
        // Lognormal of mean m and shape σ: median m·e^(−σ²/2), standard deviation
        // m·√(e^(σ²) − 1). σ = 0.5: median 0.8825 m, deviation 0.5329 m.
        let mut x = draws(Cost::Publish, 0.5, 200_000);
        let n = x.len() as f64;
        let mean = x.iter().sum::<f64>() / n;
        let sd = (x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n).sqrt();
        x.sort_by(f64::total_cmp);
        let median = x[x.len() / 2];
        assert!((mean / 1_000.0 - 1.0).abs() < 0.005, "mean {mean}");
        assert!((sd / 1_000.0 - 0.5329).abs() < 0.01, "sd {sd}");
        assert!((median / 1_000.0 - 0.8825).abs() < 0.005, "median {median}");
    }

    #[test]
    fn a_read_draws_its_parts_apart_when_their_sigmas_differ() {
        // Per RPC exact (σ 0), per kB σ 1: a read never takes less than its per-RPC part.
        let config = CpuConfig {
            per_rpc_received_ns: 500,
            per_kb_received_ns: 1_000,
            sigma: 1.0,
            sigma_per_rpc_received: Some(0.0),
            ..CpuConfig::default()
        };
        let mut c = Cpu::new(&config, 1, 3, FOREVER);
        let reads: Vec<Time> = (0..1_000).map(|_| c.read_cost(0, 2_000)).collect();
        assert!(reads.iter().all(|&t| t >= 500));
        assert!(reads.iter().any(|&t| t < 1_000), "the bytes' part spreads");
    }

    #[test]
    fn lognormal_costs_keep_their_mean() {
        let mut c = cpu(1, 1, 0.8);
        let n = 200_000;
        let total = (0..n).fold(0, |t, _| {
            let cost = c.draw(0, 1_000, Cost::Copy);
            c.run(0, t, cost) // back to back
        });
        let mean = total as f64 / n as f64;
        // Mean of a lognormal with median m·e^(−σ²/2) is m; 200k draws: within 1 %.
        assert!((mean - 1_000.0).abs() < 10.0, "mean {mean}");
    }

    /// A node alone on its host, its wake-up 50 µs: (arrival, cost) pieces of work run
    /// on the own-core path; when each is done.
    fn own_core_runs(cores: u32, work: &[(Time, Time)]) -> Vec<Time> {
        let config = CpuConfig {
            cores,
            per_node_wakeup_ns: 50_000,
            ..CpuConfig::default()
        };
        let mut c = Cpu::new(&config, 1, 1, FOREVER);
        work.iter().map(|&(at, cost)| c.run(0, at, cost)).collect()
    }

    #[test]
    fn a_node_busy_when_work_arrives_is_woken_once() {
        // Work at 1 ms wakes the idle node: 50 µs + 100 µs, done at 1.15 ms. Work at
        // 1.1 ms finds it busy (runtime/proc.go:findRunnable never reached netpoll):
        // no second wake-up, done at 1.25 ms.
        let done = own_core_runs(1, &[(1_000_000, 100_000), (1_100_000, 100_000)]);
        assert_eq!(done, [1_150_000, 1_250_000]);
        // Work handed on as the last piece ends (an event at its end) runs on.
        let done = own_core_runs(1, &[(1_000_000, 100_000), (1_150_000, 100_000)]);
        assert_eq!(done, [1_150_000, 1_250_000]);
    }

    #[test]
    fn a_node_idle_between_arrivals_is_woken_each_time() {
        let done = own_core_runs(1, &[(1_000_000, 100_000), (2_000_000, 100_000)]);
        assert_eq!(done, [1_150_000, 2_150_000]);
        // Two cores: the node is idle only when both are; the second piece takes the
        // free core while the first runs, and the node is awake.
        let done = own_core_runs(2, &[(1_000_000, 100_000), (1_100_000, 100_000)]);
        assert_eq!(done, [1_150_000, 1_200_000]);
    }

    /// Two nodes on a time-sliced host of one core, a node wake-up of 50 µs: node 0's
    /// validator gets (arrival, cost) pieces; when each is done.
    fn sliced_runs(work: &[(Time, Time)]) -> Vec<Time> {
        let config = CpuConfig {
            nodes_per_host: 2,
            per_node_wakeup_ns: 50_000,
            ..CpuConfig::default()
        };
        let mut c = Cpu::new(&config, 2, 1, FOREVER);
        let mut queue = EventQueue::new(2);
        for (i, &(at, _)) in work.iter().enumerate() {
            queue.push(at, 1, Event::Publish { msg: i as u32 });
        }
        let mut done = vec![0; work.len()];
        while let Some((t, event)) = queue.pop() {
            match event {
                Event::Publish { msg } => {
                    let (g, cost) = (Goroutine::Validator, work[msg as usize].1);
                    c.submit(&mut queue, 0, g, cost, Event::Signed { msg });
                }
                Event::CoreTick {
                    host,
                    core,
                    generation,
                } => {
                    if !c.tick_is_current(host, core, generation) {
                        continue;
                    }
                    if let Some(Event::Signed { msg }) = c.tick_finish(host, core, t) {
                        done[msg as usize] = t;
                    }
                    c.tick_next(&mut queue, host, core);
                }
                _ => unreachable!(),
            }
        }
        done
    }

    /// Pieces of work `(node, ready at, cost)` on `nodes` nodes sharing one core in 1 ms
    /// slices: when each piece is done.
    fn one_core_runs(nodes: u32, work: &[(u32, Time, Time)]) -> Vec<Time> {
        host_runs(nodes, 1, work)
    }

    /// `one_core_runs` on a host of `cores` cores.
    fn host_runs(nodes: u32, cores: u32, work: &[(u32, Time, Time)]) -> Vec<Time> {
        kernel_runs(nodes, cores, true, work)
    }

    /// `host_runs`, the slices ended on time (`hrtick`) or at the kernel's 4 ms tick.
    fn kernel_runs(nodes: u32, cores: u32, hrtick: bool, work: &[(u32, Time, Time)]) -> Vec<Time> {
        let config = CpuConfig {
            nodes_per_host: nodes,
            cores,
            time_slice_ns: Some(1_000_000),
            hrtick,
            ..CpuConfig::default()
        };
        let mut c = Cpu::new(&config, nodes, 1, FOREVER);
        let mut queue = EventQueue::new(nodes as usize);
        for (i, &(_, at, _)) in work.iter().enumerate() {
            queue.push(at, 1, Event::Publish { msg: i as u32 });
        }
        let mut done = vec![0; work.len()];
        while let Some((t, event)) = queue.pop() {
            match event {
                Event::Publish { msg } => {
                    let (node, _, cost) = work[msg as usize];
                    let signed = Event::Signed { msg };
                    c.submit(&mut queue, node, Goroutine::Validator, cost, signed);
                }
                Event::CoreTick {
                    host,
                    core,
                    generation,
                } => {
                    if !c.tick_is_current(host, core, generation) {
                        continue;
                    }
                    if let Some(Event::Signed { msg }) = c.tick_finish(host, core, t) {
                        done[msg as usize] = t;
                    }
                    c.tick_next(&mut queue, host, core);
                }
                _ => unreachable!(),
            }
        }
        done
    }

    #[test]
    fn a_slice_is_over_when_a_tick_or_a_wake_up_finds_it_over() {
        // Without HRTICK the kernel ends a slice when `update_curr` finds the running
        // task past its deadline (`update_deadline`): at the tick (`task_tick_fair`,
        // every 4 ms at CONFIG_HZ=250) or when a task wakes on the core
        // (`enqueue_entity`). A has 6 ms from 0 on 1 core, slices of 1 ms.
        const MS: Time = 1_000_000;
        // B wakes at 0.5 with 0.5 ms, inside A's first slice (A is eligible: no
        // preemption). A's slice ends at 1, seen at the tick at 4: B runs 4-4.5. With
        // HRTICK B runs 1-1.5. A is done at 6.5 either way.
        let early = [(0, 0, 6 * MS), (1, MS / 2, MS / 2)];
        assert_eq!(kernel_runs(2, 1, false, &early), [13 * MS / 2, 9 * MS / 2]);
        assert_eq!(kernel_runs(2, 1, true, &early), [13 * MS / 2, 3 * MS / 2]);
        // B wakes at 2.5, past the end of A's first slice (1 ms): its wake-up ends it.
        // A gets a new deadline (vruntime 2.5, deadline 3.5), B is placed at the average
        // 2.5 with deadline 3.5 and, queued first, runs 2.5-3; A 3-6.5. With HRTICK A is
        // in its third slice (2-3) and keeps it: B runs 3-3.5, A 3.5-6.5.
        let late = [(0, 0, 6 * MS), (1, 5 * MS / 2, MS / 2)];
        assert_eq!(kernel_runs(2, 1, false, &late), [13 * MS / 2, 3 * MS]);
        assert_eq!(kernel_runs(2, 1, true, &late), [13 * MS / 2, 7 * MS / 2]);
    }

    #[test]
    fn a_node_that_slept_runs_before_those_that_used_their_slices() {
        // EEVDF (kernel/sched/fair.c), 1 core, 1 ms slices, three nodes. A and C have
        // 3 ms of work from 0: A runs 0-1, C 1-2 (at 1, C is eligible: its vruntime 0 is
        // below the average 0.5). B wakes at 1.5 with 0.2 ms and is placed at the average
        // then (C 0.5 so far, A 1: 0.75), deadline 1.75. At 2 A and C have run 1 ms each,
        // the average is 0.92: only B is eligible, and it runs 2-2.2, before A, which a
        // round robin would run first (B done at 3.2). Then A 2.2-3.2, C 3.2-4.2, A
        // 4.2-5.2 (done), C 5.2-6.2 (done).
        const MS: Time = 1_000_000;
        let work = [(0, 0, 3 * MS), (2, 0, 3 * MS), (1, 3 * MS / 2, MS / 5)];
        let done = one_core_runs(3, &work);
        assert_eq!(done, [52 * MS / 10, 62 * MS / 10, 22 * MS / 10]);
    }

    #[test]
    fn a_node_that_ran_more_than_its_share_wakes_no_earlier_than_the_average() {
        // EEVDF's DELAY_DEQUEUE and DELAY_ZERO (kernel/sched/features.h): negative lag is
        // burnt off while the node sleeps, not kept. A and B have 2 ms each from 0: A
        // runs 0-1, B 1-2, A 2-3 (done; it blocks at vruntime 2 with the average 1.5:
        // lag -0.5), B 3-4 (done; the average is then 2). B wakes at 10 with 2 ms,
        // placed at 2; A wakes at 10.5 with 0.5 ms, when the average (B: 2.5) has passed
        // its old vruntime 2: it is placed at 2.5, not 0.5 behind. At 11 B's slice ends
        // (vruntime 3): A is eligible (2.5 <= 2.75) and runs 11-11.5, then B 11.5-12.5.
        // Had A kept its lag, it would wait at 3.5 behind B: done at 12.5.
        const MS: Time = 1_000_000;
        let work = [
            (0, 0, 2 * MS),
            (1, 0, 2 * MS),
            (1, 10 * MS, 2 * MS),
            (0, 21 * MS / 2, MS / 2),
        ];
        let done = one_core_runs(2, &work);
        assert_eq!(done, [3 * MS, 4 * MS, 125 * MS / 10, 115 * MS / 10]);
    }

    #[test]
    fn a_node_that_wakes_preempts_one_that_ran_past_the_average() {
        // EEVDF's wake-up preemption (kernel/sched/fair.c, check_preempt_wakeup_fair):
        // a running task that is not eligible has no slice protection, and a waking task
        // that is EEVDF's pick takes its core. A has 3 ms from 0, B 0.1 ms from 0: A runs
        // 0-1, B 1-1.1 (done; it blocks at vruntime 0.1 with the average 0.55: lag 0.45),
        // A 1.1-2.1 from vruntime 1 (its slice: deadline 2). B wakes at 1.5 with 1 ms,
        // placed at A's 1.4 less its lag scaled to 0.9: vruntime 0.5, deadline 1.5. The
        // average is then 0.95: A (1.4) is past it, B is the pick, and B runs 1.5-2.5
        // (done). A gets the rest of its slice, 2.5-3.1, then 3.1-4.1 (done). Without
        // the preemption A runs to 2.1 and B 2.1-3.1.
        const MS: Time = 1_000_000;
        let work = [(0, 0, 3 * MS), (1, 0, MS / 10), (1, 3 * MS / 2, MS)];
        let done = one_core_runs(2, &work);
        assert_eq!(done, [41 * MS / 10, 11 * MS / 10, 25 * MS / 10]);
    }

    #[test]
    fn a_running_node_that_is_still_eligible_keeps_its_core() {
        // As above, B preempts A at 1.5 and runs from vruntime 0.5. C, which never ran,
        // wakes at 2 with 0.2 ms: placed at the average of B (1.0) and A (1.4), 1.2,
        // deadline 2.2. C is EEVDF's pick among the waiting (A is past the average 1.2),
        // but B's vruntime 1.0 is not past it: B is eligible and inside its slice, and
        // keeps the core to 2.5 (done). Then C (eligible, 1.2 against the average 1.3 of
        // C and A) runs 2.5-2.7, and A 2.7-3.3 (the rest of its slice) and 3.3-4.3.
        // Preempted, B would be done at 2.7 and C at 2.2.
        const MS: Time = 1_000_000;
        let work = [
            (0, 0, 3 * MS),
            (1, 0, MS / 10),
            (1, 3 * MS / 2, MS),
            (2, 2 * MS, MS / 5),
        ];
        let done = one_core_runs(3, &work);
        assert_eq!(
            done,
            [43 * MS / 10, 11 * MS / 10, 25 * MS / 10, 27 * MS / 10]
        );
    }

    #[test]
    fn a_node_that_wakes_preempts_the_first_core_whose_node_ran_past_the_average() {
        // Two cores, one run queue for both: the cores are checked in order. A and B have
        // 3 ms from 0, C 0.1 ms: A runs 0-1 on core 0, B 0-1 on core 1. At 1 C runs on
        // core 0 (done at 1.1, lag 0.73 - 0.1), and A on core 1 (neither A nor B is
        // eligible then: the least run, the first queued); B 1.1-2.1 on core 0. C wakes at
        // 1.5 with 1 ms, placed at vruntime 0.5: the average is 1.13, both B (1.4) and A
        // (1.5) are past it, and C takes core 0 from B, 1.5-2.5. At 2 A's slice ends and B
        // (eligible, deadline 2) runs the rest of its slice on core 1, 2-2.6; A 2.5-3.5 on
        // core 0, B 2.6-3.6. Preempting A on core 1 instead, B would be done at 3.5 and A
        // at 3.6; without preemption C runs 2-3 on core 1.
        const MS: Time = 1_000_000;
        let work = [
            (0, 0, 3 * MS),
            (1, 0, 3 * MS),
            (2, 0, MS / 10),
            (2, 3 * MS / 2, MS),
        ];
        let done = host_runs(3, 2, &work);
        assert_eq!(
            done,
            [35 * MS / 10, 36 * MS / 10, 11 * MS / 10, 25 * MS / 10]
        );
    }

    #[test]
    fn a_time_sliced_node_is_woken_once_per_busy_stretch() {
        // Busy from 1 ms (woken: 50 + 100 µs) when the second piece comes at 1.1 ms.
        let busy = sliced_runs(&[(1_000_000, 100_000), (1_100_000, 100_000)]);
        assert_eq!(busy, [1_150_000, 1_250_000]);
        // Idle again at 1.15 ms: the piece at 2 ms wakes it once more.
        let apart = sliced_runs(&[(1_000_000, 100_000), (2_000_000, 100_000)]);
        assert_eq!(apart, [1_150_000, 2_150_000]);
    }

    #[test]
    fn work_given_in_the_event_of_a_piece_is_its_goroutines_hand_off() {
        // A time-sliced node: its validator (1 ms) and writer 1 (1 ms) get work at 0 from
        // the network's side of the model; the validator's piece's event gives writer 2
        // work (1 ms): the validator readied it (runtime/chan.go, sync.Cond → goready →
        // runnext), so it runs 1-2, before writer 1 (2-3).
        let config = CpuConfig {
            nodes_per_host: 2,
            ..CpuConfig::default()
        };
        let mut c = Cpu::new(&config, 2, 1, FOREVER);
        let mut queue = EventQueue::new(2);
        let ms = 1_000_000;
        c.submit(
            &mut queue,
            0,
            Goroutine::Validator,
            ms,
            Event::Signed { msg: 0 },
        );
        c.submit(
            &mut queue,
            0,
            Goroutine::Writer(1),
            ms,
            Event::Signed { msg: 1 },
        );
        let mut done = [0; 3];
        while let Some((t, event)) = queue.pop() {
            let Event::CoreTick {
                host,
                core,
                generation,
            } = event
            else {
                unreachable!()
            };
            if !c.tick_is_current(host, core, generation) {
                continue;
            }
            if let Some(Event::Signed { msg }) = c.tick_finish(host, core, t) {
                done[msg as usize] = t;
                if msg == 0 {
                    let w2 = Goroutine::Writer(2);
                    c.submit(&mut queue, 0, w2, ms, Event::Signed { msg: 2 });
                }
            }
            c.tick_next(&mut queue, host, core);
        }
        assert_eq!(done, [ms, 3 * ms, 2 * ms]);
    }
}
