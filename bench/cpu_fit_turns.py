"""Each goroutine's CPU split into a part per item and a part per turn, from real nodes.

A goroutine that takes many items in one turn (the scheduler ran it once, it worked
through its queue, it blocked) pays its turn's fixed work once: go's switch to it and
its code and data back into the caches. Profiles by goroutine show each one's cost per
item fall with load (docs/network-calibration.md, "Per goroutine turn"); this script
fits, per goroutine, CPU = a × items + b × turns over the nodes of runs at several
loads, and prints what the model's costs per item and per turn become
(`crates/engine/src/goroutines.rs`, `TurnCosts`).

Takes pairs of results folders of the same scenario at each load: a `gossiplab profile`
run (every node's CPU profile, split by goroutine as bench/cpu_profile_goroutines.py
does) and a run with `[testbed] go_trace` (Go execution traces of some nodes; their
goroutines' turns, `Runnable->Running`, as bench/go_trace_schedule.py counts them).
For each traced node, its items per turn in the traced run (over the whole run: the
trace covers it, and so do the counters below) turn its items in the profiled run into
turns; each traced node of each load is one point of the fit, weighted by the inverse
of its CPU (relative errors, as bench/cpu_calibration.py fits).

Items per goroutine, as the model counts them:
- event loop (`processLoop`, the heartbeat's part left out: the model has none): an RPC
  it handles (`per_rpc_loop`), a message it publishes (`per_publish_loop`) and each
  peer it forwards one to (`per_forward_loop`), weighed by the model's costs; a turn
  takes RPCs and validated messages;
- yamux's `recvLoop` (read syscalls, Noise's decryption, the copy into the stream's
  buffer): the kB it reads (`per_kb_received`); its turns are the trace's
  `yamux recvLoop`'s;
- reader (`handleNewStream`: the RPC out of the stream's buffer, decoded): an RPC
  (`per_rpc_received`);
- writer (`handleSendingMessages`): an RPC; sendLoop (yamux's `sendLoop`): an RPC and
  its kB (`per_rpc_sent`, `per_kb_sent`), one write syscall each;
- validator (`validateWorker`): a copy validated.

Go's `sysmon` thread runs with no P, and the profiler does not sample it: the profiled
shares are of each node's CPU from /proc less its `sysmon` thread's, where the testbed
recorded that (`resources.parquet` `sysmon_cpu_s`), and the script prints its CPU per
run (the model's `per_sysmon_round`, charged apart).

The collector (`gc`), the testbed's event tracer and the rest (`other`, the loop's
heartbeat) do work for the goroutines' allocations and events, in no goroutine the
model has: each node's share of them is apportioned to its goroutines by their CPU
(`--apart` keeps them out). The scheduler's own work (`runtime`: `schedule`,
`findRunnable`, the netpoller) is left to the node's wake-up, fitted after these
(bench/cpu_fit_wakeup.py).

A node's RPCs read are its payload copies received scaled by the run's RPCs per copy
(every RPC written, one write syscall, is read by another node), as
bench/cpu_calibration.py counts them.

    .venv/bin/python bench/cpu_fit_turns.py PROFILED TRACED [PROFILED TRACED ...]
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).parent))
from cpu_calibration import measure
from cpu_profile_goroutines import profile_goroutines
from go_trace_schedule import parse, parsed_lines

# Profile rows of work done for the goroutines in none of the model's goroutines.
APPORTIONED = ("gc", "tracer", "other", "loop: heartbeat")

# The model's costs the fit scales (µs), python/gossiplab/scenario/cpu.py
# MEASURED_ONE_P_LOOP: per RPC the loop handles, per message it publishes, per forward;
# per kB read (recvLoop); per RPC and per kB written.
LOOP_COSTS = {"rpcs_in": 5.5, "delivered": 5.7, "forwards": 1.5}
READ_COSTS = {"kb_in": 6.0}
SEND_COSTS = {"writes": 4.0, "kb_out": 6.0}


@dataclass(frozen=True)
class Goroutine:
    """One goroutine of the model: its profile rows, its trace role, its items."""

    name: str
    profile: tuple[str, ...]
    trace_role: str
    # The items its turns take (counts below), and the model's cost of each (µs).
    turn_items: tuple[str, ...]
    costs: dict[str, float]


GOROUTINES = (
    Goroutine(
        "event loop",
        (
            "loop: handleIncomingRPC",
            "loop: publishMessage, sendRPC",
            "loop: publishMessage, the rest",
            "loop: select and the rest",
        ),
        "event loop",
        ("rpcs_in", "delivered"),
        LOOP_COSTS,
    ),
    Goroutine("recvLoop", ("yamux-recv",), "yamux recvLoop", ("kb_in",), READ_COSTS),
    Goroutine("reader", ("reader",), "reader", ("rpcs_in",), {"rpcs_in": 1.0}),
    Goroutine("writer", ("writer",), "writer", ("writes",), {"writes": 1.0}),
    Goroutine("sendLoop", ("yamux-send",), "yamux sendLoop", ("writes",), SEND_COSTS),
    Goroutine("validator", ("validator",), "validator", ("validated",), {"validated": 1.0}),
)


@cache
def node_profile(profiled: Path, node: int) -> dict[str, float]:
    """One node's profile by goroutine (ms of samples), read once (`go tool pprof`)."""
    return profile_goroutines(profiled / "testbed" / f"node{node}" / "cpu.pprof")


