"""How go scheduled a traced node: its P's busy stretches and its goroutines' waits.

Takes execution traces of `[testbed] go_trace` (`go-traces/node-<id>.trace` of a results
folder), reads each with `go tool trace -d=parsed` (the text form of
internal/trace's events, go1.26: a header line per event, `M=.. P=.. G=.. StateTransition
Time=.. GoID=N From->To Reason=..` or `.. ProcID=N From->To ..`, then tab-indented frames
under `TransitionStack=` and `Stack=`) and prints per trace:

- per P, its busy stretches, from `ProcID=N Idle->Running` to the P's next transition
  out of Running (`Running->Running`, which the tracer writes at each of its
  generations, about one a second, restates the state and ends nothing): how many,
  their total in seconds, the median and the longest;
- per goroutine role, the wait from becoming runnable (`GoID=N ..->Runnable`) to running
  (`Runnable->Running`): how many, p50, p90, p99 and max (nearest rank: the
  ceil(q * n)-th smallest);
- per goroutine role, the same waits by who made it runnable (`Waiting->Runnable`): a
  goroutine (the event's `G=`: a channel send, a `sync.Cond` signal, a hand-off to
  `runnext`), its P's own scheduler (`G=-1` on a P: the netpoller polled by
  `findRunnable`, a timer), or a thread holding no P (`P=-1`: `sysmon`'s netpoll, whose
  goroutines `injectglist` puts on the global run queue, which a busy P serves one
  goroutine every 61st turn or all at once when its own queue is empty), and "preempted"
  for a goroutine runnable again after `sysmon` preempted it for a long turn
  (`Running->Runnable Reason="preempted"`, runtime/proc.go `retake`);
- per goroutine role, how many other goroutines of the node were runnable when it was
  readied (`Waiting->Runnable`): the run queue it joined, local and global together
  (with one P every runnable goroutine waits for that P), p50 / p90 / p99;
- per goroutine role and what it blocked on (`Running->Waiting Reason="..."`: "network"
  is the netpoller, where a read finds no data or a write finds the socket's buffer
  full; "chan send", "select", "sync.(*Cond).Wait" and so on) where (the first frame of
  the blocking stack outside the runtime, e.g. `go-yamux/v5.(*Session).sendMsg` for a
  full `sendCh`, `go-yamux/v5.(*Stream).write` for a closed stream window), the time
  from blocking to being woken (`Waiting->`): how many, the total in seconds, p50 and
  max;
- per goroutine role, its time running and its turns: the sum of its Running stretches
  (from a transition to Running to the goroutine's next transition out of Running; a
  `Running->Running` restates the state at a new generation and ends nothing), the
  number of turns the scheduler gave it (`Runnable->Running`), the share of the node's
  running time (all its goroutines' stretches), and apart from those the system calls
  its stretches stopped for (`Syscall->Running` starts a stretch but is no new turn;
  the time from `Running->Syscall` to leaving Syscall is in neither), and how many of
  those it left without its P (`Syscall->Runnable`: `sysmon`'s `retake` handed the P to
  another thread while the goroutine was in the syscall, runtime/proc.go `handoffp`, and
  the goroutine waits on the global run queue), and how many times `sysmon` preempted
  it. Running is the
  goroutine's hold on its P, not CPU time: it includes the time the kernel ran other
  processes on the node's CPU.

A goroutine's role is the first of these its own frames name (a function's last name
components, `(*PubSub).processLoop` names processLoop): validateWorker (validator),
processLoop (event loop), handleNewStream (reader), handleSendingMessages (writer),
yamux's recvLoop and sendLoop, gcBgMarkWorker (GC); none: other. Its own frames are
an event's `Stack=` when the event runs on that goroutine (`G=` is its GoID) and any
`TransitionStack=`, which is the transitioning goroutine's stack (internal/trace
resources.go StateTransition.Stack: on creation, the new goroutine's start). A wait
counts for the role the goroutine has by the end of the trace. States entered before
the trace began (`Undetermined->`) start no stretch and no wait.

With `--model RUN --node N`, for node N of a model run with `[cpu] record_waits`
(goroutine_waits.parquet): the "readied by" table from its `readied_by` column (a
goroutine kind for a hand-off; "netpoll" where a trace says its P's scheduler, "sysmon's
netpoll" where it says no P, "timer", "preempted", and "outside" for work the model
gives from no goroutine, a writer's socket or stream window, the heartbeat), and the
"others runnable" table: at the start of each recorded wait
(`t_ns - wait_ns`: readied, or put back after a turn used up) from the first publication
to the last, as a trace of the measured interval, the node's other goroutines whose
waits span that moment (with the event loop the model has yamux's recvLoop apart from
the reader, as Go; without it the reader stands for handleNewStream and recvLoop).

    go_trace_schedule.py RESULTS/go-traces/node-0.trace [...]
    go_trace_schedule.py --model MODEL_RUN --node 5
"""

