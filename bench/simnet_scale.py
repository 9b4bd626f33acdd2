"""Simnet at 100 to 1,000 nodes: the crosscheck scenario at several sizes, one row each.

Runs `gossiplab crosscheck --against simnet` on scenarios/simnet/ethereum-1000.toml with
`topology.nodes` and the number of messages published at once changed, and prints one
Markdown row per run for bench/RESULTS.md: simnet's wall time, peak memory and peak live
heap and CPU time (from its summary.json), the model's engine time on the same
file and the speed ratio, and the machine's load while it ran. Each run is its own
process tree, so the peak memory is its own.

    .venv/bin/python bench/simnet_scale.py --nodes 100,300 --messages 1,16
    .venv/bin/python bench/simnet_scale.py --rows results/xc-1000-16   # existing folders
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASE = ROOT / "scenarios/simnet/ethereum-1000.toml"
GOSSIPLAB = ROOT / ".venv/bin/gossiplab"
GIB = 1 << 30

HEADER = (
    "| nodes | messages | delivery ratio | dissemination p99 (ms) | simnet wall s | "
    "simnet CPU s | connected (wall s) | peak RSS GiB | peak live heap GiB | "
    "model engine s | model : simnet | load |\n"
    "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
)


def variant(nodes: int, messages: int) -> str:
    """The base scenario with `nodes` nodes publishing `messages` × 128 KiB at once."""
    text = BASE.read_text(encoding="utf-8")
    text = re.sub(
        r'^name = ".*"$', f'name = "simnet-ethereum-{nodes}-{messages}"', text, flags=re.M
    )
    text = re.sub(r"^nodes = \d+$", f"nodes = {nodes}", text, flags=re.M)
    text = re.sub(r"^messages = \d+$", f"messages = {messages}", text, flags=re.M)
    return re.sub(r"^batch = \d+$", f"batch = {messages}", text, flags=re.M)


def run(nodes: int, messages: int, out: Path) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        scenario = Path(tmp) / f"ethereum-{nodes}-{messages}.toml"
        scenario.write_text(variant(nodes, messages), encoding="utf-8")
        before = os.getloadavg()[0]
        command = [str(GOSSIPLAB), "crosscheck", "--against", "simnet", str(scenario)]
        subprocess.run([*command, "-o", str(out), "--force"], check=True)
        load = f"{before:.0f}–{os.getloadavg()[0]:.0f}"
    return row(out, load)


def row(folder: Path, load: str = "?") -> str:
    model = json.loads((folder / "model/summary.json").read_text(encoding="utf-8"))
    real = json.loads((folder / "simnet/summary.json").read_text(encoding="utf-8"))
    sim = real["run"]["simnet"]
    model_s = model["run"]["wall_time_s"]
    cells = [
        f"{real['run']['nodes']:,}",
        f"{real['messages']['published']}",
        f"{real['delivery']['ratio']:.4g}",
        f"{real['dissemination_ms']['p99']:,.0f}",
        f"{sim['wall_s']:.0f}",
        f"{sim['cpu_s']:.0f}" if "cpu_s" in sim else "–",
        f"{sim['connected_wall_s']:.0f}",
        f"{sim['peak_rss_bytes'] / GIB:.2f}",
        f"{sim.get('peak_live_heap_bytes', 0) / GIB:.2f}",
        f"{model_s:.2f}",
        f"1 : {sim['wall_s'] / model_s:,.0f}",
        load,
    ]
    return "| " + " | ".join(cells) + " |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="100,300", help="comma-separated sizes")
    parser.add_argument("--messages", default="1,16", help="comma-separated batch sizes")
    parser.add_argument("--out", type=Path, default=ROOT / "bench/out/simnet")
    parser.add_argument("--rows", nargs="*", type=Path, help="print rows of crosscheck folders")
    args = parser.parse_args()
    print(HEADER)
    if args.rows:
        for folder in args.rows:
            print(row(folder))
        return
    for nodes in map(int, args.nodes.split(",")):
        for messages in map(int, args.messages.split(",")):
            started = time.monotonic()
            line = run(nodes, messages, args.out / f"ethereum-{nodes}-{messages}")
            print(line, flush=True)
            print(f"({nodes} x {messages}: {time.monotonic() - started:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
