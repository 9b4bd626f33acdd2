"""How each class of node met the kernel while it published, model beside testbed.

Takes crosscheck folders (`gossiplab crosscheck FILE`, with or without `--partner-run`)
whose both sides have `resources.parquet` with the threads' counts: the testbed's from
/proc, the model's on time-sliced hosts (docs/results.md). For the hubs (the ten nodes
that received the most payload copies on the testbed; `--hubs` to change) and the other
nodes, per node and second from the first publication to the last: the node's CPU
(cores), its Go `sysmon` thread's runs, its threads' blocks (voluntary context
switches), the blocks that are not `sysmon`'s sleeps (the working thread with nothing to
run, and on real nodes Go's other threads), and its threads' preemptions (involuntary
context switches), each read as the summary's CPU section reads them
(`gossiplab.analysis.cpu_use`).

    .venv/bin/python bench/node_switches.py CROSSCHECK [CROSSCHECK ...]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).parent))
from kernel_eevdf import _classes

from gossiplab.analysis.cpu_use import per_second_by_node

COLUMNS = {
    "cpu_s": "cores",
    "sysmon_runs": "sysmon runs",
    "voluntary_switches": "blocks",
    "involuntary_switches": "preemptions",
}


def per_node(run: Path) -> pl.DataFrame:
    """Each node's cores, sysmon runs, blocks and preemptions per second while the run
    published."""
    resources = pl.read_parquet(run / "resources.parquet")
    published = pl.read_parquet(run / "publishes.parquet")["t_publish_ns"]
    start, end = int(published.filter(published >= 0).min()), int(published.max())
    table = pl.DataFrame({"node": sorted(resources["node"].unique().to_list())})
    for column in COLUMNS:
        # A node without samples of the column around both bounds has none (null).
        per_s = per_second_by_node(resources, start, end, column)
        table = table.join(per_s, on="node", how="left")
    return table


def class_rows(folder: Path, hubs: int) -> list[tuple[str, str, list[float | None]]]:
    """(class, side, [cores, sysmon runs, blocks, preemptions, blocks less sysmon runs])
    means."""
    classes = _classes(pl.read_parquet(folder / "testbed" / "traffic.parquet"), hubs)
    rows = []
    for side in ("model", "testbed"):
        table = per_node(folder / side).with_columns(
            pl.col("node").replace_strict(classes, default="others").alias("class"),
            (pl.col("voluntary_switches") - pl.col("sysmon_runs")).alias("other_blocks"),
        )
        for cls in ("hubs", "others"):
            means = table.filter(pl.col("class") == cls).select(
                pl.col(*COLUMNS, "other_blocks").mean()
            )
            rows.append((cls, side, list(means.row(0))))
    return rows


def _cell(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("crosschecks", type=Path, nargs="+")
    parser.add_argument("--hubs", type=int, default=10)
    args = parser.parse_args()
    header = (
        "| class | side | cores | sysmon runs/s | blocks/s | preemptions/s "
        "| blocks/s not sysmon's |"
    )
    for folder in args.crosschecks:
        print(f"{folder}: per node, while publishing")
        print(header)
        print("|---|---|---:|---:|---:|---:|---:|")
        for cls, side, values in class_rows(folder, args.hubs):
            cores, runs, blocks, preempted, other = values
            cells = [_cell(cores, 4), *(_cell(v, 1) for v in (runs, blocks, preempted, other))]
            print(f"| {cls} | {side} | " + " | ".join(cells) + " |")
        print()


if __name__ == "__main__":
    main()
