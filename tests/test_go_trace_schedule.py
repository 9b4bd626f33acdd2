"""bench/go_trace_schedule.py on a hand-written `go tool trace -d=parsed` sample (go1.26's
text form); every expectation below is worked out by hand from the sample's times."""

from __future__ import annotations

import sys
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).parents[1] / "bench"))
from go_trace_schedule import (
    NO_P,
    P_LOST,
    PREEMPTED,
    SCHEDULER,
    median,
    model_queue_at_ready,
    model_report,
    model_waits_by_readier,
    parse,
    quantile,
    report,
    role_of,
)

PUBSUB = "github.com/libp2p/go-libp2p-pubsub"


def _frame(function: str) -> str:
    return f"\t{function} @ 0x4a56e0\n\t\t/src/file.go:10\n"


def _event(
    m: int, p: int, g: int, t: int, what: str, transition: str = "", stack: str = "", why: str = ""
) -> str:
    text = f'M={m} P={p} G={g} StateTransition Time={t} {what} Reason="{why}"\n'
    if transition:
        text += "TransitionStack=\n" + _frame(transition)
    if stack:
        text += "Stack=\n" + _frame(stack) + "\n"
    return text


VALIDATOR = f"{PUBSUB}.(*PubSub).validateWorker"
LOOP = f"{PUBSUB}.(*PubSub).processLoop"
READER = f"{PUBSUB}.(*PubSub).handleNewStream"
SAMPLE = "".join(
    [
        "M=-1 P=-1 G=-1 Sync Time=10 N=1 Trace=10 Mono=10 Wall=2026-01-01T00:00:00Z\n",
        _event(1, -1, -1, 100, "ProcID=0 Undetermined->Running"),  # no start: no stretch
        _event(1, 0, -1, 110, "GoID=3 Undetermined->Runnable"),  # no start: no wait
        _event(1, 0, -1, 200, "ProcID=0 Running->Idle"),
        _event(1, 0, -1, 300, "GoID=3 Runnable->Running"),
        _event(1, -1, -1, 1000, "ProcID=0 Idle->Running"),
        # Created by G1: the transition stack is G5's start, the stack G1's.
        _event(1, 0, 1, 1000, "GoID=5 NotExist->Runnable", VALIDATOR, "main.main"),
        _event(1, 0, -1, 1100, "GoID=5 Runnable->Running"),  # validator waits 100
        _event(1, 0, 5, 1200, "GoID=5 Running->Waiting", VALIDATOR, VALIDATOR, "chan receive"),
        _event(1, 0, -1, 1250, "GoID=9 Runnable->Running"),  # runnable since unknown
        _event(1, 0, 9, 1300, "GoID=5 Waiting->Runnable", stack=LOOP),
        # G9 wakes G8: the stack is G9's, so it says nothing of G8, which stays other.
        _event(1, 0, 9, 1350, "GoID=8 Waiting->Runnable", stack=LOOP),
        _event(1, 0, 9, 1400, "GoID=9 Running->Waiting", stack=LOOP),  # G9: event loop
        _event(1, 0, -1, 1500, "ProcID=0 Running->Idle"),  # P0: 500
        _event(2, -1, -1, 1600, "ProcID=1 Idle->Running"),
        _event(2, 1, -1, 1700, "GoID=5 Runnable->Running"),  # validator 400
        _event(2, 1, -1, 1750, "GoID=8 Runnable->Running"),  # other 400
        _event(2, 1, 5, 1800, "GoID=5 Running->Runnable", stack=VALIDATOR),
        _event(1, -1, -1, 2000, "ProcID=0 Idle->Running"),
        _event(1, 0, -1, 2050, "GoID=5 Runnable->Running"),  # validator 250
        _event(1, 0, 5, 2100, "GoID=5 Running->Waiting", stack=VALIDATOR, why="select"),
        _event(
            1,
            0,
            11,
            2200,
            "GoID=11 Running->Waiting",
            stack="github.com/libp2p/go-yamux/v5.(*Session).recvLoop",
            why="network",
        ),
        _event(1, 0, -1, 2300, "GoID=11 Waiting->Runnable"),
        _event(1, 0, -1, 2330, "GoID=11 Runnable->Running"),  # yamux recvLoop 30
        _event(1, 0, -1, 2400, "GoID=5 Waiting->Runnable"),
        _event(1, 0, -1, 2450, "GoID=5 Runnable->Running"),  # validator 50
        _event(1, 0, 5, 2500, "GoID=5 Running->Runnable", stack=VALIDATOR),
        _event(1, 0, -1, 2800, "GoID=5 Runnable->Running"),  # validator 300
        _event(2, 1, -1, 3000, "ProcID=1 Running->Idle"),  # P1: 1400
        # The tracer's next generation restates P0's state: its stretch goes on.
        _event(1, -1, -1, 3500, "ProcID=0 Running->Running"),
        _event(1, 0, -1, 4000, "ProcID=0 Running->Idle"),  # P0: 2000
        _event(1, 0, 1, 4100, "GoID=13 NotExist->Runnable", "runtime.gcBgMarkWorker", "main.main"),
        _event(1, 0, -1, 4160, "GoID=13 Runnable->Running"),  # GC 60
        _event(1, -1, -1, 5000, "ProcID=0 Idle->Running"),  # never ends: not counted
        _event(1, 0, -1, 5100, "GoID=12 Waiting->Runnable"),  # never runs: not counted
    ]
)