from __future__ import annotations

import math
import re
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

# (role, function name component, package substring or "" for any), in precedence order.
ROLES = (
    ("validator", "validateWorker", ""),
    ("event loop", "processLoop", ""),
    ("reader", "handleNewStream", ""),
    ("writer", "handleSendingMessages", ""),
    ("yamux recvLoop", "recvLoop", "yamux"),
    ("yamux sendLoop", "sendLoop", "yamux"),
    # The testbed's application reading its subscription (gossipnode's Node.subscribe).
    ("application", "subscribe", "gossipnode"),
    ("GC", "gcBgMarkWorker", ""),
)
ROLE_ORDER = [role for role, _, _ in ROLES] + ["other"]
# Who made a goroutine runnable when no goroutine did (see the module's docstring).
SCHEDULER = "its P's scheduler"
NO_P = "no P (sysmon)"
# A goroutine runnable again after sysmon preempted it (`Running->Runnable`, "preempted").
PREEMPTED = "preempted"
# A goroutine back from a system call whose P sysmon retook (`Syscall->Runnable`,
# runtime/proc.go exitsyscallNoP): the name the model's `goroutine_waits` give it too.
P_LOST = "P lost"

_HEADER = re.compile(r"^M=(-?\d+) P=(-?\d+) G=(-?\d+) (\w+) Time=(\d+)")
_GO = re.compile(r" GoID=(\d+) (\w+)->(\w+)")
_PROC = re.compile(r" ProcID=(\d+) (\w+)->(\w+)")
_REASON = re.compile(r' Reason="([^"]*)"')
_FRAME = re.compile(r"^\t(\S.*?) @ 0x[0-9a-f]+$")


@dataclass
class RoleTime:
    """One role's time running and turns, summed over its goroutines (ns)."""

    running_ns: int = 0
    turns: int = 0
    syscalls: int = 0
    syscall_ns: int = 0
    p_lost: int = 0
    preempted: int = 0


@dataclass
class Schedule:
    """What one trace says about the P's and the goroutines' waits (times in ns)."""

    busy: dict[int, list[int]] = field(default_factory=lambda: defaultdict(list))
    waits: dict[int, list[int]] = field(default_factory=lambda: defaultdict(list))
    roles: dict[int, str] = field(default_factory=dict)
    # goroutine -> what it blocked on -> how long each time
    blocked: dict[int, dict[str, list[int]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(list))
    )
    # goroutine -> its Running stretches, its turns, its system calls (returns from
    # Syscall to Running) and the time it spent in them
    running: dict[int, list[int]] = field(default_factory=lambda: defaultdict(list))
    turns: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    syscalls: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    syscall_ns: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    # goroutine -> its returns from a syscall without its P (`Syscall->Runnable`)
    p_lost: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    # goroutine -> the times sysmon preempted it (`Running->Runnable`, "preempted")
    preempted: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    # goroutine -> (who readied it, how long it then waited) for each Waiting->Runnable
    # that ran: a goroutine id, or SCHEDULER / NO_P
    readied: dict[int, list[tuple[int | str, int]]] = field(
        default_factory=lambda: defaultdict(list)
    )
    # goroutine -> the other runnable goroutines at each of its Waiting->Runnable
    queue_at_ready: dict[int, list[int]] = field(default_factory=lambda: defaultdict(list))
    first_ns: int | None = None
    last_ns: int | None = None

    def waits_by_readier(self) -> dict[str, dict[str, list[int]]]:
        """Per role, its waits by who readied it (a goroutine by that one's role)."""
        out: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
        for goid, rows in self.readied.items():
            for who, waited in rows:
                name = who if isinstance(who, str) else self.roles.get(who, "other")
                out[self.roles.get(goid, "other")][name].append(waited)
        return {
            role: {who: sorted(out[role][who]) for who in sorted(out[role])}
            for role in ROLE_ORDER
            if out.get(role)
        }

    def queue_at_ready_by_role(self) -> dict[str, list[int]]:
        """Per role, the other runnable goroutines at its readyings, sorted."""
        out: dict[str, list[int]] = defaultdict(list)
        for goid, counts in self.queue_at_ready.items():
            out[self.roles.get(goid, "other")] += counts
        return {role: sorted(out[role]) for role in ROLE_ORDER if role in out}

    def waits_by_role(self) -> dict[str, list[int]]:
        out: dict[str, list[int]] = defaultdict(list)
        for goid, waits in self.waits.items():
            out[self.roles.get(goid, "other")] += waits
        return {role: sorted(out[role]) for role in ROLE_ORDER if out.get(role)}

    def running_by_role(self) -> dict[str, RoleTime]:
        out: dict[str, RoleTime] = defaultdict(RoleTime)
        goroutines = set(self.running) | set(self.turns) | set(self.syscalls)
        for goid in goroutines:
            row = out[self.roles.get(goid, "other")]
            row.running_ns += sum(self.running.get(goid, []))
            row.turns += self.turns.get(goid, 0)
            row.syscalls += self.syscalls.get(goid, 0)
            row.syscall_ns += self.syscall_ns.get(goid, 0)
            row.p_lost += self.p_lost.get(goid, 0)
            row.preempted += self.preempted.get(goid, 0)
        return {role: out[role] for role in ROLE_ORDER if role in out}

    def blocked_by_role(self) -> dict[str, dict[str, list[int]]]:
        out: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
        for goid, reasons in self.blocked.items():
            for reason, times in reasons.items():
                out[self.roles.get(goid, "other")][reason] += times
        return {
            role: {reason: sorted(out[role][reason]) for reason in sorted(out[role])}
            for role in ROLE_ORDER
            if out.get(role)
        }


