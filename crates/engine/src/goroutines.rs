//! Inside a node on a time-sliced host: its goroutines, as Go's scheduler runs them.
//!
//! go-libp2p-pubsub v0.17.0 does its CPU work in goroutines, each with a queue of its own:
//! a reading goroutine per peer (`comm.go:handleNewStream`), a writing goroutine per peer
//! that pops its 32-RPC queue (`comm.go:handleSendingMessages`, `rpc_queue.go:Pop`), the
//! validation workers on the 32-slot validation queue (`validation.go:validateWorker`),
//! the application's goroutine that signs what it publishes (`topic.go:Publish`), and,
//! with the event loop, pubsub's loop (`event_loop.rs`) and yamux's two goroutines per
//! connection: `session.go:sendLoop`, which takes the frames the writer put on its
//! 64-slot `sendCh` (`transport.rs`; the writer's `Write` readies it, `runnext`), and
//! `session.go:recvLoop`, which reads the connection (read syscalls, Noise's
//! decryption), puts each frame's data in its stream's buffer and readies the stream's
//! reader parked in `Stream.Read` (`stream.go:readData` → `asyncNotify(s.recvNotifyCh)`,
//! `runnext`).
//! Each one loops over its queue without blocking while it has work. Go's scheduler
//! (`runtime/proc.go`) keeps runnable goroutines in a first-in first-out run queue (and
//! one in its `runnext` slot, below); one runs until it blocks (its queue is empty) or
//! is preempted for having held the P too long, then goes to the global run queue
//! (below). So a writer that gets its turn writes every RPC waiting for its peer, and
//! the validation workers get their turn among the readers and writers, not a turn per
//! copy.
//!
//! Who ends a long turn is `sysmon` (`runtime/proc.go:retake`): at each of its rounds it
//! notes the P's `schedtick` and when it first saw it (`pp.sysmontick`), and preempts
//! the running goroutine when a round finds the same `schedtick` `forcePreemptNS` =
//! 10 ms of wall time after that (`preemptone`; the goroutine stops as its thread next
//! runs, `gopreempt_m` → `goschedImpl` → `globrunqput`). The wall time counts the time
//! the node's thread waited for the core: on a shared host a goroutine whose turn spans
//! a wait for the core is preempted at `sysmon`'s first round 10 ms after it saw the
//! turn, however little CPU the turn used. With `sysmon` modelled (`slices.rs`,
//! `sysmon.rs`) its rounds do this (`long_turn`, `request_preemption`). A goroutine in
//! a system call that long, or in the same call at two rounds in a row, has its P
//! retaken instead (`retake` → `handoffp`, `Process::retake`): another thread runs the
//! others meanwhile, and the goroutine back from its call waits for the P on the global
//! run queue (`exitsyscallNoP`), or takes it back if it was left idle. A read or write
//! piece is in its system call whole by default, the Go code around the call
//! (decryption and framing, where `preemptone` stops it) included; `SyscallShares`
//! puts the call in the first part of a read and the last part of a write. Without
//! `sysmon` the model ends a turn after 10 ms of the node's CPU.
//!
//! Go's netpoller decides when a reading goroutine that waits on the network (a peer's
//! reader; with the event loop, the connection's `recvLoop`) becomes runnable again. A P
//! polls the network (non-blocking `netpoll(0)`) only when its local and global run
//! queues are empty (`runtime/proc.go:findRunnable`, "Poll network" after `runqget` and
//! the global run queue); a thread with nothing to run blocks in
//! `netpoll` and returns as soon as data arrives, setting `sched.lastpoll`; and `sysmon`
//! polls when the network was not polled for 10 ms (`runtime/proc.go:sysmon`,
//! `lastpoll+10*1000*1000 < now`). So while a node has runnable goroutines, data for a
//! waiting reader sits in the kernel: the reader becomes runnable when the run queue
//! empties or 10 ms after the last poll, and everything that arrived meanwhile is read
//! on that one wake-up.
//!
//! How a goroutine that was waiting becomes runnable decides where it goes (`Wake`):
//!
//! - Readied by the running goroutine (a channel send or receive that wakes a parked
//!   peer, `runtime/chan.go:send`/`recv` → `goready`; a `sync.Cond` Signal,
//!   `runtime/sema.go:notifyListNotifyOne` → `readyWithTime` → `goready`): `goready` →
//!   `ready(gp, traceskip, next=true)` → `runqput(pp, gp, true)` puts it in the P's
//!   `runnext` slot, and a newer hand-off kicks the one there to the run queue's tail.
//!   The running goroutine goes on; once it blocks, `runqget` returns the `runnext` one
//!   ahead of the run queue with `inheritTime`, so it runs in the rest of the turn
//!   (`execute` does not count a new `schedtick`, and `sysmon`'s `retake` preempts a
//!   turn 10 ms after `schedtick` last changed). In the model the event of a piece done
//!   by goroutine X that gives work to goroutine Y of the same node is X readying Y: a
//!   reader's decoded RPC readies the validation workers (in go through the event loop,
//!   `p.incoming` then `validateQ`, each a hand-off), a validated or signed copy readies
//!   its writers (`p.sendMsg`, the loop's `publishMessage`, `rpc_queue.go:Push` →
//!   `dataAvailable.Signal`), the event loop's receive readies a parked reader or
//!   worker.
//! - Readied by the network poller: to the run queue's tail (above; `findRunnable`
//!   runs the first goroutine `netpoll` returns and `injectglist` puts the rest at the
//!   local run queue's tail; `sysmon`'s poll, below, puts them on the global run
//!   queue). So are writers whose socket or stream window opens, and
//!   writers given work by the heartbeat, which has no goroutine in the model (in go a
//!   ticker readies `gossipsub.go:heartbeatTimer`, which hands the heartbeat to the
//!   loop).
//! - Readied by a timer (the application's publisher waits on a `time.Timer` channel,
//!   `testbed/gossipnode/node.go:waitUntil`; `time/sleep.go:sendTime` → `chansend` →
//!   `goready`): timers run only when the P schedules, at the top of
//!   `runtime/proc.go:findRunnable` (`pp.timers.check`, before `runqget`), so the
//!   goroutine takes `runnext` when the running goroutine blocks or is preempted,
//!   kicking the hand-off there to the tail, and runs next.
//!
//! Go keeps a global run queue besides the P's own (`sched.runq`), and two kinds of
//! goroutine go there: the readers `sysmon`'s poll makes runnable (it holds no P, so
//! `injectglist` puts them on the global queue) and a goroutine preempted for a long
//! turn (`goschedImpl` → `globrunqput`). `findRunnable` takes one from it every 61st
//! turn (`pp.schedtick%61 == 0`, ahead of `runnext`), and a batch of up to 128 when the
//! local run queue is empty. So on a node that stays busy a reader `sysmon` woke waits
//! behind the local run queue, goroutines readied after it included, for up to 61
//! turns.
//!
//! Simplified: the validation workers share one turn (the node runs on one core at a
//! time, see `slices.rs`); without `sysmon`, whoever runs after a preemption gets a turn
//! of its own (a `runnext` goroutine that inherits a used-up turn would be preempted at
//! `sysmon`'s next check, 20 µs on). The netpoll rule is that of a node with one P:
//! with GOMAXPROCS > 1 a P with nothing to run parks its thread in the blocking
//! `netpoll`, which wakes readers at once even while another P runs goroutines; a node
//! here runs on one core at a time.

use std::collections::VecDeque;

use rustc_hash::FxHashMap;

use crate::config::Time;
use crate::queue::Event;

/// Go's `forcePreemptNS`: the longest turn, in nanoseconds (of wall time between
/// `sysmon`'s rounds; of the node's CPU without `sysmon`).
pub const GO_TURN: Time = 10_000_000;

/// Go's fairness check: every 61st turn the P takes a goroutine from the global run
/// queue ahead of its own (`runtime/proc.go:findRunnable`, `pp.schedtick%61 == 0`).
pub const GLOBAL_RUN_QUEUE_CHECK: u32 = 61;

/// At most this many goroutines move from the global run queue to an empty local one
/// at once (`findRunnable`: `globrunqgetbatch(len(pp.runq)/2)`, a run queue of 256).
const GLOBAL_BATCH: usize = 128;

/// `sysmon`'s network poll: when the network was not polled for this long
/// (`runtime/proc.go:sysmon`, `lastpoll+10*1000*1000 < now`).
pub const SYSMON_POLL: Time = 10_000_000;

/// Which goroutine of a node does a piece of work.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Goroutine {
    /// Reads the RPCs arriving on a link.
    Reader(u32),
    /// Writes the RPCs leaving on a link.
    Writer(u32),
    /// Validates copies.
    Validator,
    /// Signs the node's publications.
    Publisher,
    /// pubsub's event loop (`pubsub.go:processLoop`): handles incoming RPCs and
    /// validated messages (`event_loop.rs`).
    Loop,
    /// go-yamux's `session.go:sendLoop` of a link's connection, with the event loop:
    /// encrypts and writes what the link's writer put on `sendCh` (`transport.rs`).
    SendLoop(u32),
    /// go-yamux's `session.go:recvLoop` of the connection a link arrives on, with the
    /// event loop: reads and decrypts what arrives and hands each RPC's data to the
    /// link's reader (`Event::Demuxed`).
    RecvLoop(u32),
    /// The application reading its subscription (`Subscription.Next`), with the event
    /// loop (`subscription.rs`).
    App,
}

/// CPU a goroutine of each kind spends once per turn (each time the scheduler runs it
/// after it waited), whatever it then does (`per_*_turn`): go's switch to it
/// (`runtime/proc.go:execute`, `gogo`) and its code and data brought back into the
/// caches, which a goroutine that works through many items in one turn pays once.
/// Profiles by goroutine show each one's cost per item fall as its turns take more
/// items (docs/network-calibration.md, "Per goroutine turn").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TurnCosts {
    pub reader: Time,
    pub writer: Time,
    pub validator: Time,
    pub event_loop: Time,
    pub send_loop: Time,
    pub recv_loop: Time,
}

impl TurnCosts {
    /// The cost of a turn of goroutine `id` (the publisher's is in `per_publish`).
    pub fn of(&self, id: Goroutine) -> Time {
        let by_kind = [
            self.reader,
            self.writer,
            self.validator,
            self.event_loop,
            self.send_loop,
            0,
            0,
            self.recv_loop,
            0,
            0,
        ];
        by_kind[id.kind() as usize]
    }
}

