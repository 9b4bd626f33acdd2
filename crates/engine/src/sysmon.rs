//! Go's `sysmon` thread (`runtime/proc.go:sysmon`), one per node: a thread of the
//! node's process that runs without a P, waking on a timer to retake Ps held in system
//! calls, preempt long-running goroutines and poll the network. What the model takes
//! from it is when it wakes: each wake-up is a thread of the node's process becoming
//! runnable, and on a shared host every one lets the kernel pick again (`slices.rs`,
//! `group.rs`); each round takes `cpu.per_sysmon_round` of the node's core, and a round
//! that finds the P running one `schedtick` for 10 ms preempts the goroutine
//! (`retake`, `Process::long_turn` in `goroutines.rs`).
//!
//! Its schedule (Go 1.26's `sysmon`): it sleeps 20 µs between rounds (`usleep(delay)`,
//! `delay = 20`) while its rounds retake a P (`retake(now) != 0` resets `idle`); after
//! more than 50 rounds in a row that retook nothing (`idle > 50`) each sleep is twice
//! the last, up to 10 ms. A round that finds every P idle (`sched.npidle ==
//! gomaxprocs`) puts it into its deep sleep (`notetsleep(&sched.sysmonnote, ..)` with
//! `sysmonwait` set), from which the node's next system call wakes it (`entersyscall`
//! → `entersyscallWakeSysmon`), `idle` and `delay` reset (`syscallWake`); that round
//! goes on to `retake` and a 20 µs sleep whatever the P does by then (the `npidle`
//! check comes before the deep sleep), and the next one sleeps deeply again if the P
//! is idle. The P is idle whenever the node's thread is in the blocking `netpoll` or
//! has woken from it and not yet run (`findRunnable`: `pidleput` before, `pidleget`
//! after), and after a retake that left it idle (`Process::p_busy`). A node has
//! one P (`GOMAXPROCS=1`: the model runs a node on one thread); `retake` takes it when
//! a goroutine is in the same system call as at the last round (`pd.syscalltick`
//! unchanged: "more than 1 sysmon tick (at least 20us)").
//!
//! Each sleep ends the thread's timer slack after its time: `usleep` is a
//! `nanosleep`, an hrtimer allowed to fire up to `current->timer_slack_ns` late
//! (50 µs, `init_task`'s), and on a host with few other timers it fires at the end of
//! that range.
//!
//! A round also takes the P from a goroutine whose turn is too long while it is in a
//! system call (`preemptone` cannot stop it there: `sysretake`); with one P there is
//! never an idle P or a spinning thread, so the check that spares a goroutine alone on
//! its P (`runqempty(pp) && nmspinning+npidle > 0`) never holds, and every round that
//! finds the same call retakes. What a retake does to the node's goroutines is
//! `Process::retake`'s (`handoffp`).
//!
//! Not modelled: the deep sleep's own end at the node's next timer
//! (`notetsleep(&sched.sysmonnote, next - now)`, `timeSleepUntil`), which leaves `idle`
//! and `delay` as they were. The node's thread waits for the same timer in `netpoll`,
//! whose epoll timeout is whole milliseconds (`netpoll_epoll.go`: `delay / 1e6`, and 1
//! ms under a millisecond), so it wakes up to a millisecond after `sysmon` has left its
//! sleep, and its first system call no longer resets it; the model resets `sysmon` at
//! that call. A node's timers are its heartbeat and its publications, a few a second
//! against tens of idle periods. Nor `sysmon`'s own poll of the network, which the
//! model makes at the node's scheduling points (`Process::sysmon_poll`).

use crate::config::Time;

/// The first sleeps, and the longest (`runtime/proc.go:sysmon`, in µs there).
const FIRST_SLEEP: Time = 20_000;
const LONGEST_SLEEP: Time = 10_000_000;
/// Rounds without a retake after which each sleep doubles (`idle > 50`).
const SHORT_ROUNDS: u32 = 50;
/// How late `usleep`'s timer fires (`init_task.timer_slack_ns`).
pub const TIMER_SLACK: Time = 50_000;

