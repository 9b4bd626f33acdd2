"""A crosscheck's verdict: is the model within the fidelity targets of the real backend?

The targets are the project's (the CPU-fidelity work's "done when"): per-receipt latency
p50 and p99 within 15 %, payload bytes sent and duplicates within 10 %, the delivery
ratio within 10 points, and copies dropped mostly for the same reason. A deviation is
the model's distance from the real backend, relative to the real value, which is the
ground truth: |model - real| / real. (The crosscheck's main table shows the other
direction, (real - model) / model, so the two percentages differ in size.)

With several real runs (`crosscheck_runs.py`) the real value is their median, and each
target also gets the runs' own spread by the same measure and whether the model lies
within their range.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gossiplab.backends.testbed import crosscheck_runs as several

# (row of the crosscheck table, tolerance, the tolerance's kind)
RELATIVE = "relative"
POINTS = "points"
TARGETS: tuple[tuple[str, float, str], ...] = (
    ("per-receipt latency p50", 0.15, RELATIVE),
    ("per-receipt latency p99", 0.15, RELATIVE),
    ("payload bytes sent", 0.10, RELATIVE),
    ("duplicates per node per message", 0.10, RELATIVE),
    ("delivery ratio", 0.10, POINTS),
)
DROP_REASON = "main drop reason"
FILE = "crosscheck-targets.json"


@dataclass(frozen=True)
class Verdict:
    metric: str
    target: str
    model: str
    partner: str
    deviation: str
    within: bool | None  # None: not measurable (a value missing)
    spread: str = ""  # the real runs' own, with several
    inside: bool | None = None  # the model within the real runs' range, with several


def deviation(model: float | None, real: float | None, kind: str) -> float | None:
    """The model's distance from the real value: relative to it, or in absolute points."""
    if model is None or real is None:
        return None
    if kind == POINTS:
        return abs(model - real)
    if real == 0:
        return 0.0 if model == 0 else None
    return abs(model - real) / abs(real)


def main_drop_reason(summary: dict[str, Any]) -> str:
    """The reason most dropped copies were dropped for, or "none" without drops."""
    by_reason: dict[str, int] = (summary.get("drops") or {}).get("by_kind", {}).get("payload", {})
    counts = {reason: n for reason, n in by_reason.items() if n > 0}
    if not counts:
        return "none"
    return max(sorted(counts), key=lambda reason: counts[reason])


def _number(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"


def _distance(off: float | None, kind: str) -> str:
    if off is None:
        return "-"
    return f"{off:.1%}" if kind == RELATIVE else f"{off * 100:.1f} points"


def verdicts(
    values: dict[str, tuple[float | None, float | None]],
    model_summaries: Sequence[dict[str, Any]],
    partner_summaries: Sequence[dict[str, Any]],
    runs: Mapping[str, Sequence[float | None]] | None = None,
) -> list[Verdict]:
    """The targets checked on the crosscheck's values by metric: (model, real), each
    the median of the runs whose summaries are given (the model's seeds, the real runs);
    `runs`: each real run's value by metric, for the runs' own spread."""
    runs = runs or {}
    found = []
    for metric, tolerance, kind in TARGETS:
        model, real = values.get(metric, (None, None))
        off = deviation(model, real, kind)
        target = (
            f"within {tolerance:.0%}"
            if kind == RELATIVE
            else f"within {tolerance * 100:.0f} points"
        )
        within = None if off is None else off <= tolerance + 1e-12
        each = runs.get(metric, ())
        own = _distance(several.spread(each, kind == RELATIVE), kind) if len(each) > 1 else ""
        found.append(
            Verdict(
                metric, target, _number(model), _number(real), _distance(off, kind), within,
                own, several.inside(model, each),
            )
        )  # fmt: skip
    ours, seeds_agreeing = several.most_common([main_drop_reason(s) for s in model_summaries])
    theirs, agreeing = several.most_common([main_drop_reason(s) for s in partner_summaries])
    shown = ours
    if len(model_summaries) > 1:
        shown += f" ({seeds_agreeing} of {len(model_summaries)} seeds)"
    own = f"{agreeing} of {len(partner_summaries)} runs" if len(partner_summaries) > 1 else ""
    found.append(Verdict(DROP_REASON, "the same", shown, theirs, "", ours == theirs, own))
    return found


def _mark(within: bool | None) -> str:
    return {True: "yes", False: "no", None: "-"}[within]


def _several(found: list[Verdict]) -> bool:
    return any(v.spread for v in found)


def _header(found: list[Verdict], partner: str) -> list[str]:
    real = f"{partner} (median)" if _several(found) else partner
    cells = ["metric", "target", "model", real, "deviation", "within"]
    if _several(found):
        cells += [f"{partner} runs' own spread", "model inside their range"]
    return cells


def _cells(v: Verdict, several_runs: bool) -> list[str]:
    cells = [v.metric, v.target, v.model, v.partner, v.deviation, _mark(v.within)]
    if several_runs:
        cells += [v.spread or "-", _mark(v.inside)]
    return cells


def _explained(partner: str, several_runs: bool) -> str:
    text = f"deviation = |model - {partner}| / {partner}; points for the delivery ratio"
    if several_runs:
        text += (
            f"; {partner} is the median of its runs, and a run's own spread is its "
            "largest distance from that median, by the same measure"
        )
    return text


def markdown(found: list[Verdict], partner: str) -> str:
    several_runs = _several(found)
    header = _header(found, partner)
    lines = [
        "",
        f"Against the fidelity targets ({_explained(partner, several_runs)}):",
        "",
        "| " + " | ".join(header) + " |",
        "|---|---|---:|---:|---:|---|" + "---:|---|" * several_runs,
    ]
    lines += ["| " + " | ".join(_cells(v, several_runs)) + " |" for v in found]
    return "\n".join(lines) + "\n"


def html_table(found: list[Verdict], partner: str) -> str:
    several_runs = _several(found)
    explained = _explained(partner, several_runs)
    sentence = explained[:1].upper() + explained[1:]
    rows = "".join(
        "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in _cells(v, several_runs)) + "</tr>"
        for v in found
    )
    head = "".join(f"<th>{html.escape(c)}</th>" for c in _header(found, partner))
    return (
        f"<h2>Against the fidelity targets</h2><p>{html.escape(sentence)}."
        f"</p><table><tr>{head}</tr>{rows}</table>"
    )


def as_json(found: list[Verdict]) -> list[dict[str, Any]]:
    return [v.__dict__ for v in found]
