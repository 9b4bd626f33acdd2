"""Time one engine build on fixed inputs, to compare builds or inputs (A/B).

    python bench/engine_ab.py prepare SCENARIO OUT.pkl [measured] [FRAGMENT.toml]
        write the engine's inputs for SCENARIO (with `[cpu] costs = "measured"` if asked,
        and the tables of FRAGMENT.toml merged into the scenario's, key by key)
    python bench/engine_ab.py time ENGINE.so INPUTS.pkl [FRACTION]
        run that engine build on them (up to FRACTION of the run's end) and print
        wall seconds, CPU seconds and events
    python bench/engine_ab.py hash ENGINE.so INPUTS.pkl
        print a digest of the output tables, to check that two builds agree

Loading the engine from a file lets two builds run on the same inputs in turn, so that
a shared machine's load falls on both alike; count instructions with
`valgrind --tool=cachegrind --cache-sim=no` around `time ... 0.5`.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import pickle
import sys
import time
import tomllib
from pathlib import Path
from types import ModuleType
from typing import Any


def merge(data: dict[str, Any], fragment: dict[str, Any]) -> dict[str, Any]:
    """`data` with `fragment`'s keys set, tables merged key by key."""
    merged = dict(data)
    for key, value in fragment.items():
        old = merged.get(key)
        if isinstance(old, dict) and isinstance(value, dict):
            merged[key] = merge(old, value)
        else:
            merged[key] = value
    return merged


def prepare(scenario: str, out: str, measured: str = "", fragment: str = "") -> None:
    from gossiplab.backends.model import engine_args
    from gossiplab.scenario import parse_scenario
    from gossiplab.topology import build_topology
    from gossiplab.workload import build_schedule, end_time_ns

    data = tomllib.loads(Path(scenario).read_text())
    if measured:
        data["cpu"] = {"costs": "measured"}
    if fragment:
        data = merge(data, tomllib.loads(Path(fragment).read_text()))
    s = parse_scenario(data, Path(scenario).parent)
    topo = build_topology(s)
    sched = build_schedule(s, topo.nodes)
    end = end_time_ns(s, sched)
    with open(out, "wb") as f:
        pickle.dump((engine_args(s, topo, sched, end), end), f)


def load_engine(so: str) -> ModuleType:
    loader = importlib.machinery.ExtensionFileLoader("gossiplab._engine", so)
    spec = importlib.util.spec_from_loader("gossiplab._engine", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def inputs(pkl: str) -> tuple[tuple[Any, ...], int]:
    with open(pkl, "rb") as f:
        return pickle.load(f)


def timed(so: str, pkl: str, fraction: str = "1") -> None:
    engine = load_engine(so)
    args, end = inputs(pkl)
    wall, cpu = time.perf_counter(), time.process_time()
    e = engine.Engine(*args)
    e.run_until(int(end * float(fraction)))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(f"{wall:.3f} {cpu:.3f} {e.events}")


def digest(so: str, pkl: str) -> None:
    engine = load_engine(so)
    args, end = inputs(pkl)
    e = engine.Engine(*args)
    e.run_until(end)
    tables = e.tables()
    if isinstance(tables, dict):
        tables = sorted((k, repr(v)) for k, v in tables.items())
    print(hashlib.sha256(repr(tables).encode()).hexdigest()[:16], e.events)


if __name__ == "__main__":
    {"prepare": prepare, "time": timed, "hash": digest}[sys.argv[1]](*sys.argv[2:])
