"""A progress bar over simulated time, for runs that take more than a moment."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from gossiplab.backends.model import ProgressCallback

NS_PER_S = 1e9


@contextmanager
def simulated_time_bar(label: str, console: Console | None = None) -> Iterator[ProgressCallback]:
    """Yield a callback (done_ns, total_ns, events) that moves a bar; quiet when not a TTY."""
    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TaskProgressColumn(),
        TextColumn("{task.fields[simulated]}"),
        TextColumn("{task.fields[events]}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console or Console(stderr=True),
        transient=False,
    )
    task = progress.add_task(label, total=1.0, simulated="", events="")

    def update(done_ns: int, total_ns: int, events: int) -> None:
        progress.update(
            task,
            completed=done_ns / total_ns if total_ns else 1.0,
            simulated=f"{done_ns / NS_PER_S:,.1f}/{total_ns / NS_PER_S:,.1f} s simulated",
            events=f"{events:,} events",
        )

    with progress:
        yield update
