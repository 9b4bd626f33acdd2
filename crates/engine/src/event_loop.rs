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
//!   reader counts an RPC's bytes read when it has decoded it, and the window update it
//!   owes goes on its connection's `sendCh` (`stream.go:Stream.Read` →
//!   `sendWindowUpdate` → `session.go:sendMsg`), parking the reader while that is full;
//!   the sendLoop writes it, and it reaches the sender one link latency later. A sender
//!   whose window is closed blocks
//!   in `Stream.Write`, so its writer takes nothing more from the peer's 32-RPC queue and
//!   `send.rs:enqueue` drops there (`rpc_queue.go:Push` → `gossipsub.go:doDropRPC`).
//! - On the sending side the writer's `Stream.Write` only puts the RPC's frames on the
//!   connection's 64-frame `sendCh`; yamux's sendLoop pays the write (`transport.rs`,
//!   `SendLoop`). A writer whose `sendCh` is full blocks as on a closed window.
//!
//! - A validation worker marks the message seen once it has checked the signature
//!   (`validation.go:validate`, `markSeen`): a copy it validates after that is a
//!   duplicate and goes no further, and the loop drops a copy that arrives after that
//!   without validating it (`pubsub.go:handleIncomingRPC` → `shouldPush`,
//!   `seenMessage`). Such duplicates are counted when the message is delivered.
//! - The worker hands the first validated copy to the loop through `p.sendMsg`, 32
//!   slots (`validation.go:sendMsgBlocking`), and parks while it is full, keeping its
//!   place among the copies being validated (`cpu_pending`), so the validation queue
//!   overflows sooner. The loop's piece for it is `pubsub.go:publishMessage`:
//!   deliver the message (`per_publish_loop_ns`) and forward it, one
//!   `gossipsub.go:sendRPC` per peer (`per_forward_loop_ns` each). A message that needs
//!   no validation is published inside the RPC's handling (`pubsub.go:pushMsg`), which
//!   then costs as much more per such message.
//! - With both channels ready, the loop's `select` takes either with probability 1/2
//!   (`runtime/select.go:selectgo` shuffles its cases with `cheaprandn`); a seeded
//!   stream per node keeps runs deterministic.
//!
//! The model's validation workers share one goroutine (`goroutines.rs`): one parked
//! worker parks them all, as on a host of one core (go starts one per CPU).

use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use crate::chan::{Chan, Sent};
use crate::config::Time;
use crate::error::EngineError;
use crate::goroutines::Goroutine;
use crate::queue::Event;
use crate::rng::Rng;
use crate::sim::Simulation;
use crate::stream_window::{StreamWindow, INITIAL_STREAM_WINDOW};
use crate::subscription::Subscription;
use crate::transport::{ParkedUpdate, Put, WINDOW_UPDATE};
use crate::wire::WireSizes;

/// go-libp2p-pubsub's `incoming` channel: 32 slots (`pubsub.go:NewPubSub`).
pub const INCOMING_SLOTS: usize = 32;

/// go-libp2p-pubsub's `sendMsg` channel: 32 slots (`pubsub.go:NewPubSub`).
pub const SEND_MSG_SLOTS: usize = 32;

/// The largest payload RPC the stream windows are modelled for: half a window. The model
/// hands an RPC to the receiver whole, once all its bytes are written, while go's reader
/// reads a long message as its bytes come (msgio's `ReadFull`) and returns credit as it
/// goes; with more than half a window blocked in one RPC the model's sender would wait
/// for an update its receiver never sends (`stream_window.rs`).
pub const LARGEST_RPC: u64 = INITIAL_STREAM_WINDOW / 2;

