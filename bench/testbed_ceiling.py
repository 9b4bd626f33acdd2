"""How many real nodes at which message rate this machine holds: the testbed's ceiling.

Runs the testbed (real go-libp2p-pubsub v0.17.0 nodes, Barabasi-Albert m = 4, 10 ms links,
1000-byte messages, gossipsub v1.1 go defaults) over a grid of node counts and rates, with
message signing on (StrictSign, Ed25519) and off (StrictNoSign, content ids), and reports
for each point the nodes' CPU, the CPU per received copy, delivery, p99 dissemination, drops
and the delay stage's lateness. A point is "saturated" when delivery drops below 100 %,
anything is dropped, or the nodes use more than 85 % of the cores.

    sudo .venv/bin/python bench/testbed_ceiling.py [--quick] [--out bench/out/ceiling.md]

The table goes to stdout (and --out); bench/RESULTS.md keeps the reviewed copy.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from gossiplab.errors import GossiplabError
from gossiplab.runner import run
from gossiplab.scenario import parse_scenario

GRID = [(20, 25), (20, 50), (20, 100), (40, 25), (40, 50), (40, 75), (60, 20), (60, 35), (60, 50)]
QUICK = [(20, 50), (40, 50)]
SATURATED_CPU_SHARE = 0.85


def point(nodes: int, rate: float, signed: bool, tmp: Path) -> dict[str, Any]:
    data = {
        "name": f"ceiling-{nodes}x{rate:g}-{'signed' if signed else 'unsigned'}",
        "seed": 4,
        "backend": "testbed",
        "topology": {"kind": "barabasi-albert", "nodes": nodes, "m": 4},
        "network": {"latency": "10ms"},
        "protocol": {
            "signing": "strict-sign" if signed else "strict-no-sign",
            "message_id": "go" if signed else "ethereum",
        },
        "workload": {"rate": f"{rate:g}/s", "duration": "10s", "warmup": "3s", "cooldown": "2s"},
        "testbed": {"max_delay_error": "10s"},  # measured and reported, never fatal here
    }
    s = parse_scenario(data, base_dir=tmp)
    started = time.monotonic()
    try:
        summary = run(s, tmp / s.name).summary
    except GossiplabError as err:
        return {"nodes": nodes, "rate": rate, "signed": signed, "error": str(err)}
    testbed = summary["run"]["testbed"]
    cores = os.cpu_count() or 1
    node_cores = testbed["nodes"]["cpu_cores_total"] or 0.0
    publishing_s = s.workload.duration / 1e9
    receipts = (
        summary["delivery"]["first_receipts"]
        + (summary["duplicates"]["per_node_per_message"]["mean"] or 0)
        * summary["delivery"]["first_receipts"]
    )
    copies = receipts / publishing_s
    ratio = summary["delivery"]["ratio"] or 0.0
    drops = summary["drops"]["total"]
    return {
        "nodes": nodes,
        "rate": rate,
        "signed": signed,
        "load": nodes * rate,
        "node_cores": node_cores,
        "us_per_copy": node_cores / copies * 1e6 if copies else None,
        "delivery": ratio,
        "p99_ms": summary["dissemination_ms"]["p99"],
        "drops": drops,
        "delay_p99_ms": (testbed.get("delay_stage") or {}).get("lateness_ms", {}).get("p99"),
        "delay_cpu_s": (testbed.get("delay_stage") or {}).get("cpu_s"),
        "host_busy": testbed["host"]["busy_share_mean"],
        "saturated": ratio < 1.0 or drops > 0 or node_cores > SATURATED_CPU_SHARE * cores,
        "wall_s": time.monotonic() - started,
    }


def table(rows: list[dict[str, Any]]) -> str:
    head = (
        "| signing | nodes | msg/s | nodes×msg/s | node CPU (cores) | µs/copy | delivery | "
        "p99 dissem. (ms) | drops | delay p99 (ms) | host busy | saturated |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n"
    )

    def f(value: Any, spec: str) -> str:
        return "-" if value is None else format(value, spec)

    lines = []
    for r in rows:
        if "error" in r:
            lines.append(f"| {'on' if r['signed'] else 'off'} | {r['nodes']} | {r['rate']:g} | "
                         f"error: {r['error'][:60]} |||||||||")  # fmt: skip
            continue
        lines.append(
            f"| {'on' if r['signed'] else 'off'} | {r['nodes']} | {r['rate']:g} | {r['load']:,.0f} "
            f"| {f(r['node_cores'], '.2f')} | {f(r['us_per_copy'], '.0f')} "
            f"| {f(r['delivery'], '.4f')} | {f(r['p99_ms'], '.1f')} | {r['drops']} "
            f"| {f(r['delay_p99_ms'], '.2f')} | {f(r['host_busy'], '.0%')} "
            f"| {'**yes**' if r['saturated'] else 'no'} |"
        )
    return head + "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two points only")
    parser.add_argument("--out", type=Path, help="also write the table here")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for signed in (True, False):
            for nodes, rate in QUICK if args.quick else GRID:
                rows.append(point(nodes, rate, signed, Path(tmp)))
                print(table(rows[-1:]).splitlines()[-1], flush=True)
    text = table(rows)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)


if __name__ == "__main__":
    main()