def apportioned(profile: dict[str, float]) -> float:
    """What a goroutine's CPU is scaled by to carry its share of `APPORTIONED`: the
    apportioned samples over the goroutines' own (the model's and the publisher)."""
    own = sum(profile[p] for g in GOROUTINES for p in g.profile) + profile["publisher"]
    return 1 + sum(profile[p] for p in APPORTIONED) / own


def node_counts(folder: Path) -> pl.DataFrame:
    """Per node: CPU and items over the measured interval (`measure`), and kB each way."""
    rows, _ = measure(folder)
    traffic = pl.read_parquet(folder / "traffic.parquet")
    kb = kb_by_node(traffic)
    forwards = traffic.filter(pl.col("kind") == "payload").select(
        "node", forwards=pl.col("msgs_sent").cast(pl.Float64)
    )
    # kB and forwards over the whole run, scaled to the measured interval by its RPCs.
    whole = whole_run(folder).select("node", "writes")
    return (
        rows.join(kb, on="node")
        .join(forwards, on="node")
        .join(whole.rename({"writes": "writes_run"}), on="node")
        .with_columns(
            writes=pl.col("write_syscalls"),
            share=pl.col("write_syscalls") / pl.col("writes_run"),
        )
        .with_columns(pl.col("kb_in", "kb_out", "forwards") * pl.col("share"))
    )


def kb_by_node(traffic: pl.DataFrame) -> pl.DataFrame:
    """Per node, the kB it read and wrote over the whole run (every kind of RPC)."""
    return traffic.group_by("node").agg(
        kb_in=pl.col("bytes_recv").sum() / 1000, kb_out=pl.col("bytes_sent").sum() / 1000
    )


def whole_run(folder: Path) -> pl.DataFrame:
    """Per node, items over the whole run (the span of an execution trace)."""
    resources = pl.read_parquet(folder / "resources.parquet")
    writes = resources.group_by("node").agg(
        writes=pl.col("write_syscalls").sort_by("t_ns").last().cast(pl.Float64)
    )
    traffic = pl.read_parquet(folder / "traffic.parquet")
    payload = traffic.filter(pl.col("kind") == "payload")
    received = payload.select("node", received=pl.col("msgs_recv").cast(pl.Float64))
    delivered = pl.read_parquet(folder / "deliveries.parquet").group_by("node").len("delivered")
    out = (
        writes.join(received, on="node")
        .join(kb_by_node(traffic).select("node", "kb_in"), on="node")
        .join(delivered, on="node", how="left")
        .fill_null(0)
    )
    rpcs_per_copy = out["writes"].sum() / out["received"].sum()
    return out.with_columns(
        rpcs_in=pl.col("received") * rpcs_per_copy,
        validated=pl.col("delivered").cast(pl.Float64),
    )


