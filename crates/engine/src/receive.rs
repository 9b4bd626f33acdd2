//! A node's input: RPCs arriving, copies validated by its CPU, first deliveries and
//! duplicates, its seen cache, and the workload's publications. What to relay, and to
//! whom, is its router's (`router/`).

use smallvec::SmallVec;

use crate::config::{Misbehaviour, Time, Version};
use crate::cpu::Cost;
use crate::goroutines::Goroutine;
use crate::inputs::data_size;
use crate::queue::Event;
use crate::rpc::{Kind, MsgRef};
use crate::seen::{Seen, COUNTED, NOT_CACHED, OWN, SEEN_SWEEP_INTERVAL, UNCOUNTED};
use crate::sim::Simulation;

impl Simulation {
    #[inline]
    pub(crate) fn receive(&mut self, link: u32, rpc_id: u32) {
        self.receive_at(link, rpc_id, self.now());
    }

    /// Receive an RPC whose receipt time is `at` (now, or when its reading ends for an
    /// RPC of seen copies only: see `decode`).
    #[inline]
    fn receive_at(&mut self, link: u32, rpc_id: u32, at: Time) {
        let receiver = self.links.peer[link as usize];
        let sender = self.links.owner[link as usize];
        let back = self.links.reverse[link as usize];
        if self.is_down(receiver) {
            self.rpcs.free(rpc_id);
            return;
        }
        // Copy out the small parts and take the control part, then recycle the RPC in
        // place: moving whole RPCs in and out of the slab showed up in profiles.
        let rpc = self.rpcs.get_mut(rpc_id);
        let counters = &mut self.out.traffic[receiver as usize];
        rpc.count_into(counters, false);
        self.router
            .peers
            .announced(back, &rpc.subscribe, &rpc.unsubscribe);
        let msgs = SmallVec::<[MsgRef; 2]>::from_slice(&rpc.msgs);
        let partial_bytes = rpc.bytes[Kind::Partial as usize] + rpc.bytes[Kind::PartsMeta as usize];
        let control = (!rpc.control.is_empty()).then(|| std::mem::take(&mut rpc.control));
        self.rpcs.free(rpc_id);
        // A graylisted peer's messages and control are ignored; its subscriptions count.
        if self.router.graylisted(back) {
            if !msgs.is_empty() || control.is_some() {
                self.count_drop(receiver, sender, Kind::Payload, "graylisted");
            }
            return;
        }
        // v1.3: the extensions and a partial RPC go to the extension first, as go's
        // HandleRPC runs the extensions before the router (gossipsub.go:913-917).
        let mut control = control;
        if let Some(c) = control
            .as_mut()
            .filter(|c| c.extensions || c.partial.is_some())
        {
            if std::mem::take(&mut c.extensions) {
                self.partial_advertised(back);
            }
            if let Some(partial) = c.partial.take() {
                self.partial_receive(receiver, back, partial, partial_bytes);
            }
        }
        let control = control.filter(|c| !c.is_empty());
        let mut msgs = msgs;
        if self.invalid_senders || self.subscriptions_change {
            self.set_aside_unusual(receiver, back, sender, &mut msgs);
        }
        // Before v1.2 there is nothing to tell the mesh (and 2.0 includes 1.2).
        if self.router.is_gossipsub() && self.proto.version >= Version::V1_2 && !msgs.is_empty() {
            self.with_router(receiver, |router, cx| router.preprocess(cx, back, &msgs));
        }
        for m in &msgs {
            self.receive_payload(receiver, back, sender, *m, at);
        }
        if let Some(control) = control.filter(|_| self.router.is_gossipsub()) {
            self.with_router(receiver, |router, cx| {
                router.handle_control(cx, back, &control);
            });
        }
    }

