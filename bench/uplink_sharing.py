"""When does each copy of a large message finish, on a shared uplink?

Runs ``scenarios/crosscheck/uplink-500k.toml`` (node 0 publishes 500 KB to its 8 peers
over a 50 Mbit uplink) on a backend and prints, per rank (the k-th of the 8 receipts of
one message), the latency from publish to delivery: median over messages and runs, and
the spread. On the testbed the HTB leaf's queueing discipline (``--qdisc``), the
nodes' ``net.ipv4.tcp_slow_start_after_idle`` and their congestion control
(``--congestion``, on their routes) can be changed: all are set per run inside the
run's own namespaces, nothing on the host changes.

    sudo .venv/bin/python bench/uplink_sharing.py --backend testbed --congestion cubic --reps 5

The host's load average is recorded before and after each run: the testbed's timings
at 50 Mbit depend on the kernel's HTB and TCP, which a busy host delays only by its
scheduling latency (tens of microseconds against copies of 80 ms).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
from pathlib import Path
from typing import Any

import polars as pl

from gossiplab import runner
from gossiplab.backends.testbed import netns, orchestrate
from gossiplab.scenario import load_scenario
from gossiplab.scenario.network import SHADOW_TCP_DEFAULTS
from gossiplab.units import parse_duration

SCENARIO = Path(__file__).resolve().parent.parent / "scenarios/crosscheck/uplink-500k.toml"
# The kernel's default under an HTB class is pfifo (sch_htb.c: htb_change_class); the
# others need their modules.
LEAF_QDISCS = {
    "pfifo": "pfifo limit 10000",
    "pfifo_fast": "pfifo_fast",
    "fq_codel": "fq_codel",
    "fq": "fq",
}


def patch_testbed(qdisc: str, slow_start_after_idle: int) -> None:
    """Make the testbed build its HTB leaves with `qdisc` and set slow start after idle."""
    leaf = LEAF_QDISCS[qdisc]

    def htb(dev: str, bps: int) -> list[str]:
        return [
            f"qdisc add dev {dev} root handle 1: htb default 1",
            f"class add dev {dev} parent 1: classid 1:1 htb rate {bps}bit ceil {bps}bit",
            f"qdisc add dev {dev} parent 1:1 handle 10: {leaf}",
        ]

    original = netns.build_network

    def build(
        prefix: str, nodes: list[int], up: list[int], down: list[int], congestion: str | None
    ) -> None:
        original(prefix, nodes, up, down, congestion)
        for i in nodes:
            netns.sh(
                ["ip", "netns", "exec", netns.node_ns(prefix, i), "sysctl", "-qw",
                 f"net.ipv4.tcp_slow_start_after_idle={slow_start_after_idle}"]
            )  # fmt: skip

    netns._htb = htb  # type: ignore[assignment]
    orchestrate.build_network = build  # type: ignore[assignment]


def receipt_latencies(results: Path) -> list[list[float]]:
    """Per message, its receipts' latencies (ms) from publish, in order of arrival."""
    pubs = pl.read_parquet(results / "publishes.parquet").select("msg", "t_publish_ns")
    d = pl.read_parquet(results / "deliveries.parquet").join(pubs, on="msg")
    d = d.with_columns(((pl.col("t_ns") - pl.col("t_publish_ns")) / 1e6).alias("ms"))
    return [sorted(g["ms"].to_list()) for _, g in d.group_by("msg", maintain_order=True)]


