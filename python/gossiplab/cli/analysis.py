"""CLI commands for the analysis features (registered on the main app by cli/main.py).

`compare` puts runs side by side; `sweep` runs a scenario's [sweep] matrix; `campaign`
runs a campaign file (series of sweeps over one base scenario, such as the Whiteblock
Phase 2 tests). Sweeps and campaigns resume: run the same command again after an
interruption and the finished points are skipped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.status import Status
from rich.table import Table

from gossiplab.cli.common import EXIT_INTERRUPTED, err, guarded, out

if TYPE_CHECKING:
    import polars as pl

    from gossiplab.multirun.sweep import PointResult

EXIT_INTERNAL_ERROR = 1
WIDE_OUTPUT = 160

OutOption = Annotated[
    Path | None,
    typer.Option("-o", "--out", help="Output folder (default under results/)."),
]
WorkersOption = Annotated[
    int | None,
    typer.Option("--workers", "-j", help="Points run at once on this machine (default: cores)."),
]
RayOption = Annotated[
    str | None,
    typer.Option(
        "--ray",
        metavar="ADDRESS",
        help="Run the points on the Ray cluster at ADDRESS (host:port) instead of locally.",
    ),
]
ForceOption = Annotated[
    bool,
    typer.Option(help="Re-run every point, replacing finished ones (default: resume)."),
]
QuietOption = Annotated[bool, typer.Option("-q", "--quiet", help="No progress bar.")]


class PointsBar:
    """A progress bar over a sweep's points; failures are printed as they happen."""

    def __init__(self, label: str, quiet: bool) -> None:
        self.label = label
        self.quiet = quiet
        self.failed = 0
        self.status: Status | None = None
        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("points"),
            TextColumn("{task.fields[failed]}"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=err,
            disable=quiet,
        )
        self.task = self.progress.add_task(label, total=None, failed="")

    def started(self, total: int, finished: int) -> None:
        if finished and not self.quiet:
            err.print(f"resuming: {finished} of {total} points already finished, skipped")
        self.progress.update(self.task, total=total, completed=finished)

    def writing_report(self) -> None:
        # Loading every point for the overlays can take a while on a large campaign.
        self.progress.stop()
        if not self.quiet:
            self.status = err.status("writing the table and the report")
            self.status.start()

    def close(self) -> None:
        self.progress.stop()
        if self.status is not None:
            self.status.stop()

    def point_done(self, result: PointResult) -> None:
        if result.status == "failed":
            self.failed += 1
            self.progress.console.print(
                f"[yellow]failed[/] {escape(result.point.folder)}: {escape(result.reason)}",
                highlight=False,
            )
        self.progress.update(
            self.task, advance=1, failed=f"{self.failed} failed" if self.failed else ""
        )


@contextmanager
def points_bar(label: str, quiet: bool) -> Iterator[PointsBar]:
    bar = PointsBar(label, quiet)
    bar.progress.start()
    try:
        yield bar
    finally:
        bar.close()


def _resumable(action: Callable[[], None]) -> None:
    """Like `guarded`, but an interruption says that finished points are kept."""

    def wrapped() -> None:
        try:
            action()
        except KeyboardInterrupt:
            err.print(
                "[yellow]interrupted[/]: finished points are kept; "
                "run the same command again to resume"
            )
            raise typer.Exit(EXIT_INTERRUPTED) from None

    guarded(wrapped)


def _report_failures(results: list[PointResult]) -> None:
    failed = [r for r in results if r.status == "failed"]
    if failed:
        err.print(
            f"[yellow]{len(failed)} of {len(results)} point(s) failed[/]; they are in the "
            "table with their reason and run again the next time"
        )
    bugs = [r for r in failed if r.traceback]
    for r in bugs:
        err.print(f"[red]internal error in {escape(r.point.folder)}[/]:\n{escape(r.traceback)}")
    if bugs:
        err.print("[red]these are bugs in gossiplab; please report them with the traceback[/]")
        raise typer.Exit(EXIT_INTERNAL_ERROR)


