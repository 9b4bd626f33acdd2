//! A node's output: RPCs into its outbound queues (or dropped when a queue is full),
//! the uplink serving the queues in turn, departures onto the links, and GRAFT/PRUNE
//! kept from dropped RPCs. The queues, the writer, yamux's send side and the uplink are
//! described in `transport.rs`.

use crate::config::{Time, UplinkSharing};
use crate::goroutines::Goroutine;
use crate::inputs::data_size;
use crate::network::serialization_ns;
use crate::output::DropKey;
use crate::queue::Event;
use crate::rpc::{Control, Kind, KIND_COUNT};
use crate::sim::Simulation;
use crate::split::MAX_RPC_BYTES;
use crate::transport::{frames, Put, SendLoop, Writer, HEADER_BYTES, WINDOW_UPDATE};

impl Simulation {
    /// Hand RPC `rpc` to `sender`'s outbound queue for `link`: it is sized, counted and
    /// sent when the uplink gets to it, or dropped if the queue is full.
    pub(crate) fn send(&mut self, sender: u32, link: u32, rpc: u32) {
        self.enqueue(sender, link, rpc, false);
    }

    /// Whether RPC `rpc` could be over go's size limit and in more than one piece (a
    /// single message is never split): cheap tests first, since nearly every RPC is a
    /// forward of one message.
    #[inline]
    fn may_need_split(&self, rpc: u32) -> bool {
        let r = self.rpcs.get(rpc);
        (r.msgs.len() > 1 || !r.payload_only) && r.total_bytes() > MAX_RPC_BYTES
    }

    /// An RPC above go's size limit goes out in parts (`split.rs`), each enqueued on
    /// its own; false if it cannot be split. Rare, so kept out of `enqueue`'s body.
    #[cold]
    #[inline(never)]
    fn enqueue_split(&mut self, sender: u32, link: u32, rpc: u32, urgent: bool) -> bool {
        let Some(parts) = self.split_oversized(rpc) else {
            return false;
        };
        for part in parts {
            self.enqueue(sender, link, part, urgent);
        }
        true
    }

    /// Like `send`; `urgent` takes go's urgent lane, ahead of every waiting RPC
    /// (IDONTWANT).
    pub(crate) fn enqueue(&mut self, sender: u32, link: u32, rpc: u32, urgent: bool) {
        if self.is_down(sender) {
            let spare = self.rpcs.take(rpc);
            self.rpcs.release(rpc, spare);
            return;
        }
        self.release_stashed_control(sender, link, rpc, urgent);
        let messages = &self.messages;
        let r = self.rpcs.get_mut(rpc);
        let invalid_size = self.invalid_size;
        r.measure(&self.wire, |m| data_size(messages, invalid_size, m));
        if self.may_need_split(rpc) && self.enqueue_split(sender, link, rpc, urgent) {
            return;
        }
        if self.transport.waiting(link) >= self.proto.peer_outbound_queue {
            self.drop_rpc(sender, link, rpc);
            return;
        }
        let r = self.rpcs.get(rpc);
        let counters = &mut self.out.traffic[sender as usize];
        r.count_into(counters, true);
        if let Some(per_message) = &mut self.out.message_traffic {
            per_message.count(r, &self.wire, &self.messages);
        }
        // With the event loop the stream windows hold the writer (`event_loop.rs`).
        if self.cpu.charges_sending() || !self.loops.is_empty() {
            self.queue_for_writer(sender, link, rpc, urgent);
            return;
        }
        self.hand_to_transport(sender, link, rpc, urgent);
    }

    /// Writing costs CPU: the RPC waits for `link`'s writer, which encodes one RPC at a
    /// time on the sender's host (`comm.go:handleSendingMessages` pops the next RPC only
    /// when `writeRPC` returned), so a busy host's writers fall behind and the queues
    /// behind them fill up and overflow.
    fn queue_for_writer(&mut self, sender: u32, link: u32, rpc: u32, urgent: bool) {
        let now = self.now();
        let writer = self.transport.links[link as usize]
            .writer
            .get_or_insert_with(Box::default);
        if writer.encoding.is_empty()
            && !writer.wake
            && writer.writing.is_none()
            && writer.blocked.is_none()
            && !writer.parked()
            && writer.writer_free <= now
        {
            self.write_now(sender, link, rpc, urgent); // an idle writer takes it at once
            return;
        }
        writer.push_for_writer(rpc, urgent);
        self.run_writer(sender, link);
    }