def role_of(function: str) -> str | None:
    """The role a frame's function names, if any."""
    parts = function.split(".")
    for role, name, package in ROLES:
        if name in parts and package in function:
            return role
    return None


def _stack_sections(lines: list[str]) -> tuple[list[str], list[str]]:
    """The frames under TransitionStack= and under Stack= of one event's body lines."""
    sections: dict[str, list[str]] = {"TransitionStack=": [], "Stack=": []}
    current: list[str] | None = None
    for line in lines:
        if line in sections:
            current = sections[line]
            continue
        match = _FRAME.match(line)
        if match and current is not None:
            current.append(match.group(1))
    return sections["TransitionStack="], sections["Stack="]


def _blocking_site(body: list[str]) -> str:
    """Where a goroutine blocked: the first frame of its blocking stack outside Go's
    runtime, as its last two path components ("-" if the stack has none)."""
    transition, _ = _stack_sections(body)
    for function in transition:
        if not function.startswith("runtime."):
            return "/".join(function.split("/")[-2:])
    return "-"


def _events(lines: Iterable[str]) -> Iterable[tuple[str, list[str]]]:
    header: str | None = None
    body: list[str] = []
    for raw in lines:
        line = raw.rstrip("\n")
        if _HEADER.match(line):
            if header is not None:
                yield header, body
            header, body = line, []
        elif header is not None:
            body.append(line)
    if header is not None:
        yield header, body


