"""report.html: one static page per results folder that opens offline.

The page is the headline table, then the figures grouped by question (how fast, through
how many hops, at what cost, what was dropped, how publishing went, and for runs with a
resources table CPU and memory), each with a caption on how to read it, then the traffic
and drops tables and the resolved scenario. Figures are also kept as PNGs under plots/.
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gossiplab.analysis.breakdown import breakdown_tables
from gossiplab.analysis.cpu_use import cpu_text, machine_speed_text
from gossiplab.analysis.headline import HEADLINE, NO_VALUE, format_value
from gossiplab.analysis.metrics import TRAFFIC_COUNTERS, Measured, compute_summary, measure
from gossiplab.analysis.results import (
    PLOTS_DIR,
    REPORT_FILE,
    SCENARIO_FILE,
    load_results,
    replace_file,
    write_summary,
)
from gossiplab.analysis.tables import RunTables
from gossiplab.report.cpu_line import cpu_line
from gossiplab.report.measured import publisher_duplicates, traffic_measured
from gossiplab.report.pages import Block, Code, Figure, Section, Table, Text, render_page
from gossiplab.report.partial_section import partial_blocks
from gossiplab.report.plots import DROPS, PARTIAL, Plot, render_all

NEVER = "never"


def build_report(results_dir: Path) -> Path:
    """Recompute summary.json's metrics (keeping its run info) and report.html from the tables."""
    results_dir = Path(results_dir)
    tables, run, _ = load_results(results_dir)
    measured = measure(tables, run)
    summary = compute_summary(tables, run, measured)
    write_summary(results_dir, summary)
    return render_report(results_dir, tables, summary, measured)


def render_report(
    results_dir: Path,
    tables: RunTables,
    summary: Mapping[str, Any],
    measured: Measured | None = None,
) -> Path:
    """Draw the figures into plots/ and write report.html; return the report's path.

    ``measured`` is ``measure(tables, summary["run"])`` when the caller already has it.
    """
    results_dir = Path(results_dir)
    plots = render_all(results_dir / PLOTS_DIR, tables, summary, measured)
    scenario_file = results_dir / SCENARIO_FILE
    scenario = scenario_file.read_text(encoding="utf-8") if scenario_file.is_file() else ""
    name = summary["run"].get("scenario_name", results_dir.name)
    html = render_page(
        f"gossiplab — {name}",
        _sections(summary, plots, scenario),
        header=_header(summary, scenario, results_dir),
        intro=_description(scenario),
    )
    path = results_dir / REPORT_FILE
    replace_file(path, html)
    return path


def _sections(summary: Mapping[str, Any], plots: list[Plot], scenario: str) -> list[Section]:
    warnings = [Text(f"Warning: {w}") for w in summary.get("warnings") or []]
    sections = [
        Section(
            "Headline",
            [
                *warnings,
                Text(
                    "Message metrics cover the messages published after the warm-up; traffic "
                    "and drops cover the whole run. Percentiles are nearest-rank; n/a means "
                    "there was nothing to measure (for example no fully delivered message)."
                ),
                Table(["metric", "value"], _headline_rows(summary)),
                *publisher_duplicates(summary),
                *_reach_over_all(summary),
            ],
        )
    ]
    # Per node class and per region, when the run has them.
    sections += [
        Section(t.title, [Text(t.caption), Table(t.header, t.rows)])
        for t in breakdown_tables(summary)
    ]
    by_section: dict[str, list[Plot]] = {}
    for plot in plots:
        by_section.setdefault(plot.section, []).append(plot)
    for title, members in by_section.items():
        blocks: list[Block] = [Figure(p.title, p.caption, p.path, p.no_data) for p in members]
        if title == PARTIAL:
            blocks = partial_blocks(summary, scenario) + blocks
        if title == DROPS and summary["drops"]["by_kind"]:
            blocks.append(_drops_table(summary))
        sections.append(Section(title, blocks))
    sections += _testbed_sections(summary) + _simnet_sections(summary)
    sections += traffic_measured(summary)
    sections.append(
        Section(
            "Traffic by kind",
            [
                Table(
                    ["kind", "items sent", "bytes sent", "items received", "bytes received"],
                    _traffic_rows(summary),
                )
            ],
        )
    )
    sections.append(
        Section(
            "Scenario (resolved)",
            [
                Text("Every default written out: re-run with `gossiplab run scenario.toml`."),
                Code(scenario),
            ],
        )
    )
    return sections


def _reach_over_all(summary: Mapping[str, Any]) -> list[Block]:
    """Time to reach a share of the nodes over every measured message, losses included."""
    reach = summary.get("time_to_reach_all_ms")
    if not isinstance(reach, Mapping) or not reach:
        return []
    keys = [key for key in next(iter(reach.values())) if key.startswith("p")] + ["max"]
    rows = []
    for share, stats in reach.items():
        lost = stats["reached"] < stats["count"]
        cells = [
            NEVER if stats[key] is None and lost else format_value(stats[key], "ms") for key in keys
        ]
        rows.append([f"{share}%", f"{stats['reached']:,} of {stats['count']:,}", *cells])
    text = (
        "Time from publish until a share of the expected receivers had the message, over "
        "every measured message: a message that never reached that share counts as later "
        'than all others, so a percentile that falls on one reads "never". The dissemination '
        "percentiles above cover only the messages that reached every node."
    )
    header = ["share of nodes", "messages reaching it", *(f"{k} (ms)" for k in keys)]
    return [Text(text), Table(header, rows)]


