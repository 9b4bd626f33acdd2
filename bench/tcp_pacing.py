"""What a testbed node's TCP connections pace at, and the packets they send.

Runs a scenario on the testbed (`gossiplab run`) and, in one node's network namespace,
reads every established connection's state with `ss -tin` every `--every` seconds while
the run lasts: its window (`cwnd`), slow-start threshold (`ssthresh`, set when cubic's
HyStart or a loss ends slow start), smoothed round trip, pacing rate and delivery rate.
Linux sizes the GSO packets a connection hands its device from its pacing rate
(`tcp_output.c:tcp_tso_autosize`: `sk_pacing_rate >> 10` bytes, at least two segments),
and paces at 120 % of `cwnd × mss / srtt` in congestion avoidance, 200 % below half of
`ssthresh` (`tcp_input.c:tcp_update_pacing_rate`). The script prints, over the readings
taken while a connection was sending (`bytes_sent` grew by `--busy` bytes since the last
one), per connection and pooled: the readings, the share of them below half `ssthresh`,
the p50 of the pacing rate, of the delivery rate and of their ratio, and the segments a
GSO packet holds at the p50 pacing rate.

With `--bursts` (needs `tcpdump`) it also records the node's incoming segments and
counts how they arrive per connection: segments less than 100 µs apart are one burst, so
a burst is one of the sender's GSO packets when the path in between keeps them together.

    flock /tmp/testbed.lock .venv/bin/python bench/tcp_pacing.py \\
        scenarios/crosscheck/in-flight.toml -o out/pacing --node 3 --bursts
"""

from __future__ import annotations

import argparse
import itertools
import re
import statistics
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

from gossiplab.backends.testbed.netns import NODE_IFACE, node_ns, run_prefix

MSS = 1448
FIELDS = ("cwnd", "ssthresh", "rtt", "bytes_sent")
BURST_GAP_S = 100e-6


