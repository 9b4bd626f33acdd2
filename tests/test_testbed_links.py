"""The impaired links themselves, measured between two namespaces without gossipsub.

Each impairment is checked against what it should be, from first principles: a TCP
handshake takes one round trip (2 × the one-way latency), a random drop of p keeps
1 - p of the datagrams, and an HTB rate limit caps a bulk TCP transfer at that rate.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from gossiplab.backends.testbed.binary import ensure_binary
from gossiplab.backends.testbed.netns import (
    build_network,
    core_ns,
    delete_namespaces,
    install_impairments,
    node_ip,
    node_ns,
    run_prefix,
)
from testbed_marks import REAL_NODES

pytestmark = REAL_NODES

MS = 1_000_000
ONE_WAY = 20 * MS
LOSS = 0.2
RATE_BPS = 8_000_000

SERVER = r"""
import socket, sys, time
kind, host = sys.argv[1], sys.argv[2]
if kind == "tcp":
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((host, 5001)); s.listen(16); print("ready", flush=True)
    while True:
        c, _ = s.accept()
        total, start = 0, None
        while True:
            data = c.recv(1 << 16)
            if not data:
                break
            start = start or time.monotonic()
            total += len(data)
        if total:
            print(total, time.monotonic() - start, flush=True)
        c.close()
else:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind((host, 5002))
    s.settimeout(2.0); print("ready", flush=True); n = 0
    try:
        while True:
            s.recv(2048); n += 1
    except socket.timeout:
        print(n, flush=True)
"""

CLIENT = r"""
import socket, sys, time, json
what, host = sys.argv[1], sys.argv[2]
if what == "rtt":
    out = []
    for _ in range(10):
        t = time.monotonic()
        c = socket.create_connection((host, 5001))
        out.append(time.monotonic() - t)
        c.close()
    print(json.dumps(out))
elif what == "udp":
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for i in range(2000):
        s.sendto(b"x" * 200, (host, 5002)); time.sleep(0.0005)
    print("sent")
else:
    c = socket.create_connection((host, 5001)); end = time.monotonic() + 4
    block = b"x" * 65536
    while time.monotonic() < end:
        c.sendall(block)
    c.close(); print("sent")
"""


def in_ns(ns: str, code: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        ["ip", "netns", "exec", ns, sys.executable, "-c", code, *args],
        stdout=subprocess.PIPE,
        text=True,
    )


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[str, str, Path]]:
    """Two namespaces (nodes 0 and 1) through the core; torn down afterwards."""
    prefix = run_prefix()
    names = [core_ns(prefix), node_ns(prefix, 0), node_ns(prefix, 1)]
    try:
        yield prefix, str(tmp_path), tmp_path
    finally:
        delete_namespaces(names)


def start_delay(prefix: str, tmp: Path, delay_ns: int) -> subprocess.Popen[str]:
    config = {
        "queue": 0,
        "jitter_ns": 0,
        "seed": 1,
        "pairs": [
            {"src": node_ip(0), "dst": node_ip(1), "delay_ns": delay_ns},
            {"src": node_ip(1), "dst": node_ip(0), "delay_ns": delay_ns},
        ],
        "stats": str(tmp / "stats.json"),
    }
    (tmp / "delay.json").write_text(json.dumps(config))
    proc = subprocess.Popen(
        ["ip", "netns", "exec", core_ns(prefix), str(ensure_binary()), "delay",
         str(tmp / "delay.json")],
        stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    assert proc.stdout is not None and "ready" in proc.stdout.readline()
    return proc


def stop_delay(proc: subprocess.Popen[str], tmp: Path) -> dict[str, object]:
    proc.terminate()
    proc.wait(timeout=10)
    return json.loads((tmp / "stats.json").read_text())


def server(prefix: str, kind: str) -> subprocess.Popen[str]:
    proc = in_ns(node_ns(prefix, 1), SERVER, kind, node_ip(1))
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


def test_round_trip_is_twice_the_one_way_delay(pair: tuple[str, str, Path]) -> None:
    prefix, _, tmp = pair
    build_network(prefix, [0, 1], [0, 0], [0, 0])
    install_impairments(prefix, 0.0, 0)
    delay = start_delay(prefix, tmp, ONE_WAY)
    srv = server(prefix, "tcp")
    try:
        client = in_ns(node_ns(prefix, 0), CLIENT, "rtt", node_ip(1))
        rtts = sorted(json.loads(client.communicate(timeout=30)[0]))
    finally:
        srv.kill()
    stats = stop_delay(delay, tmp)
    assert min(rtts) >= 2 * ONE_WAY / 1e9
    assert rtts[len(rtts) // 2] <= 2 * ONE_WAY / 1e9 + 0.006  # median within 6 ms
    assert stats["delayed"] >= 20 and stats["queue_dropped"] == 0  # type: ignore[operator]


def test_random_loss_keeps_one_minus_p_of_the_datagrams(pair: tuple[str, str, Path]) -> None:
    prefix, _, _ = pair
    build_network(prefix, [0, 1], [0, 0], [0, 0])
    install_impairments(prefix, LOSS, None)
    srv = server(prefix, "udp")
    client = in_ns(node_ns(prefix, 0), CLIENT, "udp", node_ip(1))
    client.communicate(timeout=30)
    received = int(srv.communicate(timeout=30)[0].strip())
    # Binomial(2000, 0.8): mean 1600, standard deviation 17.9; allow 4 of them.
    assert abs(received - 2000 * (1 - LOSS)) <= 4 * (2000 * LOSS * (1 - LOSS)) ** 0.5


def test_upload_rate_caps_a_bulk_transfer(pair: tuple[str, str, Path]) -> None:
    prefix, _, tmp = pair
    build_network(prefix, [0, 1], [RATE_BPS, 0], [0, 0])
    install_impairments(prefix, 0.0, 0)
    delay = start_delay(prefix, tmp, ONE_WAY)
    srv = server(prefix, "tcp")
    try:
        client = in_ns(node_ns(prefix, 0), CLIENT, "bulk", node_ip(1))
        client.communicate(timeout=30)
        assert srv.stdout is not None
        total, seconds = (float(v) for v in srv.stdout.readline().split())
    finally:
        srv.kill()
    stop_delay(delay, tmp)
    rate = total * 8 / seconds
    # Payload goodput under an 8 Mbit/s link rate: headers take ~3-5 %, slow start a bit.
    assert 0.80 * RATE_BPS <= rate <= 1.02 * RATE_BPS, f"{rate / 1e6:.2f} Mbit/s"


def test_no_delay_stage_means_no_added_delay(pair: tuple[str, str, Path]) -> None:
    prefix, _, _ = pair
    build_network(prefix, [0, 1], [0, 0], [0, 0])
    srv = server(prefix, "tcp")
    try:
        client = in_ns(node_ns(prefix, 0), CLIENT, "rtt", node_ip(1))
        rtts = sorted(json.loads(client.communicate(timeout=30)[0]))
    finally:
        srv.kill()
    assert rtts[len(rtts) // 2] < 0.005