def items_per_turn(traced: Path) -> pl.DataFrame:
    """Per traced node and goroutine: items over the whole run over its turns."""
    scenario = tomllib.loads((traced / "scenario.toml").read_text())
    nodes = scenario["testbed"]["go_trace"]
    whole = whole_run(traced)
    rows = []
    for node in nodes:
        roles = parse(parsed_lines(traced / "go-traces" / f"node-{node}.trace")).running_by_role()
        counts = whole.filter(pl.col("node") == node).row(0, named=True)
        for g in GOROUTINES:
            turns = roles[g.trace_role].turns if g.trace_role in roles else 0
            items = sum(counts[i] for i in g.turn_items)
            rows.append((node, g.name, items / turns if turns else float("nan")))
    return pl.DataFrame(rows, schema=["node", "goroutine", "per_turn"], orient="row")


def points(profiled: Path, traced: Path, apportion: bool) -> pl.DataFrame:
    """Per traced node and goroutine of one load: CPU (µs), items cost, turns."""
    counts = node_counts(profiled)
    ipt = items_per_turn(traced)
    rows = []
    for node in ipt["node"].unique().sort():
        profile = node_profile(profiled, node)
        total = sum(profile.values())
        inflate = apportioned(profile) if apportion else 1.0
        c = counts.filter(pl.col("node") == node).row(0, named=True)
        for g in GOROUTINES:
            share = sum(profile[p] for p in g.profile) / total * inflate
            cpu_us = share * profiled_cpu_s(c) * 1e6
            model_us = sum(cost * c[item] for item, cost in g.costs.items())
            items = sum(c[i] for i in g.turn_items)
            per_turn = ipt.filter((pl.col("node") == node) & (pl.col("goroutine") == g.name))
            turns = items / per_turn["per_turn"][0]
            rows.append((profiled.name, node, g.name, cpu_us, model_us, items, turns))
    return pl.DataFrame(
        rows,
        schema=["run", "node", "goroutine", "cpu_us", "model_us", "items", "turns"],
        orient="row",
    )


def publisher_us(profiled: Path, apportion: bool) -> tuple[float, float]:
    """The publisher's CPU (µs, apportioned as the goroutines') and its publications,
    summed over every node of one run (`topic.go:Publish`: signing and `ValidateLocal`,
    which checks the signature just made)."""
    counts = node_counts(profiled)
    published = pl.read_parquet(profiled / "publishes.parquet")
    start = published["t_publish_ns"].min()
    cpu_us = 0.0
    for row in counts.iter_rows(named=True):
        profile = node_profile(profiled, row["node"])
        inflate = apportioned(profile) if apportion else 1.0
        share = profile["publisher"] / sum(profile.values()) * inflate
        cpu_us += share * profiled_cpu_s(row) * 1e6
    return cpu_us, float(published.filter(pl.col("t_publish_ns") >= start).height)


def profiled_cpu_s(counts: dict[str, float]) -> float:
    """A node's CPU the profile's samples share: its CPU from /proc, less its sysmon
    thread's where the testbed recorded it (the profiler does not sample sysmon, which
    runs with no P; the model charges its rounds apart, `per_sysmon_round`)."""
    return counts["cpu_s"] - counts.get("sysmon_cpu_s", 0.0)


def fit(rows: pl.DataFrame) -> tuple[float, float, float]:
    """CPU = scale × the model's item costs + µs per turn; and the rms relative error."""
    rows = rows.filter(pl.col("turns").is_finite() & (pl.col("cpu_us") > 0))
    x = rows.select("model_us", "turns").to_numpy()
    y = rows["cpu_us"].to_numpy()
    weight = 1 / y
    coef, *_ = np.linalg.lstsq(x * weight[:, None], y * weight, rcond=None)
    rms = float(np.sqrt(np.mean(((x @ coef) / y - 1) ** 2)))
    return float(coef[0]), float(coef[1]), rms


