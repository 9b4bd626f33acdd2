"""`gossiplab crosscheck FILE`: one scenario on the model and a real backend, side by side.

The scenario runs once on the model and once on its partner, real go-libp2p-pubsub nodes:
the testbed (the default, for small scenarios) or simnet (``--against simnet``, at the
model's scale), each into its own results folder; then one table lists the headline
metrics of both with the relative difference (partner - model) / model, and one page
overlays their CDFs (dissemination time, per-receipt latency) and last-delivery-hop
distributions, and sets their delivery and latency side by side per interval of the
publication schedule (``crosscheck_over_time.py``).
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import html
import json
import math
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gossiplab.backends.model import ProgressCallback
from gossiplab.backends.model import unsupported_features as model_unsupported
from gossiplab.backends.simnet.support import unsupported_features as simnet_unsupported
from gossiplab.backends.testbed import crosscheck_hops as hops
from gossiplab.backends.testbed import crosscheck_over_time as over_time
from gossiplab.backends.testbed import crosscheck_runs as several
from gossiplab.backends.testbed import crosscheck_targets as targets
from gossiplab.backends.testbed.crosscheck_figures import draw, measure_each
from gossiplab.backends.testbed.crosscheck_speed import speed_note
from gossiplab.backends.testbed.crosscheck_tables import html_table, markdown_section
from gossiplab.backends.testbed.losses import drop_places
from gossiplab.backends.testbed.partialcheck import METRICS as PARTIAL_METRICS
from gossiplab.backends.testbed.partialcheck import partial_figures
from gossiplab.backends.testbed.partner_run import (
    adopt,
    check_partner_run,
    finished_run,
    prepare_folder,
)
from gossiplab.backends.testbed.support import unsupported_features as testbed_unsupported
from gossiplab.errors import GossiplabError, Problem, ScenarioError
from gossiplab.report.over_time_plot import draw_over_time
from gossiplab.runner import RESULTS_ROOT, run
from gossiplab.scenario import Scenario, load_scenario, parse_scenario

# The real backends the model is checked against: what each refuses, and its name in prose.
PARTNERS = {"testbed": testbed_unsupported, "simnet": simnet_unsupported}
CALLED = {"model": "the model", "testbed": "the testbed", "simnet": "simnet"}
DEFAULT_PARTNER = "testbed"
TABLE_MD = "crosscheck.md"
TABLE_JSON = "crosscheck.json"
REPORT_HTML = "crosscheck.html"
FIGURE = "crosscheck-cdfs.png"


@dataclass(frozen=True)
class Row:
    metric: str
    model: float | None
    partner: float | None  # the real backend's value (the median, over several runs)
    unit: str = ""
    partner_runs: tuple[float | None, ...] = ()  # each real run's value, with several
    model_runs: tuple[float | None, ...] = ()  # each model seed's value, with several

    @property
    def relative(self) -> float | None:
        if self.model is None or self.partner is None:
            return None
        if self.model == 0:
            return 0.0 if self.partner == 0 else None
        return (self.partner - self.model) / abs(self.model)


@dataclass(frozen=True)
class CrosscheckResult:
    out_dir: Path
    rows: list[Row]
    markdown: str
    report: Path


def variant(s: Scenario, backend: str) -> Scenario:
    data = s.source_data or s.model_dump(mode="json", exclude_none=True)
    return parse_scenario({**data, "backend": backend}, s.base_dir)


def check_both(s: Scenario, partner: str = DEFAULT_PARTNER) -> None:
    """Refuse a scenario either backend cannot run, naming the fields, before running any."""
    problems: list[Problem] = []
    for backend, found in (("model", model_unsupported(s)), (partner, PARTNERS[partner](s))):
        on = CALLED[backend]
        problems += [Problem(p.path, f"{p.message} (on {on})", p.hint) for p in found]
    if problems:
        raise ScenarioError(problems)


def _get(summary: dict[str, Any], *path: str) -> float | None:
    here: Any = summary
    for key in path:
        if not isinstance(here, dict) or key not in here:
            return None
        here = here[key]
    return float(here) if isinstance(here, int | float) else None


def _ldh_shares(summary: dict[str, Any]) -> dict[int, float]:
    histogram = summary["last_delivery_hop"].get("histogram") or {}
    total = sum(histogram.values())
    return {int(k): v / total for k, v in histogram.items()} if total else {}


def table_rows(
    model: dict[str, Any], partner: dict[str, Any], hops: frozenset[int] = frozenset()
) -> list[Row]:
    """The headline metrics of the model's and a real run's summaries; `hops`: last
    delivery hops to list even where neither run has them (those of other real runs)."""

    def row(metric: str, *path: str, unit: str = "") -> Row:
        return Row(metric, _get(model, *path), _get(partner, *path), unit)

    rows = [
        row("delivery ratio", "delivery", "ratio"),
        row("messages fully delivered", "delivery", "messages_fully_delivered"),
        row("dissemination p50", "dissemination_ms", "p50", unit="ms"),
        row("dissemination p99", "dissemination_ms", "p99", unit="ms"),
        row("per-receipt latency p50", "receipt_latency_ms", "p50", unit="ms"),
        row("per-receipt latency p99", "receipt_latency_ms", "p99", unit="ms"),
        row("per-receipt latency mean", "receipt_latency_ms", "mean", unit="ms"),
        # How late the publishers' applications ran (a busy host publishes late): not
        # in the latency, which counts from the call to publish, on both backends.
        row("publication lag p50", "publish_timing_error_ms", "p50", unit="ms"),
        row("publication lag p99", "publish_timing_error_ms", "p99", unit="ms"),
        row("last delivery hop mean", "last_delivery_hop", "mean"),
        row("max hop mean", "max_hop", "mean"),
    ]
    model_ldh, partner_ldh = _ldh_shares(model), _ldh_shares(partner)
    for hop in sorted(set(model_ldh) | set(partner_ldh) | hops):
        rows.append(
            Row(f"LDH = {hop} (share of messages)", model_ldh.get(hop, 0.0),
                partner_ldh.get(hop, 0.0))
        )  # fmt: skip
    rows += [
        row("duplicates per node per message", "duplicates", "per_node_per_message", "mean"),
        row("RMR", "duplicates", "rmr"),
        row("payload bytes sent", "traffic", "by_kind", "payload", "bytes_sent", unit="B"),
        row("total bytes sent", "traffic", "total_bytes_sent", unit="B"),
    ]
    for kind in ("ihave", "iwant", "graft", "prune", "idontwant"):
        rows.append(row(f"{kind.upper()} sent (items)", "control", kind))
    if _get(model, "control", "iannounce") or _get(partner, "control", "iannounce"):
        # Lazy push (v2.0). INEED timeouts are not in the table: the fork traces none.
        rows += [
            row("IANNOUNCE sent (items)", "control", "iannounce"),
            row("INEED sent (items)", "control", "ineed"),
        ]
    if _get(partner, "control", "idontwant_transmissions_saved"):
        # Copies IDONTWANT saved: the v2.0 fork's node counts them, go v0.17.0's does not
        # (its runs report none, so the row is left out there).
        rows.append(
            row("transmissions saved by IDONTWANT", "control", "idontwant_transmissions_saved")
        )
    rows.append(row("drops", "drops", "total"))
    if "cpu" in partner:
        # Backends that sample CPU (resources.parquet): the testbed, and the model when it
        # charges CPU; simnet's virtual time has no CPU to compare.
        rows.append(row("node CPU while publishing", "cpu", "cores_all_nodes", unit="cores"))
        # How the nodes' threads met the kernel: Go's sysmon runs, the threads' blocks and
        # their preemptions (the testbed from /proc; the model on time-sliced hosts,
        # sysmon with [cpu] sysmon).
        for name, key in (
            ("sysmon runs per second while publishing", "sysmon_runs_per_s_all_nodes"),
            ("thread blocks per second while publishing", "voluntary_switches_per_s_all_nodes"),
            (
                "thread preemptions per second while publishing",
                "involuntary_switches_per_s_all_nodes",
            ),
        ):
            if _get(model, "cpu", key) is not None and _get(partner, "cpu", key) is not None:
                rows.append(row(name, "cpu", key))
    load = ("run", "testbed", "machine_speed", "load_ns", "p50")
    if _get(partner, *load) is not None:
        # How fast the machine was in each real run (testbed/speed.py): higher is slower;
        # the model has none.
        rows.append(row("machine speed: ns per memory load (p50)", *load, unit="ns"))
    return rows


def partial_rows(model: Path, partner: Path) -> list[Row]:
    """Partial messages side by side: completion times, parts and bytes (partialcheck.py)."""
    ours, theirs = partial_figures(model), partial_figures(partner)
    return [Row(name, ours[name], theirs[name], unit) for name, unit in PARTIAL_METRICS]


def _fmt(value: float | None, unit: str = "") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if unit == "B":
        return f"{value:,.0f}"
    if abs(value) >= 1000 or float(value).is_integer():
        return f"{value:,.0f}"
    return f"{value:.3f}"


def _rel(value: float | None) -> str:
    return "-" if value is None else f"{value:+.1%}"


@dataclass(frozen=True)
class Counts:
    """How many runs each side of the table stands for: the model's seeds, the real runs."""

    seeds: int
    runs: int

    @staticmethod
    def of(rows: list[Row]) -> Counts:
        seeds = max((len(r.model_runs) for r in rows), default=0)
        runs = max((len(r.partner_runs) for r in rows), default=0)
        return Counts(max(seeds, 1), max(runs, 1))

    @property
    def extra_columns(self) -> int:
        return (self.seeds > 1) + (self.runs > 1)


