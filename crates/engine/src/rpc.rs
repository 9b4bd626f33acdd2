//! RPCs in flight, their contents and their size on the wire.
//!
//! An RPC holds references to messages (the payload itself lives once in the message
//! table) and optional control parts. RPCs are kept in a slab and recycled, so the hot
//! path of forwarding one message allocates nothing once the run has warmed up.

use smallvec::SmallVec;

use crate::config::Time;
use crate::control::KINDS;
pub use crate::control::{Control, Kind, Prune, KIND_COUNT, KIND_NAMES};
use crate::output::NodeTraffic;
use crate::wire::WireSizes;

/// A message carried in an RPC, with the sender's hop count for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MsgRef {
    pub msg: u32,
    pub hop: u16,
}

#[derive(Clone, Debug, Default)]
pub struct Rpc {
    pub msgs: SmallVec<[MsgRef; 2]>,
    /// Topics announced as subscribed (the hello at connection time, or a join)...
    pub subscribe: SmallVec<[u16; 2]>,
    /// ...and as left.
    pub unsubscribe: SmallVec<[u16; 2]>,
    pub control: Control,
    /// Bytes on the wire per kind, filled in by `measure`.
    pub bytes: [u64; KIND_COUNT],
    /// Items per kind (messages, ids or topic entries), filled in by `measure`.
    pub items: [u64; KIND_COUNT],
    /// Protobuf entries per kind (an IHAVE of many ids is one), filled in by `measure`.
    pub entries: [u32; KIND_COUNT],
    /// Set by `measure`: only payload (the common forward), so counters need only
    /// its column.
    pub payload_only: bool,
    /// Set when its last byte leaves: how long its bytes took to leave the sender's
    /// uplink at the share it gave them (0 where windows may send them back to back).
    /// A fair downlink reads them meanwhile (`downlink.rs`).
    pub written_over: Time,
}

impl Rpc {
    pub fn is_empty(&self) -> bool {
        self.msgs.is_empty()
            && self.subscribe.is_empty()
            && self.unsubscribe.is_empty()
            && self.control.is_empty()
    }

    /// Bytes on the wire, all kinds. A payload-only RPC (nearly every one: a forward)
    /// has bytes of that kind only (`measure`), so its sum is that kind's.
    #[inline]
    pub fn total_bytes(&self) -> u64 {
        if self.payload_only {
            return self.bytes[Kind::Payload as usize];
        }
        self.bytes.iter().sum()
    }

    /// Compute the wire size of every part. `size_of(msg)` is the message's payload size.
    ///
    /// Each part is charged to its kind, sized as the kind table says; the framing and
    /// the `control` wrapper are charged to the first kind present in the table's order,
    /// so the kinds always add up to the bytes on the wire.
    pub fn measure(&mut self, wire: &WireSizes, size_of: impl Fn(u32) -> u64) {
        if self.subscribe.is_empty() && self.unsubscribe.is_empty() && self.control.is_empty() {
            // The common case, a forward of one or a few messages: payload only.
            let body: u64 = self
                .msgs
                .iter()
                .map(|m| wire.publish_field(size_of(m.msg)))
                .sum();
            self.bytes = [0; KIND_COUNT];
            self.items = [0; KIND_COUNT];
            self.entries = [0; KIND_COUNT];
            self.bytes[Kind::Payload as usize] = WireSizes::frame(body);
            self.items[Kind::Payload as usize] = self.msgs.len() as u64;
            self.entries[Kind::Payload as usize] = self.msgs.len() as u32;
            self.payload_only = true;
            return;
        }
        let mut bytes = [0u64; KIND_COUNT];
        let mut items = [0u64; KIND_COUNT];
        let mut entries = [0u32; KIND_COUNT];
        entries[Kind::Payload as usize] = self.msgs.len() as u32;
        for m in &self.msgs {
            bytes[Kind::Payload as usize] += wire.publish_field(size_of(m.msg));
        }
        items[Kind::Payload as usize] = self.msgs.len() as u64;
        let subopts = (self.subscribe.len() + self.unsubscribe.len()) as u64;
        let mut control_body = 0;
        for spec in &KINDS {
            if let Some(sizing) = spec.sizing {
                let (n, b) = sizing(&self.control, subopts, wire);
                items[spec.kind as usize] = n;
                bytes[spec.kind as usize] = b;
                if spec.in_control {
                    control_body += b;
                }
            }
            if let Some(count) = spec.entries {
                entries[spec.kind as usize] = count(&self.control, subopts) as u32;
            }
        }
        let mut overhead = 0;
        if control_body > 0 {
            overhead += WireSizes::control_field(control_body) - control_body;
        }
        let body: u64 = bytes.iter().sum::<u64>() + overhead;
        overhead += WireSizes::frame(body) - body;
        let first = KINDS
            .iter()
            .map(|spec| spec.kind)
            .find(|&k| bytes[k as usize] > 0)
            .unwrap_or(Kind::Payload);
        bytes[first as usize] += overhead;
        self.bytes = bytes;
        self.items = items;
        self.entries = entries;
        self.payload_only = false;
    }