    /// Reading an RPC costs CPU: decode it on the receiver's host, then receive it.
    /// An RPC of copies the receiver has all seen, and nothing else, changes nothing but
    /// counters once read (go drops seen copies in `handleIncomingRPC`), so it is
    /// received now with the time its reading ends, without an event (on a host that
    /// is not time-sliced, where that time is known now).
    pub(crate) fn decode(&mut self, link: u32, rpc: u32) {
        let receiver = self.links.peer[link as usize];
        if self.cpu.time_sliced() {
            let bytes = self.rpcs.get(rpc).total_bytes();
            // With the event loop, yamux's recvLoop reads it first (`read_stream`).
            let (g, cost, event) = if self.loops.is_empty() {
                let cost = self.cpu.read_cost(receiver, bytes) + self.message_ids_cost(rpc);
                (Goroutine::Reader(link), cost, Event::Decoded { link, rpc })
            } else {
                let cost = self.cpu.recv_loop_cost(receiver, bytes);
                (
                    Goroutine::RecvLoop(link),
                    cost,
                    Event::Demuxed { link, rpc },
                )
            };
            self.cpu.submit(&mut self.queue, receiver, g, cost, event);
            return;
        }
        // Asked before the read, which changes neither the RPC nor the seen cache: the
        // RPC is looked up once.
        let only_seen = self.only_seen_copies(receiver, rpc);
        let cost = self
            .cpu
            .read_cost(receiver, self.rpcs.get(rpc).total_bytes())
            + self.message_ids_cost(rpc);
        let done = self.cpu.read(link, receiver, self.now(), cost);
        if only_seen {
            self.receive_at(link, rpc, done);
        } else {
            self.queue
                .push(done, receiver, Event::Decoded { link, rpc });
        }
    }

    /// With the event loop: yamux's recvLoop put RPC `rpc` in `link`'s stream buffer and
    /// readied the stream's reader if it was parked in `Stream.Read` (go-yamux
    /// `stream.go:readData` → `asyncNotify`, a send on `recvNotifyCh` → `goready`,
    /// into `runnext`: this is the recvLoop's hand-off). The reader decodes it, then
    /// hands it to the event loop (`Event::Read`, `event_loop.rs`).
    pub(crate) fn read_stream(&mut self, link: u32, rpc: u32) {
        let receiver = self.links.peer[link as usize];
        let cost = self.cpu.stream_read_cost(receiver);
        let event = Event::Read { link, rpc };
        self.cpu.submit(
            &mut self.queue,
            receiver,
            Goroutine::Reader(link),
            cost,
            event,
        );
    }

    #[inline]
    fn only_seen_copies(&self, receiver: u32, rpc: u32) -> bool {
        let r = self.rpcs.get(rpc);
        let seen = &self.nodes[receiver as usize].seen;
        // `payload_only`: measured when sent with no subscriptions and no control.
        debug_assert_eq!(
            r.payload_only,
            r.control.is_empty() && r.subscribe.is_empty() && r.unsubscribe.is_empty()
        );
        r.payload_only && !r.msgs.is_empty() && r.msgs.iter().all(|m| seen.contains_key(&m.msg))
    }

    /// Take out of `msgs` what `receiver` does not process as usual: invalid messages an
    /// adversary made up (validated, then rejected) and messages of topics it is not in
    /// (ignored, as go does). Kept out of `receive`, whose common case it would slow.
    #[cold]
    #[inline(never)]
    fn set_aside_unusual(
        &mut self,
        receiver: u32,
        back: u32,
        sender: u32,
        msgs: &mut SmallVec<[MsgRef; 2]>,
    ) {
        let known = self.messages.len() as u32;
        for m in msgs.iter().filter(|m| m.msg >= known) {
            self.receive_invalid(receiver, back, sender, m.msg);
        }
        msgs.retain(|m| m.msg < known);
        let subscribed = self.nodes[receiver as usize].subscribed;
        let messages = &self.messages;
        let before = msgs.len();
        msgs.retain(|m| subscribed & (1u64 << messages[m.msg as usize].topic) != 0);
        for _ in msgs.len()..before {
            self.count_drop(receiver, sender, Kind::Payload, "not-subscribed");
        }
    }

