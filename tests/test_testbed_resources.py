"""The testbed's /proc counters of a node process (`backends/testbed/resources.py`),
checked on this test's own process, whose syscalls and sleeps are known."""

from __future__ import annotations

import contextlib
import os
import platform
import subprocess
import threading
import time
from pathlib import Path

from gossiplab.backends.testbed.resources import (
    cpu_times,
    cpu_times_delta,
    process_counts,
    sysmon_thread,
    thread_schedstat,
)

# nanosleep's number, by machine (arch/*/entry/syscalls).
NANOSLEEP = {"x86_64": 35, "aarch64": 101}


def test_read_syscalls_count_each_read() -> None:
    read_fd, write_fd = os.pipe()
    os.write(write_fd, b"x" * 10)
    before = process_counts(os.getpid())
    for _ in range(10):
        os.read(read_fd, 1)  # one read(2) each
    after = process_counts(os.getpid())
    os.close(read_fd)
    os.close(write_fd)
    assert before is not None and after is not None
    assert after[0] - before[0] >= 10


def test_switches_are_summed_over_every_thread() -> None:
    # A thread that sleeps blocks: a voluntary switch of that thread, which the process's
    # own /proc/PID/status (its main thread) would not count.
    before = process_counts(os.getpid())
    slept, done = threading.Event(), threading.Event()

    def sleep() -> None:
        for _ in range(20):
            time.sleep(0.001)
        slept.set()
        done.wait()  # alive while counted: an exited thread leaves /proc/PID/task

    sleeper = threading.Thread(target=sleep)
    sleeper.start()
    slept.wait()
    counts = process_counts(os.getpid())
    done.set()
    sleeper.join()
    assert before is not None and counts is not None
    assert counts[2] - before[2] >= 20


def test_a_process_that_is_gone_has_no_counts() -> None:
    assert process_counts(2**22 + 1) is None  # above Linux's pid_max


def test_each_cpu_s_times_and_net_softirqs_are_read_and_differenced() -> None:
    # This process spins on CPU 0 for 0.3 s: CPU 0's user + system time grows by about that
    # (/proc/stat counts in ticks of 1/USER_HZ s); the columns are those of /proc/stat.
    allowed = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {0})
    try:
        before = cpu_times()
        end = time.monotonic() + 0.3
        while time.monotonic() < end:
            pass
        delta = cpu_times_delta(before, cpu_times())
    finally:
        os.sched_setaffinity(0, allowed)
    busy = delta["0"]["user_s"] + delta["0"]["system_s"]
    assert 0.2 <= busy <= 0.6, delta
    assert {"softirq_s", "irq_s", "net_rx", "net_tx"} <= set(delta["0"])
    assert cpu_times_delta({"0": {"softirq_s": 1.0}}, {"0": {"softirq_s": 1.25}}) == {
        "0": {"softirq_s": 0.25}
    }


GO_SPINNER = """package main

func main() {
	x := 0
	for {
		x++
	}
}
"""


def test_sysmon_is_the_thread_the_go_runtime_starts_first(tmp_path: Path) -> None:
    # A Go program that spins: its P is always busy, so its sysmon keeps waking from
    # usleep (nanosleep, runtime/proc.go:sysmon); the thread seen in nanosleep must be
    # the one found by start order, and its CPU grows while the program runs.
    (tmp_path / "spin.go").write_text(GO_SPINNER)
    subprocess.run(["go", "build", "-o", "spin", "spin.go"], cwd=tmp_path, check=True)
    spinner = subprocess.Popen([str(tmp_path / "spin")])
    try:
        time.sleep(0.3)
        tid = sysmon_thread(spinner.pid)
        sleeping: set[int] = set()
        for _ in range(200):
            for task in os.listdir(f"/proc/{spinner.pid}/task"):
                with contextlib.suppress(OSError):
                    text = Path(f"/proc/{spinner.pid}/task/{task}/syscall").read_text()
                    if text.split()[0] == str(NANOSLEEP[platform.machine()]):
                        sleeping.add(int(task))
            time.sleep(0.002)
        before = thread_schedstat(spinner.pid, tid) if tid else None
        time.sleep(0.2)
        after = thread_schedstat(spinner.pid, tid) if tid else None
    finally:
        spinner.kill()
        spinner.wait()
    assert sleeping == {tid}
    assert before is not None and after is not None and after[0] > before[0]
    # A busy program's sysmon, its sleeps doubled up to 10 ms (runtime/proc.go:sysmon:
    # no retake, its P never idle), runs about 20 times in 0.2 s.
    assert 10 <= after[1] - before[1] <= 40
    assert thread_schedstat(spinner.pid, tid or 0) is None  # gone with its process