    /// Add this RPC's items, bytes and entries per kind to `counters`, as sent (or, with
    /// `sent` false, as received).
    #[inline]
    pub fn count_into(&self, counters: &mut NodeTraffic, sent: bool) {
        let kinds = if self.payload_only { 1 } else { KIND_COUNT };
        for (k, c) in counters.iter_mut().enumerate().take(kinds) {
            let (items, bytes, entries) =
                (self.items[k], self.bytes[k], u64::from(self.entries[k]));
            if sent {
                c.msgs_sent += items;
                c.bytes_sent += bytes;
                c.entries_sent += entries;
            } else {
                c.msgs_recv += items;
                c.bytes_recv += bytes;
                c.entries_recv += entries;
            }
        }
    }

    fn reset(&mut self) {
        self.msgs.clear();
        self.subscribe.clear();
        self.unsubscribe.clear();
        self.control.clear();
        // `bytes`, `items` and `entries` stay: `measure` sets them before anything reads them.
    }
}

/// Storage for RPCs in flight, recycled to avoid allocation.
#[derive(Default)]
pub struct RpcSlab {
    slots: Vec<Rpc>,
    free: Vec<u32>,
}

impl RpcSlab {
    /// A fresh, empty RPC and its id.
    pub fn alloc(&mut self) -> u32 {
        if let Some(id) = self.free.pop() {
            id
        } else {
            self.slots.push(Rpc::default());
            (self.slots.len() - 1) as u32
        }
    }

    /// RPC slots allocated so far (in flight or free for reuse).
    pub fn slots(&self) -> usize {
        self.slots.len()
    }

    pub fn get(&self, id: u32) -> &Rpc {
        &self.slots[id as usize]
    }

    pub fn get_mut(&mut self, id: u32) -> &mut Rpc {
        &mut self.slots[id as usize]
    }

    /// Take the RPC out (for processing) leaving an empty one in its slot.
    pub fn take(&mut self, id: u32) -> Rpc {
        std::mem::take(&mut self.slots[id as usize])
    }

    /// Return an RPC's slot, emptying it in place (its buffers stay for reuse).
    pub fn free(&mut self, id: u32) {
        self.slots[id as usize].reset();
        self.free.push(id);
    }

