//! Inside a node on a time-sliced host: its goroutines, as Go's scheduler runs them.
//!
//! go-libp2p-pubsub v0.17.0 does its CPU work in goroutines, each with a queue of its own:
//! a reading goroutine per peer (`comm.go:handleNewStream`), a writing goroutine per peer
//! that pops its 32-RPC queue (`comm.go:handleSendingMessages`, `rpc_queue.go:Pop`), the
//! validation workers on the 32-slot validation queue (`validation.go:validateWorker`),
//! and the application's goroutine that signs what it publishes (`topic.go:Publish`).
//! Each one loops over its queue without blocking while it has work. Go's scheduler
//! (`runtime/proc.go`) keeps runnable goroutines in a first-in first-out run queue; one
//! runs until it blocks (its queue is empty) or has run `forcePreemptNS` = 10 ms, then
//! goes to the back. So a writer that gets its turn writes every RPC waiting for its
//! peer, and the validation workers get their turn among the readers and writers, not
//! a turn per copy.
//!
//! Go's netpoller decides when a reading goroutine that waits on the network becomes
//! runnable again. A P polls the network (non-blocking `netpoll(0)`) only when its local
//! and global run queues are empty (`runtime/proc.go:findRunnable`, "Poll network"
//! after `runqget` and the global run queue); a thread with nothing to run blocks in
//! `netpoll` and returns as soon as data arrives, setting `sched.lastpoll`; and `sysmon`
//! polls when the network was not polled for 10 ms (`runtime/proc.go:sysmon`,
//! `lastpoll+10*1000*1000 < now`). So while a node has runnable goroutines, data for a
//! waiting reader sits in the kernel: the reader becomes runnable when the run queue
//! empties or 10 ms after the last poll, and everything that arrived meanwhile is read
//! on that one wake-up.
//!
//! Simplified: the validation workers share one turn (the node runs on one core at a
//! time, see `slices.rs`, so two workers would not run at once), and the goroutine that
//! became runnable goes to the back of the queue (Go's `runnext` hand-off is not
//! modelled). The netpoll rule is that of a node with one P: with GOMAXPROCS > 1 a P
//! with nothing to run parks its thread in the blocking `netpoll`, which wakes readers
//! at once even while another P runs goroutines; a node here runs on one core at a time.

use std::collections::VecDeque;

use rustc_hash::FxHashMap;

use crate::config::Time;
use crate::queue::Event;

/// Go's `forcePreemptNS`: a goroutine's turn, in nanoseconds of CPU.
pub const GO_TURN: Time = 10_000_000;

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
}

/// A piece of CPU work: what happens when it is done, and the CPU time it still needs.
struct Piece {
    event: Event,
    left: Time,
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
    /// CPU time the front goroutine has run in its current turn.
    turn: Time,
    /// Work for reading goroutines whose data arrived while the node had runnable
    /// goroutines: not runnable until the next poll of the network.
    netpoll: VecDeque<(Goroutine, Piece)>,
    /// Go's `sched.lastpoll`: when a blocking `netpoll` last returned or `sysmon` last
    /// polled.
    last_poll: Time,
}

impl Process {
    /// `id` has a piece of work of `cost`; `event` happens when it is done.
    pub fn push(&mut self, id: Goroutine, cost: Time, event: Event) {
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
        r.pieces.push_back(Piece { event, left: cost });
        if !r.runnable && !r.blocked {
            r.runnable = true;
            self.run_queue.push_back(i as u32);
        }
    }

