//! A host whose nodes outnumber its cores, run as an operating system runs processes:
//! in time slices, in the order Linux's EEVDF scheduler picks them.
//!
//! Each node is one process. A core runs one node at a time, for at most one time slice;
//! the node runs its own work (its reading goroutines, its validation workers and its
//! writers, one piece after the other) in the order Go's scheduler gives it
//! (`goroutines.rs`). A node that runs out of work gives its core up (it blocks on the
//! network); one whose slice is used up goes back to the host's run queue. Work for a
//! node that is not running waits until the node gets a core again.
//!
//! Which waiting node runs next is EEVDF's choice (`kernel/sched/fair.c`, equal
//! weights): each node has a virtual runtime (the CPU time it ran, from where it was
//! placed) and a virtual deadline one slice past it; of the nodes not ahead of the
//! average virtual runtime of the runnable ones (eligible, `entity_eligible`), the one
//! with the earliest deadline runs (`pick_eevdf`). A node that blocks keeps its lag,
//! the average less its own virtual runtime (`update_entity_lag`), and is placed by it
//! when it wakes (`place_entity`); one that ran more than its share stays where it was
//! until the average catches up (`DELAY_DEQUEUE`, `DELAY_ZERO`). So a node that slept
//! runs before one that keeps the core busy: on a saturated host the busiest nodes
//! wait, as real ones do.
//!
//! Inside a node, its goroutines take turns (`goroutines.rs`). A node away from the CPU
//! for a few slices wakes to a burst of RPCs: its reading goroutines read them all and
//! push their unseen copies into the 32-slot validation queue at once, which overflows
//! (`validation.go:Push`): that is how real nodes on an overloaded host lose copies
//! there.
//!
//! A node keeps its core for its slice only while it is eligible (`RUN_TO_PARITY`
//! protects its slice, and `__pick_eevdf` drops the protection of a task past the
//! average): one that ran past the average loses its core at once to a node that wakes
//! and is then EEVDF's pick (`check_preempt_wakeup_fair`), and waits in the run queue
//! with what is left of its slice (`wakeup_preempt`).
//!
//! The slice is Linux's: `sysctl_sched_base_slice`, 0.75 ms scaled by 1 + ilog2(online
//! CPUs, at most 8) (`get_update_sysctl_factor`, `SCHED_TUNABLESCALING_LOG`). The kernel
//! ends a slice when `update_curr` finds the task past its deadline (`update_deadline`,
//! then `resched_curr_lazy`): at the core's next tick (`task_tick_fair`, every
//! `1 / CONFIG_HZ`) or when a task wakes on the core (`enqueue_entity`), whichever comes
//! first; so a busy node with nothing waking around it runs on up to a tick past its
//! slice, then waits as much longer for its next turn. With the scheduler's `HRTICK`
//! feature (off by default) a timer ends the slice on time. Not modelled: per-CPU run
//! queues (a host's cores share one), a Go process running on two cores at once
//! (GOMAXPROCS threads). Each pick passes over the host's runnable nodes.
//!
//! A node's process has a second thread the kernel schedules, Go's `sysmon`
//! (`sysmon.rs`), modelled when `cpu.sysmon` is on. A node's process is a group of its
//! threads (its own autogroup or cgroup): the kernel picks a group at the root, then a
//! thread inside it (`group.rs`). When `sysmon`'s sleep ends, its thread wakes in the
//! node's group. On a running node it preempts the working thread if it is behind it
//! in the group, and the kernel then picks again from the root (`schedule`), where a
//! node past the average virtual runtime or past its slice loses its core
//! (`__pick_eevdf` keeps the running group only while it is eligible); else it waits in
//! the group until the working thread blocks or the group next gets a core. On a node
//! waiting for a core, the group may now preempt a running node, as a woken node does.
//! On an idle node the group wakes, placed by its lag, for the round alone. A round
//! takes `cpu.per_sysmon_round` of the core, charged to the node (its virtual runtime,
//! its CPU), and when it ends the kernel picks again from the root. A group waiting for
//! its `sysmon` alone, or on a core for it, that gets work meanwhile has its working
//! thread wake inside it (with the same chance to preempt, if waiting).

use std::collections::VecDeque;

use crate::config::Time;
use crate::cpu_use::{CpuSamples, CpuUse, Switches};
use crate::goroutines::{
    Goroutine, Process, Readied, SyscallShares, TurnCosts, Waited, Wake, NODE_THREAD, SYSMON_THREAD,
};
use crate::group::Group;
use crate::queue::{Event, EventQueue};
use crate::sysmon::Sysmon;

/// Linux's default time slice on a host of `cores` cores, in nanoseconds.
pub fn kernel_default_slice(cores: u32) -> Time {
    let cpus = cores.clamp(1, 8);
    750_000 * Time::from(1 + cpus.ilog2())
}

