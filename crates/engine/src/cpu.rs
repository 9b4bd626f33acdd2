//! Hosts and their cores: where a node's CPU work runs, and how long it takes.
//!
//! Nodes sit on hosts, `nodes_per_host` consecutive node ids per host, and each host has
//! `cores` cores that its nodes share. A piece of work becomes ready at some time and
//! runs on the host's core that frees up first, after everything submitted before it
//! (one first-in first-out run queue per host, as Go's scheduler runs goroutines that
//! became runnable in order). With one node per host and one core (the default) this is
//! a per-node CPU.
//!
//! What costs CPU, and where it sits in go-libp2p-pubsub v0.17.0:
//! - a received RPC: `per_rpc_received` + `per_kb_received` × size (decryption, yamux
//!   framing, protobuf decoding), in the reading goroutine of the peer's stream
//!   (`comm.go:handleNewStream`), one RPC after the other per peer, before the event
//!   loop sees it;
//! - a copy validated: `per_copy` (the signature check and the validators,
//!   `validation.go:validateWorker` → `validate` → `validateSignature`);
//! - a sent RPC: `per_rpc_sent` + `per_kb_sent` × size (protobuf encoding, encryption,
//!   framing, the write syscall), in the peer's writer goroutine
//!   (`comm.go:handleSendingMessages`), which pops the next RPC from the peer's 32-RPC
//!   queue (`rpc_queue.go:Pop`) only when the previous `writeRPC` returned;
//! - a publication: `per_publish` (signing, `sign.go:signMessage`, plus whatever the
//!   application computes before `topic.go:Publish` returns).
//!
//! Each cost is a mean; with `sigma` > 0 each piece of work draws its time from a
//! lognormal distribution of that mean (median = mean × exp(−σ²/2)), from a seeded
//! stream per host, so the model's latency tails come from the costs themselves.

use crate::config::{CpuConfig, Time};
use crate::rng::Rng;

pub struct Cpu {
    nodes_per_host: u32,
    cores: usize,
    /// When each core of each host is next free (host h's cores at h × cores ..).
    core_free: Vec<Time>,
    /// Lognormal draws per host (unused when `sigma` is 0).
    rng: Vec<Rng>,
    /// When each directed link's reading goroutine (at its receiver) is next free.
    reader_free: Vec<Time>,
    /// exp(−σ²/2): a lognormal's median over its mean.
    median_over_mean: f64,
    pub(crate) costs: CpuConfig,
}

impl Cpu {
    pub fn new(config: &CpuConfig, nodes: u32, seed: u64) -> Self {
        let per_host = config.nodes_per_host.max(1);
        let hosts = nodes.div_ceil(per_host).max(1) as usize;
        let cores = config.cores.max(1) as usize;
        let rng = if config.sigma > 0.0 {
            (0..hosts)
                .map(|h| Rng::for_stream(seed, "cpu", h as u64))
                .collect()
        } else {
            Vec::new()
        };
        Self {
            nodes_per_host: per_host,
            cores,
            core_free: vec![0; hosts * cores],
            rng,
            reader_free: Vec::new(),
            median_over_mean: (-config.sigma * config.sigma / 2.0).exp(),
            costs: config.clone(),
        }
    }

    pub fn host_of(&self, node: u32) -> usize {
        (node / self.nodes_per_host) as usize
    }

    /// The time one piece of work of mean cost `mean` takes (a lognormal draw when
    /// `sigma` > 0).
    fn draw(&mut self, host: usize, mean: Time) -> Time {
        if self.rng.is_empty() || mean == 0 {
            return mean;
        }
        let median = mean as f64 * self.median_over_mean;
        let x = median * (self.costs.sigma * self.rng[host].normal()).exp();
        x.round().max(0.0) as Time
    }

    /// Run work of mean cost `mean` for `node`, ready at `ready`: it takes the host's
    /// first free core after the work submitted before it. Returns when it is done.
    pub fn run(&mut self, node: u32, ready: Time, mean: Time) -> Time {
        let host = self.host_of(node);
        let cost = self.draw(host, mean);
        let first = host * self.cores;
        let core = if self.cores == 1 {
            first
        } else {
            let cores = &self.core_free[first..first + self.cores];
            first + (0..cores.len()).min_by_key(|&c| cores[c]).expect("a core")
        };
        let done = ready.max(self.core_free[core]) + cost;
        self.core_free[core] = done;
        done
    }

    /// `receiver` reads an RPC of `bytes` bytes that arrived on `link` at `now`: after
    /// the RPCs before it on that stream (one reading goroutine per stream,
    /// `comm.go:handleNewStream`). Returns when it is decoded.
    pub fn read(&mut self, link: u32, receiver: u32, now: Time, bytes: u64) -> Time {
        let l = link as usize;
        if l >= self.reader_free.len() {
            self.reader_free.resize(l + 1, 0);
        }
        let ready = now.max(self.reader_free[l]);
        let done = self.run(receiver, ready, self.receive_cost(bytes));
        self.reader_free[l] = done;
        done
    }

    /// Mean CPU time to read an RPC of `bytes` bytes.
    pub fn receive_cost(&self, bytes: u64) -> Time {
        self.costs.per_rpc_received_ns + self.costs.per_kb_received_ns * bytes / 1000
    }

    /// Mean CPU time to write an RPC of `bytes` bytes.
    pub fn send_cost(&self, bytes: u64) -> Time {
        self.costs.per_rpc_sent_ns + self.costs.per_kb_sent_ns * bytes / 1000
    }

    /// True if reading RPCs costs CPU.
    pub fn charges_receiving(&self) -> bool {
        self.costs.per_rpc_received_ns > 0 || self.costs.per_kb_received_ns > 0
    }

    /// True if writing RPCs costs CPU.
    pub fn charges_sending(&self) -> bool {
        self.costs.per_rpc_sent_ns > 0 || self.costs.per_kb_sent_ns > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpu(nodes_per_host: u32, cores: u32, sigma: f64) -> Cpu {
        let config = CpuConfig {
            nodes_per_host,
            cores,
            sigma,
            ..CpuConfig::default()
        };
        Cpu::new(&config, 4, 7)
    }

    #[test]
    fn nodes_on_one_core_queue_behind_each_other() {
        let mut c = cpu(2, 1, 0.0);
        // Nodes 0 and 1 share host 0's core; node 2 has host 1 to itself.
        assert_eq!(c.run(0, 0, 100), 100);
        assert_eq!(c.run(1, 0, 100), 200);
        assert_eq!(c.run(2, 0, 100), 100);
        assert_eq!(c.run(1, 500, 10), 510, "an idle core starts at once");
    }

    #[test]
    fn two_cores_serve_two_pieces_at_once() {
        let mut c = cpu(4, 2, 0.0);
        let done: Vec<Time> = (0..4).map(|n| c.run(n, 0, 100)).collect();
        assert_eq!(done, [100, 100, 200, 200]);
    }

    #[test]
    fn lognormal_costs_keep_their_mean() {
        let mut c = cpu(1, 1, 0.8);
        let n = 200_000;
        let total = (0..n).fold(0, |t, _| c.run(0, t, 1_000)); // back to back
        let mean = total as f64 / n as f64;
        // Mean of a lognormal with median m·e^(−σ²/2) is m; 200k draws: within 1 %.
        assert!((mean - 1_000.0).abs() < 10.0, "mean {mean}");
    }
}
