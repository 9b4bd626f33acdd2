//! Sizes of RPCs as go-libp2p-pubsub puts them on the wire.
//!
//! Every RPC is a length-delimited protobuf (`uvarint length || RPC`) on the peer's
//! stream (`pb/rpc.proto`). We never build the bytes; we only count them, field by
//! field, so bandwidth and traffic figures follow the real encoding. Hand-checked
//! totals are in `protocol-notes.md` §5 and pinned by the tests below.

use crate::config::{MessageIdKind, ProtocolConfig, Router, Signing, Version};

/// Bytes of a protobuf varint holding `v`.
pub fn varint_len(v: u64) -> u64 {
    let bits = 64 - (v | 1).leading_zeros() as u64;
    bits.div_ceil(7)
}

/// A length-delimited field: tag (1 byte for field numbers < 16) + length + body.
pub fn field_len(body: u64) -> u64 {
    1 + varint_len(body) + body
}

/// The constant sizes one scenario needs, computed once.
#[derive(Clone, Debug)]
pub struct WireSizes {
    /// Bytes of one message id inside IHAVE/IWANT/IDONTWANT (tag + length + id).
    pub id_field: u64,
    topic_field: u64,
    /// `Message` bytes other than `data`: from, seqno, topic, signature (key inlined).
    message_overhead: u64,
    /// `SubOpts` bytes of the partial-message flags, see `subopts_flags`.
    subopts_flags: u64,
    /// v1.3 partial messages: the group id field, a parts bitmap and one part with
    /// its overhead, in bytes (zero without partial messages).
    group_field: u64,
    bitmap_len: u64,
    part_bytes: u64,
}

/// go-libp2p-pubsub v0.17.0 sets both partial-message flags of every `SubOpts` it sends,
/// false or not (`requestsPartial` = 3 and `supportsSendingPartial` = 4: a tag byte and a
/// one-byte bool each; comm.go `getHelloPacket`, pubsub.go `announce`). The code our 1.0
/// follows (v0.1.1, 2019) and the v2.0 fork (v0.13 era) predate the extension.
fn subopts_flags(protocol: &ProtocolConfig) -> u64 {
    match (protocol.router, protocol.version) {
        (Router::Gossipsub, Version::V1_0 | Version::V2_0) => 0,
        _ => 2 * 2,
    }
}

/// Bytes of an Ed25519 peer id, the go-libp2p default identity.
const PEER_ID_LEN: u64 = 38;
const SEQNO_LEN: u64 = 8;
const ED25519_SIGNATURE_LEN: u64 = 64;

/// Bytes of one `PeerInfo` in a PRUNE's `peers` field: the peer id and its signed peer
/// record (a libp2p envelope around a `PeerRecord`), as go sends them when the
/// certified address book has the record (identify fills it by default). The record
/// lists two addresses, IPv4 TCP and IPv4 QUIC-v1, a typical node's.
pub fn px_record_field() -> u64 {
    let tcp_addr = 1 + 4 + 1 + 2; // /ip4 code, address, /tcp code, port
    let quic_addr = 1 + 4 + 2 + 2 + 2; // /ip4, address, /udp (2-byte code), port, /quic-v1
    let peer_record = field_len(PEER_ID_LEN)
        + (1 + 9) // seq: a Unix time in nanoseconds, a 9-byte varint
        + field_len(field_len(tcp_addr))
        + field_len(field_len(quic_addr));
    let public_key = 2 + field_len(32); // key type + Ed25519 key bytes
    let envelope = field_len(public_key)
        + field_len(2) // payload type: the 2-byte multicodec of libp2p-peer-record
        + field_len(peer_record)
        + field_len(ED25519_SIGNATURE_LEN);
    field_len(field_len(PEER_ID_LEN) + field_len(envelope))
}

