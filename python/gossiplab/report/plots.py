"""The figures of one run's report, each saved as a PNG.

Each drawing function returns the PNG's path, or None when there is nothing to plot
(the report then says so). ``FIGURES`` lists them in report order with the section they
belong to and a caption saying what the figure shows and how to read it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from gossiplab.analysis import aggregates, over_time
from gossiplab.analysis.metrics import Measured, measure, ns_to_ms
from gossiplab.analysis.partial_curves import measured_pairs
from gossiplab.analysis.tables import TRAFFIC_KINDS, RunTables
from gossiplab.report import aggregate_plots, partial_plots
from gossiplab.report.drawing import (
    BAR,
    REPORT_MARGINS,
    bin_count,
    byte_unit,
    draw_cdf,
    mark_percentiles,
    new_figure,
    new_panels,
    save,
)
from gossiplab.report.over_time_plot import draw_over_time

REACH_PLOTTED = (50, 90, 99, 100)
LOG_SCALE_SPREAD = 100
"""Bars spanning more than this factor are drawn on a log scale."""
NS_PER_S = 1e9


@dataclass(frozen=True)
class Plot:
    """One figure of the report; ``path`` is None when there was nothing to plot."""

    name: str
    section: str
    title: str
    caption: str
    path: Path | None
    no_data: str = "no data to plot"


@dataclass(frozen=True)
class RunData:
    """What the figures are drawn from: the tables, their measurement and the summary."""

    tables: RunTables
    measured: Measured
    summary: Mapping[str, Any]

    @property
    def nodes(self) -> int:
        return int(self.summary["run"]["nodes"])


Draw = Callable[[RunData, Path], Path | None]


@dataclass(frozen=True)
class FigureSpec:
    name: str
    section: str
    title: str
    caption: str
    draw: Draw
    only_when: Callable[[RunData], bool] = lambda data: True
    no_data: str = "no data to plot"


SPEED = "Delivery and speed"
HOPS = "Hops"
COST = "Cost: duplicates, bandwidth, control"
DROPS = "Drops"
PUBLISHING = "Publishing"
PARTIAL = "Partial messages"
RESOURCES = "CPU and memory"


def dissemination_histogram(data: RunData, path: Path) -> Path | None:
    values = ns_to_ms(data.measured.messages["dissemination_ns"]).drop_nulls()
    if values.is_empty():
        return None
    figure, axes = new_figure(margins=REPORT_MARGINS)
    # One filled outline rather than a rectangle per bin: the same picture, cheaper to draw.
    axes.hist(values.to_numpy(), bins=bin_count(values.len()), color=BAR, histtype="stepfilled")
    mark_percentiles(axes, values.sort(), (50, 99), label_y=0.9)
    axes.set_title(f"Dissemination time of the {values.len():,} fully delivered messages")
    axes.set_xlabel("time from publish to the last first receipt (ms)")
    axes.set_ylabel("messages")
    return save(figure, path)


def dissemination_cdf(data: RunData, path: Path) -> Path | None:
    ordered = ns_to_ms(data.measured.messages["dissemination_ns"]).drop_nulls().sort()
    if ordered.is_empty():
        return None
    figure, axes = new_figure(margins=REPORT_MARGINS)
    draw_cdf(axes, ordered, total=ordered.len())
    mark_percentiles(axes, ordered, (50, 99))
    axes.set_title(f"Dissemination time CDF ({ordered.len():,} fully delivered messages)")
    axes.set_xlabel("time from publish to the last first receipt (ms)")
    axes.set_ylabel("fraction of messages")
    return save(figure, path)


def time_to_reach_cdf(data: RunData, path: Path) -> Path | None:
    messages = data.measured.messages
    # Every message with receivers is in the denominator, so a curve that levels off below
    # 1 shows the share of messages that never reached that fraction of the subscribers.
    total = messages.filter(pl.col("targets") > 0).height
    curves = {p: ns_to_ms(messages[f"reach_{p}_ns"]).drop_nulls().sort() for p in REACH_PLOTTED}
    if not any(len(values) for values in curves.values()):
        return None
    figure, axes = new_figure(margins=REPORT_MARGINS)
    for percent, ordered in curves.items():
        if len(ordered):
            draw_cdf(axes, ordered, total=total, label=f"{percent}% of subscribers")
    axes.set_ylim(0, 1.02)
    axes.legend(loc="lower right")
    axes.set_title("Time for a message to reach a share of the other subscribers")
    axes.set_xlabel("time from publish (ms)")
    axes.set_ylabel("fraction of messages")
    return save(figure, path)


def receipt_latency_cdf(data: RunData, path: Path) -> Path | None:
    if data.measured.aggregate:  # no per-receipt rows: from the latency histogram
        return aggregate_plots.receipt_latency_cdf(data.tables, data.summary, path)
    ordered = ns_to_ms(data.measured.first_receipts["latency_ns"]).sort()
    if ordered.is_empty():
        return None
    figure, axes = new_figure(margins=REPORT_MARGINS)
    draw_cdf(axes, ordered, total=ordered.len())
    mark_percentiles(axes, ordered, (50, 99))
    axes.set_title(f"Latency of every first receipt ({ordered.len():,} message × node pairs)")
    axes.set_xlabel("time from publish to a node's first receipt (ms)")
    axes.set_ylabel("fraction of first receipts")
    return save(figure, path)


def by_publish_time(data: RunData, path: Path) -> Path | None:
    """Latency and delivery per interval of the publication schedule: a network past its
    capacity that settles shows flat lines, one that falls behind rising latency."""
    table = over_time.by_publish_time(data.measured)
    if table.height < 2:
        return None
    return draw_over_time({"": table}, path)


def _hop_bars(values: pl.Series, path: Path, title: str, xlabel: str) -> Path | None:
    counts = values.drop_nulls().value_counts(name="messages").sort(values.name)
    if counts.is_empty():
        return None
    hops = counts[values.name].to_list()
    figure, axes = new_figure(margins=REPORT_MARGINS)
    bars = axes.bar(hops, counts["messages"].to_numpy(), color=BAR)
    axes.bar_label(bars, labels=[f"{n:,}" for n in counts["messages"]], fontsize="small")
    axes.set_xticks(range(min(hops), max(hops) + 1))
    axes.set_title(title)
    axes.set_xlabel(xlabel)
    axes.set_ylabel("messages")
    return save(figure, path)


def last_delivery_hop_bars(data: RunData, path: Path) -> Path | None:
    return _hop_bars(
        data.measured.messages["last_delivery_hop"],
        path,
        "Hop count of the last node to receive each message (LDH)",
        "last delivery hop (publisher = 0)",
    )


def max_hop_bars(data: RunData, path: Path) -> Path | None:
    return _hop_bars(
        data.measured.messages["max_hop"],
        path,
        "Largest hop count at which each message reached any node",
        "maximum hop (publisher = 0)",
    )


def duplicates_histogram(data: RunData, path: Path) -> Path | None:
    # (duplicates, pairs): kept by the engine in aggregate mode, counted from rows otherwise.
    if data.measured.aggregate:
        counts = data.tables.duplicates_histogram
    else:
        receipts = data.measured.first_receipts
        counts = receipts["duplicates"].value_counts(name="pairs").sort("duplicates")
    if counts is None or counts.is_empty():
        return None
    figure, axes = new_figure(margins=REPORT_MARGINS)
    axes.bar(counts["duplicates"].to_numpy(), counts["pairs"].to_numpy(), color=BAR)
    axes.set_title("Duplicate copies a node received after its first copy of a message")
    axes.set_xlabel("duplicates per node per message")
    axes.set_ylabel("message × node pairs")
    return save(figure, path)


def duplicates_per_node(data: RunData, path: Path) -> Path | None:
    # (node, mean duplicates per message received), from either mode's data.
    if data.measured.aggregate:
        per_node = aggregates.duplicates_per_node(data.tables)
    else:
        per_node = data.measured.first_receipts.group_by("node").agg(
            mean=pl.col("duplicates").cast(pl.Float64).mean()
        )
    per_node = per_node.sort("mean", descending=True)
    if per_node.is_empty():
        return None
    figure, axes = new_figure(margins=REPORT_MARGINS)
    # Adjacent bars of width 1, drawn as one filled outline.
    edges = np.arange(per_node.height + 1) - 0.5
    axes.stairs(per_node["mean"].to_numpy(), edges, fill=True, color=BAR)
    axes.set_xlim(-0.5, per_node.height - 0.5)
    axes.set_title("Mean duplicates per message received, per node (ranked)")
    axes.set_xlabel(f"nodes, ranked by duplicates ({per_node.height:,} nodes received messages)")
    axes.set_ylabel("duplicates per message")
    return save(figure, path)


def _bytes_by_node_and_kind(traffic: pl.DataFrame, nodes: int, column: str) -> pl.DataFrame:
    return (
        pl.DataFrame({"node": pl.arange(0, nodes, dtype=pl.UInt32, eager=True)})
        .join(
            traffic.pivot(
                on="kind",
                on_columns=TRAFFIC_KINDS,
                index="node",
                values=column,
                aggregate_function="sum",
            ),
            on="node",
            how="left",
        )
        .fill_null(0)
        .with_columns(total=pl.sum_horizontal(TRAFFIC_KINDS))
        .sort("total", "node", descending=[True, False])
    )


def bytes_per_node(data: RunData, path: Path) -> Path | None:
    frames = {
        "sent": _bytes_by_node_and_kind(data.tables.traffic, data.nodes, "bytes_sent"),
        "received": _bytes_by_node_and_kind(data.tables.traffic, data.nodes, "bytes_recv"),
    }
    kinds = [k for k in TRAFFIC_KINDS if any(frame[k].sum() > 0 for frame in frames.values())]
    if not kinds:
        return None
    largest = max(int(frame["total"].max() or 0) for frame in frames.values())  # type: ignore[arg-type]
    unit, scale = byte_unit(largest)
    figure, panels = new_panels(2, margins=REPORT_MARGINS)
    for axes, (direction, by_node) in zip(panels, frames.items(), strict=True):
        # Repeat the last node so that the step drawing gives it a full-width column too.
        ranks = np.arange(by_node.height + 1)
        layers = [np.append(by_node[k].to_numpy(), by_node[k][-1]) / scale for k in kinds]
        axes.stackplot(ranks, layers, labels=kinds, step="post")
        axes.set_xlim(0, by_node.height)
        axes.set_title(f"Bytes {direction} per node, by kind")
        axes.set_xlabel(f"nodes, ranked by bytes {direction}")
        axes.set_ylabel(f"bytes {direction} ({unit})")
    panels[0].legend(loc="upper right", fontsize="small")
    return save(figure, path)


def control_counts(data: RunData, path: Path) -> Path | None:
    counts = data.summary["control"]
    if not any(counts.values()):
        return None
    figure, axes = new_figure(margins=REPORT_MARGINS)
    bars = axes.bar([kind.upper() for kind in counts], list(counts.values()), color="#55a868")
    axes.bar_label(bars, labels=[f"{count:,}" for count in counts.values()], fontsize="small")
    nonzero = [count for count in counts.values() if count]
    if max(nonzero) > LOG_SCALE_SPREAD * min(nonzero):
        axes.set_yscale("log")  # else IHAVE's ids dwarf the GRAFTs into invisibility
    axes.set_title("Control items sent by all nodes, by kind")
    axes.set_ylabel("items (message ids; topics for GRAFT/PRUNE)")
    return save(figure, path)


def drops_bars(data: RunData, path: Path) -> Path | None:
    by_reason = (
        data.tables.drops.group_by("kind", "reason")
        .agg(pl.col("count").sum())
        .filter(pl.col("count") > 0)
        .sort("count", "kind", "reason", descending=[True, False, False])
    )
    if by_reason.is_empty():
        return None
    labels = [f"{kind}: {reason}" for kind, reason, _ in by_reason.iter_rows()]
    counts = by_reason["count"].to_numpy()
    figure, axes = new_figure()  # constrained: room for the "kind: reason" labels, however long
    bars = axes.barh(labels, counts, color="#dd8452")
    axes.bar_label(bars, labels=[f"{int(c):,}" for c in counts], fontsize="small")
    axes.invert_yaxis()
    axes.set_title("What was dropped, and why (all nodes, whole run)")
    axes.set_xlabel("items dropped")
    return save(figure, path)


def publish_interarrival(data: RunData, path: Path) -> Path | None:
    publishes = data.tables.publishes
    if publishes.height < 2:
        return None
    intended = ns_to_ms(publishes["t_intended_ns"].sort().diff().drop_nulls()).sort()
    actual = ns_to_ms(publishes["t_publish_ns"].sort().diff().drop_nulls()).sort()
    error = ns_to_ms(publishes["t_publish_ns"] - publishes["t_intended_ns"])
    figure, (gaps, late) = new_panels(2, margins=REPORT_MARGINS)
    draw_cdf(gaps, intended, total=intended.len(), label="intended")
    draw_cdf(gaps, actual, total=actual.len(), label="actual")
    gaps.lines[-1].set_linestyle("--")  # so that it shows where it coincides with intended
    gaps.legend(loc="lower right")
    gaps.set_title("Time between consecutive publishes")
    gaps.set_xlabel("interarrival time (ms)")
    gaps.set_ylabel("fraction of gaps")
    late.hist(error.to_numpy(), bins=bin_count(error.len()), color=BAR, histtype="stepfilled")
    late.set_title("Actual minus intended publish time")
    late.set_xlabel("publish timing error (ms)")
    late.set_ylabel("messages")
    return save(figure, path)


# The most nodes the CPU and memory figure draws a line for.
RESOURCE_LINES = 200


def resource_samples(resources: pl.DataFrame) -> pl.DataFrame:
    """Per node and sample: time (s), CPU in cores since the previous sample, RSS (MiB).

    ``cpu_s`` is cumulative, so the CPU used between two samples is its growth divided by
    the time between them; a node's first sample has no previous one (cores is null).
    """
    seconds = pl.col("t_ns").cast(pl.Float64) / NS_PER_S
    return resources.sort("node", "t_ns").select(
        "node",
        t_s=seconds,
        cores=(pl.col("cpu_s").diff() / seconds.diff()).over("node"),
        rss_mib=pl.col("rss_bytes").cast(pl.Float64) / 2**20,
    )


def resources_over_time(data: RunData, path: Path) -> Path | None:
    resources = data.tables.resources
    if resources is None or resources.is_empty():
        return None
    samples = resource_samples(resources)
    figure, (cpu, memory) = new_panels(1, rows=2, size=(7.5, 6.5), margins=REPORT_MARGINS)
    # A grey line per node, for at most RESOURCE_LINES nodes spread over the ids (a large
    # model run has thousands); the mean is over every node.
    nodes = samples["node"].unique().sort()
    drawn = nodes.gather_every(max(1, -(-nodes.len() // RESOURCE_LINES)))
    for _, node in samples.filter(pl.col("node").is_in(drawn.to_list())).group_by(
        "node", maintain_order=True
    ):
        cpu.plot(node["t_s"], node["cores"], color="#999999", linewidth=0.7, alpha=0.7)
        memory.plot(node["t_s"], node["rss_mib"], color="#999999", linewidth=0.7, alpha=0.7)
    # Nodes are sampled at slightly different instants: average them per sampling interval.
    interval = samples["t_s"].diff().filter(samples["node"].diff() == 0).median() or 1.0
    mean = (
        samples.with_columns(slot=(pl.col("t_s") / interval).round())
        .group_by("slot")
        .agg(pl.col("t_s").mean(), pl.col("cores", "rss_mib").mean())
        .sort("slot")
    )
    cpu.plot(mean["t_s"], mean["cores"], color=BAR, linewidth=2, label="mean over nodes")
    memory.plot(mean["t_s"], mean["rss_mib"], color=BAR, linewidth=2, label="mean over nodes")
    cpu.set_ylim(bottom=0)
    memory.set_ylim(bottom=0)
    grey = "each node" if drawn.len() == nodes.len() else f"{drawn.len()} of the nodes"
    cpu.set_title(f"CPU used per node (grey: {grey})")
    cpu.set_ylabel("cores")
    cpu.legend(loc="upper right")
    memory.set_title(f"Resident memory per node (grey: {grey})")
    memory.set_ylabel("MiB")
    if samples["rss_mib"].null_count() == samples.height:
        # The model reports CPU only (its resources table has no memory).
        note = "no memory samples: this backend reports CPU only"
        memory.text(0.5, 0.5, note, ha="center", va="center", transform=memory.transAxes)
        memory.set_xlim(cpu.get_xlim())
    memory.set_xlabel("time from the start of the run (s)")
    return save(figure, path)


FIGURES: tuple[FigureSpec, ...] = (
    FigureSpec(
        "dissemination_histogram",
        SPEED,
        "Dissemination time (histogram)",
        "How long each fully delivered message took to reach its last subscriber. A narrow "
        "spike near zero is fast, uniform delivery; lobes further right are messages that "
        "needed extra hops or gossip (IHAVE/IWANT) rounds. Dashed and dotted lines: p50, p99.",
        dissemination_histogram,
    ),
    FigureSpec(
        "dissemination_cdf",
        SPEED,
        "Dissemination time (CDF)",
        "The share of fully delivered messages that had reached every subscriber by a given "
        "time. Read p50 and p99 where the curve crosses 0.5 and 0.99; a long flat tail means "
        "a few slow messages.",
        dissemination_cdf,
    ),
    FigureSpec(
        "time_to_reach",
        SPEED,
        "Time to reach 50/90/99/100% of the nodes",
        "For each share of the other subscribers, the CDF over messages of the time until "
        "that share had the message. The gap between the 99% and 100% curves is the cost of "
        "the last few nodes; a curve that ends below 1 counts messages that never got there.",
        time_to_reach_cdf,
    ),
    FigureSpec(
        "receipt_latency_cdf",
        SPEED,
        "Per-receipt latency (CDF)",
        "Every (message, node) first receipt, from publish to arrival. Where the "
        "dissemination time is the slowest node per message, this is the typical node.",
        receipt_latency_cdf,
    ),
    FigureSpec(
        "by_publish_time",
        SPEED,
        "Latency and delivery by time of publication",
        "The messages grouped by when they were published (at most 20 intervals): their "
        "per-receipt latency p50 and p99 and their delivery ratio. Flat lines are a steady "
        "state, even past capacity; rising latency or falling delivery, a network that "
        "falls further behind. Receipts after the end of the run are not counted, so the "
        "last intervals leave out what was still under way.",
        by_publish_time,
        no_data="one interval of publication: nothing to show over time",
    ),
    FigureSpec(
        "partial_completion",
        PARTIAL,
        "Completion over time",
        "The share of (group, node) pairs whose node held every part of the group, against "
        "the time since the group was published: thick, every pair; thin, per role when the "
        "network mixes nodes that request partial messages, only support sending them, or "
        "take full messages. Pairs that never complete stay in the denominator, so a curve "
        "ending below 1 shows nodes left without some part. A node that held every part "
        "before the publish completes when it first hears of the group (its first partial "
        "RPC or full copy).",
        lambda data, path: partial_plots.completion_over_time(_partial_pairs(data), path),
        only_when=lambda data: data.tables.partial is not None,
    ),
    FigureSpec(
        "partial_parts",
        PARTIAL,
        "Parts from the network against parts already held",
        "Left: per role, the parts its nodes needed (parts per group, over every group and "
        "node) split by where they came from: held before the publish (the mempool), first "
        "received from the network (as parts, or all at once in a full message, the only way "
        "for nodes without the extension), and parts received again in partial RPCs that "
        "the node already held (which stack above 1: a node can pay for a part twice). "
        "Right: how many duplicate parts each (group, node) pair received; the extension "
        "has no IDONTWANT for parts.",
        lambda data, path: partial_plots.part_sources_bars(_partial_pairs(data), path),
        only_when=lambda data: data.tables.partial is not None,
    ),
    FigureSpec(
        "partial_bytes",
        PARTIAL,
        "Bytes: full messages against partial messages",
        "Bytes all nodes received over the run: full messages (payload), partial-message RPCs "
        "carrying parts, parts metadata (what a node holds: every RPC that carries only "
        "metadata, and the metadata field of those with parts), and the v1.3 extensions "
        "message each stream opens with. Sizes are the protobuf encoding on the wire.",
        lambda data, path: partial_plots.bytes_split_bars(data.tables.traffic, path),
        only_when=lambda data: data.tables.partial is not None,
    ),
    FigureSpec(
        "last_delivery_hop",
        HOPS,
        "Last delivery hop (LDH)",
        "How many relays the copy that reached the last node went through. Fewer hops mean "
        "a better connected mesh; a wide spread means some messages took detours.",
        last_delivery_hop_bars,
    ),
    FigureSpec(
        "max_hop",
        HOPS,
        "Maximum hop per message",
        "The deepest hop at which each message reached any node. It can exceed the LDH when "
        "the last node to receive a message was not the farthest from its publisher.",
        max_hop_bars,
    ),
    FigureSpec(
        "duplicates",
        COST,
        "Duplicates per node per message",
        "How many extra copies a node received after its first copy of a message. Gossipsub "
        "trades these against speed through the mesh degree D; zero means each node got "
        "exactly one copy.",
        duplicates_histogram,
    ),
    FigureSpec(
        "duplicates_per_node",
        COST,
        "Duplicates per node",
        "Each node's mean number of duplicate copies per message it received, nodes ranked "
        "from most to fewest. Well connected nodes (hubs) usually sit on the left.",
        duplicates_per_node,
    ),
    FigureSpec(
        "bytes_per_node",
        COST,
        "Bandwidth per node, by message kind",
        "Bytes each node sent (left) and received (right) over the whole run, warm-up "
        "included, nodes ranked by total; colours split payload from control traffic "
        "(IHAVE, IWANT, GRAFT, PRUNE, ...). Sizes are the protobuf encoding on the wire.",
        bytes_per_node,
    ),
    FigureSpec(
        "control_counts",
        COST,
        "Control messages",
        "Control items sent by all nodes: message ids for IHAVE, IWANT and IDONTWANT, topics "
        "for GRAFT and PRUNE. Many IWANTs mean gossip is repairing what the mesh missed.",
        control_counts,
    ),
    FigureSpec(
        "drops",
        DROPS,
        "Drops by kind and reason",
        "Everything a node discarded: full outbound or validation queues, undeliverable "
        "messages. Any drop of a payload can lower the delivery ratio.",
        drops_bars,
        no_data="no drops: no node discarded anything",
    ),
    FigureSpec(
        "publish_interarrival",
        PUBLISHING,
        "Publish interarrival, intended vs actual",
        "Left: the CDF of the time between consecutive publishes as scheduled and as they "
        "happened; the curves coincide when publishers kept to the schedule. Right: how late "
        "each message was published (0 everywhere for the model, which is exact).",
        publish_interarrival,
    ),
    FigureSpec(
        "resources",
        RESOURCES,
        "CPU and memory over time",
        "Per node (grey; at most 200 nodes, spread over the ids) and averaged over all nodes "
        "(blue): CPU in cores, from the growth of cumulative CPU "
        "seconds between samples, and resident memory (testbed runs only; the model's CPU is "
        "the time its cores ran each node's work). A node pinned near its CPU limit delays "
        "everything it forwards.",
        resources_over_time,
        only_when=lambda data: data.tables.resources is not None,
    ),
)


def _partial_pairs(data: RunData) -> pl.DataFrame:
    assert data.tables.partial is not None  # only_when checked it
    return measured_pairs(data.tables.partial, data.tables.publishes, data.summary["run"])


def render_all(
    plots_dir: Path,
    tables: RunTables,
    summary: Mapping[str, Any],
    measured: Measured | None = None,
) -> list[Plot]:
    """Draw every figure that applies into ``plots_dir`` in report order, removing stale ones.

    ``measured`` is ``measure(tables, summary["run"])`` when the caller already has it.
    """
    if measured is None:
        measured = measure(tables, summary["run"])
    data = RunData(tables, measured, summary)
    plots_dir.mkdir(parents=True, exist_ok=True)
    plots = []
    for spec in FIGURES:
        path = plots_dir / f"{spec.name}.png"
        drawn = spec.draw(data, path) if spec.only_when(data) else None
        if drawn is None:
            path.unlink(missing_ok=True)  # a figure from an earlier report of this folder
        if spec.only_when(data):
            plots.append(
                Plot(spec.name, spec.section, spec.title, spec.caption, drawn, spec.no_data)
            )
    return plots
