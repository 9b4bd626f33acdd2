//! The sending side of a node: per-peer outbound queues and the shared uplink (the
//! state here; what a node does with it is `send.rs`).
//!
//! As in go-libp2p-pubsub, each peer has an outbound queue counted in RPCs
//! (`peer_outbound_queue`, 32 by default) that never blocks: when it is full the RPC is
//! dropped (DROP_RPC), its messages and gossip are lost, and its GRAFTs and PRUNEs are
//! kept to ride on the next RPC to that peer or the next heartbeat (go's
//! `doDropRPC` / `pushControl`).
//!
//! An RPC leaves the queue when it is handed to the transport. go's writer goroutine per
//! peer (`comm.go:handleSendingMessages`) pops the next RPC as soon as the previous
//! `Write` returns, and a yamux stream's `Write` returns once its bytes fit in the
//! stream's send window (go-yamux `stream.go:Write`; 256 KiB initially, `const.go`).
//! So a connection takes RPCs from the queue while the bytes it holds unsent are below
//! `send_buffer_bytes`, and always the one at the head. What the transport took is
//! written in order and can no longer be overtaken or dropped; it no longer counts
//! against the 32. An urgent RPC (IDONTWANT) overtakes only what is still queued, and
//! urgent RPCs keep their order among themselves (go's `rpcQueue`: `PriorityPush`
//! appends to the priority lane, `Pop` takes its first).
//!
//! When writing costs CPU the writer (`Writer`) stands between the queue and the
//! transport. With the event loop it pays nothing and yamux's send side (`SendLoop`)
//! stands after it: the writer moves RPCs from the queue onto the connection's 64-frame
//! `sendCh` at once, and the connection's sendLoop pays the write, one RPC at a time,
//! before the transport takes it. The queue then fills only once `sendCh` is full and
//! the writer parks on it holding one RPC: 32 + 1 + 64 RPCs of one frame wait, and one
//! more is in the sendLoop's hand, before a drop. The writer still needs its turn among
//! the node's goroutines (`goroutines.rs`) to move them: go's writer is readied by
//! `rpc_queue.go:Push` (`dataAvailable.Signal`) and its `Write` readies the sendLoop, so
//! what its queue collects while it waits for that turn can overflow.
//!
//! The node's uplink is shared by its connections (`network.uplink_sharing`):
//! - fair (default): it serves the connections with data in turn, one chunk of at most
//!   `CHUNK` bytes each (round robin), FIFO within a connection, so eight peers sent a
//!   large message at once receive it at about the same time. This is what the Linux
//!   kernel does with TCP flows through a FIFO qdisc under HTB: measured, the eight
//!   copies of a 500 KB message over 50 Mbit complete within 3 % of each other
//!   (`docs/network-calibration.md`).
//! - fifo: RPCs are written whole in the order they were queued, across connections:
//!   one FIFO interface queue, so the first copy arrives after one copy's time and the
//!   last after all of them.
//! - window: each connection releases into one FIFO queue of the uplink, in pieces of at
//!   most 16 KiB, what its congestion window allows (`window.rs`); the sharing follows
//!   from when each window reopens, so a connection with a short round trip gets more of
//!   the uplink than one waiting for its acknowledgements.
//! - shadow: Shadow's stack, windows as with window sharing, the queue ordered by when
//!   the bytes were written (`uplink_window.rs`).
//!
//! With packet downlinks (`downlink_sharing = "packets"`, `downlink_packets.rs`) fair
//! sharing goes through windows too: each connection releases what its window allows,
//! and the uplink serves the connections with released pieces in turn, a piece each.
//!
//! With unlimited upload capacity nothing ever waits and RPCs leave at once (with packet
//! downlinks, at once as their windows allow).

use std::collections::VecDeque;

use crate::config::{Time, UplinkSharing};
use crate::rpc::Control;
use crate::window::Window;

/// Bytes the uplink sends for one connection before serving the next.
pub const CHUNK: u64 = 16 * 1024;