def test_busy_stretches_per_p_run_from_idle_to_running_until_running_ends() -> None:
    s = parse(SAMPLE.splitlines())
    assert dict(s.busy) == {0: [500, 2000], 1: [1400]}
    assert (s.first_ns, s.last_ns) == (10, 5100)


def test_waits_go_to_the_role_of_the_goroutines_own_frames() -> None:
    s = parse(SAMPLE.splitlines())
    assert s.roles == {5: "validator", 9: "event loop", 11: "yamux recvLoop", 13: "GC"}
    assert s.waits_by_role() == {
        "validator": [50, 100, 250, 300, 400],
        "yamux recvLoop": [30],
        "GC": [60],
        "other": [400],
    }


def test_blocked_time_goes_to_the_role_and_what_it_blocked_on() -> None:
    # G5 blocks 1200-1300 (chan receive) and 2100-2400 (select), G11 2200-2300 (network);
    # G9 blocks at 1400 and is never woken, G8 and G12 wake without a known start: none
    # of those counts.
    s = parse(SAMPLE.splitlines())
    # Where: the first non-runtime frame of the blocking (transition) stack, "-" if none.
    assert s.blocked_by_role() == {
        "validator": {
            "chan receive @ libp2p/go-libp2p-pubsub.(*PubSub).validateWorker": [100],
            "select @ -": [300],
        },
        "yamux recvLoop": {"network @ -": [100]},
    }
    lines = report("node-0", s).splitlines()
    at = lines.index(next(line for line in lines if "blocked on" in line))
    assert lines[at + 3].split() == [
        "yamux",
        "recvLoop",
        "1",
        "0.000",
        "0.1",
        "0.1",
        "network",
        "@",
        "-",
    ]


def test_the_report_has_the_hand_computed_numbers() -> None:
    text = report("node-0", parse(SAMPLE.splitlines()))
    lines = text.splitlines()
    # 5100 - 10 ns traced; P0: 2 stretches, 2500 ns busy (49.1%), median 1.25 µs, longest 2 µs.
    assert lines[0] == "node-0: 0.000 s traced"
    assert lines[2].split() == ["0", "2", "0.000", "49.1%", "1.2", "2.0"]
    assert lines[3].split() == ["1", "1", "0.000", "27.5%", "1.4", "1.4"]
    # validator: 5 waits; nearest rank p50 = 3rd = 250, p90 = p99 = 5th = 400.
    assert lines[5].split() == ["validator", "5", "0.2", "0.4", "0.4", "0.4"]


