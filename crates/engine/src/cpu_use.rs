//! How much CPU each node used: the time a core ran its work, cumulative, sampled at
//! every whole second of simulated time and at the end of the run (the `resources`
//! table, as the testbed samples each node's CPU seconds from /proc).
//!
//! What counts is what occupied a core for the node: on a host that is not time-sliced,
//! each piece `Cpu::run` runs, from its start to its end (its cost, a wake-up included);
//! on a time-sliced host, the time each core ran the node (`Slices::finish`). A piece
//! that spans a whole second is split at it; the time after the run's end is not
//! counted, as no sample sees it.
//!
//! Kept per node and per second in one array that grows as simulated time goes on:
//! nodes × seconds × 8 bytes, no event of its own, no allocation per piece. Nearly every
//! piece falls in the second the one before it fell in, which is kept at hand: the
//! common piece is charged with two comparisons and an addition, without dividing its
//! time by a second.

use crate::config::Time;

const SECOND: Time = 1_000_000_000;

pub struct CpuUse {
    nodes: usize,
    end: Time,
    /// `busy[k × nodes + node]`: the time `node`'s work ran during second k, [k s, k+1 s).
    busy: Vec<Time>,
    /// The second at hand: [from, until) (until cut at the run's end), whose row of
    /// `busy` starts at `row`; empty (from > until) until a piece is charged.
    from: Time,
    until: Time,
    row: usize,
}

/// The samples: a row per node and time, by node then time.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct CpuSamples {
    pub node: Vec<u32>,
    pub t_ns: Vec<i64>,
    /// CPU time used from the start of the run up to `t_ns`.
    pub cpu_ns: Vec<u64>,
    /// On time-sliced hosts (`Switches`), up to `t_ns`: the node's threads' voluntary
    /// and involuntary context switches, and with `sysmon` its runs and their CPU time
    /// (part of `cpu_ns`); else empty.
    pub voluntary_switches: Vec<u64>,
    pub involuntary_switches: Vec<u64>,
    pub sysmon_runs: Vec<u64>,
    pub sysmon_ns: Vec<u64>,
}

/// A node's threads' switches on a time-sliced host, per whole second of simulated time,
/// as the testbed reads a real node's from /proc (`voluntary_ctxt_switches` and
/// `nonvoluntary_ctxt_switches` over its threads; `sysmon`'s `schedstat`, the times a
/// CPU switched to it): its `sysmon`'s runs, and its threads' blocks, each a voluntary
/// switch (the working thread with nothing to run, blocking in `netpoll`; `sysmon`
/// sleeping after each round); and the working thread's preemptions, each an involuntary
/// switch (it leaves a core with work left, to another node or to its own `sysmon`).
#[derive(Default)]
pub struct Switches {
    /// `[sysmon runs, the working thread's blocks, its preemptions]` in second k.
    per_second: Vec<[u32; 3]>,
}

impl Switches {
    /// `sysmon` ran a round at `now` (and went to sleep after it).
    pub fn sysmon_ran(&mut self, now: Time) {
        self.second(now)[0] += 1;
    }

    /// The working thread blocked at `now`, with nothing to run.
    pub fn worker_blocked(&mut self, now: Time) {
        self.second(now)[1] += 1;
    }

    /// The working thread was preempted at `now`: another thread took its core.
    pub fn worker_preempted(&mut self, now: Time) {
        self.second(now)[2] += 1;
    }

    /// The preemption counted at `now` did not happen: the kernel gave the core straight
    /// back to the working thread (no switch).
    pub fn worker_resumed(&mut self, now: Time) {
        self.second(now)[2] -= 1;
    }

    fn second(&mut self, now: Time) -> &mut [u32; 3] {
        let k = (now / SECOND) as usize;
        if k >= self.per_second.len() {
            self.per_second.resize(k + 1, [0; 3]);
        }
        &mut self.per_second[k]
    }

    /// The cumulative `[sysmon runs, the working thread's blocks, its preemptions]` at
    /// each of `times`, the whole seconds from 0 then perhaps the run's end, as
    /// `CpuUse::samples` takes them: sample k adds second k - 1.
    pub fn cumulative(&self, times: &[Time]) -> Vec<[u64; 3]> {
        let mut total = [0u64; 3];
        let mut out = Vec::with_capacity(times.len());
        for k in 0..times.len() {
            if let Some(second) = k.checked_sub(1).and_then(|s| self.per_second.get(s)) {
                for (sum, count) in total.iter_mut().zip(second) {
                    *sum += u64::from(*count);
                }
            }
            out.push(total);
        }
        out
    }
}

