//! The two threads of a node's process inside its group: its working thread and Go's
//! `sysmon` (`sysmon.rs`). A process is a group of its threads for the kernel (its
//! autogroup or cgroup): EEVDF picks the group at the host's root run queue
//! (`slices.rs`), then a thread in the group's own run queue, by the threads' virtual
//! runtimes there (`kernel/sched/fair.c`, equal weights).
//!
//! What the model needs of the threads' places is which one the kernel picks when both
//! are runnable: the one behind in virtual runtime, the only one eligible. So it keeps,
//! while `sysmon` is runnable, how far `sysmon` is behind the working thread (`gap`:
//! each one's CPU time moves its own virtual runtime on), and the lag `sysmon` kept when
//! it last slept (`update_entity_lag`: the average less its virtual runtime, the
//! average being the two threads' mean while the working thread is runnable, and its
//! own when it runs alone).
//!
//! `sysmon` wakes placed by that lag (`place_entity`, `PLACE_LAG`): with the working
//! thread runnable, the lag doubled (× (load + weight) / load, one other thread) behind
//! it; with a negative lag, where it was until the average passes it (`DELAY_DEQUEUE`,
//! then `DELAY_ZERO`). Its wake-up preempts a working thread on the core only when it
//! is behind it: a thread level with the average is still eligible and keeps its
//! protected slice (`RUN_TO_PARITY`). So a `sysmon` that runs right away when it wakes
//! spends half of each round's time out of its lag, and once that is spent it waits
//! for the working thread to block (or to lose the core), running further behind it
//! meanwhile.
//!
//! Not modelled: the working thread's own lag inside the group (it wakes level with a
//! waiting `sysmon`, its kept lag against `sysmon` alone being none), the working
//! thread's own slice inside the group (the group's ends with it), and a `sysmon` round
//! preempted by the working thread's wake-up (a round is a few µs).

use crate::config::Time;

/// `sysmon`'s place against the working thread in a node's group.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Group {
    /// The working thread's CPU time, all told (its virtual runtime in the group, from
    /// an origin), and `sysmon`'s virtual runtime on the same scale while it is
    /// runnable: the working thread is `worker_ran - sysmon_v` ahead of it.
    worker_ran: Time,
    sysmon_v: i64,
    /// The lag `sysmon` kept when it last slept, and the working thread's CPU time then.
    lag: i64,
    worker_ran_at_sleep: Time,
}

impl Group {
    /// `sysmon` wakes; `worker_runnable`: the working thread is on a core or waits for
    /// one, and has run `running` on its core since it was last counted
    /// (`worker_ran`: the kernel's `update_curr` comes before the placing). Alone in the
    /// group it is placed at the average (no lag to keep). True if it is then behind
    /// the working thread, which is past the group's average and unprotected: a
    /// running working thread is preempted (`check_preempt_wakeup_fair` in the group).
    pub fn sysmon_wakes(&mut self, worker_runnable: bool, running: Time) -> bool {
        let worker = (self.worker_ran + running) as i64;
        let gap = if !worker_runnable {
            0
        } else if self.lag >= 0 {
            2 * self.lag
        } else {
            // Where it slept, `-2 lag` ahead of the working thread, which has run on
            // since; once that has passed it, `sysmon` is placed at the average.
            let ran = worker - self.worker_ran_at_sleep as i64;
            (2 * self.lag + ran).min(0)
        };
        self.sysmon_v = worker - gap;
        gap > 0
    }

    /// The working thread ran `t`.
    pub fn worker_ran(&mut self, t: Time) {
        self.worker_ran += t;
    }

    /// `sysmon` ran `t`.
    pub fn sysmon_ran(&mut self, t: Time) {
        self.sysmon_v += t as i64;
    }

    /// `sysmon` sleeps, the working thread runnable or not (and not on the core); the
    /// kept lag is clipped to `limit` (two slices or a tick, `update_entity_lag`).
    pub fn sysmon_sleeps(&mut self, worker_runnable: bool, limit: i64) {
        self.lag = if worker_runnable {
            (self.gap() / 2).clamp(-limit, limit)
        } else {
            0
        };
        self.worker_ran_at_sleep = self.worker_ran;
    }

