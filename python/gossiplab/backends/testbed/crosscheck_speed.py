"""Does the machine run the real nodes at the speed the model's measured costs assume?

`[cpu] costs = "measured"` holds costs fitted on one day of this project's machine
(docs/network-calibration.md). The machine's speed moves by the hour, mostly in what a
node does after it was idle; in a slower hour real nodes use more CPU for the same
work, and a crosscheck then compares the model with a different machine. Below
saturation the nodes' CPU tells: if the real nodes used much more (or less) than the
model's, the crosscheck says so and how to refit the costs for that hour: each
goroutine's costs per item and per turn, then the node's wake-up. Saturated nodes use
their cores whatever their speed, so they tell nothing.
"""

from __future__ import annotations

from typing import Any

TOLERANCE = 0.15
"""A CPU difference the calibration's own runs stay within (two runs of one file agree
within 16 %, the fit's errors are up to 14 %)."""
SATURATED = 0.95
"""Nodes that kept this share of their cores busy or more measure the cores."""
REFIT = "docs/network-calibration.md#per-goroutine-turn"


def _cores(summary: dict[str, Any]) -> float | None:
    value = (summary.get("cpu") or {}).get("cores_all_nodes")
    return float(value) if value is not None else None


def speed_note(
    measured_costs: bool, node_cpus: int | None, model: dict[str, Any], real: dict[str, Any]
) -> str:
    """A paragraph for the crosscheck when the real nodes' CPU while publishing differs
    from the model's by more than `TOLERANCE` below saturation; "" otherwise (costs not
    the measured ones, nodes not confined to known CPUs, or a value missing)."""
    ours, theirs = _cores(model), _cores(real)
    if not measured_costs or not node_cpus or ours is None or theirs is None or ours <= 0:
        return ""
    if max(ours, theirs) >= SATURATED * node_cpus:
        return ""
    difference = theirs / ours - 1
    if abs(difference) <= TOLERANCE:
        return ""
    pace = "slower" if difference > 0 else "faster"
    return (
        f"\nThe real nodes used {theirs:.3f} cores while publishing, the model's "
        f"{ours:.3f} ({difference:+.0%}): this machine ran them {pace} than on the day "
        "the measured costs were fitted, so the two backends do not run the same "
        "machine. Refit the costs for this hour, each goroutine's per item and per turn "
        "and then the node's wake-up, in one command (sudo .venv/bin/python "
        "bench/cpu_refit.py -o out/refit: bench/cpu_fit_turns.py on profiles and traces "
        "made now, bench/cpu_fit_wakeup.py on calibration runs made now), and give the "
        "costs it writes to the crosscheck (--cpu-costs out/refit/costs.toml) or set them "
        f"under [cpu] (`per_*_turn`, `per_node_wakeup`; {REFIT}).\n"
    )