/// Refuse the event loop for messages whose RPC is larger than `LARGEST_RPC`.
pub fn check_rpc_sizes(wire: &WireSizes, sizes: &[u32]) -> Result<(), EngineError> {
    let Some(&largest) = sizes.iter().max() else {
        return Ok(());
    };
    let rpc = WireSizes::frame(wire.publish_field(u64::from(largest)));
    if rpc <= LARGEST_RPC {
        return Ok(());
    }
    Err(EngineError::config(
        "cpu.event_loop",
        format!(
            "event_loop models RPCs up to half a yamux stream window ({LARGEST_RPC} bytes); \
             a {largest}-byte message makes a {rpc}-byte RPC: use smaller messages, or \
             event_loop = false"
        ),
    ))
}

/// The one sender on `sendMsg` in the model: the validation workers' goroutine.
const VALIDATOR: u32 = 0;

/// A node's event loop: its `incoming` channel of (link, RPC), senders named by link,
/// and its `sendMsg` channel of validated copies (msg, link, hop).
pub struct NodeLoop {
    incoming: Chan<u32, (u32, u32)>,
    send_msg: Chan<u32, (u32, u32, u16)>,
    /// Handling an RPC or a copy (its piece of CPU work submitted and not done).
    busy: bool,
    /// The select's choice between two ready channels.
    rng: Rng,
    /// Messages a validation worker marked seen that the loop has not published yet,
    /// with the duplicates that came meanwhile: (link, arrived as a receipt), counted
    /// when the message is published.
    marked: FxHashMap<u32, SmallVec<[(u32, bool); 4]>>,
    /// The application's subscription (`subscription.rs`).
    pub app: Subscription,
}

impl NodeLoop {
    pub fn new(seed: u64, node: u32) -> Self {
        Self {
            incoming: Chan::new(INCOMING_SLOTS),
            send_msg: Chan::new(SEND_MSG_SLOTS),
            busy: false,
            rng: Rng::for_stream(seed, "event_loop", u64::from(node)),
            marked: FxHashMap::default(),
            app: Subscription::default(),
        }
    }

    /// A validation worker marked `msg` seen and the loop has not published it yet.
    pub fn marked(&self, msg: u32) -> bool {
        self.marked.contains_key(&msg)
    }

    /// Which channel the loop's `select` takes: `Some(true)` for `incoming`,
    /// `Some(false)` for `sendMsg`, `None` if both are empty.
    fn choose(&mut self) -> Option<bool> {
        match (self.incoming.is_empty(), self.send_msg.is_empty()) {
            (true, true) => None,
            (false, true) => Some(true),
            (true, false) => Some(false),
            (false, false) => Some(self.rng.below(2) == 0),
        }
    }
}

impl Simulation {
    /// `link`'s reader decoded RPC `rpc`: it sends it to its node's event loop, or parks
    /// until there is room. Reading it may first owe the sender a window update
    /// (`stream_window.rs`), which the reader puts on the connection's `sendCh`
    /// (`stream.go:Stream.Read` → `sendWindowUpdate` → `session.go:sendMsg`); on a full
    /// `sendCh` it parks there, holding the RPC.
    pub(crate) fn hand_to_loop(&mut self, link: u32, rpc: u32) {
        let node = self.links.peer[link as usize];
        let bytes = self.rpcs.get(rpc).total_bytes().max(1);
        if let Some(delta) = self.stream_window(link).read(bytes) {
            let delta = u32::try_from(delta).expect("a window update fits a yamux header");
            let update = ParkedUpdate { link, delta, rpc };
            if !self.send_window_update(node, update) {
                self.cpu.block(node, Goroutine::Reader(link));
                return;
            }
        }
        self.send_on_incoming(node, link, rpc);
    }

    /// The reader sends its RPC on `incoming`, parking if it is full.
    fn send_on_incoming(&mut self, node: u32, link: u32, rpc: u32) {
        let lp = &mut self.loops[node as usize];
        match lp.incoming.send(link, (link, rpc)) {
            Sent::Buffered if !lp.busy => self.loop_next(node),
            Sent::Buffered => {}
            Sent::Blocked => self.cpu.block(node, Goroutine::Reader(link)),
        }
    }