/// The names of the goroutine kinds, by `Goroutine::kind`.
pub const KIND_NAMES: [&str; 10] = [
    "reader",
    "writer",
    "validator",
    "event loop",
    "yamux sendLoop",
    "publisher",
    "node thread",
    "yamux recvLoop",
    "sysmon",
    "application",
];

/// A recorded wait of a node's goroutine for its P, or of the node for a core: the
/// goroutine's kind (`KIND_NAMES`), when the wait ended, and how long it was; for the
/// node's own waits, how long it then held the core (0 for a goroutine's); for a
/// goroutine's, what made it runnable (`Readied`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Waited {
    pub node: u32,
    pub kind: u8,
    pub at: Time,
    pub wait: Time,
    pub ran: Time,
    pub readied: Option<Readied>,
}

/// The kind under which a node's own waits for a core are recorded: its thread, made
/// runnable (woken, or preempted with work left), until a core runs it again.
pub const NODE_THREAD: u8 = 6;

/// The kind under which a node's `sysmon` rounds are recorded (`sysmon.rs`): from its
/// wake-up (its sleep's end, or the node's system call that ends its deep sleep) to its
/// round.
pub const SYSMON_THREAD: u8 = 8;

impl Goroutine {
    /// The goroutine's kind, an index into `KIND_NAMES`.
    pub fn kind(self) -> u8 {
        match self {
            Goroutine::Reader(_) => 0,
            Goroutine::Writer(_) => 1,
            Goroutine::Validator => 2,
            Goroutine::Loop => 3,
            Goroutine::SendLoop(_) => 4,
            Goroutine::Publisher => 5,
            Goroutine::RecvLoop(_) => 7,
            Goroutine::App => 9,
        }
    }
}

/// A node's goroutines' waits in its run queue, when recorded (`cpu.record_waits`): from
/// becoming runnable to becoming the running goroutine, as Go's execution trace counts
/// them (`Runnable` to `Running`; the node's P is "running" even while the kernel runs
/// another node on the core).
#[derive(Default)]
struct WaitLog {
    /// The time of the event being carried out (`Process::at`).
    now: Time,
    /// Runnable goroutines (indices into `routines`), since when, and what made them so.
    since: FxHashMap<u32, (Time, Readied)>,
    /// The waits that ended, in order.
    waits: Vec<GoroutineWait>,
}

/// A recorded wait of a goroutine for its node's P.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GoroutineWait {
    pub id: Goroutine,
    /// When it ended (the goroutine ran), and how long it was.
    pub at: Time,
    pub wait: Time,
    pub readied: Readied,
}

/// What made a waiting goroutine runnable, as Go's execution trace tells it (the event
/// that moved it to `Runnable`; bench/go_trace_schedule.py's "readied by").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Readied {
    /// A hand-off from the running goroutine, of this kind (`KIND_NAMES`): a channel
    /// operation or a `sync.Cond` signal (`goready`).
    HandOff(u8),
    /// The netpoller, polled by the node's own thread: blocked in `netpoll` while idle,
    /// or `findRunnable`'s poll once the run queues are empty.
    Netpoll,
    /// `sysmon`'s poll of the network (`injectglist` onto the global run queue).
    SysmonPoll,
    /// A timer (`findRunnable`'s `pp.timers.check`).
    Timer,
    /// Preempted for a long turn (`goschedImpl`), back from the global run queue.
    Preempted,
    /// Back from a system call whose P `sysmon` retook, with the P running others
    /// (`exitsyscallNoP` → `globrunqput`; a Go trace's `Syscall->Runnable`).
    LostP,
    /// Work from outside the node's goroutines: a writer's socket or stream window
    /// opening, the heartbeat (no goroutine of its own in the model).
    Outside,
    /// For a `sysmon` round: where the node was when `sysmon` woke (its sleep's end, or
    /// the node's system call ending its deep sleep): its working thread on a core, the
    /// node waiting for a core, or the node idle.
    SysmonNodeRunning,
    SysmonNodeWaiting,
    SysmonNodeIdle,
}

/// The names of what readied a goroutine other than a hand-off, by `Readied::code` less
/// the number of goroutine kinds (a hand-off's code is its goroutine's kind, named by
/// `KIND_NAMES`).
pub const READIED_NAMES: [&str; 9] = [
    "netpoll",
    "sysmon's netpoll",
    "timer",
    "preempted",
    "outside",
    "node running",
    "node waiting",
    "node idle",
    "P lost",
];

impl Readied {
    /// An index into `KIND_NAMES` followed by `READIED_NAMES`.
    pub fn code(self) -> u8 {
        let other = |i: usize| (KIND_NAMES.len() + i) as u8;
        match self {
            Readied::HandOff(kind) => kind,
            Readied::Netpoll => other(0),
            Readied::SysmonPoll => other(1),
            Readied::Timer => other(2),
            Readied::Preempted => other(3),
            Readied::Outside => other(4),
            Readied::SysmonNodeRunning => other(5),
            Readied::SysmonNodeWaiting => other(6),
            Readied::SysmonNodeIdle => other(7),
            Readied::LostP => other(8),
        }
    }
}

/// How a waiting goroutine becomes runnable (`runtime/proc.go:ready`, `runqput`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wake {
    /// Readied by the running goroutine (`goready`): into `runnext`, to run as soon as
    /// the running goroutine blocks, in the rest of its turn.
    Next,
    /// Readied by a timer: into `runnext` when the running goroutine blocks or is
    /// preempted (`findRunnable` runs the timers before `runqget`).
    Timer,
    /// Readied by the network poller: to the back of the run queue.
    Tail,
}

/// A piece of CPU work: what happens when it is done, and the CPU time it still needs.
struct Piece {
    event: Event,
    left: Time,
    /// Its whole CPU time, its turn's cost included.
    cost: Time,
    /// The system call the piece makes, reading or writing the connection, and its
    /// number, for `sysmon`'s retake (`Process::in_syscall`).
    syscall: Option<(Call, u32)>,
    /// It ran for some time and is not done.
    started: bool,
}

/// The system call a piece of a connection's work makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Call {
    /// A read: the call comes first, the decoding after.
    Read,
    /// A write: the framing and encryption first, the call last.
    Write,
}

/// Where a goroutine back from a system call whose P was retaken finds the P.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SyscallReturn {
    /// Running other goroutines on another thread: it goes to the global run queue.
    Busy,
    /// Idle: it takes the P back, and wakes `sysmon` from its deep sleep.
    Idle,
}

/// The part of a connection's read and write pieces spent inside the system call, in
/// millionths: `sysmon` finds the node's P in the call only then. go-yamux's `recvLoop`
/// reads the connection first and decodes what it read after (`session.go:recvLoop`,
/// through a `bufio.Reader` over the secured connection); its `sendLoop` frames and
/// encrypts first and writes last (`session.go:sendLoop` → the secured connection's
/// `Write`). By CPU profiles of real nodes a `sendLoop` spends about four fifths of its
/// CPU in the write, a `recvLoop` a third in its reads
/// (docs/network-calibration.md, "Per goroutine turn"). 1: the whole piece.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyscallShares {
    write: u32,
    read: u32,
}

const WHOLE: u32 = 1_000_000;

impl Default for SyscallShares {
    fn default() -> Self {
        Self {
            write: WHOLE,
            read: WHOLE,
        }
    }
}

impl SyscallShares {
    /// The parts (in (0, 1]) of a write's and of a read's CPU inside the system call.
    pub fn new(write: f64, read: f64) -> Self {
        let millionths = |share: f64| (share * f64::from(WHOLE)).round() as u32;
        Self {
            write: millionths(write),
            read: millionths(read),
        }
    }

    /// True if a piece making `call`, of `cost` with `left` of it still to run, is
    /// inside the call.
    fn inside(&self, call: Call, cost: Time, left: Time) -> bool {
        let (cost, left) = (u128::from(cost), u128::from(left));
        match call {
            Call::Read => (cost - left) * u128::from(WHOLE) < u128::from(self.read) * cost,
            Call::Write => left * u128::from(WHOLE) <= u128::from(self.write) * cost,
        }
    }

    /// The CPU time until a piece making `call`, of `cost` with `left` still to run,
    /// returns from the call: a write's call ends with the piece, a read's once its
    /// share of the piece has run.
    fn call_left(&self, call: Call, cost: Time, left: Time) -> Time {
        match call {
            Call::Read => {
                let in_call =
                    (u128::from(self.read) * u128::from(cost)).div_ceil(u128::from(WHOLE));
                (in_call as Time).saturating_sub(cost - left)
            }
            Call::Write => left,
        }
    }
}

struct Routine {
    id: Goroutine,
    pieces: VecDeque<Piece>,
    /// In the run queue.
    runnable: bool,
    /// Parked on a full channel (`chan.rs`): keeps its work, but does not run it
    /// until the receiver lets it in (`unblock`).
    blocked: bool,
}

