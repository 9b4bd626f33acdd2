"""report.html: one static page per results folder that opens offline.

Figures are embedded as base64 data URIs (and kept as PNGs under plots/), styles are
inline and there is no script, so the page can be mailed or archived on its own.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jinja2

from gossiplab.metrics import TRAFFIC_COUNTERS, compute_summary
from gossiplab.plots import Plot, byte_unit, render_all
from gossiplab.results import (
    PLOTS_DIR,
    REPORT_FILE,
    SCENARIO_FILE,
    load_results,
    replace_file,
    write_summary,
)
from gossiplab.tables import RunTables

NO_VALUE = "n/a"


def build_report(results_dir: Path) -> Path:
    """Recompute summary.json's metrics (keeping its run info) and report.html from the tables."""
    results_dir = Path(results_dir)
    tables, run, _ = load_results(results_dir)
    summary = compute_summary(tables, run)
    write_summary(results_dir, summary)
    return render_report(results_dir, tables, summary)


def render_report(results_dir: Path, tables: RunTables, summary: Mapping[str, Any]) -> Path:
    """Draw the figures into plots/ and write report.html; return the report's path."""
    results_dir = Path(results_dir)
    plots = render_all(results_dir / PLOTS_DIR, tables, summary)
    scenario_file = results_dir / SCENARIO_FILE
    scenario = scenario_file.read_text(encoding="utf-8") if scenario_file.is_file() else ""
    html = _TEMPLATE.render(
        title=f"gossiplab — {summary['run'].get('scenario_name', results_dir.name)}",
        header=_header(summary),
        headline=_headline(summary),
        figures=[_embedded(plot) for plot in plots],
        traffic=_traffic_rows(summary),
        drops=_drop_rows(summary),
        scenario=scenario,
    )
    path = results_dir / REPORT_FILE
    replace_file(path, html)
    return path


def _embedded(plot: Plot) -> dict[str, str | None]:
    data_uri = None
    if plot.path is not None:
        encoded = base64.b64encode(plot.path.read_bytes()).decode("ascii")
        data_uri = f"data:image/png;base64,{encoded}"
    return {"title": plot.title, "data_uri": data_uri}


def _header(summary: Mapping[str, Any]) -> list[tuple[str, str]]:
    run, messages = summary["run"], summary["messages"]
    published = f"{messages['published']:,}"
    if messages["excluded_in_warmup"]:
        published += f" ({messages['excluded_in_warmup']:,} in warm-up, excluded)"
    return [
        ("Scenario", str(run.get("scenario_name", NO_VALUE))),
        ("Backend", str(run.get("backend", NO_VALUE))),
        ("Seed", str(run.get("seed", NO_VALUE))),
        ("Nodes", _number(run.get("nodes"))),
        ("Messages", published),
        ("Wall time", _number(run.get("wall_time_s"), 1, unit=" s")),
        ("Scenario hash", str(run.get("scenario_hash", NO_VALUE))),
    ]


def _headline(summary: Mapping[str, Any]) -> list[tuple[str, str]]:
    delivery, dissemination = summary["delivery"], summary["dissemination_ms"]
    traffic = summary["traffic"]
    rows = [
        ("Delivery ratio", _number(delivery["ratio"], 4)),
        (
            "Messages fully delivered",
            f"{delivery['messages_fully_delivered']:,} of {summary['messages']['measured']:,}",
        ),
    ]
    rows += [
        (f"Dissemination time {stat} (ms)", _number(dissemination[stat], 2))
        for stat in ("p50", "p90", "p99", "max", "mean")
    ]
    rows += [
        ("Mean last delivery hop", _number(summary["last_delivery_hop"]["mean"], 2)),
        (
            "Duplicates per node per message (mean)",
            _number(summary["duplicates"]["per_node_per_message"]["mean"], 2),
        ),
        ("RMR", _number(summary["duplicates"]["rmr"], 3)),
        ("Total traffic (bytes sent)", _bytes(traffic["total_bytes_sent"])),
        ("Payload amplification", _number(traffic["amplification"], 3)),
    ]
    return rows


def _traffic_rows(summary: Mapping[str, Any]) -> list[tuple[str, list[str]]]:
    return [
        (kind, [_number(counters[column]) for column in TRAFFIC_COUNTERS])
        for kind, counters in summary["traffic"]["by_kind"].items()
    ]


def _drop_rows(summary: Mapping[str, Any]) -> list[list[str]]:
    return [
        [str(kind), str(reason), _number(count)]
        for kind, reasons in summary["drops"]["by_kind"].items()
        for reason, count in reasons.items()
    ]


def _number(value: float | None, decimals: int = 0, unit: str = "") -> str:
    if value is None or not math.isfinite(value):
        return NO_VALUE
    if isinstance(value, int):
        return f"{value:,}{unit}"
    return f"{value:,.{decimals}f}{unit}"


def _bytes(count: int) -> str:
    unit, size = byte_unit(count)
    return f"{count:,} B" if size == 1 else f"{count / size:,.2f} {unit} ({count:,} B)"


_TEMPLATE = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined).from_string(
    """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{ title }}</title>
<style>
body { font-family: system-ui, sans-serif; color: #222; max-width: 60rem; margin: 2rem auto;
       padding: 0 1rem; line-height: 1.4; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.2rem; margin-top: 2rem; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 0.5rem 0; }
th, td { padding: 0.2rem 0.8rem; border-bottom: 1px solid #eee; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
figure { margin: 1.5rem 0; } figure img { max-width: 100%; }
figcaption { font-weight: 600; margin-bottom: 0.3rem; }
.nodata { color: #888; font-style: italic; }
pre { background: #f6f6f6; padding: 0.8rem; overflow-x: auto; font-size: 0.85rem; }
</style>
</head>
<body>
<h1>{{ title }}</h1>
<table class="header">
{%- for label, value in header %}
<tr><th>{{ label }}</th><td>{{ value }}</td></tr>
{%- endfor %}
</table>

<h2>Headline</h2>
<table class="headline">
{%- for label, value in headline %}
<tr><th>{{ label }}</th><td class="num">{{ value }}</td></tr>
{%- endfor %}
</table>

<h2>Figures</h2>
{%- for figure in figures %}
<figure>
<figcaption>{{ figure.title }}</figcaption>
{%- if figure.data_uri %}
<img src="{{ figure.data_uri }}" alt="{{ figure.title }}">
{%- else %}
<p class="nodata">no data</p>
{%- endif %}
</figure>
{%- endfor %}

<h2>Traffic by kind</h2>
<table class="traffic">
<tr><th>kind</th><th>msgs sent</th><th>bytes sent</th>
<th>msgs received</th><th>bytes received</th></tr>
{%- for kind, counts in traffic %}
<tr><td>{{ kind }}</td>{% for count in counts %}<td class="num">{{ count }}</td>{% endfor %}</tr>
{%- endfor %}
</table>

<h2>Drops</h2>
{%- if drops %}
<table class="drops">
<tr><th>kind</th><th>reason</th><th>count</th></tr>
{%- for kind, reason, count in drops %}
<tr><td>{{ kind }}</td><td>{{ reason }}</td><td class="num">{{ count }}</td></tr>
{%- endfor %}
</table>
{%- else %}
<p class="nodata">no drops</p>
{%- endif %}

<h2>Scenario (resolved)</h2>
<pre>{{ scenario }}</pre>
</body>
</html>
"""
)
