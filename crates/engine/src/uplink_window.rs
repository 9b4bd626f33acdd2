//! A node's uplink shared by congestion windows (`network.uplink_sharing = "window"`).
//!
//! Each connection releases into its sender's uplink, in pieces of at most 16 KiB that
//! never span two RPCs, what its window and pacer allow (`window.rs`). The uplink writes
//! the pieces first in, first out across connections, as a FIFO qdisc (Linux `pfifo`
//! under HTB) or a FIFO link (simnet) does. A piece's acknowledgement comes back one
//! round trip (the link's latency there and back) after its last byte left; the RPC
//! leaves when its last piece does and then travels as any other (`network.rs`: jitter,
//! loss, the receiver's downlink). So the connection whose window reopens first, the one
//! with the shortest round trip, fills more of the queue, and connections with equal
//! round trips interleave their pieces and share the uplink about equally.
//!
//! With Shadow's stack (`uplink_sharing = "shadow"`) the queue is ordered by when the
//! bytes were written instead: Shadow's default interface queue (`fifo`) takes, among
//! the sockets with packets in their windows, the packet made first, its priority a
//! host-wide counter taken when the application's write is cut into packets
//! (`tcp.c:tcp_sendUserData`; `network_interface.c:_networkinterface_selectFirstInFirstOut`,
//! in 3.3 `interface.rs`). So a connection whose window reopens goes ahead of what was
//! written after its bytes, and with open windows the RPCs leave whole in the order they
//! were written. Its legacy TCP grows the window by every acknowledged packet in slow
//! start (`tcp_cong_reno.c`, no check that the window was in use) and never restarts
//! it after idle. An RPC is written when its connection's transport takes it.
//!
//! With packet downlinks (`downlink_sharing = "packets"`) a piece travels on its own
//! and is acknowledged once the receiver's downlink has read it (`downlink_packets.rs`),
//! and `"fair"` uplinks release through windows too, the queue ordered by turns: each
//! connection's next piece goes behind one piece of every other connection with pieces
//! queued (`transport.rs:PieceOrder::Turns`).
//!
//! Events: one per piece written, and one per wait for an acknowledgement or the pacer
//! when a connection has more to send than its window lets out.

use crate::config::{Time, UplinkSharing};
use crate::network::{serialization_ns, MAX_CWND};
use crate::queue::Event;
use crate::sim::Simulation;
use crate::transport::{Piece, PieceOrder, Transport};
use crate::window::{Growth, Window};

impl Simulation {
    /// The round trip of `link`: its latency there and back.
    fn round_trip(&self, link: u32) -> Time {
        let back = self.links.reverse[link as usize];
        self.links.latency[link as usize] + self.links.latency[back as usize]
    }

    /// Bring `link`'s window up to now: acknowledgements that came back, then the
    /// restart after idle.
    fn update_window(&mut self, link: u32, now: Time, rtt: Time) {
        let restart = self.net.restarts_after_idle();
        let initial = self.transport.initial_window;
        let growth = match self.transport.sharing {
            UplinkSharing::Shadow => Growth::Always,
            _ => Growth::WhileUsed,
        };
        let w = self.transport.window(link);
        w.acknowledge(now, MAX_CWND, growth);
        if restart {
            w.restart_if_idle(now, initial, rtt);
        }
    }

    /// Let `link` release into `node`'s uplink what its window and pacer allow, ask to be
    /// woken when they will allow more, and start the uplink if it is idle.
    pub(crate) fn release(&mut self, node: u32, link: u32) {
        let now = self.now();
        let rtt = self.round_trip(link);
        let pacing = self.net.pacing();
        let order = self.transport.piece_order();
        self.update_window(link, now, rtt);
        let rpcs = &self.rpcs;
        let Transport { links, uplinks, .. } = &mut self.transport;
        let queue = &mut links[link as usize];
        let w = queue.window.as_mut().expect("made by update_window");
        let mut wake = None;
        while w.cursor < queue.handed {
            if w.cursor_left == 0 {
                let rpc = queue.rpcs[w.cursor as usize];
                w.cursor_left = rpcs.get(rpc).total_bytes().max(1);
            }
            let written = w.next_written();
            match next_piece(w, now, rtt, pacing) {
                Ok(bytes) => {
                    let uplink = &mut uplinks[node as usize];
                    let key = match order {
                        PieceOrder::Written => written,
                        PieceOrder::Turns => w.next_turn(uplink.turn),
                        PieceOrder::Released => 0,
                    };
                    uplink.queue_piece(Piece { link, bytes, key }, order);
                }
                Err(at) => {
                    wake = at;
                    break;
                }
            }
        }
        if let Some(at) = wake {
            self.wake_window(node, link, at);
        }
        if self.transport.uplinks[node as usize].current.is_none() {
            self.serve_pieces(node);
        }
    }