    /// `node` puts a window update for the stream on `update.link` on the connection's
    /// `sendCh` (`transport::SendLoop::put_update`); an idle sendLoop takes it and
    /// writes it. Returns false if the reader parked.
    fn send_window_update(&mut self, node: u32, update: ParkedUpdate) -> bool {
        let back = self.links.reverse[update.link as usize];
        let yamux = self.writer(back).yamux.get_or_insert_with(Box::default);
        match yamux.put_update(update) {
            Put::Taken => self.send_loop_write(node, back, WINDOW_UPDATE),
            Put::Queued => {}
            Put::Parked => return false,
        }
        true
    }

    /// The sendLoop let the reader of `link`, parked with its window update, in
    /// (`runtime/chan.go:recv` readies it): it sends the RPC it read on `incoming`, and
    /// stays parked, now there, if that is full.
    pub(crate) fn reader_let_in(&mut self, node: u32, link: u32, rpc: u32) {
        let lp = &mut self.loops[node as usize];
        match lp.incoming.send(link, (link, rpc)) {
            Sent::Buffered => {
                let idle = !lp.busy;
                self.cpu.unblock(node, Goroutine::Reader(link));
                if idle {
                    self.loop_next(node);
                }
            }
            Sent::Blocked => {}
        }
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

    /// `node`'s validation worker finished a copy: it marks the message seen and hands
    /// it to the loop, or parks until there is room, still holding its validation slot.
    /// A copy of a message already marked is a duplicate (`validation.go:validate`).
    pub(crate) fn hand_validated(&mut self, node: u32, msg: u32, link: u32, hop: u16) {
        if self.nodes[node as usize].seen.contains_key(&msg) {
            self.publish_validated(node, msg, link, hop, true);
            return;
        }
        let lp = &mut self.loops[node as usize];
        if let Some(dups) = lp.marked.get_mut(&msg) {
            dups.push((link, false));
            self.release_validated(node, msg, link);
            return;
        }
        lp.marked.insert(msg, SmallVec::new());
        match lp.send_msg.send(VALIDATOR, (msg, link, hop)) {
            Sent::Buffered => {
                self.nodes[node as usize].cpu_pending -= 1;
                if !self.loops[node as usize].busy {
                    self.loop_next(node);
                }
            }
            Sent::Blocked => self.cpu.block(node, Goroutine::Validator),
        }
    }

    /// A copy of `msg` reached `node`'s loop from `link` after a worker marked the
    /// message seen and before the loop published it: a duplicate, dropped before
    /// validation (`pubsub.go:shouldPush`). False if the message is not marked.
    pub(crate) fn seen_by_validator(&mut self, node: u32, msg: u32, link: u32) -> bool {
        match self
            .loops
            .get_mut(node as usize)
            .and_then(|lp| lp.marked.get_mut(&msg))
        {
            Some(dups) => {
                dups.push((link, true));
                true
            }
            None => false,
        }
    }

    /// The loop published `msg`: the duplicates that came since it was marked seen are
    /// counted now, as if they came after it.
    pub(crate) fn count_marked_duplicates(&mut self, node: u32, msg: u32) {
        let Some(dups) = self.loops[node as usize].marked.remove(&msg) else {
            return;
        };
        let now = self.now();
        for (link, receipt) in dups {
            let Some(seen) = self.seen_counting_duplicate(node, msg) else {
                return;
            };
            self.count_duplicate(msg, seen);
            if receipt {
                self.score_duplicate(link, msg, seen, now);
            }
        }
    }

    /// `node`'s event loop is free: it takes the next RPC or validated copy, if any
    /// (`NodeLoop::choose`).
    pub(crate) fn loop_next(&mut self, node: u32) {
        let lp = &mut self.loops[node as usize];
        let Some(incoming) = lp.choose() else {
            lp.busy = false;
            return;
        };
        lp.busy = true;
        if incoming {
            self.loop_take_rpc(node);
        } else {
            self.loop_take_validated(node);
        }
    }

    /// The loop takes a validated copy and lets the parked worker's copy in (which
    /// frees that worker's validation slot). Handling it ends with
    /// `Event::LoopValidated`.
    fn loop_take_validated(&mut self, node: u32) {
        let lp = &mut self.loops[node as usize];
        let ((msg, link, hop), woken) = lp.send_msg.recv().expect("chosen: not empty");
        if woken.is_some() {
            self.nodes[node as usize].cpu_pending -= 1;
            self.cpu.unblock(node, Goroutine::Validator);
        }
        let cost = self.publish_loop_cost(node, msg, link);
        let event = Event::LoopValidated {
            node,
            msg,
            link,
            hop,
        };
        self.cpu
            .submit(&mut self.queue, node, Goroutine::Loop, cost, event);
    }

    /// The loop takes an RPC and lets in the reader that was parked first. Handling it
    /// ends with `Event::Decoded`.
    fn loop_take_rpc(&mut self, node: u32) {
        let lp = &mut self.loops[node as usize];
        let ((link, rpc), woken) = lp.incoming.recv().expect("chosen: not empty");
        if let Some(reader) = woken {
            self.cpu.unblock(node, Goroutine::Reader(reader));
        }
        // Exact: the loop's costs have no spread of their own.
        let cost = self.cpu.costs.per_rpc_loop_ns
            + self.message_ids_cost(rpc)
            + self.published_unvalidated(node, link, rpc);
        let event = Event::Decoded { link, rpc };
        self.cpu
            .submit(&mut self.queue, node, Goroutine::Loop, cost, event);
    }
}

impl Simulation {
    /// What publishing the messages of `rpc` costs `node`'s loop while handling it: those
    /// it has not seen when validating them costs nothing (`pubsub.go:pushMsg` calls
    /// `publishMessage` when `validation.go:Push` has nothing to validate).
    fn published_unvalidated(&mut self, node: u32, link: u32, rpc: u32) -> Time {
        if self.validation_costs(node) {
            return 0;
        }
        let state = &self.nodes[node as usize];
        let msgs = &self.rpcs.get(rpc).msgs;
        let fresh: SmallVec<[u32; 4]> = msgs
            .iter()
            .enumerate()
            .filter(|(i, m)| {
                !state.seen.contains_key(&m.msg) && !msgs[..*i].iter().any(|o| o.msg == m.msg)
            })
            .map(|(_, m)| m.msg)
            .collect();
        fresh
            .into_iter()
            .map(|msg| self.publish_loop_cost(node, msg, link))
            .sum()
    }

