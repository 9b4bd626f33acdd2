"""Real go-libp2p-pubsub nodes in network namespaces: five on a line, 20 ms per link.

Expectations come from the setup, not from earlier runs: node k is k links from the
publisher, so its copy went through k hops and cannot arrive before 20 ms × k; and a
finished run leaves no namespace, interface, qdisc or process behind.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from gossiplab.backends.testbed.binary import ensure_binary
from gossiplab.backends.testbed.netns import WORK_ROOT, run_prefix
from gossiplab.runner import run
from gossiplab.scenario import parse_scenario
from testbed_marks import REAL_NODES

MS = 1_000_000
LINK = 20 * MS

pytestmark = REAL_NODES


def host_state() -> dict[str, Any]:
    """What a testbed run could leak: namespaces, host interfaces and qdiscs, processes."""
    binary = str(ensure_binary())
    processes = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if cmdline and cmdline[0].decode(errors="replace") == binary:
                processes.append(int(entry.name))
    return {
        "namespaces": sorted(
            line.split()[0]
            for line in subprocess.run(
                ["ip", "netns", "list"], capture_output=True, text=True, check=True
            ).stdout.splitlines()
            if line.startswith("gl")
        ),
        "links": subprocess.run(
            ["ip", "-o", "link", "show"], capture_output=True, text=True, check=True
        ).stdout.count("\n"),
        "qdiscs": subprocess.run(
            ["tc", "qdisc", "show"], capture_output=True, text=True, check=True
        ).stdout,
        "processes": processes,
        "work": sorted(p.name for p in WORK_ROOT.glob(f"{run_prefix()}.*"))
        if WORK_ROOT.is_dir()
        else [],
    }


@pytest.fixture(scope="module")
def line_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], Any]:
    tmp = tmp_path_factory.mktemp("line")
    before = host_state()
    s = parse_scenario(
        {
            "name": "line5",
            "seed": 5,
            "backend": "testbed",
            "topology": {"kind": "line", "nodes": 5},
            "network": {"latency": "20ms"},
            "workload": {
                "messages": 6,
                "rate": "4/s",
                "publishers": [0],
                "warmup": "3s",
                "cooldown": "1s",
            },
            "testbed": {"profile": True},
        },
        base_dir=tmp,
    )
    result = run(s, tmp / "out")
    return result.out_dir, before, result.summary


def test_every_message_reaches_every_node(line_run: tuple[Path, dict[str, Any], Any]) -> None:
    _, _, summary = line_run
    assert summary["delivery"]["ratio"] == 1.0
    assert summary["delivery"]["messages_fully_delivered"] == 6
    assert summary["run"]["testbed"]["crashed"] == []


def test_receipts_follow_the_line_and_pay_20ms_per_hop(
    line_run: tuple[Path, dict[str, Any], Any],
) -> None:
    out, _, _ = line_run
    deliveries = pl.read_parquet(out / "deliveries.parquet")
    publishes = pl.read_parquet(out / "publishes.parquet")
    joined = deliveries.join(publishes.select("msg", "t_publish_ns"), on="msg")
    latency = joined["t_ns"] - joined["t_publish_ns"]
    assert (joined["hop"] == joined["node"]).all(), "node k is k hops from node 0"
    assert (joined["from_node"] == joined["node"] - 1).all(), "each node hears its left neighbour"
    assert (latency >= joined["hop"].cast(pl.Int64) * LINK).all()
    # Processing, scheduling and the delay stage's error add little per hop.
    assert (latency <= joined["hop"].cast(pl.Int64) * (LINK + 15 * MS)).all()


def test_the_run_records_versions_readiness_and_its_delay_error(
    line_run: tuple[Path, dict[str, Any], Any],
) -> None:
    _, _, summary = line_run
    run_info = summary["run"]
    assert run_info["versions"]["github.com/libp2p/go-libp2p"] == "v0.51.0"
    assert run_info["versions"]["github.com/libp2p/go-libp2p-pubsub"] == "v0.17.0"
    testbed = run_info["testbed"]
    assert testbed["readiness"]["ready_by_mesh"] == 5
    delay = testbed["delay_stage"]
    assert delay["delayed"] > 0 and delay["queue_dropped"] == 0
    assert delay["lateness_ms"]["p99"] <= 10.0
    resources = pl.read_parquet(out_path(line_run) / "resources.parquet")
    assert set(resources["node"].to_list()) == set(range(5))
    assert (resources["rss_bytes"] > 1_000_000).all()
    # Running nodes use some CPU (the connections' handshakes at least). /proc counts it
    # in ticks of 10 ms, so a short publishing span may show none.
    assert resources.group_by("node").agg(pl.col("cpu_s").max())["cpu_s"].sum() > 0
    # The shared analysis reads the testbed's samples: every node sampled around the
    # publishing span.
    cpu = summary["cpu"]
    assert cpu["nodes_measured"] == 5
    assert 0 <= cpu["cores_per_node_mean"] <= cpu["cores_per_node_max"]


def out_path(line_run: tuple[Path, dict[str, Any], Any]) -> Path:
    return line_run[0]


def test_profiles_stay_in_the_results_and_are_summarised(
    line_run: tuple[Path, dict[str, Any], Any],
) -> None:
    out, _, summary = line_run
    profiles = sorted((out / "testbed").glob("node*/cpu.pprof"))
    assert len(profiles) == 5
    top = summary["run"]["testbed"]["profile"]
    # A light run may leave a profile with few or no 10 ms samples; the parser itself is
    # checked against `go tool pprof` in test_testbed_profile.py.
    assert top["profiles"] == 5
    shares = [row["flat_share"] for row in top["top"]]
    assert shares == sorted(shares, reverse=True) and sum(shares) <= 1.0 + 1e-9
    text = (out / "testbed" / "profile-top.txt").read_text()
    assert "flat%" in text and "by layer" in text


def test_nothing_is_left_behind(line_run: tuple[Path, dict[str, Any], Any]) -> None:
    _, before, _ = line_run
    after = host_state()
    assert after == before, json.dumps({"before": before, "after": after}, indent=1)
