"""The model's CPU costs (`[cpu] costs = "measured"`) from testbed runs of real nodes.

Takes results folders of `gossiplab run` (or `gossiplab profile`) on the calibration
network (40 nodes, Barabasi-Albert m = 4, 10 ms links; bench/scenarios/cpu/calib-*.toml)
at several loads, signed and unsigned. Per node it reads, over the measured interval
(from the last sample before the first publication to the end), the CPU time and the
counts of read syscalls and voluntary context switches (`resources.parquet`, from /proc),
the payload copies and bytes it received and sent (`traffic.parquet`) and the copies it
validated (its first receipts, `deliveries.parquet`; signed runs only). The bytes
(`per_kb`), the signature checks (`per_copy`) and the writes (`per_rpc_sent`, per write
syscall) keep the costs the profiles gave; on the 1 kB runs it fits what is left, by
least squares of relative errors over every node of every run, as

    per_rpc × (copies received + sent) [+ per_read × read syscalls]

and prints each fit with its error per run, then the same with voluntary context switches
in place of read syscalls. A per-RPC cost below 0 is not told from 0: the fit is redone
without it.
The wake-up of a reading goroutine is two read syscalls (`internal/poll/fd_unix.go:
FD.Read`: the read that finds no data and parks the goroutine on the netpoller, and the
read after the netpoller wakes it), so `per_read_wakeup` = 2 × `per_read`. It also
prints the idle CPU of a node (per second, before the first publication).

A voluntary switch is a thread of the node blocking. With one P (nodes confined to one
CPU) a node that runs out of work blocks its only running thread in the blocking
`netpoll` (`runtime/proc.go:findRunnable`); `sysmon`, which the node's first syscall
after the wake-up woke from its deep sleep (`entersyscall`), sleeps 20 µs at a time
while the node runs and goes back to its deep sleep on `sched.sysmonnote` once every P
is idle (`runtime/proc.go:sysmon`). The kernel's scheduler counts 3.24 voluntary
switches per such wake-up on the one-P calibration runs (bench/wakeup_switches.py), so
the node's wake-up (`per_node_wakeup`, one per idle-to-busy cycle) = 3.24 × the cost
per switch.

    .venv/bin/python bench/cpu_calibration.py RESULTS...
"""

from __future__ import annotations

import argparse
import tomllib
from pathlib import Path

import numpy as np
import polars as pl

COUNTS = ("cpu_s", "read_syscalls", "write_syscalls", "voluntary_switches")
# Go's sysmon thread's part of cpu_s and its runs, where the testbed recorded them.
SYSMON_COUNTS = ("sysmon_cpu_s", "sysmon_runs")
READS_PER_WAKEUP = 2
# Measured by bench/wakeup_switches.py (docs/network-calibration.md, "On one P").
SWITCHES_PER_WAKEUP = 3.24
# From the profiles (docs/network-calibration.md): chacha20-poly1305 per kB each way, and
# ed25519's share of a signed run's CPU per copy validated.
PER_KB_US = 6.0
PER_COPY_US = 84.0
# From the profiles' write path (bench/cpu_profile_families.py): per write syscall, one
# per RPC written, less the bytes.
PER_RPC_SENT_US = 4.0
LARGE_KB_PER_COPY = 8  # runs with more kB per copy than this are the large-message ones


def _window(resources: pl.DataFrame, start_ns: int) -> pl.DataFrame:
    """Per node, each count's increase from the last sample at or before `start_ns`
    (sysmon's too, where every node's was recorded)."""
    last = pl.all().sort_by("t_ns").last()
    before = resources.filter(pl.col("t_ns") <= start_ns).group_by("node").agg(last)
    end = resources.group_by("node").agg(last)
    joined = end.join(before, on="node", suffix="_0")
    counts = COUNTS + tuple(c for c in SYSMON_COUNTS if sysmon_recorded(resources, c))
    return joined.select(
        "node",
        ((pl.col("t_ns") - pl.col("t_ns_0")) / 1e9).alias("node_s"),
        *[(pl.col(c) - pl.col(f"{c}_0")).cast(pl.Float64).alias(c) for c in counts],
    )


