"""CPU, memory and wake-up counts of every node process, sampled from /proc while the run
goes on."""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


def process_sample(pid: int) -> tuple[float, int] | None:
    """(CPU seconds so far, resident bytes) of a process, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            # The command name may hold spaces: fields count from after its ')'.
            fields = stat.read().rsplit(")", 1)[1].split()
        with open(f"/proc/{pid}/statm", encoding="ascii") as statm:
            resident_pages = int(statm.read().split()[1])
    except (OSError, IndexError, ValueError):
        return None
    if resident_pages == 0:
        return None  # an exiting process (a zombie) has no memory left to report
    utime, stime = int(fields[11]), int(fields[12])
    return (utime + stime) / CLOCK_TICKS, resident_pages * PAGE_SIZE


def process_counts(pid: int) -> tuple[int, int, int, int] | None:
    """(read syscalls, write syscalls, voluntary and involuntary context switches) of a
    process so far, or None once it is gone.

    The syscalls are `/proc/PID/io`'s `syscr` and `syscw`; the switches are summed over
    its threads (`/proc/PID/task/*/status`), because a process's own `status` counts its
    main thread only. A voluntary switch is a thread that blocked (a Go M parking in
    `futex` or `epoll_pwait` when its goroutines have no work); an involuntary one is a
    thread the kernel took off its core at the end of its slice.
    """
    try:
        with open(f"/proc/{pid}/io", encoding="ascii") as io:
            fields = dict(line.split(": ", 1) for line in io.read().splitlines())
        reads, writes = int(fields["syscr"]), int(fields["syscw"])
        voluntary = involuntary = 0
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/status", encoding="ascii") as status:
                for line in status:
                    if line.startswith("voluntary_ctxt_switches:"):
                        voluntary += int(line.split()[1])
                    elif line.startswith("nonvoluntary_ctxt_switches:"):
                        involuntary += int(line.split()[1])
    except (OSError, KeyError, ValueError):
        return None  # gone, or a thread exited between listing and reading it
    return reads, writes, voluntary, involuntary


def sysmon_thread(pid: int) -> int | None:
    """Go's `sysmon` thread of a node process: the first thread its runtime starts after
    the main one (`runtime/proc.go:main` starts it with `newm(sysmon, nil, -1)` before any
    other M), so the earliest started but the process's own, by start time then thread id
    (thread ids grow, but wrap at pid_max). None if the process is gone or has no other
    thread yet."""
    found = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            if int(task) == pid:
                continue
            with open(f"/proc/{pid}/task/{task}/stat", encoding="ascii") as stat:
                started = int(stat.read().rsplit(")", 1)[1].split()[19])
            found.append((started, int(task)))
    except (OSError, IndexError, ValueError):
        return None
    return min(found)[1] if found else None


def thread_schedstat(pid: int, tid: int) -> tuple[int, int] | None:
    """A thread's time on a CPU so far, in ns, and how many times it ran
    (`/proc/PID/task/TID/schedstat`: the scheduler keeps the first field in ns, where
    `stat`'s utime and stime are whole ticks; the third counts the times a CPU switched
    to the thread, `sched_info.pcount`); None once it is gone."""
    try:
        with open(f"/proc/{pid}/task/{tid}/schedstat", encoding="ascii") as schedstat:
            fields = schedstat.read().split()
        return int(fields[0]), int(fields[2])
    except (OSError, IndexError, ValueError):
        return None


def host_cpu() -> tuple[int, int]:
    """(busy, total) jiffies of the whole host since boot."""
    with open("/proc/stat", encoding="ascii") as stat:
        values = [int(v) for v in stat.readline().split()[1:]]
    idle = values[3] + (values[4] if len(values) > 4 else 0)
    return sum(values) - idle, sum(values)


# /proc/stat's per-CPU columns kept (after the name): user, nice, system, idle, iowait,
# irq, softirq. With IRQ time accounting (CONFIG_IRQ_TIME_ACCOUNTING) the kernel's
# interrupt and softirq work is counted here and in no task's utime or stime.
CPU_COLUMNS = {"user": 0, "nice": 1, "system": 2, "irq": 5, "softirq": 6}
NET_SOFTIRQS = ("NET_RX", "NET_TX")


def cpu_times() -> dict[str, dict[str, float]]:
    """Seconds per CPU so far (``CPU_COLUMNS``), and how many NET_RX and NET_TX softirqs
    each CPU raised (``/proc/softirqs``); empty where unreadable."""
    out: dict[str, dict[str, float]] = {}
    try:
        with open("/proc/stat", encoding="ascii") as stat:
            for line in stat:
                name, *values = line.split()
                if name.startswith("cpu") and name != "cpu":
                    cpu = name[3:]
                    ticks = {k: int(values[i]) / CLOCK_TICKS for k, i in CPU_COLUMNS.items()}
                    out[cpu] = {f"{k}_s": v for k, v in ticks.items()}
        with open("/proc/softirqs", encoding="ascii") as softirqs:
            cpus = [c.removeprefix("CPU") for c in softirqs.readline().split()]
            for line in softirqs:
                name, *counts = line.split()
                if name.rstrip(":") in NET_SOFTIRQS:
                    for cpu, count in zip(cpus, counts, strict=False):
                        out.setdefault(cpu, {})[name.rstrip(":").lower()] = int(count)
    except (OSError, ValueError, IndexError):
        return {}
    for cpu, pid in ksoftirqd_pids().items():
        seconds = thread_cpu(pid) if cpu in out else None
        if seconds is not None:
            out[cpu]["ksoftirqd_s"] = seconds
    return out


def thread_cpu(pid: int) -> float | None:
    """utime + stime of a thread (a kernel one included) in seconds, None if gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    except (OSError, IndexError, ValueError):
        return None