impl WireSizes {
    pub fn new(protocol: &ProtocolConfig) -> Self {
        let id_len = match protocol.message_id {
            MessageIdKind::Go => PEER_ID_LEN + SEQNO_LEN,
            MessageIdKind::Ethereum => 20,
        };
        let topic_field = field_len(protocol.topic_name_len as u64);
        let message_overhead = match protocol.signing {
            // from, seqno and signature; `key` is omitted because an Ed25519 key is
            // inlined in the peer id.
            Signing::StrictSign => {
                field_len(PEER_ID_LEN)
                    + field_len(SEQNO_LEN)
                    + field_len(ED25519_SIGNATURE_LEN)
                    + topic_field
            }
            Signing::StrictNoSign => topic_field,
        };
        Self {
            id_field: field_len(id_len),
            topic_field,
            subopts_flags: subopts_flags(protocol),
            message_overhead,
            group_field: 0,
            bitmap_len: 0,
            part_bytes: 0,
        }
    }

    /// Sizes for partial messages of `parts` parts of `part_bytes` bytes each (with
    /// their overhead) and group ids of `group_id_len` bytes. The metadata is go's
    /// `bitmap.Bitmap` of the parts held, ceil(parts / 8) bytes
    /// (partialmessages/bitmap/bitmap.go:NewBitmapWithOnesCount); a partial message is
    /// that bitmap of the parts it carries followed by the parts, in index order.
    pub fn with_partial(mut self, parts: u64, part_bytes: u64, group_id_len: u64) -> Self {
        self.group_field = field_len(group_id_len);
        self.bitmap_len = parts.div_ceil(8);
        self.part_bytes = part_bytes;
        self
    }

    /// Bytes of an RPC's `partial` field (`PartialMessagesExtension`, RPC field 10, a
    /// one-byte tag) with `parts` parts (0: no `partialMessage` field) and with or
    /// without `partsMetadata`, split as charged: (to `partial`: the field's tag and
    /// length, topic, group id and data; to `partsmeta`: the metadata field). Without
    /// parts everything is charged to `partsmeta`.
    pub fn partial_field(&self, parts: u64, meta: bool) -> (u64, u64) {
        let data_f = if parts > 0 {
            field_len(self.bitmap_len + parts * self.part_bytes)
        } else {
            0
        };
        let meta_f = if meta { field_len(self.bitmap_len) } else { 0 };
        let field = field_len(self.topic_field + self.group_field + data_f + meta_f);
        if parts > 0 {
            (field - meta_f, meta_f)
        } else {
            (0, field)
        }
    }

    /// Bytes of `ControlMessage.extensions` = `ControlExtensions{partialMessages:
    /// true}`: tag and length, then field 10's tag (0x50) and a one-byte bool
    /// (rpc.proto; extensions.go:PeerExtensions.ExtendRPC).
    pub fn extensions_entry() -> u64 {
        field_len(2)
    }

    /// Bytes of the `publish` field carrying one message with `data_len` payload bytes.
    pub fn publish_field(&self, data_len: u64) -> u64 {
        field_len(self.message_overhead + field_len(data_len))
    }

    /// Bytes of one `ControlIHave` entry (inside the control message).
    pub fn ihave_entry(&self, ids: u64) -> u64 {
        field_len(self.topic_field + ids * self.id_field)
    }

    /// Bytes of the `ControlIWant` entry (IDONTWANT has the same shape).
    pub fn id_list_entry(&self, ids: u64) -> u64 {
        field_len(ids * self.id_field)
    }

    /// Bytes of one message id inside an id list.
    pub fn id_field(&self) -> u64 {
        self.id_field
    }

    /// Bytes of one `ControlGraft` entry.
    pub fn graft_entry(&self) -> u64 {
        field_len(self.topic_field)
    }

    /// Bytes of one `ControlPrune` entry with `px` peer-exchange records; `backoff_s` is
    /// omitted when zero (v1.0 peers).
    pub fn prune_entry(&self, backoff_s: u64, px: u64) -> u64 {
        let backoff = if backoff_s > 0 {
            1 + varint_len(backoff_s)
        } else {
            0
        };
        field_len(self.topic_field + backoff + px * px_record_field())
    }