def _header(counts: Counts, partner: str) -> list[str]:
    model = f"model (median of {counts.seeds} seeds)" if counts.seeds > 1 else "model"
    real = f"{partner} (median of {counts.runs} runs)" if counts.runs > 1 else partner
    cells = ["metric", model, real, f"{partner} vs model"]
    if counts.seeds > 1:
        cells.append("model seeds (min - max)")
    if counts.runs > 1:
        cells.append(f"{partner} runs (min - max)")
    return cells


def _range(values: tuple[float | None, ...], unit: str) -> str:
    known = [v for v in values if v is not None]
    if not known:
        return "-"
    return f"{_fmt(min(known), unit)} - {_fmt(max(known), unit)}"


def _cells(r: Row, counts: Counts) -> list[str]:
    name = f"{r.metric} ({r.unit})" if r.unit else r.metric
    cells = [name, _fmt(r.model, r.unit), _fmt(r.partner, r.unit), _rel(r.relative)]
    if counts.seeds > 1:
        cells.append(_range(r.model_runs, r.unit))
    if counts.runs > 1:
        cells.append(_range(r.partner_runs, r.unit))
    return cells


def markdown(rows: list[Row], command: str, partner: str = DEFAULT_PARTNER) -> str:
    counts = Counts.of(rows)
    lines = [
        f"`{command}`",
        "",
        "| " + " | ".join(_header(counts, partner)) + " |",
        "|---|---:|---:|---:|" + "---:|" * counts.extra_columns,
    ]
    lines += ["| " + " | ".join(_cells(r, counts)) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def _testbed_facts(testbed: dict[str, Any]) -> list[tuple[str, str]]:
    delay = testbed.get("delay_stage") or {}
    return [
        ("testbed stack", json.dumps(testbed.get("stack", {}))),
        ("readiness", json.dumps(testbed.get("readiness", {}))),
        ("delay stage lateness (ms)", json.dumps(delay.get("lateness_ms", {}))),
        ("node CPU", json.dumps(testbed.get("nodes", {}))),
        ("packet losses", _losses_fact(testbed.get("losses"))),
    ]


def _losses_fact(losses: dict[str, Any] | None) -> str:
    """TCP's retransmissions and every place that dropped packets (losses.py)."""
    if not losses:
        return "not recorded"
    tcp = losses["tcp"]
    places = drop_places(losses)
    drops = ", ".join(f"{k}: {v}" for k, v in places.items()) or "no drop counter moved"
    return (
        f"TCP retransmitted {tcp.get('RetransSegs', 0)} segments "
        f"({tcp.get('TCPTimeouts', 0)} timeouts, {tcp.get('TCPLossProbes', 0)} tail loss "
        f"probes, {tcp.get('TCPFastRetrans', 0)} fast retransmits); {drops}"
    )


def _simnet_facts(simnet: dict[str, Any]) -> list[tuple[str, str]]:
    return [
        ("wall time (s)", _fmt(simnet.get("wall_s"))),
        ("virtual time (s)", _fmt((simnet.get("virtual_ns") or 0) / 1e9)),
        ("virtual s per wall s", _fmt(simnet.get("speed_virtual_per_wall"))),
        ("peak memory (GiB)", _fmt((simnet.get("peak_rss_bytes") or 0) / 2**30)),
        ("connected after (virtual ms)", _fmt((simnet.get("connected_virtual_ns") or 0) / 1e6)),
    ]


def _embedded(figure: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(figure.read_bytes()).decode("ascii")


def _page(
    rows: list[Row],
    command: str,
    figures: tuple[Path, Path],
    tables: tuple[str, str, str],
    runs: dict[str, dict[str, Any]],
    partner: str,
) -> str:
    cdfs, over_time_figure = (_embedded(f) for f in figures)
    targets_table, over_time_table, hops_table = tables
    counts = Counts.of(rows)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in _cells(r, counts)) + "</tr>"
        for r in rows
    )
    head = "".join(f"<th>{html.escape(c)}</th>" for c in _header(counts, partner))
    info = runs[partner].get(partner, {})
    facts = _simnet_facts(info) if partner == "simnet" else _testbed_facts(info)
    facts += [
        ("warnings", "; ".join(info.get("warnings", [])) or "none"),
        ("notes", "; ".join(info.get("notes", [])) or "none"),
    ]
    runs_on = {
        "testbed": "the testbed runs the real nodes in network namespaces, in real time",
        "simnet": "simnet runs the real nodes over simulated links, in virtual time",
    }[partner]
    fact_rows = "".join(
        f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in facts
    )
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>crosscheck</title>
<style>body{{font-family:sans-serif;margin:2em;max-width:1200px}}
table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:4px 8px;text-align:right}}
td:first-child,th{{text-align:left}}</style></head><body>
<h1>crosscheck: model vs {partner}</h1><p><code>{html.escape(command)}</code></p>
<p>Relative difference = ({partner} - model) / model. The model is go-libp2p-pubsub's
behaviour in a discrete-event simulation; {runs_on}.</p>
<table><tr>{head}</tr>
{body}</table>
{targets_table}
<h2>Distributions</h2><img alt="overlaid CDFs" src="{cdfs}" width="100%">
<h2>By time of publication</h2><p>Per interval of the publication schedule; a receipt
after the end of the run is not counted, so the last intervals' delivery and latency leave
out what was still under way.</p>
<img alt="latency and delivery by time of publication" src="{over_time_figure}" width="100%">
{over_time_table}
<h2>The hop into each node</h2><p>From the sender's first receipt (or the publication)
to the node's own: the nodes slowest in either backend, where copies wait past capacity.</p>
{hops_table}
<h2>The {partner} run</h2><table>{fact_rows}</table>
<p>Each backend's full report: <a href="model/report.html">model</a>,
<a href="{partner}/report.html">{partner}</a>.</p></body></html>
"""


def _model_tables(
    out: Path,
    modelled: list[str],
    first_real: str,
    summaries: dict[str, dict[str, Any]],
    hops_seen: frozenset[int],
    partial: bool,
) -> list[list[Row]]:
    """Each model seed's rows against the first real run: its values by metric, with the
    last delivery hops of every run listed (a hop a seed never saw is a share of 0)."""
    tables = []
    for name in modelled:
        rows = table_rows(summaries[name], summaries[first_real], hops_seen)
        if partial:
            rows += partial_rows(out / name, out / first_real)
        tables.append(rows)
    return tables


def _real_runs(runs: int | None, partner_runs: Sequence[Path]) -> int:
    """How many real runs the crosscheck compares: `runs`, or one per finished run given."""
    count = max(1, len(partner_runs)) if runs is None else runs
    if count < 1:
        raise GossiplabError(f"--runs {count}: run the real backend at least once (--runs 1)")
    if count < len(partner_runs):
        raise GossiplabError(
            f"--runs {count} is fewer than the {len(partner_runs)} --partner-run folders "
            f"given: pass --runs {len(partner_runs)} or more, or fewer folders"
        )
    return count


def _command(
    scenario: str | Path, against: str, counts: Counts, partner_runs: Sequence[Path]
) -> str:
    option = "" if against == DEFAULT_PARTNER else f" --against {against}"
    if counts.runs > max(1, len(partner_runs)):
        option += f" --runs {counts.runs}"
    if counts.seeds > 1:
        option += f" --model-seeds {counts.seeds}"
    option += "".join(f" --partner-run {folder}" for folder in partner_runs)
    return f"gossiplab crosscheck{option} {scenario}"


def run_crosscheck(
    scenario: str | Path,
    out_dir: str | Path | None = None,
    *,
    force: bool = False,
    against: str = DEFAULT_PARTNER,
    bar: Callable[[str], AbstractContextManager[ProgressCallback]] | None = None,
    partner_runs: Sequence[Path] = (),
    runs: int | None = None,
    resume: bool = False,
    model_seeds: int = 1,
    cpu_costs: Path | None = None,
) -> CrosscheckResult:
    """Run ``scenario`` on the model (with ``model_seeds`` protocol seeds, on one graph
    and schedule) and ``runs`` times on ``against`` (default: once, or once per finished
    run given); ``bar(backend)``, if given, is a progress bar for each run (the CLI's).
    Each of ``partner_runs`` (finished runs of ``against`` on the same scenario) stands
    for one of the real runs; the rest are run. With ``resume`` the real runs an earlier,
    interrupted crosscheck finished in ``out_dir`` are kept. ``cpu_costs`` (a costs file
    bench/cpu_refit.py wrote) sets the model's CPU costs over the scenario's."""
    s = load_scenario(scenario, cpu_costs)
    check_both(s, against)
    count = _real_runs(runs, partner_runs)
    for folder in partner_runs:
        check_partner_run(Path(folder), variant(s, against), against)
    if out_dir is None:
        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
        out_dir = RESULTS_ROOT / f"{s.name}-crosscheck-{stamp}"
    out = Path(out_dir)
    seeds = several.seeded(variant(s, "model"), model_seeds)
    prepare_folder(out, force, resume, partner_runs)
    modelled = several.folder_names("model", len(seeds))
    real = several.folder_names(against, count)

    def progress_of(name: str) -> AbstractContextManager[ProgressCallback | None]:
        return bar(name) if bar is not None else contextlib.nullcontext()

    summaries = {}
    for name, seeded in zip(modelled, seeds, strict=True):
        with progress_of(name) as progress:
            summaries[name] = run(seeded, out / name, progress=progress).summary
    for k, backend in enumerate(real, start=1):
        kept = finished_run(out / backend, variant(s, against), against) if resume else None
        if kept is not None:
            summaries[backend] = kept
        elif k <= len(partner_runs):
            summaries[backend] = adopt(Path(partner_runs[k - 1]), out / backend)
        else:
            with progress_of(backend) as progress:
                run_of = variant(s, against)
                summaries[backend] = run(run_of, out / backend, progress=progress).summary
    model_summaries = [summaries[m] for m in modelled]
    partner_summaries = [summaries[b] for b in real]
    hops_seen = several.last_delivery_hops([*model_summaries, *partner_summaries])
    rows = several.merged(
        [table_rows(model_summaries[0], summary, hops_seen) for summary in partner_summaries]
    )
    partial = s.workload.partial is not None and s.workload.partial.enabled
    if partial:
        rows += several.merged([partial_rows(out / "model", out / b) for b in real])
    if len(modelled) > 1:
        tables = _model_tables(out, modelled, real[0], summaries, hops_seen, partial)
        rows = several.with_model_runs(rows, tables)
    counts = Counts.of(rows)
    command = _command(scenario, against, counts, partner_runs)
    backends = ("model", against)
    every_run = measure_each({b: out / b for b in [*modelled, *real]})
    measured = {b: every_run[b] for b in backends}
    by_time_frames = over_time.by_backend(measured)
    by_time = over_time.side_by_side(by_time_frames)
    hop_in = hops.side_by_side(measured)
    values = {r.metric: (r.model, r.partner) for r in rows}
    each_run = {r.metric: r.partner_runs for r in rows}
    verdicts = targets.verdicts(values, model_summaries, partner_summaries, each_run)
    node_cpus = len(s.testbed.node_cpus) if s.testbed.node_cpus else None
    speed = speed_note(s.cpu.costs == "measured", node_cpus, summaries["model"], summaries[against])
    first_only = (
        f"\nBy time of publication and the hop into each node: the model's first seed "
        f"(`model/`) and the first {against} run (`{against}/`).\n"
        if count > 1 or len(modelled) > 1
        else ""
    )
    run_headers, run_lines = several.runs_table(rows, real)
    by_run = markdown_section(several.RUNS_INTRO, run_headers, run_lines) if run_lines else ""
    text = (
        markdown(rows, command, against)
        + targets.markdown(verdicts, against)
        + speed
        + by_run
        + first_only
        + over_time.markdown(by_time, list(backends))
        + hops.markdown(hop_in, list(backends))
    )
    (out / TABLE_MD).write_text(text, encoding="utf-8")
    (out / targets.FILE).write_text(
        json.dumps(targets.as_json(verdicts), indent=1), encoding="utf-8"
    )
    (out / TABLE_JSON).write_text(
        json.dumps(
            [
                {
                    "metric": r.metric,
                    "unit": r.unit,
                    "model": r.model,
                    against: r.partner,
                    "relative": r.relative,
                    f"{against}_runs": list(r.partner_runs),
                    "model_runs": list(r.model_runs),
                }
                for r in rows
            ],
            indent=1,
        ),
        encoding="utf-8",
    )
    figures = (
        draw(every_run, out / FIGURE),
        draw_over_time(by_time_frames, out / over_time.FIGURE),
    )
    runs = {b: summaries[b]["run"] for b in backends}
    speed_paragraph = f"<p>{html.escape(speed.strip())}</p>" if speed else ""
    by_run_html = (
        f"<p>{html.escape(several.RUNS_INTRO)}</p>" + html_table(run_headers, run_lines)
        if run_lines
        else ""
    )
    tables = (
        targets.html_table(verdicts, against)
        + speed_paragraph
        + by_run_html
        + (f"<p>{html.escape(first_only.strip())}</p>" if first_only else ""),
        over_time.html_table(by_time, list(backends)),
        hops.html_table(hop_in, list(backends)),
    )
    page = _page(rows, command, figures, tables, runs, against)
    (out / REPORT_HTML).write_text(page, encoding="utf-8")
    return CrosscheckResult(out, rows, text, out / REPORT_HTML)