    /// Return an RPC's slot; `spare` gives back its buffers for reuse.
    pub fn release(&mut self, id: u32, mut spare: Rpc) {
        spare.reset();
        self.slots[id as usize] = spare;
        self.free.push(id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{MessageIdKind, ProtocolConfig, Router, Signing, Version};

    fn wire() -> WireSizes {
        let p: ProtocolConfig = serde_json::from_value(serde_json::json!({
            "router": "gossipsub", "version": "1.1", "D": 6, "D_lo": 5, "D_hi": 12,
            "D_lazy": 6, "D_score": 4, "D_out": 2, "heartbeat_ns": 1, "heartbeat_initial_delay_ns": 1,
            "history_length": 5, "history_gossip": 3, "gossip_factor": 0.25,
            "fanout_ttl_ns": 1, "seen_ttl_ns": 1, "flood_publish": false, "prune_backoff_ns": 1,
            "unsubscribe_backoff_ns": 1, "backoff_clear_ticks": 15, "backoff_slack_ticks": 2, "max_ihave_length": 5000, "max_ihave_messages": 10,
            "gossip_retransmission": 3, "iwant_followup_ns": 1, "peer_outbound_queue": 32, "validate_queue": 32, "signing": "strict-sign",
            "message_id": "go", "topic_name_len": 20
        }))
        .unwrap();
        assert_eq!(
            (p.router, p.version, p.signing, p.message_id),
            (
                Router::Gossipsub,
                Version::V1_1,
                Signing::StrictSign,
                MessageIdKind::Go
            )
        );
        WireSizes::new(&p)
    }

    #[test]
    fn a_lone_message_is_charged_fully_to_payload() {
        let mut rpc = Rpc::default();
        rpc.msgs.push(MsgRef { msg: 0, hop: 0 });
        rpc.measure(&wire(), |_| 1024);
        assert_eq!(rpc.bytes[Kind::Payload as usize], 1170);
        assert_eq!(rpc.total_bytes(), 1170);
    }

    #[test]
    fn piggybacked_parts_add_up_to_the_wire_size() {
        let w = wire();
        let mut rpc = Rpc::default();
        rpc.control.graft.push(0);
        rpc.control.ihave.push((0, vec![1, 2, 3]));
        rpc.measure(&w, |_| 0);
        let body = w.graft_entry() + w.ihave_entry(3);
        assert_eq!(
            rpc.total_bytes(),
            WireSizes::frame(WireSizes::control_field(body))
        );
        assert_eq!(rpc.bytes[Kind::Ihave as usize], w.ihave_entry(3));
        assert_eq!(rpc.items[Kind::Ihave as usize], 3);
    }

    #[test]
    fn entries_are_counted_as_go_s_protobuf_has_them() {
        // go's `pb.RPC`: one `Message` per message, one `SubOpts` per subscription, one
        // `ControlIHave` per topic (many ids), one `ControlIWant` and one `ControlIDontWant`
        // per RPC (`handleIHave`, `Preprocess` build one each), one `ControlGraft` or
        // `ControlPrune` per topic; the fork's `ControlIAnnounce` and `ControlINeed` name
        // one message each.
        let mut rpc = Rpc::default();
        rpc.msgs.push(MsgRef { msg: 0, hop: 0 });
        rpc.msgs.push(MsgRef { msg: 1, hop: 0 });
        rpc.subscribe.push(0);
        let c = &mut rpc.control;
        c.ihave = vec![(0, vec![1, 2, 3]), (1, vec![4, 5])];
        c.iwant = vec![6, 7, 8, 9];
        c.idontwant = vec![10, 11];
        c.graft = vec![0];
        c.prune = vec![Prune::new(0, 60), Prune::new(1, 60)];
        c.iannounce = vec![(0, 12), (0, 13), (1, 14)];
        c.ineed = vec![15, 16];
        rpc.measure(&wire(), |_| 100);
        let by_kind = |k: Kind| (rpc.items[k as usize], rpc.entries[k as usize]);
        assert_eq!(by_kind(Kind::Payload), (2, 2));
        assert_eq!(by_kind(Kind::Subscribe), (1, 1));
        assert_eq!(by_kind(Kind::Ihave), (5, 2));
        assert_eq!(by_kind(Kind::Iwant), (4, 1));
        assert_eq!(by_kind(Kind::Idontwant), (2, 1));
        assert_eq!(by_kind(Kind::Graft), (1, 1));
        assert_eq!(by_kind(Kind::Prune), (2, 2));
        assert_eq!(by_kind(Kind::Iannounce), (3, 3));
        assert_eq!(by_kind(Kind::Ineed), (2, 2));
        // A lone forward (the fast path) has one payload entry and nothing else.
        let mut lone = Rpc::default();
        lone.msgs.push(MsgRef { msg: 0, hop: 0 });
        lone.measure(&wire(), |_| 100);
        assert_eq!(lone.entries.iter().sum::<u32>(), 1);
    }
}