/// The outbound queue of one connection, with what its transport holds ahead of it.
#[derive(Default)]
pub struct LinkQueue {
    /// RPCs: first the `handed` ones the transport holds (the one being written first),
    /// then `urgent` ones waiting, then normal ones waiting.
    pub(crate) rpcs: VecDeque<u32>,
    /// RPCs at the front of `rpcs` that the transport took.
    pub(crate) handed: u32,
    /// Urgent RPCs waiting right behind the handed ones.
    pub(crate) urgent: u32,
    /// Bytes of the handed RPCs not yet written.
    pub(crate) unsent: u64,
    /// Bytes of the head RPC still to write (0: not started).
    pub(crate) head_left: u64,
    /// When writing the head RPC started.
    pub(crate) head_started: Time,
    /// GRAFT/PRUNE of dropped RPCs, waiting for the next RPC or heartbeat.
    /// Boxed: it is rare, and links are many (100,000 nodes have millions of them).
    pub(crate) stash: Option<Box<Control>>,
    /// The writer, when writing costs CPU (boxed: links are many, and most runs have
    /// no such cost).
    pub(crate) writer: Option<Box<Writer>>,
    /// The congestion window, when the uplink is shared by windows (boxed, made at the
    /// connection's first send).
    pub(crate) window: Option<Box<Window>>,
}

/// A connection's writer goroutine, when writing costs CPU.
#[derive(Default)]
pub struct Writer {
    /// RPCs (and whether urgent) waiting for the writer, urgent ones first; they count
    /// against the queue's limit.
    pub(crate) encoding: VecDeque<(u32, bool)>,
    /// Urgent RPCs at the front of `encoding`.
    pub(crate) encoding_urgent: u32,
    /// The RPC the writer is encoding for a limited uplink (popped from the queue, as
    /// go's writer holds it); with an unlimited one it has already left.
    pub(crate) writing: Option<(u32, bool)>,
    /// When the writer has finished encoding what it took.
    pub(crate) writer_free: Time,
    /// An `Encoded` event is due for this writer.
    pub(crate) wake: bool,
    /// Blocked in yamux's `Stream.Write` with the stream's window closed
    /// (`stream_window.rs`): the RPC, whether urgent, and the bytes not yet written.
    pub(crate) blocked: Option<(u32, bool, u64)>,
    /// With the event loop, the connection's yamux send side (`SendLoop`).
    pub(crate) yamux: Option<Box<SendLoop>>,
}

/// go-yamux v5.1.0's send side of a connection, with the event loop: `Stream.Write`
/// (`stream.go:write`) copies each frame of at most `MAX_FRAME_BODY` bytes into a
/// buffer and puts it on the session's `sendCh`, a channel of `SEND_CH_SLOTS`
/// (`session.go:sendMsg`, `newSession`), and returns; one goroutine per connection,
/// `session.go:sendLoop`, takes one buffer at a time and writes it to the secure conn
/// (Noise encryption, the write syscall). An RPC's frames go and are taken together.
///
/// The same channel carries the window updates of the connection's incoming stream:
/// the reading goroutine's `Stream.Read` calls `sendWindowUpdate`, which puts a
/// header-only frame on `sendCh` (`session.go:sendMsg`) and parks there while it is
/// full, so an update waits behind the frames queued before it and is written by the
/// sendLoop like any frame. Its entries are `WINDOW_UPDATE`.
#[derive(Default)]
pub struct SendLoop {
    /// RPCs in `sendCh` (and whether urgent, and their frames), oldest first.
    pub(crate) queued: VecDeque<(u32, bool, u32)>,
    /// Slots of `sendCh` those RPCs' frames hold.
    pub(crate) slots: u32,
    /// The RPC the sendLoop took and is writing (it waits on `sendCh` when `None`).
    pub(crate) writing: Option<(u32, bool)>,
    /// The writer, parked in `sendMsg` on a full `sendCh`, holding this RPC (popped
    /// from the 32-RPC queue, so no longer counted against it) and its frames.
    pub(crate) parked: Option<(u32, bool, u32)>,
    /// The window updates among the entries taken and queued, oldest first: the
    /// stream's link (the peer's direction of the connection) and the bytes granted.
    pub(crate) updates: VecDeque<(u32, u32)>,
    /// The reader, parked in `sendMsg` with a window update on a full `sendCh`: the
    /// update, and the RPC it read, which it hands to the event loop once let in.
    pub(crate) parked_update: Option<ParkedUpdate>,
    /// Whether the reader parked before the writer: a channel lets its parked senders
    /// in first come, first served (`runtime/chan.go`, `sendq`).
    pub(crate) update_parked_first: bool,
}

