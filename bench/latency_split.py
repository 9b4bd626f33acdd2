"""Where a receipt's latency goes: on the way to the receiver, or inside it.

For each first receipt of a message at a node (the copy it delivered, from `from_node`),
this splits the time from the publication to the delivery at the hop it came over:

- transit: from the sender's delivery of the message (or its publication, for the
  publisher) to the receiver's pubsub loop taking the copy: the sender's outbound queue,
  its writer and yamux, the link, and the receiver's reading of it;
- inside: from the loop taking the copy to its delivery: the validation queue, the
  signature check and the worker's hand-back to the loop.

It prints p50 / p90 / p99 (ms) of the receipts' latency and of both parts, over every
receipt and for the `--nodes` receivers whose receipts are latest at the median.

A testbed run needs go's RECV_RPC events (`[testbed] trace_rpc = true` and
`keep_traces = true`, which keep each node's trace in the results); a model run needs
every copy's receipt (`[output] receipts = true`: the time the loop took the copy).

    .venv/bin/python bench/latency_split.py RESULTS... [--nodes 8]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import polars as pl

from gossiplab.backends.testbed.convert import (
    DELIVER_MESSAGE,
    RECV_RPC,
    TRACE_FILE,
    read_result,
    trace_events,
)


def real_tables(run: Path) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """Deliveries, each copy's first taking by the loop, and publications, from the
    nodes' go traces."""
    folders = sorted((run / "testbed").glob("node*/"))
    results = [(f, info) for f in folders if (info := read_result(f)) is not None]
    infos = [info for _, info in results]
    if not folders or not (folders[0] / TRACE_FILE).exists():
        raise SystemExit(f"{run}: no node traces (keep_traces and trace_rpc in [testbed])")
    node_of = {info["peer_id"]: info["index"] for info in infos}
    delivered, taken = [], {}
    broken = [0]
    for folder, info in results:
        node = info["index"]
        for event in trace_events(folder / TRACE_FILE, broken):
            if event["type"] == RECV_RPC:
                rpc = event["recvRPC"]
                sender = node_of.get(rpc["receivedFrom"])
                for m in rpc["meta"].get("messages", []):
                    taken.setdefault((m["messageID"], node, sender), event["timestamp"])
            elif event["type"] == DELIVER_MESSAGE:
                d = event["deliverMessage"]
                sender = node_of.get(d["receivedFrom"])
                delivered.append((d["messageID"], node, event["timestamp"], sender))
    pubs = [
        (p["id"], info["index"], p["t_publish_unix_ns"])
        for info in infos
        for p in info["publishes"]
    ]
    return (
        pl.DataFrame(delivered, schema=["msg", "node", "t_ns", "from_node"], orient="row"),
        pl.DataFrame(
            [(m, n, s, t) for (m, n, s), t in taken.items()],
            schema=["msg", "node", "from_node", "t_taken"],
            orient="row",
        ),
        pl.DataFrame(pubs, schema=["msg", "publisher", "t_pub"], orient="row"),
    )


def modelled_tables(run: Path) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    if not (run / "receipts.parquet").exists():
        raise SystemExit(f"{run}: no receipts.parquet ([output] receipts = true)")
    receipts = pl.read_parquet(run / "receipts.parquet")
    return (
        pl.read_parquet(run / "deliveries.parquet").select("msg", "node", "t_ns", "from_node"),
        receipts.group_by("msg", "node", "from_node").agg(pl.col("t_ns").min().alias("t_taken")),
        pl.read_parquet(run / "publishes.parquet").select(
            "msg", "publisher", pl.col("t_publish_ns").alias("t_pub")
        ),
    )


def split(delivered: pl.DataFrame, taken: pl.DataFrame, pubs: pl.DataFrame) -> pl.DataFrame:
    """Per first receipt: latency, transit and inside, in ms."""
    sent = pl.concat(
        [
            delivered.select("msg", pl.col("node").alias("from_node"), pl.col("t_ns").alias("t0")),
            pubs.select("msg", pl.col("publisher").alias("from_node"), pl.col("t_pub").alias("t0")),
        ]
    )
    receipts = delivered.join(pubs, on="msg").filter(pl.col("node") != pl.col("publisher"))
    hops = receipts.join(taken, on=["msg", "node", "from_node"]).join(sent, on=["msg", "from_node"])
    return hops.select(
        "node",
        latency=(pl.col("t_ns") - pl.col("t_pub")) / 1e6,
        transit=(pl.col("t_taken") - pl.col("t0")) / 1e6,
        inside=(pl.col("t_ns") - pl.col("t_taken")) / 1e6,
    )


def _spread(values: pl.Series) -> str:
    return " / ".join(f"{v:,.1f}" for v in np.percentile(values.to_numpy(), [50, 90, 99]))


def report(run: Path, hops: pl.DataFrame, listed: int) -> None:
    print(f"\n{run}: {hops.height:,} first receipts; p50 / p90 / p99 (ms)")
    print("| receiver | latency | transit | inside |")
    print("|---|---|---|---|")
    print(
        f"| all | {_spread(hops['latency'])} | {_spread(hops['transit'])} | "
        f"{_spread(hops['inside'])} |"
    )
    latest = hops.group_by("node").agg(pl.col("latency").median()).sort("latency", descending=True)
    for node in latest["node"].head(listed).to_list():
        h = hops.filter(pl.col("node") == node)
        print(
            f"| {node} | {_spread(h['latency'])} | {_spread(h['transit'])} | "
            f"{_spread(h['inside'])} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("runs", type=Path, nargs="+")
    parser.add_argument("--nodes", type=int, default=8, help="latest receivers listed")
    args = parser.parse_args()
    for run in args.runs:
        tables = real_tables(run) if (run / "testbed").is_dir() else modelled_tables(run)
        report(run, split(*tables), args.nodes)


if __name__ == "__main__":
    main()
