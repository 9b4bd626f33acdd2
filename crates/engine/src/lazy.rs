//! Sending fewer copies: IDONTWANT (gossipsub v1.2) and IANNOUNCE/INEED (v2.0 draft).
//!
//! IDONTWANT, as go-libp2p-pubsub does it (`Preprocess`, `handleIDontWant`): when an
//! RPC brings messages the node has not seen (not even in validation) whose data is at
//! least `idontwant_threshold` bytes, the node tells every mesh peer of the topic but the
//! sender, in one urgent RPC per peer, before validating; it does the same for its own
//! messages when it publishes. A peer remembers at most the first 10 ids of each
//! IDONTWANT RPC, for 3 heartbeats, and ignores IDONTWANTs beyond 1000 RPCs per
//! heartbeat. Remembered ids stop mesh/fanout forwards and IWANT replies of that message
//! to that peer (not flood-publish); each such skip is a transmission saved.
//!
//! IANNOUNCE/INEED (libp2p specs PR #653, go-libp2p-pubsub PR #587, neither merged):
//! a relay sends each mesh peer, with probability D_announce / D, an IANNOUNCE (topic,
//! id) instead of the message; a publisher announces only when D_announce = D. A node
//! accepts announcements from mesh peers for messages it has not seen, queues the
//! announcers in order, and asks one at a time with INEED; if the message has not
//! arrived `ineed_timeout` later, it asks the next. A peer answers an INEED with the
//! message. The queue is dropped when the message arrives (before validation).

use std::collections::VecDeque;

use crate::config::{Misbehaviour, Router, Version};
use crate::queue::Event;
use crate::rpc::{Kind, MsgRef};
use crate::sim::Simulation;

/// go: ids stored per IDONTWANT RPC (`GossipSubMaxIDontWantLength`).
const MAX_IDONTWANT_IDS: usize = 10;
/// go: IDONTWANT RPCs accepted per peer per heartbeat (`GossipSubMaxIDontWantMessages`).
const MAX_IDONTWANT_RPCS: u32 = 1000;
/// go: heartbeats an IDONTWANT is remembered (`GossipSubIDontWantMessageTTL`).
const IDONTWANT_TTL: u8 = 3;

/// What a node knows about a message it was told about but does not have yet.
#[derive(Clone, Debug, Default)]
pub struct Announced {
    /// Announcers not asked yet, in the order they announced.
    pub waiting: VecDeque<u32>,
    /// Bumped on every INEED, so stale timeouts can be told apart.
    pub attempt: u32,
    /// True while an INEED is outstanding.
    pub asking: bool,
}

impl Simulation {
    fn idontwant_on(&self) -> bool {
        self.version_at_least(Version::V1_2)
    }

    fn announce_on(&self) -> bool {
        self.version_at_least(Version::V2_0)
    }

    /// Messages of an incoming RPC that `node` has not seen yet, in any state: for each,
    /// stop any announcement queue, and tell the mesh (but `back`) we have them.
    pub(crate) fn preprocess(&mut self, node: u32, back: u32, msgs: &[MsgRef]) {
        if !self.idontwant_on() {
            return; // before v1.2 there is nothing to do (and 2.0 includes 1.2)
        }
        let mut fresh: Vec<u32> = Vec::new();
        for m in msgs {
            let state = &self.nodes[node as usize];
            if state.seen.contains_key(&m.msg) || state.validating.contains_key(&m.msg) {
                continue;
            }
            self.nodes[node as usize].announced.remove(&m.msg);
            fresh.push(m.msg);
        }
        self.send_idontwant(node, Some(back), &fresh);
    }

    /// Tell `node`'s mesh peers (but `except`) that it has `msgs` (those large enough).
    pub(crate) fn send_idontwant(&mut self, node: u32, except: Option<u32>, msgs: &[u32]) {
        if !self.idontwant_on() || self.proto.router != Router::Gossipsub {
            return;
        }
        let threshold = self.proto.idontwant_threshold;
        let topics = self.nodes[node as usize].mesh.len() as u16;
        for topic in 0..topics {
            let mut ids: Vec<u32> = msgs
                .iter()
                .copied()
                .filter(|&m| {
                    let info = &self.messages[m as usize];
                    info.topic == topic && u64::from(info.size) >= threshold
                })
                .collect();
            if ids.is_empty() {
                continue;
            }
            self.nodes[node as usize].rng.shuffle(&mut ids);
            let mesh = self.nodes[node as usize].mesh[topic as usize].clone();
            for link in mesh.into_iter().filter(|&l| Some(l) != except) {
                let rpc = self.rpcs.alloc();
                self.rpcs.get_mut(rpc).control.idontwant = ids.clone();
                self.send_urgent(node, link, rpc);
            }
        }
    }

