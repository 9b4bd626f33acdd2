"""How many packets the kernel sends per write while the testbed's nodes publish.

Runs a scenario on the testbed (`gossiplab run`) and reads the TCP counters of every
node's network namespace twice while it publishes (`/proc/net/snmp`: `OutSegs`;
`/proc/net/netstat`: `TCPOrigDataSent`, the segments that carried new data,
`TCPAutoCorking`, the writes the kernel held back to merge with the next,
`DelayedACKs`), and the write syscalls of the processes in it (`/proc/PID/io`,
`syscw`, as `resources.parquet` counts them). It prints the differences summed over the
nodes, with the pure ACKs (segments sent without new data) per data segment and the
data segments per write:

    flock /tmp/testbed.lock .venv/bin/python bench/tcp_counters.py \\
        scenarios/crosscheck/cliff-past.toml -o out/tcp-past

(docs/crosscheck.md, "Model vs testbed: CPU on shared cores").
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

SNMP = {"Tcp": ("OutSegs",)}
NETSTAT = {"TcpExt": ("TCPOrigDataSent", "TCPAutoCorking", "DelayedACKs")}


def counters(text: str, wanted: dict[str, tuple[str, ...]]) -> Counter[str]:
    """The wanted fields of a /proc/net file: lines come in pairs, names then values. A
    field this kernel does not count is left out."""
    lines = [line.split() for line in text.splitlines() if line]
    found: Counter[str] = Counter()
    for names, values in zip(lines[::2], lines[1::2], strict=True):
        table = names[0].rstrip(":")
        for field in wanted.get(table, ()):
            if field in names:
                found[field] += int(values[names.index(field)])
    return found


def node_namespaces() -> list[str]:
    """The running testbed's node namespaces (all but its core namespace)."""
    listing = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    names = [line.split()[0] for line in listing.splitlines() if line.strip()]
    return [name for name in names if not name.endswith("-core")]


def write_syscalls(ns: str) -> int:
    """The write syscalls of the processes in namespace `ns` so far."""
    pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout
    total = 0
    for pid in pids.split():
        try:
            io = Path(f"/proc/{pid}/io").read_text()
        except OSError:
            continue  # the process ended meanwhile
        total += next(int(line.split()[1]) for line in io.splitlines() if line.startswith("syscw"))
    return total


def snapshot() -> Counter[str]:
    """The counters and write syscalls summed over the node namespaces, now."""
    total: Counter[str] = Counter()
    for ns in node_namespaces():
        for path, wanted in (("/proc/net/snmp", SNMP), ("/proc/net/netstat", NETSTAT)):
            text = subprocess.run(
                ["ip", "netns", "exec", ns, "cat", path], capture_output=True, text=True
            ).stdout
            total.update(counters(text, wanted))
        total["writes"] += write_syscalls(ns)
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("scenario", type=Path)
    parser.add_argument("-o", "--out", type=Path, required=True)
    parser.add_argument("--first", type=float, default=5.0, help="first reading, s from start")
    parser.add_argument("--second", type=float, default=13.0, help="second reading, s from start")
    args = parser.parse_args()
    command = [sys.executable, "-m", "gossiplab", "run", str(args.scenario)]
    run = subprocess.Popen([*command, "-o", str(args.out), "--force"], stdout=subprocess.DEVNULL)
    started = time.monotonic()
    time.sleep(args.first)
    before, t0 = snapshot(), time.monotonic()
    time.sleep(max(0.0, args.second - (t0 - started)))
    after, t1 = snapshot(), time.monotonic()
    if run.wait() != 0:
        raise SystemExit(f"gossiplab run failed (exit {run.returncode})")
    delta = after - before
    writes = delta["writes"]
    data = delta["TCPOrigDataSent"]
    acks = delta["OutSegs"] - data
    print(f"{args.scenario.name}, {t1 - t0:.1f} s of readings:")
    for name in ("OutSegs", "TCPOrigDataSent", "TCPAutoCorking", "DelayedACKs"):
        print(f"  {name:16s} {delta[name]:>10,}")
    print(f"  write syscalls   {writes:>10,}")
    if data:
        print(f"  pure ACKs per data segment {acks / data:.2f}")
    if writes:
        print(f"  data segments per write    {data / writes:.2f}")


if __name__ == "__main__":
    main()