    /// True if runnable `sysmon` is the group's pick when neither thread is on the core
    /// (the group got the core, or its working thread blocked or lost the core): it is
    /// eligible, level with the working thread or behind it, and on a tie queued first.
    pub fn sysmon_first(&self) -> bool {
        self.gap() >= 0
    }

    /// How far runnable `sysmon` is behind the working thread.
    fn gap(&self) -> i64 {
        self.worker_ran as i64 - self.sysmon_v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: Time = 1_000;
    const LIMIT: i64 = 3_000_000;

    #[test]
    fn a_sysmon_that_preempts_at_each_wake_up_spends_half_its_round_of_its_lag() {
        // Lag L: placed 2L behind, runs r, sleeps with lag (2L - r) / 2 = L - r / 2.
        let mut g = Group {
            lag: 20 * US as i64,
            ..Group::default()
        };
        let mut lags = Vec::new();
        for _ in 0..3 {
            assert!(g.sysmon_wakes(true, 0));
            g.sysmon_ran(10 * US);
            g.sysmon_sleeps(true, LIMIT);
            lags.push(g.lag / US as i64);
        }
        assert_eq!(lags, [15, 10, 5]);
        // Lag spent: level with the working thread, it waits.
        assert!(g.sysmon_wakes(true, 0));
        g.sysmon_ran(10 * US);
        g.sysmon_sleeps(true, LIMIT);
        assert!(!g.sysmon_wakes(true, 0));
    }

    #[test]
    fn a_waiting_sysmon_falls_behind_as_the_working_thread_runs() {
        let mut g = Group::default();
        assert!(!g.sysmon_wakes(true, 0));
        assert!(g.sysmon_first(), "level: queued first");
        g.worker_ran(300 * US);
        // It ran when the working thread's slice ended; 300 behind, it runs 10 and
        // sleeps with half the gap left: 145 µs, so it preempts at its next wake-up.
        g.sysmon_ran(10 * US);
        g.sysmon_sleeps(true, LIMIT);
        assert_eq!(g.lag, 145 * US as i64);
        // Woken 50 µs into the working thread's run: placed 290 behind it then.
        assert!(g.sysmon_wakes(true, 50 * US));
        g.worker_ran(50 * US);
        assert_eq!(g.gap(), 290 * US as i64);
    }

    #[test]
    fn a_sysmon_ahead_of_the_working_thread_waits_until_it_passes_and_is_then_level() {
        let mut g = Group::default();
        g.sysmon_wakes(true, 0);
        g.sysmon_ran(40 * US);
        g.sysmon_sleeps(true, LIMIT); // lag -20: 40 ahead
        g.worker_ran(30 * US);
        assert!(!g.sysmon_wakes(true, 0));
        assert_eq!(g.gap(), -10 * US as i64);
        assert!(!g.sysmon_first());
        // Once the working thread has passed it, it is the group's pick.
        g.worker_ran(15 * US);
        assert!(g.sysmon_first());
        // Woken after the working thread passed it, it is placed level with it.
        let mut h = Group::default();
        h.sysmon_wakes(true, 0);
        h.sysmon_ran(40 * US);
        h.sysmon_sleeps(true, LIMIT);
        h.worker_ran(70 * US);
        h.sysmon_wakes(true, 0);
        assert_eq!(h.gap(), 0);
    }

    #[test]
    fn a_sysmon_that_ran_alone_keeps_no_lag() {
        let mut g = Group::default();
        g.sysmon_wakes(true, 0);
        g.worker_ran(500 * US);
        g.sysmon_ran(10 * US);
        g.sysmon_sleeps(false, LIMIT);
        assert!(!g.sysmon_wakes(true, 0));
        assert_eq!(g.gap(), 0);
    }
}
