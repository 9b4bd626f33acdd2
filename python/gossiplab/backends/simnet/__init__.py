"""The simnet backend: the scenario on real go-libp2p-pubsub hosts, all in one Go process,
over go-libp2p's simulated network in virtual time.

``run_simnet`` is what runner.py calls for ``backend = "simnet"``. It writes RUN.json
(runconfig.py), starts the Go runner (testbed/simnet, built once by binary.py) with a
progress bar over virtual time, converts the hosts' traces with the testbed's converter
(one conversion for both real backends) and returns the same event tables as the model,
plus the runner's own record (versions, wall and virtual time, peak memory).
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from gossiplab.analysis.tables import RunTables
from gossiplab.backends.model import ProgressCallback
from gossiplab.backends.simnet.binary import ensure_runner
from gossiplab.backends.simnet.errors import SimnetError
from gossiplab.backends.simnet.process import run_runner
from gossiplab.backends.simnet.runconfig import node_dir, run_config
from gossiplab.backends.simnet.support import check_supported, notes
from gossiplab.backends.testbed.convert import convert
from gossiplab.backends.testbed.nodeconfig import partial_plan
from gossiplab.geography import nodes_table
from gossiplab.scenario import Scenario
from gossiplab.topology import Topology
from gossiplab.workload import Schedule

RUN_FILE = "RUN.json"
OUT_DIR = "out"
RECORD_FILE = "simnet.json"  # the runner's own record of the run
ARTIFACTS_DIR = "simnet"  # in the results folder, with testbed.keep_traces
PUBSUB_MODULE = "github.com/libp2p/go-libp2p-pubsub"


@dataclass
class SimnetRun:
    """What runner.py needs (like backends.model.ModelRun) plus simnet's run info."""

    tables: RunTables
    events: int
    engine_version: str
    run_info: dict[str, Any]
    versions: dict[str, str]
    work: Path
    keep_traces: bool = False

    def attach(self, results_dir: Path) -> None:
        """Move the hosts' raw traces into the results folder if asked, then clean up."""
        if self.keep_traces:
            shutil.copytree(self.work / OUT_DIR, Path(results_dir) / ARTIFACTS_DIR)
        shutil.rmtree(self.work, ignore_errors=True)


def run_simnet(
    s: Scenario,
    topology: Topology,
    schedule: Schedule,
    end_ns: int,
    progress: ProgressCallback | None = None,
) -> SimnetRun:
    check_supported(s)
    binary = ensure_runner()
    work = Path(tempfile.mkdtemp(prefix=f"gossiplab-simnet-{s.name}-"))
    try:
        return _run(s, topology, schedule, end_ns, progress, binary, work)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise


def _run(
    s: Scenario,
    topology: Topology,
    schedule: Schedule,
    end_ns: int,
    progress: ProgressCallback | None,
    binary: Path,
    work: Path,
) -> SimnetRun:
    config = work / RUN_FILE
    config.write_text(json.dumps(run_config(s, topology, schedule, end_ns)), encoding="utf-8")
    out = work / OUT_DIR
    out.mkdir()
    started = time.monotonic()
    followed = run_runner(binary, config, out, end_ns, progress)
    wall_s = time.monotonic() - started
    record = _record(out)
    # Every timestamp the hosts wrote is virtual ns since the run's start: epoch 0.
    conversion = convert(
        {i: out / node_dir(i) for i in range(topology.nodes)},
        schedule,
        0,
        end_ns=end_ns,
        receipts=s.output.receipts,
        plan=partial_plan(s, schedule),
    )
    edges = topology.edges.tolist()
    tables = replace(
        conversion.tables,
        connections=conversion.opened(edges) if s.protocol.peer_exchange else None,
        nodes=nodes_table(s, topology.nodes),
    )
    versions = {str(k): str(v) for k, v in (record.get("versions") or {}).items()}
    info = {
        **{key: value for key, value in record.items() if key != "versions"},
        "runner_wall_s": wall_s,
        "phases": followed.phases,
        "warnings": followed.warnings,
        "speed_virtual_per_wall": _speed(record, end_ns, wall_s),
        "conversion": conversion.counts(),
        "connections": conversion.connections(edges),
        "notes": notes(s),
    }
    return SimnetRun(
        tables=tables,
        events=conversion.events,
        engine_version=f"go-libp2p-pubsub {versions.get(PUBSUB_MODULE, '?')} on simnet",
        run_info=info,
        versions=versions,
        work=work,
        keep_traces=s.testbed.keep_traces,
    )


def _record(out: Path) -> dict[str, Any]:
    try:
        record = json.loads((out / RECORD_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        message = f"the simnet runner finished without a readable {RECORD_FILE}: {err}"
        raise SimnetError(message) from err
    return record if isinstance(record, dict) else {}


def _speed(record: dict[str, Any], end_ns: int, wall_s: float) -> float | None:
    """Virtual seconds run per wall second (the runner's own wall time when it has one)."""
    wall = record.get("wall_s") or wall_s
    virtual_ns = record.get("virtual_ns") or end_ns
    return round(virtual_ns / 1e9 / wall, 3) if wall else None


__all__ = ["SimnetError", "SimnetRun", "run_simnet"]