def test_nearest_rank_quantiles_and_median() -> None:
    values = list(range(1, 11))
    assert [quantile(values, q) for q in (0.5, 0.9, 0.99)] == [5, 9, 10]
    assert median([1, 2, 3, 4]) == 2.5
    assert median([1, 5, 9]) == 5


def test_roles_by_function_name_components() -> None:
    assert role_of(f"{PUBSUB}.(*PubSub).handleNewStream") == "reader"
    assert role_of(f"{PUBSUB}.(*PubSub).handleSendingMessages.func1") == "writer"
    assert role_of("github.com/libp2p/go-yamux/v5.(*Session).sendLoop") == "yamux sendLoop"
    # A sendLoop outside yamux, and a name that merely contains a role's, name none.
    assert role_of("github.com/quic-go/quic-go.(*connection).sendLoop") is None
    assert role_of("main.processLoopHelper") is None


def test_running_time_and_turns_per_role() -> None:
    # From SAMPLE's times: G5 (validator) runs 1100-1200, 1700-1800, 2050-2100 and
    # 2450-2500 (300 ns) and from 2800 to the end (not counted): 5 turns. G9 (event
    # loop) runs 1250-1400 (150 ns), 1 turn. G3, G8 (other), G11 (recvLoop) and G13
    # (GC) start a turn each and never leave Running: 0 ns. 450 ns in all.
    s = parse(SAMPLE.splitlines())
    rows = {role: (r.running_ns, r.turns, r.syscalls) for role, r in s.running_by_role().items()}
    assert rows == {
        "validator": (300, 5, 0),
        "event loop": (150, 1, 0),
        "yamux recvLoop": (0, 1, 0),
        "GC": (0, 1, 0),
        "other": (0, 2, 0),
    }
    lines = report("node-0", s).splitlines()
    at = lines.index(next(line for line in lines if "running s" in line))
    assert lines[at + 1].split() == ["validator", "0.000", "5", "66.7%", "0", "0.000", "0", "0"]
    assert lines[at + 2].split() == [
        "event",
        "loop",
        "0.000",
        "1",
        "33.3%",
        "0",
        "0.000",
        "0",
        "0",
    ]


SENDLOOP = "github.com/libp2p/go-yamux/v5.(*Session).sendLoop"
SYSCALLS = "".join(
    [
        _event(1, 0, -1, 100, "GoID=21 Undetermined->Running"),  # no start: no stretch
        _event(1, 0, 21, 150, "GoID=21 Running->Syscall", stack=SENDLOOP),  # syscall 150-190
        _event(1, 0, 21, 190, "GoID=21 Syscall->Running"),  # a stretch, no turn
        _event(1, 0, 22, 200, "GoID=22 NotExist->Runnable", f"{PUBSUB}.(*PubSub).handleNewStream"),
        _event(1, 0, 21, 400, "GoID=21 Running->Running"),  # a new generation: goes on
        _event(1, 0, 21, 500, "GoID=21 Running->Syscall"),  # 190-500: 310; syscall 500-520
        _event(1, -1, 21, 520, "GoID=21 Syscall->Runnable"),  # its P taken: no stretch
        _event(1, 0, -1, 550, "GoID=22 Runnable->Running"),  # reader's turn, 550-630
        _event(1, 0, 22, 630, "GoID=22 Running->Waiting", why="network"),
        _event(1, 0, -1, 640, "GoID=21 Runnable->Running"),  # a turn, 640-740
        _event(1, 0, 21, 740, "GoID=21 Running->Waiting", why="chan receive"),
    ]
)


