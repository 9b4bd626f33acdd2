//! The connection graph in compressed sparse rows.
//!
//! Every undirected edge of the topology becomes two directed links, one owned by each
//! end. A node's links are contiguous and sorted by peer id, so per-link protocol state
//! lives in flat arrays indexed by link id and a node finds its link to a peer by binary
//! search. `outbound` remembers who dialed: gossipsub's D_out quota counts
//! connections the node opened itself.
//!
//! Connections opened during the run (peer exchange) get link ids after the initial
//! ones and are listed per node beside the compressed rows: rare, so a short list per
//! node costs less than rebuilding the rows.

use smallvec::SmallVec;

use crate::config::Time;
use crate::error::EngineError;

/// Marks a link that was not in the caller's edge list (opened during the run).
pub const NOT_AN_INPUT_EDGE: u32 = u32::MAX;

/// The link ids of one node, owned so that the caller may change the simulation while
/// walking them.
pub struct LinkIds {
    initial: std::ops::Range<u32>,
    added: SmallVec<[u32; 4]>,
    next_added: usize,
}

impl Iterator for LinkIds {
    type Item = u32;

    #[inline]
    fn next(&mut self) -> Option<u32> {
        if let Some(link) = self.initial.next() {
            return Some(link);
        }
        let link = self.added.get(self.next_added).copied();
        self.next_added += 1;
        link
    }
}

#[derive(Clone, Debug)]
pub struct Links {
    offsets: Vec<u32>,
    /// Remote end of each link.
    pub peer: Vec<u32>,
    /// Local end (owner) of each link.
    pub owner: Vec<u32>,
    /// The link in the opposite direction.
    pub reverse: Vec<u32>,
    /// True if the owner dialed the connection.
    pub outbound: Vec<bool>,
    /// One-way propagation latency from owner to peer.
    pub latency: Vec<Time>,
    /// For each link, its position in the caller's per-direction edge arrays:
    /// 2 i for edge i's dialer -> listener direction, 2 i + 1 for the way back;
    /// NOT_AN_INPUT_EDGE for links opened during the run.
    pub input_order: Vec<u32>,
    /// Per node: links opened during the run, in opening order.
    added: Vec<SmallVec<[u32; 4]>>,
}

impl Links {
    /// Build from (dialer, listener) pairs; `latency_of(i)` gives edge i's one-way
    /// latency from dialer to listener and back.
    pub fn new(
        nodes: u32,
        edges: &[(u32, u32)],
        mut latency_of: impl FnMut(usize) -> (Time, Time),
    ) -> Result<Self, EngineError> {
        let n = nodes as usize;
        let mut degree = vec![0u32; n];
        for (i, &(a, b)) in edges.iter().enumerate() {
            if a >= nodes || b >= nodes {
                return Err(EngineError::input(
                    "edges",
                    format!("edge {i} ({a}, {b}) names a node >= {nodes}"),
                ));
            }
            if a == b {
                return Err(EngineError::input(
                    "edges",
                    format!("edge {i} is a self-loop on node {a}"),
                ));
            }
            degree[a as usize] += 1;
            degree[b as usize] += 1;
        }
        let mut offsets = Vec::with_capacity(n + 1);
        offsets.push(0u32);
        for d in &degree {
            offsets.push(offsets.last().unwrap() + d);
        }
        // (owner, peer, outbound, latency, edge index) per directed link, sorted per owner.
        let mut directed: Vec<(u32, u32, bool, Time, usize)> = Vec::with_capacity(edges.len() * 2);
        for (i, &(a, b)) in edges.iter().enumerate() {
            let (forward, backward) = latency_of(i);
            directed.push((a, b, true, forward, 2 * i));
            directed.push((b, a, false, backward, 2 * i + 1));
        }
        directed.sort_unstable_by_key(|&(owner, peer, ..)| (owner, peer));
        for pair in directed.windows(2) {
            if pair[0].0 == pair[1].0 && pair[0].1 == pair[1].1 {
                return Err(EngineError::input(
                    "edges",
                    format!("nodes {} and {} are connected twice", pair[0].0, pair[0].1),
                ));
            }
        }
        let peer: Vec<u32> = directed.iter().map(|d| d.1).collect();
        let owner: Vec<u32> = directed.iter().map(|d| d.0).collect();
        let outbound = directed.iter().map(|d| d.2).collect();
        let latency = directed.iter().map(|d| d.3).collect();
        let input_order = directed.iter().map(|d| d.4 as u32).collect();
        let mut links = Self {
            offsets,
            peer,
            owner,
            reverse: Vec::new(),
            outbound,
            latency,
            input_order,
            added: vec![SmallVec::new(); n],
        };
        links.reverse = (0..links.peer.len())
            .map(|l| {
                links
                    .find(links.peer[l], links.owner[l])
                    .expect("reverse link exists")
            })
            .collect();
        Ok(links)
    }

