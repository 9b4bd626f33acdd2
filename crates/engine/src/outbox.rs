//! What a router may do to the world: send control, send a message, set a timer, count
//! a drop, dial peers. Routers write here instead of reaching into the simulation; the
//! simulation carries the actions out, in order, as soon as the router returns, so
//! event order and random draws are those of acting at once.

use crate::config::Time;
use crate::control::{Control, Kind};
use crate::queue::Event;
use crate::rpc::{MsgRef, RpcSlab};

/// One thing a router asked for, on behalf of its node. Small and `Copy`, so carrying
/// out a list of them costs little on the hot path (a relay is one `Send` per peer).
#[derive(Clone, Copy)]
pub(crate) enum Action {
    /// Hand RPC `rpc` (in the slab) to the outbound queue of `link`; `urgent` puts it
    /// ahead of waiting RPCs (go's urgent lane, for IDONTWANT).
    Send { link: u32, rpc: u32, urgent: bool },
    /// Queue `event` at `at` for the node.
    Timer { at: Time, event: Event },
    /// Count one item of `kind` lost on the way to `peer`, for `reason`.
    Drop {
        peer: u32,
        kind: Kind,
        reason: &'static str,
    },
    /// Peer exchange: dial the outbox's `dials[start..end]` (they queue for the node's
    /// connectors).
    Dial { start: u32, end: u32 },
}

/// A router's pen: RPCs are built in the slab, the rest is listed.
pub(crate) struct Outbox<'a> {
    pub(crate) rpcs: &'a mut RpcSlab,
    pub(crate) actions: &'a mut Vec<Action>,
    /// Peers to dial, referred to by `Action::Dial`.
    pub(crate) dials: &'a mut Vec<u32>,
}

impl Outbox<'_> {
    /// Send control parts on `link` in an RPC of their own.
    pub fn send_control(&mut self, link: u32, control: Control) {
        self.send(link, &[], control);
    }

    /// Like `send_control`, ahead of every waiting RPC.
    pub fn send_urgent_control(&mut self, link: u32, control: Control) {
        let rpc = self.rpcs.alloc();
        self.rpcs.get_mut(rpc).control = control;
        self.actions.push(Action::Send {
            link,
            rpc,
            urgent: true,
        });
    }

    /// Send one message on `link` in an RPC of its own.
    #[inline]
    pub fn send_message(&mut self, link: u32, msg: u32, hop: u16) {
        let rpc = self.rpcs.alloc();
        self.rpcs.get_mut(rpc).msgs.push(MsgRef { msg, hop });
        self.actions.push(Action::Send {
            link,
            rpc,
            urgent: false,
        });
    }

    /// Send messages and control parts together in one RPC on `link`.
    pub fn send(&mut self, link: u32, msgs: &[MsgRef], control: Control) {
        let rpc = self.rpcs.alloc();
        let r = self.rpcs.get_mut(rpc);
        r.msgs.extend_from_slice(msgs);
        r.control = control;
        self.actions.push(Action::Send {
            link,
            rpc,
            urgent: false,
        });
    }

    pub fn set_timer(&mut self, at: Time, event: Event) {
        self.actions.push(Action::Timer { at, event });
    }

    pub fn count_drop(&mut self, peer: u32, kind: Kind, reason: &'static str) {
        self.actions.push(Action::Drop { peer, kind, reason });
    }

    pub fn dial(&mut self, peers: &[u32]) {
        let start = self.dials.len() as u32;
        self.dials.extend_from_slice(peers);
        let end = self.dials.len() as u32;
        self.actions.push(Action::Dial { start, end });
    }
}
