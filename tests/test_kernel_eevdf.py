"""bench/kernel_eevdf.py's reading of the probe's events, on a hand-written recording:
two nodes' groups on one CPU, node 0's sysmon running first, then node 1's working
thread (preempted), then node 0's working thread. Every expectation is worked out by
hand from the rows below (columns: t kind tgid tid nr_queued vlag sum load key other left)."""

from __future__ import annotations

import json
import platform
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
import polars as pl
import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "bench"))
from kernel_eevdf import (
    FUTEX,
    LEFT_SYSCALL,
    LEFT_USER,
    MODEL_PREEMPTED,
    MODEL_SYSMON,
    PREEMPTION_CAUSE_NS,
    SLEEP_BACK,
    SLEEP_DEEP,
    SLEEP_LONGEST,
    SLEEP_SHORT,
    SWITCH,
    SWITCH_IN,
    SWITCH_OUT,
    SYSMON_WAKES_ON_CPU,
    VISIT_GAP,
    VISIT_TIME,
    WAKE,
    WAKING,
    Recording,
    load,
    model_visits,
    read,
    sleep_rows,
    sysmon_share,
)

NODE0, SYSMON0, NODE1 = 100, 101, 200  # node 0's process (its working thread) and sysmon


def _switch(
    t: int,
    prev: tuple[int, int],
    state: int,
    nxt: tuple[int, int],
    v_in: int,
    v_out: int,
    left: int = LEFT_USER,
) -> list[int]:
    # vlag: prev_state; sum: next tgid; load: next group's vruntime; key: prev group's.
    return [t, SWITCH, prev[0], prev[1], 0, state, nxt[0], v_in, v_out, nxt[1], left]


def _state(t: int, kind: int, tgid: int, tid: int, avg: int, key: int) -> list[int]:
    # Two equal-weight entities summing to `avg` each: margin avg - key (ns).
    return [t, kind, tgid, tid, 3, 1024, 2 * avg, 2, key, 0, 0]


EVENTS = np.array(
    [
        [0, WAKE, NODE1, NODE1, 0, 0, 0, 0, 0, 0, 0],  # node 1's thread wakes its idle group
        [0, WAKING, NODE1, NODE1, 0, 250_000, 0, 0, 0, 0, 0],  # with 250 µs of lag kept
        _switch(1_000, (0, 0), 0, (NODE0, SYSMON0), 5_000, 0),
        _state(1_000, SWITCH_IN, NODE0, SYSMON0, avg=10_000, key=4_000),  # margin 6 µs
        # sysmon sleeps after 8 µs, its group's vruntime 5,000 -> 14,000: 9 µs charged.
        _switch(9_000, (NODE0, SYSMON0), 1, (NODE1, NODE1), 7_000, 14_000),
        _state(9_000, SWITCH_IN, NODE1, NODE1, avg=20_000, key=-10_000),  # margin 30 µs
        # node 0's sysmon wakes, its group queued; 1 µs later node 1 is preempted, 3 µs
        # past the average, for node 0's thread.
        [20_000, WAKE, NODE0, SYSMON0, 1, 0, 0, 0, 0, 0, 0],
        # node 1's thread was returning from write(2) (system call 1).
        _switch(21_000, (NODE1, NODE1), 0, (NODE0, NODE0), 14_000, 19_000, LEFT_SYSCALL + 1),
        _state(21_000, SWITCH_OUT, NODE1, NODE1, avg=5_000, key=8_000),
        _state(21_000, SWITCH_IN, NODE0, NODE0, avg=5_000, key=5_000),  # margin 0
        _switch(51_000, (NODE0, NODE0), 1, (0, 0), 0, 44_000),  # node 0 blocks: idle
    ],
    dtype=np.int64,
)


def _recording() -> Recording:
    return Recording(
        node_of={NODE0: 0, NODE1: 1},
        sysmon={SYSMON0},
        events=EVENTS,
        classes={0: "hubs", 1: "others"},
    )


def test_visits_are_counted_by_who_ran_first_and_whether_work_was_done() -> None:
    values = read(_recording())
    count = {key: len(v) for key, v in values.items() if key[1].startswith("visits")}
    assert count == {
        ("hubs", "visits, sysmon first, no working thread ran"): 1,
        ("others", "visits, working thread first, a working thread ran"): 1,
        ("hubs", "visits, working thread first, a working thread ran"): 1,
    }