/// A reader parked on `sendCh` with a window update (`SendLoop::parked_update`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParkedUpdate {
    /// The stream's link, whose reader parked.
    pub link: u32,
    /// The bytes the update grants.
    pub delta: u32,
    /// The RPC the reader read.
    pub rpc: u32,
}

/// The `sendCh` entry of a window update frame (no RPC has this index).
pub const WINDOW_UPDATE: u32 = u32::MAX;

/// A yamux frame header, all a window update frame is (`const.go:headerSize`).
pub const HEADER_BYTES: u64 = 12;

/// go-yamux's `sendCh`: 64 buffers (`session.go:newSession`, `make(chan []byte, 64)`).
pub const SEND_CH_SLOTS: u32 = 64;

/// The most data bytes one yamux frame carries: `MaxMessageSize` (64 KiB,
/// `mux.go:DefaultConfig`) less the 12-byte header (`stream.go:write`,
/// `min(window, MaxMessageSize-headerSize, len(b))`).
pub const MAX_FRAME_BODY: u64 = 64 * 1024 - 12;

/// The yamux frames, so `sendCh` slots, of a write of `bytes` (one at least).
pub fn frames(bytes: u64) -> u32 {
    u32::try_from(bytes.div_ceil(MAX_FRAME_BODY).max(1)).expect("frames fit u32")
}

impl SendLoop {
    /// The writer puts an RPC of `frames` frames on `sendCh` (`session.go:sendMsg`):
    /// straight to an idle sendLoop waiting on the channel (`runtime/chan.go:send` hands
    /// it over, no slot used; returns `Taken`), into the slots if they all fit
    /// (`Queued`), else the writer parks holding it (`Parked`).
    pub fn put(&mut self, rpc: u32, urgent: bool, frames: u32) -> Put {
        let put = self.admit(rpc, urgent, frames);
        if put == Put::Parked {
            debug_assert!(self.parked.is_none(), "one writer per stream");
            self.parked = Some((rpc, urgent, frames));
            self.update_parked_first = self.parked_update.is_some();
        }
        put
    }

    /// An entry of `frames` frames into `sendCh`: to an idle sendLoop waiting on it, into
    /// the slots if they all fit, else nowhere (its sender parks).
    fn admit(&mut self, rpc: u32, urgent: bool, frames: u32) -> Put {
        if self.writing.is_none() {
            debug_assert!(self.queued.is_empty(), "an idle sendLoop has taken all");
            self.writing = Some((rpc, urgent));
            return Put::Taken;
        }
        if self.slots + frames <= SEND_CH_SLOTS {
            self.queued.push_back((rpc, urgent, frames));
            self.slots += frames;
            return Put::Queued;
        }
        Put::Parked
    }

    /// The reader puts a window update on `sendCh` (one frame, `sendWindowUpdate`):
    /// taken by an idle sendLoop, queued, or parked with the RPC the reader read.
    pub fn put_update(&mut self, update: ParkedUpdate) -> Put {
        let put = self.admit_update(update);
        if put == Put::Parked {
            debug_assert!(self.parked_update.is_none(), "one reader per stream");
            self.parked_update = Some(update);
            self.update_parked_first = self.parked.is_none();
        }
        put
    }

    /// The update in `sendCh` if there is room (or a sendLoop waiting), and on
    /// `updates` then.
    fn admit_update(&mut self, update: ParkedUpdate) -> Put {
        let put = self.admit(WINDOW_UPDATE, false, 1);
        if put != Put::Parked {
            self.updates.push_back((update.link, update.delta));
        }
        put
    }

    /// The sendLoop wrote its RPC (returned) and takes the next one, if any; its slots
    /// free up, which lets the parked senders in, first come first served
    /// (`runtime/chan.go:recv` copies a parked sender's value into the buffer and
    /// readies it). Returns the entry written, whether the writer was let in, and the
    /// reader's update if it was.
    pub fn wrote(&mut self) -> ((u32, bool), bool, Option<ParkedUpdate>) {
        let done = self.writing.take().expect("the sendLoop was writing");
        if let Some((rpc, urgent, frames)) = self.queued.pop_front() {
            self.slots -= frames;
            self.writing = Some((rpc, urgent));
        }
        let (mut writer_in, mut update_in) = (false, None);
        if self.update_parked_first {
            update_in = self.let_update_in();
            if update_in.is_some() || self.parked_update.is_none() {
                writer_in = self.let_writer_in();
            }
        } else {
            writer_in = self.let_writer_in();
            if writer_in || self.parked.is_none() {
                update_in = self.let_update_in();
            }
        }
        (done, writer_in, update_in)
    }