    /// Let `link`'s writer take what it can now. With an unlimited uplink an encoded RPC
    /// leaves when its encoding ends, computed now (no event); else an `Encoded` event
    /// hands it to the transport then. A writer still busy wakes up when it is free.
    fn run_writer(&mut self, sender: u32, link: u32) {
        let now = self.now();
        loop {
            let queue = self.writer(link);
            if queue.wake
                || queue.writing.is_some()
                || queue.blocked.is_some()
                || queue.parked()
                || queue.encoding.is_empty()
            {
                return; // an event will come, or nothing to do
            }
            if queue.writer_free > now {
                queue.wake = true;
                let at = queue.writer_free;
                self.queue.push(at, sender, Event::Encoded { link });
                return;
            }
            let (rpc, urgent) = queue.pop_for_writer().expect("checked non-empty");
            if !self.write_now(sender, link, rpc, urgent) {
                return;
            }
        }
    }

    /// The writer encodes `rpc` from now. Returns true if the RPC has left (unlimited
    /// uplink) and the writer may take the next one. With the event loop the writer's
    /// piece costs nothing: the write costs are the connection's sendLoop's
    /// (`send_loop_write`); the writer still takes its turn among the node's goroutines,
    /// since its `Write` is what readies the sendLoop.
    #[inline(always)]
    fn write_now(&mut self, sender: u32, link: u32, rpc: u32, urgent: bool) -> bool {
        let now = self.now();
        let cost = if self.loops.is_empty() {
            self.cpu
                .write_cost(sender, self.rpcs.get(rpc).total_bytes())
        } else {
            0
        };
        if self.cpu.time_sliced() {
            // Done when the host's scheduler has run it: the writer is busy until then.
            self.writer(link).writer_free = now;
            self.writer(link).writing = Some((rpc, urgent));
            let event = Event::Encoded { link };
            self.cpu.submit(
                &mut self.queue,
                sender,
                Goroutine::Writer(link),
                cost,
                event,
            );
            return false;
        }
        let done = self.cpu.run(sender, now, cost);
        self.writer(link).writer_free = done;
        if self.skips_transport(sender) {
            self.depart_at(sender, link, rpc, now, done);
            return true;
        }
        self.writer(link).writing = Some((rpc, urgent));
        self.queue.push(done, sender, Event::Encoded { link });
        false
    }

    /// Inlined: called for every RPC written, and as a call it cost more than its
    /// lookup.
    #[inline(always)]
    pub(crate) fn writer(&mut self, link: u32) -> &mut Writer {
        self.transport.links[link as usize]
            .writer
            .as_mut()
            .expect("a link with CPU work has a writer")
    }

    /// `link`'s writer finished encoding an RPC (on to the transport) or is free again.
    pub(crate) fn encoded(&mut self, link: u32) {
        let sender = self.links.owner[link as usize];
        let queue = self.writer(link);
        queue.wake = false;
        if let Some((rpc, urgent)) = queue.writing.take() {
            if !self.loops.is_empty() {
                let bytes = self.rpcs.get(rpc).total_bytes().max(1);
                if !self.write_stream(sender, link, rpc, urgent, bytes) {
                    return; // blocked until a window update or a free `sendCh` slot
                }
            } else {
                self.hand_to_transport(sender, link, rpc, urgent);
            }
        }
        self.run_writer(sender, link);
    }

    /// `link`'s writer writes the `left` bytes still to write of `rpc` into its yamux
    /// stream (`stream_window.rs`): the RPC goes on to the connection's `sendCh` once
    /// all are written; else the writer blocks with the rest. Returns true if the RPC
    /// went on and the writer may take the next one.
    pub(crate) fn write_stream(
        &mut self,
        sender: u32,
        link: u32,
        rpc: u32,
        urgent: bool,
        left: u64,
    ) -> bool {
        let left = left - self.stream_window(link).write(left);
        if left > 0 {
            self.writer(link).blocked = Some((rpc, urgent, left));
            return false;
        }
        self.put_on_send_ch(sender, link, rpc, urgent)
    }

