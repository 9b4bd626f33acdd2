"""When does each of two copies arriving together finish, on a shared downlink?

Runs ``scenarios/crosscheck/downlink-2x1m.toml`` (leaves 1 and 2 of a star publish 1 MB
each at the same instant; the hub reads both through its 10 Mbit downlink, 20 ms links)
on a backend and prints, per rank (the first and the second copy the hub has of a
batch), the latency from publication to the hub's delivery, and how long the hub took to
relay a copy to the other leaf, apart for the last batch (whose relays nothing follows):
median over batches and runs, and the spread. On the testbed the hub's downlink is an
HTB class whose leaf queueing discipline is ``--qdisc`` (set per run, inside the run's
namespaces); simnet's links are packet FIFOs with a 100 ms buffer; on the model,
``--downlink-sharing`` sets the discipline.

    sudo .venv/bin/python bench/downlink_sharing.py --backend testbed --qdisc pfifo --reps 3
    .venv/bin/python bench/downlink_sharing.py --backend simnet --reps 5
    .venv/bin/python bench/downlink_sharing.py --backend model --downlink-sharing fair
    .venv/bin/python bench/downlink_sharing.py --backend model --downlink-sharing packets
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

import polars as pl

from gossiplab import runner
from gossiplab.scenario import load_scenario

sys.path.insert(0, str(Path(__file__).parent))
from uplink_sharing import LEAF_QDISCS, patch_testbed

SCENARIO = Path(__file__).resolve().parent.parent / "scenarios/crosscheck/downlink-2x1m.toml"
HUB = 0


def hub_latencies(results: Path) -> list[list[float]]:
    """Per batch, the hub's receipts' latencies (ms) from publication, in order."""
    pubs = pl.read_parquet(results / "publishes.parquet").select("msg", "batch", "t_publish_ns")
    d = pl.read_parquet(results / "deliveries.parquet").filter(pl.col("node") == HUB)
    d = d.join(pubs, on="msg").with_columns(
        ((pl.col("t_ns") - pl.col("t_publish_ns")) / 1e6).alias("ms")
    )
    return [sorted(g["ms"].to_list()) for _, g in d.group_by("batch", maintain_order=True)]


def relay_times(results: Path) -> list[list[float]]:
    """Per batch, how long the hub took to relay each copy (ms from its receipt to the
    other leaf's), in message order."""
    d = pl.read_parquet(results / "deliveries.parquet")
    pubs = pl.read_parquet(results / "publishes.parquet").select("msg", "batch")
    hub = d.filter(pl.col("node") == HUB).select("msg", hub="t_ns")
    leaf = d.filter(pl.col("node") != HUB).select("msg", leaf="t_ns")
    t = pubs.join(hub, on="msg").join(leaf, on="msg").sort("msg")
    t = t.with_columns(((pl.col("leaf") - pl.col("hub")) / 1e6).alias("ms"))
    return [g["ms"].to_list() for _, g in t.group_by("batch", maintain_order=True)]


def run_folder(backend: str, seed: int, work: Path, sharing: str | None) -> Path:
    """Run the scenario on `backend` (the model with downlink `sharing`) into a folder."""
    s = load_scenario(SCENARIO)
    s = s.model_copy(update={"backend": backend, "seed": seed})
    if sharing is not None:
        network = s.network.model_copy(update={"downlink_sharing": sharing})
        s = s.model_copy(update={"network": network})
    out = work / f"{backend}-{seed}"
    runner.run(s, out, force=True)
    return out


def one_run(backend: str, seed: int, work: Path, sharing: str | None) -> list[list[float]]:
    return hub_latencies(run_folder(backend, seed, work, sharing))


def _line(label: str, values: list[float]) -> str:
    spread = f"[{min(values):7.1f}, {max(values):7.1f}]"
    return f"  {label}: {statistics.median(values):7.1f} {spread}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="testbed", choices=["testbed", "simnet", "model"])
    parser.add_argument("--qdisc", default="pfifo", choices=sorted(LEAF_QDISCS))
    parser.add_argument(
        "--downlink-sharing", choices=["fifo", "fair", "packets"], help="the model's"
    )
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    if args.backend == "testbed":
        patch_testbed(args.qdisc, slow_start_after_idle=1)
    batches, followed, last = [], [], []
    with tempfile.TemporaryDirectory(prefix="downlink-sharing-") as tmp:
        for i in range(args.reps):
            out = run_folder(args.backend, 100 + i, Path(tmp), args.downlink_sharing)
            batches += hub_latencies(out)
            relays = relay_times(out)
            followed += [t for batch in relays[:-1] for t in batch]
            last += relays[-1]
    label = f"testbed qdisc={args.qdisc}" if args.backend == "testbed" else args.backend
    if args.downlink_sharing:
        label += f" downlink_sharing={args.downlink_sharing}"
    print(f"{label}: p50 [min, max] ms over {len(batches)} batches")
    for rank in (0, 1):
        print(_line(f"hub's copy {rank + 1}", [b[rank] for b in batches if len(b) > rank]))
    # A batch's relays overlap the next batch's copies into the hub, the last one's not.
    print(_line("relay, next pair on its way", followed))
    print(_line("relay, last pair", last))


if __name__ == "__main__":
    main()