/// A node (a process): its goroutines, and where it is on the host.
#[derive(Default)]
struct Node {
    process: Process,
    /// On a core now.
    running: bool,
    /// In its host's run queue.
    waiting: bool,
    /// EEVDF's virtual runtime (equal weights: CPU time run), its virtual deadline, and
    /// the lag it kept when it last blocked.
    vruntime: Time,
    deadline: Time,
    lag: i64,
    /// When the node last became runnable (woke, or lost its core with work left), and
    /// its waits from then to running on a core, when recorded (`cpu.record_waits`).
    ready_since: Time,
    core_waits: Option<Vec<CoreWait>>,
    /// The node's working thread ran in its current visit to a core, and its wait for
    /// it was recorded (a visit for `sysmon`'s round alone is not its wait).
    visit_recorded: bool,
    /// Go's `sysmon` thread of the node's process, when modelled (`sysmon.rs`); when
    /// its last sleep ended and where the node was then; its rounds, when recorded
    /// (when, the wait for it, and where the node was when it woke).
    sysmon: Option<Sysmon>,
    sysmon_woke: Option<(Time, Readied)>,
    sysmon_rounds: Option<Vec<(Time, Time, Readied)>>,
    /// `sysmon`'s place against the working thread inside the node's group.
    group: Group,
    /// The node's core runs `sysmon`'s round, not the working thread; the sleep it
    /// takes when the round is done (`None`: its deep sleep), decided as it began.
    sysmon_on_core: bool,
    sysmon_sleep: Option<Time>,
    /// `sysmon` woke behind the working thread at an instant its core's tick was due:
    /// it preempts the working thread once the tick's event is carried out.
    sysmon_preempts: bool,
    /// The working thread is blocked in `netpoll`, or woke from it and has not run
    /// yet: the node's P is idle. Go's `findRunnable` puts the P on the idle list before
    /// its blocking `netpoll` and takes it back only once the thread runs again
    /// (`pidleput`, then `pidleget` after `netpoll(delay)` returns), so a `sysmon` round
    /// while the node waits for a core after waking finds the P idle and sleeps deeply,
    /// and the thread's first system call wakes it again.
    in_netpoll: bool,
    /// Its threads' switches, per second (the `resources` table), and when its working
    /// thread last left a core with work left (`preempted`).
    switches: Switches,
    preempted_at: Option<Time>,
}

/// A recorded wait of a node for a core: when it ended (the node ran), how long it was,
/// and how long the node then held the core (until it blocked, was preempted or used up
/// its slice; 0 until it leaves).
#[derive(Clone, Copy)]
struct CoreWait {
    at: Time,
    wait: Time,
    ran: Time,
}

impl Node {
    /// The node leaves its core at `now`: a recorded visit gets its length.
    fn leave_core(&mut self, now: Time) {
        self.running = false;
        if !std::mem::take(&mut self.visit_recorded) {
            return;
        }
        if let Some(visit) = self.core_waits.as_mut().and_then(|w| w.last_mut()) {
            visit.ran = now - visit.at;
        }
    }

    fn sysmon_due(&self) -> bool {
        self.sysmon.as_ref().is_some_and(Sysmon::due)
    }

    /// The running working thread wakes a `sysmon` in its deep sleep: by a system call
    /// (`entersyscall`), or taking the idle P back after a retaken call
    /// (`exitsyscallTryGetP`). Its round is due, placed in the group beside the working
    /// thread (whose time on the core is counted); returns whether it is behind it and
    /// preempts it, or `None` if `sysmon` was not in its deep sleep.
    fn wake_deep_sysmon(&mut self, now: Time) -> Option<bool> {
        let sysmon = self.sysmon.as_mut().filter(|m| m.deep())?;
        sysmon.syscall_wake();
        self.sysmon_woke = Some((now, Readied::SysmonNodeRunning));
        Some(self.group.sysmon_wakes(true, 0))
    }

    /// The working thread leaves its core at `now` with work left: an involuntary
    /// switch (`nonvoluntary_ctxt_switches`), unless the kernel's pick gives the core
    /// straight back to it (`resumes`).
    fn preempted(&mut self, now: Time) {
        self.switches.worker_preempted(now);
        self.preempted_at = Some(now);
    }

    /// The node takes a core at `now`, its working thread first if `worker_first`: one
    /// preempted at this instant on it never left it (`__schedule` switches nothing when
    /// the pick is the task that was running).
    fn resumes(&mut self, now: Time, worker_first: bool) {
        if self.preempted_at.take() == Some(now) && worker_first {
            self.switches.worker_resumed(now);
        }
    }
}

const IDLE: u32 = u32::MAX;

/// How the host's kernel schedules: its time slice, its tick (`1 / CONFIG_HZ`), and
/// whether it ends a slice by a timer of its own (`HRTICK`) rather than at the next tick;
/// and whether it schedules each node's `sysmon` thread too (`sysmon.rs`).
#[derive(Clone, Copy, Debug)]
pub struct Kernel {
    pub slice: Time,
    pub tick: Time,
    pub hrtick: bool,
    pub sysmon: bool,
    /// The CPU time of a `sysmon` round, on the node's core.
    pub sysmon_round: Time,
    /// Where in a connection's reads and writes the system call is, as `sysmon` finds
    /// it (`Process::in_syscall`).
    pub syscall_shares: SyscallShares,
}

impl Kernel {
    /// The most lag a thread or a node keeps when it blocks: two slices or a tick
    /// (`update_entity_lag`).
    fn lag_limit(&self) -> i64 {
        (2 * self.slice).max(self.tick) as i64
    }

    /// When the kernel notices that a slice ending at `end` is over: then with `HRTICK`,
    /// else at the first tick from then on (ticks every `tick` from time 0).
    fn notices_slice_end(&self, end: Time) -> Time {
        if self.hrtick || self.tick == 0 {
            end
        } else {
            end.div_ceil(self.tick) * self.tick
        }
    }
}

#[derive(Clone, Copy)]
struct Core {
    /// The node on the core, or `IDLE`.
    node: u32,
    /// When the node's running goroutine last (re)started.
    since: Time,
    /// When the node's slice ends, and when the kernel notices (`noticed_at`): at the
    /// first tick from then on, unless a node wakes on the host before.
    slice_end: Time,
    noticed_at: Time,
    /// When the core's pending tick is due.
    tick_at: Time,
    /// Counts the preemptions on the core: a pushed tick cannot be taken back, so a
    /// tick carries the generation it was pushed in and one from an older generation is
    /// stale.
    generation: u32,
}

