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


def host_cpu() -> tuple[int, int]:
    """(busy, total) jiffies of the whole host since boot."""
    with open("/proc/stat", encoding="ascii") as stat:
        values = [int(v) for v in stat.readline().split()[1:]]
    idle = values[3] + (values[4] if len(values) > 4 else 0)
    return sum(values) - idle, sum(values)


@dataclass
class Sampler:
    """Samples ``pids`` (node index -> pid) every ``interval_ns`` on a background thread."""

    pids: dict[int, int]
    interval_ns: int
    # node, unix ns, CPU s, resident bytes, then process_counts (-1 where unreadable)
    rows: list[tuple[int, int, float, int, int, int, int, int]] = field(default_factory=list)
    host: list[tuple[int, float]] = field(default_factory=list)  # unix ns, busy share
    extra: dict[str, int] = field(default_factory=dict)  # other processes (delay stage)
    extra_rows: list[tuple[str, int, float, int]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="testbed-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.sample()  # a last one, so the measured interval ends with a sample

    def sample(self) -> None:
        now = time.time_ns()
        for node, pid in self.pids.items():
            found = process_sample(pid)
            if found is not None:
                counts = process_counts(pid) or (-1, -1, -1, -1)
                self.rows.append((node, now, *found, *counts))
        for name, pid in self.extra.items():
            found = process_sample(pid)
            if found is not None:
                self.extra_rows.append((name, now, *found))

    def _loop(self) -> None:
        last = host_cpu()
        while not self._stop.wait(self.interval_ns / 1e9):
            self.sample()
            busy, total = host_cpu()
            if total > last[1]:
                self.host.append((time.time_ns(), (busy - last[0]) / (total - last[1])))
            last = (busy, total)