    /// The writer's `Stream.Write` puts `rpc`'s frames on the connection's `sendCh`
    /// (`transport::SendLoop::put`). An idle sendLoop takes it and becomes runnable
    /// (the writer's hand-off: `runnext`); with the channel full the writer parks,
    /// holding it. Returns false if the writer parked.
    fn put_on_send_ch(&mut self, sender: u32, link: u32, rpc: u32, urgent: bool) -> bool {
        let frames = frames(self.rpcs.get(rpc).total_bytes().max(1));
        let yamux = self.writer(link).yamux.get_or_insert_with(Box::default);
        match yamux.put(rpc, urgent, frames) {
            Put::Taken => self.send_loop_write(sender, link, rpc),
            Put::Queued => {}
            Put::Parked => return false,
        }
        true
    }

    /// `link`'s sendLoop writes `rpc` to the secure conn: Noise encryption and the write
    /// syscall, the calibrated write costs (`Cpu::write_cost`, all frames of the RPC in
    /// one piece). `Event::SendLoopDone` when done.
    pub(crate) fn send_loop_write(&mut self, sender: u32, link: u32, rpc: u32) {
        let bytes = if rpc == WINDOW_UPDATE {
            HEADER_BYTES
        } else {
            self.rpcs.get(rpc).total_bytes()
        };
        let cost = self.cpu.write_cost(sender, bytes);
        self.cpu.submit(
            &mut self.queue,
            sender,
            Goroutine::SendLoop(link),
            cost,
            Event::SendLoopDone { link },
        );
    }

    /// `link`'s sendLoop wrote its RPC: on to the transport (a window update frame: to
    /// the peer, one link latency later). It takes the next entry in `sendCh`, if any,
    /// which may let the parked writer or reader in: readied by this receive
    /// (`runnext`), the writer goes on with its queue, the reader hands the RPC it read
    /// to the event loop.
    pub(crate) fn send_loop_done(&mut self, link: u32) {
        let sender = self.links.owner[link as usize];
        let yamux: &mut SendLoop = self
            .writer(link)
            .yamux
            .as_mut()
            .expect("a sendLoop that wrote");
        let ((rpc, urgent), let_in, update_in) = yamux.wrote();
        let next = yamux.writing;
        if rpc == WINDOW_UPDATE {
            let (stream, delta) = yamux.updates.pop_front().expect("the update written");
            let at = self.now() + self.links.latency[link as usize];
            // Through a packet downlink it waits behind what is queued there.
            let event = if self.net.reads_pieces() {
                Event::UpdateArrive {
                    link: stream,
                    delta,
                }
            } else {
                Event::WindowUpdate {
                    link: stream,
                    delta,
                }
            };
            self.queue.push(at, sender, event);
        } else {
            self.hand_to_transport(sender, link, rpc, urgent);
        }
        if let Some((next, _)) = next {
            self.send_loop_write(sender, link, next);
        }
        if let_in {
            self.run_writer(sender, link);
        }
        if let Some(update) = update_in {
            self.reader_let_in(sender, update.link, update.rpc);
        }
    }

    /// A window update of `delta` bytes reached `link`'s sender: a writer blocked in
    /// `Stream.Write` writes on (`stream.go:Stream.Write` wakes on `sendNotifyCh`),
    /// here without a turn of its own.
    pub(crate) fn window_update(&mut self, link: u32, delta: u64) {
        self.stream_window(link).update(delta);
        let sender = self.links.owner[link as usize];
        let Some((rpc, urgent, left)) = self.writer(link).blocked.take() else {
            return;
        };
        if self.write_stream(sender, link, rpc, urgent, left) {
            self.run_writer(sender, link);
        }
    }

    /// Hand an RPC ready to go to `link`'s transport (or straight onto the link when the
    /// uplink is unlimited and no packet downlink needs its windows).
    fn hand_to_transport(&mut self, sender: u32, link: u32, rpc: u32, urgent: bool) {
        if self.skips_transport(sender) {
            self.depart(sender, link, rpc, self.now());
            return;
        }
        let queue = &mut self.transport.links[link as usize];
        let was_idle = queue.rpcs.is_empty();
        queue.push(rpc, urgent);
        self.hand_over(link);
        if self.transport.windows {
            self.release(sender, link);
            return;
        }
        // Fair: the ring lists connections with data; FIFO: one entry per RPC queued.
        if was_idle || self.transport.sharing == UplinkSharing::Fifo {
            self.transport.uplinks[sender as usize].ring.push_back(link);
        }
        if self.transport.uplinks[sender as usize].current.is_none() {
            self.serve_uplink(sender);
        }
    }

