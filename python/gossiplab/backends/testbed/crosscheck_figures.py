"""The crosscheck's overlaid figures: every run of each backend, one colour per backend."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from gossiplab.analysis.metrics import Measured, measure
from gossiplab.analysis.results import load_results


def _cdf(ax: Any, values: np.ndarray, style: dict[str, Any]) -> None:
    if values.size == 0:
        return
    ordered = np.sort(values)
    ax.step(ordered, np.arange(1, ordered.size + 1) / ordered.size, where="post", **style)


def measure_each(folders: dict[str, Path]) -> dict[str, Measured]:
    """Each backend's measured messages and receipts, from its results folder."""
    measured = {}
    for backend, folder in folders.items():
        tables, run_info, _ = load_results(folder)
        measured[backend] = measure(tables, run_info)
    return measured


# One colour per backend: the model's seeds in the first, the real runs in the second.
FAMILY_COLOURS = ("tab:blue", "tab:orange")


def by_backend(runs: dict[str, Measured]) -> dict[str, list[str]]:
    """The runs by backend, in order: `model`, `model-2`, ... and `testbed`, ..."""
    found: dict[str, list[str]] = {}
    for name in runs:
        found.setdefault(name.split("-")[0], []).append(name)
    return found


def legend_of(family: str, members: list[str]) -> str:
    if len(members) == 1:
        return family
    return f"{family} ({len(members)} {'seeds' if family == 'model' else 'runs'})"


def draw(runs: dict[str, Measured], path: Path) -> Path:
    """Overlaid CDFs of dissemination time and per-receipt latency (every run, one colour
    per backend), and the last-delivery-hop shares (per backend, the median over its runs
    with their range)."""
    figure = Figure(figsize=(13, 4), dpi=110)
    FigureCanvasAgg(figure)
    axes = figure.subplots(1, 3)
    families = by_backend(runs)
    ldh: dict[str, list[pl.Series]] = {}
    for f, (family, members) in enumerate(families.items()):
        colour = FAMILY_COLOURS[f % len(FAMILY_COLOURS)]
        for k, name in enumerate(members):
            measured = runs[name]
            style = {"color": colour, "alpha": 1.0 if k == 0 else 0.35}
            if k == 0:
                style["label"] = legend_of(family, members)
            dissemination = measured.messages["dissemination_ns"].drop_nulls().to_numpy() / 1e6
            _cdf(axes[0], dissemination, style)
            _cdf(axes[1], measured.first_receipts["latency_ns"].to_numpy() / 1e6, style)
            ldh.setdefault(family, []).append(measured.messages["last_delivery_hop"].drop_nulls())
    axes[0].set(title="dissemination time per message", xlabel="ms", ylabel="CDF")
    axes[1].set(title="per-receipt latency", xlabel="ms", ylabel="CDF")
    _ldh_bars(axes[2], ldh, families)
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend()
    figure.tight_layout()
    figure.savefig(path)
    return path


def _ldh_bars(ax: Any, ldh: dict[str, list[pl.Series]], families: dict[str, list[str]]) -> None:
    """Per backend and hop, the share of messages whose last delivery was that hop: the
    median over its runs, with a bar from their least to their most."""
    hops = sorted({int(h) for runs in ldh.values() for series in runs for h in series.to_list()})
    width = 0.8 / max(len(ldh), 1)
    for k, (family, runs) in enumerate(ldh.items()):
        shares = np.array(
            [[int((series == h).sum()) / max(series.len(), 1) for h in hops] for series in runs]
        ).reshape(len(runs), len(hops))
        middle = np.median(shares, axis=0)
        spread = np.vstack([middle - shares.min(axis=0), shares.max(axis=0) - middle])
        ax.bar(
            np.array(hops) + (k - (len(ldh) - 1) / 2) * width,
            middle,
            width=width,
            color=FAMILY_COLOURS[k % len(FAMILY_COLOURS)],
            yerr=spread if len(runs) > 1 else None,
            capsize=2,
            label=legend_of(family, families[family]),
        )
    ax.set(title="last delivery hop", xlabel="hop", ylabel="share of messages")
    ax.set_xticks(hops)