/// One node's `sysmon`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sysmon {
    /// In its deep sleep: its last round found the node's P idle.
    deep: bool,
    /// Its sleep ended: its round runs when the node's process next runs.
    due: bool,
    /// Rounds in a row that retook nothing (Go's `idle`).
    idle: u32,
    /// Its last sleep (Go's `delay`).
    delay: Time,
    /// The system call its last round saw the node in (`pd.syscalltick`).
    seen_syscall: Option<u32>,
    /// Woken from its deep sleep by the node's system call: its next round goes on to
    /// `retake` whether or not the node's P is idle by then.
    syscall_woke: bool,
}

impl Default for Sysmon {
    /// A process's `sysmon` before the process first runs: in its deep sleep.
    fn default() -> Self {
        Self {
            deep: true,
            due: false,
            idle: 0,
            delay: FIRST_SLEEP,
            seen_syscall: None,
            syscall_woke: false,
        }
    }
}

impl Sysmon {
    pub fn deep(&self) -> bool {
        self.deep
    }

    pub fn due(&self) -> bool {
        self.due
    }

    /// Its sleep ended (`Event::SysmonWake`).
    pub fn wake(&mut self) {
        debug_assert!(!self.deep && !self.due, "one wake-up per sleep");
        self.due = true;
    }

    /// The node's system call wakes it from its deep sleep (`entersyscallWakeSysmon`):
    /// its round is due, with `idle` and `delay` reset (`syscallWake`).
    pub fn syscall_wake(&mut self) {
        debug_assert!(self.deep, "woken by a system call from its deep sleep only");
        *self = Self {
            deep: false,
            due: true,
            syscall_woke: true,
            ..Self::default()
        };
    }

    /// Its round, on a node whose P is `busy` (it runs goroutines), in system call
    /// `syscall` if its running goroutine is in one, with a turn `too_long` for
    /// `retake` (`Process::long_turn`). A round that finds the P idle sleeps deeply,
    /// unless a system call just woke it from there: that round goes on past the check
    /// (`sysmon` looks at `npidle` before its deep sleep, not after) to `retake` and
    /// its 20 µs sleep. A busy P in the call the last round saw, or in any call with
    /// its turn too long, is retaken.
    pub fn round(&mut self, busy: bool, syscall: Option<u32>, too_long: bool) -> Round {
        self.due = false;
        let syscall_woke = std::mem::take(&mut self.syscall_woke);
        if !busy && !syscall_woke {
            self.deep = true;
            self.seen_syscall = None;
            return Round {
                sleep: None,
                retook: false,
            };
        }
        let in_call = syscall.filter(|_| busy);
        let retook = in_call.is_some() && (too_long || in_call == self.seen_syscall);
        self.seen_syscall = in_call;
        self.idle = if retook { 0 } else { self.idle + 1 };
        if self.idle == 0 {
            self.delay = FIRST_SLEEP;
        } else if self.idle > SHORT_ROUNDS {
            self.delay = (2 * self.delay).min(LONGEST_SLEEP);
        }
        Round {
            sleep: Some(self.delay + TIMER_SLACK),
            retook,
        }
    }
}

