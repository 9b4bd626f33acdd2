//! Peer scoring (gossipsub v1.1), as go-libp2p-pubsub's `score.go` computes it.
//!
//! Each node keeps, for every link, the counters of the peer at its far end: per topic
//! time in mesh (P1), first message deliveries (P2), mesh message deliveries (P3) and
//! the sticky mesh failure penalty (P3b), invalid deliveries (P4); and the behaviour
//! penalty (P7). The score is
//!   min(TopicScoreCap, sum_t w_t (w1 P1 + w2 P2 + w3 P3 + w3b P3b + w4 P4)) + w7 P7,
//!     + w5 P5 + w6 P6 + w7 P7,
//! with P3 = deficit^2 below the threshold once active, P4 = invalid^2,
//! P5 the application's score of the peer (a fixed value per peer node, go's
//! `AppSpecificScore`), P6 = (peers behind the peer's IP address - threshold)^2 above
//! the threshold, and P7 = (penalty - threshold)^2 above the threshold.
//! Counters decay every decay interval and snap to 0 below `decay_to_zero`.
//! When a peer disconnects (goes down), go forgets a positive score outright and keeps
//! any other for `retain_score`, without decay, with first deliveries reset and the
//! mesh delivery deficit turned into the sticky penalty: a peer cannot wash a bad score
//! by reconnecting. A node that restarts is a new process and knows nobody's score.

use crate::config::Time;
pub use crate::config::{AppScore, ScoreConfig};

#[derive(Clone, Copy, Debug, Default)]
struct TopicStats {
    in_mesh: bool,
    graft_time: Time,
    mesh_time: Time,
    first_deliveries: f64,
    mesh_deliveries: f64,
    mesh_deliveries_active: bool,
    mesh_failure_penalty: f64,
    invalid_deliveries: f64,
}

/// Score counters of every link, kept by the link's owner.
pub struct Scores {
    params: ScoreConfig,
    topics: usize,
    /// links x topics
    stats: Vec<TopicStats>,
    behaviour_penalty: Vec<f64>,
    /// P5 of each link's peer.
    app_score: Vec<f64>,
    /// P6: the owner's peers behind the same address as each link's peer (itself included).
    colocated: Vec<u32>,
    /// Disconnected peers: until when their counters are kept (None: connected).
    retained_until: Vec<Option<Time>>,
}

impl Scores {
    pub fn new(params: ScoreConfig, links: usize, topics: usize) -> Self {
        Self {
            params,
            topics,
            stats: vec![TopicStats::default(); links * topics],
            behaviour_penalty: vec![0.0; links],
            app_score: vec![0.0; links],
            colocated: vec![1; links],
            retained_until: vec![None; links],
        }
    }

    /// Counters for a link opened during the run: a peer never seen before.
    pub fn add_link(&mut self) {
        self.stats
            .extend(std::iter::repeat_n(TopicStats::default(), self.topics));
        self.behaviour_penalty.push(0.0);
        self.app_score.push(0.0);
        self.colocated.push(1);
        self.retained_until.push(None);
    }

    /// Forget everything counted about the peer of `link` (its P5 and P6 stay: they are
    /// properties of the peer, not of its behaviour).
    pub fn forget(&mut self, link: u32) {
        self.clear_counters(link);
        self.retained_until[link as usize] = None;
    }

    fn clear_counters(&mut self, link: u32) {
        let base = link as usize * self.topics;
        self.stats[base..base + self.topics].fill(TopicStats::default());
        self.behaviour_penalty[link as usize] = 0.0;
    }

    /// The peer of `link` disconnected (go's `OnClosedOutboundStream`): forget a positive
    /// score; keep any other until `now + retain_score`, with first deliveries reset and
    /// each active mesh delivery deficit made sticky (P3b).
    pub fn disconnect(&mut self, link: u32, now: Time) {
        if self.score(link) > 0.0 {
            self.forget(link);
            return;
        }
        let threshold = self.params.mesh_message_deliveries_threshold;
        for topic in 0..self.topics as u16 {
            let t = self.topic(link, topic);
            t.first_deliveries = 0.0;
            if t.in_mesh && t.mesh_deliveries_active && t.mesh_deliveries < threshold {
                let deficit = threshold - t.mesh_deliveries;
                t.mesh_failure_penalty += deficit * deficit;
            }
            t.in_mesh = false;
        }
        self.retained_until[link as usize] = Some(now + self.params.retain_score_ns);
    }

    /// The peer of `link` connected again: its retained counters count again, unless
    /// their retention expired.
    pub fn reconnect(&mut self, link: u32, now: Time) {
        if let Some(until) = self.retained_until[link as usize] {
            if now > until {
                self.forget(link);
            }
            self.retained_until[link as usize] = None;
        }
    }

    pub fn set_app_score(&mut self, link: u32, score: f64) {
        self.app_score[link as usize] = score;
    }

    pub fn set_colocated(&mut self, link: u32, peers: u32) {
        self.colocated[link as usize] = peers;
    }

    pub fn params(&self) -> &ScoreConfig {
        &self.params
    }

