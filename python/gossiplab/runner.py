"""Run one scenario end to end: build, simulate, analyse, write the results folder.

`run()` is the API for notebooks and scripts; the CLI's `run` command is a thin layer
over it that adds a progress bar.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import platform
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gossiplab import __version__
from gossiplab.analysis.liveness import message_lifetime_ns
from gossiplab.analysis.results import write_results
from gossiplab.backends.model import ModelRun, ProgressCallback, run_model
from gossiplab.errors import Problem, ScenarioError
from gossiplab.estimate import available_memory, check_fits, estimate
from gossiplab.faults import down_intervals, engine_faults, unsubscribed_intervals
from gossiplab.scenario import Scenario, load_scenario, scenario_hash, scenario_to_toml
from gossiplab.topology import Topology, build_topology
from gossiplab.workload import Schedule, build_schedule, end_time_ns

if TYPE_CHECKING:
    from gossiplab.backends.simnet import SimnetRun
    from gossiplab.backends.testbed import TestbedRun

RESULTS_ROOT = Path("results")
ENGINE_SWITCH_INTERVAL_S = 1e-4
PREPARE_REPORT_FROM_S = 2.0
"""Model runs estimated to take this long load the report's modules while the engine runs;
a shorter engine would hide little of it and be slowed down (estimates run high)."""


@dataclass(frozen=True)
class RunResult:
    out_dir: Path
    summary: dict[str, Any]

    @property
    def report(self) -> Path:
        return self.out_dir / "report.html"


def default_out_dir(s: Scenario, now: dt.datetime | None = None) -> Path:
    """results/<name>-<UTC time>, so that no run ever overwrites another by default."""
    stamp = (now or dt.datetime.now(dt.UTC)).strftime("%Y%m%d-%H%M%S")
    return RESULTS_ROOT / f"{s.name}-{stamp}"


def _versions(engine_version: str) -> dict[str, str]:
    versions = {"gossiplab": __version__, "engine": engine_version}
    versions["python"] = platform.python_version()
    for package in ("polars", "pyarrow", "numpy", "networkx"):
        versions[package] = metadata.version(package)
    return versions


def _partial_info(s: Scenario) -> dict[str, int]:
    partial = s.workload.partial
    if partial is None:
        return {}
    return {"partial_part_bytes": partial.part_size + partial.part_overhead}


def _run_backend(
    s: Scenario,
    topology: Topology,
    schedule: Schedule,
    end_ns: int,
    progress: ProgressCallback | None,
) -> ModelRun | TestbedRun | SimnetRun:
    """Produce the event tables with the scenario's backend."""
    if s.backend == "model":
        return run_model(s, topology, schedule, end_ns, progress)
    if s.backend == "testbed":
        # Imported here: the testbed pulls in subprocess and namespace handling that
        # model runs never need.
        from gossiplab.backends.testbed import run_testbed

        return run_testbed(s, topology, schedule, end_ns, progress)
    if s.backend == "simnet":
        from gossiplab.backends.simnet import run_simnet

        return run_simnet(s, topology, schedule, end_ns, progress)
    raise ScenarioError(
        [Problem("backend", f"'{s.backend}' is not available yet", 'use backend = "model"')]
    )


@contextlib.contextmanager
def _preparing_report() -> Iterator[None]:
    """While the engine runs (on one core, without the GIL), load the report's modules."""
    preparing = threading.Thread(target=_prepare_report, name="prepare-report", daemon=True)
    preparing.start()
    # Between its steps the engine needs the GIL back at once, not after the default 5 ms.
    interval = sys.getswitchinterval()
    sys.setswitchinterval(ENGINE_SWITCH_INTERVAL_S)
    try:
        yield
    finally:
        sys.setswitchinterval(interval)
        preparing.join()  # matplotlib is not made for two threads drawing at once


def _prepare_report() -> None:
    """Import matplotlib and the report's modules and draw once, ahead of the report."""
    # Only a head start: if anything fails, the report's own import raises it where it
    # is handled.
    with contextlib.suppress(Exception):
        from gossiplab.report import drawing, run_report  # noqa: F401 (run_report: loaded, not used here)

        drawing.warm_up()


def run(
    scenario: str | Path | Scenario,
    out_dir: str | Path | None = None,
    *,
    force: bool = False,
    progress: ProgressCallback | None = None,
) -> RunResult:
    """Run `scenario` (a file or a loaded Scenario) and write its results folder."""
    s = scenario if isinstance(scenario, Scenario) else load_scenario(scenario)
    topology = build_topology(s)
    schedule = build_schedule(s, topology.nodes)
    end_ns = end_time_ns(s, schedule)
    expected = estimate(s, topology, schedule)
    if s.backend == "model":
        check_fits(expected, available_memory())
    alongside = s.backend == "model" and expected.seconds >= PREPARE_REPORT_FROM_S
    with _preparing_report() if alongside else contextlib.nullcontext():
        started = time.perf_counter()
        model = _run_backend(s, topology, schedule, end_ns, progress)
        wall = time.perf_counter() - started
    scheduled = engine_faults(s, topology.nodes)
    run_info = {
        "backend": s.backend,
        "scenario_name": s.name,
        "scenario_hash": scenario_hash(s),
        "seed": s.seed,
        "nodes": topology.nodes,
        "edges": len(topology.edges),
        "subscribers": [topology.nodes] * s.workload.topics,
        "warmup_ns": s.workload.warmup,
        "exclude_first": s.workload.exclude_first,
        "end_ns": end_ns,
        # Faults: nodes down while a message spreads are left out of its delivery ratio;
        # a message spreads for as long as gossip can still recover it.
        "down": down_intervals(scheduled["faults"]),
        # Nodes out of a topic while its message spreads are left out the same way.
        "unsubscribed": unsubscribed_intervals(scheduled["subscription_changes"]),
        "message_lifetime_ns": message_lifetime_ns(s),
        # Partial messages: bytes of one part with its overhead (summary.partial).
        **_partial_info(s),
        "events": model.events,
        "estimate": {
            "memory_bytes": expected.memory_bytes,
            "events": expected.events,
            "seconds": round(expected.seconds, 1),
        },
        "wall_time_s": round(wall, 3),
        "events_per_s": round(model.events / wall) if wall > 0 else None,
        "versions": _versions(model.engine_version),
        "finished_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }
    backend_info = getattr(model, "run_info", None)
    if backend_info is not None:  # a real backend's own record, under its name
        run_info[s.backend] = backend_info
        run_info["versions"].update(getattr(model, "versions", {}))
    target = Path(out_dir) if out_dir is not None else default_out_dir(s)
    written = write_results(target, model.tables, scenario_to_toml(s), run_info, overwrite=force)
    attach = getattr(model, "attach", None)
    if attach is not None:  # testbed: raw profiles (and traces if kept) join the results
        attach(written)
    summary = json.loads((written / "summary.json").read_text(encoding="utf-8"))
    return RunResult(written, summary)