struct Host {
    cores: Vec<Core>,
    run_queue: VecDeque<u32>,
    /// The average virtual runtime when the host last had runnable nodes.
    last_v: Time,
}

pub struct Slices {
    kernel: Kernel,
    nodes_per_host: u32,
    hosts: Vec<Host>,
    procs: Vec<Node>,
}

impl Slices {
    /// Hosts for `nodes` nodes, whose goroutines' turns cost `turn_costs`, with pubsub's
    /// event loop and yamux's goroutines if `event_loop`; the nodes in `record_waits`
    /// record their goroutines' run-queue waits.
    pub fn new(
        nodes: u32,
        nodes_per_host: u32,
        cores: u32,
        kernel: Kernel,
        turn_costs: TurnCosts,
        event_loop: bool,
        record_waits: &[u32],
    ) -> Self {
        let sysmon = kernel.sysmon.then(Sysmon::default);
        let hosts = nodes.div_ceil(nodes_per_host).max(1);
        let idle = Core {
            node: IDLE,
            since: 0,
            slice_end: 0,
            noticed_at: 0,
            tick_at: 0,
            generation: 0,
        };
        Self {
            kernel,
            nodes_per_host,
            hosts: (0..hosts)
                .map(|_| Host {
                    cores: vec![idle; cores as usize],
                    run_queue: VecDeque::new(),
                    last_v: 0,
                })
                .collect(),
            procs: (0..nodes)
                .map(|node| {
                    let mut process = Process::new(turn_costs);
                    process.set_syscall_shares(kernel.syscall_shares);
                    if sysmon.is_some() {
                        process.end_turns_at_sysmon();
                    }
                    if event_loop {
                        process.writes_in_send_loop();
                    }
                    let record = record_waits.contains(&node);
                    if record {
                        process.record_waits();
                    }
                    Node {
                        process,
                        core_waits: record.then(Vec::new),
                        sysmon,
                        sysmon_rounds: (record && sysmon.is_some()).then(Vec::new),
                        in_netpoll: true,
                        ..Node::default()
                    }
                })
                .collect(),
        }
    }

    pub fn slice(&self) -> Time {
        self.kernel.slice
    }

    /// True if `node`'s reading goroutine `g` waits on the network with no data
    /// arrived for it (`Process::waits_on_network`).
    pub fn waits_on_network(&self, node: u32, g: Goroutine) -> bool {
        self.procs[node as usize].process.waits_on_network(g)
    }

    /// True if work given to `node`'s goroutine `g` now is data from the network: the
    /// `recvLoop`'s always, a reader's unless its `recvLoop` hands it on (during the
    /// `recvLoop`'s piece; with the event loop the reader reads the stream's buffer).
    pub fn reads_network(&self, node: u32, g: Goroutine) -> bool {
        match g {
            Goroutine::RecvLoop(_) => true,
            Goroutine::Reader(_) => !self.handing_off(node),
            _ => false,
        }
    }

    /// Each node's threads' switches at the sample `times` (`CpuUse::sample_times`),
    /// into `samples`, whose rows run by node then time: its voluntary switches (the
    /// working thread's blocks, and `sysmon`'s sleep after each round), its involuntary
    /// ones (the working thread's preemptions), and with `sysmon` its runs and their CPU
    /// time.
    pub fn add_switches(&self, samples: &mut CpuSamples, times: &[Time]) {
        for p in &self.procs {
            for [runs, blocks, preempted] in p.switches.cumulative(times) {
                samples.voluntary_switches.push(runs + blocks);
                samples.involuntary_switches.push(preempted);
                if self.kernel.sysmon {
                    samples.sysmon_runs.push(runs);
                    samples.sysmon_ns.push(runs * self.kernel.sysmon_round);
                }
            }
        }
    }