    /// The loop's work to publish `msg` from `link` (`pubsub.go:publishMessage`): a part
    /// per message (deliver it, cache it) and a part per peer it is forwarded to (one
    /// `gossipsub.go:sendRPC` each: the piggybacked control, the push onto the peer's
    /// queue, the tracer), so a hub's loop pays for its larger mesh.
    fn publish_loop_cost(&mut self, node: u32, msg: u32, link: u32) -> Time {
        let costs = &self.cpu.costs;
        let (per_message, per_forward) = (costs.per_publish_loop_ns, costs.per_forward_loop_ns);
        if per_forward == 0 {
            return per_message;
        }
        let forwards = self.with_router(node, |router, cx| router.relay_count(cx, msg, link));
        per_message + per_forward * forwards
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_select_takes_the_ready_channel_and_either_of_two_half_the_time() {
        let mut lp = NodeLoop::new(7, 3);
        assert_eq!(lp.choose(), None);
        lp.send_msg.send(VALIDATOR, (1, 2, 3));
        assert_eq!(lp.choose(), Some(false), "only sendMsg is ready");
        lp.incoming.send(5, (5, 9));
        // Both ready: runtime/select.go:selectgo's random poll order, 1/2 each. 10,000
        // draws: the count of `incoming` is within 4 standard deviations (50) of 5,000.
        let incoming = (0..10_000).filter(|_| lp.choose() == Some(true)).count();
        assert!((4_800..=5_200).contains(&incoming), "{incoming}");
        lp.send_msg.recv();
        assert_eq!(lp.choose(), Some(true), "only incoming is ready");
    }
}