    pub fn nodes(&self) -> usize {
        self.offsets.len() - 1
    }

    pub fn len(&self) -> usize {
        self.peer.len()
    }

    pub fn is_empty(&self) -> bool {
        self.peer.is_empty()
    }

    /// Link ids owned by `node`: the initial ones, then those opened during the run.
    pub fn of(&self, node: u32) -> LinkIds {
        LinkIds {
            initial: self.initial_of(node),
            added: self.added[node as usize].clone(),
            next_added: 0,
        }
    }

    fn initial_of(&self, node: u32) -> std::ops::Range<u32> {
        self.offsets[node as usize]..self.offsets[node as usize + 1]
    }

    /// The link from `node` to `peer`, if they are connected.
    pub fn find(&self, node: u32, peer: u32) -> Option<u32> {
        let range = self.initial_of(node);
        let slice = &self.peer[range.start as usize..range.end as usize];
        if let Ok(i) = slice.binary_search(&peer) {
            return Some(range.start + i as u32);
        }
        self.added[node as usize]
            .iter()
            .copied()
            .find(|&l| self.peer[l as usize] == peer)
    }

    /// Open a connection that `dialer` made to `listener` during the run; returns the
    /// links (dialer -> listener, listener -> dialer). The caller checked that the two
    /// are distinct and not connected yet.
    pub fn connect(&mut self, dialer: u32, listener: u32, latency: (Time, Time)) -> (u32, u32) {
        debug_assert!(dialer != listener && self.find(dialer, listener).is_none());
        let forward = self.peer.len() as u32;
        let backward = forward + 1;
        for (owner, peer, outbound, one_way, reverse) in [
            (dialer, listener, true, latency.0, backward),
            (listener, dialer, false, latency.1, forward),
        ] {
            self.peer.push(peer);
            self.owner.push(owner);
            self.reverse.push(reverse);
            self.outbound.push(outbound);
            self.latency.push(one_way);
            self.input_order.push(NOT_AN_INPUT_EDGE);
        }
        self.added[dialer as usize].push(forward);
        self.added[listener as usize].push(backward);
        (forward, backward)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_both_directions_with_reverse_and_dialer() {
        let links = Links::new(3, &[(0, 1), (2, 1)], |i| (10 + i as u64, 20 + i as u64)).unwrap();
        assert_eq!(links.len(), 4);
        let l01 = links.find(0, 1).unwrap();
        let l10 = links.find(1, 0).unwrap();
        assert_eq!(links.reverse[l01 as usize], l10);
        assert!(links.outbound[l01 as usize] && !links.outbound[l10 as usize]);
        let l21 = links.find(2, 1).unwrap();
        assert!(links.outbound[l21 as usize]);
        assert_eq!(links.latency[l21 as usize], 11);
        assert_eq!(links.latency[links.find(1, 2).unwrap() as usize], 21);
        assert_eq!(links.input_order[l21 as usize], 2);
        assert_eq!(links.find(0, 2), None);
        assert_eq!(links.of(1).count(), 2);
    }

    #[test]
    fn a_connection_opened_later_is_found_and_listed_after_the_initial_ones() {
        let mut links = Links::new(3, &[(0, 1), (2, 1)], |_| (10, 10)).unwrap();
        let (l02, l20) = links.connect(0, 2, (7, 8));
        assert_eq!((links.find(0, 2), links.find(2, 0)), (Some(l02), Some(l20)));
        assert_eq!(links.reverse[l02 as usize], l20);
        assert!(links.outbound[l02 as usize] && !links.outbound[l20 as usize]);
        assert_eq!(
            (links.latency[l02 as usize], links.latency[l20 as usize]),
            (7, 8)
        );
        let of0: Vec<u32> = links.of(0).collect();
        assert_eq!(of0, vec![links.find(0, 1).unwrap(), l02]);
        assert_eq!(links.len(), 6);
    }

    #[test]
    fn rejects_duplicates_and_self_loops() {
        assert!(Links::new(2, &[(0, 1), (1, 0)], |_| (0, 0)).is_err());
        assert!(Links::new(2, &[(1, 1)], |_| (0, 0)).is_err());
        assert!(Links::new(2, &[(0, 2)], |_| (0, 0)).is_err());
    }
}