    /// Have `link` look again at `at`, unless it will already by then.
    pub(crate) fn wake_window(&mut self, node: u32, link: u32, at: Time) {
        let w = self.transport.window(link);
        if w.wake_at.is_some_and(|due| due <= at) {
            return;
        }
        w.wake_at = Some(at);
        self.queue.push(at, node, Event::WindowOpen { link });
    }

    /// An acknowledgement came back to `link`, or its pacer refilled.
    pub(crate) fn window_open(&mut self, link: u32) {
        let now = self.now();
        let w = self.transport.window(link);
        if w.wake_at == Some(now) {
            w.wake_at = None;
        }
        self.release(self.links.owner[link as usize], link);
    }

    /// Start writing the next piece released into `node`'s uplink, if any.
    fn serve_pieces(&mut self, node: u32) {
        let uplink = &mut self.transport.uplinks[node as usize];
        let Some(Piece {
            link,
            bytes: piece,
            key,
        }) = uplink.pieces.pop_front()
        else {
            return;
        };
        uplink.turn = key;
        uplink.current = Some((link, piece));
        let now = self.now();
        let queue = &mut self.transport.links[link as usize];
        if queue.head_left == 0 {
            let head = *queue.rpcs.front().expect("a released piece has its RPC");
            queue.head_left = self.rpcs.get(head).total_bytes().max(1);
            queue.head_started = now;
        }
        let done = now + serialization_ns(piece, self.net.upload_bps(node));
        self.queue.push(done, node, Event::UplinkDone { node });
    }

    /// `node`'s uplink wrote its current piece: its acknowledgement is on its way, its
    /// RPC leaves if that was its last piece, and the connection may release more.
    pub(crate) fn piece_done(&mut self, node: u32) {
        let now = self.now();
        let uplink = &mut self.transport.uplinks[node as usize];
        let (link, piece) = uplink.current.take().expect("a piece was being written");
        let pieces_cross_downlinks = self.net.reads_pieces();
        if !pieces_cross_downlinks {
            let rtt = self.round_trip(link);
            self.transport.window(link).left(now, piece, rtt);
        }
        let queue = &mut self.transport.links[link as usize];
        let started = queue.head_started;
        let ended = queue.written(piece);
        if ended.is_some() {
            let w = self.transport.window(link);
            w.cursor -= 1;
            w.written.pop_front();
        }
        match ended {
            _ if pieces_cross_downlinks => self.send_piece(node, link, piece, ended),
            Some(rpc) => self.depart(node, link, rpc, started),
            None => {}
        }
        self.hand_over(link);
        self.release(node, link);
    }
}

/// The piece `w` releases now from its RPC at the cursor, or when to look again (None:
/// when a piece of its own leaves the uplink, which then brings an acknowledgement).
fn next_piece(w: &mut Window, now: Time, rtt: Time, pacing: bool) -> Result<u64, Option<Time>> {
    let room = w.room();
    if room == 0 {
        return Err(w.next_ack());
    }
    let mut piece = w.cursor_left.min(room).min(crate::window::PIECE);
    if pacing {
        piece = piece.min(w.pacer_limit(rtt));
        if w.pacer_budget(now, rtt) < piece {
            return Err(Some(w.pacer_ready_at(piece, rtt)));
        }
        w.pace(piece);
    }
    w.release(now, piece);
    Ok(piece)
}
