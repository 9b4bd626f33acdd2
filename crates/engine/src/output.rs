//! The event tables the engine produces, as columns.
//!
//! Column names and types are the contract of DESIGN.md ("Event schema"); the Python
//! side wraps them into Parquet without copying row by row.

use std::collections::BTreeMap;

use crate::aggregate::Aggregates;
use crate::config::Time;
use crate::inputs::Message;
use crate::rpc::{Kind, Rpc, KIND_COUNT};
use crate::wire::WireSizes;

/// First receipt of a message at a node (not its publisher).
#[derive(Default)]
pub struct Deliveries {
    pub msg: Vec<u32>,
    pub node: Vec<u32>,
    pub t_ns: Vec<i64>,
    pub from_node: Vec<u32>,
    pub hop: Vec<u16>,
    /// Copies received after the first.
    pub duplicates: Vec<u32>,
}

impl Deliveries {
    pub fn push(&mut self, msg: u32, node: u32, t: Time, from: u32, hop: u16) -> u32 {
        let row = self.msg.len() as u32;
        self.msg.push(msg);
        self.node.push(node);
        self.t_ns.push(t as i64);
        self.from_node.push(from);
        self.hop.push(hop);
        self.duplicates.push(0);
        row
    }

    pub fn len(&self) -> usize {
        self.msg.len()
    }

    pub fn is_empty(&self) -> bool {
        self.msg.is_empty()
    }
}

/// Every payload receipt, duplicates included (optional: large).
#[derive(Default)]
pub struct Receipts {
    pub msg: Vec<u32>,
    pub node: Vec<u32>,
    pub from_node: Vec<u32>,
    pub t_ns: Vec<i64>,
    pub duplicate: Vec<bool>,
}

/// Per node and kind: items and bytes sent and received.
#[derive(Clone, Copy, Default, Debug)]
pub struct KindCounters {
    pub msgs_sent: u64,
    pub bytes_sent: u64,
    pub msgs_recv: u64,
    pub bytes_recv: u64,
    /// Protobuf entries (`control.rs`: an IHAVE of many ids is one), as studies count
    /// control messages; `msgs_*` count ids.
    pub entries_sent: u64,
    pub entries_recv: u64,
}

pub type NodeTraffic = [KindCounters; KIND_COUNT];

/// Why something was dropped (the `drops` table).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct DropKey {
    pub node: u32,
    pub peer: u32,
    pub kind: u8,
    pub reason: &'static str,
}

/// Connections opened during the run (peer exchange), in order.
#[derive(Default)]
pub struct Connections {
    pub t_ns: Vec<i64>,
    pub node: Vec<u32>,
    pub peer: Vec<u32>,
}

impl Connections {
    pub fn push(&mut self, t: Time, dialer: u32, listener: u32) {
        self.t_ns.push(t as i64);
        self.node.push(dialer);
        self.peer.push(listener);
    }

    pub fn len(&self) -> usize {
        self.t_ns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.t_ns.is_empty()
    }
}

#[derive(Default)]
pub struct Output {
    /// Full mode only (empty in aggregate mode).
    pub deliveries: Deliveries,
    /// Aggregate mode only.
    pub aggregates: Option<Aggregates>,
    pub receipts: Option<Receipts>,
    pub traffic: Vec<NodeTraffic>,
    /// Sorted so the table comes out in the same order every run.
    pub drops: BTreeMap<DropKey, u64>,
    pub connections: Connections,
    /// Per message: copies its publisher received back (possible without an author, as
    /// in go with WithNoAuthor), each a duplicate there. Grows on the first such copy;
    /// read it with `publisher_duplicates`.
    pub own_copies: Vec<u32>,
    /// Optional: what was sent about each message (`output.message_traffic`).
    pub message_traffic: Option<MessageTraffic>,
}

/// Per message and kind: items sent that carry or name the message (payload copies;
/// ids in IHAVE, IWANT, IDONTWANT, IANNOUNCE and INEED) and their bytes (the message's
/// `publish` field, or one id field; framing and entry wrappers are left out: they
/// belong to the RPC, not to one message).
pub struct MessageTraffic {
    pub counts: Vec<[(u64, u64); KIND_COUNT]>,
}

impl MessageTraffic {
    pub fn new(messages: usize) -> Self {
        Self {
            counts: vec![[(0, 0); KIND_COUNT]; messages],
        }
    }

    /// Count what a sent RPC carries about each known message.
    pub(crate) fn count(&mut self, rpc: &Rpc, wire: &WireSizes, messages: &[Message]) {
        let known = messages.len() as u32;
        for m in rpc.msgs.iter().filter(|m| m.msg < known) {
            let size = u64::from(messages[m.msg as usize].size);
            self.add(m.msg, Kind::Payload, wire.publish_field(size));
        }
        if rpc.payload_only {
            return;
        }
        let id = wire.id_field();
        let c = &rpc.control;
        let ids = c
            .ihave
            .iter()
            .flat_map(|(_, ids)| ids.iter().map(|&m| (m, Kind::Ihave)));
        let ids = ids
            .chain(c.iwant.iter().map(|&m| (m, Kind::Iwant)))
            .chain(c.idontwant.iter().map(|&m| (m, Kind::Idontwant)))
            .chain(c.iannounce.iter().map(|&(_, m)| (m, Kind::Iannounce)))
            .chain(c.ineed.iter().map(|&m| (m, Kind::Ineed)));
        for (msg, kind) in ids.filter(|&(m, _)| m < known) {
            self.add(msg, kind, id);
        }
    }

    fn add(&mut self, msg: u32, kind: Kind, bytes: u64) {
        let entry = &mut self.counts[msg as usize][kind as usize];
        entry.0 += 1;
        entry.1 += bytes;
    }
}

impl Output {
    /// Copies `msg`'s publisher received of it.
    pub fn publisher_duplicates(&self, msg: u32) -> u32 {
        self.own_copies.get(msg as usize).copied().unwrap_or(0)
    }

    pub(crate) fn count_own_copy(&mut self, msg: u32) {
        let i = msg as usize;
        if self.own_copies.len() <= i {
            self.own_copies.resize(i + 1, 0);
        }
        self.own_copies[i] += 1;
    }
}
