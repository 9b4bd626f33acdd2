//! The application rule `go-reference`: go-libp2p-pubsub v0.17.0's own test application
//! (gossipsub_test.go:minimalTestPartialMessage and the hooks of TestPartialMessages;
//! eager push from partialmessages/partialmsgs_test.go:testPartialMessage.publishActions),
//! with its two parts generalised to a set of parts. Metadata is the set of parts a node
//! has; the parts a peer lacks are what it wants.

use super::library::PeerPart;
use super::PartSet;

/// What to send one tracked peer when the node publishes the group (go's
/// `PublishActionsFn` for that peer): the parts the peer is not known to have, if it
/// requests partial messages and its metadata is known (with eager push, every held
/// part when it is not known yet); and the node's metadata if it changed since last
/// sent. Updates the peer's state as go's application does (the data is assumed
/// delivered).
pub fn action(
    have: PartSet,
    peer: &mut PeerPart,
    requests: bool,
    eager: bool,
) -> (PartSet, Option<PartSet>) {
    let mut data = 0;
    if requests {
        match peer.recvd {
            Some(known) => {
                data = have & !known;
                peer.recvd = Some(known | have);
            }
            None if eager => {
                data = have;
                peer.recvd = Some(have);
            }
            None => {}
        }
    }
    let meta = (peer.sent != Some(have)).then_some(have);
    if meta.is_some() {
        peer.sent = Some(have);
    }
    (data, meta)
}

/// What an incoming partial RPC did to the node's parts (go's `OnIncomingRPC`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Incoming {
    /// Parts the node did not have.
    pub new: PartSet,
    /// Parts it already had.
    pub dup: PartSet,
    /// Whether to publish the group again: new parts arrived, or the peer's metadata
    /// shows that one side has parts the other lacks.
    pub republish: bool,
}

/// Handle `data` and `meta` from `peer`: merge the metadata into what the peer is known
/// to have, take the new parts, and decide whether to publish again.
pub fn incoming(
    have: &mut PartSet,
    peer: &mut PeerPart,
    data: PartSet,
    meta: Option<PartSet>,
) -> Incoming {
    if let Some(m) = meta {
        peer.recvd = Some(peer.recvd.unwrap_or(0) | m);
    }
    let new = data & !*have;
    let dup = data & *have;
    *have |= data;
    let republish = if new != 0 {
        // The sender can infer that the node now has what it sent.
        peer.sent = Some(peer.sent.unwrap_or(0) | *have);
        true
    } else if let Some(m) = meta {
        (m & !*have) != 0 || (*have & !m) != 0
    } else {
        false
    };
    Incoming {
        new,
        dup,
        republish,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: PartSet = 0b1111;

    #[test]
    fn without_the_peers_metadata_only_metadata_goes_out() {
        let mut peer = PeerPart::default();
        assert_eq!(action(ALL, &mut peer, true, false), (0, Some(ALL)));
        // Unchanged metadata is not sent twice (go's `bytes.Equal(ps.sent, meta)`).
        assert_eq!(action(ALL, &mut peer, true, false), (0, None));
    }

    #[test]
    fn a_known_peer_gets_what_it_lacks_once() {
        let mut peer = PeerPart {
            recvd: Some(0b0011),
            sent: Some(ALL),
        };
        assert_eq!(action(ALL, &mut peer, true, false), (0b1100, None));
        assert_eq!(action(ALL, &mut peer, true, false), (0, None));
    }

    #[test]
    fn eager_push_sends_everything_held_to_an_unknown_requester() {
        let mut peer = PeerPart::default();
        assert_eq!(
            action(0b0101, &mut peer, true, true),
            (0b0101, Some(0b0101))
        );
        let mut supporter = PeerPart::default();
        assert_eq!(
            action(0b0101, &mut supporter, false, true),
            (0, Some(0b0101))
        );
    }

    #[test]
    fn incoming_parts_count_new_and_duplicate() {
        let (mut have, mut peer) = (0b0011, PeerPart::default());
        let got = incoming(&mut have, &mut peer, 0b0110, None);
        assert_eq!((got.new, got.dup, got.republish), (0b0100, 0b0010, true));
        assert_eq!((have, peer.sent), (0b0111, Some(0b0111)));
    }

    #[test]
    fn metadata_alone_republishes_only_on_a_difference() {
        let (mut have, mut peer) = (ALL, PeerPart::default());
        assert!(!incoming(&mut have, &mut peer, 0, Some(ALL)).republish);
        assert!(incoming(&mut have, &mut peer, 0, Some(0b0001)).republish);
        assert_eq!(peer.recvd, Some(ALL)); // merged, as go's bitmap OR
    }
}
