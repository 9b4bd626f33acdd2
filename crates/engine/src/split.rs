//! RPCs above go's size limit go out as several (go v0.17.0 `pubsub.go:split`, called by
//! `gossipsub.go:sendRPC` when `exceedsSizeLimits`): the messages packed in order into
//! RPCs of at most the limit, each yielded as soon as the next message would not fit,
//! then everything else (subscriptions and control) in one more RPC. Each part takes its
//! own place in the outbound queue and is read, and used, on its own. The v2.0 fork
//! splits too (`appendOrMergeRPC`); go-libp2p-pubsub v0.1.1 (version 1.0) does not.

use crate::config::Version;
use crate::inputs::data_size;
use crate::sim::Simulation;

/// go's `DefaultMaxMessageSize` (`pubsub.go`): 1 MiB. A single message above it goes out
/// alone (go would refuse it; the model runs as if the limit were raised for it).
pub const MAX_RPC_BYTES: u64 = 1 << 20;

impl Simulation {
    /// If RPC `rpc` is above the limit and can be split, split it: returns the parts in
    /// sending order (message packs, then the rest if any), `rpc` reused for the rest.
    pub(crate) fn split_oversized(&mut self, rpc: u32) -> Option<Vec<u32>> {
        if self.proto.version < Version::V1_1 {
            return None;
        }
        let sizes: Vec<u64> = {
            let r = self.rpcs.get(rpc);
            let has_rest = !r.payload_only;
            if r.total_bytes() <= MAX_RPC_BYTES || r.msgs.len() + usize::from(has_rest) < 2 {
                return None;
            }
            r.msgs
                .iter()
                .map(|m| {
                    let size = data_size(&self.messages, self.invalid_size, m.msg);
                    self.wire.publish_field(size)
                })
                .collect()
        };
        let msgs = std::mem::take(&mut self.rpcs.get_mut(rpc).msgs);
        let mut parts = Vec::new();
        let mut start = 0;
        let mut packed = 0;
        for (i, &size) in sizes.iter().enumerate() {
            if packed + size > MAX_RPC_BYTES && i > start {
                parts.push(self.pack(&msgs[start..i]));
                start = i;
                packed = 0;
            }
            packed += size;
        }
        parts.push(self.pack(&msgs[start..]));
        if self.rpcs.get(rpc).is_empty() {
            self.rpcs.free(rpc);
        } else {
            parts.push(rpc);
        }
        Some(parts)
    }

    /// A new RPC holding `msgs` only.
    fn pack(&mut self, msgs: &[crate::rpc::MsgRef]) -> u32 {
        let part = self.rpcs.alloc();
        self.rpcs.get_mut(part).msgs.extend_from_slice(msgs);
        part
    }
}