    fn receive_payload(&mut self, node: u32, back: u32, sender: u32, m: MsgRef, now: Time) {
        self.messages[m.msg as usize].receipts += 1;
        if self.partial.is_some() {
            self.partial_full_copy(node, m.msg);
        }
        self.sweep_seen(node);
        let seen = self.seen_counting_duplicate(node, m.msg);
        let state = &self.nodes[node as usize];
        let duplicate = seen.is_some()
            || state.validating.contains_key(&m.msg)
            || self
                .loops
                .get(node as usize)
                .is_some_and(|lp| lp.marked(m.msg));
        if let Some(r) = &mut self.out.receipts {
            r.msg.push(m.msg);
            r.node.push(node);
            r.from_node.push(sender);
            r.t_ns.push(now as i64);
            r.duplicate.push(duplicate);
        }
        let hop = m.hop.saturating_add(1);
        if let Some(seen) = seen {
            self.count_duplicate(m.msg, seen);
            self.score_duplicate(back, m.msg, seen, now);
            return;
        }
        // With the event loop, a validation worker may have marked it seen already.
        if !self.loops.is_empty() && self.seen_by_validator(node, m.msg, back) {
            return;
        }
        if !self.queue_for_validation(node, back, sender, m.msg, hop) {
            self.accept(node, back, m.msg, hop);
        }
    }

    /// Validation takes CPU time: put the copy of `msg` from `back` in `node`'s queue,
    /// which its CPU works through in order; go drops a message outright when the queue
    /// is full. Returns false when validating costs no time: the copy is validated now.
    #[inline]
    fn queue_for_validation(
        &mut self,
        node: u32,
        back: u32,
        sender: u32,
        msg: u32,
        hop: u16,
    ) -> bool {
        if !self.validation_costs(node) {
            return false;
        }
        let cpu = self.validation_mean(node, msg);
        let state = &mut self.nodes[node as usize];
        // go starts runtime.NumCPU() validation workers (validation.go:newValidation),
        // which take copies straight from the channel; `validate_queue` more may wait.
        if state.cpu_pending >= self.proto.validate_queue + self.cpu.validate_workers() {
            self.count_drop(node, sender, Kind::Payload, "validation-queue-full");
            return true;
        }
        state.cpu_pending += 1;
        state.validating.entry(msg).or_default().push(back);
        // validation.go:validateWorker: the check runs on the host's cores, behind the
        // work already queued there.
        let cost = self.cpu.draw(node, cpu, Cost::Copy);
        let event = Event::Validated {
            node,
            msg,
            link: back,
            hop,
        };
        self.cpu
            .submit(&mut self.queue, node, Goroutine::Validator, cost, event);
        true
    }

    /// Whether validating a copy takes `node` CPU time.
    pub(crate) fn validation_costs(&self, node: u32) -> bool {
        self.cpu_per_message[node as usize] > 0 || self.cpu.costs.per_kb_copy_ns > 0
    }

    /// The mean CPU time of validating a copy of `msg` on `node`: its cost per copy and,
    /// per 1000 bytes of the message, the signature's hash over all of it.
    fn validation_mean(&self, node: u32, msg: u32) -> Time {
        let per_kb = self.cpu.costs.per_kb_copy_ns;
        self.cpu_per_message[node as usize] + per_kb * self.message_size(msg) / 1000
    }

    /// CPU time computing the ids of `rpc`'s messages. go computes a copy's id when its
    /// event loop first looks at it (`pubsub.go:handleIncomingRPC` → `shouldPush` →
    /// `msgIDGenerator.ID`), duplicates included; a content-addressed id hashes the
    /// data. Without the event loop modelled, the reader pays it with the read.
    pub(crate) fn message_ids_cost(&self, rpc: u32) -> Time {
        let per_kb = self.cpu.costs.per_kb_message_id_ns;
        if per_kb == 0 {
            return 0;
        }
        let msgs = &self.rpcs.get(rpc).msgs;
        let bytes: u64 = msgs.iter().map(|m| self.message_size(m.msg)).sum();
        per_kb * bytes / 1000
    }

