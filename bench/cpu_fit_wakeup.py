"""The node wake-up cost that makes the model's node CPU match real nodes', with the
model's own counts.

bench/cpu_calibration.py fits costs to the testbed's counts (its syscalls and context
switches); the model then charges them on its own counts (its wake-ups, RPCs, copies),
which differ where the node's timing differs. This fit closes that loop: for every
testbed result folder given (the one-P calibration runs,
bench/scenarios/cpu/calib-1p-*.toml), it runs the same scenario on the model (one host
of 1 core for all the nodes, `[cpu] costs = "measured"`) with a candidate
`per_node_wakeup`, and compares the nodes' CPU while publishing (`summary.json`'s `cpu`
section, the same analysis for both backends). The one cost fitted is the one that falls
with load in the model, the node's wake-up; every other cost stays as profiled. Runs
whose real nodes kept their core busy (0.95 cores or more) are left out: their CPU is
the core's limit, not their work's. It prints, per candidate, each run's model and
testbed cores and the root mean square of the relative errors, and the best candidate.

    .venv/bin/python bench/cpu_fit_wakeup.py RESULTS... [--from 20 --to 100 --step 5]
        [--costs COSTS.toml]

`--costs` takes a TOML file whose `[cpu]` table sets costs in place of the preset's (for
costs fitted in the hour of the runs, e.g. by bench/cpu_fit_turns.py).
"""

from __future__ import annotations

import argparse
import tempfile
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl

from gossiplab.analysis.cpu_use import cpu_while_publishing
from gossiplab.runner import run
from gossiplab.scenario import parse_scenario
from gossiplab.scenario.cpu import resolved_protocol

SATURATED_CORES = 0.95


def testbed_cores(folder: Path) -> float:
    """The real nodes' CPU while publishing, from the folder's tables."""
    cpu = cpu_while_publishing(
        pl.read_parquet(folder / "resources.parquet"),
        pl.read_parquet(folder / "publishes.parquet"),
    )
    if cpu is None:
        raise SystemExit(f"{folder}: no CPU samples around the publications")
    return float(cpu["cores_all_nodes"])


# Costs of signatures: fitted on signed runs, they are not an unsigned run's, which
# keeps the preset's (nothing checked, a publication neither signed nor checked).
SIGNED_ONLY = ("per_copy", "per_kb_copy", "per_publish", "per_kb_publish")


def model_scenario(folder: Path, wakeup_us: float, costs: dict[str, Any]) -> dict[str, Any]:
    """The folder's scenario on the model: its nodes on one host of one core, at the
    measured costs with `costs` in their place (but the signatures' on unsigned runs)."""
    data = tomllib.loads((folder / "scenario.toml").read_text())
    data["backend"] = "model"
    nodes = data["topology"]["nodes"]
    if resolved_protocol(data).get("signing") != "strict-sign":
        costs = {name: cost for name, cost in costs.items() if name not in SIGNED_ONLY}
    data["cpu"] = {
        "costs": "measured",
        **costs,
        "nodes_per_host": nodes,
        "cores": 1,
        "per_node_wakeup": f"{wakeup_us}us",
    }
    return data


def model_cores(folder: Path, wakeup_us: float, costs: dict[str, Any], scratch: Path) -> float:
    scenario = parse_scenario(model_scenario(folder, wakeup_us, costs), folder)
    out = scratch / f"{folder.name}-{wakeup_us}"
    return float(run(scenario, out).summary["cpu"]["cores_all_nodes"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("results", type=Path, nargs="+")
    parser.add_argument("--from", dest="low", type=float, default=20.0)
    parser.add_argument("--to", dest="high", type=float, default=100.0)
    parser.add_argument("--step", type=float, default=5.0)
    parser.add_argument("--costs", type=Path, help="a TOML file whose [cpu] sets costs")
    args = parser.parse_args()
    costs = tomllib.loads(args.costs.read_text()).get("cpu", {}) if args.costs else {}
    best: tuple[float, float] | None = None
    for candidate, rms, cores in sweep(
        args.results, candidates(args.low, args.high, args.step), costs
    ):
        runs = ", ".join(
            f"{f.name} {model:.3f}/{real:.3f} ({model / real - 1:+.0%})"
            for f, (model, real) in cores.items()
        )
        print(f"{candidate:6.1f} µs: rms {rms:.3f}; {runs}", flush=True)
        if best is None or rms < best[1]:
            best = (candidate, rms)
    if best is not None:
        print(f"\nbest per_node_wakeup: {best[0]:.1f} µs (rms of relative errors {best[1]:.3f})")


def candidates(low: float, high: float, step: float) -> list[float]:
    count = int((high - low) / step + 1e-9) + 1
    return [low + k * step for k in range(count)]


def sweep(
    results: list[Path], wakeups_us: list[float], costs: dict[str, Any]
) -> Iterator[tuple[float, float, dict[Path, tuple[float, float]]]]:
    """Per candidate wake-up: the rms relative error of the model's nodes' CPU against
    the real ones', and each run's (model, real) cores. Saturated runs are left out."""
    real = {folder: testbed_cores(folder) for folder in results}
    fitted = {f: c for f, c in real.items() if c < SATURATED_CORES}
    for folder in sorted(set(real) - set(fitted)):
        print(f"left out, saturated: {folder.name} ({real[folder]:.3f} cores)")
    with tempfile.TemporaryDirectory() as scratch:
        for wakeup in wakeups_us:
            cores = {
                f: (model_cores(f, wakeup, costs, Path(scratch)), c) for f, c in fitted.items()
            }
            errors = [model / c - 1 for model, c in cores.values()]
            yield wakeup, (sum(e * e for e in errors) / len(errors)) ** 0.5, cores


if __name__ == "__main__":
    main()
