"""User-facing errors.

Everything a user can cause (a bad scenario, a missing results folder) raises a
subclass of ``GossiplabError``; the CLI prints its message and exits with code 2
instead of showing a traceback. Anything else is a bug in gossiplab.
"""

from __future__ import annotations

from dataclasses import dataclass


class GossiplabError(Exception):
    """An error the user can fix; its message says what and how."""


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a scenario, located by its dotted field path."""

    path: str
    message: str
    hint: str = ""

    def __str__(self) -> str:
        where = self.path or "<scenario>"
        text = f"{where}: {self.message}"
        return f"{text} ({self.hint})" if self.hint else text


class ScenarioError(GossiplabError):
    """A scenario that cannot be run; carries every problem found, not just the first."""

    def __init__(self, problems: list[Problem], source: str = "") -> None:
        self.problems = problems
        self.source = source
        head = f"{source}: " if source else ""
        lines = [f"{head}{len(problems)} problem(s) in the scenario:"]
        lines += [f"  - {p}" for p in problems]
        super().__init__("\n".join(lines))


class ResultsError(GossiplabError):
    """A results folder that is missing, incomplete or unreadable."""