    fn message_size(&self, msg: u32) -> u64 {
        data_size(&self.messages, self.invalid_size, msg)
    }

    /// A message an adversary made up: validated like any other (its CPU cost and place
    /// in the validation queue are the attack), then rejected.
    fn receive_invalid(&mut self, node: u32, back: u32, sender: u32, msg: u32) {
        if !self.queue_for_validation(node, back, sender, msg, 0) {
            self.reject(node, back, msg);
        }
    }

    /// An invalid message failed validation: the peer that sent it pays (P4, go's
    /// `RejectMessage`), and it goes no further.
    fn reject(&mut self, node: u32, back: u32, msg: u32) {
        let topic = self.invalid_topic(msg);
        if let Some(scores) = &mut self.router.scores {
            scores.invalid_delivery(back, topic);
        }
        let sender = self.links.peer[back as usize];
        self.count_drop(node, sender, Kind::Payload, "rejected-invalid");
    }

    /// A copy finished validation: the first one is delivered, later ones are duplicates.
    /// With the event loop, the validation worker hands it to the loop first
    /// (`event_loop.rs`).
    pub(crate) fn validated(&mut self, node: u32, msg: u32, back: u32, hop: u16) {
        if !self.loops.is_empty() {
            self.hand_validated(node, msg, back, hop);
            return;
        }
        self.publish_validated(node, msg, back, hop, true);
    }

    /// A validated copy reaches the router (go's `publishMessage`): the first one is
    /// delivered, later ones are duplicates. `release`: it also frees its validation
    /// slot (`cpu_pending`); the event loop's worker freed it when handing it over.
    pub(crate) fn publish_validated(
        &mut self,
        node: u32,
        msg: u32,
        back: u32,
        hop: u16,
        release: bool,
    ) {
        // A node that went down (and maybe restarted) meanwhile lost this work.
        if !self.leave_validation(node, msg, back, release) {
            return;
        }
        if self.nodes[node as usize].down {
            return; // validated by a node that is down: nobody will ever see it
        }
        if msg >= self.messages.len() as u32 {
            self.reject(node, back, msg);
            return;
        }
        match self.seen_counting_duplicate(node, msg) {
            Some(seen) => self.count_duplicate(msg, seen),
            None => self.accept(node, back, msg, hop),
        }
    }

    /// The copy of `msg` from `back` leaves `node`'s validation as a duplicate the
    /// worker found marked seen (`event_loop.rs`): its slot is free.
    pub(crate) fn release_validated(&mut self, node: u32, msg: u32, back: u32) {
        self.leave_validation(node, msg, back, true);
    }

    /// Take the copy of `msg` from `back` out of `node`'s validation, freeing its slot
    /// (`cpu_pending`) if `release`. False if it is not there (the node went down).
    fn leave_validation(&mut self, node: u32, msg: u32, back: u32, release: bool) -> bool {
        let state = &mut self.nodes[node as usize];
        let Some(copies) = state.validating.get_mut(&msg) else {
            return false;
        };
        let Some(i) = copies.iter().position(|&l| l == back) else {
            return false;
        };
        if release {
            state.cpu_pending -= 1;
        }
        copies.remove(i);
        if copies.is_empty() {
            state.validating.remove(&msg);
        }
        true
    }

    /// A copy after the first counts for the sender's mesh deliveries (P3) if it came
    /// within the delivery window of the first's validation.
    pub(crate) fn score_duplicate(&mut self, back: u32, msg: u32, seen: Seen, now: Time) {
        let topic = self.messages[msg as usize].topic;
        let validated = seen.expire - self.proto.seen_ttl_ns;
        if let Some(scores) = &mut self.router.scores {
            if seen.row != OWN && now <= validated + scores.window() {
                scores.near_first_delivery(back, topic);
            }
        }
    }

