//! The kinds of traffic and the control parts of an RPC, in one table every layer reads.
//!
//! `Kind` numbers the columns of the `traffic` and `drops` tables; `KINDS` says, for
//! each kind, its name in those tables, whether it rides in the RPC's `control` field,
//! and how its entries are sized on the wire. Rows are in framing-attribution order:
//! an RPC's framing and `control` wrapper are charged to the first kind present, so
//! the kinds always add up to the bytes on the wire.
//!
//! A new control message is a `Kind` variant, a `Control` field, a row here, and the
//! router that sends and handles it.

use crate::partial::PartialRpc;
use crate::wire::WireSizes;

/// Traffic kinds, in the order of the `traffic` table's columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    Payload = 0,
    Ihave = 1,
    Iwant = 2,
    Graft = 3,
    Prune = 4,
    Idontwant = 5,
    Iannounce = 6,
    Ineed = 7,
    Subscribe = 8,
    /// v1.3 partial messages: an RPC's `partial` field with parts (items: parts).
    Partial = 9,
    /// The parts metadata of a partial RPC; all of a metadata-only one (items: metadata).
    PartsMeta = 10,
    /// The v1.3 extensions control message (`ControlExtensions`).
    Extensions = 11,
}

pub const KIND_COUNT: usize = 12;

/// Items (ids or entries) and body bytes of one kind in an RPC, from its control part
/// and its count of subscription entries.
pub type Sizing = fn(&Control, u64, &WireSizes) -> (u64, u64);

/// One row of the kind table.
pub struct KindSpec {
    pub kind: Kind,
    /// Its name in the traffic and drops tables.
    pub name: &'static str,
    /// Carried inside the RPC's `control` field (so it shares the field's wrapper).
    pub in_control: bool,
    /// How its part of an RPC is sized; None for the payload, whose size comes from
    /// the message table.
    pub sizing: Option<Sizing>,
    /// Its entries in an RPC as go's protobuf counts them (a `ControlIHave` with many
    /// ids is one entry); None for the payload (one `Message` per message).
    pub entries: Option<Entries>,
}

/// Entries of one kind in an RPC, from its control part and its subscription entries.
pub type Entries = fn(&Control, u64) -> u64;

/// One entry listing every id (go's one `ControlIWant` or `ControlIDontWant` per RPC).
fn one_list(ids: &[u32]) -> u64 {
    u64::from(!ids.is_empty())
}

/// Every kind, in framing-attribution order.
pub const KINDS: [KindSpec; KIND_COUNT] = [
    KindSpec {
        kind: Kind::Payload,
        name: "payload",
        in_control: false,
        sizing: None,
        entries: None,
    },
    KindSpec {
        kind: Kind::Subscribe,
        name: "subscribe",
        in_control: false,
        // A `SubOpts` costs the same either way: go always writes its subscribe flag.
        sizing: Some(|_, subopts, w| (subopts, subopts * w.subscription_entry())),
        entries: Some(|_, subopts| subopts),
    },
    KindSpec {
        kind: Kind::Graft,
        name: "graft",
        in_control: true,
        sizing: Some(|c, _, w| {
            let n = c.graft.len() as u64;
            (n, n * w.graft_entry())
        }),
        entries: Some(|c, _| c.graft.len() as u64),
    },
    KindSpec {
        kind: Kind::Prune,
        name: "prune",
        in_control: true,
        sizing: Some(|c, _, w| {
            let prunes = &c.prune;
            let bytes = prunes
                .iter()
                .map(|p| w.prune_entry(p.backoff_s, p.px.len() as u64))
                .sum();
            (prunes.len() as u64, bytes)
        }),
        entries: Some(|c, _| c.prune.len() as u64),
    },
    KindSpec {
        kind: Kind::Ihave,
        name: "ihave",
        in_control: true,
        // One entry per topic, each with its ids.
        sizing: Some(|c, _, w| {
            c.ihave.iter().fold((0, 0), |(n, b), (_, ids)| {
                let ids = ids.len() as u64;
                (n + ids, b + w.ihave_entry(ids))
            })
        }),
        entries: Some(|c, _| c.ihave.len() as u64),
    },
    KindSpec {
        kind: Kind::Iwant,
        name: "iwant",
        in_control: true,
        sizing: Some(|c, _, w| id_list(&c.iwant, w)),
        entries: Some(|c, _| one_list(&c.iwant)),
    },
    KindSpec {
        kind: Kind::Idontwant,
        name: "idontwant",
        in_control: true,
        sizing: Some(|c, _, w| id_list(&c.idontwant, w)),
        entries: Some(|c, _| one_list(&c.idontwant)),
    },
    KindSpec {
        kind: Kind::Iannounce,
        name: "iannounce",
        in_control: true,
        sizing: Some(|c, _, w| {
            let n = c.iannounce.len() as u64;
            (n, n * w.announce_entry())
        }),
        entries: Some(|c, _| c.iannounce.len() as u64),
    },
    KindSpec {
        kind: Kind::Ineed,
        name: "ineed",
        in_control: true,
        // One `ControlINeed` entry per id (specs PR #653).
        sizing: Some(|c, _, w| {
            let n = c.ineed.len() as u64;
            (n, n * w.id_list_entry(1))
        }),
        entries: Some(|c, _| c.ineed.len() as u64),
    },
    // A partial RPC travels alone (go's partialMessageRouter.SendRPC), so its framing
    // goes to `partial` when it has parts, else to `partsmeta`.
    KindSpec {
        kind: Kind::Partial,
        name: "partial",
        in_control: false,
        sizing: Some(|c, _, w| match &c.partial {
            Some(p) if p.data != 0 => {
                let parts = u64::from(p.data.count_ones());
                (parts, w.partial_field(parts, p.meta.is_some()).0)
            }
            _ => (0, 0),
        }),
        entries: Some(|c, _| u64::from(c.partial.is_some_and(|p| p.data != 0))),
    },
    KindSpec {
        kind: Kind::PartsMeta,
        name: "partsmeta",
        in_control: false,
        sizing: Some(|c, _, w| match &c.partial {
            Some(p) => {
                let parts = u64::from(p.data.count_ones());
                (
                    u64::from(p.meta.is_some()),
                    w.partial_field(parts, p.meta.is_some()).1,
                )
            }
            None => (0, 0),
        }),
        entries: Some(|c, _| u64::from(c.partial.is_some_and(|p| p.meta.is_some()))),
    },
    KindSpec {
        kind: Kind::Extensions,
        name: "extensions",
        in_control: true,
        sizing: Some(|c, _, _| {
            if c.extensions {
                (1, WireSizes::extensions_entry())
            } else {
                (0, 0)
            }
        }),
        entries: Some(|c, _| u64::from(c.extensions)),
    },
];

