"""The headline metrics of a run: one list, used by every table that summarises runs.

A run's report, `compare`'s side-by-side table, a sweep's points table and a campaign's
series table all show these, under the same names, read from summary.json the same way,
so a number means the same thing wherever it appears.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

Format = Literal["ratio", "ms", "count", "hops", "float", "bytes", "seconds"]

NO_VALUE = "n/a"


@dataclass(frozen=True)
class Metric:
    """One headline metric: a column name, a label for people, and where summary.json keeps it."""

    key: str
    label: str
    path: tuple[str, ...]
    format: Format

    def value(self, summary: Mapping[str, Any]) -> Any:
        """The metric's value in ``summary``, or None when the run has none."""
        here: Any = summary
        for part in self.path:
            if not isinstance(here, Mapping) or part not in here:
                return None
            here = here[part]
        return here

    def text(self, summary: Mapping[str, Any]) -> str:
        return format_value(self.value(summary), self.format)


def _m(key: str, label: str, path: str, fmt: Format) -> Metric:
    return Metric(key, label, tuple(path.split(".")), fmt)


HEADLINE: tuple[Metric, ...] = (
    _m("delivery_ratio", "Delivery ratio", "delivery.ratio", "ratio"),
    _m("messages_measured", "Messages measured", "messages.measured", "count"),
    _m(
        "messages_fully_delivered",
        "Messages fully delivered",
        "delivery.messages_fully_delivered",
        "count",
    ),
    _m(
        "dissemination_coverage",
        "Share of messages the dissemination percentiles cover",
        "dissemination_coverage.share",
        "ratio",
    ),
    _m("dissemination_p50_ms", "Dissemination p50 (ms)", "dissemination_ms.p50", "ms"),
    _m("dissemination_p90_ms", "Dissemination p90 (ms)", "dissemination_ms.p90", "ms"),
    _m("dissemination_p99_ms", "Dissemination p99 (ms)", "dissemination_ms.p99", "ms"),
    _m("dissemination_max_ms", "Dissemination max (ms)", "dissemination_ms.max", "ms"),
    _m("dissemination_mean_ms", "Dissemination mean (ms)", "dissemination_ms.mean", "ms"),
    _m("reach_50_p50_ms", "Time to reach 50% of nodes, p50 (ms)", "time_to_reach_ms.50.p50", "ms"),
    _m("reach_90_p50_ms", "Time to reach 90% of nodes, p50 (ms)", "time_to_reach_ms.90.p50", "ms"),
    _m("reach_99_p50_ms", "Time to reach 99% of nodes, p50 (ms)", "time_to_reach_ms.99.p50", "ms"),
    _m("receipt_latency_p50_ms", "Per-receipt latency p50 (ms)", "receipt_latency_ms.p50", "ms"),
    _m("receipt_latency_p99_ms", "Per-receipt latency p99 (ms)", "receipt_latency_ms.p99", "ms"),
    _m("ldh_mean", "Last delivery hop, mean", "last_delivery_hop.mean", "hops"),
    _m("ldh_max", "Last delivery hop, max", "last_delivery_hop.max", "count"),
    _m("max_hop_max", "Max hop, max", "max_hop.max", "count"),
    _m(
        "duplicates_mean",
        "Duplicates per node per message, mean",
        "duplicates.per_node_per_message.mean",
        "float",
    ),
    _m("rmr", "RMR", "duplicates.rmr", "float"),
    _m("bytes_sent_total", "Bytes sent, all nodes", "traffic.total_bytes_sent", "bytes"),
    _m(
        "bytes_sent_per_node_mean",
        "Bytes sent per node, mean",
        "traffic.bytes_sent_per_node.mean",
        "bytes",
    ),
    _m("amplification", "Payload amplification", "traffic.amplification", "float"),
    # Messages published together: time until the whole batch reached every node, and
    # how many of a batch made it everywhere within the deadline (4 s).
    _m(
        "batch_completion_p50_ms",
        "Batch completion p50 (ms)",
        "batches.completion_ms.p50",
        "ms",
    ),
    _m(
        "batch_completion_max_ms",
        "Batch completion max (ms)",
        "batches.completion_ms.max",
        "ms",
    ),
    _m(
        "batch_within_deadline_mean",
        "Messages of a batch everywhere within 4 s, mean",
        "batches.delivered_within_deadline.mean",
        "float",
    ),
    _m("ihave_items", "IHAVE ids sent", "control.ihave", "count"),
    _m("iwant_items", "IWANT ids sent", "control.iwant", "count"),
    _m("graft_items", "GRAFTs sent", "control.graft", "count"),
    _m("prune_items", "PRUNEs sent", "control.prune", "count"),
    _m("idontwant_items", "IDONTWANT ids sent", "control.idontwant", "count"),
    _m(
        "idontwant_saved",
        "Transmissions saved by IDONTWANT",
        "control.idontwant_transmissions_saved",
        "count",
    ),
    _m("iannounce_items", "IANNOUNCEs sent", "control.iannounce", "count"),
    _m("ineed_items", "INEEDs sent", "control.ineed", "count"),
    # The same in protobuf entries, the studies' unit (model runs only).
    _m("ihave_entries", "IHAVE entries sent", "control_entries.ihave", "count"),
    _m("iwant_entries", "IWANT entries sent", "control_entries.iwant", "count"),
    _m("idontwant_entries", "IDONTWANT entries sent", "control_entries.idontwant", "count"),
    _m("iannounce_entries", "IANNOUNCE entries sent", "control_entries.iannounce", "count"),
    _m("ineed_entries", "INEED entries sent", "control_entries.ineed", "count"),
    _m("ineed_timeouts", "INEED timeouts", "control.ineed_timeouts", "count"),
    _m("drops_total", "Drops", "drops.total", "count"),
    _m("wall_time_s", "Wall time (s)", "run.wall_time_s", "seconds"),
)
"""Every headline metric, in the order tables show them."""

KEY_METRICS: tuple[str, ...] = (
    "delivery_ratio",
    "dissemination_p50_ms",
    "dissemination_p99_ms",
    "dissemination_max_ms",
    "ldh_mean",
    "rmr",
)
"""The few metrics sweep, campaign and trend figures and tables show first."""

BY_KEY: dict[str, Metric] = {metric.key: metric for metric in HEADLINE}


def headline_values(summary: Mapping[str, Any]) -> dict[str, Any]:
    """Every headline metric of a run by key (None where the run has no value)."""
    return {metric.key: _plain(metric.value(summary)) for metric in HEADLINE}


def _plain(value: Any) -> Any:
    # summary.json writes NaN as null already; keep tables free of NaN as well.
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def format_value(value: Any, fmt: Format) -> str:
    """A metric value as a person reads it; ``n/a`` when there is none."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return NO_VALUE
    if fmt == "ratio":
        return f"{value:.4f}"
    if fmt == "ms":
        return f"{value:,.2f}"
    if fmt == "hops":
        return f"{value:.2f}"
    if fmt == "float":
        return f"{value:,.3f}"
    if fmt == "seconds":
        return f"{value:,.1f}"
    if fmt == "bytes":
        return format_bytes(int(value))
    return f"{int(value):,}"


BYTE_UNITS = (("GB", 10**9), ("MB", 10**6), ("kB", 10**3))


def format_bytes(count: int) -> str:
    """Decimal units, as network people count: 1 MB = 10^6 bytes."""
    for unit, size in BYTE_UNITS:
        if count >= size:
            return f"{count / size:,.2f} {unit}"
    return f"{count:,} B"
