"""A crosscheck section's table: both backends' rows joined, then as markdown for
crosscheck.md and as HTML for its page."""

from __future__ import annotations

import html

import polars as pl


def join_backends(frames: dict[str, pl.DataFrame], key: str) -> pl.DataFrame:
    """One row per `key`, each backend's other columns suffixed with its name."""
    renamed = [
        frame.rename({c: f"{c}_{backend}" for c in frame.columns if c != key})
        for backend, frame in frames.items()
    ]
    joined = renamed[0]
    for frame in renamed[1:]:
        joined = joined.join(frame, on=key, how="full", coalesce=True)
    return joined


def cell(value: float | None, digits: int) -> str:
    """A number for a table, "–" where it is missing."""
    return "–" if value is None else f"{value:,.{digits}f}"


def markdown_section(intro: str, headers: list[str], rows: list[list[str]]) -> str:
    """A paragraph, then the table (cells right-aligned)."""
    lines = ["", intro, "", "| " + " | ".join(headers) + " |", "|" + "---:|" * len(headers)]
    lines += ["| " + " | ".join(cells) + " |" for cells in rows]
    return "\n".join(lines) + "\n"


def html_table(headers: list[str], rows: list[list[str]]) -> str:
    """The table for the page, every cell escaped."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>" for cells in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"