    fn topic(&mut self, link: u32, topic: u16) -> &mut TopicStats {
        &mut self.stats[link as usize * self.topics + topic as usize]
    }

    /// The score of the peer at the far end of `link`, as its owner sees it.
    pub fn score(&self, link: u32) -> f64 {
        let p = &self.params;
        let base = link as usize * self.topics;
        let mut score = 0.0;
        for t in &self.stats[base..base + self.topics] {
            let mut topic_score = 0.0;
            if t.in_mesh {
                let p1 = (t.mesh_time / p.time_in_mesh_quantum_ns.max(1)) as f64;
                topic_score += p1.min(p.time_in_mesh_cap) * p.time_in_mesh_weight;
            }
            topic_score += t.first_deliveries * p.first_message_deliveries_weight;
            if t.mesh_deliveries_active && t.mesh_deliveries < p.mesh_message_deliveries_threshold {
                let deficit = p.mesh_message_deliveries_threshold - t.mesh_deliveries;
                topic_score += deficit * deficit * p.mesh_message_deliveries_weight;
            }
            topic_score += t.mesh_failure_penalty * p.mesh_failure_penalty_weight;
            topic_score +=
                t.invalid_deliveries * t.invalid_deliveries * p.invalid_message_deliveries_weight;
            score += topic_score * p.topic_weight;
        }
        if p.topic_score_cap > 0.0 && score > p.topic_score_cap {
            score = p.topic_score_cap;
        }
        score += self.app_score[link as usize] * p.app_specific_weight;
        let surplus = f64::from(self.colocated[link as usize]) - p.ip_colocation_factor_threshold;
        if surplus > 0.0 {
            score += surplus * surplus * p.ip_colocation_factor_weight;
        }
        let excess = self.behaviour_penalty[link as usize] - p.behaviour_penalty_threshold;
        if excess > 0.0 {
            score += excess * excess * p.behaviour_penalty_weight;
        }
        score
    }

    pub fn graft(&mut self, link: u32, topic: u16, now: Time) {
        let t = self.topic(link, topic);
        t.in_mesh = true;
        t.graft_time = now;
        t.mesh_time = 0;
        t.mesh_deliveries_active = false;
    }

    /// Leaving the mesh with a delivery deficit leaves a sticky penalty (P3b).
    pub fn prune(&mut self, link: u32, topic: u16) {
        let threshold = self.params.mesh_message_deliveries_threshold;
        let t = self.topic(link, topic);
        if t.mesh_deliveries_active && t.mesh_deliveries < threshold {
            let deficit = threshold - t.mesh_deliveries;
            t.mesh_failure_penalty += deficit * deficit;
        }
        t.in_mesh = false;
    }

    /// The peer delivered a message to us first.
    pub fn first_delivery(&mut self, link: u32, topic: u16) {
        let (first_cap, mesh_cap) = (
            self.params.first_message_deliveries_cap,
            self.params.mesh_message_deliveries_cap,
        );
        let t = self.topic(link, topic);
        t.first_deliveries = (t.first_deliveries + 1.0).min(first_cap);
        if t.in_mesh {
            t.mesh_deliveries = (t.mesh_deliveries + 1.0).min(mesh_cap);
        }
    }

    /// The peer delivered a copy close enough to the first to count for P3.
    pub fn near_first_delivery(&mut self, link: u32, topic: u16) {
        let cap = self.params.mesh_message_deliveries_cap;
        let t = self.topic(link, topic);
        if t.in_mesh {
            t.mesh_deliveries = (t.mesh_deliveries + 1.0).min(cap);
        }
    }

    pub fn window(&self) -> Time {
        self.params.mesh_message_deliveries_window_ns
    }

    /// The peer delivered a message that failed validation (P4; go has no cap).
    pub fn invalid_delivery(&mut self, link: u32, topic: u16) {
        self.topic(link, topic).invalid_deliveries += 1.0;
    }

    pub fn add_penalty(&mut self, link: u32, count: f64) {
        self.behaviour_penalty[link as usize] += count;
    }

    pub fn behaviour_penalty(&self, link: u32) -> f64 {
        self.behaviour_penalty[link as usize]
    }