def parse(lines: Iterable[str]) -> Schedule:
    """The schedule of one trace from `go tool trace -d=parsed`'s lines."""
    s = Schedule()
    proc_since: dict[int, int] = {}
    runnable_since: dict[int, int] = {}
    readied_by: dict[int, int | str] = {}
    waiting_since: dict[int, tuple[int, str]] = {}
    running_since: dict[int, int] = {}
    syscall_since: dict[int, int] = {}
    runnable: set[int] = set()
    for header, body in _events(lines):
        head = _HEADER.match(header)
        assert head is not None
        g, kind, t = int(head.group(3)), head.group(4), int(head.group(5))
        s.first_ns = t if s.first_ns is None else min(s.first_ns, t)
        s.last_ns = t if s.last_ns is None else max(s.last_ns, t)
        if kind != "StateTransition":
            continue
        proc = _PROC.search(header)
        if proc:
            pid, old, new = int(proc.group(1)), proc.group(2), proc.group(3)
            if old == "Running" and new != "Running" and pid in proc_since:
                s.busy[pid].append(t - proc_since.pop(pid))
            if new == "Running" and old == "Idle":
                proc_since[pid] = t
            continue
        go = _GO.search(header)
        if not go:
            continue
        goid, old, new = int(go.group(1)), go.group(2), go.group(3)
        if old == "Running" and new != "Running" and goid in running_since:
            s.running[goid].append(t - running_since.pop(goid))
        if new == "Running" and old not in ("Running", "Undetermined"):
            running_since[goid] = t
            if old == "Runnable":
                s.turns[goid] += 1
            elif old == "Syscall":
                s.syscalls[goid] += 1
        if old == "Syscall" and new != "Syscall" and goid in syscall_since:
            s.syscall_ns[goid] += t - syscall_since.pop(goid)
        if old == "Syscall" and new == "Runnable":
            s.p_lost[goid] += 1
            readied_by[goid] = P_LOST
        if new == "Syscall" and old == "Running":
            syscall_since[goid] = t
        if old == "Runnable" and goid in runnable_since:
            waited = t - runnable_since.pop(goid)
            who = readied_by.pop(goid, None)
            if new == "Running":
                s.waits[goid].append(waited)
                if who is not None:
                    s.readied[goid].append((who, waited))
        if new == "Runnable" and old != "Undetermined":
            runnable_since[goid] = t
            if old == "Waiting":
                readied_by[goid] = _readier(head)
                s.queue_at_ready[goid].append(len(runnable - {goid}))
            elif old == "Running" and _reason(header) == "preempted":
                readied_by[goid] = PREEMPTED
                s.preempted[goid] += 1
        if new == "Runnable":
            runnable.add(goid)
        elif old == "Runnable":
            runnable.discard(goid)
        if old == "Waiting" and goid in waiting_since:
            since, reason = waiting_since.pop(goid)
            s.blocked[goid][reason].append(t - since)
        if old == "Running" and new == "Waiting":
            waiting_since[goid] = (t, f"{_reason(header)} @ {_blocking_site(body)}")
        if goid not in s.roles:
            transition, stack = _stack_sections(body)
            own = transition + (stack if goid == g else [])
            for function in own:
                role = role_of(function)
                if role is not None:
                    s.roles[goid] = role
                    break
    return s


def _reason(header: str) -> str:
    reason = _REASON.search(header)
    return reason.group(1) if reason else ""


def _readier(head: re.Match[str]) -> int | str:
    """Who an event that readies a goroutine ran on: a goroutine, its P's scheduler, or a
    thread without a P."""
    p, g = int(head.group(2)), int(head.group(3))
    if g >= 0:
        return g
    return NO_P if p < 0 else SCHEDULER


def quantile(sorted_values: list[int], q: float) -> int:
    """Nearest rank: the ceil(q * n)-th smallest value (the smallest for q = 0)."""
    rank = max(1, math.ceil(q * len(sorted_values)))
    return sorted_values[rank - 1]


def median(sorted_values: list[int]) -> float:
    n = len(sorted_values)
    mid = n // 2
    return sorted_values[mid] if n % 2 else (sorted_values[mid - 1] + sorted_values[mid]) / 2


def report(name: str, s: Schedule) -> str:
    span = (s.last_ns or 0) - (s.first_ns or 0)
    out = [f"{name}: {span / 1e9:.3f} s traced"]
    out.append("  P   stretches   busy s   share   median µs   longest µs")
    for pid in sorted(s.busy):
        stretches = sorted(s.busy[pid])
        total = sum(stretches)
        share = total / span if span else 0.0
        out.append(
            f"  {pid:<3} {len(stretches):>9} {total / 1e9:>8.3f} {share:>7.1%} "
            f"{median(stretches) / 1e3:>11.1f} {stretches[-1] / 1e3:>12.1f}"
        )
    out.append("  role             waits    p50 µs    p90 µs    p99 µs    max µs")
    for role, waits in s.waits_by_role().items():
        cells = " ".join(f"{quantile(waits, q) / 1e3:>9.1f}" for q in (0.5, 0.9, 0.99))
        out.append(f"  {role:<15} {len(waits):>6} {cells} {waits[-1] / 1e3:>9.1f}")
    out.append("  role             readied by             waits    p50 µs    p90 µs    p99 µs")
    for role, by in s.waits_by_readier().items():
        for who, waits in by.items():
            cells = " ".join(f"{quantile(waits, q) / 1e3:>9.1f}" for q in (0.5, 0.9, 0.99))
            out.append(f"  {role:<15} {who:<20} {len(waits):>7} {cells}")
    out.append("  role             readied   others runnable then: p50   p90   p99")
    for role, counts in s.queue_at_ready_by_role().items():
        cells = " ".join(f"{quantile(counts, q):>5}" for q in (0.5, 0.9, 0.99))
        out.append(f"  {role:<15} {len(counts):>8} {'':>21}{cells}")
    out.append(
        "  role            running s    turns   share   syscalls   syscall s   P lost   preempted"
    )
    by_role = s.running_by_role()
    all_running = sum(row.running_ns for row in by_role.values())
    for role, row in by_role.items():
        share = row.running_ns / all_running if all_running else 0.0
        out.append(
            f"  {role:<15} {row.running_ns / 1e9:>9.3f} {row.turns:>8} {share:>7.1%} "
            f"{row.syscalls:>10} {row.syscall_ns / 1e9:>11.3f} {row.p_lost:>8} {row.preempted:>11}"
        )
    out.append("  role            times   total s    p50 µs    max µs  blocked on @ where")
    for role, reasons in s.blocked_by_role().items():
        for reason, times in reasons.items():
            out.append(
                f"  {role:<15} {len(times):>5} {sum(times) / 1e9:>9.3f} "
                f"{median(times) / 1e3:>9.1f} {times[-1] / 1e3:>9.1f}  {reason}"
            )
    return "\n".join(out)


