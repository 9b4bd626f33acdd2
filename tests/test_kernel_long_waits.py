"""bench/kernel_long_waits.py on a hand-written recording: three nodes' groups on one
CPU. Node 0's working thread is preempted at 1 µs; its sysmon runs at 2 µs, nodes 2 and 1
run at 2.5 and 3 µs, and its working thread runs again at 4 µs, 0.5 ms inside the
average. Node 1's thread blocks at 2 µs, wakes at 2.6 µs and runs at 3 µs. Every
expectation is counted by hand from the rows (columns: t kind tgid tid nr_queued vlag sum
load key other left)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parents[1] / "bench"))
from kernel_eevdf import SWITCH, SWITCH_IN, WAKE, Recording
from kernel_long_waits import working_waits

NODE0, SYSMON0, NODE1, NODE2 = 100, 101, 200, 300
PREEMPTED, BLOCKED = 0, 1


def _switch(t: int, prev: tuple[int, int], state: int, nxt: tuple[int, int]) -> list[int]:
    # vlag: prev_state; sum: next tgid; other: next tid.
    return [t, SWITCH, prev[0], prev[1], 0, state, nxt[0], 0, 0, nxt[1], 0]


def _visit(t: int, tgid: int, tid: int, margin_ns: int) -> list[int]:
    # A group's state as it comes on: two equal entities summing to 2 × 1 ms, its own
    # vruntime `margin_ns` behind that average.
    avg = 1_000_000
    return [t, SWITCH_IN, tgid, tid, 3, 0, 2 * avg, 2, avg - margin_ns, 0, 0]


EVENTS = np.array(
    [
        _switch(0, (0, 0), BLOCKED, (NODE0, NODE0)),
        _switch(1_000, (NODE0, NODE0), PREEMPTED, (NODE1, NODE1)),  # node 0 waits
        _switch(2_000, (NODE1, NODE1), BLOCKED, (NODE0, SYSMON0)),  # its sysmon runs
        _visit(2_050, NODE0, SYSMON0, -20_000),
        _switch(2_500, (NODE0, SYSMON0), BLOCKED, (NODE2, NODE2)),
        [2_600, WAKE, NODE1, NODE1, 1, 0, 0, 0, 0, 0, 0],  # node 1 wakes: it waits
        _switch(3_000, (NODE2, NODE2), BLOCKED, (NODE1, NODE1)),  # node 1 runs
        _switch(4_000, (NODE1, NODE1), BLOCKED, (NODE0, NODE0)),  # node 0 runs again
        _visit(4_080, NODE0, NODE0, 500_000),
    ]
)


def _recording() -> Recording:
    node_of = {NODE0: 0, NODE1: 1, NODE2: 2}
    return Recording(node_of, {SYSMON0}, EVENTS, {0: "hubs", 1: "others", 2: "others"})


def test_a_preempted_thread_waits_until_it_runs_and_the_switches_inside_are_counted() -> None:
    (wait,) = working_waits(_recording(), 0)
    assert (wait.start, wait.end) == (1_000, 4_000)
    # Inside (1, 4) µs: its sysmon at 2 µs; node 2 at 2.5, node 1 at 3.
    assert (wait.own_switches, wait.own_sysmon) == (1, 1)
    assert (wait.other_switches, wait.other_groups) == (2, 2)
    # Its group's last visit: the one that ends the wait, 500 µs inside the average.
    assert wait.margin_us == 500.0


def test_a_woken_thread_waits_from_its_wake_up_and_sysmon_is_not_a_working_thread() -> None:
    (wait,) = working_waits(_recording(), 1)
    assert (wait.start, wait.end) == (2_600, 3_000)
    assert (wait.own_switches, wait.other_switches) == (0, 0)
    assert wait.margin_us is None, "no visit of its group was recorded"
    # Node 0's sysmon blocking at 2.5 µs starts no wait of node 0.
    assert len(working_waits(_recording(), 0)) == 1