def test_system_calls_end_a_stretch_and_are_counted_apart() -> None:
    # sendLoop: 310 + 100 = 410 ns running, 1 turn, 1 return from a syscall, 40 + 20 ns in
    # syscalls; reader: 80 ns, 1 turn. 490 ns in all: 83.7 % and 16.3 %.
    s = parse(SYSCALLS.splitlines())
    rows = s.running_by_role()
    sendloop, reader = rows["yamux sendLoop"], rows["reader"]
    assert (sendloop.running_ns, sendloop.turns, sendloop.syscalls, sendloop.syscall_ns) == (
        410,
        1,
        1,
        60,
    )
    assert (reader.running_ns, reader.turns, reader.syscalls, reader.syscall_ns) == (80, 1, 0, 0)
    # The sendLoop left its second syscall without its P (taken at 520), and waited 120 ns
    # for one: a wait readied by the lost P, as the model names it.
    assert (sendloop.p_lost, reader.p_lost) == (1, 0)
    assert s.waits_by_readier()["yamux sendLoop"] == {P_LOST: [120]}
    assert list(rows) == ["reader", "yamux sendLoop"]
    lines = report("node-1", s).splitlines()
    at = lines.index(next(line for line in lines if "running s" in line))
    assert lines[at + 1].split() == ["reader", "0.000", "1", "16.3%", "0", "0.000", "0", "0"]
    assert lines[at + 2].split() == [
        "yamux",
        "sendLoop",
        "0.000",
        "1",
        "83.7%",
        "1",
        "0.000",
        "1",
        "0",
    ]


def test_waits_by_who_readied_the_goroutine() -> None:
    # In SAMPLE: G9 (event loop) readies G5 at 1300 (runs 1700) and G8 at 1350 (runs
    # 1750); P0's scheduler readies G11 at 2300 (runs 2330) and G5 at 2400 (runs 2450).
    # G12, readied at 5100, never runs. Created goroutines (NotExist->) count nowhere.
    s = parse(SAMPLE.splitlines())
    assert s.waits_by_readier() == {
        "validator": {SCHEDULER: [50], "event loop": [400]},
        "yamux recvLoop": {SCHEDULER: [30]},
        "other": {"event loop": [400]},
    }
    # G11 blocks on the network at 2900; a thread holding no P (sysmon's netpoll)
    # readies it at 3000; it runs at 3900.
    blocks = _event(1, 0, 11, 2900, "GoID=11 Running->Waiting", why="network")
    sysmon = blocks + _event(7, -1, -1, 3000, "GoID=11 Waiting->Runnable")
    late = _event(1, 0, -1, 3900, "GoID=11 Runnable->Running")
    s = parse((SAMPLE + sysmon + late).splitlines())
    assert s.waits_by_readier()["yamux recvLoop"] == {NO_P: [900], SCHEDULER: [30]}
    text = report("node-0", s)
    assert "  yamux recvLoop  no P (sysmon)              1       0.9       0.9       0.9" in text


def test_a_goroutine_sysmon_preempted_is_readied_by_the_preemption() -> None:
    # The validator runs from 100, sysmon preempts it at 250 (Running->Runnable,
    # "preempted": runtime/proc.go retake -> preemptone), it runs again at 400: a wait of
    # 150 readied by the preemption, and one preemption in its row; a plain
    # Running->Runnable (a yield) readies nothing.
    trace = "".join(
        [
            _event(1, 0, 1, 10, "GoID=5 NotExist->Runnable", VALIDATOR, "main.main"),
            _event(1, 0, -1, 100, "GoID=5 Runnable->Running"),
            _event(1, 0, 5, 250, "GoID=5 Running->Runnable", stack=VALIDATOR, why="preempted"),
            _event(1, 0, -1, 400, "GoID=5 Runnable->Running"),
            _event(1, 0, 5, 450, "GoID=5 Running->Runnable", stack=VALIDATOR),
            _event(1, 0, -1, 500, "GoID=5 Runnable->Running"),
        ]
    )
    s = parse(trace.splitlines())
    assert s.waits_by_readier() == {"validator": {PREEMPTED: [150]}}
    assert s.running_by_role()["validator"].preempted == 1