impl CpuUse {
    pub fn new(nodes: u32, end: Time) -> Self {
        Self {
            nodes: nodes as usize,
            end,
            busy: Vec::new(),
            from: Time::MAX,
            until: 0,
            row: 0,
        }
    }

    /// `node`'s work ran on a core from `start` to `done`.
    #[inline(always)]
    pub fn charge(&mut self, node: u32, start: Time, done: Time) {
        if start >= self.from && done <= self.until {
            self.busy[self.row + node as usize] += done - start;
        } else {
            self.charge_across(node, start, done);
        }
    }

    /// `charge` for a piece outside the second at hand, which becomes the piece's first
    /// second: it may cross whole seconds or the run's end, or fall in a second not
    /// reached before.
    #[inline(never)]
    fn charge_across(&mut self, node: u32, start: Time, done: Time) {
        self.hold_second(start);
        let done = done.min(self.end);
        let mut t = start;
        while t < done {
            let k = t / SECOND;
            let until = ((k + 1) * SECOND).min(done);
            let i = k as usize * self.nodes + node as usize;
            if i >= self.busy.len() {
                self.busy.resize((k as usize + 1) * self.nodes, 0);
            }
            self.busy[i] += until - t;
            t = until;
        }
    }

    /// Make the second of `t` the second at hand, if it is before the run's end.
    fn hold_second(&mut self, t: Time) {
        let k = t / SECOND;
        let from = k * SECOND;
        if from >= self.end {
            return;
        }
        let row = k as usize * self.nodes;
        if row + self.nodes > self.busy.len() {
            self.busy.resize(row + self.nodes, 0);
        }
        (self.from, self.until, self.row) = (from, (from + SECOND).min(self.end), row);
    }

    /// When `samples` samples: every whole second up to the end of the run, and the end
    /// when that is not a whole second.
    pub fn sample_times(&self) -> Vec<Time> {
        let mut times: Vec<Time> = (0..=self.end / SECOND).map(|k| k * SECOND).collect();
        if !self.end.is_multiple_of(SECOND) {
            times.push(self.end);
        }
        times
    }

    /// Each node's cumulative CPU time at every whole second up to the end of the run
    /// (k s for k = 0, 1, 2, ...), and at the end when that is not a whole second. The
    /// sample at 0 (nothing used yet) lets a reader interpolate in the first second.
    pub fn samples(&self) -> CpuSamples {
        let times = self.sample_times();
        let rows = self.nodes * times.len();
        let mut out = CpuSamples {
            node: Vec::with_capacity(rows),
            t_ns: Vec::with_capacity(rows),
            cpu_ns: Vec::with_capacity(rows),
            ..CpuSamples::default()
        };
        let seconds = self.busy.len() / self.nodes.max(1);
        for node in 0..self.nodes {
            let mut total = 0;
            for (k, &t) in times.iter().enumerate() {
                // Sample k, at t, adds second k - 1: [(k - 1) s, t).
                if (1..=seconds).contains(&k) {
                    total += self.busy[(k - 1) * self.nodes + node];
                }
                out.node.push(node as u32);
                out.t_ns.push(t as i64);
                out.cpu_ns.push(total);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Time = 1_000_000;

    #[test]
    fn a_piece_across_a_second_is_split_there_and_the_run_end_cuts_it() {
        let mut u = CpuUse::new(2, 2_500 * MS);
        u.charge(0, 100 * MS, 200 * MS); // 100 ms in second 0
        u.charge(1, 900 * MS, 1_300 * MS); // 100 ms in second 0, 300 ms in second 1
        u.charge(0, 2_400 * MS, 2_700 * MS); // 100 ms before the end, 200 ms after
        u.charge(1, 3_000 * MS, 3_100 * MS); // after the end: not counted
        let s = u.samples();
        assert_eq!(s.node, [0, 0, 0, 0, 1, 1, 1, 1]);
        let t = [0, 1_000, 2_000, 2_500, 0, 1_000, 2_000, 2_500];
        assert_eq!(s.t_ns, t.map(|t| t * MS as i64));
        assert_eq!(
            s.cpu_ns,
            [0, 100, 100, 200, 0, 100, 400, 400].map(|t| t * MS)
        );
    }

    #[test]
    fn a_run_ending_on_a_whole_second_has_no_extra_sample() {
        let mut u = CpuUse::new(1, 2_000 * MS);
        u.charge(0, 1_500 * MS, 2_000 * MS);
        let s = u.samples();
        assert_eq!(s.t_ns, [0, 1_000 * MS as i64, 2_000 * MS as i64]);
        assert_eq!(s.cpu_ns, [0, 0, 500 * MS]);
    }
}
