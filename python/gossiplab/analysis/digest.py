"""A run reduced to what overlay figures need, small enough to hold dozens at once.

Comparing runs means drawing their distributions on one figure. A run of the Whiteblock
campaign has 3.4 million first receipts; a digest keeps every message's dissemination
time (tens of thousands of values) but thins the per-receipt latencies to the ranks a CDF
can show, so a campaign's two dozen runs fit in memory together.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from gossiplab.analysis import aggregates
from gossiplab.analysis.metrics import REACH_PERCENTS, measure, ns_to_ms
from gossiplab.analysis.results import SUMMARY_FILE, load_results
from gossiplab.analysis.tables import RunTables
from gossiplab.report.drawing import thinned_ranks


@dataclass(frozen=True)
class RunDigest:
    label: str
    folder: Path
    summary: dict[str, Any]
    messages: int
    """Measured messages that had receivers: the denominator of the message CDFs."""
    dissemination_ms: np.ndarray
    """Sorted dissemination times of the fully delivered messages."""
    reach_ms: dict[int, np.ndarray]
    """Sorted times to reach p% of the subscribers, per p, over the messages that did."""
    receipt_latency_ms: np.ndarray
    """Sorted per-receipt latencies, thinned to CDF ranks; see ``receipt_fraction``."""
    receipt_fraction: np.ndarray
    last_delivery_hop: dict[int, int]
    max_hop: dict[int, int]
    duplicates: dict[int, int]
    """(message, node) pairs by number of duplicates received."""
    bytes_sent_per_node: np.ndarray
    """Bytes each node sent over the run, largest first."""


def load_digest(folder: Path, label: str) -> RunDigest:
    """Read a results folder and reduce it; raises ResultsError naming what is wrong."""
    tables, run, _ = load_results(folder)
    measured = measure(tables, run)
    # summary.json was computed from these same tables when the folder was written.
    summary = json.loads((Path(folder) / SUMMARY_FILE).read_text(encoding="utf-8"))
    messages = measured.messages
    if measured.aggregate:  # no per-receipt rows: the histograms stand in
        latency_ms, fraction, duplicates = _from_aggregates(tables, summary)
    else:
        latency = ns_to_ms(measured.first_receipts["latency_ns"]).sort()
        ranks = thinned_ranks(latency.len())
        latency_ms = latency.gather(ranks - 1).to_numpy() if latency.len() else np.array([])
        fraction = ranks / latency.len() if latency.len() else np.array([])
        duplicates = _counts(measured.first_receipts["duplicates"])
    nodes = int(run["nodes"])
    per_node = (
        pl.DataFrame({"node": pl.arange(0, nodes, dtype=pl.UInt32, eager=True)})
        .join(
            tables.traffic.group_by("node").agg(pl.col("bytes_sent").sum()), on="node", how="left"
        )
        .fill_null(0)
    )
    return RunDigest(
        label=label,
        folder=Path(folder),
        summary=summary,
        messages=messages.filter(pl.col("targets") > 0).height,
        dissemination_ms=_sorted(ns_to_ms(messages["dissemination_ns"])),
        reach_ms={p: _sorted(ns_to_ms(messages[f"reach_{p}_ns"])) for p in REACH_PERCENTS},
        receipt_latency_ms=latency_ms,
        receipt_fraction=fraction,
        last_delivery_hop=_counts(messages["last_delivery_hop"]),
        max_hop=_counts(messages["max_hop"]),
        duplicates=duplicates,
        bytes_sent_per_node=np.sort(per_node["bytes_sent"].to_numpy())[::-1],
    )


def _from_aggregates(
    tables: RunTables, summary: dict[str, Any]
) -> tuple[np.ndarray, np.ndarray, dict[int, int]]:
    """Latency CDF points (bin middles, within 1/256) and duplicate counts of an
    aggregate-mode run."""
    latency = summary["receipt_latency_ms"]
    total = int(latency["count"])
    ranks = thinned_ranks(total)
    values = np.array([])
    if total:
        values = np.clip(
            aggregates.latency_cdf(tables, ranks) / 1e6, latency["min"], latency["max"]
        )
    histogram = tables.duplicates_histogram
    duplicates = {int(d): int(n) for d, n in histogram.iter_rows()} if histogram is not None else {}
    return values, ranks / total if total else np.array([]), duplicates


def _sorted(values: pl.Series) -> np.ndarray:
    return values.drop_nulls().sort().to_numpy()


def _counts(values: pl.Series) -> dict[int, int]:
    counts = values.drop_nulls().value_counts(name="n").sort(values.name)
    return {int(k): int(n) for k, n in counts.iter_rows()}