def test_margins_lags_and_sysmon_runs_are_read_in_microseconds() -> None:
    values = read(_recording())
    assert values[("hubs", "margin at a visit, sysmon first")] == pytest.approx([6.0])
    assert values[("others", "margin at a visit, working thread first")] == pytest.approx([30.0])
    assert values[("hubs", "margin at a visit, working thread first")] == pytest.approx([0.0])
    assert values[("others", "margin when preempted")] == pytest.approx([-3.0])
    assert values[("others", "lag at waking (working thread)")] == pytest.approx([250.0])
    assert values[("others", "wake-ups of working thread, group idle")] == [1.0]
    assert values[("hubs", "sysmon run: vruntime it charged")] == pytest.approx([9.0])
    assert values[("hubs", "sysmon run: length")] == pytest.approx([8.0])
    assert values[("hubs", "group weight at a visit (nice 0: 1024)")] == [1024.0, 1024.0]


def test_sysmon_s_share_is_its_time_among_the_nodes_time_on_the_cpu() -> None:
    # On the CPU: sysmon 8 µs, node 1 12 µs, node 0's thread 30 µs.
    assert sysmon_share(_recording()) == pytest.approx(8 / 50)


def test_a_preemption_is_put_down_to_the_wake_up_just_before_it() -> None:
    # Node 1's thread leaves runnable at 21 µs for node 0's: node 0's sysmon woke 1 µs
    # before, with its group queued. Node 0's thread blocking at 51 µs is no preemption.
    values = read(_recording())
    causes = {k: len(v) for k, v in values.items() if k[1].startswith("preempted after")}
    assert causes == {
        ("others", "preempted after: another group's sysmon woke, that group queued"): 1
    }
    # It left in a system call: Go's P in _Psyscall.
    assert values[("others", "preempted in a system call (_Psyscall)")] == [1.0]
    assert ("others", "preempted in user code (its P running)") not in values


def test_switches_inside_a_node_are_counted_by_who_left_for_whom() -> None:
    # Node 0's working thread, running from 21 µs, leaves runnable at 30 µs for its own
    # sysmon, which a second thread of node 0 preempts at 40 µs; that one leaves
    # runnable at 45 µs for node 0's first thread. A switch to another node's thread, or
    # one that blocks, is not among them.
    other_thread = NODE0 + 2
    inside = [
        [25_000, WAKE, NODE0, SYSMON0, 1, 0, 0, 0, 0, 0, 0],
        _switch(30_000, (NODE0, NODE0), 0, (NODE0, SYSMON0), 0, 0),
        _switch(40_000, (NODE0, SYSMON0), 0, (NODE0, other_thread), 0, 0),
        _switch(45_000, (NODE0, other_thread), 0, (NODE0, NODE0), 0, 0),
    ]
    rec = _recording()
    rec.events = np.vstack([EVENTS[:-1], inside, EVENTS[-1:]])
    values = read(rec)
    counted = {k: len(v) for k, v in values.items() if k[1].startswith("switched out")}
    assert counted == {
        ("hubs", "switched out runnable inside its group: a working thread for its sysmon"): 1,
        (
            "hubs",
            "switched out runnable inside its group: sysmon for another working thread",
        ): 1,
        (
            "hubs",
            "switched out runnable inside its group: a working thread for another working thread",
        ): 1,
    }
    # The sysmon woke at 25 µs while its working thread ran (node 1's run at 20 µs is
    # another node's), and the working thread was then switched out for it.
    woke = {k: len(v) for k, v in values.items() if k[1].startswith(SYSMON_WAKES_ON_CPU)}
    assert woke == {
        ("hubs", SYSMON_WAKES_ON_CPU): 1,
        ("hubs", f"{SYSMON_WAKES_ON_CPU}: it was switched out for its sysmon"): 1,
    }


