//! How bytes cross the network.
//!
//! An RPC is serialized on the sender's uplink (one FIFO per node), travels the link's
//! propagation latency plus jitter, and is then read through the receiver's downlink
//! (one FIFO per node). A link never reorders: an RPC never arrives before the one sent
//! ahead of it on the same connection, as on a TCP stream. Capacity 0 means unlimited.
//!
//! Simplifications (documented in the README): the uplink is one FIFO shared by all
//! connections rather than fair-shared, and there is no loss or congestion window yet.

use crate::config::{LatencyModel, NetworkConfig, Time};
use crate::rng::Rng;

const NANOS_PER_SECOND: u128 = 1_000_000_000;

/// Time to push `bytes` through a `bps` bit/s pipe, rounded up; 0 when unlimited.
pub fn serialization_ns(bytes: u64, bps: u64) -> Time {
    if bps == 0 {
        return 0;
    }
    let bits = u128::from(bytes) * 8 * NANOS_PER_SECOND;
    bits.div_ceil(u128::from(bps)) as Time
}

/// Draw one link latency.
pub fn sample_latency(model: &LatencyModel, rng: &mut Rng) -> Time {
    let clamp = |x: f64| {
        if x.is_finite() && x > 0.0 {
            x.round() as Time
        } else {
            0
        }
    };
    match *model {
        LatencyModel::Constant { ns } => ns,
        LatencyModel::Uniform { min_ns, max_ns } => {
            if max_ns <= min_ns {
                min_ns
            } else {
                min_ns + rng.below(max_ns - min_ns + 1)
            }
        }
        LatencyModel::Normal { mean_ns, std_ns } => {
            clamp(mean_ns as f64 + std_ns as f64 * rng.normal())
        }
        LatencyModel::Lognormal { median_ns, sigma } => {
            clamp(median_ns as f64 * (sigma * rng.normal()).exp())
        }
    }
}

pub struct Network {
    upload_bps: Vec<u64>,
    download_bps: Vec<u64>,
    uplink_free: Vec<Time>,
    downlink_free: Vec<Time>,
    /// Latest arrival scheduled per directed link, to keep each connection in order.
    last_arrival: Vec<Time>,
    jitter_ns: Time,
    rng: Rng,
}

impl Network {
    pub fn new(config: &NetworkConfig, links: usize, seed: u64) -> Self {
        let nodes = config.upload_bps.len();
        Self {
            upload_bps: config.upload_bps.clone(),
            download_bps: config.download_bps.clone(),
            uplink_free: vec![0; nodes],
            downlink_free: vec![0; nodes],
            last_arrival: vec![0; links],
            jitter_ns: config.jitter_ns,
            rng: Rng::for_stream(seed, "network.jitter", 0),
        }
    }

    /// Send `bytes` from `sender` on `link` at `now`; returns when the last byte reaches
    /// the receiver's interface.
    pub fn transmit(
        &mut self,
        now: Time,
        sender: u32,
        link: u32,
        latency: Time,
        bytes: u64,
    ) -> Time {
        let s = sender as usize;
        let start = now.max(self.uplink_free[s]);
        let sent = start + serialization_ns(bytes, self.upload_bps[s]);
        self.uplink_free[s] = sent;
        let jitter = if self.jitter_ns > 0 {
            self.rng.below(self.jitter_ns + 1)
        } else {
            0
        };
        let last = &mut self.last_arrival[link as usize];
        let arrival = (sent + latency + jitter).max(*last);
        *last = arrival;
        arrival
    }

    /// True if `node` reads through a limited downlink (so arrivals need a second step).
    pub fn has_downlink_limit(&self, node: u32) -> bool {
        self.download_bps[node as usize] > 0
    }

    /// An RPC of `bytes` reached `receiver`'s interface at `now`; returns when it has
    /// been read through the downlink.
    pub fn read(&mut self, now: Time, receiver: u32, bytes: u64) -> Time {
        let r = receiver as usize;
        let start = now.max(self.downlink_free[r]);
        let done = start + serialization_ns(bytes, self.download_bps[r]);
        self.downlink_free[r] = done;
        done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn network(up: u64, down: u64, jitter: Time) -> Network {
        let config = NetworkConfig {
            latency: LatencyModel::Constant { ns: 0 },
            jitter_ns: jitter,
            upload_bps: vec![up, up],
            download_bps: vec![down, down],
            cpu_per_message_ns: vec![0, 0],
        };
        Network::new(&config, 2, 1)
    }

    #[test]
    fn one_megabyte_over_ten_megabytes_per_second_takes_100ms_plus_latency() {
        let mut net = network(80_000_000, 0, 0);
        let arrival = net.transmit(0, 0, 0, 50_000_000, 1_000_000);
        assert_eq!(arrival, 150_000_000);
    }

    #[test]
    fn back_to_back_sends_are_spaced_by_serialization() {
        let mut net = network(8_000_000, 0, 0); // 1 byte per microsecond
        let a = net.transmit(0, 0, 0, 1_000, 1_000);
        let b = net.transmit(0, 0, 0, 1_000, 1_000);
        assert_eq!((a, b), (1_001_000, 2_001_000));
    }

    #[test]
    fn jitter_never_reorders_a_connection() {
        let mut net = network(0, 0, 5_000_000);
        let mut last = 0;
        for t in 0..1000 {
            let arrival = net.transmit(t * 1_000, 0, 0, 1_000_000, 100);
            assert!(arrival >= last);
            last = arrival;
        }
    }

    #[test]
    fn uniform_latency_stays_in_bounds() {
        let mut rng = Rng::new(3);
        let model = LatencyModel::Uniform {
            min_ns: 10,
            max_ns: 20,
        };
        for _ in 0..1000 {
            assert!((10..=20).contains(&sample_latency(&model, &mut rng)));
        }
    }
}