def compare(
    dirs: Annotated[
        list[Path], typer.Argument(help="Results folders (or sweep/campaign folders).")
    ],
    out_dir: OutOption = None,
    label: Annotated[
        list[str] | None,
        typer.Option("--label", "-l", help="A name per folder, in order (default: folder names)."),
    ] = None,
    force: Annotated[bool, typer.Option(help="Replace an existing output folder.")] = False,
) -> None:
    """Overlay several runs' distributions and put their headline metrics side by side."""
    from gossiplab.multirun.compare import HEADLINE_CSV, compare_runs, expand_runs

    def action() -> None:
        refs = expand_runs(dirs, label)
        with Progress(
            TextColumn("[bold]loading runs"),
            BarColumn(),
            MofNCompleteColumn(),
            console=err,
            transient=True,
        ) as progress:
            task = progress.add_task("load", total=len(refs))
            page = compare_runs(
                dirs,
                out_dir,
                labels=label,
                force=force,
                on_loaded=lambda _: progress.advance(task),
            )
        _print_headline(page.parent / HEADLINE_CSV)
        out.print(f"comparison: {page}")

    guarded(action)


def _print_headline(csv: Path) -> None:
    import polars as pl

    table = pl.read_csv(csv, infer_schema_length=0)
    shown = Table(show_header=True, box=None, pad_edge=False)
    shown.add_column("metric", style="bold")
    for name in table.columns[2:]:
        shown.add_column(name, justify="right")
    for row in table.iter_rows():
        shown.add_row(*(str(cell) for cell in row[1:]))
    out.print(shown)


# Help texts are rich markup: a bracket meant to be seen is escaped as "\\[".
def sweep(
    scenario: Annotated[Path, typer.Argument(help="Scenario file with a \\[sweep] table.")],
    out_dir: OutOption = None,
    workers: WorkersOption = None,
    ray: RayOption = None,
    force: ForceOption = False,
    quiet: QuietOption = False,
) -> None:
    """Run every point of a scenario's \\[sweep] matrix; resumes after an interruption."""
    from gossiplab.multirun.sweep import run_sweep

    def action() -> None:
        with points_bar(f"sweep {scenario.stem}", quiet) as bar:
            outcome = run_sweep(
                scenario,
                out_dir,
                workers=workers,
                ray_address=ray,
                force=force,
                progress=bar,
            )
        ok = len(outcome.results) - len(outcome.failed)
        out.print(
            f"{len(outcome.results)} points: {ok} ok ({outcome.resumed} from an earlier run), "
            f"{len(outcome.failed)} failed"
        )
        out.print(f"sweep:  {outcome.out_dir}")
        out.print(f"table:  {outcome.out_dir / 'points.csv'}")
        out.print(f"report: {outcome.report}")
        _report_failures(outcome.results)

    _resumable(action)


def campaign(
    campaign_file: Annotated[Path, typer.Argument(help="Campaign file (TOML).")],
    out_dir: OutOption = None,
    workers: WorkersOption = None,
    ray: RayOption = None,
    force: ForceOption = False,
    quiet: QuietOption = False,
) -> None:
    """Run a campaign (series of sweeps over one base scenario) and write its series table."""
    from gossiplab.multirun.campaign import run_campaign

    def action() -> None:
        with points_bar(f"campaign {campaign_file.stem}", quiet) as bar:
            outcome = run_campaign(
                campaign_file,
                out_dir,
                workers=workers,
                ray_address=ray,
                force=force,
                progress=bar,
            )
        table = _series_console_table(outcome.series, outcome.plan.parameters)
        # Piped into a log, rich would assume 80 columns and cut the numbers short.
        (out if out.is_terminal else Console(width=WIDE_OUTPUT)).print(table)
        out.print(f"campaign: {outcome.out_dir}")
        out.print(f"table:    {outcome.out_dir / 'series.md'}")
        out.print(f"report:   {outcome.report}")
        _report_failures(outcome.results)

    _resumable(action)


def _series_console_table(series: pl.DataFrame, parameters: list[str]) -> Table:
    """The series table for a terminal: short headers; a failed case shows its reason."""
    from gossiplab.multirun.campaign import series_header, series_text_rows

    case, _series, *names = series_header(parameters, short=True)
    shown = Table(show_header=True, box=None, pad_edge=False)
    shown.add_column(case, style="bold", no_wrap=True)
    for i, name in enumerate(names):
        numeric = i >= len(parameters)
        shown.add_column(name, justify="right" if numeric else "left", no_wrap=not numeric)
    for row in series_text_rows(series, parameters):
        case_label, _title, *rest = row
        shown.add_row(case_label, *(escape(cell) for cell in rest))
    return shown


def register(app: typer.Typer) -> None:
    """Add this module's commands to `app`."""
    app.command()(compare)
    app.command()(sweep)
    app.command()(campaign)