    /// The parked writer's put, tried again: it parks once more, in its place, if it
    /// still does not fit.
    fn let_writer_in(&mut self) -> bool {
        let order = self.update_parked_first;
        let let_in = self
            .parked
            .take()
            .is_some_and(|(rpc, urgent, frames)| self.put(rpc, urgent, frames) != Put::Parked);
        self.update_parked_first = order;
        let_in
    }

    /// The parked reader's update, tried again; the update if it went in.
    fn let_update_in(&mut self) -> Option<ParkedUpdate> {
        let update = self.parked_update.take()?;
        if self.admit_update(update) == Put::Parked {
            self.parked_update = Some(update);
            return None;
        }
        Some(update)
    }
}

/// Where `SendLoop::put` left an RPC.
#[derive(Debug, PartialEq, Eq)]
pub enum Put {
    Taken,
    Queued,
    Parked,
}

impl Writer {
    /// Parked in yamux's `sendMsg` on a full `sendCh` (`SendLoop`).
    pub fn parked(&self) -> bool {
        self.yamux.as_ref().is_some_and(|y| y.parked.is_some())
    }

    /// Queue `rpc` for the writer: an urgent one behind the urgent ones waiting.
    pub fn push_for_writer(&mut self, rpc: u32, urgent: bool) {
        if urgent {
            self.encoding
                .insert(self.encoding_urgent as usize, (rpc, urgent));
            self.encoding_urgent += 1;
        } else {
            self.encoding.push_back((rpc, urgent));
        }
    }

    /// The writer takes the next RPC, if any.
    pub fn pop_for_writer(&mut self) -> Option<(u32, bool)> {
        let next = self.encoding.pop_front()?;
        if next.1 {
            self.encoding_urgent -= 1;
        }
        Some(next)
    }
}

impl LinkQueue {
    /// Queue `rpc`: an urgent one behind the urgent ones already waiting, a normal one
    /// last.
    pub fn push(&mut self, rpc: u32, urgent: bool) {
        if urgent {
            let at = (self.handed + self.urgent) as usize;
            self.rpcs.insert(at, rpc);
            self.urgent += 1;
        } else {
            self.rpcs.push_back(rpc);
        }
    }

    /// Let the transport take waiting RPCs while it holds fewer than `buffer` unsent
    /// bytes (always the head); `size(rpc)` gives an RPC's bytes.
    pub fn hand_over(&mut self, buffer: u64, size: impl Fn(u32) -> u64) {
        while (self.handed as usize) < self.rpcs.len() && (self.handed == 0 || self.unsent < buffer)
        {
            self.unsent += size(self.rpcs[self.handed as usize]);
            self.handed += 1;
            self.urgent = self.urgent.saturating_sub(1);
        }
    }

    /// Window sharing: true if the transport holds bytes its window has not released.
    pub fn has_unreleased(&self) -> bool {
        self.window.as_ref().is_some_and(|w| w.cursor < self.handed)
    }

    /// `bytes` of the head RPC were written; returns the head RPC if it is complete.
    pub fn written(&mut self, bytes: u64) -> Option<u32> {
        self.head_left -= bytes;
        self.unsent -= bytes;
        if self.head_left > 0 {
            return None;
        }
        self.handed -= 1;
        self.rpcs.pop_front()
    }
}

/// The uplink of one node.
#[derive(Default)]
pub struct Uplink {
    /// Connections with queued RPCs, in service order.
    pub(crate) ring: VecDeque<u32>,
    /// The chunk being written: (link, bytes), if any.
    pub(crate) current: Option<(u32, u64)>,
    /// Window sharing: the pieces the connections released, in the order the uplink
    /// writes them.
    pub(crate) pieces: VecDeque<Piece>,
    /// Windows served in turns: the turn of the piece written last.
    pub(crate) turn: u64,
}