    /// True if `sender`'s RPCs go straight onto their links: its uplink is unlimited,
    /// and no packet downlink needs their windows' pieces (`downlink_packets.rs`).
    fn skips_transport(&self, sender: u32) -> bool {
        self.net.upload_bps(sender) == 0 && !self.net.reads_pieces()
    }

    /// Let `link`'s transport take what its buffer allows from the outbound queue.
    pub(crate) fn hand_over(&mut self, link: u32) {
        let rpcs = &self.rpcs;
        let queue = &mut self.transport.links[link as usize];
        let before = queue.handed;
        queue.hand_over(self.transport.buffer, |r| rpcs.get(r).total_bytes().max(1));
        let taken = queue.handed - before;
        if self.transport.sharing == UplinkSharing::Shadow {
            self.transport.note_written(link, taken);
        }
    }

    /// Start writing the next chunk, if any connection has data.
    fn serve_uplink(&mut self, node: u32) {
        let Some(&link) = self.transport.uplinks[node as usize].ring.front() else {
            return;
        };
        let now = self.now();
        let queue = &mut self.transport.links[link as usize];
        let head = *queue.rpcs.front().expect("a link in the ring has RPCs");
        if queue.head_left == 0 {
            queue.head_left = self.rpcs.get(head).total_bytes().max(1);
            queue.head_started = now;
        }
        let chunk = self.transport.chunk(link);
        if self.reads_packets(link) {
            self.send_packets(node, link, head, chunk);
        }
        let done = now + serialization_ns(chunk, self.net.upload_bps(node));
        self.transport.uplinks[node as usize].current = Some((link, chunk));
        self.queue.push(done, node, Event::UplinkDone { node });
    }

    /// The uplink finished a chunk: maybe an RPC leaves, then the next connection's turn.
    pub(crate) fn uplink_done(&mut self, node: u32) {
        if self.transport.windows {
            self.piece_done(node);
            return;
        }
        let uplink = &mut self.transport.uplinks[node as usize];
        let (link, chunk) = uplink.current.take().expect("a chunk was being written");
        let ring_head = uplink.ring.pop_front();
        debug_assert_eq!(ring_head, Some(link));
        let queue = &mut self.transport.links[link as usize];
        let started = queue.head_started;
        if let Some(rpc) = queue.written(chunk) {
            self.depart(node, link, rpc, started);
        }
        self.hand_over(link);
        let fair = self.transport.sharing == UplinkSharing::Fair;
        if fair && !self.transport.links[link as usize].rpcs.is_empty() {
            self.transport.uplinks[node as usize].ring.push_back(link);
        }
        self.serve_uplink(node);
    }

    /// The RPC's last byte left the sender now (its first at `started`): schedule its
    /// arrival (unless a fault loses it).
    pub(crate) fn depart(&mut self, sender: u32, link: u32, rpc: u32, started: Time) {
        self.depart_at(sender, link, rpc, started, self.now());
    }

    /// Like `depart`, for an RPC whose last byte leaves at `sent` (now or later).
    fn depart_at(&mut self, sender: u32, link: u32, rpc: u32, started: Time, sent: Time) {
        if self.lost_to_fault(sender, link, rpc) {
            return;
        }
        let latency = self.links.latency[link as usize];
        let windowed = self.transport.windows && self.net.upload_bps(sender) > 0;
        let r = self.rpcs.get_mut(rpc);
        // Served in turn with the other connections, its bytes left over the whole of
        // its writing; released by windows, a window's pieces may leave back to back.
        r.written_over = if windowed { 0 } else { sent - started };
        let bytes = r.total_bytes();
        let arrival = if windowed {
            self.net.propagate_windowed(sent, link, latency, bytes)
        } else {
            self.net.propagate(started, sent, link, latency, bytes)
        };
        let receiver = self.links.peer[link as usize];
        let event = if self.net.has_downlink_limit(receiver) {
            Event::Arrive { link, rpc }
        } else {
            Event::Receive { link, rpc }
        };
        self.queue.push(arrival, sender, event);
    }

    /// True if the RPC leaving `sender` on `link` is lost to a fault (its sender down,
    /// the link partitioned); it is counted and freed.
    pub(crate) fn lost_to_fault(&mut self, sender: u32, link: u32, rpc: u32) -> bool {
        if !self.is_down(sender) && !self.partitioned(link) {
            return false;
        }
        let peer = self.links.peer[link as usize];
        let reason = if self.is_down(sender) {
            "sender-down"
        } else {
            "partition"
        };
        self.count_fault_drop(sender, peer, reason);
        let spare = self.rpcs.take(rpc);
        self.rpcs.release(rpc, spare);
        true
    }

