"""A crosscheck's verdict: is the model within the fidelity targets of the real backend?

The targets are the project's (the CPU-fidelity work's "done when"): per-receipt latency
p50 and p99 within 15 %, payload bytes sent and duplicates within 10 %, the delivery
ratio within 10 points, and copies dropped mostly for the same reason. A deviation is
the model's distance from the real backend, relative to the real value, which is the
ground truth: |model - real| / real. (The crosscheck's main table shows the other
direction, (real - model) / model, so the two percentages differ in size.)
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

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


def verdicts(
    values: dict[str, tuple[float | None, float | None]],
    model_summary: dict[str, Any],
    partner_summary: dict[str, Any],
) -> list[Verdict]:
    """The targets checked on the crosscheck's values by metric: (model, real)."""
    found = []
    for metric, tolerance, kind in TARGETS:
        model, real = values.get(metric, (None, None))
        off = deviation(model, real, kind)
        target = (
            f"within {tolerance:.0%}"
            if kind == RELATIVE
            else f"within {tolerance * 100:.0f} points"
        )
        shown = (
            "-"
            if off is None
            else (f"{off:.1%}" if kind == RELATIVE else f"{off * 100:.1f} points")
        )
        within = None if off is None else off <= tolerance + 1e-12
        found.append(Verdict(metric, target, _number(model), _number(real), shown, within))
    ours, theirs = main_drop_reason(model_summary), main_drop_reason(partner_summary)
    found.append(Verdict(DROP_REASON, "the same", ours, theirs, "", ours == theirs))
    return found


def _mark(within: bool | None) -> str:
    return {True: "yes", False: "no", None: "-"}[within]


def markdown(found: list[Verdict], partner: str) -> str:
    lines = [
        "",
        "Against the fidelity targets (deviation = |model - "
        f"{partner}| / {partner}; points for the delivery ratio):",
        "",
        f"| metric | target | model | {partner} | deviation | within |",
        "|---|---|---:|---:|---:|---|",
    ]
    lines += [
        f"| {v.metric} | {v.target} | {v.model} | {v.partner} | {v.deviation} | {_mark(v.within)} |"
        for v in found
    ]
    return "\n".join(lines) + "\n"


def html_table(found: list[Verdict], partner: str) -> str:
    rows = "".join(
        "<tr>"
        + "".join(
            f"<td>{html.escape(cell)}</td>"
            for cell in (v.metric, v.target, v.model, v.partner, v.deviation, _mark(v.within))
        )
        + "</tr>"
        for v in found
    )
    return (
        f"<h2>Against the fidelity targets</h2><p>Deviation = |model - {partner}| / "
        f"{partner}; points for the delivery ratio.</p><table><tr><th>metric</th>"
        f"<th>target</th><th>model</th><th>{partner}</th><th>deviation</th><th>within</th>"
        f"</tr>{rows}</table>"
    )


def as_json(found: list[Verdict]) -> list[dict[str, Any]]:
    return [v.__dict__ for v in found]
