//! The sending side of a node: per-peer outbound queues and the shared uplink (the
//! state here; what a node does with it is `send.rs`).
//!
//! As in go-libp2p-pubsub, each peer has an outbound queue counted in RPCs
//! (`peer_outbound_queue`, 32 by default) that never blocks: when it is full the RPC is
//! dropped (DROP_RPC), its messages and gossip are lost, and its GRAFTs and PRUNEs are
//! kept to ride on the next RPC to that peer or the next heartbeat (go's
//! `doDropRPC` / `pushControl`). An RPC leaves the queue when the node starts writing it.
//!
//! The node's uplink is shared by its connections: it serves the connections with data
//! in turn, one chunk of at most `CHUNK` bytes each (round robin), FIFO within a
//! connection. So eight peers sent a large message at once receive it at about the same
//! time, as TCP's fair sharing would give, instead of one after the other.
//! Simplification: kernel socket buffers are not modelled, so queues fill a little
//! earlier than on a real host.
//!
//! With unlimited upload capacity nothing ever waits and RPCs leave at once.

use std::collections::VecDeque;

use crate::rpc::Control;

/// Bytes the uplink sends for one connection before serving the next.
pub const CHUNK: u64 = 16 * 1024;

/// The outbound queue of one connection.
#[derive(Default)]
pub struct LinkQueue {
    /// RPCs queued, the one being written first.
    pub(crate) rpcs: VecDeque<u32>,
    /// Bytes of the head RPC still to write (0: not started).
    pub(crate) head_left: u64,
    /// GRAFT/PRUNE of dropped RPCs, waiting for the next RPC or heartbeat.
    /// Boxed: it is rare, and links are many (100,000 nodes have millions of them).
    pub(crate) stash: Option<Box<Control>>,
}

/// The uplink of one node.
#[derive(Default)]
pub struct Uplink {
    /// Connections with queued RPCs, in service order.
    pub(crate) ring: VecDeque<u32>,
    /// The chunk being written: (link, bytes), if any.
    pub(crate) current: Option<(u32, u64)>,
}

pub struct Transport {
    pub links: Vec<LinkQueue>,
    pub uplinks: Vec<Uplink>,
}

impl Transport {
    pub fn new(nodes: usize, links: usize) -> Self {
        Self {
            links: (0..links).map(|_| LinkQueue::default()).collect(),
            uplinks: (0..nodes).map(|_| Uplink::default()).collect(),
        }
    }

    /// RPCs waiting on `link`, not counting one being written.
    pub fn waiting(&self, link: u32) -> usize {
        let q = &self.links[link as usize];
        q.rpcs.len() - usize::from(q.head_left > 0)
    }
}
