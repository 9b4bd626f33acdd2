"""The `gossiplab` command line.

Every user mistake surfaces as a GossiplabError, printed as a short message with exit
code 2; a traceback means a bug in gossiplab, and asks to be reported as one.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from gossiplab.cli import analysis as cli_analysis
from gossiplab.cli import testbed as cli_testbed
from gossiplab.cli.common import err, guarded, out
from gossiplab.errors import GossiplabError

if TYPE_CHECKING:
    from gossiplab.scenario import Scenario

app = typer.Typer(
    name="gossiplab",
    help="Measure how gossipsub disseminates messages: one scenario file, one command, a report.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _ms(value: Any) -> str:
    return "-" if value is None else f"{value:,.1f} ms"


def _headline_table(summary: dict[str, Any]) -> Table:
    run = summary["run"]
    delivery = summary["delivery"]
    dissemination = summary["dissemination_ms"]
    ldh = summary["last_delivery_hop"]
    traffic = summary["traffic"]
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column()
    ratio = delivery["ratio"]
    table.add_row("delivery ratio", "-" if ratio is None else f"{ratio:.6f}")
    table.add_row(
        "messages fully delivered",
        f"{delivery['messages_fully_delivered']:,} of {summary['messages']['measured']:,}",
    )
    table.add_row(
        "dissemination p50 / p99 / max",
        " / ".join(_ms(dissemination.get(k)) for k in ("p50", "p99", "max")),
    )
    mean_ldh = ldh.get("mean")
    table.add_row("last delivery hop mean / max", f"{mean_ldh or 0:.2f} / {ldh.get('max') or 0}")
    rmr = summary["duplicates"]["rmr"]
    table.add_row("RMR (duplicates)", "-" if rmr is None else f"{rmr:.3f}")
    table.add_row("bytes sent (all nodes)", f"{traffic['total_bytes_sent'] / 1e6:,.1f} MB")
    from gossiplab.analysis.cpu_use import cpu_text, machine_speed_text

    cpu = cpu_text(summary)
    if cpu:
        table.add_row("node CPU while publishing", cpu)
    speed = machine_speed_text(summary)
    if speed:
        table.add_row("machine speed", speed)
    table.add_row(
        "simulated / wall",
        f"{run['end_ns'] / 1e9:,.1f} s / {run['wall_time_s']:,.2f} s ({run['events']:,} events)",
    )
    return table


@app.command()
def run(
    scenario: Annotated[Path, typer.Argument(help="Scenario file (TOML).")],
    out_dir: Annotated[
        Path | None,
        typer.Option("-o", "--out", help="Results folder (default results/<name>-<time>)."),
    ] = None,
    force: Annotated[bool, typer.Option(help="Replace an existing results folder.")] = False,
    quiet: Annotated[bool, typer.Option("-q", "--quiet", help="No progress bar.")] = False,
    profile: Annotated[
        bool,
        typer.Option(help="Testbed: CPU-profile every node (same as \\[testbed] profile = true)."),
    ] = False,
) -> None:
    """Run a scenario and write its results folder and report."""
    from gossiplab.progress import simulated_time_bar
    from gossiplab.runner import run as run_scenario
    from gossiplab.scenario import load_scenario

    def action() -> None:
        s = load_scenario(scenario)
        if profile:
            if s.backend != "testbed":
                raise GossiplabError('--profile profiles real nodes: it needs backend = "testbed"')
            s = s.model_copy(update={"testbed": s.testbed.model_copy(update={"profile": True})})
        if quiet:
            result = run_scenario(s, out_dir, force=force)
        else:
            with simulated_time_bar(s.name, err) as bar:
                result = run_scenario(s, out_dir, force=force, progress=bar)
        out.print(_headline_table(result.summary))
        for warning in result.summary.get("warnings") or []:
            out.print(f"[yellow]warning:[/] {escape(warning)}", soft_wrap=True)
        out.print(f"results: {result.out_dir}")
        out.print(f"report:  {result.report}")

    guarded(action)


@app.command()
def validate(
    scenario: Annotated[Path, typer.Argument(help="Scenario or campaign file (TOML).")],
) -> None:
    """Check a scenario (print it fully resolved) or a campaign (list its cases), or print
    every problem with its field."""
    from gossiplab.multirun.campaign import check_campaign, is_campaign_file, plan_campaign
    from gossiplab.scenario import load_scenario, scenario_to_toml

    def action() -> None:
        if is_campaign_file(scenario):
            plan = plan_campaign(scenario)
            check_campaign(plan, _check_runnable)
            out.print(f"campaign {plan.name}: {len(plan.points)} case(s), all valid")
            for point in plan.points:
                changes = ", ".join(f"{k} = {v!r}" for k, v in point.assignments.items())
                out.print(
                    f"  {point.labels['case']}: {changes or 'base'}", markup=False, soft_wrap=True
                )
            return
        s = load_scenario(scenario)
        _check_runnable(s)
        out.print(scenario_to_toml(s), end="", highlight=False, markup=False)

    guarded(action)


def _check_runnable(s: Scenario) -> None:
    """What running ``s`` would refuse: a disconnected graph, a feature its backend lacks."""
    from gossiplab.backends import model as model_backend
    from gossiplab.backends.simnet import support as simnet_support
    from gossiplab.backends.testbed import support
    from gossiplab.topology import build_topology

    build_topology(s)
    checks = {"testbed": support.check_supported, "simnet": simnet_support.check_supported}
    checks.get(s.backend, model_backend.check_supported)(s)


@app.command()
def report(
    results_dir: Annotated[Path, typer.Argument(help="A results folder written by `run`.")],
) -> None:
    """Rebuild summary.json and report.html from a results folder's tables."""
    from gossiplab.report.run_report import build_report

    def action() -> None:
        path = build_report(results_dir)
        out.print(f"report: {path}")

    guarded(action)


cli_analysis.register(app)
cli_testbed.register(app)


def main() -> None:
    app(prog_name="gossiplab")


if __name__ == "__main__":
    sys.exit(main())