def wait_for_namespace(ns: str, wait_s: float = 60.0) -> None:
    """Return once the testbed has made namespace `ns`."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        listing = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        if ns in (line.split()[0] for line in listing.splitlines() if line.strip()):
            return
        time.sleep(0.1)
    raise SystemExit(f"the testbed made no namespace {ns} within {wait_s:.0f} s")


def parse_ss(text: str) -> dict[str, dict[str, float]]:
    """Per peer address, the fields of `ss -tinH` that matter here."""
    found: dict[str, dict[str, float]] = {}
    peer = ""
    for line in text.splitlines():
        if line and not line[0].isspace():
            peer = line.split()[-1]
            continue
        state: dict[str, float] = {}
        for field in FIELDS:
            match = re.search(rf"\b{field}:([\d.]+)", line)
            if match:
                state[field] = float(match.group(1))
        for field in ("pacing_rate", "delivery_rate"):
            match = re.search(rf"\b{field} (\d+)bps", line)
            if match:
                state[field] = float(match.group(1))
        if peer and "cwnd" in state:
            found[peer] = state
    return found


def sample(ns: str, every: float, busy: float) -> list[tuple[str, dict[str, float]]]:
    """The readings of connections that sent `busy` bytes since their last reading, until
    the namespace goes."""
    last: dict[str, float] = {}
    readings = []
    while True:
        done = subprocess.run(
            ["ip", "netns", "exec", ns, "ss", "-tinH", "state", "established"],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            return readings
        for peer, state in parse_ss(done.stdout).items():
            sent = state.get("bytes_sent", 0.0)
            if peer in last and sent - last[peer] >= busy and "pacing_rate" in state:
                readings.append((peer, state))
            last[peer] = sent
        time.sleep(every)


def gso_segments(pacing_bps: float) -> int:
    """Segments in the GSO packets at this pacing rate (`tcp_tso_autosize`)."""
    bytes_per_packet = min(int(pacing_bps / 8) >> 10, 65_536)
    return max(bytes_per_packet // MSS, 2)


def summarize(name: str, states: list[dict[str, float]]) -> str:
    """A table row of the readings `states`: medians, and the share in slow start."""
    pacing = statistics.median(s["pacing_rate"] for s in states)
    delivery = statistics.median(s.get("delivery_rate", 0.0) for s in states)
    ratio = statistics.median(
        s["pacing_rate"] / max(s.get("delivery_rate", 1.0), 1.0) for s in states
    )
    slow = sum(s["cwnd"] < s.get("ssthresh", float("inf")) / 2 for s in states) / len(states)
    cwnd = statistics.median(s["cwnd"] for s in states)
    ssthresh = [s["ssthresh"] for s in states if "ssthresh" in s]
    threshold = f"{statistics.median(ssthresh):.0f}" if ssthresh else "none"
    return (
        f"| {name} | {len(states)} | {slow:.0%} | {cwnd:.0f} | {threshold} | "
        f"{pacing / 1e6:.1f} | {delivery / 1e6:.1f} | {ratio:.2f} | {gso_segments(pacing)} |"
    )


def burst_sizes(arrivals: dict[str, list[float]]) -> Counter[int]:
    """Bursts by their segments: each connection's arrivals (s, in order) less than
    100 µs apart are one burst."""
    sizes: Counter[int] = Counter()
    for times in arrivals.values():
        if not times:
            continue
        size = 1
        for before, after in itertools.pairwise(times):
            if after - before < BURST_GAP_S:
                size += 1
            else:
                sizes[size] += 1
                size = 1
        sizes[size] += 1
    return sizes


def bursts(pcap: Path) -> Counter[int]:
    """The recording's incoming full segments, per connection, in bursts."""
    text = subprocess.run(
        ["tcpdump", "-nn", "-tt", "-r", str(pcap)], capture_output=True, text=True
    ).stdout
    arrivals: defaultdict[str, list[float]] = defaultdict(list)
    for line in text.splitlines():
        fields = line.split()
        if f"length {MSS}" in line and len(fields) > 2:
            arrivals[fields[2]].append(float(fields[0]))
    return burst_sizes(arrivals)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("scenario", type=Path)
    parser.add_argument("-o", "--out", type=Path, required=True)
    parser.add_argument("--node", type=int, default=3)
    parser.add_argument("--every", type=float, default=0.05, help="seconds between readings")
    parser.add_argument("--busy", type=float, default=50_000, help="bytes sent to count a reading")
    parser.add_argument("--bursts", action="store_true", help="record incoming segments (tcpdump)")
    args = parser.parse_args()
    command = [sys.executable, "-m", "gossiplab", "run", str(args.scenario), "-q", "--force"]
    run = subprocess.Popen([*command, "-o", str(args.out)], stdout=subprocess.DEVNULL)
    # The run's namespaces are named after its process (netns.py: run_prefix, node_ns).
    ns = node_ns(run_prefix(run.pid), args.node)
    wait_for_namespace(ns)
    pcap = args.out.with_suffix(".pcap")
    dump = None
    if args.bursts:
        tcpdump = ["tcpdump", "-i", NODE_IFACE, "-nn", "-Q", "in", "-s", "96", "-w", str(pcap)]
        dump = subprocess.Popen(
            ["ip", "netns", "exec", ns, *tcpdump, "tcp"], stderr=subprocess.DEVNULL
        )
    readings = sample(ns, args.every, args.busy)
    if run.wait() != 0:
        raise SystemExit(f"gossiplab run failed (exit {run.returncode})")
    if dump is not None:
        dump.terminate()
        dump.wait()
    if not readings:
        raise SystemExit("no reading caught a connection sending: lower --busy or --every")
    print(f"{args.scenario.name}, node {args.node}: readings while a connection was sending")
    print(
        "| connection | readings | below half ssthresh | cwnd p50 (segments) | ssthresh "
        "p50 | pacing p50 (Mbit/s) | delivery p50 (Mbit/s) | pacing / delivery p50 | "
        "segments per GSO packet at the pacing p50 |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    by_peer: defaultdict[str, list[dict[str, float]]] = defaultdict(list)
    for peer, state in readings:
        by_peer[peer].append(state)
    for peer, states in sorted(by_peer.items()):
        print(summarize(peer, states))
    print(summarize("all", [state for _, state in readings]))
    if dump is not None:
        sizes = bursts(pcap)
        mean = sum(k * v for k, v in sizes.items()) / max(sum(sizes.values()), 1)
        shown = ", ".join(f"{k}: {v}" for k, v in sorted(sizes.items()))
        print(f"incoming bursts (segments under 100 µs apart): {shown}; mean {mean:.2f} segments")


if __name__ == "__main__":
    main()
