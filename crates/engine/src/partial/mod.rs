//! Gossipsub v1.3 partial messages, as go-libp2p-pubsub v0.17.0 implements the extension
//! (`partialmessages/partialmsgs.go`, `extensions.go`) and with go's own test application
//! as the rule for what to send (`gossipsub_test.go:minimalTestPartialMessage`; go leaves
//! that to the application).
//!
//! Every message of the workload is a group of `parts` parts. Two layers, as in go:
//!
//! - the **library** (`library.rs`): per node, per group, the peers it tracks with their
//!   state, the group's TTL in heartbeats, and the limits on groups peers open;
//! - the **application** (`app.rs`): per node, per group, the parts it holds (`have`),
//!   and the go-reference rule deciding, per tracked peer, which parts and which
//!   metadata to send.
//!
//! `flow.rs` ties them to the simulation: publishing a group, receiving a partial RPC,
//! a full message reaching a node that speaks the extension, heartbeat gossip and TTL.
//! A group id is the message's index; a set of parts is a `u128` (bit i: part i).

mod app;
mod flow;
mod library;

use rustc_hash::FxHashMap;
use serde::Deserialize;

use crate::config::{Config, OutputMode, Router, Time, Version};
use crate::error::EngineError;
pub(crate) use library::LibGroup;

/// A set of parts: bit i set when part i is in it.
pub type PartSet = u128;

/// The most parts a group may have (a `PartSet`'s bits).
pub const MAX_PARTS: u32 = 128;

/// go's minimum group TTL in heartbeats (partialmsgs.go: `minGroupTTL`).
pub const MIN_GROUP_TTL: u32 = 3;

/// What a node does with the extension on every topic (go's `Join` options:
/// pubsub.go `RequestPartialMessages`, `SupportsPartialMessages`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// No extension: full messages only.
    None,
    /// Sends parts to peers that request them; takes full messages itself.
    Supports,
    /// Requests partial messages (and supports sending them).
    Requests,
}

impl Role {
    pub fn code(self) -> u8 {
        self as u8
    }
}

/// The partial-messages part of the engine's configuration.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PartialConfig {
    pub parts: u32,
    /// Bytes of one part plus the bytes carried with it (e.g. a KZG proof).
    pub part_bytes: u64,
    pub group_id_size: u64,
    /// Send every held part to a requesting peer whose metadata is unknown.
    pub eager_push: bool,
    /// A node that completes a group publishes its full message too.
    pub full_fallback: bool,
    /// go applies max(this, 3) (partialmsgs.go:Init).
    pub group_ttl_heartbeats: u32,
    pub peer_group_limit_per_topic: u32,
    pub peer_group_limit_per_peer: u32,
    /// Each node's role.
    pub roles: Vec<Role>,
    /// Per message (group), per node: the parts held before it is published, as
    /// lowercase hex (python `backends/partial_plan.py`).
    pub held: Vec<Vec<String>>,
}

impl PartialConfig {
    pub(crate) fn check(&self, config: &Config) -> Result<(), EngineError> {
        let p = &config.protocol;
        if p.router != Router::Gossipsub || p.version != Version::V1_3 {
            return Err(EngineError::config(
                "partial",
                "partial messages need gossipsub version 1.3",
            ));
        }
        if config.output.mode == OutputMode::Aggregate {
            return Err(EngineError::config(
                "partial",
                "partial messages are reported per (group, node): use the full output mode",
            ));
        }
        if self.parts == 0 || self.parts > MAX_PARTS {
            return Err(EngineError::config(
                "partial.parts",
                format!("parts must be in 1..={MAX_PARTS}, got {}", self.parts),
            ));
        }
        if self.roles.len() != config.nodes as usize {
            return Err(EngineError::config(
                "partial.roles",
                format!("{} roles for {} nodes", self.roles.len(), config.nodes),
            ));
        }
        if let Some(row) = self.held.iter().find(|r| r.len() != config.nodes as usize) {
            return Err(EngineError::config(
                "partial.held",
                format!("a group lists {} nodes, not {}", row.len(), config.nodes),
            ));
        }
        Ok(())
    }

    /// Every part of a group.
    pub fn all(&self) -> PartSet {
        all_parts(self.parts)
    }

