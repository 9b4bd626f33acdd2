"""Fit the model's CPU costs to this machine, now, in one command.

The measured costs (`[cpu] costs = "measured"`) are those of the machine and the hour
they were fitted in; a machine, or an hour, that runs the same go nodes at another speed
needs its own (docs/network-calibration.md, "Per goroutine turn"; docs/crosscheck.md,
"A seventh hour"). This runs the documented procedure on the testbed, one run at a time:

1. the cliff file (`scenarios/crosscheck/cliff-past.toml`, 40 nodes on CPU 1) at each
   rate, once with Go execution traces of eight nodes and once CPU-profiled;
2. the ten one-P calibration runs (`bench/scenarios/cpu/calib-1p-*.toml`, twice each);
3. each goroutine's cost per item and per turn over the loaded rates
   (bench/cpu_fit_turns.py, the traced nodes' sums), the publisher's, `sysmon`'s;
4. the node's wake-up that makes the model's nodes use the real ones' CPU on the
   calibration runs (bench/cpu_fit_wakeup.py),

and writes `OUT/costs.toml`, a `[cpu]` table to set beside `costs = "measured"` in a
scenario (the costs per kB of signatures and ids stay the preset's: they are measured
by Go benchmarks, `testbed/gossipnode/*cost_test.go`). Runs already in OUT are kept,
so a stopped refit resumes. About ten minutes; needs root, as the testbed does.

    sudo .venv/bin/python bench/cpu_refit.py -o out/refit
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

sys.path.insert(0, str(Path(__file__).parent))
from cpu_fit_turns import GOROUTINES, fits, node_counts, per_publication_us, points, sums
from cpu_fit_wakeup import sweep, testbed_cores
from run import commit, machine

from gossiplab.runner import run
from gossiplab.scenario import parse_scenario
from gossiplab.scenario.cpu import MEASURED_PER_KB_COPY, MEASURED_PER_KB_PUBLISH

ROOT = Path(__file__).resolve().parents[1]
CLIFF = ROOT / "scenarios" / "crosscheck" / "cliff-past.toml"
CALIBRATION = [f"calib-1p-{name}" for name in ("signed", "signed-50", "signed-100")] + [
    f"calib-1p-{name}" for name in ("unsigned", "unsigned-100")
]
TRACED_NODES = [0, 1, 3, 5, 8, 10, 20, 30]
WAKEUPS_US = [float(us) for us in range(0, 61, 3)]
# The probe: the signed calibration run at 25 msg/s, whose nodes' CPU follows the speed.
PROBE_RUNS = ("calib-1p-signed-1", "calib-1p-signed-2")


def cliff_at(rate: int, traced: bool) -> dict[str, Any]:
    """The cliff file at `rate` msg/s, traced (Go execution traces) or profiled."""
    data = tomllib.loads(CLIFF.read_text())
    data["workload"]["rate"] = f"{rate}/s"
    extra = {"go_trace": TRACED_NODES} if traced else {"profile": True}
    data["testbed"] = {**data["testbed"], **extra}
    return data


def run_once(data: dict[str, Any], base_dir: Path, out: Path, label: str) -> Path:
    """Run a scenario on the testbed into `out`, unless a finished run is there."""
    if (out / "summary.json").exists():
        print(f"  {label}: kept ({out})", flush=True)
        return out
    print(f"  {label} ...", flush=True)
    run(parse_scenario(data, base_dir), out)
    return out


def hour_costs(
    fits: dict[str, tuple[float, float]], per_publish_us: float, sysmon_us: float
) -> dict[str, float]:
    """The fits as the model's `[cpu]` costs (µs): each goroutine's scale applied to the
    model's costs per item (bench/cpu_fit_turns.py), its cost per turn (never below 0),
    the writer's cost per RPC charged with the `sendLoop`'s, and the validation worker's
    and the publisher's less the 1 kB their costs per kB charge (the runs' messages are
    1000 bytes, signed)."""
    costs = {g.name: g.costs for g in GOROUTINES}

    def item(goroutine: str, name: str) -> float:
        return fits[goroutine][0] * costs[goroutine][name]

    def turn(goroutine: str) -> float:
        return max(fits[goroutine][1], 0.0)

    return {
        "per_rpc_loop": item("event loop", "rpcs_in"),
        "per_publish_loop": item("event loop", "delivered"),
        "per_forward_loop": item("event loop", "forwards"),
        "per_loop_turn": turn("event loop"),
        "per_kb_received": item("recvLoop", "kb_in"),
        "per_recv_loop_turn": turn("recvLoop"),
        "per_rpc_received": item("reader", "rpcs_in"),
        "per_reader_turn": turn("reader"),
        "per_rpc_sent": item("writer", "writes") + item("sendLoop", "writes"),
        "per_kb_sent": item("sendLoop", "kb_out"),
        "per_writer_turn": turn("writer"),
        "per_send_loop_turn": turn("sendLoop"),
        "per_copy": item("validator", "validated") - MEASURED_PER_KB_COPY["strict-sign"] / 1e3,
        "per_validator_turn": turn("validator"),
        "per_publish": per_publish_us - MEASURED_PER_KB_PUBLISH["strict-sign"] / 1e3,
        "per_sysmon_round": sysmon_us,
    }


def fit_turns(pairs: list[tuple[Path, Path]]) -> dict[str, float]:
    """Step 3: each goroutine's fit over the traced nodes' sums, the publisher, sysmon."""
    table = pl.concat([points(p, t, apportion=True) for p, t in pairs])
    fitted = {}
    for name, (scale, turn, rms) in fits(sums(table)).items():
        print(f"  {name:<10} scale {scale:.3f}, {turn:.2f} µs per turn, rms {rms:.3f}")
        fitted[name] = (scale, turn)
    profiled = [p for p, _ in pairs]
    counts = [node_counts(p) for p in profiled]
    sysmon = sum(c["sysmon_cpu_s"].sum() for c in counts) / sum(
        c["sysmon_runs"].sum() for c in counts
    )
    return hour_costs(fitted, per_publication_us(profiled, apportion=True), sysmon * 1e6)


def fit_wakeup(runs: list[Path], costs: dict[str, str]) -> float:
    """Step 4: the wake-up (µs) with the least rms relative error of the nodes' CPU."""
    best = (0.0, float("inf"))
    for wakeup, rms, _ in sweep(runs, WAKEUPS_US, costs):
        print(f"  per_node_wakeup {wakeup:4.0f} µs: rms {rms:.3f}", flush=True)
        best = min(best, (wakeup, rms), key=lambda b: b[1])
    return best[0]