/// A piece a connection released into its uplink (window sharing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Piece {
    pub link: u32,
    pub bytes: u64,
    /// Its place in the uplink's order (`PieceOrder`): when its bytes were written
    /// across the node's connections (Shadow), or its connection's turn (turns); 0 in
    /// release order.
    pub key: u64,
}

/// The order in which an uplink writes the pieces its connections' windows release.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PieceOrder {
    /// As released, across connections: one FIFO (`uplink_sharing = "window"`).
    Released,
    /// By when their bytes were written (`"shadow"`, see `Uplink::queue_piece`).
    Written,
    /// The connections with pieces in turn, a piece each (`"fair"` with windows).
    Turns,
}

impl Uplink {
    /// Queue a released piece: last (`Released`), or behind every piece whose key is no
    /// larger than its own and ahead of the others. In turns, each connection's next
    /// piece takes the turn after its last one, or the turn being written if it had
    /// fallen behind, so the connections' pieces alternate. Shadow's interface takes the
    /// packet whose data was written first across its sockets with packets in their windows
    /// (`network_interface.c:_networkinterface_selectFirstInFirstOut`, in 3.3
    /// `interface.rs`: a min-heap of sockets keyed by their head packet's priority, a
    /// host-wide counter taken when `tcp.c:tcp_sendUserData` makes the packet).
    pub fn queue_piece(&mut self, piece: Piece, order: PieceOrder) {
        let at = if order == PieceOrder::Released {
            self.pieces.len()
        } else {
            self.pieces
                .iter()
                .rposition(|p| p.key <= piece.key)
                .map_or(0, |i| i + 1)
        };
        self.pieces.insert(at, piece);
    }
}

pub struct Transport {
    pub links: Vec<LinkQueue>,
    pub uplinks: Vec<Uplink>,
    pub sharing: UplinkSharing,
    /// Whether connections release through congestion windows (`uplink_window.rs`):
    /// window and Shadow sharing, and fair sharing over packet downlinks.
    pub windows: bool,
    /// Bytes a connection's transport takes from its queue (`send_buffer_bytes`).
    pub buffer: u64,
    /// A new connection's congestion window in bytes (window sharing).
    pub initial_window: u64,
    /// Shadow sharing: RPCs handed to any transport so far, the order of their writing.
    written: u64,
}

impl Transport {
    /// `packet_downlinks`: the downlinks read windows' pieces (`downlink_packets.rs`),
    /// so fair sharing goes through windows too.
    pub fn new(
        nodes: usize,
        links: usize,
        sharing: UplinkSharing,
        buffer: u64,
        packet_downlinks: bool,
    ) -> Self {
        Self {
            links: (0..links).map(|_| LinkQueue::default()).collect(),
            uplinks: (0..nodes).map(|_| Uplink::default()).collect(),
            sharing,
            windows: sharing.uses_windows() || (packet_downlinks && sharing == UplinkSharing::Fair),
            buffer,
            initial_window: 0,
            written: 0,
        }
    }

    /// Shadow sharing: `link`'s transport took `count` more RPCs; they are written now,
    /// after every RPC handed before them on any connection.
    pub fn note_written(&mut self, link: u32, count: u32) {
        for _ in 0..count {
            self.written += 1;
            let order = self.written;
            self.window(link).written.push_back(order);
        }
    }

    /// The order in which an uplink writes its connections' released pieces.
    pub fn piece_order(&self) -> PieceOrder {
        match self.sharing {
            UplinkSharing::Shadow => PieceOrder::Written,
            UplinkSharing::Fair => PieceOrder::Turns,
            _ => PieceOrder::Released,
        }
    }

    /// Window sharing: a new connection's window is `bytes`.
    pub fn with_initial_window(mut self, bytes: u64) -> Self {
        self.initial_window = bytes;
        self
    }

    /// `link`'s congestion window, made when first needed.
    pub fn window(&mut self, link: u32) -> &mut Window {
        let initial = self.initial_window;
        self.links[link as usize]
            .window
            .get_or_insert_with(|| Box::new(Window::new(initial)))
    }

    /// RPCs waiting in `link`'s outbound queue, not counting those the transport took
    /// nor the one its writer is encoding.
    pub fn waiting(&self, link: u32) -> usize {
        let q = &self.links[link as usize];
        let writer = q.writer.as_ref().map_or(0, |w| w.encoding.len());
        q.rpcs.len() - q.handed as usize + writer
    }