/// What a `sysmon` round decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Round {
    /// How long it sleeps once the round is done (the timer slack included), or `None`
    /// for its deep sleep.
    pub sleep: Option<Time>,
    /// It took the P from the running goroutine's system call (`retake` → `handoffp`).
    pub retook: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    const SLACK: Time = TIMER_SLACK;

    /// A round's sleep, with no turn too long.
    fn sleep(m: &mut Sysmon, busy: bool, syscall: Option<u32>) -> Option<Time> {
        m.round(busy, syscall, false).sleep
    }

    /// A `sysmon` woken by the node's system call, its first round done on a busy node.
    fn woken() -> Sysmon {
        let mut m = Sysmon::default();
        m.syscall_wake();
        assert!(m.due() && !m.deep());
        m
    }

    #[test]
    fn a_busy_node_s_sysmon_sleeps_20us_for_50_rounds_then_doubles_to_10ms() {
        // runtime/proc.go:sysmon: `idle` counts the rounds since a retake; the sleep
        // is 20 µs while idle <= 50, then doubles each round, up to 10 ms.
        let mut m = woken();
        let sleeps: Vec<Time> = (0..62)
            .map(|_| sleep(&mut m, true, None).unwrap())
            .collect();
        // Round 1 follows the wake-up from the deep sleep (idle 0 → 1 after it).
        assert!(sleeps[..50].iter().all(|&s| s == 20_000 + SLACK));
        // After round 51, idle = 51 > 50: 40 µs, 80, 160, ..., 10,240 → 10,000.
        let doubled: Vec<Time> = (0..10)
            .map(|i| (20_000 << (i + 1)).min(10_000_000))
            .collect();
        let got: Vec<Time> = sleeps[50..60].iter().map(|s| s - SLACK).collect();
        assert_eq!(got, doubled);
        assert_eq!(sleeps[60] - SLACK, 10_000_000);
        assert_eq!(sleeps[61] - SLACK, 10_000_000);
    }

    #[test]
    fn a_system_call_seen_at_two_rounds_in_a_row_is_retaken_and_resets_the_sleep() {
        let mut m = woken();
        for _ in 0..60 {
            sleep(&mut m, true, None);
        }
        assert_eq!(sleep(&mut m, true, Some(7)), Some(10_000_000 + SLACK));
        // Same system call at the next round: `retake` takes the P, idle = 0.
        assert_eq!(sleep(&mut m, true, Some(7)), Some(20_000 + SLACK));
        // A new one (the goroutine made another call since) is not retaken.
        assert_eq!(sleep(&mut m, true, Some(8)), Some(20_000 + SLACK));
        assert_eq!(m.idle, 1);
    }

    #[test]
    fn an_idle_node_s_sysmon_sleeps_deeply_until_the_node_makes_a_system_call() {
        let mut m = woken();
        for _ in 0..60 {
            sleep(&mut m, true, Some(1));
            sleep(&mut m, true, None);
        }
        assert_eq!(sleep(&mut m, false, None), None);
        assert!(m.deep());
        // The node's next system call wakes it with `idle` and `delay` reset.
        m.syscall_wake();
        assert_eq!(sleep(&mut m, true, None), Some(20_000 + SLACK));
        assert_eq!(m.idle, 1);
    }

    #[test]
    fn the_round_after_a_system_call_s_wake_up_sleeps_20us_even_if_the_node_is_idle() {
        // `sysmon` checks `npidle` before its deep sleep: woken from it, it goes on to
        // `retake` and `usleep(20)`, and only the round after that sleeps deeply again.
        let mut m = woken();
        assert_eq!(sleep(&mut m, false, None), Some(20_000 + SLACK));
        assert!(!m.deep());
        m.wake();
        assert_eq!(sleep(&mut m, false, None), None);
        assert!(m.deep());
    }

    #[test]
    fn a_turn_too_long_in_a_system_call_is_retaken_at_the_first_round_that_sees_it() {
        // runtime/proc.go:retake: `preemptone` fails on a goroutine in a system call, so
        // `sysretake` takes the P whatever `pd.syscalltick` says; a long turn outside a
        // call is preempted, not retaken (`n` counts Ps taken from calls only).
        let mut m = woken();
        for _ in 0..60 {
            sleep(&mut m, true, None);
        }
        let outside = m.round(true, None, true);
        assert_eq!(
            (outside.retook, outside.sleep),
            (false, Some(10_000_000 + SLACK))
        );
        let inside = m.round(true, Some(3), true);
        assert_eq!((inside.retook, inside.sleep), (true, Some(20_000 + SLACK)));
        // An idle P is never retaken: its `sysmon` sleeps deeply.
        assert_eq!(
            m.round(false, Some(4), true),
            Round {
                sleep: None,
                retook: false
            }
        );
    }

    #[test]
    fn a_retake_is_reported_once_per_system_call_seen_twice() {
        let mut m = woken();
        let retook: Vec<bool> = [Some(1), Some(1), Some(2), None, Some(2), Some(2)]
            .iter()
            .map(|&call| m.round(true, call, false).retook)
            .collect();
        assert_eq!(retook, [false, true, false, false, false, true]);
    }
}
