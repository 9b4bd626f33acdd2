//! The application's subscription (`cpu.event_loop`): how a delivered message reaches
//! the application that subscribed, in go-libp2p-pubsub v0.17.0.
//!
//! - The event loop delivers a message (`pubsub.go:publishMessage`, after the tracer's
//!   `DeliverMessage`, before the router forwards it) by sending it on each
//!   subscription's channel without blocking (`notifySubs`): a channel of 32
//!   (`pubsub.go:Subscribe`, `WithBufferSize`'s default). An application parked in
//!   `Subscription.Next` takes it at once and is readied, into the loop's `runnext`;
//!   one that is busy finds it in the buffer; a delivery that finds the 32 slots full is
//!   dropped (`tracer.UndeliverableMessage`, "subscriber too slow"), after the message
//!   was delivered and forwarded all the same.
//! - The application is one goroutine (`Goroutine::App`) that reads a message, does
//!   `per_app_message` of work with it, and reads the next, taking the buffer's oldest;
//!   with the buffer empty it parks in `Next` again.
//!
//! The testbed's application reads and drops each message (`per_app_message` 0: its few
//! hundred nanoseconds are in the fitted costs); the model's application then still takes
//! its turns in the node's run queue, behind the goroutines readied after it.

use crate::goroutines::Goroutine;
use crate::queue::Event;
use crate::rpc::Kind;
use crate::sim::Simulation;

/// A subscription's buffer: 32 messages (`pubsub.go:Subscribe`, `WithBufferSize`).
pub const SUBSCRIPTION_BUFFER: u32 = 32;

/// Where the application stands with its subscription.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Subscription {
    /// It holds a message (readied with one, or working on it); else it is parked in
    /// `Next`.
    holding: bool,
    /// Messages waiting in the channel's buffer.
    buffered: u32,
}

/// What became of a message the loop sent on the subscription's channel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sent {
    /// Handed to the parked application, or buffered behind what it holds.
    Taken,
    /// The buffer was full: undeliverable.
    Dropped,
}

impl Subscription {
    /// The loop sends a message on the channel (`notifySubs`'s non-blocking send).
    pub fn send(&mut self) -> Sent {
        if !self.holding {
            self.holding = true;
            Sent::Taken
        } else if self.buffered < SUBSCRIPTION_BUFFER {
            self.buffered += 1;
            Sent::Taken
        } else {
            Sent::Dropped
        }
    }

    /// The application is done with a message: it takes the buffer's oldest, or parks.
    pub fn done(&mut self) {
        debug_assert!(self.holding, "done with a message it holds");
        if self.buffered > 0 {
            self.buffered -= 1;
        } else {
            self.holding = false;
        }
    }
}

impl Simulation {
    /// `node`'s loop delivers a message from `sender` (the node itself for its own
    /// publication) to its application's subscription: the application gets it, or it
    /// is dropped as undeliverable. Nothing without the event loop.
    pub(crate) fn notify_app(&mut self, node: u32, sender: u32) {
        let Some(node_loop) = self.loops.get_mut(node as usize) else {
            return;
        };
        match node_loop.app.send() {
            Sent::Dropped => self.count_drop(node, sender, Kind::Payload, "undeliverable"),
            Sent::Taken => {
                let cost = self.cpu.costs.per_app_message_ns;
                let event = Event::AppRead { node };
                self.cpu
                    .submit(&mut self.queue, node, Goroutine::App, cost, event);
            }
        }
    }

    /// `node`'s application is done with a message (`Event::AppRead`).
    pub(crate) fn app_read(&mut self, node: u32) {
        self.loops[node as usize].app.done();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_application_buffers_thirty_two_messages_and_drops_the_next() {
        let mut s = Subscription::default();
        assert_eq!(s.send(), Sent::Taken, "handed to the parked application");
        for _ in 0..SUBSCRIPTION_BUFFER {
            assert_eq!(s.send(), Sent::Taken);
        }
        assert_eq!(s.send(), Sent::Dropped, "the 34th while it holds the first");
        s.done();
        assert_eq!(s.send(), Sent::Taken, "a slot freed as it took the next");
        for _ in 0..=SUBSCRIPTION_BUFFER {
            s.done();
        }
        assert_eq!(s, Subscription::default(), "parked with the buffer empty");
    }
}