    /// Bytes of one v2.0 `ControlIAnnounce` entry (topic + message id).
    pub fn announce_entry(&self) -> u64 {
        field_len(self.topic_field + self.id_field)
    }

    /// Bytes of one `SubOpts` entry (subscribe flag + topic + partial-message flags).
    pub fn subscription_entry(&self) -> u64 {
        field_len(2 + self.topic_field + self.subopts_flags)
    }

    /// The `control` field wrapping `body` bytes of control entries.
    pub fn control_field(body: u64) -> u64 {
        field_len(body)
    }

    /// The uvarint length prefix framing an RPC of `body` bytes.
    pub fn frame(body: u64) -> u64 {
        varint_len(body) + body
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Router, Version};

    fn protocol(signing: Signing, message_id: MessageIdKind) -> ProtocolConfig {
        ProtocolConfig {
            router: Router::Gossipsub,
            version: Version::V1_1,
            D: 6,
            D_lo: 5,
            D_hi: 12,
            D_lazy: 6,
            D_score: 4,
            D_out: 2,
            heartbeat_ns: 1_000_000_000,
            heartbeat_initial_delay_ns: 100_000_000,
            history_length: 5,
            history_gossip: 3,
            gossip_factor: 0.25,
            fanout_ttl_ns: 60_000_000_000,
            seen_ttl_ns: 120_000_000_000,
            flood_publish: false,
            prune_backoff_ns: 60_000_000_000,
            unsubscribe_backoff_ns: 10_000_000_000,
            backoff_clear_ticks: 15,
            backoff_slack_ticks: 2,
            max_ihave_length: 5000,
            max_ihave_messages: 10,
            gossip_retransmission: 3,
            iwant_followup_ns: 3_000_000_000,
            peer_outbound_queue: 32,
            validate_queue: 32,
            signing,
            message_id,
            topic_name_len: 20,
            idontwant_threshold: 1024,
            D_announce: 0,
            ineed_timeout_ns: 400_000_000,
            announce_own: Default::default(),
            idontwant_on_publish: None,
            idontwant_to_sender: None,
            direct_peers: Vec::new(),
            peer_exchange: false,
            prune_peers: 16,
            score: None,
        }
    }

    /// A `SubOpts` for a 20-byte topic: subscribe (tag and bool, 2 bytes) and topicid
    /// (tag, length and 20 bytes: 22) make 24 body bytes, 26 framed; go v0.17.0 adds
    /// requestsPartial and supportsSendingPartial (2 bytes each) for 30. v0.1.1 (our 1.0)
    /// and the v2.0 fork do not.
    #[test]
    fn subscription_entries_carry_go_v0_17_partial_message_flags() {
        let mut p = protocol(Signing::StrictSign, MessageIdKind::Go);
        assert_eq!(WireSizes::new(&p).subscription_entry(), 30);
        p.version = Version::V1_2;
        assert_eq!(WireSizes::new(&p).subscription_entry(), 30);
        p.router = Router::Floodsub;
        assert_eq!(WireSizes::new(&p).subscription_entry(), 30);
        p.router = Router::Gossipsub;
        p.version = Version::V1_0;
        assert_eq!(WireSizes::new(&p).subscription_entry(), 26);
        p.version = Version::V2_0;
        assert_eq!(WireSizes::new(&p).subscription_entry(), 26);
    }

    #[test]
    fn varints() {
        assert_eq!(varint_len(0), 1);
        assert_eq!(varint_len(127), 1);
        assert_eq!(varint_len(128), 2);
        assert_eq!(varint_len(16_383), 2);
        assert_eq!(varint_len(16_384), 3);
        assert_eq!(varint_len(2 * 1024 * 1024 - 1), 3);
    }