def ksoftirqd_pids() -> dict[str, int]:
    """Each CPU's ksoftirqd thread: the softirq work the kernel defers to it (too much at
    once, `kernel/softirq.c:__do_softirq`) runs in no node's time."""
    pids = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/comm", encoding="ascii") as comm:
                    name = comm.read().strip()
            except OSError:
                continue
            if name.startswith("ksoftirqd/"):
                pids[name.removeprefix("ksoftirqd/")] = int(entry)
    return pids


def cpu_times_delta(
    before: dict[str, dict[str, float]], after: dict[str, dict[str, float]]
) -> dict[str, dict[str, float]]:
    """``after`` less ``before``, per CPU and column (seconds rounded to 10 ms ticks)."""
    return {
        cpu: {k: round(v - before[cpu].get(k, 0), 3) for k, v in columns.items()}
        for cpu, columns in after.items()
        if cpu in before
    }


@dataclass
class Sampler:
    """Samples ``pids`` (node index -> pid) every ``interval_ns`` on a background thread."""

    pids: dict[int, int]
    interval_ns: int
    # node, unix ns, CPU s, resident bytes, then process_counts, sysmon's CPU s and the
    # times it ran (-1 where unreadable)
    rows: list[tuple[int, int, float, int, int, int, int, int, float, int]] = field(
        default_factory=list
    )
    sysmon: dict[int, int] = field(default_factory=dict)  # node -> its sysmon thread
    host: list[tuple[int, float]] = field(default_factory=list)  # unix ns, busy share
    extra: dict[str, int] = field(default_factory=dict)  # other processes (delay stage)
    extra_rows: list[tuple[str, int, float, int]] = field(default_factory=list)
    # Each CPU's times (`cpu_times`) when sampling started and stopped.
    cpus_started: dict[str, dict[str, float]] = field(default_factory=dict)
    cpus_stopped: dict[str, dict[str, float]] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self.cpus_started = cpu_times()
        self._thread = threading.Thread(target=self._loop, name="testbed-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.sample()  # a last one, so the measured interval ends with a sample
        self.cpus_stopped = cpu_times()

    def cpu_delta(self) -> dict[str, dict[str, float]]:
        """Each CPU's seconds (user, nice, system, irq, softirq) and NET softirqs raised
        between `start` and `stop`."""
        return cpu_times_delta(self.cpus_started, self.cpus_stopped)

    def sample(self) -> None:
        now = time.time_ns()
        for node, pid in self.pids.items():
            found = process_sample(pid)
            if found is not None:
                counts = process_counts(pid) or (-1, -1, -1, -1)
                self.rows.append((node, now, *found, *counts, *self._sysmon(node, pid)))
        for name, pid in self.extra.items():
            found = process_sample(pid)
            if found is not None:
                self.extra_rows.append((name, now, *found))

    def _sysmon(self, node: int, pid: int) -> tuple[float, int]:
        """The node's sysmon thread's CPU seconds so far and the times it ran, -1 where
        unknown."""
        tid = self.sysmon.get(node)
        if tid is None:
            tid = sysmon_thread(pid)
            if tid is None:
                return -1.0, -1
            self.sysmon[node] = tid
        found = thread_schedstat(pid, tid)
        return (-1.0, -1) if found is None else (found[0] / 1e9, found[1])

    def _loop(self) -> None:
        last = host_cpu()
        while not self._stop.wait(self.interval_ns / 1e9):
            self.sample()
            busy, total = host_cpu()
            if total > last[1]:
                self.host.append((time.time_ns(), (busy - last[0]) / (total - last[1])))
            last = (busy, total)