    /// Bytes the uplink writes for the head RPC of `link` before serving another.
    pub fn chunk(&self, link: u32) -> u64 {
        let left = self.links[link as usize].head_left;
        match self.sharing {
            UplinkSharing::Fair => left.min(CHUNK),
            UplinkSharing::Fifo => left,
            UplinkSharing::Window | UplinkSharing::Shadow => {
                unreachable!("window sharing writes pieces")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sizes(rpc: u32) -> u64 {
        [100_000, 100_000, 2_000, 50, 50, 50][rpc as usize]
    }

    #[test]
    fn a_frame_carries_at_most_64_kib_less_its_header() {
        // stream.go:write: min(window, MaxMessageSize-headerSize, len(b)).
        assert_eq!(frames(0), 1);
        assert_eq!(frames(65_524), 1);
        assert_eq!(frames(65_525), 2);
        assert_eq!(frames(131_048), 2);
        assert_eq!(frames(131_049), 3);
    }

    #[test]
    fn send_ch_takes_64_frames_then_parks_the_writer_until_the_send_loop_takes_one() {
        // runtime/chan.go: a send to a parked receiver hands the value over; a buffered
        // channel takes 64; a full one parks the sender, and a receive copies its value
        // into the freed slot and readies it.
        let mut y = SendLoop::default();
        assert_eq!(y.put(0, false, 1), Put::Taken, "the idle sendLoop takes it");
        for rpc in 1..=62 {
            assert_eq!(y.put(rpc, false, 1), Put::Queued);
        }
        assert_eq!(
            y.put(63, false, 2),
            Put::Queued,
            "two frames, slots 63 and 64"
        );
        assert_eq!(y.slots, SEND_CH_SLOTS);
        assert_eq!(y.put(64, false, 2), Put::Parked);
        // Taking RPC 1 frees one slot: not enough for two frames.
        assert_eq!(y.wrote(), ((0, false), false, None));
        assert_eq!(y.writing, Some((1, false)));
        assert!(y.parked.is_some());
        // Taking RPC 2 frees another: the writer's RPC goes in, the writer is readied.
        assert_eq!(y.wrote(), ((1, false), true, None));
        assert_eq!((y.slots, y.parked), (SEND_CH_SLOTS, None));
        assert_eq!(y.queued.back(), Some(&(64, false, 2)));
        for rpc in 2..=64 {
            assert_eq!(y.wrote().0, (rpc, false));
        }
        assert_eq!((y.writing, y.slots), (None, 0), "the sendLoop waits again");
    }

    #[test]
    fn a_window_update_waits_in_send_ch_and_its_reader_parks_in_turn_with_the_writer() {
        // stream.go:sendWindowUpdate puts a header-only frame on sendCh
        // (session.go:sendMsg): behind the frames queued before it, and parked while
        // the channel is full; runtime/chan.go lets parked senders in first come, first
        // served, one per freed slot here.
        let update = |link, rpc| ParkedUpdate {
            link,
            delta: 131_072,
            rpc,
        };
        let mut y = SendLoop::default();
        assert_eq!(y.put_update(update(7, 0)), Put::Taken, "an idle sendLoop");
        for rpc in 1..=SEND_CH_SLOTS {
            assert_eq!(y.put(rpc, false, 1), Put::Queued);
        }
        assert_eq!(
            y.put_update(update(7, 1)),
            Put::Parked,
            "the reader parks first"
        );
        assert_eq!(y.put(99, false, 1), Put::Parked, "then the writer");
        // The update written, one slot frees: the reader's update goes in, not the RPC.
        assert_eq!(
            y.wrote(),
            ((WINDOW_UPDATE, false), false, Some(update(7, 1)))
        );
        // The caller takes the written update off `updates`; the parked one is queued.
        assert_eq!(y.updates.pop_front(), Some((7, 131_072)));
        assert_eq!(y.updates.iter().collect::<Vec<_>>(), [&(7, 131_072)]);
        assert_eq!(y.queued.back(), Some(&(WINDOW_UPDATE, false, 1)));
        // The next slot goes to the writer.
        assert_eq!(y.wrote(), ((1, false), true, None));
        assert_eq!(y.queued.back(), Some(&(99, false, 1)));
        // The other way round: the writer parked first goes first.
        let mut y = SendLoop::default();
        y.put(0, false, 1);
        for rpc in 1..=SEND_CH_SLOTS {
            y.put(rpc, false, 1);
        }
        assert_eq!(y.put(99, false, 1), Put::Parked);
        assert_eq!(y.put_update(update(3, 5)), Put::Parked);
        assert_eq!(y.wrote(), ((0, false), true, None), "the writer first");
        assert_eq!(y.wrote(), ((1, false), false, Some(update(3, 5))));
        assert!(y.parked.is_none() && y.parked_update.is_none());
    }

    #[test]
    fn pieces_in_turns_alternate_between_connections() {
        // Connection 0 released three pieces (turns 1-3) and the uplink writes turn 1;
        // connection 1, which had fallen behind, releases two: they take turns 1 and 2
        // and go behind connection 0's pieces of the same turn.
        let mut uplink = Uplink::default();
        let mut windows = [Window::new(0), Window::new(0)];
        let mut release = |uplink: &mut Uplink, link: u32| {
            let key = windows[link as usize].next_turn(uplink.turn);
            let piece = Piece {
                link,
                bytes: 100,
                key,
            };
            uplink.queue_piece(piece, PieceOrder::Turns);
        };
        for _ in 0..3 {
            release(&mut uplink, 0);
        }
        let first = uplink.pieces.pop_front().unwrap();
        uplink.turn = first.key;
        release(&mut uplink, 1);
        release(&mut uplink, 1);
        let order: Vec<(u32, u64)> = uplink.pieces.iter().map(|p| (p.link, p.key)).collect();
        assert_eq!(order, [(1, 1), (0, 2), (1, 2), (0, 3)]);
    }

    #[test]
    fn pieces_queue_by_write_order_or_by_release() {
        let piece = |link, key| Piece {
            link,
            bytes: 100,
            key,
        };
        let mut uplink = Uplink::default();
        for p in [piece(0, 1), piece(1, 3), piece(1, 3), piece(2, 5)] {
            uplink.queue_piece(p, PieceOrder::Written);
        }
        // Written second: behind the first write, ahead of the later ones.
        uplink.queue_piece(piece(3, 2), PieceOrder::Written);
        // Written with the third: behind its pieces already queued.
        uplink.queue_piece(piece(1, 3), PieceOrder::Written);
        let links: Vec<u32> = uplink.pieces.iter().map(|p| p.link).collect();
        assert_eq!(links, [0, 3, 1, 1, 1, 2]);
        uplink.queue_piece(piece(4, 0), PieceOrder::Released);
        assert_eq!(
            uplink.pieces.back().map(|p| p.link),
            Some(4),
            "by release: last"
        );
    }

    #[test]
    fn urgent_rpcs_keep_their_order_behind_what_the_transport_holds() {
        // rpcQueue.PriorityPush appends to the priority lane; Pop takes its first.
        let mut q = LinkQueue::default();
        q.push(0, false);
        q.hand_over(0, sizes);
        q.push(3, true);
        q.push(4, true);
        q.push(5, false);
        q.hand_over(0, sizes);
        assert_eq!(q.rpcs, [0, 3, 4, 5]);
        assert_eq!(q.handed, 1);
    }

    #[test]
    fn the_transport_takes_rpcs_until_its_buffer_holds_enough() {
        // 256 KiB buffer: two 100 kB RPCs fit below it, so a third is taken too (the
        // buffer held 200 kB < 262,144 when it was offered); the fourth waits.
        let mut q = LinkQueue::default();
        for rpc in 0..4 {
            q.push(rpc, false);
        }
        q.hand_over(262_144, |r| [100_000, 100_000, 100_000, 50][r as usize]);
        assert_eq!((q.handed, q.unsent), (3, 300_000));
        q.push(5, true);
        assert_eq!(q.rpcs, [0, 1, 2, 5, 3], "urgent overtakes only what waits");
        q.head_left = 100_000;
        assert_eq!(q.written(100_000), Some(0));
        q.hand_over(262_144, |r| {
            [100_000, 100_000, 100_000, 50, 50, 50][r as usize]
        });
        assert_eq!((q.handed, q.unsent), (4, 200_100), "both small ones taken");
    }
}