    /// The TTL go gives a group: max(GroupTTLByHeatbeat, minGroupTTL).
    pub fn ttl(&self) -> u32 {
        self.group_ttl_heartbeats.max(MIN_GROUP_TTL)
    }
}

pub fn all_parts(parts: u32) -> PartSet {
    if parts >= MAX_PARTS {
        PartSet::MAX
    } else {
        (1u128 << parts) - 1
    }
}

/// The `partial` field of an RPC (`PartialMessagesExtension`, rpc.proto): a group's
/// parts (`data`, empty: no `partialMessage` field) and the sender's parts metadata.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PartialRpc {
    pub topic: u16,
    pub group: u32,
    pub data: PartSet,
    pub meta: Option<PartSet>,
}

/// What one node knows of one group as the application: its parts and the counts the
/// `partial` table reports.
#[derive(Clone, Debug, Default)]
pub struct AppGroup {
    pub have: PartSet,
    /// Parts held when the node learned the group (its mempool).
    pub held: PartSet,
    pub complete_at: Option<Time>,
    /// Hops from the publisher of the copy that completed it.
    pub hop: u16,
    pub parts_recv: u32,
    pub parts_dup: u32,
    pub full_recv: u32,
    pub bytes_partial_recv: u64,
}

/// One node's partial-message state: the library's and the application's.
#[derive(Default)]
pub(crate) struct PartialNode {
    /// The library's groups (partialmsgs.go `statePerTopicPerGroup`), by group id.
    pub groups: FxHashMap<u32, LibGroup>,
    /// Per topic: groups peers opened at this node, in total and per peer link
    /// (partialmsgs.go `peerInitiatedGroupCounter`).
    pub opened: FxHashMap<u16, (u32, FxHashMap<u32, u32>)>,
    /// The application's groups, kept for the whole run (they are its data).
    pub apps: FxHashMap<u32, AppGroup>,
}

/// Every node's partial-message state.
pub(crate) struct Partial {
    pub cfg: PartialConfig,
    /// `held[group * nodes + node]`: parts held before the group is published.
    held: Vec<PartSet>,
    nodes_count: usize,
    pub nodes: Vec<PartialNode>,
    /// Links whose peer advertised the extension (extensions.go `peerExtensions`).
    pub ext_peer: rustc_hash::FxHashSet<u32>,
    /// Groups whose state a node deleted at a heartbeat (TTL or no peers left).
    pub expired: u64,
}

impl Partial {
    pub fn new(cfg: &PartialConfig, nodes: u32) -> Result<Self, EngineError> {
        let mut held = Vec::with_capacity(cfg.held.len() * nodes as usize);
        for row in &cfg.held {
            for hex in row {
                let bits = PartSet::from_str_radix(hex, 16).map_err(|_| {
                    EngineError::config("partial.held", format!("{hex:?} is not a hex set"))
                })?;
                held.push(bits & cfg.all());
            }
        }
        let mut cfg = cfg.clone();
        cfg.held = Vec::new(); // parsed above; the strings are not needed any more
        Ok(Self {
            cfg,
            held,
            nodes_count: nodes as usize,
            nodes: (0..nodes).map(|_| PartialNode::default()).collect(),
            ext_peer: Default::default(),
            expired: 0,
        })
    }

    pub fn role(&self, node: u32) -> Role {
        self.cfg.roles[node as usize]
    }

    /// The parts `node` holds of `group` before anyone sends it any.
    pub fn mempool(&self, group: u32, node: u32) -> PartSet {
        self.held
            .get(group as usize * self.nodes_count + node as usize)
            .copied()
            .unwrap_or(0)
    }
}

/// The `partial` table: one row per (group, node) other than the group's publisher.
#[derive(Default)]
pub struct PartialRows {
    pub msg: Vec<u32>,
    pub node: Vec<u32>,
    pub role: Vec<u8>,
    pub parts: Vec<u32>,
    pub held: Vec<u32>,
    pub parts_recv: Vec<u32>,
    pub parts_dup: Vec<u32>,
    pub full_recv: Vec<u32>,
    /// -1: never complete.
    pub t_complete_ns: Vec<i64>,
    pub bytes_partial_recv: Vec<u64>,
}
