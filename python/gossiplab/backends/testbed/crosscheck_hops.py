"""The crosscheck's hop into each node, both backends side by side.

Two runs can agree on their medians and still overload different nodes; past capacity
that decides who waits. This section lists the nodes whose median hop in
(``analysis/hop_in.py``) is slowest in either backend.
"""

from __future__ import annotations

import polars as pl

from gossiplab.analysis.hop_in import hop_in_by_node
from gossiplab.analysis.metrics import Measured
from gossiplab.backends.testbed import crosscheck_tables as tables

SHOWN = 10
"""The nodes listed: the slowest in either backend."""


def side_by_side(measured: dict[str, Measured]) -> pl.DataFrame:
    """One row per node, each backend's receipts and median hop in suffixed with its
    name, slowest first (the larger of the backends' medians)."""
    frames = {b: hop_in_by_node(m.first_receipts) for b, m in measured.items()}
    joined = tables.join_backends(frames, "node")
    slowest = pl.max_horizontal([c for c in joined.columns if c.startswith("hop_p50_ms_")])
    return joined.with_columns(slowest=slowest).sort("slowest", descending=True).drop("slowest")


def _rows(table: pl.DataFrame, backends: list[str]) -> list[list[str]]:
    return [
        [
            str(row["node"]),
            " / ".join(tables.cell(row.get(f"receipts_{b}"), 0) for b in backends),
            " / ".join(tables.cell(row.get(f"hop_p50_ms_{b}"), 1) for b in backends),
        ]
        for row in table.head(SHOWN).iter_rows(named=True)
    ]


def _headers(backends: list[str]) -> list[str]:
    both = " / ".join(backends)
    return ["node", f"first receipts, {both}", f"median hop in (ms), {both}"]


def markdown(table: pl.DataFrame, backends: list[str]) -> str:
    """The section for crosscheck.md (empty without per-receipt rows)."""
    if table.is_empty():
        return ""
    intro = (
        "The hop into each node (from its sender's first receipt, or the publication, to "
        f"its own), the {SHOWN} slowest nodes in either backend:"
    )
    return tables.markdown_section(intro, _headers(backends), _rows(table, backends))


def html_table(table: pl.DataFrame, backends: list[str]) -> str:
    """The section's table for crosscheck.html (empty without per-receipt rows)."""
    if table.is_empty():
        return ""
    return tables.html_table(_headers(backends), _rows(table, backends))
