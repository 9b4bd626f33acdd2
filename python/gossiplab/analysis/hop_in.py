"""The hop into each node: where copies wait on their way.

A message's first copy at a node came from one sender (``from_node``); the time from the
sender's own first receipt (the publication, when the sender published it) to this
node's receipt is the hop into the node: the sender's processing and sending, the link,
and this node's reading and validation. Past a network's capacity the nodes that fall
behind show as hops of hundreds of milliseconds, and which nodes those are decides the
latency of everyone downstream.
"""

from __future__ import annotations

import polars as pl

NS_PER_MS = 1e6


def hop_in_by_node(first_receipts: pl.DataFrame) -> pl.DataFrame:
    """Per receiving node: its first receipts and the median hop into it (ms).

    ``first_receipts`` is ``Measured.first_receipts`` (``msg``, ``node``, ``from_node``,
    ``latency_ns``). A copy whose sender has no first receipt of the message (the
    sender published it, or its receipt is not measured) counts from the publication."""
    senders = first_receipts.select(
        "msg", pl.col("node").alias("from_node"), pl.col("latency_ns").alias("sender_ns")
    )
    hops = first_receipts.join(senders, on=["msg", "from_node"], how="left").with_columns(
        hop_ns=pl.col("latency_ns") - pl.col("sender_ns").fill_null(0)
    )
    return (
        hops.group_by("node")
        .agg(receipts=pl.len(), hop_p50_ms=pl.col("hop_ns").median() / NS_PER_MS)
        .sort("node")
    )
