"""A crosscheck section's table, as markdown for crosscheck.md and as HTML for its page."""

from __future__ import annotations

import html


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