def test_a_preemption_with_no_recent_wake_up_is_the_tick_s() -> None:
    # Without node 0's sysmon waking, and node 1's own wake-up moved to just too long
    # before its preemption to have caused it.
    late = EVENTS[~((EVENTS[:, 1] == WAKE) & (EVENTS[:, 3] == SYSMON0))].copy()
    late[:2, 0] = 21_000 - PREEMPTION_CAUSE_NS - 1
    rec = _recording()
    rec.events = late
    causes = [k for k in read(rec) if k[1].startswith("preempted after")]
    assert causes == [("others", "preempted after: no node's thread woke (tick, kernel thread)")]


def test_a_recording_made_before_the_probe_read_where_threads_left_says_nothing_of_it(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "old"
    folder.mkdir()
    np.savetxt(folder.with_suffix(".events"), EVENTS[:, :10], fmt="%d")
    meta = {"cpu": 1, "nodes": {str(NODE0): 0, str(NODE1): 1}, "sysmon": [SYSMON0]}
    folder.with_suffix(".meta.json").write_text(json.dumps(meta))
    pl.DataFrame({"node": [0, 1], "kind": ["payload"] * 2, "msgs_recv": [9, 1]}).write_parquet(
        folder / "traffic.parquet"
    )
    rec = load(folder, hubs=1)
    assert rec.events.shape == (len(EVENTS), 11) and (rec.events[:, 10] == 0).all()
    assert rec.classes == {0: "hubs", 1: "others"}
    assert not [k for k in read(rec) if k[1].startswith("preempted in")]


def test_a_working_visit_counts_its_working_threads_time_not_sysmon_s() -> None:
    # Node 0's sysmon alone (1-9 µs) is no working visit; node 1's thread runs 9-21 µs,
    # node 0's 21-51 µs. Each group has one working visit: no gap yet.
    values = read(_recording())
    assert values[("others", VISIT_TIME)] == pytest.approx([12.0])
    assert values[("hubs", VISIT_TIME)] == pytest.approx([30.0])
    assert ("hubs", VISIT_GAP) not in values and ("others", VISIT_GAP) not in values


def test_the_gap_runs_from_a_working_visit_s_end_to_the_next_one_s_start() -> None:
    # Node 0's thread 0-10 µs, node 1's 10-30, node 0's sysmon 30-35 and thread 35-50.
    rows = [
        _switch(0, (0, 0), 0, (NODE0, NODE0), 0, 0),
        _switch(10_000, (NODE0, NODE0), 1, (NODE1, NODE1), 0, 0),
        _switch(30_000, (NODE1, NODE1), 1, (NODE0, SYSMON0), 0, 0),
        _switch(35_000, (NODE0, SYSMON0), 1, (NODE0, NODE0), 0, 0),
        _switch(50_000, (NODE0, NODE0), 1, (0, 0), 0, 0),
    ]
    rec = _recording()
    rec.events = np.array(rows, dtype=np.int64)
    values = read(rec)
    assert values[("hubs", VISIT_TIME)] == pytest.approx([10.0, 15.0])
    assert values[("hubs", VISIT_GAP)] == pytest.approx([20.0])
    assert values[("others", VISIT_TIME)] == pytest.approx([20.0])


def _model_run(folder: Path, waits: dict[str, list[object]]) -> None:
    # A model run's tables as `model_visits` reads them: the recorded waits given, two
    # messages published at 1,000 and 4,000 ns, node 0 the one that received more copies.
    pl.DataFrame(waits, schema_overrides={"ran_ns": pl.UInt64}).write_parquet(
        folder / "goroutine_waits.parquet"
    )
    pl.DataFrame({"msg": [0, 1], "t_publish_ns": [1_000, 4_000]}).write_parquet(
        folder / "publishes.parquet"
    )
    pl.DataFrame({"node": [0, 1], "kind": ["payload"] * 2, "msgs_recv": [9, 1]}).write_parquet(
        folder / "traffic.parquet"
    )


def test_a_model_run_s_visits_are_its_node_thread_waits_and_time_on_the_core(
    tmp_path: Path,
) -> None:
    # Node 0 runs from 1,000 ns for 100, from 1,500 for 200, from 5,000 for 50 (after the
    # last publication at 4,000: not read); node 1 from 2,000 for 300. A goroutine's
    # wait is no visit. Node 0 received more copies: with one hub, the hub.
    _model_run(
        tmp_path,
        {
            "node": [0, 0, 0, 0, 1],
            "goroutine": ["node thread"] * 3 + ["validator", "node thread"],
            "t_ns": [1_000, 1_500, 5_000, 1_600, 2_000],
            "wait_ns": [0] * 5,
            "ran_ns": [100, 200, 50, None, 300],
        },
    )
    values, nodes, span = model_visits(tmp_path, hubs=1)
    assert values[("hubs", VISIT_TIME)] == pytest.approx([0.1, 0.2])
    assert values[("hubs", VISIT_GAP)] == pytest.approx([0.4])  # 1,500 - (1,000 + 100)
    assert values[("others", VISIT_TIME)] == pytest.approx([0.3])
    assert nodes == {"hubs": 1, "others": 1} and span == pytest.approx(3e-6)


def test_a_model_run_is_read_over_the_recording_s_window_when_one_is_given(
    tmp_path: Path,
) -> None:
    # Publications from 3 s to 13 s. A recording starts a second into the publishing and
    # lasts `window` seconds: with 3 s, from 4 s to 7 s, so of node 0's visits at 3.5,
    # 4.5 and 7.5 s only the one at 4.5 s is read; with no window, all three.
    _model_run(
        tmp_path,
        {
            "node": [0, 0, 0],
            "goroutine": ["node thread"] * 3,
            "t_ns": [3_500_000_000, 4_500_000_000, 7_500_000_000],
            "wait_ns": [0] * 3,
            "ran_ns": [100_000, 200_000, 300_000],
        },
    )
    pl.DataFrame({"msg": [0, 1], "t_publish_ns": [3_000_000_000, 13_000_000_000]}).write_parquet(
        tmp_path / "publishes.parquet"
    )
    values, _, span = model_visits(tmp_path, hubs=1, window=3.0)
    assert values[("hubs", VISIT_TIME)] == pytest.approx([200.0])
    assert span == pytest.approx(3.0)
    whole, _, span = model_visits(tmp_path, hubs=1)
    assert whole[("hubs", VISIT_TIME)] == pytest.approx([100.0, 200.0, 300.0])
    assert span == pytest.approx(10.0)


def test_a_model_run_s_preemptions_and_sysmon_rounds_are_counted_by_class(
    tmp_path: Path,
) -> None:
    # Node 0 runs from 1,000 ns for 100 and waits from 1,100 (400 ns) to run again at
    # 1,500: it left the core with work, a preemption. Node 1 runs from 2,000 for 300 and
    # its next wait begins at 2,600, after it blocked: none. Node 0's sysmon rounds at
    # 1,200 and 3,000, node 1's at 4,500 (after the last publication at 4,000: not read).
    _model_run(
        tmp_path,
        {
            "node": [0, 0, 1, 1, 0, 0, 1],
            "goroutine": ["node thread"] * 4 + ["sysmon"] * 3,
            "t_ns": [1_000, 1_500, 2_000, 3_000, 1_200, 3_000, 4_500],
            "wait_ns": [0, 400, 0, 400, 0, 0, 0],
            "ran_ns": [100, 200, 300, 50, None, None, None],
        },
    )
    values, _, _ = model_visits(tmp_path, hubs=1)
    assert len(values[("hubs", MODEL_PREEMPTED)]) == 1
    assert ("others", MODEL_PREEMPTED) not in values
    assert len(values[("hubs", MODEL_SYSMON)]) == 2
    assert ("others", MODEL_SYSMON) not in values


def _sleeps(values: dict[tuple[str, str], list[float]], cls: str) -> tuple[int, ...]:
    rows = (SLEEP_SHORT, SLEEP_LONGEST, SLEEP_BACK, SLEEP_DEEP)
    return tuple(len(values.get((cls, row), [])) for row in rows)


def test_sysmon_s_sleeps_are_short_longest_or_a_return_to_short() -> None:
    # Four short sleeps (its 20 µs and the timer's slack, and the first doubling), two of
    # 10 ms; the short one after the second 10 ms is a return; 130 µs is neither; one
    # of them (the 130 µs) was deep.
    values: dict[tuple[str, str], list[float]] = defaultdict(list)
    lengths = [70.0, 90.0, 130.0, 10_000.0, 10_050.0, 70.0, 70.0]
    sleep_rows("hubs", [(x, x == 130.0) for x in lengths], values)
    assert _sleeps(values, "hubs") == (4, 2, 1, 1)


def test_a_recording_s_sysmon_sleeps_run_from_leaving_the_cpu_to_waking() -> None:
    # Node 0's sysmon leaves the CPU at 9 µs and wakes at 20 µs (11 µs asleep); then it
    # leaves at 60 µs in futex, its deep sleep, and wakes 10 ms later, then sleeps 70 µs.
    futex = LEFT_SYSCALL + FUTEX[platform.machine()]
    later = [
        _switch(60_000, (NODE0, SYSMON0), 1, (0, 0), 0, 0, futex),
        [10_060_000, WAKE, NODE0, SYSMON0, 1, 0, 0, 0, 0, 0, 0],
        _switch(10_070_000, (0, 0), 0, (NODE0, SYSMON0), 0, 0),
        _switch(10_080_000, (NODE0, SYSMON0), 1, (0, 0), 0, 0),
        [10_150_000, WAKE, NODE0, SYSMON0, 1, 0, 0, 0, 0, 0, 0],
    ]
    rec = _recording()
    rec.events = np.vstack([EVENTS, later])
    assert _sleeps(read(rec), "hubs") == (2, 1, 1, 1)


def test_a_model_run_s_sysmon_sleeps_run_from_a_round_s_end_to_the_next_wake_up(
    tmp_path: Path,
) -> None:
    # Publications from 0 to 100 ms; node 0's rounds, taking no time (no scenario.toml),
    # at 1 ms, at 1.08 ms (woke at 1.07: 70 µs asleep), at 11.2 ms (woke at 11.1: 10.02
    # ms after the round at 1.08) and at 11.3 ms (woke at 11.27: 70 µs): short, the
    # longest, and short again, a return.
    ms = 1_000_000
    pl.DataFrame(
        {
            "node": [0] * 4,
            "goroutine": ["sysmon"] * 4,
            "t_ns": [ms, 1_080_000, 11_200_000, 11_300_000],
            "wait_ns": [0, 10_000, 100_000, 30_000],
            "ran_ns": [None] * 4,
        },
        schema_overrides={"ran_ns": pl.UInt64},
    ).write_parquet(tmp_path / "goroutine_waits.parquet")
    pl.DataFrame({"msg": [0, 1], "t_publish_ns": [0, 100 * ms]}).write_parquet(
        tmp_path / "publishes.parquet"
    )
    pl.DataFrame({"node": [0], "kind": ["payload"], "msgs_recv": [9]}).write_parquet(
        tmp_path / "traffic.parquet"
    )
    values, _, _ = model_visits(tmp_path, hubs=1)
    # 10.02 ms is none of sysmon's delays with the slack: a deep sleep.
    assert _sleeps(values, "hubs") == (2, 1, 1, 1)


def test_a_model_run_s_sysmon_wake_ups_are_counted_by_where_the_node_was(
    tmp_path: Path,
) -> None:
    # Node 0's sysmon woke with its working thread on the core (a wake-up that can
    # preempt it) and then with the node idle; node 1's with the node waiting for the
    # core: the recording's rows, the group queued when it waits or runs.
    _model_run(
        tmp_path,
        {
            "node": [0, 0, 1],
            "goroutine": ["sysmon"] * 3,
            "t_ns": [1_200, 3_000, 2_000],
            "wait_ns": [0, 0, 0],
            "ran_ns": [None] * 3,
            "readied_by": ["node running", "node idle", "node waiting"],
        },
    )
    values, _, _ = model_visits(tmp_path, hubs=1)
    woke = {k: len(v) for k, v in values.items() if k[1].startswith("wake-ups of sysmon")}
    assert woke == {
        ("hubs", "wake-ups of sysmon, group queued"): 1,
        ("hubs", SYSMON_WAKES_ON_CPU): 1,
        ("hubs", "wake-ups of sysmon, group idle"): 1,
        ("others", "wake-ups of sysmon, group queued"): 1,
        ("hubs", MODEL_SYSMON): 2,
        ("others", MODEL_SYSMON): 1,
    }