/// A node's goroutines and their run queue.
#[derive(Default)]
pub struct Process {
    routines: Vec<Routine>,
    /// Where each goroutine is in `routines`: a node has a reader and a writer per
    /// peer, and a pass over them all for every piece of work showed in profiles.
    index: FxHashMap<Goroutine, u32>,
    /// Runnable goroutines (indices into `routines`); the front one runs.
    run_queue: VecDeque<u32>,
    /// Go's `p.runnext`: the goroutine the running one readied last, to run next. Set
    /// only while a goroutine runs.
    runnext: Option<u32>,
    /// Goroutines a timer readied while one ran: they take `runnext` at its end.
    timer_ready: Vec<u32>,
    /// What a turn of each kind of goroutine costs, added to the first piece of the turn.
    turn_costs: TurnCosts,
    /// The goroutines' run-queue waits, when recorded.
    wait_log: Option<Box<WaitLog>>,
    /// The running goroutine's piece is done and its event is being carried out: work
    /// it gives another goroutine of the node now is its hand-off (`Wake::Next`).
    handing_off: bool,
    /// CPU time the front goroutine has run in its current turn (shared with the
    /// goroutines that inherit it from `runnext`).
    turn: Time,
    /// Work for reading goroutines whose data arrived while the node had runnable
    /// goroutines: not runnable until the next poll of the network.
    netpoll: VecDeque<(Goroutine, Piece)>,
    /// Go's `sched.lastpoll`: when a blocking `netpoll` last returned or `sysmon` last
    /// polled.
    last_poll: Time,
    /// Go's global run queue (`sched.runq`): the readers `sysmon`'s poll made runnable
    /// (it holds no P, so `injectglist` puts them there) and the goroutines preempted
    /// after their turn (`goschedImpl` → `globrunqput`). Non-empty only while a
    /// goroutine runs: once the local run queue empties, its goroutines move there.
    global: VecDeque<u32>,
    /// Go's `pp.schedtick`: the turns started (a goroutine that inherits one from
    /// `runnext` does not count, `execute` with `inheritTime`).
    schedtick: u32,
    /// The system calls numbered so far (`Piece::syscall`).
    syscalls: u32,
    /// `sysmon` ends long turns (`long_turn`), not the node's CPU time.
    sysmon_ends_turns: bool,
    /// `sysmon`'s view of the P (`pp.sysmontick`): the `schedtick` it last saw, and the
    /// round that first saw it.
    sysmon_saw: Option<(u32, Time)>,
    /// `sysmon` asked the running goroutine to stop (`preemptone`): it does as the node's
    /// thread next runs (`take_preemption`).
    preempt_requested: bool,
    /// The system call of the running goroutine whose P `sysmon` retook (`retake`).
    retaken: Option<u32>,
    /// What the goroutine back from a retaken call found (`SyscallReturn`), until
    /// `settle` or the caller takes it.
    returned: Option<SyscallReturn>,
    /// The connection's yamux `sendLoop` makes the write system calls, not the peer's
    /// writer (`writes_in_send_loop`).
    send_loop_writes: bool,
    /// Where in its reads and writes the system call is (`in_syscall`).
    syscall_shares: SyscallShares,
}

impl Process {
    /// A node's goroutines, whose turns cost `turn_costs`.
    pub fn new(turn_costs: TurnCosts) -> Self {
        Self {
            turn_costs,
            ..Self::default()
        }
    }

    /// Long turns end at `sysmon`'s rounds (`long_turn`), by the wall clock, instead of
    /// after 10 ms of the node's CPU.
    pub fn end_turns_at_sysmon(&mut self) {
        self.sysmon_ends_turns = true;
    }

    /// With the event loop the connection's yamux `sendLoop` writes it: a peer's writer
    /// hands its frames to the `sendLoop` (go-yamux `Stream.Write` → `sendMsg`, a send
    /// on `sendCh`) and makes no system call of its own, so `sysmon` never finds it in
    /// one (`in_syscall`). Without the event loop the writer writes the connection.
    pub fn writes_in_send_loop(&mut self) {
        self.send_loop_writes = true;
    }

    /// True if goroutine `id`'s work writes the connection, a system call: yamux's
    /// `sendLoop`, or a peer's writer without it. Reads are the pieces that arrive from
    /// the network (`arrive`).
    fn writes_connection(&self, id: Goroutine) -> bool {
        match id {
            Goroutine::SendLoop(_) => true,
            Goroutine::Writer(_) => !self.send_loop_writes,
            _ => false,
        }
    }

    /// `retake`'s check at a `sysmon` round at `now`, on a P that runs goroutines: true
    /// if it runs the `schedtick` an earlier round saw first at least `GO_TURN` ago (one
    /// goroutine, or a chain of `runnext` hand-offs, which share a `schedtick`); a new
    /// `schedtick` is noted with `now` (`pd.schedtick`, `pd.schedwhen`).
    pub fn long_turn(&mut self, now: Time) -> bool {
        if self.retaken.is_some() {
            // The P runs on another thread: the goroutine in the call has no turn.
            return false;
        }
        match self.sysmon_saw {
            Some((tick, since)) if tick == self.schedtick => since + GO_TURN <= now,
            _ => {
                self.sysmon_saw = Some((self.schedtick, now));
                false
            }
        }
    }

    /// `sysmon` preempts the running goroutine (`preemptone`); it stops as the node's
    /// thread next runs (`take_preemption`).
    pub fn request_preemption(&mut self) {
        self.preempt_requested = true;
    }

    /// The node's thread runs again: a goroutine `sysmon` preempted stops (the signal,
    /// `asyncPreempt`, or its next function call's stack check) and goes to the back of
    /// the global run queue, with a turn of its own to come (`gopreempt_m` →
    /// `goschedImpl` → `globrunqput`), and the P schedules.
    pub fn take_preemption(&mut self) {
        if !std::mem::take(&mut self.preempt_requested) {
            return;
        }
        if self.run_queue.is_empty() {
            return;
        }
        self.preempt_running(Readied::Preempted);
        self.note_running();
    }

    /// `sysmon` retook the P from the running goroutine's system call (`retake` →
    /// `handoffp`, runtime/proc.go). With one P, `handoffp` always gives the P to another
    /// thread (`startm`): with goroutines runnable it runs them, and the goroutine back
    /// from its call finds the P taken and waits on the global run queue
    /// (`exitsyscallNoP` → `globrunqput`); with none, that thread polls the network
    /// (`findRunnable`'s `netpoll(0)`: readers whose data arrived become runnable) and,
    /// finding nothing, leaves the P idle and blocks in `netpoll`, where data wakes a
    /// reader at once (`arrive`). An idle P lets `sysmon` sleep deeply, and the goroutine
    /// back from its call takes the P and wakes it (`exitsyscallTryGetP`;
    /// `took_idle_p`). The model's node has one working thread: the call goes on first,
    /// the others after it, and the second thread's CPU and switches are not charged.
    pub fn retake(&mut self) {
        self.retaken = self.in_syscall();
        debug_assert!(
            self.retaken.is_some(),
            "a retake takes a P in a system call"
        );
        if !self.others_runnable() {
            self.inject(false);
        }
    }

    /// True if the node's P runs goroutines: it has work, and is not idle while the
    /// goroutine it was retaken from is still in its call.
    pub fn p_busy(&self) -> bool {
        self.has_work() && (self.retaken.is_none() || self.others_runnable())
    }

    /// True once (then false until the next time) if a goroutine back from a call whose P
    /// was retaken found the P idle and took it (`exitsyscallTryGetP`, which wakes a
    /// `sysmon` in its deep sleep).
    pub fn took_idle_p(&mut self) -> bool {
        self.returned.take() == Some(SyscallReturn::Idle)
    }

    /// Goroutines other than the running one are runnable.
    fn others_runnable(&self) -> bool {
        self.run_queue.len() > 1
            || self.runnext.is_some()
            || !self.timer_ready.is_empty()
            || !self.global.is_empty()
    }

    /// The running goroutine is back from its retaken call: the P is busy if another
    /// goroutine is runnable (the other thread runs it), else idle.
    fn call_returns(&mut self) {
        self.retaken = None;
        self.returned = Some(if self.others_runnable() {
            SyscallReturn::Busy
        } else {
            SyscallReturn::Idle
        });
    }

    /// If `piece` makes the call whose P was retaken: the CPU time until that call
    /// returns (0: it has).
    fn retaken_call_left(&self, piece: &Piece) -> Option<Time> {
        let (call, number) = piece.syscall?;
        (self.retaken == Some(number))
            .then(|| self.syscall_shares.call_left(call, piece.cost, piece.left))
    }

    /// The running goroutine is preempted (`goschedImpl`), or back from a call without
    /// its P (`why`): to the back of the global run queue, with a turn of its own to
    /// come, and the P schedules.
    fn preempt_running(&mut self, why: Readied) {
        self.retaken = None;
        let front = self.run_queue.pop_front().expect("a running goroutine");
        self.start_turn(front as usize);
        self.readied(front, why);
        self.global.push_back(front);
        self.schedule();
        self.turn = 0;
    }

    /// Record the goroutines' run-queue waits from now on (`waits`).
    pub fn record_waits(&mut self) {
        self.wait_log = Some(Box::default());
    }

    /// The time of the event being carried out, for the recorded waits.
    #[inline]
    pub fn at(&mut self, now: Time) {
        if let Some(log) = &mut self.wait_log {
            log.now = now;
        }
    }

    /// The recorded run-queue waits, in the order they ended.
    pub fn waits(&self) -> &[GoroutineWait] {
        self.wait_log.as_ref().map_or(&[], |log| &log.waits)
    }

    /// The front goroutine of the run queue runs: its wait, if it was runnable since a
    /// recorded time, ends.
    fn note_running(&mut self) {
        let (Some(log), Some(&front)) = (&mut self.wait_log, self.run_queue.front()) else {
            return;
        };
        if let Some((since, readied)) = log.since.remove(&front) {
            log.waits.push(GoroutineWait {
                id: self.routines[front as usize].id,
                at: log.now,
                wait: log.now - since,
                readied,
            });
        }
    }

    /// Where in a connection's reads and writes the system call is (`in_syscall`).
    pub fn set_syscall_shares(&mut self, shares: SyscallShares) {
        self.syscall_shares = shares;
    }

    /// `id` has a piece of work of `cost`; `event` happens when it is done. If `id` was
    /// waiting (no work, not parked), `wake` says where it goes.
    pub fn push(&mut self, id: Goroutine, cost: Time, event: Event, wake: Wake) {
        let writes = self.writes_connection(id);
        let piece = self.piece(cost, event, writes.then_some(Call::Write));
        self.push_piece(id, piece, wake);
    }

    fn push_piece(&mut self, id: Goroutine, piece: Piece, wake: Wake) {
        if let Some(i) = self.add_piece(id, piece) {
            self.ready(i, wake);
        }
    }

    /// A piece of work of `cost`, numbered if it makes a system call.
    fn piece(&mut self, cost: Time, event: Event, call: Option<Call>) -> Piece {
        let syscall = call.map(|call| {
            self.syscalls = self.syscalls.wrapping_add(1);
            (call, self.syscalls)
        });
        Piece {
            event,
            left: cost,
            cost,
            syscall,
            started: false,
        }
    }

