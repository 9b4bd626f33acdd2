"""The kernel's network work on the nodes' CPU, per packet, from testbed runs.

Takes results folders of `gossiplab run` (or `gossiplab crosscheck`'s testbed side) of
scenarios whose nodes are confined to CPUs (`[testbed] node_cpus`), e.g.
bench/scenarios/cpu/calib-1p-*.toml and scenarios/crosscheck/cliff-*.toml. Per run it
prints, over the sampled interval (`run.testbed.cpu_softirq`, from /proc/stat and
/proc/softirqs when sampling started and stopped):

- each CPU's softirq, system and user seconds;
- the nodes' own CPU seconds (their utime + stime, `resources.parquet`), which with IRQ
  time accounting hold none of the softirq time;
- the nodes' write syscalls over the same samples (one per RPC written, the data
  segments for RPCs below one MSS) and the TCP segments they sent and received
  (`run.testbed.losses.tcp` OutSegs and InSegs, the namespaces' counters, read once the
  sampling stopped: they also hold the few segments of the connections' set-up);
- the softirq µs on the nodes' CPU per segment sent, per segment received and per write.

and the CPU's busy time that no node's CPU time holds (`not_nodes_s`). A least-squares
fit of softirq s = a × OutSegs over all runs gives the softirq time per segment sent.
That is `[cpu] per_segment_kernel` only where the nodes' CPU time leaves softirq time
out (a kernel with CONFIG_IRQ_TIME_ACCOUNTING); without it, as on the calibration
machine, the softirq that runs in a node's syscalls is in the node's CPU time, which the
other costs were fitted to (docs/network-calibration.md, "The kernel's network work").

    .venv/bin/python bench/kernel_softirq.py RESULTS...
"""

from __future__ import annotations

import argparse
import json
import tomllib
from pathlib import Path

import polars as pl


def _counts(folder: Path) -> tuple[float, int]:
    """The nodes' CPU seconds and write syscalls from the first sample to the last."""
    resources = pl.read_parquet(folder / "resources.parquet")
    per_node = resources.group_by("node").agg(
        cpu=pl.col("cpu_s").max() - pl.col("cpu_s").min(),
        writes=pl.col("write_syscalls").max() - pl.col("write_syscalls").min(),
    )
    return float(per_node["cpu"].sum()), int(per_node["writes"].sum() or 0)


def row(folder: Path) -> dict[str, float | str]:
    summary = json.loads((folder / "summary.json").read_text())
    testbed = summary["run"]["testbed"]
    cpus = [str(c) for c in testbed["node_cpus"] or []]
    if len(cpus) != 1:
        raise SystemExit(f"{folder}: the nodes must be confined to one CPU (node_cpus)")
    by_cpu = testbed["cpu_softirq"]
    mine = by_cpu[cpus[0]]
    others = [c for c in by_cpu if c != cpus[0]]
    tcp = testbed["losses"]["tcp"]
    cpu_s, writes = _counts(folder)
    scenario = tomllib.loads((folder / "scenario.toml").read_text())
    rate = scenario.get("workload", {}).get("rate", "?")
    out, into = tcp["OutSegs"], tcp["InSegs"]
    return {
        "run": folder.name,
        "rate": str(rate),
        "softirq_s": mine["softirq_s"],
        "system_s": mine["system_s"],
        "user_s": mine["user_s"],
        "nodes_cpu_s": round(cpu_s, 2),
        "ksoftirqd_s": mine.get("ksoftirqd_s", float("nan")),
        # The CPU's busy time that no node's CPU time holds.
        "not_nodes_s": round(
            sum(mine[k] for k in ("user_s", "nice_s", "system_s", "irq_s", "softirq_s")) - cpu_s,
            2,
        ),
        "other_softirq_s": sum(by_cpu[c]["softirq_s"] for c in others),
        "net_rx": mine.get("net_rx", 0),
        "writes": writes,
        "out_segs": out,
        "in_segs": into,
        "us_per_out_seg": round(mine["softirq_s"] / out * 1e6, 2) if out else float("nan"),
        "us_per_in_seg": round(mine["softirq_s"] / into * 1e6, 2) if into else float("nan"),
        "us_per_write": round(mine["softirq_s"] / writes * 1e6, 2) if writes else float("nan"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", type=Path)
    args = parser.parse_args()
    table = pl.DataFrame([row(f) for f in args.results])
    with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_width_chars=200):
        print(table)
    # softirq = a × OutSegs, least squares through the origin.
    segs, soft = table["out_segs"].cast(pl.Float64), table["softirq_s"]
    a = float((segs * soft).sum() / (segs * segs).sum())
    errors = ((segs * a - soft) / soft * 100).round(1).to_list()
    print(f"softirq per segment sent = {a * 1e6:.2f} us (error per run, %: {errors})")


if __name__ == "__main__":
    main()