    /// `node`'s seen entry for `msg`, if it has one; a copy arriving now is then a
    /// duplicate, which aggregate mode counts in the entry (one lookup for both).
    #[inline]
    pub(crate) fn seen_counting_duplicate(&mut self, node: u32, msg: u32) -> Option<Seen> {
        let aggregate = self.out.aggregates.is_some();
        let seen = self.nodes[node as usize].seen.get_mut(&msg)?;
        if aggregate && seen.row != OWN {
            seen.dups += 1;
        }
        Some(*seen)
    }

    /// Full mode: count a duplicate in the first receipt's row; either mode: a copy of
    /// the node's own message (go traces it DUPLICATE_MESSAGE, `pubsub.go:shouldPush`).
    pub(crate) fn count_duplicate(&mut self, msg: u32, seen: Seen) {
        if seen.row == OWN {
            self.out.count_own_copy(msg);
        } else if self.out.aggregates.is_none() {
            self.out.deliveries.duplicates[seen.row as usize] += 1;
        }
    }

    /// First valid copy of `msg` at `node`, received on its link `back`: deliver, mark
    /// seen, relay.
    fn accept(&mut self, node: u32, back: u32, msg: u32, hop: u16) {
        let now = self.now();
        let sender = self.links.peer[back as usize];
        let row = match &mut self.out.aggregates {
            None => self.out.deliveries.push(msg, node, now, sender, hop),
            Some(aggregates) => {
                if aggregates.first_receipt(msg, &self.messages[msg as usize], node, now, hop) {
                    COUNTED
                } else {
                    UNCOUNTED
                }
            }
        };
        let expire = now + self.proto.seen_ttl_ns;
        let seen = Seen {
            expire,
            row,
            hop,
            cached_at: NOT_CACHED,
            dups: 0,
        };
        self.nodes[node as usize].seen.insert(msg, seen);
        let topic = self.messages[msg as usize].topic;
        let validating = self.nodes[node as usize].validating.get(&msg);
        self.router.delivered(node, back, msg, topic, validating);
        if self.partial.is_some() {
            self.partial_full_delivered(node, msg, hop);
        }
        // pubsub.go:publishMessage: the subscriptions get it before the router forwards.
        self.notify_app(node, sender);
        let delay = self.nodes[node as usize]
            .misbehaviour
            .as_ref()
            .filter(|a| a.behaviour == Misbehaviour::DelayForwards)
            .map(|a| a.delay_ns);
        if let Some(delay) = delay {
            self.queue.push(
                now + delay,
                node,
                Event::DelayedForward {
                    node,
                    msg,
                    link: back,
                },
            );
            return;
        }
        self.forward(node, msg, back);
    }

    /// Drop expired seen entries, at most once a minute, as go's timecache does (so
    /// the effective TTL is between seen_ttl and seen_ttl + 1 min).
    fn sweep_seen(&mut self, node: u32) {
        let now = self.now();
        let state = &mut self.nodes[node as usize];
        if now >= state.next_seen_sweep {
            match &mut self.out.aggregates {
                None => state.seen.retain(|_, s| s.expire > now),
                // A forgotten message's duplicate count at this node is final.
                Some(aggregates) => state.seen.retain(|_, s| {
                    let keep = s.expire > now;
                    if !keep && s.row == COUNTED {
                        aggregates.duplicates_final(node, s.dups);
                    }
                    keep
                }),
            }
            state.next_seen_sweep = now + SEEN_SWEEP_INTERVAL;
        }
    }

    /// Aggregate mode: `node` forgets every message (a restart); their duplicate counts
    /// are final.
    pub(crate) fn forget_seen(&mut self, node: u32) {
        let state = &mut self.nodes[node as usize];
        if let Some(aggregates) = &mut self.out.aggregates {
            for s in state.seen.values().filter(|s| s.row == COUNTED) {
                aggregates.duplicates_final(node, s.dups);
            }
        }
        state.seen.clear();
    }

