//! A buffered Go channel between a node's goroutines, with the semantics of Go's runtime
//! (`runtime/chan.go`), for go-libp2p-pubsub's two channels into its event loop:
//! `incoming` (the readers' RPCs) and `sendMsg` (validated messages), 32 slots each
//! (`pubsub.go:NewPubSub`).
//!
//! - A send with a free slot puts the value at the buffer's tail (`chansend`).
//! - A send to a full buffer parks the sender on the channel's `sendq`, first in first
//!   out (`chansend` → `gopark`): the goroutine blocks holding its value. That is how a
//!   peer's reading goroutine stops reading when the event loop falls behind
//!   (`comm.go:handleNewStream`, `p.incoming <- ...`).
//! - A receive takes the buffer's head; if senders are parked, the first one's value
//!   moves into the freed slot at the tail and that sender is woken (`chan.go:recv`,
//!   "Queue is full. Take the item at the head of the queue. Make the sender enqueue its
//!   item at the tail of the queue"). So the buffer stays full while senders wait, and
//!   values keep the order their senders tried to send them.
//!
//! Receivers never park here: the event loop is the only receiver and it asks only when
//! it is free to run a select case.

use std::collections::VecDeque;

/// A buffered channel of `T`s whose senders are identified by `S`.
pub struct Chan<S, T> {
    capacity: usize,
    buffer: VecDeque<T>,
    /// Parked senders and the values they hold, in the order they blocked.
    parked: VecDeque<(S, T)>,
}

/// What a send did.
#[derive(Debug, PartialEq, Eq)]
pub enum Sent {
    /// The value is in the buffer; the sender goes on.
    Buffered,
    /// The buffer was full: the sender is parked with its value until a receive.
    Blocked,
}

impl<S: Copy + PartialEq, T> Chan<S, T> {
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity,
            buffer: VecDeque::with_capacity(capacity),
            parked: VecDeque::new(),
        }
    }

    /// `sender` sends `value` without waiting for a receiver (none waits here).
    pub fn send(&mut self, sender: S, value: T) -> Sent {
        if self.buffer.len() < self.capacity {
            debug_assert!(self.parked.is_empty(), "senders park only on a full buffer");
            self.buffer.push_back(value);
            return Sent::Buffered;
        }
        self.parked.push_back((sender, value));
        Sent::Blocked
    }

    /// The receiver takes the head value, if any, and the sender it wakes: the first
    /// parked one, whose value took the freed slot.
    pub fn recv(&mut self) -> Option<(T, Option<S>)> {
        let head = self.buffer.pop_front()?;
        let woken = self.parked.pop_front().map(|(sender, value)| {
            self.buffer.push_back(value);
            sender
        });
        Some((head, woken))
    }

    /// True if `sender` is parked on this channel.
    pub fn blocks(&self, sender: S) -> bool {
        self.parked.iter().any(|(s, _)| *s == sender)
    }

    /// Values in the buffer (parked senders' values not counted).
    pub fn len(&self) -> usize {
        self.buffer.len()
    }

    pub fn is_empty(&self) -> bool {
        self.buffer.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// go-libp2p-pubsub's `incoming`: 32 slots.
    const SLOTS: usize = 32;

    #[test]
    fn the_thirty_third_send_blocks_its_sender() {
        let mut c: Chan<u32, u32> = Chan::new(SLOTS);
        for v in 0..SLOTS as u32 {
            assert_eq!(c.send(v % 4, v), Sent::Buffered);
        }
        assert_eq!(c.send(9, 100), Sent::Blocked);
        assert!(c.blocks(9));
        assert!(!c.blocks(0), "buffered senders went on");
        assert_eq!(c.len(), SLOTS);
    }

    #[test]
    fn a_receive_from_a_full_channel_lets_the_first_parked_sender_in_at_the_tail() {
        // runtime/chan.go:recv: head out, first parked sender's value in at the tail.
        let mut c: Chan<u32, u32> = Chan::new(2);
        c.send(1, 10);
        c.send(2, 20);
        assert_eq!(c.send(3, 30), Sent::Blocked);
        assert_eq!(c.send(4, 40), Sent::Blocked);
        assert_eq!(c.recv(), Some((10, Some(3))));
        assert_eq!(
            c.len(),
            2,
            "still full: the woken sender's value took the slot"
        );
        assert!(!c.blocks(3) && c.blocks(4));
        assert_eq!(c.recv(), Some((20, Some(4))));
        assert_eq!(c.recv(), Some((30, None)));
        assert_eq!(c.recv(), Some((40, None)));
        assert_eq!(c.recv(), None);
        assert!(c.is_empty());
    }

    #[test]
    fn values_come_out_in_the_order_their_senders_tried_to_send_them() {
        // 2 slots, 6 senders, a receive after every third send: every value is received
        // once, in send order, whoever was parked.
        let mut c: Chan<u32, u32> = Chan::new(2);
        let mut got = Vec::new();
        for v in 0..6 {
            c.send(v, v);
            if v % 3 == 2 {
                got.push(c.recv().expect("non-empty").0);
            }
        }
        while let Some((v, _)) = c.recv() {
            got.push(v);
        }
        assert_eq!(got, [0, 1, 2, 3, 4, 5]);
    }
}
