"""testbed.congestion_control: set on the nodes' routes, refused where it cannot apply.

The expectation is the kernel's: a route's ``congctl`` is applied to every TCP connection
over it, on the dialing and the accepting end (net/ipv4/tcp_cong.c: tcp_ca_dst_init), so
`ss` must name that algorithm on both ends, whatever the host's default.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from gossiplab.backends.testbed import support
from gossiplab.backends.testbed.netns import (
    build_network,
    core_ns,
    delete_namespaces,
    node_ip,
    node_ns,
    run_prefix,
)
from gossiplab.backends.testbed.support import unsupported_features
from gossiplab.runner import run
from gossiplab.scenario import parse_scenario
from testbed_marks import REAL_NODES

# Each end prints `ss` while the connection is still established: the listener reads all
# the dialer sent before its `ss`, then answers; the dialer closes only on that answer.
# `ss` is asked again (up to a second) if it printed no connection's details: on a busy
# host it has once printed nothing, and its error, if any, is kept for the failure.
HOLD = r"""
import socket, subprocess, sys, time
host, role = sys.argv[1], sys.argv[2]
def ss():
    for _ in range(20):
        run = subprocess.run(["ss", "-tinH", "state", "established"], capture_output=True,
                             text=True)
        if "\t" in run.stdout:
            break
        time.sleep(0.05)
    print(run.stdout or run.stderr, flush=True)
if role == "listen":
    s = socket.socket(); s.bind((host, 5003)); s.listen(1); print("ready", flush=True)
    c, _ = s.accept(); got = 0
    while got < 100000:
        got += len(c.recv(65536))
    ss(); c.sendall(b"y")
else:
    c = socket.create_connection((host, 5003)); c.sendall(b"x" * 100000); ss(); c.recv(1)
"""


def _scenario(tmp: Path, **testbed: str) -> object:
    return parse_scenario(
        {
            "name": "cc",
            "backend": "testbed",
            "topology": {"kind": "line", "nodes": 2},
            "workload": {"messages": 1},
            "testbed": testbed,
        },
        base_dir=tmp,
    )


def test_quic_refuses_a_kernel_congestion_control(tmp_path: Path) -> None:
    s = _scenario(tmp_path, transport="quic", congestion_control="cubic")
    problems = unsupported_features(s)  # type: ignore[arg-type]
    assert [p.path for p in problems] == ["testbed.congestion_control"]
    assert "QUIC" in problems[0].message


def test_a_missing_module_is_refused_naming_the_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    available = tmp_path / "available"
    available.write_text("reno bbr\n")
    monkeypatch.setattr(support, "AVAILABLE_CONGESTION", str(available))
    problems = unsupported_features(_scenario(tmp_path, congestion_control="cubic"))  # type: ignore[arg-type]
    assert [p.path for p in problems] == ["testbed.congestion_control"]
    assert "no cubic" in problems[0].message
    assert not unsupported_features(_scenario(tmp_path, congestion_control="bbr"))  # type: ignore[arg-type]
    assert not unsupported_features(_scenario(tmp_path))  # type: ignore[arg-type]


@pytest.fixture
def prefix() -> Iterator[str]:
    name = run_prefix()
    try:
        yield name
    finally:
        delete_namespaces([core_ns(name), node_ns(name, 0), node_ns(name, 1)])


def _algorithms(prefix: str) -> tuple[str, str]:
    """The congestion control `ss` shows on the listening and the dialing end."""
    listen = subprocess.Popen(
        ["ip", "netns", "exec", node_ns(prefix, 1), sys.executable, "-c", HOLD, node_ip(1),
         "listen"],
        stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    assert listen.stdout is not None and listen.stdout.readline().strip() == "ready"
    dial = subprocess.run(
        ["ip", "netns", "exec", node_ns(prefix, 0), sys.executable, "-c", HOLD, node_ip(1),
         "dial"],
        capture_output=True,
        text=True,
        timeout=30,
    )  # fmt: skip
    accepted = listen.communicate(timeout=30)[0]
    return _algorithm(accepted), _algorithm(dial.stdout)


def _algorithm(ss: str) -> str:
    details = [line.split()[0] for line in ss.splitlines() if line.startswith("\t")]
    assert len(details) == 1, ss
    return details[0]


@REAL_NODES[0]
@REAL_NODES[1]
@pytest.mark.parametrize("algorithm", ["cubic", "reno"])
def test_the_route_sets_it_on_both_ends(prefix: str, algorithm: str) -> None:
    build_network(prefix, [0, 1], [0, 0], [0, 0], algorithm)
    assert _algorithms(prefix) == (algorithm, algorithm)


def _warnings(tmp: Path, algorithm: str) -> list[str]:
    s = parse_scenario(
        {
            "name": f"idle-{algorithm}",
            "backend": "testbed",
            "topology": {"kind": "line", "nodes": 3},
            "network": {"latency": "10ms"},
            "workload": {"messages": 3, "rate": "2/s", "size": "20KB", "warmup": "2s"},
            "testbed": {"congestion_control": algorithm},
        },
        base_dir=tmp,
    )
    warnings: list[str] = run(s, tmp / algorithm).summary["run"]["testbed"]["warnings"]
    return warnings


@REAL_NODES[0]
@REAL_NODES[1]
@pytest.mark.skipif(
    "bbr" not in support.available_congestion_controls(), reason="the kernel has no bbr module"
)
def test_a_run_on_bbr_says_the_model_restarts_idle_windows(tmp_path: Path) -> None:
    # Linux restarts an idle window (tcp_cwnd_restart) only for congestion controls
    # without their own cong_control (tcp_slow_start_after_idle_check): BBR keeps its
    # windows, cubic restarts them as the model does by default; 20 kB messages need more
    # than the initial window of 10 segments, so the restart costs round trips.
    named = [w for w in _warnings(tmp_path, "bbr") if "slow_start_after_idle" in w]
    assert len(named) == 1 and "testbed.congestion_control" in named[0], named
    assert not [w for w in _warnings(tmp_path, "cubic") if "slow_start_after_idle" in w]