    /// The workload's time for `msg` comes at its publisher. With a publishing cost the
    /// application's goroutine, readied by its timer, first waits for the publisher's
    /// host: the publication's time is when it runs and calls `Publish` (our Go node
    /// reads the clock just before `topic.Publish`: `gossipnode/node.go:PublishOne`),
    /// and the message leaves once the host has signed it (`topic.go:Publish` signs,
    /// `sign.go:signMessage`, before `validation.go:PushLocal` hands it to the router):
    /// two pieces of the goroutine's one turn, the call costing nothing.
    pub(crate) fn publish(&mut self, msg: u32) {
        let publisher = self.messages[msg as usize].publisher;
        if self.is_down(publisher) {
            return; // a node that is down publishes nothing: t_publish stays unset
        }
        // validation.go:validate computes the publication's id in the publisher's call.
        let costs = &self.cpu.costs;
        let per_kb = costs.per_kb_publish_ns + costs.per_kb_message_id_ns;
        let mean = costs.per_publish_ns + per_kb * self.message_size(msg) / 1000;
        if mean == 0 {
            self.published(msg, publisher);
            self.signed(msg);
            return;
        }
        let cost = self.cpu.draw(publisher, mean, Cost::Publish);
        let called = Event::PublishCalled { msg };
        let g = Goroutine::Publisher;
        self.cpu.submit(&mut self.queue, publisher, g, 0, called);
        self.cpu
            .submit(&mut self.queue, publisher, g, cost, Event::Signed { msg });
    }

    /// The application on `msg`'s publisher calls `Publish` now, unless its node went
    /// down while it waited for its host.
    pub(crate) fn publish_called(&mut self, msg: u32) {
        let publisher = self.messages[msg as usize].publisher;
        if !self.is_down(publisher) {
            self.published(msg, publisher);
        }
    }

    /// `msg` is published now: its publication's time.
    fn published(&mut self, msg: u32, publisher: u32) {
        let now = self.now();
        self.messages[msg as usize].t_publish = Some(now);
        if let Some(aggregates) = &mut self.out.aggregates {
            let topic = self.messages[msg as usize].topic;
            aggregates.published(msg, publisher, now, topic);
        }
    }

    /// `msg` is ready to leave its publisher: mark it seen and send it.
    pub(crate) fn signed(&mut self, msg: u32) {
        let now = self.now();
        let publisher = self.messages[msg as usize].publisher;
        if self.is_down(publisher) || self.messages[msg as usize].t_publish.is_none() {
            return; // down now, or when its application was to call `Publish`
        }
        self.sweep_seen(publisher);
        let expire = now + self.proto.seen_ttl_ns;
        let seen = Seen {
            expire,
            row: OWN,
            hop: 0,
            cached_at: NOT_CACHED,
            dups: 0,
        };
        self.nodes[publisher as usize].seen.insert(msg, seen);
        if self.partial.is_some() && !self.partial_publish(publisher, msg) {
            return; // partial messages only: no full message without full_fallback
        }
        // A publisher that subscribed gets its own message too (`publishMessage`).
        let topic = self.messages[msg as usize].topic;
        if self.nodes[publisher as usize].is_subscribed(topic) {
            self.notify_app(publisher, publisher);
        }
        self.with_router(publisher, |router, cx| {
            // go (since v0.14.0, `topic.go:validate`) sends IDONTWANT for its own large
            // messages too; the v2.0 fork does not.
            if cx.proto.idontwant_on_publish() {
                router.send_idontwant(cx, None, &[msg]);
            }
            router.forward(cx, msg, None);
        });
    }

    /// Relay a validated message received on `from` (unless an adversary drops it).
    pub(crate) fn forward(&mut self, node: u32, msg: u32, from: u32) {
        if self.nodes[node as usize].misbehaves(Misbehaviour::DropForwards) {
            return;
        }
        self.with_router(node, |router, cx| router.forward(cx, msg, Some(from)));
    }
}
