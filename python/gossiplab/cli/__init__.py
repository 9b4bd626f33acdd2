"""The `gossiplab` command line: `main` here, the analysis and testbed commands beside it."""

from __future__ import annotations

from gossiplab.cli.main import main

__all__ = ["main"]