    // Totals worked out by hand from rpc.proto in protocol-notes.md §5.
    #[test]
    fn signed_1024_byte_message_is_1170_bytes_framed() {
        let w = WireSizes::new(&protocol(Signing::StrictSign, MessageIdKind::Go));
        assert_eq!(WireSizes::frame(w.publish_field(1024)), 1170);
    }

    #[test]
    fn one_id_ihave_and_iwant_with_go_ids() {
        let w = WireSizes::new(&protocol(Signing::StrictSign, MessageIdKind::Go));
        let ihave = WireSizes::frame(WireSizes::control_field(w.ihave_entry(1)));
        let iwant = WireSizes::frame(WireSizes::control_field(w.id_list_entry(1)));
        assert_eq!((ihave, iwant), (75, 53));
        let full = WireSizes::frame(WireSizes::control_field(w.ihave_entry(5000)));
        assert_eq!(full, 240_033);
    }

    #[test]
    fn one_id_ihave_and_iwant_with_ethereum_ids() {
        let w = WireSizes::new(&protocol(Signing::StrictNoSign, MessageIdKind::Ethereum));
        let ihave = WireSizes::frame(WireSizes::control_field(w.ihave_entry(1)));
        let iwant = WireSizes::frame(WireSizes::control_field(w.id_list_entry(1)));
        assert_eq!((ihave, iwant), (49, 27));
    }

    #[test]
    fn graft_and_prune() {
        let w = WireSizes::new(&protocol(Signing::StrictSign, MessageIdKind::Go));
        assert_eq!(
            WireSizes::frame(WireSizes::control_field(w.graft_entry())),
            27
        );
        assert_eq!(
            WireSizes::frame(WireSizes::control_field(w.prune_entry(60, 0))),
            29
        );
    }

    // Worked out by hand: PeerRecord = 40 (peer id) + 10 (seq) + 12 (TCP address) + 15
    // (QUIC address) = 77; envelope = 38 (key) + 4 (type) + 79 (record) + 66
    // (signature) = 187; PeerInfo = 40 + 190 = 230; in PRUNE 1 + 2 + 230 = 233. A PRUNE
    // with 16 records: entry body 22 (topic) + 2 (backoff) + 16 x 233 = 3752, entry
    // 3755, control 3758, framed 3760.
    #[test]
    fn prune_with_sixteen_peer_exchange_records() {
        assert_eq!(px_record_field(), 233);
        let w = WireSizes::new(&protocol(Signing::StrictSign, MessageIdKind::Go));
        let framed = WireSizes::frame(WireSizes::control_field(w.prune_entry(60, 16)));
        assert_eq!(framed, 3760);
    }

    /// Partial RPCs for a 20-byte topic, 32-byte group ids and 48 parts of 2,048 B
    /// (a 6-byte bitmap), worked out by hand from rpc.proto: topic field 22, group field
    /// 34, metadata field 8. Metadata only: E = 64, field 66, framed 67. One part: data
    /// 1 + 2 + 2,054; E = 2,113; field 2,116; framed 2,118 (2,126 with metadata).
    #[test]
    fn partial_rpcs_of_go_v0_17_0() {
        let mut p = protocol(Signing::StrictNoSign, MessageIdKind::Ethereum);
        p.version = Version::V1_3;
        let w = WireSizes::new(&p).with_partial(48, 2048, 32);
        let framed = |parts: u64, meta: bool| {
            let (data, metadata) = w.partial_field(parts, meta);
            WireSizes::frame(data + metadata)
        };
        assert_eq!(framed(0, true), 67);
        assert_eq!(w.partial_field(0, true), (0, 66));
        assert_eq!(framed(1, false), 2118);
        assert_eq!(framed(1, true), 2126);
        assert_eq!(w.partial_field(1, true).1, 8);
        assert_eq!(framed(5, false), 10_310);
        assert_eq!(framed(8, false), 16_457);
        assert_eq!(WireSizes::extensions_entry(), 4);
    }
}
