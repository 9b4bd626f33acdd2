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
//! Simplified: the validation workers share one turn (the node runs on one core at a
//! time, see `slices.rs`, so two workers would not run at once), and the goroutine that
//! became runnable goes to the back of the queue (Go's `runnext` hand-off is not
//! modelled).

use std::collections::VecDeque;

use crate::config::Time;
use crate::queue::Event;

/// Go's `forcePreemptNS`: a goroutine's turn, in nanoseconds of CPU.
pub const GO_TURN: Time = 10_000_000;

/// Which goroutine of a node does a piece of work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Goroutine {
    /// Reads the RPCs arriving on a link.
    Reader(u32),
    /// Writes the RPCs leaving on a link.
    Writer(u32),
    /// Validates copies.
    Validator,
    /// Signs the node's publications.
    Publisher,
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
}

/// A node's goroutines and their run queue.
#[derive(Default)]
pub struct Process {
    routines: Vec<Routine>,
    /// Runnable goroutines (indices into `routines`); the front one runs.
    run_queue: VecDeque<u32>,
    /// CPU time the front goroutine has run in its current turn.
    turn: Time,
}

impl Process {
    /// `id` has a piece of work of `cost`; `event` happens when it is done.
    pub fn push(&mut self, id: Goroutine, cost: Time, event: Event) {
        let i = match self.routines.iter().position(|r| r.id == id) {
            Some(i) => i,
            None => {
                self.routines.push(Routine {
                    id,
                    pieces: VecDeque::new(),
                    runnable: false,
                });
                self.routines.len() - 1
            }
        };
        let r = &mut self.routines[i];
        r.pieces.push_back(Piece { event, left: cost });
        if !r.runnable {
            r.runnable = true;
            self.run_queue.push_back(i as u32);
        }
    }

    /// True if goroutine `id` is in the run queue (has work); false if it is blocked.
    pub fn runnable(&self, id: Goroutine) -> bool {
        self.routines.iter().any(|r| r.id == id && r.runnable)
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
        if r.pieces.is_empty() {
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