def model_queue_at_ready(folder: Path, node: int) -> dict[str, list[int]]:
    """Per goroutine kind of a model node, the other runnable goroutines at the start of
    each of its recorded waits, sorted (the node's own waits for a core left out)."""
    import numpy as np
    import polars as pl

    waits = (
        pl.read_parquet(folder / "goroutine_waits.parquet")
        .filter((pl.col("node") == node) & ~pl.col("goroutine").is_in(["node thread", "sysmon"]))
        .with_columns(start=pl.col("t_ns") - pl.col("wait_ns").cast(pl.Int64))
    )
    starts, ends = waits["start"].to_numpy(), waits["t_ns"].to_numpy()
    publishes = folder / "publishes.parquet"
    published = pl.read_parquet(publishes)["t_publish_ns"] if publishes.exists() else None
    low, high = (published.min(), published.max()) if published is not None else (None, None)
    out: dict[str, list[int]] = defaultdict(list)
    for kind, start, end in zip(waits["goroutine"], starts, ends, strict=True):
        if low is not None and not low <= start <= high:  # as a trace: while publishing
            continue
        spanning = int(np.count_nonzero((starts <= start) & (ends > start)))
        out[kind].append(spanning - (1 if end > start else 0))  # not its own wait
    return {kind: sorted(counts) for kind, counts in out.items()}


def model_waits_by_readier(folder: Path, node: int) -> dict[str, dict[str, list[int]]]:
    """Per goroutine kind of a model node, its recorded waits by what readied it
    (`readied_by`), sorted, as `Schedule.waits_by_readier` gives a trace's."""
    import polars as pl

    waits = pl.read_parquet(folder / "goroutine_waits.parquet").filter(
        (pl.col("node") == node) & pl.col("readied_by").is_not_null()
    )
    out: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for kind, who, waited in waits.select("goroutine", "readied_by", "wait_ns").iter_rows():
        out[kind][who].append(waited)
    return {kind: {who: sorted(w) for who, w in sorted(by.items())} for kind, by in out.items()}


def model_report(folder: Path, node: int) -> str:
    out = [
        f"{folder} node {node} (model)",
        "  goroutine       readied by             waits    p50 µs    p90 µs    p99 µs",
    ]
    for kind, by in model_waits_by_readier(folder, node).items():
        for who, waits in by.items():
            cells = " ".join(f"{quantile(waits, q) / 1e3:>9.1f}" for q in (0.5, 0.9, 0.99))
            out.append(f"  {kind:<15} {who:<20} {len(waits):>7} {cells}")
    out.append("  goroutine        waits   others runnable then: p50   p90   p99")
    for kind, counts in model_queue_at_ready(folder, node).items():
        cells = " ".join(f"{quantile(counts, q):>5}" for q in (0.5, 0.9, 0.99))
        out.append(f"  {kind:<15} {len(counts):>6} {'':>23}{cells}")
    return "\n".join(out)


def parsed_lines(trace: Path) -> list[str]:
    done = subprocess.run(
        ["go", "tool", "trace", "-d=parsed", str(trace)],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.splitlines()


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip().splitlines()[-2].strip(), file=sys.stderr)
        return 2
    if argv[0] == "--model":
        if len(argv) != 4 or argv[2] != "--node":
            print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
            return 2
        print(model_report(Path(argv[1]), int(argv[3])))
        return 0
    for i, name in enumerate(argv):
        if i:
            print()
        print(report(name, parse(parsed_lines(Path(name)))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