    /// The queue is full: lose the RPC, keep its GRAFTs and PRUNEs for later.
    fn drop_rpc(&mut self, sender: u32, link: u32, rpc_id: u32) {
        let rpc = self.rpcs.take(rpc_id);
        let peer = self.links.peer[link as usize];
        for kind in 0..KIND_COUNT {
            if rpc.items[kind] > 0 {
                let key = DropKey {
                    node: sender,
                    peer,
                    kind: kind as u8,
                    reason: "outbound-queue-full",
                };
                *self.out.drops.entry(key).or_insert(0) += rpc.items[kind];
            }
        }
        if !rpc.control.graft.is_empty() || !rpc.control.prune.is_empty() {
            let stash = self.transport.links[link as usize]
                .stash
                .get_or_insert_with(Box::default);
            stash.graft.extend_from_slice(&rpc.control.graft);
            stash.prune.extend_from_slice(&rpc.control.prune);
        }
        self.rpcs.release(rpc_id, rpc);
    }

    /// GRAFT/PRUNE kept from dropped RPCs on `link` that still hold (go's
    /// `piggybackControl`: a GRAFT only if the peer is still in our mesh, a PRUNE only if
    /// it is not), taken out of the stash.
    fn take_stash(&mut self, link: u32) -> Option<Control> {
        let stash = self.transport.links[link as usize].stash.take()?;
        let owner = self.links.owner[link as usize];
        let mesh = &self.router.nodes[owner as usize].mesh;
        let mut valid = Control {
            graft: stash
                .graft
                .into_iter()
                .filter(|&t| mesh[t as usize].contains(&link))
                .collect(),
            prune: stash
                .prune
                .into_iter()
                .filter(|p| !mesh[p.topic as usize].contains(&link))
                .collect(),
            ..Control::default()
        };
        valid.graft.dedup();
        valid.prune.dedup();
        (!valid.is_empty()).then_some(valid)
    }

    /// Still-valid stashed GRAFT/PRUNE go out with RPC `rpc` about to go on `link`: in an
    /// RPC of their own just before it, with its urgency, or piggybacked on it
    /// (`ProtocolConfig::separates_pending_control`).
    #[inline]
    fn release_stashed_control(&mut self, sender: u32, link: u32, rpc: u32, urgent: bool) {
        // Nearly every link has nothing stashed: one test on the common path.
        if self.transport.links[link as usize].stash.is_some() {
            if self.proto.separates_pending_control() {
                self.send_stash_ahead(sender, link, urgent);
            } else {
                self.attach_stash(link, rpc);
            }
        }
    }

    /// go v0.17.0: the pending control first, as an RPC of its own; if the queue drops it,
    /// it is stashed again (`doDropRPC` → `pushControl`) for the next RPC.
    #[cold]
    #[inline(never)]
    fn send_stash_ahead(&mut self, sender: u32, link: u32, urgent: bool) {
        if let Some(control) = self.take_stash(link) {
            self.enqueue_control(sender, link, control, urgent);
        }
    }

    #[cold]
    #[inline(never)]
    fn attach_stash(&mut self, link: u32, rpc: u32) {
        if let Some(stash) = self.take_stash(link) {
            let control = &mut self.rpcs.get_mut(rpc).control;
            for topic in stash.graft {
                if !control.graft.contains(&topic) {
                    control.graft.push(topic);
                }
            }
            for prune in stash.prune {
                if !control.prune.iter().any(|p| p.topic == prune.topic) {
                    control.prune.push(prune);
                }
            }
        }
    }

    /// Heartbeat step 10: retry stashed GRAFT/PRUNE in RPCs of their own.
    pub(crate) fn flush_stashed_control(&mut self, node: u32) {
        for link in self.links.of(node) {
            if let Some(stash) = self.take_stash(link) {
                self.send_control(node, link, stash);
            }
        }
    }

    /// Payload items of kind `kind` to account as dropped somewhere else (validation).
    pub(crate) fn count_drop(&mut self, node: u32, peer: u32, kind: Kind, reason: &'static str) {
        let key = DropKey {
            node,
            peer,
            kind: kind as u8,
            reason,
        };
        *self.out.drops.entry(key).or_insert(0) += 1;
    }
}