def test_the_goroutines_runnable_when_one_is_readied() -> None:
    # In SAMPLE, G8 is readied at 1350 while G5, readied at 1300, waits: one other;
    # every other readying finds the run queue empty.
    s = parse(SAMPLE.splitlines())
    assert s.queue_at_ready_by_role() == {
        "validator": [0, 0],
        "yamux recvLoop": [0],
        "other": [0, 1],
    }
    # Two goroutines created runnable, then the validator readied behind them, then one
    # of them runs and a reader is readied: 2, then 2 again (the other and the validator).
    queue = "".join(
        [
            _event(1, 0, 1, 100, "GoID=20 NotExist->Runnable", LOOP, "main.main"),
            _event(1, 0, 1, 110, "GoID=21 NotExist->Runnable", READER, "main.main"),
            _event(1, 0, 20, 120, "GoID=22 Waiting->Runnable", VALIDATOR),
            _event(1, 0, -1, 130, "GoID=20 Runnable->Running"),
            _event(1, 0, 20, 140, "GoID=23 Waiting->Runnable", READER),
        ]
    )
    s = parse(queue.splitlines())
    assert s.queue_at_ready_by_role() == {"validator": [2], "reader": [2]}
    text = report("node-1", s)
    assert "  validator              1                          2     2     2" in text


def test_the_model_s_goroutines_runnable_at_each_wait(tmp_path: Path) -> None:
    # Node 3's recorded waits, [t_ns - wait_ns, t_ns): reader [5, 15), validator
    # [10, 20), writer [12, 30), a zero wait of the loop at 14; its own thread's wait and
    # node 4's are left out. At 5 nothing else waits; at 10 the reader; at 12 the reader
    # and the validator; at 14 those and the writer.
    rows = [
        (3, "reader", 15, 10),
        (3, "validator", 20, 10),
        (3, "writer", 30, 18),
        (3, "event loop", 14, 0),
        (3, "node thread", 11, 8),
        (4, "reader", 11, 8),
    ]
    folder = tmp_path / "run"
    folder.mkdir()
    pl.DataFrame(rows, schema=["node", "goroutine", "t_ns", "wait_ns"], orient="row").with_columns(
        pl.col("wait_ns").cast(pl.UInt64)
    ).write_parquet(folder / "goroutine_waits.parquet")
    assert model_queue_at_ready(folder, 3) == {
        "reader": [0],
        "validator": [1],
        "writer": [2],
        "event loop": [3],
    }


def test_the_model_s_waits_by_what_readied_them(tmp_path: Path) -> None:
    # Node 3's goroutine waits with what readied them; its own thread's (readied_by
    # null) and node 4's are left out.
    rows = [
        (3, "validator", 20, 10, "event loop"),
        (3, "validator", 40, 30, "preempted"),
        (3, "validator", 50, 5, "event loop"),
        (3, "yamux recvLoop", 60, 50, "sysmon's netpoll"),
        (3, "node thread", 11, 8, None),
        (4, "reader", 11, 8, "netpoll"),
    ]
    folder = tmp_path / "run"
    folder.mkdir()
    schema = ["node", "goroutine", "t_ns", "wait_ns", "readied_by"]
    pl.DataFrame(rows, schema=schema, orient="row").with_columns(
        pl.col("wait_ns").cast(pl.UInt64)
    ).write_parquet(folder / "goroutine_waits.parquet")
    assert model_waits_by_readier(folder, 3) == {
        "validator": {"event loop": [5, 10], "preempted": [30]},
        "yamux recvLoop": {"sysmon's netpoll": [50]},
    }
    text = model_report(folder, 3)
    assert "  validator       preempted                  1       0.0       0.0       0.0" in text