def _testbed_sections(summary: Mapping[str, Any]) -> list[Section]:
    """Testbed runs: the host's warnings, and where the nodes' CPU went (pprof)."""
    testbed = summary.get("run", {}).get("testbed")
    if not isinstance(testbed, Mapping):
        return []
    sections = []
    warnings = testbed.get("warnings") or []
    if warnings:
        text = "A saturated host measures the host, not the protocol: read the numbers with these."
        rows = [[str(w)] for w in warnings]
        sections.append(Section("Testbed warnings", [Text(text), Table(["warning"], rows)]))
    profile = testbed.get("profile")
    if isinstance(profile, Mapping) and profile.get("top"):
        caption = (
            f"CPU profiles of {profile['profiles']} nodes over the measured interval "
            f"({profile['cpu_s']:.2f} s of CPU), top functions by flat share (time in the "
            "function itself) with their cumulative share (including what they call). "
            "The raw profiles are in testbed/ for `go tool pprof`."
        )
        top = [
            [row["function"], f"{row['flat_share']:.1%}", f"{row['cum_share']:.1%}"]
            for row in profile["top"]
        ]
        layers = [[name, f"{share:.1%}"] for name, share in profile.get("layers", {}).items()]
        sections.append(
            Section(
                "Where the nodes' CPU went",
                [
                    Text(caption),
                    Table(["function", "flat", "cumulative"], top),
                    Text("By layer (flat share): signing and hashing, muxer, router..."),
                    Table(["layer", "flat"], layers),
                ],
            )
        )
    return sections


def _simnet_sections(summary: Mapping[str, Any]) -> list[Section]:
    """Simnet runs: virtual against wall time, memory, and what ran differently."""
    simnet = summary.get("run", {}).get("simnet")
    if not isinstance(simnet, Mapping):
        return []
    text = (
        "Real go-libp2p-pubsub hosts in one process, in virtual time: times include the "
        "links, QUIC and its queues, not CPU; runs agree statistically, not row by row."
    )
    rows = [
        ["virtual time", f"{(simnet.get('virtual_ns') or 0) / 1e9:,.1f} s"],
        ["wall time of the runner", f"{simnet.get('wall_s') or 0:,.1f} s"],
        ["virtual seconds per wall second", f"{simnet.get('speed_virtual_per_wall') or 0:,.2f}"],
        ["peak memory", f"{(simnet.get('peak_rss_bytes') or 0) / 2**30:,.2f} GiB"],
        ["all connections up after", f"{(simnet.get('connected_virtual_ns') or 0) / 1e6:,.0f} ms"],
    ]
    rows += [["warning", str(w)] for w in simnet.get("warnings") or []]
    rows += [["note", str(n)] for n in simnet.get("notes") or []]
    return [Section("The simnet run", [Text(text), Table(["", ""], rows)])]


def _description(scenario: str) -> str:
    # The description is the one free-text field; show it as the page's introduction.
    try:
        data = tomllib.loads(scenario)
    except tomllib.TOMLDecodeError:
        return ""
    description = data.get("description", "")
    return description.strip() if isinstance(description, str) else ""


def _header(summary: Mapping[str, Any], scenario: str, folder: Path) -> list[tuple[str, str]]:
    run, messages = summary["run"], summary["messages"]
    published = f"{messages['published']:,}"
    if messages["excluded_in_warmup"]:
        published += f" ({messages['excluded_in_warmup']:,} in warm-up, excluded)"
    # The model charges only the CPU the scenario sets: say which, per hop.
    line = cpu_line(scenario, folder) if run.get("backend") == "model" else None
    cpu = [("CPU per hop", line)] if line else []
    used = cpu_text(summary)
    if used:
        cpu.append(("Node CPU while publishing", used))
    speed = machine_speed_text(summary)
    if speed:
        cpu.append(("Machine speed while publishing", speed))
    return [
        ("Scenario", str(run.get("scenario_name", NO_VALUE))),
        ("Backend", str(run.get("backend", NO_VALUE))),
        ("Seed", str(run.get("seed", NO_VALUE))),
        ("Nodes", _number(run.get("nodes"))),
        ("Messages", published),
        *cpu,
        ("Wall time", _number(run.get("wall_time_s"), 1, unit=" s")),
        ("Scenario hash", str(run.get("scenario_hash", NO_VALUE))),
    ]


def _headline_rows(summary: Mapping[str, Any]) -> list[list[str]]:
    return [[metric.label, metric.text(summary)] for metric in HEADLINE]


def _traffic_rows(summary: Mapping[str, Any]) -> list[list[str]]:
    return [
        [kind, *(_number(counters[column]) for column in TRAFFIC_COUNTERS)]
        for kind, counters in summary["traffic"]["by_kind"].items()
    ]


def _drops_table(summary: Mapping[str, Any]) -> Table:
    rows = [
        [str(kind), str(reason), _number(count)]
        for kind, reasons in summary["drops"]["by_kind"].items()
        for reason, count in reasons.items()
    ]
    return Table(["kind", "reason", "count"], rows, numeric_from=2)


def _number(value: float | None, decimals: int = 0, unit: str = "") -> str:
    if value is None or not math.isfinite(value):
        return NO_VALUE
    if isinstance(value, int):
        return f"{value:,}{unit}"
    return f"{value:,.{decimals}f}{unit}"
