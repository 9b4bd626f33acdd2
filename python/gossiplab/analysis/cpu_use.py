"""The nodes' CPU use while messages are published, from the ``resources`` table.

Every backend that writes ``resources`` (the testbed from /proc, the model from its
engine's accounting) gives each node's cumulative CPU seconds at sample times; this reads
them the same way for all. The window is the publishing span, from the first publication
to the last: each node's CPU seconds at those two times (interpolated linearly between
its samples on either side), their difference over the span's length, in cores. A node
without samples on both sides of a bound (it crashed, or its sampling had not started)
is left out and not counted in ``nodes_measured``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

NS_PER_S = 1e9


def cpu_at(resources: pl.DataFrame, t_ns: int, column: str = "cpu_s") -> pl.DataFrame:
    """Each node's cumulative CPU seconds at ``t_ns`` (columns node, cpu_s), linear between
    its last sample at or before and its first at or after; nodes without both left out.
    ``column``: which cumulative seconds (``sysmon_cpu_s``: Go's sysmon thread's)."""
    t, cpu = pl.col("t_ns"), pl.col(column)
    before, after = t <= t_ns, t >= t_ns
    sides = (
        resources.filter(cpu.is_not_null())
        .sort("node", "t_ns")
        .group_by("node")
        .agg(
            t0=t.filter(before).last(),
            c0=cpu.filter(before).last(),
            t1=t.filter(after).first(),
            c1=cpu.filter(after).first(),
        )
        .drop_nulls()
    )
    span = (pl.col("t1") - pl.col("t0")).cast(pl.Float64)
    share = (t_ns - pl.col("t0")).cast(pl.Float64) / span
    at = (
        pl.when(span == 0)
        .then(pl.col("c0"))
        .otherwise(pl.col("c0") + share * (pl.col("c1") - pl.col("c0")))
    )
    return sides.select("node", cpu_s=at).sort("node")


def cpu_while_publishing(
    resources: pl.DataFrame | None, publishes: pl.DataFrame
) -> dict[str, Any] | None:
    """The ``cpu`` section of summary.json: CPU the nodes used from the first publication
    to the last, in cores (CPU seconds per second of the span), all nodes together and per
    node. None without a resources table, without two distinct publication times, or
    when no node has samples around both."""
    if resources is None or resources.is_empty():
        return None
    published = publishes.filter(pl.col("t_publish_ns") >= 0)["t_publish_ns"]
    if published.len() == 0:
        return None
    start, end = int(published.min()), int(published.max())  # type: ignore[arg-type]
    if end <= start:
        return None
    cores = cores_per_node(resources, start, end)
    if cores.is_empty():
        return None
    found = {
        "publishing_from_ns": start,
        "publishing_to_ns": end,
        "nodes_measured": cores.len(),
        # All nodes' CPU seconds over the span's seconds: how many cores they kept busy.
        "cores_all_nodes": float(cores.sum()),
        "cores_per_node_mean": float(cores.mean()),  # type: ignore[arg-type]
        "cores_per_node_max": float(cores.max()),  # type: ignore[arg-type]
    }
    # Of it, what Go's sysmon threads ran (real nodes, and the model's with [cpu] sysmon).
    if _recorded(resources, "sysmon_cpu_s"):
        sysmon = cores_per_node(resources, start, end, "sysmon_cpu_s")
        if not sysmon.is_empty():
            found["sysmon_cores_all_nodes"] = float(sysmon.sum())
    # How often they ran, and their CPU per run: what a round of Go's sysmon costs.
    if _recorded(resources, "sysmon_runs") and "sysmon_cores_all_nodes" in found:
        runs = float(cores_per_node(resources, start, end, "sysmon_runs").sum())
        found["sysmon_runs_per_s_all_nodes"] = runs
        if runs > 0:
            found["sysmon_us_per_run"] = found["sysmon_cores_all_nodes"] / runs * 1e6
    # How often the nodes' threads blocked (a working thread with nothing to run, a sysmon
    # going to sleep) and were preempted (switched out with work left): real nodes, and
    # the model's on time-sliced hosts.
    for column in ("voluntary_switches", "involuntary_switches"):
        if _recorded(resources, column):
            per_s = cores_per_node(resources, start, end, column)
            found[f"{column}_per_s_all_nodes"] = float(per_s.sum())
    return found


def _recorded(resources: pl.DataFrame, column: str) -> bool:
    """True if the table has `column` with some value (older runs lack it; the model
    leaves the counts null on hosts that are not time-sliced)."""
    return column in resources.columns and not resources[column].is_null().all()


def cores_per_node(
    resources: pl.DataFrame, start: int, end: int, column: str = "cpu_s"
) -> pl.Series:
    """Each node's cores from `start` to `end` (its cumulative seconds of `column` at
    both, `cpu_at`, over the span's seconds); nodes without both left out."""
    return per_second_by_node(resources, start, end, column)[column]


def per_second_by_node(
    resources: pl.DataFrame, start: int, end: int, column: str = "cpu_s"
) -> pl.DataFrame:
    """Each node's cumulative `column` from `start` to `end` over the span's seconds
    (columns node and `column`): cores for CPU seconds, a rate for a count; nodes without
    samples of it around both bounds left out."""
    at_start, at_end = cpu_at(resources, start, column), cpu_at(resources, end, column)
    used = at_start.join(at_end, on="node", suffix="_end")
    rate = (pl.col("cpu_s_end") - pl.col("cpu_s")) / ((end - start) / NS_PER_S)
    return used.select("node", rate.alias(column))


def cpu_text(summary: Mapping[str, Any]) -> str | None:
    """The ``cpu`` section in one line, for the reports; None when the run has none."""
    cpu = summary.get("cpu")
    if not cpu:
        return None
    # "While publishing": from the first publication to the last.
    text = (
        f"{cpu['cores_all_nodes']:,.3f} cores, all nodes; per node mean "
        f"{cpu['cores_per_node_mean']:.4f}, max {cpu['cores_per_node_max']:.4f}"
    )
    if cpu.get("sysmon_cores_all_nodes") is not None:
        text += f"; Go's sysmon threads {cpu['sysmon_cores_all_nodes']:,.3f} of them"
    if cpu.get("sysmon_us_per_run") is not None:
        runs = cpu["sysmon_runs_per_s_all_nodes"]
        text += f" ({runs:,.0f} runs a second, {cpu['sysmon_us_per_run']:.1f} µs each)"
    if cpu.get("voluntary_switches_per_s_all_nodes") is not None:
        blocks = cpu["voluntary_switches_per_s_all_nodes"]
        text += f"; threads blocked {blocks:,.0f} times a second"
    if cpu.get("involuntary_switches_per_s_all_nodes") is not None:
        preempted = cpu["involuntary_switches_per_s_all_nodes"]
        text += f", preempted {preempted:,.0f} times"
    return text


def machine_speed_text(summary: Mapping[str, Any]) -> str | None:
    """A testbed run's machine speed while publishing (backends/testbed/speed.py): the
    gauge's p50s, higher on a slower machine."""
    testbed = summary.get("run", {}).get("testbed")
    speed = testbed.get("machine_speed") if isinstance(testbed, Mapping) else None
    if not isinstance(speed, Mapping):
        return None
    load, verify = speed["load_ns"]["p50"], speed["verify_us"]["p50"]
    return (
        f"{load:.0f} ns per memory load, {verify:.1f} µs per signature check "
        f"(p50 of {speed['readings']} readings on CPU {speed['cpu']}; higher: slower)"
    )
