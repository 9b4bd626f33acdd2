"""Metrics of an aggregate-mode run, from its aggregate tables instead of per-receipt rows.

The model's aggregate output mode (``[output] mode = "aggregate"``) keeps no row per first
receipt; the engine maintains per-message and per-node aggregates and two histograms as
the run goes (``tables.py`` describes them). From those, every metric of ``metrics.py``
comes out the same as from the full tables, except the percentiles of per-receipt latency
(overall and per node class or region), which are read off a histogram:

- Nearest rank as everywhere else: the p-th percentile of n latencies is the one at rank
  ceil(p/100 × n). The histogram tells which bin holds that rank; the value reported is the
  bin's middle, clamped to the exact minimum and maximum. The bins are exact below 256 ns
  and never wider than 1/128 of their lower bound above, so the value is within
  ``MAX_RELATIVE_ERROR`` (1/256, under 0.4 %) of the true percentile.
- Count, mean, minimum and maximum are exact (the engine keeps sums and extremes), as is
  everything about duplicates (their histogram has one bin per count).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl

from gossiplab.analysis.tables import RunTables
from gossiplab.errors import ResultsError

NS_PER_MS = 1_000_000
MAX_RELATIVE_ERROR = 1 / 256
"""Largest relative error of a percentile read off the latency histogram."""
PERCENTILES: tuple[int, ...] = (50, 90, 95, 99)

Stats = dict[str, Any]
_PKEYS = [f"p{p}" for p in PERCENTILES]

APPROXIMATION_METHOD = (
    "nearest rank over the engine's latency histogram (fixed bins, exact below 256 ns, "
    "128 per power of two above): the middle of the bin holding the rank, clamped to the "
    "exact minimum and maximum"
)


def _require(frame: pl.DataFrame | None, name: str) -> pl.DataFrame:
    if frame is None:
        raise ResultsError(
            f"the run has no deliveries table and no {name} table; re-run the scenario"
        )
    return frame


def bin_middle(lo_ns: np.ndarray, hi_ns: np.ndarray) -> np.ndarray:
    """The value standing for each bin [lo, hi): its middle, rounded down."""
    return lo_ns + (hi_ns - 1 - lo_ns) // 2


def values_at_ranks(histogram: pl.DataFrame, ranks: np.ndarray) -> np.ndarray:
    """The bin middle holding each 1-based rank of a histogram (lo_ns, hi_ns, count).

    Bins may repeat (one row per node); ranks must be within 1..total.
    """
    bins = histogram.group_by("lo_ns", "hi_ns").agg(pl.col("count").sum()).sort("lo_ns")
    cumulative = np.cumsum(bins["count"].to_numpy())
    index = np.searchsorted(cumulative, ranks, side="left")
    middle = bin_middle(bins["lo_ns"].to_numpy(), bins["hi_ns"].to_numpy())
    return np.asarray(middle[index])


def _rank(percent: int, count: int) -> int:
    return max(1, -(-percent * count // 100))


def _percentiles_ns(histogram: pl.DataFrame, count: int, low: int, high: int) -> dict[str, int]:
    ranks = np.array([_rank(p, count) for p in PERCENTILES])
    values = np.clip(values_at_ranks(histogram, ranks), low, high)
    return {f"p{p}": int(v) for p, v in zip(PERCENTILES, values, strict=True)}


def latency_distribution(tables: RunTables) -> Stats:
    """``receipt_latency_ms`` of summary.json: count, mean, min, max exact; p50, p90, p95, p99
    from the histogram (see the module's docstring)."""
    receivers = _require(tables.receivers, "receivers")
    histogram = _require(tables.latency_histogram, "latency_histogram")
    count = int(receivers["first_receipts"].sum())
    if count == 0:
        return {"count": 0, "mean": None, "min": None, **dict.fromkeys(_PKEYS), "max": None}
    received = receivers.filter(pl.col("first_receipts") > 0)
    low = int(received["latency_min_ns"].min())  # type: ignore[arg-type]
    high = int(received["latency_max_ns"].max())  # type: ignore[arg-type]
    # Summed as Python integers: exact, whatever the number of receipts.
    exact_sum = sum(int(v) for v in receivers["latency_sum_ns"].to_list())
    percentiles = _percentiles_ns(histogram, count, low, high)
    return {
        "count": count,
        "mean": exact_sum / count / NS_PER_MS,
        "min": low / NS_PER_MS,
        **{key: value / NS_PER_MS for key, value in percentiles.items()},
        "max": high / NS_PER_MS,
    }


def weighted_distribution(values: Sequence[int], counts: Sequence[int]) -> Stats:
    """count, mean, min, p50, p90, p95, p99 and max of integer ``values`` seen ``counts`` times
    (exact nearest rank, as ``metrics.distribution`` over the expanded values)."""
    pairs = sorted((int(v), int(c)) for v, c in zip(values, counts, strict=True) if c > 0)
    total = sum(c for _, c in pairs)
    if total == 0:
        return {"count": 0, "mean": None, "min": None, **dict.fromkeys(_PKEYS), "max": None}
    ordered = np.array([v for v, _ in pairs])
    cumulative = np.cumsum([c for _, c in pairs])

    def at(rank: int) -> int:
        return int(ordered[np.searchsorted(cumulative, rank, side="left")])

    return {
        "count": total,
        "mean": sum(v * c for v, c in pairs) / total,
        "min": pairs[0][0],
        **{f"p{p}": at(_rank(p, total)) for p in PERCENTILES},
        "max": pairs[-1][0],
    }


def duplicates_distribution(tables: RunTables) -> Stats:
    """Duplicates per (message, node) pair, exact, from the duplicates histogram."""
    histogram = _require(tables.duplicates_histogram, "duplicates_histogram")
    return weighted_distribution(histogram["duplicates"].to_list(), histogram["pairs"].to_list())


def receipts_per_message(tables: RunTables) -> pl.DataFrame:
    """msg and every first receipt of it (receivers down included): what the full tables'
    deliveries count per message."""
    messages = _require(tables.messages, "messages")
    return messages.select("msg", receivers=pl.col("first_receipts").cast(pl.UInt64))


def receipt_stats_by_group(members: pl.DataFrame, tables: RunTables) -> pl.DataFrame:
    """Per group of ``members`` (node, group): first_receipts, p50/p90/p95/p99 and max latency
    (ns) and mean_hop, like ``breakdown`` computes them from per-receipt rows; the
    percentiles come from the histogram. Groups without receipts are left out."""
    receivers = _require(tables.receivers, "receivers").join(members, on="node", how="inner")
    histogram = _require(tables.latency_histogram, "latency_histogram").join(
        members, on="node", how="inner"
    )
    totals = (
        receivers.filter(pl.col("first_receipts") > 0)
        .group_by("group")
        .agg(
            first_receipts=pl.col("first_receipts").sum().cast(pl.Int64),
            low=pl.col("latency_min_ns").min(),
            max=pl.col("latency_max_ns").max(),
            mean_hop=pl.col("hop_sum").sum().cast(pl.Float64)
            / pl.col("first_receipts").sum().cast(pl.Float64),
        )
        .sort("group")
    )
    rows = []
    for group, count, low, high, mean_hop in totals.iter_rows():
        in_group = histogram.filter(pl.col("group") == group)
        percentiles = _percentiles_ns(in_group, int(count), int(low), int(high))
        rows.append(
            {
                "group": group,
                "first_receipts": count,
                **percentiles,
                "max": high,
                "mean_hop": mean_hop,
            }
        )
    schema = {
        "group": members.schema["group"],
        "first_receipts": pl.Int64,
        **dict.fromkeys(_PKEYS, pl.Int64),
        "max": pl.Int64,
        "mean_hop": pl.Float64,
    }
    return pl.DataFrame(rows, schema=schema)


def approximated(summary: Mapping[str, Any]) -> dict[str, Any]:
    """summary.json's note of which values the histogram approximates, and how well."""
    values = [f"receipt_latency_ms.{key}" for key in _PKEYS]
    for breakdown in ("by_class", "by_region"):
        if summary.get(breakdown):
            values += [f"{breakdown}.*.latency_ms.{key}" for key in _PKEYS]
    return {
        "values": values,
        "method": APPROXIMATION_METHOD,
        "max_relative_error": MAX_RELATIVE_ERROR,
    }


def latency_cdf(tables: RunTables, ranks: np.ndarray) -> np.ndarray:
    """Per-receipt latency (ns) at each 1-based rank, read off the histogram (for CDFs)."""
    histogram = _require(tables.latency_histogram, "latency_histogram")
    return values_at_ranks(histogram, ranks)


def duplicates_per_node(tables: RunTables) -> pl.DataFrame:
    """node and its mean duplicates per counted first receipt (nodes with receipts)."""
    receivers = _require(tables.receivers, "receivers")
    return receivers.filter(pl.col("first_receipts") > 0).select(
        "node",
        mean=pl.col("duplicates").cast(pl.Float64) / pl.col("first_receipts").cast(pl.Float64),
    )