def sums(table: pl.DataFrame) -> pl.DataFrame:
    """The points of each load summed over its traced nodes."""
    return table.group_by("run", "goroutine", maintain_order=True).agg(
        pl.col("cpu_us", "model_us", "items", "turns").sum()
    )


def fits(rows: pl.DataFrame) -> dict[str, tuple[float, float, float]]:
    """Each goroutine's fit over `rows`, by name: scale, µs per turn, rms relative error."""
    return {g.name: fit(rows.filter(pl.col("goroutine") == g.name)) for g in GOROUTINES}


def per_publication_us(profiled: list[Path], apportion: bool) -> float:
    """The publisher's CPU per publication over every node of the profiled runs."""
    spent = [publisher_us(p, apportion) for p in profiled]
    return sum(cpu for cpu, _ in spent) / sum(n for _, n in spent)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", type=Path, nargs="+", help="PROFILED TRACED pairs")
    parser.add_argument("--apart", action="store_true", help="do not apportion gc, tracer")
    args = parser.parse_args()
    if len(args.folders) % 2:
        parser.error("give the folders in pairs: PROFILED TRACED")
    pairs = list(zip(args.folders[::2], args.folders[1::2], strict=True))
    table = pl.concat([points(p, t, not args.apart) for p, t in pairs])
    summary = table.group_by("run", "goroutine", maintain_order=True).agg(
        us_per_item=pl.col("cpu_us").sum() / pl.col("items").sum(),
        items_per_turn=pl.col("items").sum() / pl.col("turns").sum(),
        real_over_model=pl.col("cpu_us").sum() / pl.col("model_us").sum(),
    )
    with pl.Config(tbl_rows=-1, tbl_cols=-1, float_precision=2, tbl_width_chars=200):
        print("traced nodes, per load:")
        for value in ("us_per_item", "items_per_turn", "real_over_model"):
            print(f"{value}:")
            print(summary.pivot(on="goroutine", index="run", values=value))
    for label, rows in (("each traced node", table), ("the traced nodes' sums", sums(table))):
        print(f"\nfit over {label} of every load (CPU = scale × model item costs + turn):")
        fitted = fits(rows)
        for g in GOROUTINES:
            scale, turn, rms = fitted[g.name]
            costs = ", ".join(f"{item} {scale * cost:.2f} µs" for item, cost in g.costs.items())
            print(
                f"  {g.name:<10} scale {scale:.3f} ({costs}), {turn:.2f} µs per turn, rms {rms:.3f}"
            )
    per_publish = per_publication_us([p for p, _ in pairs], not args.apart)
    print(f"  publisher  {per_publish:.1f} µs per publication (every node of every load)")
    sysmon_rounds([p for p, _ in pairs])


def sysmon_rounds(profiled: list[Path]) -> None:
    """Per profiled run, Go's sysmon threads' CPU per run and their part of the nodes'
    CPU (every node, the measured interval), where the testbed recorded them: the
    model's `per_sysmon_round` is the CPU per run."""
    print("\nsysmon, every node (µs per run, runs a second per node, part of the CPU):")
    for folder in profiled:
        c = node_counts(folder)
        if "sysmon_runs" not in c.columns:
            print(f"  {folder.name}: not recorded")
            continue
        cpu, runs = c["sysmon_cpu_s"].sum(), c["sysmon_runs"].sum()
        per_node_s = runs / c["node_s"].sum()
        print(
            f"  {folder.name}: {cpu / runs * 1e6:.1f} µs, {per_node_s:,.0f}, "
            f"{cpu / c['cpu_s'].sum():.1%}"
        )


if __name__ == "__main__":
    main()
