"""Nearest-rank percentiles, the one definition every metric uses: the value at rank
ceil(percent × n / 100) of the sorted values, on a series or per group."""

from __future__ import annotations

from typing import Any

import polars as pl


def nearest_rank(ordered: pl.Series, percent: int) -> Any:
    """The ``percent``-th percentile of an ascending, non-empty series (nearest rank)."""
    # Integer ceiling: in floats 0.9 * 10 is 9.000000000000002, which would round up to 10.
    rank = max(1, -(-percent * ordered.len() // 100))
    return ordered[rank - 1]


def nearest_rank_in_group(column: str, percent: int) -> pl.Expr:
    """``nearest_rank`` as an aggregation over a group's (non-empty) values."""
    return pl.col(column).sort().get((pl.len() * percent + 99) // 100 - 1)