    /// Gives `id` a piece of work; returns its index if that made it runnable (it was
    /// waiting: no work, not parked).
    fn add_piece(&mut self, id: Goroutine, piece: Piece) -> Option<u32> {
        let i = match self.find(id) {
            Some(i) => i,
            None => {
                self.index.insert(id, self.routines.len() as u32);
                self.routines.push(Routine {
                    id,
                    pieces: VecDeque::new(),
                    runnable: false,
                    blocked: false,
                });
                self.routines.len() - 1
            }
        };
        let r = &mut self.routines[i];
        r.pieces.push_back(piece);
        if r.runnable || r.blocked {
            return None;
        }
        // A goroutine that waited has no work left: this piece starts its turn.
        debug_assert_eq!(r.pieces.len(), 1, "a waiting goroutine has no work");
        r.runnable = true;
        self.start_turn(i);
        Some(i as u32)
    }

    /// Goroutine `i` will get a turn: its first piece carries the turn's cost. Its wait
    /// starts now (what readied it is noted as it goes to a run queue, `readied`).
    fn start_turn(&mut self, i: usize) {
        if let Some(log) = &mut self.wait_log {
            log.since.insert(i as u32, (log.now, Readied::Outside));
        }
        let r = &mut self.routines[i];
        let cost = self.turn_costs.of(r.id);
        if let Some(piece) = r.pieces.front_mut() {
            piece.left += cost;
            piece.cost += cost;
        }
    }

    /// Where goroutine `id` is in `routines`, if it ever had work.
    #[inline]
    fn find(&self, id: Goroutine) -> Option<usize> {
        self.index.get(&id).map(|&i| i as usize)
    }

    /// Goroutine `i` became runnable: readied by the running goroutine (`Wake::Next`), a
    /// timer, or from outside the node's goroutines (`Wake::Tail`).
    fn ready(&mut self, i: u32, wake: Wake) {
        let why = match wake {
            Wake::Next => {
                let front = self
                    .run_queue
                    .front()
                    .expect("a hand-off from the running goroutine");
                Readied::HandOff(self.routines[*front as usize].id.kind())
            }
            Wake::Timer => Readied::Timer,
            Wake::Tail => Readied::Outside,
        };
        self.ready_by(i, wake, why);
    }

    /// Goroutine `i` became runnable, `why` as the recorded waits tell it. With nothing
    /// running it runs at once, however it was readied.
    fn ready_by(&mut self, i: u32, wake: Wake, why: Readied) {
        self.readied(i, why);
        if self.run_queue.is_empty() {
            debug_assert!(
                self.global.is_empty(),
                "an idle node has no global run queue"
            );
            self.run_queue.push_back(i);
            self.schedtick = self.schedtick.wrapping_add(1);
            self.note_running();
            return;
        }
        match wake {
            Wake::Next => self.put_next(i),
            Wake::Timer => self.timer_ready.push(i),
            Wake::Tail => self.run_queue.push_back(i),
        }
    }

    /// Notes what made goroutine `i` runnable, for its recorded wait.
    fn readied(&mut self, i: u32, why: Readied) {
        if let Some((_, readied)) = self.wait_log.as_mut().and_then(|log| log.since.get_mut(&i)) {
            *readied = why;
        }
    }

    /// `runtime/proc.go:runqput(pp, gp, next=true)`: `i` takes `runnext`, and the
    /// goroutine it held goes to the back of the run queue.
    fn put_next(&mut self, i: u32) {
        if let Some(kicked) = self.runnext.replace(i) {
            self.run_queue.push_back(kicked);
        }
    }

    /// True if the event being carried out is that of a piece of the running goroutine
    /// (`run_for` returned it; `settle` not yet called).
    pub fn handing_off(&self) -> bool {
        self.handing_off
    }

    /// True if goroutine `id` is in the run queue (has work); false if it is blocked.
    pub fn runnable(&self, id: Goroutine) -> bool {
        self.find(id).is_some_and(|i| self.routines[i].runnable)
    }

    /// True if reading goroutine `id` waits on the network with nothing arrived for it:
    /// data arriving now wakes it (`per_read_wakeup`). A blocked one waits on a channel,
    /// and reads what arrived meanwhile without waiting on the network.
    pub fn waits_on_network(&self, id: Goroutine) -> bool {
        !self.runnable(id) && !self.blocked(id) && !self.netpoll.iter().any(|(g, _)| *g == id)
    }

    /// True if goroutine `id` is parked on a full channel.
    pub fn blocked(&self, id: Goroutine) -> bool {
        self.find(id).is_some_and(|i| self.routines[i].blocked)
    }

    /// The running goroutine `id` parks on a full channel (`runtime/chan.go:chansend`
    /// → `gopark`), during the event of its piece: at `settle` it leaves the run queue,
    /// keeping its work.
    pub fn block(&mut self, id: Goroutine) {
        let front = self
            .run_queue
            .front()
            .map(|&i| self.routines[i as usize].id);
        debug_assert_eq!(front, Some(id), "only the running goroutine blocks itself");
        if let Some(i) = self.find(id) {
            self.routines[i].blocked = true;
        }
    }

    /// The channel's receiver, the running goroutine, let blocked goroutine `id` in
    /// during its piece's event (`runtime/chan.go:recv` → `goready`): it is runnable
    /// again if it has work, in `runnext` (`Wake::Next`).
    pub fn unblock(&mut self, id: Goroutine) {
        debug_assert!(self.handing_off, "the running goroutine lets a sender in");
        let Some(i) = self.find(id).filter(|&i| self.routines[i].blocked) else {
            return;
        };
        let r = &mut self.routines[i];
        r.blocked = false;
        if !r.pieces.is_empty() && !r.runnable {
            r.runnable = true;
            self.start_turn(i);
            self.ready(i as u32, Wake::Next);
        }
    }

    /// Data of `cost` arrived at `now` for goroutine `id`, which reads the network. A
    /// runnable one reads it in turn; a waiting one becomes runnable at once if the node
    /// has nothing else to run (its thread blocks in `netpoll`, which returns and sets
    /// `sched.lastpoll`), else at the next poll (`poll`).
    pub fn arrive(&mut self, id: Goroutine, cost: Time, event: Event, now: Time) {
        // Reading it is a read system call.
        let piece = self.piece(cost, event, Some(Call::Read));
        if self.runnable(id) {
            self.push_piece(id, piece, Wake::Tail);
        } else if self.p_busy() || !self.netpoll.is_empty() {
            self.netpoll.push_back((id, piece));
        } else {
            self.last_poll = now;
            if let Some(i) = self.add_piece(id, piece) {
                self.ready_by(i, Wake::Tail, Readied::Netpoll);
            }
        }
    }

    /// `sysmon`'s poll of the network on a node that runs, at one of its scheduling
    /// points: once the network was not polled for `SYSMON_POLL`, the readers whose data
    /// arrived become runnable (in the order it arrived) on the global run queue
    /// (`injectglist` without a P) and `sched.lastpoll` is now. Call before `settle`:
    /// sysmon injects them before it preempts the goroutine that used up its turn
    /// (`retake`), so they queue ahead of it.
    pub fn sysmon_poll(&mut self, now: Time) {
        if !self.netpoll.is_empty() && now >= self.last_poll + SYSMON_POLL {
            self.last_poll = now;
            self.inject(true);
        }
    }

    /// `findRunnable`'s non-blocking `netpoll(0)` once the run queue is empty (it does
    /// not set `sched.lastpoll`). Call after `settle`.
    pub fn idle_poll(&mut self) {
        if self.run_queue.is_empty() {
            self.inject(false);
        }
    }

    /// The readers whose data the netpoller found become runnable, in the order it
    /// arrived: on the global run queue when `sysmon` polled (it holds no P), else at the
    /// local run queue's tail.
    fn inject(&mut self, global: bool) {
        while let Some((id, piece)) = self.netpoll.pop_front() {
            if let Some(i) = self.add_piece(id, piece) {
                if global {
                    self.readied(i, Readied::SysmonPoll);
                    self.global.push_back(i);
                } else {
                    self.ready_by(i, Wake::Tail, Readied::Netpoll);
                }
            }
        }
    }

    pub fn has_work(&self) -> bool {
        !self.run_queue.is_empty()
    }

    /// The number of the system call the running goroutine is in, if its piece is one,
    /// has begun, and is in the part of it inside the call (`SyscallShares`; `sysmon`'s
    /// `retake`, `sysmon.rs`).
    /// A call whose P was retaken holds no P: `sysmon` no longer finds the P in it.
    pub fn in_syscall(&self) -> Option<u32> {
        let &front = self.run_queue.front()?;
        let piece = self.routines[front as usize].pieces.front()?;
        let (call, number) = piece.syscall?;
        let inside = self.syscall_shares.inside(call, piece.cost, piece.left);
        (piece.started && inside && self.retaken != Some(number)).then_some(number)
    }

    /// CPU time until the running goroutine's piece is done, its retaken call returns,
    /// or (without `sysmon`) its turn ends.
    pub fn until_tick(&self) -> Time {
        let r = &self.routines[self.run_queue[0] as usize];
        let piece = r.pieces.front().expect("a runnable goroutine has work");
        let left = self.retaken_call_left(piece).unwrap_or(piece.left);
        if self.sysmon_ends_turns {
            return left;
        }
        left.min(GO_TURN.saturating_sub(self.turn))
    }

    /// The running goroutine ran for `elapsed`: the event of its piece if that is done.
    /// Until `settle`, work that event gives other goroutines of the node is the
    /// running goroutine's hand-off.
    pub fn run_for(&mut self, elapsed: Time) -> Option<Event> {
        self.turn += elapsed;
        let front = self.run_queue[0] as usize;
        let piece = self.routines[front].pieces.front_mut();
        let piece = piece.expect("a runnable goroutine has work");
        piece.left = piece.left.saturating_sub(elapsed);
        piece.started |= elapsed > 0;
        let piece = &self.routines[front].pieces[0];
        let done = piece.left == 0;
        if self.retaken_call_left(piece) == Some(0) {
            self.call_returns();
        }
        if !done {
            return None;
        }
        self.handing_off = true;
        self.routines[front]
            .pieces
            .pop_front()
            .map(|piece| piece.event)
    }

    /// After a piece's event: a goroutine without work blocks and the next one runs in
    /// the rest of its turn if it is in `runnext`; one back from a retaken call that
    /// found the P busy, and (without `sysmon`) one whose turn is used up, go to the back
    /// of the global run queue and the next one gets a turn of its own.
    pub fn settle(&mut self) {
        self.settle_front();
        self.note_running();
    }