    /// Every recorded wait, by node: its goroutines' for its P, then its own for a core
    /// (the kind `NODE_THREAD`).
    pub fn waits(&self) -> impl Iterator<Item = Waited> + '_ {
        self.procs.iter().enumerate().flat_map(|(node, p)| {
            let node = node as u32;
            let goroutines = p.process.waits().iter().map(move |w| Waited {
                node,
                kind: w.id.kind(),
                at: w.at,
                wait: w.wait,
                ran: 0,
                readied: Some(w.readied),
            });
            let cores = p.core_waits.iter().flatten().map(move |w| Waited {
                node,
                kind: NODE_THREAD,
                at: w.at,
                wait: w.wait,
                ran: w.ran,
                readied: None,
            });
            let rounds = p
                .sysmon_rounds
                .iter()
                .flatten()
                .map(move |&(at, wait, woke_at)| Waited {
                    node,
                    kind: SYSMON_THREAD,
                    at,
                    wait,
                    ran: 0,
                    readied: Some(woke_at),
                });
            goroutines.chain(cores).chain(rounds)
        })
    }

    /// `node`'s goroutines.
    pub fn process(&mut self, node: u32) -> &mut Process {
        &mut self.procs[node as usize].process
    }

    /// True if `node`'s working thread has nothing to run: not on a core, no goroutine
    /// runnable. (A node leaves its core only once its run queue is empty and the
    /// netpoller's data was injected, `Process::idle_poll`, or its slice is used up, and
    /// then it waits with its work; its group may also wait for a core, or be on one,
    /// for its `sysmon`'s round alone, its working thread blocked in `netpoll`.)
    pub fn idle(&self, node: u32) -> bool {
        let p = &self.procs[node as usize];
        let working = p.running && !p.sysmon_on_core;
        !working && !p.process.has_work()
    }

    /// True if the event being carried out is the hand-off of `node`'s running
    /// goroutine (`Process::handing_off`).
    pub fn handing_off(&self, node: u32) -> bool {
        self.procs[node as usize].process.handing_off()
    }

    /// `node`'s goroutine `g` has work of `cost` ready now; `event` happens when it is
    /// done; `wake` says where `g` goes if it was waiting. A node already on a core or
    /// waiting for one just queues it; an idle one takes a free core at once, or waits
    /// in the run queue; its wake-up ends the slice of a node running past it
    /// (`notice_overrun`), or else may preempt a running node (`wakeup_preempt`); the
    /// time the node it displaces ran is charged to `used`.
    #[allow(clippy::too_many_arguments)]
    pub fn submit(
        &mut self,
        queue: &mut EventQueue,
        node: u32,
        g: Goroutine,
        wake: Wake,
        cost: Time,
        event: Event,
        used: &mut CpuUse,
    ) {
        // Data for a goroutine that reads the network: runnable when Go's netpoller
        // says so.
        let network = self.reads_network(node, g);
        let now = queue.now();
        let p = &mut self.procs[node as usize];
        p.process.at(now);
        let had_work = p.process.has_work();
        if network {
            p.process.arrive(g, cost, event, now);
        } else {
            p.process.push(g, cost, event, wake);
        }
        if had_work || !p.process.has_work() {
            return;
        }
        if p.running {
            // On the core for `sysmon`'s round alone: the working thread runs after it.
            p.ready_since = now;
            return;
        }
        let host = (node / self.nodes_per_host) as usize;
        if p.waiting {
            // Only a group waiting for `sysmon`'s round alone has no work: the working
            // thread wakes in it.
            debug_assert!(p.sysmon.is_some(), "a node waits for a core with work");
            p.ready_since = now;
            self.wake_in_waiting_group(queue, host, node, used);
            return;
        }
        self.wake_group(queue, host, node, used);
    }

    /// Idle `node`'s group wakes (a thread of it did): placed by its lag, it takes a
    /// free core at once, or waits in the run queue; its wake-up ends the slice of a
    /// node running past it (`notice_overrun`), or else may preempt a running node
    /// (`wakeup_preempt`); the time the node it displaces ran is charged to `used`.
    fn wake_group(&mut self, queue: &mut EventQueue, h: usize, node: u32, used: &mut CpuUse) {
        self.place(h, node, queue.now());
        self.procs[node as usize].ready_since = queue.now();
        let free = self.hosts[h].cores.iter().position(|c| c.node == IDLE);
        match free {
            Some(core) => self.start(queue, h, core, node),
            None => {
                self.procs[node as usize].waiting = true;
                self.hosts[h].run_queue.push_back(node);
                if !self.notice_overrun(queue, h, used) {
                    let woken = self.hosts[h].run_queue.len() - 1;
                    self.wakeup_preempt(queue, h, woken, used);
                }
            }
        }
    }

    /// A thread of `node` woke while its group waits in the run queue: the kernel
    /// notices an overrun slice, or else the group preempts a running node if it is
    /// EEVDF's pick (`check_preempt_wakeup_fair` compares the groups at the root,
    /// `find_matching_se`).
    fn wake_in_waiting_group(
        &mut self,
        queue: &mut EventQueue,
        h: usize,
        node: u32,
        used: &mut CpuUse,
    ) {
        if self.notice_overrun(queue, h, used) {
            return;
        }
        if let Some(at) = self.hosts[h].run_queue.iter().position(|&n| n == node) {
            self.wakeup_preempt(queue, h, at, used);
        }
    }

    /// `node`'s `sysmon` woke from its sleep (`Event::SysmonWake`), placed in its group
    /// (`group.rs`): on a running node it may preempt the working thread, on a waiting
    /// one its group may preempt another node, an idle one's group wakes for the round
    /// (module docs).
    pub fn sysmon_wake(&mut self, queue: &mut EventQueue, node: u32, used: &mut CpuUse) {
        let now = queue.now();
        let h = (node / self.nodes_per_host) as usize;
        let core = self.procs[node as usize]
            .running
            .then(|| self.core_of(h, node));
        // The working thread's time on its core so far counts in its place.
        let running = core.map_or(0, |k| now - self.hosts[h].cores[k].since);
        let p = &mut self.procs[node as usize];
        p.sysmon.as_mut().expect("sysmon is modelled").wake();
        let place = if core.is_some() {
            Readied::SysmonNodeRunning
        } else if p.waiting {
            Readied::SysmonNodeWaiting
        } else {
            Readied::SysmonNodeIdle
        };
        p.sysmon_woke = Some((now, place));
        let behind = p.group.sysmon_wakes(p.process.has_work(), running);
        if let Some(k) = core {
            if behind {
                self.sysmon_preempts_running(queue, h, k, used);
            }
        } else if p.waiting {
            self.wake_in_waiting_group(queue, h, node, used);
        } else {
            self.wake_group(queue, h, node, used);
        }
    }

    /// `sysmon` woke behind the working thread on core `k`: it preempts it, after the
    /// tick's event if a tick is due now.
    fn sysmon_preempts_running(
        &mut self,
        queue: &mut EventQueue,
        h: usize,
        k: usize,
        used: &mut CpuUse,
    ) {
        let c = self.hosts[h].cores[k];
        if c.tick_at <= queue.now() {
            self.procs[c.node as usize].sysmon_preempts = true;
            return;
        }
        self.sysmon_preempts_worker(queue, h, k, used);
    }

    /// The core of running `node`.
    fn core_of(&self, h: usize, node: u32) -> usize {
        let on_core = |c: &Core| c.node == node;
        self.hosts[h]
            .cores
            .iter()
            .position(on_core)
            .expect("on a core")
    }

    /// Core `k`'s working thread is preempted by its own `sysmon`: the kernel picks
    /// again from the root, and a group that stays EEVDF's pick runs `sysmon`'s round;
    /// one that does not waits with both threads runnable.
    fn sysmon_preempts_worker(
        &mut self,
        queue: &mut EventQueue,
        h: usize,
        k: usize,
        used: &mut CpuUse,
    ) {
        let now = queue.now();
        if !self.keeps_core(h, k, now) {
            self.preempt(queue, h, k, used);
            return;
        }
        self.interrupt(h, k, now, used);
        let node = self.hosts[h].cores[k].node;
        self.procs[node as usize].switches.worker_preempted(now);
        self.run_sysmon(queue, h, k);
    }

    /// Core `k`'s node runs its `sysmon`'s round: what the round does is decided now
    /// (`Sysmon::round`, on the node's state as the round begins: on a node whose P runs
    /// goroutines, `retake` takes the P from a system call, `Process::retake`, or
    /// preempts a goroutine whose turn is too long, as the working thread next runs),
    /// and the core's tick comes when its CPU time is spent. A round runs to its end: it
    /// is a few µs, and nothing preempts it.
    fn run_sysmon(&mut self, queue: &mut EventQueue, h: usize, k: usize) {
        let now = queue.now();
        let node = self.hosts[h].cores[k].node;
        let p = &mut self.procs[node as usize];
        p.sysmon_on_core = true;
        p.sysmon_preempts = false;
        p.switches.sysmon_ran(now);
        let busy = p.process.p_busy() && !p.in_netpoll;
        let too_long = busy && p.process.long_turn(now);
        let syscall = p.process.in_syscall();
        let sysmon = p.sysmon.as_mut().expect("sysmon is modelled");
        if let Some(rounds) = &mut p.sysmon_rounds {
            let (woke, place) = p.sysmon_woke.expect("a round follows a wake-up");
            rounds.push((now, now - woke, place));
        }
        let round = sysmon.round(busy, syscall, too_long);
        p.sysmon_sleep = round.sleep;
        if round.retook {
            p.process.retake();
        } else if too_long {
            p.process.request_preemption();
        }
        debug_assert_eq!(
            self.hosts[h].cores[k].since, now,
            "the core's time is counted"
        );
        self.schedule(queue, h, k);
    }

    /// Core `k`'s `sysmon` round is done: `sysmon` sleeps (its next wake-up, unless it
    /// sleeps deeply), and the kernel picks again from the root: the node's working
    /// thread runs on if it has work and the group stays EEVDF's pick inside its slice;
    /// else the group queues again with its work (with a new deadline if its slice is
    /// over: `put_prev_entity` → `update_curr`, and a group alone on the host is picked
    /// again at once), or blocks.
    fn sysmon_done(&mut self, queue: &mut EventQueue, h: usize, k: usize, now: Time) {
        let node = self.hosts[h].cores[k].node;
        let limit = self.kernel.lag_limit();
        let p = &mut self.procs[node as usize];
        p.sysmon_on_core = false;
        if let Some(sleep) = p.sysmon_sleep.take() {
            queue.push(now + sleep, node, Event::SysmonWake { node });
        }
        p.process.at(now);
        let has_work = p.process.has_work();
        p.group.sysmon_sleeps(has_work, limit);
        let in_slice = now < self.hosts[h].cores[k].slice_end;
        if has_work && in_slice && self.keeps_core(h, k, now) {
            self.worker_runs(queue, h, k);
            return;
        }
        self.leave(queue, h, k, has_work, now);
    }

    /// True if core `k`'s node stays EEVDF's pick when the kernel picks again now: no
    /// node waits, or it is inside its slice and not past the average virtual runtime
    /// (`RUN_TO_PARITY` protects it only then).
    fn keeps_core(&self, h: usize, k: usize, now: Time) -> bool {
        let c = self.hosts[h].cores[k];
        if self.hosts[h].run_queue.is_empty() {
            return true;
        }
        let vruntime = self.procs[c.node as usize].vruntime + (now - c.since);
        now < c.slice_end && vruntime <= self.avg_vruntime(h, now)
    }

    /// Core `k`'s node, with work left, loses the core to EEVDF's pick: it queues again,
    /// with a new deadline if its slice is over (`update_deadline`).
    fn preempt(&mut self, queue: &mut EventQueue, h: usize, k: usize, used: &mut CpuUse) {
        let now = queue.now();
        let slice_over = self.hosts[h].cores[k].slice_end <= now;
        let running = self.take_core(h, k, now, used);
        self.queue_again(h, running, slice_over);
        self.run_next(queue, h, k, now);
    }

    /// EEVDF's wake-up preemption (`check_preempt_wakeup_fair`): `update_curr`, then
    /// `if (__pick_eevdf(cfs_rq, !do_preempt_short) == pse) goto preempt;`, with
    /// `do_preempt_short` false as every node has the same slice. `__pick_eevdf` keeps
    /// the running task only while it is eligible and inside its protected slice
    /// (`RUN_TO_PARITY`: `vprot`, set at pick, is its deadline when all slices are
    /// equal); else it picks the eligible task with the earliest deadline. So a node that
    /// ran past the average virtual runtime loses its core to a node that wakes and is
    /// now EEVDF's pick among those waiting (`resched_curr_lazy`: with `preempt=none` a
    /// task in user space switches on its return from the interrupt, at once here). The
    /// preempted node goes back to the run queue with its virtual runtime and deadline,
    /// and gets the rest of its slice when it next runs.
    ///
    /// The node that woke is at `woken` in the run queue.
    ///
    /// A node past the end of its slice has lost its core already (`notice_overrun`,
    /// called first): the nodes left on cores are inside their slices, so only the
    /// eligibility test can fail. A core whose tick is due now is left alone: its piece
    /// of work may be done at this instant, and its event must be carried out by the
    /// tick (which picks the next node itself if the slice is over); so is a core that
    /// runs a `sysmon` round (the kernel picks again when it ends). The host has one
    /// run queue for its cores (the kernel has one per CPU, and wakes a task on one
    /// CPU): the cores are checked in order, and at most one is preempted.
    fn wakeup_preempt(
        &mut self,
        queue: &mut EventQueue,
        h: usize,
        woken: usize,
        used: &mut CpuUse,
    ) {
        let now = queue.now();
        let v_avg = self.avg_vruntime(h, now);
        let node = self.hosts[h].run_queue[woken];
        if self.eligible_pick(h, v_avg) != Some(woken) {
            return;
        }
        let procs = &self.procs;
        let ineligible = |c: &Core| {
            c.node != IDLE
                && c.tick_at > now
                && !procs[c.node as usize].sysmon_on_core
                && procs[c.node as usize].vruntime + (now - c.since) > v_avg
        };
        let Some(k) = self.hosts[h].cores.iter().position(ineligible) else {
            return;
        };
        let running = self.take_core(h, k, now, used);
        let rq = &mut self.hosts[h].run_queue;
        rq.remove(woken);
        rq.push_back(running);
        self.procs[node as usize].waiting = false;
        self.start(queue, h, k, node);
    }

    /// Takes core `k` of host `h` from its node, which has work left (its tick is due
    /// after now: the piece, or the turn, has time left): the time it ran is charged to
    /// `used`, its pending tick goes stale, and it waits again from now. Returns it.
    fn take_core(&mut self, h: usize, k: usize, now: Time, used: &mut CpuUse) -> u32 {
        let running = self.interrupt(h, k, now, used);
        let p = &mut self.procs[running as usize];
        p.leave_core(now);
        p.preempted(now);
        p.waiting = true;
        p.ready_since = now;
        running
    }

    /// Stops core `k`'s running piece before it is done: the time it ran is charged to
    /// `used` and the core's pending tick goes stale. Returns the core's node.
    fn interrupt(&mut self, h: usize, k: usize, now: Time, used: &mut CpuUse) -> u32 {
        let done = self.finish(h as u32, k as u32, now, used);
        debug_assert!(done.is_none(), "a piece preempted before it is done");
        let core = &mut self.hosts[h].cores[k];
        core.generation = core.generation.wrapping_add(1);
        core.node
    }

    /// A node woke on host `h`: the kernel updates the running node's runtime
    /// (`enqueue_entity` → `update_curr`), and one past the end of its slice gets a new
    /// deadline and loses the core to EEVDF's pick (`update_deadline`, then
    /// `resched_curr_lazy`). True if a core's node was past its slice; the first such
    /// core is rescheduled (the kernel enqueues the woken node on one CPU).
    fn notice_overrun(&mut self, queue: &mut EventQueue, h: usize, used: &mut CpuUse) -> bool {
        let now = queue.now();
        let procs = &self.procs;
        let overrun = |c: &Core| {
            c.node != IDLE
                && c.slice_end <= now
                && c.tick_at > now
                && !procs[c.node as usize].sysmon_on_core
        };
        let Some(k) = self.hosts[h].cores.iter().position(overrun) else {
            return false;
        };
        self.preempt(queue, h, k, used);
        true
    }

    /// `node` left its core still runnable: it queues again, with its deadline, or with
    /// the next one, a slice on from where it stopped, if its slice is over
    /// (`update_deadline`).
    fn queue_again(&mut self, h: usize, node: u32, slice_over: bool) {
        if slice_over {
            let p = &mut self.procs[node as usize];
            p.deadline = p.vruntime + self.kernel.slice;
        }
        self.hosts[h].run_queue.push_back(node);
    }

    /// True if a tick of `core` pushed in `generation` is the core's pending one (not
    /// made stale by a preemption).
    pub fn current(&self, host: u32, core: u32, generation: u32) -> bool {
        self.hosts[host as usize].cores[core as usize].generation == generation
    }

    /// The core's tick (its piece of work or its slice ended): account the time run (to
    /// the node's goroutines, and in `used`), and return the finished piece's event, if
    /// the piece is done. Call `next` after carrying the event out (which may give the
    /// node more work).
    pub fn finish(&mut self, host: u32, core: u32, now: Time, used: &mut CpuUse) -> Option<Event> {
        let c = &mut self.hosts[host as usize].cores[core as usize];
        let elapsed = now - c.since;
        used.charge(c.node, c.since, now);
        c.since = now;
        let p = &mut self.procs[c.node as usize];
        p.vruntime += elapsed;
        if p.sysmon_on_core {
            p.group.sysmon_ran(elapsed);
            return None;
        }
        p.group.worker_ran(elapsed);
        p.process.at(now);
        p.process.run_for(elapsed)
    }

    /// After a tick: the node keeps the core while it has work and slice left; else it
    /// blocks (no work) or queues again (slice used up), and the next node takes over.
    /// A `sysmon` waiting in the group runs when the working thread blocks, if the
    /// group stays EEVDF's pick; one that woke behind it at this instant preempts it. A
    /// tick that ends a `sysmon` round goes to `sysmon_done`.
    pub fn next(&mut self, queue: &mut EventQueue, host: u32, core: u32, used: &mut CpuUse) {
        let now = queue.now();
        let (h, k) = (host as usize, core as usize);
        let c = self.hosts[h].cores[k];
        let node = c.node;
        if self.procs[node as usize].sysmon_on_core {
            self.sysmon_done(queue, h, k, now);
            return;
        }
        let p = &mut self.procs[node as usize];
        let process = &mut p.process;
        process.at(now);
        process.sysmon_poll(now);
        process.settle();
        process.idle_poll();
        let has_work = process.has_work();
        if !has_work {
            p.switches.worker_blocked(now);
            p.in_netpoll = true;
        }
        if process.took_idle_p() && p.wake_deep_sysmon(now) == Some(true) {
            p.sysmon_preempts = true;
        }
        if has_work && now < c.noticed_at {
            // A piece that costs nothing is done at this instant: its tick comes first,
            // and `sysmon` preempts the working thread after it.
            if p.sysmon_preempts && p.process.until_tick() > 0 {
                p.sysmon_preempts = false;
                self.sysmon_preempts_worker(queue, h, k, used);
            } else {
                self.schedule(queue, h, k);
            }
            return;
        }
        p.sysmon_preempts = false;
        let sysmon_waits = self.procs[node as usize].sysmon_due();
        if !has_work && sysmon_waits && self.keeps_core(h, k, now) {
            self.run_sysmon(queue, h, k);
            return;
        }
        if has_work {
            self.procs[node as usize].preempted(now);
        }
        self.leave(queue, h, k, has_work || sysmon_waits, now);
    }

    /// Core `k`'s node leaves it: blocked, keeping its lag, or still `runnable`, queued
    /// again (with a new deadline if its slice is over); the next node takes the core.
    fn leave(&mut self, queue: &mut EventQueue, h: usize, k: usize, runnable: bool, now: Time) {
        let c = self.hosts[h].cores[k];
        if !runnable {
            self.keep_lag(h, c.node, now);
        }
        let p = &mut self.procs[c.node as usize];
        p.leave_core(now);
        if runnable {
            p.waiting = true;
            p.ready_since = now;
            self.queue_again(h, c.node, c.slice_end <= now);
        }
        self.run_next(queue, h, k, now);
    }

    /// Core `k` of host `h` goes to EEVDF's pick among the waiting nodes, or idles.
    fn run_next(&mut self, queue: &mut EventQueue, h: usize, k: usize, now: Time) {
        self.hosts[h].cores[k].node = IDLE;
        if let Some(next) = self.pick(h, now) {
            self.procs[next as usize].waiting = false;
            self.start(queue, h, k, next);
        }
    }

    /// The host's runnable nodes (on a core or waiting): the sum of their virtual
    /// runtimes, those on a core counted up to `now`, and how many they are.
    fn runnable(&self, h: usize, now: Time) -> (u128, i64) {
        let host = &self.hosts[h];
        let running = host.cores.iter().filter(|c| c.node != IDLE);
        let running = running.map(|c| self.procs[c.node as usize].vruntime + (now - c.since));
        let waiting = host
            .run_queue
            .iter()
            .map(|&i| self.procs[i as usize].vruntime);
        running
            .chain(waiting)
            .fold((0, 0), |(sum, n), v| (sum + u128::from(v), n + 1))
    }

    /// EEVDF's average virtual runtime of the host's runnable nodes (`avg_vruntime`,
    /// equal weights), or the last one when there are none.
    fn avg_vruntime(&self, h: usize, now: Time) -> Time {
        let (sum, n) = self.runnable(h, now);
        sum.checked_div(n as u128)
            .map_or(self.hosts[h].last_v, |v| v as Time)
    }

    /// `node` blocks (it has no work): it keeps its lag, the average virtual runtime less
    /// its own, within two slices or a tick (`update_entity_lag`).
    fn keep_lag(&mut self, h: usize, node: u32, now: Time) {
        let v_avg = self.avg_vruntime(h, now);
        let limit = self.kernel.lag_limit();
        let p = &mut self.procs[node as usize];
        p.lag = (v_avg as i64 - p.vruntime as i64).clamp(-limit, limit);
        self.hosts[h].last_v = v_avg;
    }

    /// A node that wakes is placed at the average virtual runtime less the lag it kept,
    /// scaled so that it keeps that lag once it counts in the average (`place_entity`
    /// with `PLACE_LAG`: lag × (load + weight) / load), with a deadline one slice on. A
    /// node that blocked having run more than its share (negative lag) stays where it was
    /// until the average passes it (`DELAY_DEQUEUE`: it burns its negative lag off while
    /// it sleeps, and `DELAY_ZERO` clips what is left at 0): it wakes at its old virtual
    /// runtime or at the average, whichever is later.
    fn place(&mut self, h: usize, node: u32, now: Time) {
        let v_avg = self.avg_vruntime(h, now);
        let (_, others) = self.runnable(h, now);
        let p = &mut self.procs[node as usize];
        p.vruntime = if p.lag >= 0 {
            let lag = if others > 0 {
                p.lag * (others + 1) / others
            } else {
                p.lag
            };
            (v_avg as i64 - lag).max(0) as Time
        } else {
            p.vruntime.max(v_avg)
        };
        p.deadline = p.vruntime + self.kernel.slice;
    }

    /// EEVDF's pick (`pick_eevdf`): of the waiting nodes whose virtual runtime is not past
    /// the average (eligible), the one with the earliest virtual deadline, the first
    /// queued on a tie; if none is eligible, the least run.
    fn pick(&mut self, h: usize, now: Time) -> Option<u32> {
        let v_avg = self.avg_vruntime(h, now);
        let host = &self.hosts[h];
        let procs = &self.procs;
        let best = self.eligible_pick(h, v_avg).or_else(|| {
            let queued = host.run_queue.iter().enumerate();
            queued
                .min_by_key(|(_, &i)| procs[i as usize].vruntime)
                .map(|(at, _)| at)
        })?;
        self.hosts[h].run_queue.remove(best)
    }

    /// Where in the run queue the eligible waiting node with the earliest deadline is
    /// (the first queued on a tie), with the average virtual runtime `v_avg`.
    fn eligible_pick(&self, h: usize, v_avg: Time) -> Option<usize> {
        let procs = &self.procs;
        let queued = self.hosts[h].run_queue.iter().enumerate();
        queued
            .filter(|(_, &i)| procs[i as usize].vruntime <= v_avg)
            .min_by_key(|(_, &i)| procs[i as usize].deadline)
            .map(|(at, _)| at)
    }

    /// `node` takes core `core` of host `host`, and the kernel picks a thread in its
    /// group: `sysmon` if its round is due and it is the group's pick (`group.rs`), or
    /// the working thread has nothing to run; else the working thread. The working
    /// thread's first system call wakes a `sysmon` in its deep sleep, which then runs
    /// first only if it is behind the working thread.
    fn start(&mut self, queue: &mut EventQueue, host: usize, core: usize, node: u32) {
        let now = queue.now();
        let p = &mut self.procs[node as usize];
        p.running = true;
        // Placed or requeued with a deadline one slice on (`place`, `next`).
        let left = p.deadline - p.vruntime;
        let c = &mut self.hosts[host].cores[core];
        c.node = node;
        c.since = now;
        c.slice_end = now + left;
        c.noticed_at = self.kernel.notices_slice_end(c.slice_end);
        let p = &mut self.procs[node as usize];
        let has_work = p.process.has_work();
        let mut sysmon_first = !has_work || p.group.sysmon_first();
        if let Some(behind) = has_work.then(|| p.wake_deep_sysmon(now)).flatten() {
            sysmon_first = behind;
        }
        debug_assert!(has_work || p.sysmon_due(), "a node runs for work or sysmon");
        let sysmon_runs = p.sysmon_due() && sysmon_first;
        p.resumes(now, !sysmon_runs);
        if sysmon_runs {
            self.run_sysmon(queue, host, core);
        } else {
            self.worker_runs(queue, host, core);
        }
    }

    /// Core `k`'s node's working thread runs: its wait for the core is recorded, if it
    /// is the first time it runs in this visit, and a goroutine `sysmon` preempted
    /// meanwhile stops.
    fn worker_runs(&mut self, queue: &mut EventQueue, h: usize, k: usize) {
        let now = queue.now();
        let p = &mut self.procs[self.hosts[h].cores[k].node as usize];
        if let Some(waits) = p.core_waits.as_mut().filter(|_| !p.visit_recorded) {
            waits.push(CoreWait {
                at: now,
                wait: now - p.ready_since,
                ran: 0,
            });
            p.visit_recorded = true;
        }
        // Back from `netpoll`: it takes the P, and its first system call wakes a
        // `sysmon` that slept deeply meanwhile (`start` wakes one that was already).
        let back = std::mem::take(&mut p.in_netpoll) && p.process.has_work();
        if back && p.wake_deep_sysmon(now) == Some(true) {
            p.sysmon_preempts = true;
        }
        p.process.at(now);
        p.process.take_preemption();
        self.schedule(queue, h, k);
    }

    /// The core's next tick: when its goroutine's piece is done or its turn ends, or the
    /// node's slice ends, whichever first.
    fn schedule(&mut self, queue: &mut EventQueue, host: usize, core: usize) {
        let c = &mut self.hosts[host].cores[core];
        let p = &self.procs[c.node as usize];
        let at = if p.sysmon_on_core {
            c.since + self.kernel.sysmon_round
        } else {
            (c.since + p.process.until_tick()).min(c.noticed_at)
        };
        c.tick_at = at;
        let event = Event::CoreTick {
            host: host as u32,
            core: core as u32,
            generation: c.generation,
        };
        queue.push(at, host as u32 * self.nodes_per_host, event);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernel_scales_its_base_slice_by_the_log_of_the_cpus() {
        // 0.75 ms × (1 + ilog2(cpus)), cpus capped at 8 (kernel/sched/fair.c).
        let ms = |n: u32| n as Time * 250_000; // quarters of a millisecond
        assert_eq!(kernel_default_slice(1), ms(3));
        assert_eq!(kernel_default_slice(2), ms(6));
        assert_eq!(kernel_default_slice(3), ms(6));
        assert_eq!(kernel_default_slice(4), ms(9));
        assert_eq!(kernel_default_slice(8), ms(12));
        assert_eq!(kernel_default_slice(64), ms(12));
    }
}