def sysmon_recorded(resources: pl.DataFrame, column: str) -> bool:
    """True if every sample has `column` (older runs lack it; -1: the thread unread)."""
    return column in resources.columns and bool((resources[column].fill_null(-1) >= 0).all())


def measure(folder: Path) -> tuple[pl.DataFrame, float]:
    """Per node: counts over the measured interval; and the idle CPU per node-second."""
    scenario = tomllib.loads((folder / "scenario.toml").read_text())
    warmup_ns = int(pl.read_parquet(folder / "publishes.parquet")["t_publish_ns"].min())
    resources = pl.read_parquet(folder / "resources.parquet")
    nodes = _window(resources, warmup_ns)
    quiet = _window(resources.filter(pl.col("t_ns") <= warmup_ns), warmup_ns - 1_500_000_000)
    idle = float(quiet["cpu_s"].sum() / quiet["node_s"].sum())
    traffic = (
        pl.read_parquet(folder / "traffic.parquet")
        .group_by("node")
        .agg(
            copies=(pl.col("msgs_recv") + pl.col("msgs_sent"))
            .filter(pl.col("kind") == "payload")
            .sum(),
            received=pl.col("msgs_recv").filter(pl.col("kind") == "payload").sum(),
            kb=(pl.col("bytes_recv") + pl.col("bytes_sent")).sum() / 1000,
            control=(pl.col("msgs_recv") + pl.col("msgs_sent"))
            .filter(pl.col("kind") != "payload")
            .sum(),
        )
    )
    signed = scenario.get("protocol", {}).get("signing", "strict-sign") == "strict-sign"
    validated = pl.read_parquet(folder / "deliveries.parquet").group_by("node").len("validated")
    rows = (
        nodes.join(traffic, on="node", how="left")
        .join(validated, on="node", how="left")
        .fill_null(0)
        .with_columns(
            pl.col("validated").cast(pl.Float64).alias("delivered"),
            pl.col("validated").cast(pl.Float64) * (1.0 if signed else 0.0),
            pl.col("copies").cast(pl.Float64),
            pl.col("control").cast(pl.Float64),
            pl.lit(folder.name).alias("run"),
        )
        # RPCs a node read: its payload copies, scaled by the run's RPCs per copy (every
        # RPC one node writes, with a write syscall of its own, another reads).
        .with_columns(
            rpcs_in=pl.col("received").cast(pl.Float64)
            * (pl.col("write_syscalls").sum() / pl.col("received").sum()),
        )
    )
    return rows, idle


def fit(rows: pl.DataFrame, terms: list[str]) -> tuple[dict[str, float], pl.DataFrame]:
    """Least-squares costs (µs) of `terms`, and per run the CPU measured and fitted."""
    x = rows.select(terms).to_numpy()
    y = rows["cpu_s"].to_numpy() * 1e6
    # Relative errors: every node of every run weighs alike, whatever its load.
    weight = 1 / np.maximum(y, 1e4)
    coef, *_ = np.linalg.lstsq(x * weight[:, None], y * weight, rcond=None)
    fitted = rows.with_columns(fitted_s=pl.Series(x @ coef / 1e6))
    per_run = fitted.group_by("run", maintain_order=True).agg(
        cpu_s=pl.col("cpu_s").sum(),
        fitted_s=pl.col("fitted_s").sum(),
        copies=pl.col("copies").sum() / 2,
        reads_per_copy=pl.col("read_syscalls").sum() / (pl.col("copies").sum() / 2),
    )
    return dict(zip(terms, coef.tolist(), strict=True)), per_run


def counts(rows: pl.DataFrame) -> None:
    """Per run: the nodes' CPU, the copies received, and CPU and counts per copy received."""
    per_run = rows.group_by("run", maintain_order=True).agg(
        pl.col("cpu_s").sum(),
        (pl.col("copies").sum() / 2).alias("received"),
        *[pl.col(c).sum() for c in COUNTS[1:]],
    )
    print("run: node CPU, copies received; per copy: CPU, reads, writes, voluntary switches")
    for r in per_run.iter_rows(named=True):
        per = {c: r[c] / r["received"] for c in COUNTS[1:]}
        print(
            f"  {r['run']:24s} {r['cpu_s']:6.2f} s {r['received']:8,.0f} "
            f"{r['cpu_s'] / r['received'] * 1e6:5.0f} µs {per['read_syscalls']:5.2f} "
            f"{per['write_syscalls']:5.2f} {per['voluntary_switches']:5.2f}"
        )