    /// `settle`'s change of the run queue's front.
    fn settle_front(&mut self) {
        self.handing_off = false;
        let lost_p = self.returned == Some(SyscallReturn::Busy);
        if lost_p {
            self.returned = None;
        }
        let Some(&front) = self.run_queue.front() else {
            return;
        };
        let r = &mut self.routines[front as usize];
        if r.pieces.is_empty() || r.blocked {
            r.runnable = false;
            self.run_queue.pop_front();
            if !self.schedule() {
                self.turn = 0;
            }
        } else if lost_p {
            self.preempt_running(Readied::LostP);
        } else if !self.sysmon_ends_turns && self.turn >= GO_TURN {
            self.preempt_running(Readied::Preempted);
        }
    }

    /// `runtime/proc.go:findRunnable` after the running goroutine left: the timers
    /// ready their goroutines into `runnext`; every 61st turn one goroutine of the global
    /// run queue goes first; else `runqget` takes `runnext` (returning true:
    /// `inheritTime`), else the local run queue's head; else a batch of the global run
    /// queue moves to the local one and its first runs.
    fn schedule(&mut self) -> bool {
        for i in std::mem::take(&mut self.timer_ready) {
            self.put_next(i);
        }
        if self.schedtick.is_multiple_of(GLOBAL_RUN_QUEUE_CHECK) {
            if let Some(g) = self.global.pop_front() {
                self.run_queue.push_front(g);
                self.schedtick = self.schedtick.wrapping_add(1);
                return false;
            }
        }
        if let Some(next) = self.runnext.take() {
            self.run_queue.push_front(next);
            return true;
        }
        if self.run_queue.is_empty() {
            let batch = self.global.len().min(GLOBAL_BATCH);
            self.run_queue.extend(self.global.drain(..batch));
        }
        if !self.run_queue.is_empty() {
            self.schedtick = self.schedtick.wrapping_add(1);
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn done(p: &mut Process, elapsed: Time) -> Option<Event> {
        let event = p.run_for(elapsed);
        p.settle();
        event
    }

    /// Whether `sysmon` finds a connection's read, then its write, in their system call
    /// after each of `steps` µs of their 100 µs of CPU, with `shares`.
    fn found_in_call(shares: SyscallShares, steps: &[Time]) -> Vec<bool> {
        let mut p = Process::default();
        p.set_syscall_shares(shares);
        let mut found = Vec::new();
        let read = Goroutine::RecvLoop(1);
        p.arrive(read, 100_000, Event::Signed { msg: 1 }, 0);
        for piece in 0..2 {
            let mut ran = 0;
            for &step in steps {
                assert_eq!(p.run_for((step - ran) * 1_000), None);
                ran = step;
                found.push(p.in_syscall().is_some());
            }
            assert!(p.run_for((100 - ran) * 1_000).is_some());
            p.settle();
            if piece == 0 {
                p.push(
                    Goroutine::SendLoop(1),
                    100_000,
                    Event::Signed { msg: 2 },
                    Wake::Tail,
                );
            }
        }
        found
    }

    #[test]
    fn sysmon_finds_a_read_in_its_call_at_its_start_and_a_write_at_its_end() {
        // A third of a recvLoop's read in the call, four fifths of a sendLoop's write
        // (the shares of real nodes' CPU profiles): the read is in its call for its first
        // 34 µs, the write for its last 82, that is from 18 µs on.
        let steps = [10, 17, 19, 33, 35, 90];
        let measured = SyscallShares::new(0.82, 0.34);
        let read = [true, true, true, true, false, false];
        let write = [false, false, true, true, true, true];
        let expected: Vec<bool> = read.into_iter().chain(write).collect();
        assert_eq!(found_in_call(measured, &steps), expected);
        // Whole pieces: in the call from the first µs to the last.
        assert_eq!(
            found_in_call(SyscallShares::default(), &steps),
            vec![true; 12]
        );
    }

    #[test]
    fn a_goroutine_works_through_its_queue_before_the_next_one_runs() {
        let mut p = Process::default();
        let (a, b, c) = (
            Event::Signed { msg: 1 },
            Event::Signed { msg: 2 },
            Event::Signed { msg: 3 },
        );
        p.push(Goroutine::Validator, 5, a, Wake::Tail);
        p.push(Goroutine::Writer(7), 1, c, Wake::Tail);
        p.push(Goroutine::Validator, 5, b, Wake::Tail);
        assert_eq!(p.until_tick(), 5);
        assert_eq!(done(&mut p, 5), Some(a));
        assert_eq!(done(&mut p, 5), Some(b), "the validator keeps its turn");
        assert_eq!(done(&mut p, 1), Some(c));
        assert!(!p.has_work());
    }

    #[test]
    fn a_goroutine_pays_its_turn_once_for_all_it_takes_in_the_turn() {
        // A writer loops over its peer's queue without blocking while it has work
        // (comm.go:handleSendingMessages, rpc_queue.go:Pop): two RPCs queued before it
        // runs are one turn; one queued after it blocked starts a new turn.
        let costs = TurnCosts {
            writer: 4,
            validator: 9,
            ..TurnCosts::default()
        };
        let mut p = Process::new(costs);
        let writer = Goroutine::Writer(2);
        let (a, b, c, v) = (
            Event::Signed { msg: 1 },
            Event::Signed { msg: 2 },
            Event::Signed { msg: 3 },
            Event::Signed { msg: 4 },
        );
        p.push(writer, 10, a, Wake::Tail);
        p.push(writer, 10, b, Wake::Tail);
        p.push(Goroutine::Validator, 20, v, Wake::Tail);
        assert_eq!(p.until_tick(), 14, "the turn's cost with its first RPC");
        assert_eq!(done(&mut p, 14), Some(a));
        assert_eq!(p.until_tick(), 10, "the second RPC in the same turn");
        assert_eq!(done(&mut p, 10), Some(b));
        assert_eq!(p.until_tick(), 29, "the validator's own turn");
        assert_eq!(done(&mut p, 29), Some(v));
        p.push(writer, 10, c, Wake::Tail);
        assert_eq!(p.until_tick(), 14, "a new turn after the writer waited");
    }

    #[test]
    fn with_the_event_loop_only_the_send_loop_is_in_a_system_call_while_it_writes() {
        // go-yamux: a writer's `Stream.Write` hands its frame to the `sendLoop`
        // (`sendMsg`, a send on `sendCh`); the `sendLoop` writes the connection, a
        // system call (`session.go:sendLoop` → the secure conn's `Write`). Without the
        // event loop the model's writer does the whole write. A piece is in its system
        // call once it has begun, for `sysmon` (`retake`).
        let costs = TurnCosts {
            writer: 8,
            ..TurnCosts::default()
        };
        for event_loop in [true, false] {
            let mut p = Process::new(costs);
            if event_loop {
                p.writes_in_send_loop();
            }
            let writer = Goroutine::Writer(3);
            p.push(writer, 0, Event::Encoded { link: 3 }, Wake::Tail);
            assert_eq!(p.in_syscall(), None, "not begun");
            assert_eq!(p.run_for(4), None);
            assert_eq!(p.in_syscall().is_some(), !event_loop, "the writer, halfway");
            assert_eq!(p.run_for(4), Some(Event::Encoded { link: 3 }));
            p.settle();
            let send_loop = Goroutine::SendLoop(3);
            p.push(send_loop, 10, Event::SendLoopDone { link: 3 }, Wake::Tail);
            assert_eq!(p.run_for(5), None);
            assert!(p.in_syscall().is_some(), "the sendLoop, halfway");
        }
    }

    #[test]
    fn a_parked_goroutine_let_in_starts_a_new_turn() {
        // runtime/chan.go: a sender parked on a full channel is readied (goready) by the
        // receiver and runs again as a new turn, with the work it kept.
        let costs = TurnCosts {
            writer: 4,
            ..TurnCosts::default()
        };
        let mut p = Process::new(costs);
        let writer = Goroutine::Writer(2);
        let (a, b, l) = (
            Event::Signed { msg: 1 },
            Event::Signed { msg: 2 },
            Event::Signed { msg: 3 },
        );
        p.push(writer, 10, a, Wake::Tail);
        p.push(writer, 10, b, Wake::Tail);
        assert_eq!(p.run_for(14), Some(a));
        p.block(writer);
        p.settle();
        assert!(!p.has_work());
        p.push(Goroutine::Loop, 5, l, Wake::Tail);
        assert_eq!(p.run_for(5), Some(l));
        p.unblock(writer);
        p.settle();
        assert_eq!(
            p.until_tick(),
            14,
            "the kept RPC carries the new turn's cost"
        );
    }

    #[test]
    fn a_recorded_wait_runs_from_runnable_to_running() {
        // Go's trace: a goroutine's Runnable -> Running. The validator, readied on an idle
        // node at 0, runs at once; the writer, readied at 2 µs while it runs, runs when it
        // blocks at 10 µs: 8 µs; a reader whose data came at 2 µs while the node was busy
        // waits on the network (not runnable) until the netpoller polls, when the run
        // queue empties at 13 µs, and runs at once: no run-queue wait.
        let mut p = Process::default();
        p.record_waits();
        let (v, w, r) = (
            Event::Signed { msg: 1 },
            Event::Signed { msg: 2 },
            Event::Signed { msg: 3 },
        );
        p.at(0);
        p.push(Goroutine::Validator, 10_000, v, Wake::Tail);
        p.at(2_000);
        p.push(Goroutine::Writer(1), 3_000, w, Wake::Tail);
        p.arrive(Goroutine::Reader(4), 1_000, r, 2_000);
        p.at(10_000);
        assert_eq!(tick(&mut p, 10_000, 10_000), Some(v));
        p.at(13_000);
        assert_eq!(tick(&mut p, 3_000, 13_000), Some(w));
        let waits: Vec<_> = p
            .waits()
            .iter()
            .map(|w| (w.id, w.at, w.wait, w.readied))
            .collect();
        assert_eq!(
            waits,
            [
                (Goroutine::Validator, 0, 0, Readied::Outside),
                (Goroutine::Writer(1), 10_000, 8_000, Readied::Outside),
                (Goroutine::Reader(4), 13_000, 0, Readied::Netpoll)
            ]
        );
    }

    /// A scheduling point of a node on a core at `now`, as `slices.rs` makes it.
    fn tick(p: &mut Process, elapsed: Time, now: Time) -> Option<Event> {
        let event = p.run_for(elapsed);
        p.sysmon_poll(now);
        p.settle();
        p.idle_poll();
        event
    }

    #[test]
    fn a_waiting_reader_wakes_when_the_run_queue_empties_and_reads_all_that_came() {
        // runtime/proc.go:findRunnable polls the network only once the run queues are
        // empty. The node wakes at 0 for a copy (blocking netpoll: lastpoll = 0) and
        // validates 0-5 ms; data for reader 3 arrives at 1 and 2 ms.
        let (v, r1, r2) = (
            Event::Signed { msg: 1 },
            Event::Signed { msg: 2 },
            Event::Signed { msg: 3 },
        );
        let mut p = Process::default();
        p.push(Goroutine::Validator, 5_000_000, v, Wake::Tail);
        let reader = Goroutine::Reader(3);
        assert!(p.waits_on_network(reader));
        p.arrive(reader, 1_000_000, r1, 1_000_000);
        assert!(!p.runnable(reader), "not runnable while the validator runs");
        assert!(
            !p.waits_on_network(reader),
            "data waits for it: no second wake-up"
        );
        p.arrive(reader, 1_000_000, r2, 2_000_000);
        assert_eq!(p.until_tick(), 5_000_000);
        assert_eq!(tick(&mut p, 5_000_000, 5_000_000), Some(v));
        assert!(p.runnable(reader), "the run queue emptied: polled");
        assert_eq!(tick(&mut p, 1_000_000, 6_000_000), Some(r1));
        assert_eq!(tick(&mut p, 1_000_000, 7_000_000), Some(r2));
        assert!(!p.has_work());
        assert!(p.waits_on_network(reader));
    }

    #[test]
    fn sysmon_polls_a_busy_node_ten_milliseconds_after_the_last_poll() {
        // runtime/proc.go:sysmon: netpoll(0) once lastpoll + 10 ms < now, injected
        // before the goroutine that used its turn is preempted. The node woke at 0
        // (lastpoll = 0) and validates for 25 ms; the reader's data came at 1 ms. At the
        // validator's turn end (10 ms) sysmon polls: the reader runs 10-11, the
        // validator 11-21 and 21-26. Without sysmon the reader would wait until 25.
        let (v, r) = (Event::Signed { msg: 1 }, Event::Signed { msg: 2 });
        let mut p = Process::default();
        p.arrive(Goroutine::Reader(1), 0, Event::Signed { msg: 9 }, 0);
        assert_eq!(tick(&mut p, 0, 0), Some(Event::Signed { msg: 9 }));
        p.push(Goroutine::Validator, 25_000_000, v, Wake::Tail);
        p.arrive(Goroutine::Reader(1), 1_000_000, r, 1_000_000);
        assert_eq!(tick(&mut p, GO_TURN, GO_TURN), None);
        assert!(p.runnable(Goroutine::Reader(1)));
        assert_eq!(p.until_tick(), 1_000_000, "the reader runs first");
        assert_eq!(tick(&mut p, 1_000_000, 11_000_000), Some(r));
        assert_eq!(tick(&mut p, GO_TURN, 21_000_000), None);
        assert_eq!(tick(&mut p, 5_000_000, 26_000_000), Some(v));
    }

    #[test]
    fn a_blocked_reader_keeps_its_data_and_runs_only_once_let_in() {
        // Reader 1 reads an RPC (1 µs) and parks on a full channel in that piece's
        // event (runtime/chan.go:chansend → gopark), with a second RPC read for it: that
        // is kept, not run, until the loop's receive lets the reader in (chan.go:recv →
        // goready); it then reads it without a wake-up.
        let (r1, r2, l1) = (
            Event::Signed { msg: 1 },
            Event::Signed { msg: 2 },
            Event::Signed { msg: 3 },
        );
        let reader = Goroutine::Reader(1);
        let mut p = Process::default();
        p.arrive(reader, 1_000, r1, 0);
        p.arrive(reader, 1_000, r2, 0);
        assert_eq!(p.run_for(1_000), Some(r1));
        p.block(reader);
        p.settle();
        p.idle_poll();
        assert!(p.blocked(reader));
        assert!(
            !p.has_work(),
            "a blocked reader does not run the data it has"
        );
        assert!(!p.waits_on_network(reader), "nor does data wake it");
        p.push(Goroutine::Loop, 2_000, l1, Wake::Tail);
        assert_eq!(tick(&mut p, 0, 5_000), None);
        assert_eq!(
            p.until_tick(),
            2_000,
            "the loop runs, the reader stays parked"
        );
        // The loop's receive lets the reader in during the event of its piece.
        assert_eq!(p.run_for(2_000), Some(l1));
        p.unblock(reader);
        p.settle();
        assert!(!p.blocked(reader) && p.runnable(reader));
        assert_eq!(tick(&mut p, 1_000, 8_000), Some(r2));
        assert!(!p.has_work() && p.waits_on_network(reader));
    }

    #[test]
    fn a_goroutine_let_in_with_nothing_to_do_waits_again() {
        let mut p = Process::default();
        let (r1, l1) = (Event::Signed { msg: 1 }, Event::Signed { msg: 2 });
        let reader = Goroutine::Reader(4);
        p.arrive(reader, 1_000, r1, 0);
        assert_eq!(p.run_for(1_000), Some(r1));
        p.block(reader);
        p.settle();
        p.push(Goroutine::Loop, 1_000, l1, Wake::Tail);
        assert_eq!(p.run_for(1_000), Some(l1));
        p.unblock(reader);
        assert!(!p.runnable(reader) && !p.blocked(reader));
        assert!(p.waits_on_network(reader));
    }

    #[test]
    fn a_goroutine_is_preempted_after_ten_milliseconds() {
        let mut p = Process::default();
        let (long, short) = (Event::Signed { msg: 1 }, Event::Signed { msg: 2 });
        p.push(Goroutine::Validator, 25_000_000, long, Wake::Tail);
        p.push(Goroutine::Reader(3), 1_000, short, Wake::Tail);
        assert_eq!(p.until_tick(), GO_TURN);
        assert_eq!(done(&mut p, GO_TURN), None);
        assert_eq!(p.until_tick(), 1_000, "the reader's turn");
        assert_eq!(done(&mut p, 1_000), Some(short));
        // 15 ms left: a full turn, then the rest (the reader has blocked).
        assert_eq!(p.until_tick(), GO_TURN);
        assert_eq!(done(&mut p, GO_TURN), None);
        assert_eq!(p.until_tick(), 5_000_000);
        assert_eq!(done(&mut p, 5_000_000), Some(long));
    }

    /// A scheduling point at which the running goroutine's piece is done: its event
    /// gives the goroutines in `handed` work (`Wake::Next`, as `Cpu::submit` does
    /// during a piece's event).
    fn hand_off(
        p: &mut Process,
        elapsed: Time,
        now: Time,
        handed: &[(Goroutine, Time, Event)],
    ) -> Option<Event> {
        let event = p.run_for(elapsed);
        assert!(event.is_some() && p.handing_off());
        for &(g, cost, e) in handed {
            p.push(g, cost, e, Wake::Next);
        }
        p.sysmon_poll(now);
        p.settle();
        p.idle_poll();
        assert!(!p.handing_off());
        event
    }

    const MS: Time = 1_000_000;

    fn ev(msg: u32) -> Event {
        Event::Signed { msg }
    }

    #[test]
    fn a_goroutine_readied_by_the_running_one_runs_before_the_run_queue() {
        // runtime/proc.go:runqput(pp, gp, next=true), runqget takes runnext first. The
        // loop has two pieces (0-1, 1-2 ms), a writer waits in the run queue; the
        // loop's first piece readies the validator, which runs once the loop blocks
        // (2-3), before the writer (3-4).
        let mut p = Process::default();
        p.push(Goroutine::Loop, MS, ev(1), Wake::Tail);
        p.push(Goroutine::Loop, MS, ev(2), Wake::Tail);
        p.push(Goroutine::Writer(9), MS, ev(3), Wake::Tail);
        let v = (Goroutine::Validator, MS, ev(4));
        assert_eq!(hand_off(&mut p, MS, MS, &[v]), Some(ev(1)));
        assert_eq!(p.until_tick(), MS, "the loop goes on: it has not blocked");
        assert_eq!(tick(&mut p, MS, 2 * MS), Some(ev(2)));
        assert_eq!(tick(&mut p, MS, 3 * MS), Some(ev(4)), "runnext");
        assert_eq!(tick(&mut p, MS, 4 * MS), Some(ev(3)));
        assert!(!p.has_work());
    }

    #[test]
    fn a_newer_hand_off_kicks_the_older_one_behind_the_run_queue() {
        // runqput: "Kick the old runnext out to the regular run queue". The loop's
        // piece readies the validator, then writer 5; writer 9 waited already. When
        // the loop blocks: writer 5 (runnext), writer 9, the validator.
        let mut p = Process::default();
        p.push(Goroutine::Loop, MS, ev(1), Wake::Tail);
        p.push(Goroutine::Writer(9), MS, ev(2), Wake::Tail);
        let v = (Goroutine::Validator, MS, ev(3));
        let w = (Goroutine::Writer(5), MS, ev(4));
        assert_eq!(hand_off(&mut p, MS, MS, &[v, w]), Some(ev(1)));
        assert_eq!(tick(&mut p, MS, 2 * MS), Some(ev(4)));
        assert_eq!(tick(&mut p, MS, 3 * MS), Some(ev(2)));
        assert_eq!(tick(&mut p, MS, 4 * MS), Some(ev(3)));
        assert!(!p.has_work());
    }

    #[test]
    fn a_hand_off_runs_in_the_rest_of_the_turn() {
        // runqget returns runnext with inheritTime: execute counts no new schedtick,
        // and sysmon's retake preempts 10 ms after schedtick last changed. The loop
        // runs 0-4 ms and readies the validator (25 ms of work), which runs 4-10 (the
        // rest of the turn), is preempted for the writer (10-11), then runs 11-21 and
        // 21-30. Without inheriting it would run 4-14 first.
        let mut p = Process::default();
        p.push(Goroutine::Loop, 4 * MS, ev(1), Wake::Tail);
        p.push(Goroutine::Writer(9), MS, ev(2), Wake::Tail);
        let v = (Goroutine::Validator, 25 * MS, ev(3));
        assert_eq!(hand_off(&mut p, 4 * MS, 4 * MS, &[v]), Some(ev(1)));
        assert_eq!(p.until_tick(), 6 * MS, "the rest of the loop's turn");
        assert_eq!(tick(&mut p, 6 * MS, 10 * MS), None);
        assert_eq!(p.until_tick(), MS, "preempted: the writer's turn");
        assert_eq!(tick(&mut p, MS, 11 * MS), Some(ev(2)));
        assert_eq!(p.until_tick(), GO_TURN, "a turn of its own");
        assert_eq!(tick(&mut p, GO_TURN, 21 * MS), None);
        assert_eq!(tick(&mut p, 9 * MS, 30 * MS), Some(ev(3)));
        assert!(!p.has_work());
    }

    #[test]
    fn a_hand_off_runs_first_after_its_readier_is_preempted() {
        // The loop readies the validator at 1 ms and runs on; at 10 ms it is preempted
        // (goschedImpl) and runqget takes runnext: the validator 10-11 (a turn of its
        // own), the writer 11-12, the loop's 11 ms left 12-22 and 22-23.
        let mut p = Process::default();
        p.push(Goroutine::Loop, MS, ev(1), Wake::Tail);
        p.push(Goroutine::Loop, 20 * MS, ev(2), Wake::Tail);
        p.push(Goroutine::Writer(9), MS, ev(3), Wake::Tail);
        let v = (Goroutine::Validator, MS, ev(4));
        assert_eq!(hand_off(&mut p, MS, MS, &[v]), Some(ev(1)));
        assert_eq!(tick(&mut p, 9 * MS, 10 * MS), None);
        assert_eq!(tick(&mut p, MS, 11 * MS), Some(ev(4)));
        assert_eq!(tick(&mut p, MS, 12 * MS), Some(ev(3)));
        assert_eq!(tick(&mut p, GO_TURN, 22 * MS), None);
        assert_eq!(tick(&mut p, MS, 23 * MS), Some(ev(2)));
    }

    #[test]
    fn a_reader_woken_by_the_network_goes_behind_a_hand_off() {
        // The node woke at 0 (lastpoll = 0). The loop runs 0-10 ms, a writer waits,
        // data for reader 2 comes at 1 ms. At 10 ms the loop's piece readies the
        // validator and sysmon polls (lastpoll + 10 ms): the reader goes to the run
        // queue's tail (injectglist), the validator to runnext. Validator 10-11,
        // writer 11-12, reader 12-13.
        let mut p = Process::default();
        p.arrive(Goroutine::Reader(1), 0, ev(9), 0);
        assert_eq!(tick(&mut p, 0, 0), Some(ev(9)));
        p.push(Goroutine::Loop, GO_TURN, ev(1), Wake::Tail);
        p.push(Goroutine::Writer(9), MS, ev(2), Wake::Tail);
        p.arrive(Goroutine::Reader(2), MS, ev(3), MS);
        let v = (Goroutine::Validator, MS, ev(4));
        assert_eq!(hand_off(&mut p, GO_TURN, GO_TURN, &[v]), Some(ev(1)));
        assert_eq!(tick(&mut p, MS, 11 * MS), Some(ev(4)));
        assert_eq!(tick(&mut p, MS, 12 * MS), Some(ev(2)));
        assert_eq!(tick(&mut p, MS, 13 * MS), Some(ev(3)));
        assert!(!p.has_work());
    }

    #[test]
    fn a_goroutine_readied_by_a_timer_takes_runnext_when_the_running_one_blocks() {
        // findRunnable runs the P's timers (pp.timers.check) before runqget. The
        // publisher's timer fires at 0.5 ms while the loop runs; at 1 ms the loop's
        // piece readies the validator into runnext and the loop blocks; the timer
        // then readies the publisher into runnext, kicking the validator behind the
        // writer: publisher 1-2, writer 2-3, validator 3-4.
        let mut p = Process::default();
        p.push(Goroutine::Loop, MS, ev(1), Wake::Tail);
        p.push(Goroutine::Writer(9), MS, ev(2), Wake::Tail);
        p.push(Goroutine::Publisher, MS, ev(3), Wake::Timer);
        assert!(p.runnable(Goroutine::Publisher));
        let v = (Goroutine::Validator, MS, ev(4));
        assert_eq!(hand_off(&mut p, MS, MS, &[v]), Some(ev(1)));
        assert_eq!(tick(&mut p, MS, 2 * MS), Some(ev(3)));
        assert_eq!(tick(&mut p, MS, 3 * MS), Some(ev(2)));
        assert_eq!(tick(&mut p, MS, 4 * MS), Some(ev(4)));
        assert!(!p.has_work());
    }

    #[test]
    fn a_goroutine_readied_on_an_idle_node_runs_at_once() {
        let mut p = Process::default();
        p.push(Goroutine::Publisher, MS, ev(1), Wake::Timer);
        assert_eq!(p.until_tick(), MS);
        assert_eq!(tick(&mut p, MS, MS), Some(ev(1)));
        assert!(!p.has_work());
    }

    #[test]
    fn a_sender_let_in_by_the_running_receiver_runs_next() {
        // runtime/chan.go:recv wakes the first parked sender with goready (runnext).
        // Reader 1 parks on the full channel at 1 ms holding a second RPC; a writer
        // waits; the loop's piece (1-2 ms) takes an RPC and lets the reader in, which
        // reads its RPC once the loop blocks (2-3), before the writer (3-4).
        let reader = Goroutine::Reader(1);
        let mut p = Process::default();
        p.arrive(reader, MS, ev(1), 0);
        p.arrive(reader, MS, ev(2), 0);
        assert_eq!(p.run_for(MS), Some(ev(1)));
        p.block(reader);
        p.settle();
        p.push(Goroutine::Loop, MS, ev(3), Wake::Tail);
        p.push(Goroutine::Writer(9), MS, ev(4), Wake::Tail);
        assert_eq!(p.run_for(MS), Some(ev(3)));
        p.unblock(reader);
        p.settle();
        assert_eq!(tick(&mut p, MS, 3 * MS), Some(ev(2)));
        assert_eq!(tick(&mut p, MS, 4 * MS), Some(ev(4)));
        assert!(!p.has_work());
    }

    #[test]
    fn readers_sysmon_polls_wait_behind_the_local_run_queue() {
        // sysmon has no P: injectglist puts what its netpoll returns on the global run
        // queue, which findRunnable reads after runqget. Writer 8 runs 0-6 ms, the
        // validator 6-14 ms in two pieces; data for reader 3 arrives at 1 ms; at 10 ms
        // sysmon polls (10 ms after the blocking netpoll that woke the node at 0).
        // Writer 9, readied by the network at 11 ms, runs when the validator blocks
        // (14-15), before the reader (15-16).
        let mut p = Process::default();
        p.push(Goroutine::Writer(8), 6 * MS, ev(1), Wake::Tail);
        p.push(Goroutine::Validator, 4 * MS, ev(2), Wake::Tail);
        p.push(Goroutine::Validator, 4 * MS, ev(3), Wake::Tail);
        p.arrive(Goroutine::Reader(3), MS, ev(4), MS);
        assert_eq!(tick(&mut p, 6 * MS, 6 * MS), Some(ev(1)));
        assert_eq!(tick(&mut p, 4 * MS, 10 * MS), Some(ev(2)));
        assert!(p.runnable(Goroutine::Reader(3)), "sysmon polled");
        p.push(Goroutine::Writer(9), MS, ev(5), Wake::Tail);
        assert_eq!(tick(&mut p, 4 * MS, 14 * MS), Some(ev(3)));
        assert_eq!(
            tick(&mut p, MS, 15 * MS),
            Some(ev(5)),
            "the local run queue first"
        );
        assert_eq!(tick(&mut p, MS, 16 * MS), Some(ev(4)));
        assert!(!p.has_work());
    }

    #[test]
    fn every_sixty_first_turn_takes_the_global_run_queue_first() {
        // findRunnable: `pp.schedtick%61 == 0` takes one goroutine of the global run
        // queue ahead of the local one. The validator's turn is the node's first
        // (schedtick 1); at 10 ms sysmon puts reader 3 on the global run queue and the
        // validator behind it. 100 writers, readied by the network meanwhile, wait
        // locally, one µs of work each: writer k's turn is schedtick k + 2, so after the
        // 60th writer (schedtick 61) the reader runs, then the other 40 writers, and
        // the validator once the local run queue is empty.
        const US: Time = 1_000;
        let mut p = Process::default();
        p.push(Goroutine::Validator, GO_TURN + US, ev(0), Wake::Tail);
        p.arrive(Goroutine::Reader(3), US, ev(1000), MS);
        for k in 0..100 {
            p.push(Goroutine::Writer(k), US, ev(1 + k), Wake::Tail);
        }
        assert_eq!(tick(&mut p, GO_TURN, GO_TURN), None);
        let mut order = Vec::new();
        let mut now = GO_TURN;
        while p.has_work() {
            now += US;
            if let Some(Event::Signed { msg }) = tick(&mut p, US, now) {
                order.push(msg);
            }
        }
        let expected: Vec<u32> = (1..=60).chain([1000]).chain(61..=100).chain([0]).collect();
        assert_eq!(order, expected);
    }

    #[test]
    fn a_preempted_goroutine_queues_behind_those_readied_after_it() {
        // goschedImpl puts a goroutine preempted after its 10 ms on the global run
        // queue: writer 9, readied by the network while writer 8 runs, runs before it.
        let mut p = Process::default();
        p.push(Goroutine::Validator, 12 * MS, ev(1), Wake::Tail);
        p.push(Goroutine::Writer(8), MS, ev(2), Wake::Tail);
        assert_eq!(tick(&mut p, GO_TURN, GO_TURN), None);
        p.push(Goroutine::Writer(9), MS, ev(3), Wake::Tail);
        assert_eq!(tick(&mut p, MS, 11 * MS), Some(ev(2)));
        assert_eq!(tick(&mut p, MS, 12 * MS), Some(ev(3)));
        assert_eq!(tick(&mut p, 2 * MS, 14 * MS), Some(ev(1)));
        assert!(!p.has_work());
    }

    /// A node whose long turns end at `sysmon`'s rounds.
    fn sysmon_ended() -> Process {
        let mut p = Process::default();
        p.end_turns_at_sysmon();
        p
    }

    #[test]
    fn sysmon_preempts_a_turn_it_saw_ten_milliseconds_of_wall_time_before() {
        // runtime/proc.go:retake: a round notes the P's schedtick and when; a later round
        // that finds the same schedtick forcePreemptNS (10 ms) after that preempts the
        // running goroutine (preemptone), which goes to the global run queue as its
        // thread runs (goschedImpl → globrunqput). The validator's 30 ms piece has run
        // 1 ms when rounds come at 2 ms (noted), 11.9 ms (9.9 ms on: not yet) and 12 ms
        // (10 ms on): the wall time counts, not the 1 ms of CPU. The writer then runs its
        // 1 ms, and the validator, from the global run queue once the local one is
        // empty, its 29 ms left in a turn of its own.
        let mut p = sysmon_ended();
        p.record_waits();
        p.push(Goroutine::Validator, 30 * MS, ev(1), Wake::Tail);
        p.push(Goroutine::Writer(9), MS, ev(2), Wake::Tail);
        assert_eq!(p.until_tick(), 30 * MS, "no turn of CPU time");
        assert_eq!(done(&mut p, MS), None);
        assert!(!p.long_turn(2 * MS));
        assert!(!p.long_turn(11_900_000));
        assert!(p.long_turn(12 * MS));
        p.request_preemption();
        p.at(12 * MS);
        p.take_preemption();
        assert_eq!(p.until_tick(), MS, "the writer runs");
        p.at(13 * MS);
        assert_eq!(done(&mut p, MS), Some(ev(2)));
        assert_eq!(
            p.until_tick(),
            29 * MS,
            "then the validator, its piece's rest"
        );
        assert_eq!(done(&mut p, 29 * MS), Some(ev(1)));
        assert!(!p.has_work());
        let last = p.waits().last().expect("recorded");
        assert_eq!(
            (last.id, last.at, last.wait, last.readied),
            (Goroutine::Validator, 13 * MS, MS, Readied::Preempted)
        );
    }

    #[test]
    fn a_recorded_wait_says_what_readied_the_goroutine() {
        // As Go's trace tells it: the loop hands a copy to the validator (a channel send,
        // goready), the publisher's timer fires, and sysmon's netpoll finds a reader's
        // data (injectglist: no P). The loop runs 0-10 ms; the reader's data came at 1 ms.
        let mut p = Process::default();
        p.record_waits();
        p.at(0);
        p.push(Goroutine::Loop, 10 * MS, ev(1), Wake::Tail);
        p.push(Goroutine::Publisher, MS, ev(2), Wake::Timer);
        p.arrive(Goroutine::Reader(3), MS, ev(3), MS);
        p.at(10 * MS);
        let v = (Goroutine::Validator, MS, ev(4));
        assert_eq!(hand_off(&mut p, 10 * MS, 10 * MS, &[v]), Some(ev(1)));
        for (at, cost) in [(11, MS), (12, MS), (13, MS)] {
            p.at(at * MS);
            assert!(tick(&mut p, cost, at * MS).is_some());
        }
        let readied: Vec<(Goroutine, Readied)> =
            p.waits().iter().map(|w| (w.id, w.readied)).collect();
        assert_eq!(
            readied,
            [
                (Goroutine::Loop, Readied::Outside),
                (Goroutine::Publisher, Readied::Timer),
                (
                    Goroutine::Validator,
                    Readied::HandOff(Goroutine::Loop.kind())
                ),
                (Goroutine::Reader(3), Readied::SysmonPoll),
            ]
        );
    }

    #[test]
    fn a_new_turn_restarts_sysmon_s_count() {
        // pd.schedtick != pp.schedtick: the round notes the new turn and when. The
        // validator blocks after its 1 ms and the writer gets a turn of its own
        // (schedtick + 1): the round at 10 ms notes it, the one at 19 ms is 9 ms on.
        let mut p = sysmon_ended();
        p.push(Goroutine::Validator, MS, ev(1), Wake::Tail);
        p.push(Goroutine::Writer(9), 50 * MS, ev(2), Wake::Tail);
        assert!(!p.long_turn(0));
        assert_eq!(done(&mut p, MS), Some(ev(1)));
        assert!(!p.long_turn(10 * MS));
        assert!(!p.long_turn(19 * MS));
        assert!(p.long_turn(20 * MS));
    }

    #[test]
    fn a_chain_of_hand_offs_shares_one_turn_for_sysmon() {
        // execute(gp, inheritTime=true) does not advance schedtick: the validator the
        // loop readied runs in the loop's turn, and sysmon's round 10 ms after it saw
        // that turn preempts the validator.
        let mut p = sysmon_ended();
        p.push(Goroutine::Loop, MS, ev(1), Wake::Tail);
        p.push(Goroutine::Writer(9), MS, ev(2), Wake::Tail);
        assert!(!p.long_turn(0));
        let v = (Goroutine::Validator, 20 * MS, ev(3));
        assert_eq!(hand_off(&mut p, MS, MS, &[v]), Some(ev(1)));
        assert_eq!(
            p.until_tick(),
            20 * MS,
            "the validator runs, in the loop's turn"
        );
        assert!(p.long_turn(10 * MS));
        p.request_preemption();
        p.take_preemption();
        assert_eq!(p.until_tick(), MS, "the writer runs next");
    }

    /// A process whose writer (writing the connection itself, without the event loop)
    /// has two pieces of 1 ms, ev(1) and ev(2), and has run half of the first, inside
    /// its write system call (a whole piece by default): `sysmon` retakes its P.
    fn retaken_writer() -> Process {
        let mut p = Process::default();
        p.push(Goroutine::Writer(1), MS, ev(1), Wake::Tail);
        p.push(Goroutine::Writer(1), MS, ev(2), Wake::Tail);
        assert_eq!(p.run_for(MS / 2), None);
        assert!(p.in_syscall().is_some());
        p
    }

    #[test]
    fn a_goroutine_back_from_a_retaken_call_waits_behind_the_others_on_the_global_queue() {
        // runtime/proc.go: `retake` → `handoffp` finds the validator runnable and starts
        // a thread for the P; the writer back from its write finds the P taken
        // (`exitsyscallNoP` → `globrunqput`). Without the retake the writer would write
        // its second RPC before the validator runs (a goroutine loops over its queue).
        let mut p = retaken_writer();
        p.push(Goroutine::Validator, MS, ev(3), Wake::Tail);
        p.retake();
        assert!(p.p_busy(), "the P runs the validator on another thread");
        assert_eq!(p.in_syscall(), None, "a retaken call holds no P");
        assert_eq!(p.until_tick(), MS / 2, "the call goes on");
        assert_eq!(done(&mut p, MS / 2), Some(ev(1)));
        assert!(!p.took_idle_p());
        assert_eq!(done(&mut p, MS), Some(ev(3)));
        assert_eq!(done(&mut p, MS), Some(ev(2)));
        assert!(!p.has_work());
    }

    #[test]
    fn a_goroutine_alone_on_its_p_leaves_it_idle_in_a_retaken_call_and_takes_it_back() {
        // `handoffp`'s thread finds nothing to run and leaves the P idle (so `sysmon`
        // may sleep deeply); the writer back from its call takes it
        // (`exitsyscallTryGetP`, which wakes `sysmon`) and writes on.
        let mut p = retaken_writer();
        p.retake();
        assert!(!p.p_busy(), "an idle P");
        assert!(p.has_work(), "the writer is still in its call");
        assert_eq!(done(&mut p, MS / 2), Some(ev(1)));
        assert!(p.took_idle_p());
        assert!(!p.took_idle_p(), "told once");
        assert!(p.p_busy());
        assert_eq!(done(&mut p, MS), Some(ev(2)));
    }

    #[test]
    fn data_for_a_reader_while_the_p_is_idle_readies_it_at_once() {
        // With the P idle, the thread `handoffp` started blocks in `netpoll`: data
        // readies its reader at once (on a busy P it would wait for a poll), the P runs
        // it, and the writer back from its call waits on the global run queue.
        let reader = Goroutine::Reader(5);
        let mut p = retaken_writer();
        p.retake();
        p.arrive(reader, MS, ev(9), MS / 2);
        assert!(p.runnable(reader));
        assert!(p.p_busy());
        assert_eq!(done(&mut p, MS / 2), Some(ev(1)));
        assert!(!p.took_idle_p(), "the P is taken");
        assert_eq!(done(&mut p, MS), Some(ev(9)));
        assert_eq!(done(&mut p, MS), Some(ev(2)));
    }

    #[test]
    fn a_reader_retaken_in_its_read_waits_for_the_p_after_the_call_not_after_the_piece() {
        // The read system call is the first quarter of the reader's 4 ms piece: retaken
        // 0.5 ms in, the call returns at 1 ms, where the reader finds the P running the
        // validator and waits for it with its decoding (3 ms) left.
        let reader = Goroutine::Reader(1);
        let mut p = Process::default();
        p.set_syscall_shares(SyscallShares::new(1.0, 0.25));
        p.arrive(reader, 4 * MS, ev(1), 0);
        p.push(Goroutine::Validator, MS, ev(2), Wake::Tail);
        assert_eq!(p.run_for(MS / 2), None);
        p.retake();
        assert_eq!(p.until_tick(), MS / 2, "to the call's end");
        assert_eq!(done(&mut p, MS / 2), None);
        assert_eq!(p.until_tick(), MS, "the validator");
        assert_eq!(done(&mut p, MS), Some(ev(2)));
        assert_eq!(p.until_tick(), 3 * MS);
        assert_eq!(done(&mut p, 3 * MS), Some(ev(1)));
    }

    #[test]
    fn a_goroutine_back_from_a_retaken_call_is_recorded_as_having_lost_its_p() {
        let mut p = retaken_writer();
        p.record_waits();
        p.push(Goroutine::Validator, MS, ev(3), Wake::Tail);
        p.retake();
        done(&mut p, MS / 2);
        done(&mut p, MS);
        let waits = p.waits();
        let writer = waits.iter().find(|w| w.id == Goroutine::Writer(1));
        assert_eq!(writer.map(|w| w.readied), Some(Readied::LostP));
    }
}