    /// Where goroutine `id` is in `routines`, if it ever had work.
    #[inline]
    fn find(&self, id: Goroutine) -> Option<usize> {
        self.index.get(&id).map(|&i| i as usize)
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

    /// The channel's receiver let blocked goroutine `id` in (`runtime/chan.go:recv` →
    /// `goready`): it is runnable again if it has work. (Go puts it in `runnext`; here
    /// it goes to the back of the run queue, as every goroutine that becomes runnable.)
    pub fn unblock(&mut self, id: Goroutine) {
        let Some(i) = self.find(id).filter(|&i| self.routines[i].blocked) else {
            return;
        };
        let r = &mut self.routines[i];
        r.blocked = false;
        if !r.pieces.is_empty() && !r.runnable {
            r.runnable = true;
            self.run_queue.push_back(i as u32);
        }
    }

    /// Data of `cost` arrived at `now` for reading goroutine `id`. A runnable reader
    /// reads it in turn; a waiting one becomes runnable at once if the node has nothing
    /// else to run (its thread blocks in `netpoll`, which returns and sets
    /// `sched.lastpoll`), else at the next poll (`poll`).
    pub fn arrive(&mut self, id: Goroutine, cost: Time, event: Event, now: Time) {
        if self.runnable(id) {
            self.push(id, cost, event);
        } else if self.has_work() || !self.netpoll.is_empty() {
            self.netpoll.push_back((id, Piece { event, left: cost }));
        } else {
            self.last_poll = now;
            self.push(id, cost, event);
        }
    }

    /// `sysmon`'s poll of the network on a node that runs, at one of its scheduling
    /// points: once the network was not polled for `SYSMON_POLL`, the readers whose data
    /// arrived become runnable (in the order it arrived) and `sched.lastpoll` is now.
    /// Call before `settle`: sysmon injects them (`injectglist`) before it preempts the
    /// goroutine that used up its turn (`retake`), so they run first.
    pub fn sysmon_poll(&mut self, now: Time) {
        if !self.netpoll.is_empty() && now >= self.last_poll + SYSMON_POLL {
            self.last_poll = now;
            self.inject();
        }
    }

    /// `findRunnable`'s non-blocking `netpoll(0)` once the run queue is empty (it does
    /// not set `sched.lastpoll`). Call after `settle`.
    pub fn idle_poll(&mut self) {
        if self.run_queue.is_empty() {
            self.inject();
        }
    }

    fn inject(&mut self) {
        while let Some((id, piece)) = self.netpoll.pop_front() {
            self.push(id, piece.left, piece.event);
        }
    }

    pub fn has_work(&self) -> bool {
        !self.run_queue.is_empty()
    }

    /// CPU time until the running goroutine's piece is done or its turn ends.
    pub fn until_tick(&self) -> Time {
        let r = &self.routines[self.run_queue[0] as usize];
        let left = r
            .pieces
            .front()
            .expect("a runnable goroutine has work")
            .left;
        left.min(GO_TURN.saturating_sub(self.turn))
    }

    /// The running goroutine ran for `elapsed`: the event of its piece if that is done.
    pub fn run_for(&mut self, elapsed: Time) -> Option<Event> {
        self.turn += elapsed;
        let r = &mut self.routines[self.run_queue[0] as usize];
        let piece = r.pieces.front_mut().expect("a runnable goroutine has work");
        piece.left = piece.left.saturating_sub(elapsed);
        if piece.left > 0 {
            return None;
        }
        r.pieces.pop_front().map(|piece| piece.event)
    }

    /// After a piece's event: a goroutine without work blocks, one whose turn is used up
    /// goes to the back of the run queue.
    pub fn settle(&mut self) {
        let Some(&front) = self.run_queue.front() else {
            return;
        };
        let r = &mut self.routines[front as usize];
        if r.pieces.is_empty() || r.blocked {
            r.runnable = false;
            self.run_queue.pop_front();
            self.turn = 0;
        } else if self.turn >= GO_TURN {
            self.run_queue.rotate_left(1);
            self.turn = 0;
        }
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

    #[test]
    fn a_goroutine_works_through_its_queue_before_the_next_one_runs() {
        let mut p = Process::default();
        let (a, b, c) = (
            Event::Signed { msg: 1 },
            Event::Signed { msg: 2 },
            Event::Signed { msg: 3 },
        );
        p.push(Goroutine::Validator, 5, a);
        p.push(Goroutine::Writer(7), 1, c);
        p.push(Goroutine::Validator, 5, b);
        assert_eq!(p.until_tick(), 5);
        assert_eq!(done(&mut p, 5), Some(a));
        assert_eq!(done(&mut p, 5), Some(b), "the validator keeps its turn");
        assert_eq!(done(&mut p, 1), Some(c));
        assert!(!p.has_work());
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
        p.push(Goroutine::Validator, 5_000_000, v);
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
        p.push(Goroutine::Validator, 25_000_000, v);
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
        p.push(Goroutine::Loop, 2_000, l1);
        assert_eq!(tick(&mut p, 0, 5_000), None);
        assert_eq!(
            p.until_tick(),
            2_000,
            "the loop runs, the reader stays parked"
        );
        p.unblock(reader);
        assert_eq!(tick(&mut p, 2_000, 7_000), Some(l1));
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
        p.push(Goroutine::Loop, 1_000, l1);
        p.unblock(reader);
        assert!(!p.runnable(reader) && !p.blocked(reader));
        assert!(p.waits_on_network(reader));
    }

    #[test]
    fn a_goroutine_is_preempted_after_ten_milliseconds() {
        let mut p = Process::default();
        let (long, short) = (Event::Signed { msg: 1 }, Event::Signed { msg: 2 });
        p.push(Goroutine::Validator, 25_000_000, long);
        p.push(Goroutine::Reader(3), 1_000, short);
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
}