def report(rows: pl.DataFrame, terms: list[str]) -> None:
    costs, per_run = fit(rows, terms)
    print("fit: " + ", ".join(f"{name} {value:.2f} µs" for name, value in costs.items()))
    for r in per_run.iter_rows(named=True):
        error = r["fitted_s"] / r["cpu_s"] - 1
        print(
            f"  {r['run']:24s} CPU {r['cpu_s']:6.2f} s, fitted {r['fitted_s']:6.2f} s "
            f"({error:+6.1%}); {r['cpu_s'] / r['copies'] * 1e6:5.1f} µs left and "
            f"{r['reads_per_copy']:.2f} reads per copy received"
        )
    if "read_syscalls" in costs:
        wakeup = READS_PER_WAKEUP * costs["read_syscalls"]
        print(f"  per_read_wakeup = {READS_PER_WAKEUP} × per_read = {wakeup:.1f} µs")
    if "voluntary_switches" in costs:
        wakeup = SWITCHES_PER_WAKEUP * costs["voluntary_switches"]
        print(f"  per_node_wakeup = {SWITCHES_PER_WAKEUP} × per switch = {wakeup:.1f} µs")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, nargs="+")
    parser.add_argument("--per-kb", type=float, default=PER_KB_US)
    parser.add_argument("--per-copy", type=float, default=PER_COPY_US)
    parser.add_argument("--per-rpc-sent", type=float, default=PER_RPC_SENT_US)
    parser.add_argument(
        "--per-rpc-loop",
        type=float,
        default=0.0,
        help="µs of the event loop per RPC read, taken off first (one P: 5.5)",
    )
    parser.add_argument(
        "--per-publish-loop",
        type=float,
        default=0.0,
        help="µs of the event loop per message delivered, taken off first (one P: 11.7)",
    )
    args = parser.parse_args()
    measured = [measure(folder) for folder in args.results]
    for folder, (_, idle) in zip(args.results, measured, strict=True):
        print(f"idle CPU per node before publishing, {folder.name}: {idle * 1e3:.2f} ms/s")
    rows = pl.concat([r for r, _ in measured])
    counts(rows)
    small = rows.filter(pl.col("kb") < LARGE_KB_PER_COPY * pl.col("copies"))
    rest = small.with_columns(
        cpu_s=pl.col("cpu_s")
        - (
            args.per_kb * pl.col("kb")
            + args.per_copy * pl.col("validated")
            + args.per_rpc_sent * pl.col("write_syscalls")
            + args.per_rpc_loop * pl.col("rpcs_in")
            + args.per_publish_loop * pl.col("delivered")
        )
        / 1e6
    )
    print(
        f"\n1 kB runs, less {args.per_kb} µs per kB, {args.per_copy} µs per copy validated,"
        f" {args.per_rpc_sent} µs per write syscall, and the event loop's"
        f" {args.per_rpc_loop} µs per RPC read and {args.per_publish_loop} µs per message"
        " delivered:"
    )
    print("\nCPU per copy a constant:")
    report(rest, ["copies"])
    for count in ("read_syscalls", "voluntary_switches"):
        print(f"\nwith a cost per {count}:")
        report_with(rest, count)


def report_with(rows: pl.DataFrame, count: str) -> None:
    """The fit per copy and per `count`, without the per-copy term if it comes out < 0."""
    costs, _ = fit(rows, ["copies", count])
    terms = ["copies", count] if costs["copies"] >= 0 else [count]
    if len(terms) == 1:
        print(f"(per copy {costs['copies']:.1f} µs < 0: not told from 0, refitted without it)")
    report(rows, terms)


if __name__ == "__main__":
    main()
