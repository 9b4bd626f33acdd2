"""CLI commands for the testbed features (registered on the main app by cli/main.py)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from gossiplab.cli.common import err, guarded, out
from gossiplab.errors import GossiplabError


def clean(
    all_runs: Annotated[
        bool,
        typer.Option("--all", help="Also remove the namespaces of testbed runs still alive."),
    ] = False,
) -> None:
    """Remove what killed testbed runs left behind: namespaces, processes, work folders."""
    from gossiplab.backends.testbed.commands import require_root
    from gossiplab.backends.testbed.netns import clean_stale

    def action() -> None:
        require_root()
        cleaned = clean_stale(all_runs=all_runs)
        if not cleaned.namespaces and not cleaned.work_dirs:
            out.print("nothing to clean")
            return
        for name in cleaned.namespaces:
            out.print(f"removed namespace {name}")
        for folder in cleaned.work_dirs:
            out.print(f"removed {folder}")

    guarded(action)


def crosscheck(
    scenario: Annotated[Path, typer.Argument(help="Scenario file (TOML); backend is ignored.")],
    out_dir: Annotated[
        Path | None,
        typer.Option("-o", "--out", help="Folder (default results/<name>-crosscheck-<time>)."),
    ] = None,
    force: Annotated[bool, typer.Option(help="Replace an existing folder.")] = False,
    resume: Annotated[
        bool,
        typer.Option(
            help="Keep the real runs an interrupted crosscheck finished in the folder and "
            "run only the rest (the model runs again)."
        ),
    ] = False,
    against: Annotated[
        str,
        typer.Option(
            help="The real backend: testbed (tens of nodes, needs root) or simnet (at scale)."
        ),
    ] = "testbed",
    partner_run: Annotated[
        list[Path] | None,
        typer.Option(
            "--partner-run",
            help="A finished run of the real backend on this scenario (a crosscheck's "
            "testbed/ or simnet/ folder), compared again instead of running the real "
            "nodes; the model's \\[cpu] may differ. Repeat it for several runs.",
        ),
    ] = None,
    runs: Annotated[
        int | None,
        typer.Option(
            "--runs",
            help="Run the real backend this many times (finished runs given with "
            "--partner-run count) and compare the model with their median and range "
            "[default: 1, or one per --partner-run].",
            show_default=False,
        ),
    ] = None,
    model_seeds: Annotated[
        int,
        typer.Option(
            "--model-seeds",
            help="Run the model with this many protocol seeds (the scenario's seed and the "
            "next ones, on its graph and publication schedule) and compare their median, "
            "with their range.",
        ),
    ] = 1,
    cpu_costs: Annotated[
        Path | None,
        typer.Option(
            "--cpu-costs",
            help="A costs file (the costs.toml bench/cpu_refit.py writes): its \\[cpu] "
            "costs replace the scenario's on the model's side, for a machine or an hour "
            "other than the measured costs'.",
        ),
    ] = None,
) -> None:
    """Run a scenario on the model and on a real backend and compare them side by side."""
    from gossiplab.backends.testbed.crosscheck import PARTNERS, run_crosscheck
    from gossiplab.progress import simulated_time_bar

    def action() -> None:
        if against not in PARTNERS:
            raise GossiplabError(f"--against {against}: use one of {', '.join(PARTNERS)}")
        if against == "simnet":
            _advise_quic(scenario)
        bar = functools.partial(simulated_time_bar, console=err)
        result = run_crosscheck(
            scenario,
            out_dir,
            force=force,
            against=against,
            bar=bar,
            partner_runs=partner_run or [],
            runs=runs,
            resume=resume,
            model_seeds=model_seeds,
            cpu_costs=cpu_costs,
        )
        out.print(result.markdown, markup=False, highlight=False)
        out.print(f"results: {result.out_dir}")
        out.print(f"report:  {result.report}")

    guarded(action)


def _advise_quic(scenario: Path) -> None:
    """Say which of the model's network fields describe TCP before simnet's QUIC run."""
    from gossiplab.backends.simnet.support import quic_transport_advice
    from gossiplab.scenario import load_scenario

    advice = quic_transport_advice(load_scenario(scenario))
    if advice is not None:
        err.print(f"[yellow]note:[/] {escape(advice)}", soft_wrap=True)


def profile(
    scenario: Annotated[Path, typer.Argument(help="Scenario file (TOML).")],
    out_dir: Annotated[
        Path | None,
        typer.Option("-o", "--out", help="Results folder (default results/<name>-<time>)."),
    ] = None,
    force: Annotated[bool, typer.Option(help="Replace an existing results folder.")] = False,
) -> None:
    """Run a scenario on the testbed with a CPU profile of every node; print the top functions.

    The same as `run` with backend = "testbed" and testbed.profile = true: the raw
    profiles stay in the results folder (testbed/node*/cpu.pprof) for `go tool pprof`.
    """
    from gossiplab.runner import run as run_scenario
    from gossiplab.scenario import load_scenario, parse_scenario

    def action() -> None:
        s = load_scenario(scenario)
        data = s.source_data
        data["backend"] = "testbed"
        data["testbed"] = {**data.get("testbed", {}), "profile": True}
        result = run_scenario(parse_scenario(data, s.base_dir), out_dir, force=force)
        top = result.out_dir / "testbed" / "profile-top.txt"
        if top.is_file():
            out.print(top.read_text(encoding="utf-8"), markup=False, highlight=False)
        out.print(f"results: {result.out_dir}")
        out.print(f"report:  {result.report}")

    guarded(action)


def register(app: typer.Typer) -> None:
    """Add this module's commands to `app`."""
    app.command(name="clean")(clean)
    app.command(name="crosscheck")(crosscheck)
    app.command(name="profile")(profile)