    /// Remember what the peer on `link` does not want (go's `handleIDontWant`).
    pub(crate) fn handle_idontwant(&mut self, node: u32, link: u32, ids: &[u32]) {
        if ids.is_empty() {
            return;
        }
        let count = &mut self.link_dontsend[link as usize];
        if *count >= MAX_IDONTWANT_RPCS {
            return;
        }
        *count += 1;
        let unwanted = &mut self.nodes[node as usize].unwanted;
        for &id in ids.iter().take(MAX_IDONTWANT_IDS) {
            unwanted.insert((link, id), IDONTWANT_TTL);
        }
    }

    /// True if the peer on `link` said it does not want `msg`; counts a saved copy.
    pub(crate) fn unwanted(&mut self, node: u32, link: u32, msg: u32) -> bool {
        if self.nodes[node as usize].unwanted.is_empty() {
            return false;
        }
        let unwanted = self.nodes[node as usize]
            .unwanted
            .contains_key(&(link, msg));
        if unwanted {
            let peer = self.links.peer[link as usize];
            self.count_drop(node, peer, Kind::Payload, "saved-by-idontwant");
        }
        unwanted
    }

    /// Heartbeat: reset the IDONTWANT flood counters and age remembered ids.
    pub(crate) fn age_idontwant(&mut self, node: u32) {
        for link in self.links.of(node) {
            self.link_dontsend[link as usize] = 0;
        }
        self.nodes[node as usize].unwanted.retain(|_, ttl| {
            *ttl -= 1;
            *ttl > 0
        });
    }

    /// v2.0: should this forward of `msg` to a mesh peer be an IANNOUNCE?
    pub(crate) fn announce_instead(&mut self, node: u32, own: bool) -> bool {
        if !self.announce_on() || self.proto.D_announce == 0 {
            return false;
        }
        let d = self.proto.D.max(1);
        if own {
            return self.proto.D_announce >= d;
        }
        (self.nodes[node as usize].rng.below(d as u64) as usize) < self.proto.D_announce
    }

    pub(crate) fn send_announce(&mut self, node: u32, link: u32, msg: u32) {
        let topic = self.messages[msg as usize].topic;
        let rpc = self.rpcs.alloc();
        self.rpcs.get_mut(rpc).control.iannounce.push((topic, msg));
        self.send(node, link, rpc);
    }

    /// IANNOUNCE from the peer on `link`: queue it, and ask if nobody is being asked.
    pub(crate) fn handle_iannounce(&mut self, node: u32, link: u32, announced: &[(u16, u32)]) {
        for &(topic, msg) in announced {
            let state = &self.nodes[node as usize];
            let from_mesh =
                state.is_subscribed(topic) && state.mesh[topic as usize].contains(&link);
            if !from_mesh || state.seen.contains_key(&msg) || state.validating.contains_key(&msg) {
                continue;
            }
            let entry = self.nodes[node as usize].announced.entry(msg).or_default();
            entry.waiting.push_back(link);
            if !entry.asking {
                self.ask_next(node, msg);
            }
        }
    }

    /// Send INEED for `msg` to the next announcer in line, with a timeout.
    fn ask_next(&mut self, node: u32, msg: u32) {
        let Some(entry) = self.nodes[node as usize].announced.get_mut(&msg) else {
            return;
        };
        let Some(link) = entry.waiting.pop_front() else {
            self.nodes[node as usize].announced.remove(&msg);
            return;
        };
        entry.asking = true;
        entry.attempt += 1;
        let attempt = entry.attempt;
        let rpc = self.rpcs.alloc();
        self.rpcs.get_mut(rpc).control.ineed.push(msg);
        self.send(node, link, rpc);
        let at = self.now() + self.proto.ineed_timeout_ns;
        self.queue
            .push(at, node, Event::IneedTimeout { node, msg, attempt });
    }

    /// The INEED timer fired: if the message still has not come, ask the next announcer.
    pub(crate) fn ineed_timeout(&mut self, node: u32, msg: u32, attempt: u32) {
        let Some(entry) = self.nodes[node as usize].announced.get_mut(&msg) else {
            return;
        };
        if entry.attempt != attempt {
            return;
        }
        entry.asking = false;
        let peer = u32::MAX; // not tied to one peer in the drops table
        self.count_drop(node, peer, Kind::Ineed, "ineed-timeout");
        self.ask_next(node, msg);
    }

    /// INEED from the peer on `link`: answer with the messages we have.
    pub(crate) fn handle_ineed(&mut self, node: u32, ids: &[u32]) -> Vec<MsgRef> {
        if self.misbehaves(node, Misbehaviour::IgnoreIneed) {
            return Vec::new();
        }
        let state = &self.nodes[node as usize];
        ids.iter()
            .filter_map(|&msg| state.seen.get(&msg).map(|s| MsgRef { msg, hop: s.hop }))
            .collect()
    }
}
