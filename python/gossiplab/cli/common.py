"""What every CLI command shares: the consoles and the user-error guard."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from gossiplab.errors import GossiplabError

out = Console()
err = Console(stderr=True)

EXIT_USER_ERROR = 2
EXIT_INTERRUPTED = 130

T = TypeVar("T")


def guarded(action: Callable[[], T]) -> T:
    """Run `action`, turning user errors and Ctrl-C into clean messages and exit codes.

    A GossiplabError is the user's to fix: print it and exit 2. Anything else is a bug in
    gossiplab and keeps its traceback.
    """
    try:
        return action()
    except GossiplabError as error:
        err.print(f"[bold red]error:[/] {escape(str(error))}", highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_USER_ERROR) from None
    except KeyboardInterrupt:
        err.print("[yellow]interrupted[/]: no partial results were kept")
        raise typer.Exit(EXIT_INTERRUPTED) from None