/// One entry listing all the ids (IWANT, IDONTWANT), or nothing.
fn id_list(ids: &[u32], w: &WireSizes) -> (u64, u64) {
    if ids.is_empty() {
        return (0, 0);
    }
    (ids.len() as u64, w.id_list_entry(ids.len() as u64))
}

/// Kind names, indexed by `Kind`.
pub const KIND_NAMES: [&str; KIND_COUNT] = names_by_kind();

const fn names_by_kind() -> [&'static str; KIND_COUNT] {
    let mut names = [""; KIND_COUNT];
    let mut i = 0;
    while i < KIND_COUNT {
        names[KINDS[i].kind as usize] = KINDS[i].name;
        i += 1;
    }
    names
}

/// One `ControlPrune` entry.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Prune {
    pub topic: u16,
    /// Backoff in seconds; 0 = field omitted (v1.0).
    pub backoff_s: u64,
    /// Peer exchange: nodes the pruned peer may connect to instead.
    pub px: Vec<u32>,
}

impl Prune {
    pub fn new(topic: u16, backoff_s: u64) -> Self {
        Self {
            topic,
            backoff_s,
            px: Vec::new(),
        }
    }
}

/// The control part of an RPC: one field per control kind.
#[derive(Clone, Debug, Default)]
pub struct Control {
    /// (topic, message ids) per IHAVE entry.
    pub ihave: Vec<(u16, Vec<u32>)>,
    pub iwant: Vec<u32>,
    pub graft: Vec<u16>,
    pub prune: Vec<Prune>,
    /// v1.2: ids the sender already has (do not send them).
    pub idontwant: Vec<u32>,
    /// v2.0: (topic, id) of messages the sender can serve on request.
    pub iannounce: Vec<(u16, u32)>,
    /// v2.0: ids the sender asks for after an IANNOUNCE.
    pub ineed: Vec<u32>,
    /// v1.3: the sender advertises the partial-messages extension (`ControlExtensions`).
    pub extensions: bool,
    /// v1.3 partial messages: the RPC's `partial` field (not part of `control` on the
    /// wire, carried here so the kind table sizes it).
    pub partial: Option<PartialRpc>,
}

impl Control {
    pub fn is_empty(&self) -> bool {
        self.ihave.is_empty()
            && self.iwant.is_empty()
            && self.graft.is_empty()
            && self.prune.is_empty()
            && self.idontwant.is_empty()
            && self.iannounce.is_empty()
            && self.ineed.is_empty()
            && !self.extensions
            && self.partial.is_none()
    }

    pub(crate) fn clear(&mut self) {
        self.ihave.clear();
        self.iwant.clear();
        self.graft.clear();
        self.prune.clear();
        self.idontwant.clear();
        self.iannounce.clear();
        self.ineed.clear();
        self.extensions = false;
        self.partial = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_one_row_and_names_follow_the_traffic_columns() {
        let mut rows = [0; KIND_COUNT];
        for spec in &KINDS {
            rows[spec.kind as usize] += 1;
        }
        assert_eq!(rows, [1; KIND_COUNT]);
        assert_eq!(
            KIND_NAMES,
            [
                "payload",
                "ihave",
                "iwant",
                "graft",
                "prune",
                "idontwant",
                "iannounce",
                "ineed",
                "subscribe",
                "partial",
                "partsmeta",
                "extensions"
            ]
        );
    }
}