    /// One decay interval has passed for the peers of `links` (go's `refreshScores`).
    pub fn decay(&mut self, links: impl Iterator<Item = u32>, now: Time) {
        let p = self.params.clone();
        let snap = |x: f64| if x < p.decay_to_zero { 0.0 } else { x };
        for link in links {
            // A retained score does not decay; it is thrown away once expired.
            if let Some(until) = self.retained_until[link as usize] {
                if now > until {
                    self.clear_counters(link);
                }
                continue;
            }
            for topic in 0..self.topics as u16 {
                let t = self.topic(link, topic);
                t.first_deliveries = snap(t.first_deliveries * p.first_message_deliveries_decay);
                t.mesh_deliveries = snap(t.mesh_deliveries * p.mesh_message_deliveries_decay);
                t.mesh_failure_penalty =
                    snap(t.mesh_failure_penalty * p.mesh_failure_penalty_decay);
                t.invalid_deliveries =
                    snap(t.invalid_deliveries * p.invalid_message_deliveries_decay);
                if t.in_mesh {
                    t.mesh_time = now - t.graft_time;
                    if t.mesh_time > p.mesh_message_deliveries_activation_ns {
                        t.mesh_deliveries_active = true;
                    }
                }
            }
            let b = &mut self.behaviour_penalty[link as usize];
            *b = snap(*b * p.behaviour_penalty_decay);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> ScoreConfig {
        ScoreConfig {
            gossip_threshold: -10.0,
            publish_threshold: -50.0,
            graylist_threshold: -80.0,
            accept_px_threshold: 10.0,
            opportunistic_graft_threshold: 20.0,
            topic_score_cap: 3600.0,
            topic_weight: 0.5,
            time_in_mesh_weight: 1.0,
            time_in_mesh_quantum_ns: 1_000_000_000,
            time_in_mesh_cap: 3600.0,
            first_message_deliveries_weight: 1.0,
            first_message_deliveries_decay: 0.5,
            first_message_deliveries_cap: 2000.0,
            mesh_message_deliveries_weight: -1.0,
            mesh_message_deliveries_decay: 0.5,
            mesh_message_deliveries_threshold: 20.0,
            mesh_message_deliveries_cap: 100.0,
            mesh_message_deliveries_activation_ns: 5_000_000_000,
            mesh_message_deliveries_window_ns: 10_000_000,
            mesh_failure_penalty_weight: -1.0,
            mesh_failure_penalty_decay: 0.5,
            invalid_message_deliveries_weight: -1.0,
            invalid_message_deliveries_decay: 0.3,
            behaviour_penalty_weight: -10.0,
            behaviour_penalty_threshold: 0.0,
            behaviour_penalty_decay: 0.2,
            decay_interval_ns: 1_000_000_000,
            decay_to_zero: 0.1,
            graft_flood_threshold_ns: 10_000_000_000,
            opportunistic_graft_ticks: 60,
            opportunistic_graft_peers: 2,
            app_specific_weight: 10.0,
            app_specific: Vec::new(),
            ip_colocation_factor_weight: -5.0,
            ip_colocation_factor_threshold: 10.0,
            retain_score_ns: 3600 * S,
        }
    }

    const S: Time = 1_000_000_000;

    #[test]
    fn time_in_mesh_and_first_deliveries_add_up_with_the_topic_weight() {
        let mut s = Scores::new(params(), 1, 1);
        s.graft(0, 0, 0);
        s.first_delivery(0, 0);
        s.first_delivery(0, 0);
        s.decay(0..1, 3 * S); // mesh time 3 s; deliveries halve to 1
                              // 0.5 * (3 quanta * 1 + 1 delivery * 1); P3 not active before 5 s.
        assert_eq!(s.score(0), 2.0);
    }

    #[test]
    fn mesh_delivery_deficit_is_squared_once_active_and_sticks_after_prune() {
        let mut s = Scores::new(params(), 1, 1);
        s.graft(0, 0, 0);
        s.decay(0..1, 6 * S); // active, 0 deliveries: deficit 20
        assert_eq!(s.score(0), 0.5 * (6.0 - 400.0));
        s.prune(0, 0);
        // P1 goes; P3b = 400 is added; and, as in go, P3 stays active until a new GRAFT.
        assert_eq!(s.score(0), 0.5 * (-400.0 - 400.0));
        s.graft(0, 0, 6 * S);
        assert_eq!(s.score(0), 0.5 * -400.0);
    }

    #[test]
    fn behaviour_penalty_above_threshold_is_squared() {
        let mut s = Scores::new(params(), 1, 1);
        s.add_penalty(0, 2.0);
        assert_eq!(s.score(0), -10.0 * 4.0);
        s.decay(0..1, S); // 2 * 0.2 = 0.4
        assert!((s.score(0) - -10.0 * 0.16).abs() < 1e-12);
        s.decay(0..1, 2 * S); // 0.08 < 0.1: snaps to 0
        assert_eq!(s.score(0), 0.0);
    }

    // go's score.go: score += p5 * AppSpecificWeight; p6 = (peersInIP - threshold)^2
    // when peersInIP > threshold; score += p6 * IPColocationFactorWeight.
    #[test]
    fn application_score_and_ip_colocation_add_after_the_cap() {
        let mut s = Scores::new(params(), 2, 1);
        s.set_app_score(0, -3.0);
        assert_eq!(s.score(0), 10.0 * -3.0);
        s.set_colocated(1, 10); // at the threshold: no penalty
        assert_eq!(s.score(1), 0.0);
        s.set_colocated(1, 13); // 3 over: -5 * 9
        assert_eq!(s.score(1), -45.0);
    }

    #[test]
    fn topic_score_is_capped_but_penalties_are_not() {
        let mut p = params();
        p.topic_score_cap = 1.0;
        let mut s = Scores::new(p, 1, 1);
        for _ in 0..10 {
            s.first_delivery(0, 0);
        }
        assert_eq!(s.score(0), 1.0);
        s.add_penalty(0, 1.0);
        assert_eq!(s.score(0), 1.0 - 10.0);
    }
}