def as_toml(costs: dict[str, float], header: list[str]) -> str:
    lines = [f"# {line}" for line in header] + ["[cpu]"]
    lines += [f'{name} = "{round(us * 1000)}ns"' for name, us in costs.items()]
    return "\n".join(lines) + "\n"


def run_cliff(out: Path, rates: list[int], fit_from: int) -> list[tuple[Path, Path]]:
    """Step 1; the (profiled, traced) pairs of the rates fitted."""
    pairs = []
    for rate in rates:
        traced = run_once(
            cliff_at(rate, True), CLIFF.parent, out / f"traced-{rate}", f"traced {rate}/s"
        )
        profiled = run_once(
            cliff_at(rate, False), CLIFF.parent, out / f"profile-{rate}", f"profiled {rate}/s"
        )
        if rate >= fit_from:
            pairs.append((profiled, traced))
    return pairs


def run_calibration(out: Path) -> list[Path]:
    """Step 2: each calibration file twice."""
    folders = []
    for round_ in (1, 2):
        for name in CALIBRATION:
            path = ROOT / "bench" / "scenarios" / "cpu" / f"{name}.toml"
            data = tomllib.loads(path.read_text())
            folders.append(run_once(data, path.parent, out / f"{name}-{round_}", name))
    return folders


def header(calibration: list[Path]) -> list[str]:
    """Where and when the costs were fitted, and the machine's speed then."""
    probe = ", ".join(f"{testbed_cores(f):.3f}" for f in calibration if f.name in PROBE_RUNS)
    return [
        f"CPU costs fitted by bench/cpu_refit.py at commit {commit()}, "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC,",
        f"on {machine()}.",
        f"The probe (calib-1p-signed.toml's node CPU, cores): {probe}.",
        'Set beside costs = "measured" in a scenario\'s [cpu].',
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--out", type=Path, required=True, help="results folder")
    parser.add_argument("--rates", type=int, nargs="+", default=[25, 50, 80, 120, 160, 200])
    parser.add_argument("--fit-from", type=int, default=80, help="lowest rate fitted (msg/s)")
    args = parser.parse_args()
    print("1. the cliff file at each rate, traced and profiled", flush=True)
    pairs = run_cliff(args.out, args.rates, args.fit_from)
    print("2. the calibration runs", flush=True)
    calibration = run_calibration(args.out)
    print(f"3. each goroutine's costs, over {args.fit_from}-{max(args.rates)} msg/s", flush=True)
    costs = fit_turns(pairs)
    print("4. the node's wake-up, on the calibration runs", flush=True)
    given = {name: f"{round(us * 1000)}ns" for name, us in costs.items()}
    costs["per_node_wakeup"] = fit_wakeup(calibration, given)
    target = args.out / "costs.toml"
    target.write_text(as_toml(costs, header(calibration)))
    print(f"\n{target}:\n{target.read_text()}")


if __name__ == "__main__":
    main()
