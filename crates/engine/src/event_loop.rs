//! pubsub's event loop (`cpu.event_loop`): one goroutine per node handles every incoming
//! RPC, fed by the readers through a 32-slot channel on which they block when it is
//! full (go-libp2p-pubsub v0.17.0).
//!
//! - A peer's reading goroutine decodes an RPC, then sends it on `p.incoming`
//!   (`comm.go:handleNewStream`), a channel of 32 (`pubsub.go:NewPubSub`). While the
//!   channel is full the reader is parked (`chan.rs`) and reads nothing more from its
//!   stream; what arrives for it waits.
//! - One goroutine, `pubsub.go:processLoop`, takes the RPCs one at a time
//!   (`case in := <-p.incoming` → `handleIncomingRPC`: subscriptions, the seen check and
//!   `validation.go:Push` per message, the router's control handling). Taking one from a
//!   full channel lets the first parked reader's RPC in (`runtime/chan.go:recv`).
//! - A receive finds an idle loop waiting on the channel: the loop takes the RPC at once
//!   (`chansend` hands it to the waiting receiver) and becomes runnable.
//!
//! - A reader that does not read closes its stream's window (`stream_window.rs`): the
//!   reader counts an RPC's bytes read when it has decoded it, and the window update
//!   reaches the sender one link latency later. A sender whose window is closed blocks
//!   in `Stream.Write`, so its writer takes nothing more from the peer's 32-RPC queue and
//!   `send.rs:enqueue` drops there (`rpc_queue.go:Push` → `gossipsub.go:doDropRPC`).
//!
//! Not modelled yet: the validated messages' channel `sendMsg` (32, the loop forwards
//! them, `publishMessage`), and the select's random choice between the two channels.
//! See NOTES-processloop.md.

use crate::chan::{Chan, Sent};
use crate::goroutines::Goroutine;
use crate::queue::Event;
use crate::sim::Simulation;
use crate::stream_window::{StreamWindow, INITIAL_STREAM_WINDOW};

/// go-libp2p-pubsub's `incoming` channel: 32 slots (`pubsub.go:NewPubSub`).
pub const INCOMING_SLOTS: usize = 32;

/// A node's event loop: its `incoming` channel of (link, RPC), senders named by link.
pub struct NodeLoop {
    incoming: Chan<u32, (u32, u32)>,
    /// Handling an RPC (its piece of CPU work submitted and not done).
    busy: bool,
}

impl Default for NodeLoop {
    fn default() -> Self {
        Self {
            incoming: Chan::new(INCOMING_SLOTS),
            busy: false,
        }
    }
}

impl Simulation {
    /// `link`'s reader decoded RPC `rpc`: it sends it to its node's event loop, or parks
    /// until there is room.
    pub(crate) fn hand_to_loop(&mut self, link: u32, rpc: u32) {
        let node = self.links.peer[link as usize];
        let bytes = self.rpcs.get(rpc).total_bytes().max(1);
        self.stream_read(link, bytes);
        let lp = &mut self.loops[node as usize];
        match lp.incoming.send(link, (link, rpc)) {
            Sent::Buffered if !lp.busy => self.loop_next(node),
            Sent::Buffered => {}
            Sent::Blocked => self.cpu.block(node, Goroutine::Reader(link)),
        }
    }

    /// The reader of `link` read `bytes` from its stream: a window update, once half
    /// the window was read (`stream_window.rs`), reaches the sender one link latency
    /// later.
    fn stream_read(&mut self, link: u32, bytes: u64) {
        let Some(delta) = self.stream_window(link).read(bytes) else {
            return;
        };
        let back = self.links.reverse[link as usize];
        let at = self.now() + self.links.latency[back as usize];
        let node = self.links.peer[link as usize];
        let delta = u32::try_from(delta).expect("a window update fits a yamux header");
        self.queue
            .push(at, node, Event::WindowUpdate { link, delta });
    }

    /// `link`'s yamux stream window (both ends), opened at its first use.
    pub(crate) fn stream_window(&mut self, link: u32) -> &mut StreamWindow {
        let l = link as usize;
        if l >= self.windows.len() {
            self.windows
                .resize_with(l + 1, || StreamWindow::new(INITIAL_STREAM_WINDOW));
        }
        &mut self.windows[l]
    }

    /// `node`'s event loop is free: it takes the next RPC, if any, and lets in the
    /// reader that was parked first. Handling it ends with `Event::Decoded`.
    pub(crate) fn loop_next(&mut self, node: u32) {
        let lp = &mut self.loops[node as usize];
        let Some(((link, rpc), woken)) = lp.incoming.recv() else {
            lp.busy = false;
            return;
        };
        lp.busy = true;
        if let Some(reader) = woken {
            self.cpu.unblock(node, Goroutine::Reader(reader));
        }
        // Exact: the loop's share of pubsub's per-RPC work has no spread of its own yet.
        let cost = self.cpu.costs.per_rpc_loop_ns;
        let event = Event::Decoded { link, rpc };
        self.cpu
            .submit(&mut self.queue, node, Goroutine::Loop, cost, event);
    }
}