def one_run(
    backend: str,
    seed: int,
    latency: str,
    work: Path,
    sharing: str | None = None,
    quic: bool = False,
    congestion: str = "host",
) -> dict[str, Any]:
    s = load_scenario(SCENARIO)
    s = s.model_copy(update={"backend": backend, "seed": seed})
    overrides: dict[str, Any] = {"latency": parse_duration(latency)}
    if sharing is not None:
        overrides["uplink_sharing"] = sharing
    if sharing == "shadow":
        overrides |= SHADOW_TCP_DEFAULTS  # what the scenario layer fills in for it
    if quic:
        # What the simnet scenarios give the model for quic-go's congestion start.
        overrides |= {"initial_window": 28, "slow_start_after_idle": False, "pacing": True}
    s = s.model_copy(update={"network": s.network.model_copy(update=overrides)})
    if backend == "testbed":
        s = s.model_copy(
            update={
                "testbed": s.testbed.model_copy(
                    # A namespace inherits the host's default congestion control and may
                    # not set another (tcp_cong.c: tcp_set_default_congestion_control), so
                    # it is set on the nodes' routes (testbed.congestion_control).
                    update={"max_delay_error": 60_000_000, "congestion_control": congestion}
                )
            }
        )
    load_before = os.getloadavg()[0]
    out = work / f"{backend}-{seed}"
    runner.run(s, out, force=True)
    info = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    return {
        "seed": seed,
        "load_before": load_before,
        "load_after": os.getloadavg()[0],
        "messages": receipt_latencies(out),
        "summary_keys": sorted(info),
    }


def table(runs: list[dict[str, Any]], skip_first: bool) -> list[dict[str, float]]:
    """Per rank: median, min and max latency over every message of every run."""
    per_rank: dict[int, list[float]] = {}
    for run in runs:
        for i, times in enumerate(run["messages"]):
            if skip_first and i == 0:
                continue
            for rank, ms in enumerate(times, start=1):
                per_rank.setdefault(rank, []).append(ms)
    return [
        {"rank": r, "p50": statistics.median(v), "min": min(v), "max": max(v), "n": len(v)}
        for r, v in sorted(per_rank.items())
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="testbed", choices=["testbed", "simnet", "model"])
    parser.add_argument("--qdisc", default="pfifo", choices=sorted(LEAF_QDISCS))
    parser.add_argument("--slow-start-after-idle", type=int, default=1, choices=[0, 1])
    parser.add_argument(
        "--congestion",
        default="host",
        choices=["host", "cubic", "bbr", "reno"],
        help="testbed: TCP's congestion control on the nodes' routes (host: the host's default)",
    )
    parser.add_argument("--latency", default="20ms")
    parser.add_argument(
        "--uplink-sharing",
        choices=["fair", "fifo", "window", "shadow"],
        help="the model's discipline",
    )
    parser.add_argument(
        "--quic",
        action="store_true",
        help="model: QUIC's congestion start as the simnet scenarios set it (initial_window "
        "28, no restart after idle, pacing)",
    )
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--json", type=Path, help="also write every latency here")
    args = parser.parse_args()
    if args.backend == "testbed":
        patch_testbed(args.qdisc, args.slow_start_after_idle)
    with tempfile.TemporaryDirectory(prefix="uplink-sharing-") as tmp:
        runs = [
            one_run(
                args.backend,
                100 + i,
                args.latency,
                Path(tmp),
                args.uplink_sharing,
                args.quic,
                args.congestion,
            )
            for i in range(args.reps)
        ]
    label = (
        f"{args.backend} qdisc={args.qdisc} ssai={args.slow_start_after_idle} cc={args.congestion}"
    )
    if args.uplink_sharing:
        label += f" uplink_sharing={args.uplink_sharing}"
    if args.quic:
        label += " quic"
    for skip_first, what in [(False, "all messages"), (True, "after the first")]:
        print(f"{label} latency={args.latency} ({what}): rank p50 [min, max] ms")
        for row in table(runs, skip_first):
            print(f"  {row['rank']}: {row['p50']:7.1f} [{row['min']:7.1f}, {row['max']:7.1f}]")
    loads = [r["load_before"] for r in runs] + [r["load_after"] for r in runs]
    print(f"  host load average {min(loads):.1f} to {max(loads):.1f}")
    if args.json:
        args.json.write_text(json.dumps({"args": vars(args) | {"json": None}, "runs": runs}))


if __name__ == "__main__":
    main()
