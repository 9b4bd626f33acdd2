"""The hop into each node (analysis/hop_in.py) and the crosscheck's section of it, on
hand-built receipts whose hops are known."""

from __future__ import annotations

import polars as pl

from gossiplab.analysis.hop_in import hop_in_by_node
from gossiplab.analysis.metrics import Measured
from gossiplab.backends.testbed import crosscheck_hops as hops

MS = 1_000_000


def _receipts(rows: list[tuple[int, int, int, int]]) -> pl.DataFrame:
    """(msg, node, from_node, latency in ms) rows."""
    return pl.DataFrame(
        {
            "msg": [r[0] for r in rows],
            "node": [r[1] for r in rows],
            "from_node": [r[2] for r in rows],
            "latency_ns": [r[3] * MS for r in rows],
        }
    )


# A line 0 - 1 - 2: node 0 publishes message 0; 1 has it at 10 ms, 2 at 35 ms (25 ms
# into 2). Node 2 publishes message 1; 1 has it at 12 ms, 0 at 20 ms (8 ms into 0).
LINE = [(0, 1, 0, 10), (0, 2, 1, 35), (1, 1, 2, 12), (1, 0, 1, 20)]


def test_a_hop_counts_from_the_sender_s_receipt_or_the_publication() -> None:
    table = hop_in_by_node(_receipts(LINE))
    got = {row["node"]: (row["receipts"], row["hop_p50_ms"]) for row in table.iter_rows(named=True)}
    # Node 1 got both straight from the publishers: 10 and 12 ms, median 11.
    assert got == {0: (1, 8.0), 1: (2, 11.0), 2: (1, 25.0)}


def _measured(rows: list[tuple[int, int, int, int]]) -> Measured:
    return Measured(messages=pl.DataFrame(), first_receipts=_receipts(rows), published=2)


def test_the_section_lists_the_slowest_nodes_of_either_backend_first() -> None:
    # The testbed's node 0 is slow (80 ms in), the model's node 2 (25 ms in).
    real = [(0, 1, 0, 10), (0, 2, 1, 20), (1, 1, 2, 12), (1, 0, 1, 92)]
    table = hops.side_by_side({"model": _measured(LINE), "testbed": _measured(real)})
    assert table["node"].to_list() == [0, 2, 1]
    text = hops.markdown(table, ["model", "testbed"])
    assert "| 0 | 1 / 1 | 8.0 / 80.0 |" in text
    assert "| 2 | 1 / 1 | 25.0 / 10.0 |" in text


def test_no_receipts_no_section() -> None:
    empty = _measured([])
    table = hops.side_by_side({"model": empty, "testbed": empty})
    assert hops.markdown(table, ["model", "testbed"]) == ""
    assert hops.html_table(table, ["model", "testbed"]) == ""
