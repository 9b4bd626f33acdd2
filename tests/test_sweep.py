"""Sweeps: every point runs once into its own folder, a killed sweep resumes, failures are kept.

The points are floodsub on a line of n nodes with one-way latency L, where every number is
known in advance: node k gets a message k links from the publisher (node 0), so the
dissemination time is (n - 1) × L and the last delivery hop is n - 1.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from gossiplab.backends import model as model_backend
from gossiplab.errors import Problem
from gossiplab.multirun.sweep import SweepError, folder_name, plan_sweep, run_sweep, value_text
from gossiplab.scenario import Scenario

LINE_SWEEP = """
name = "line"
seed = 3

[topology]
kind = "line"
nodes = 3

[network]
latency = "10ms"

[protocol]
name = "floodsub"

[workload]
messages = 4
rate = "10/s"
publishers = [0]
warmup = "1s"
cooldown = "1s"

[sweep]
{sweep}
"""


def sweep_file(tmp_path: Path, sweep: str, latency: str = "10ms") -> Path:
    path = tmp_path / "sweep.toml"
    text = LINE_SWEEP.format(sweep=sweep).replace('latency = "10ms"', f'latency = "{latency}"')
    path.write_text(text)
    return path


def gossiplab(*args: str | Path, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gossiplab", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        **kwargs,
    )


def fingerprint(folder: Path) -> tuple[int, int, int]:
    """Inode and mtime of a results folder and of its summary: unchanged iff not rewritten."""
    summary = (folder / "summary.json").stat()
    return folder.stat().st_ino, summary.st_ino, summary.st_mtime_ns


# ------------------------------------------------------------------------------------------
# Folder names
# ------------------------------------------------------------------------------------------


def test_folder_names_read_like_the_assignments_and_stay_file_safe() -> None:
    assert folder_name({"topology.m": 6, "network.latency": "100ms"}) == (
        "topology.m=6,network.latency=100ms"
    )
    # '/' cannot be in a file name: it is percent-encoded, so the name stays unambiguous.
    assert folder_name({"network.upload": "10MB/s"}) == "network.upload=10MB%2Fs"
    assert "/" not in folder_name({"a": "x/y"})
    assert folder_name({}) == "base"
    latency = {"distribution": "uniform", "min": "1ms", "max": "5ms"}
    assert value_text(latency) == "{distribution=uniform,min=1ms,max=5ms}"


def test_very_long_folder_names_are_cut_but_stay_distinct() -> None:
    long_a = folder_name({"description": "a" * 400})
    long_b = folder_name({"description": "a" * 399 + "b"})
    assert len(long_a.encode()) <= 200
    assert long_a != long_b


# ------------------------------------------------------------------------------------------
# Running
# ------------------------------------------------------------------------------------------


def test_a_sweep_runs_every_point_and_tabulates_known_outcomes(tmp_path: Path) -> None:
    path = sweep_file(tmp_path, '"topology.nodes" = [3, 5]\n"network.latency" = ["10ms", "20ms"]')
    outcome = run_sweep(path, tmp_path / "out", workers=2)

    expected = {  # (nodes, latency ms) -> dissemination ms, LDH
        (n, latency): ((n - 1) * latency, n - 1) for n in (3, 5) for latency in (10, 20)
    }
    table = pl.read_parquet(tmp_path / "out" / "points.parquet")
    assert table.height == 4
    assert table["status"].to_list() == ["ok"] * 4
    assert table["topology.nodes"].to_list() == [3, 3, 5, 5]  # last key changes fastest
    assert table["network.latency"].to_list() == ["10ms", "20ms", "10ms", "20ms"]
    for row in table.iter_rows(named=True):
        latency = int(row["network.latency"].removesuffix("ms"))
        dissemination, ldh = expected[(row["topology.nodes"], latency)]
        assert row["dissemination_p50_ms"] == pytest.approx(dissemination)
        assert row["dissemination_max_ms"] == pytest.approx(dissemination)
        assert row["ldh_mean"] == pytest.approx(ldh)
        assert row["delivery_ratio"] == 1.0
        assert (tmp_path / "out" / row["point"] / "report.html").is_file()
    assert {p.name for p in (tmp_path / "out").iterdir() if p.is_dir()} == {
        "plots",
        "topology.nodes=3,network.latency=10ms",
        "topology.nodes=3,network.latency=20ms",
        "topology.nodes=5,network.latency=10ms",
        "topology.nodes=5,network.latency=20ms",
    }
    csv = pl.read_csv(tmp_path / "out" / "points.csv")
    assert csv["point"].to_list() == table["point"].to_list()
    assert (tmp_path / "out" / "sweep.toml").read_text() == path.read_text()
    html = outcome.report.read_text()
    assert "Metrics vs topology.nodes" in html and "Metrics vs network.latency" in html
    assert "<script" not in html and "http://" not in html and "https://" not in html


def test_a_failing_point_is_kept_with_its_reason_and_runs_when_supported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = sweep_file(tmp_path, '"network.latency" = ["10ms", "20ms", "30ms"]')
    supported = model_backend.unsupported_features

    def refuse_20ms(s: Scenario) -> list[Problem]:
        refused = [Problem("network.latency", "20 ms is not modelled yet", "wait")]
        return supported(s) + (refused if s.network.latency == 20_000_000 else [])

    # A backend that refuses one point, as the model refused packet loss before it had it.
    monkeypatch.setattr(model_backend, "unsupported_features", refuse_20ms)
    first = run_sweep(path, tmp_path / "out", workers=1)
    assert [r.status for r in first.results] == ["ok", "failed", "ok"]
    assert first.results[1].reason == "network.latency: 20 ms is not modelled yet (wait)"
    table = pl.read_csv(tmp_path / "out" / "points.csv")
    assert table["status"].to_list() == ["ok", "failed", "ok"]
    assert table["dissemination_p50_ms"].to_list() == [20.0, None, 60.0]
    assert not (tmp_path / "out" / "network.latency=20ms").exists()
    assert "20 ms is not modelled yet" in first.report.read_text()
    finished = {
        p: fingerprint(tmp_path / "out" / p)
        for p in ("network.latency=10ms", "network.latency=30ms")
    }

    # The backend learns the feature: running the sweep again fills in only that point.
    monkeypatch.setattr(model_backend, "unsupported_features", supported)
    second = run_sweep(path, tmp_path / "out", workers=1)
    assert [r.status for r in second.results] == ["ok"] * 3
    assert [r.resumed for r in second.results] == [True, False, True]
    assert second.table["dissemination_p50_ms"].to_list() == [20.0, 40.0, 60.0]
    assert {p: fingerprint(tmp_path / "out" / p) for p in finished} == finished


def test_a_sweep_killed_half_way_resumes_without_redoing_finished_points(tmp_path: Path) -> None:
    path = sweep_file(tmp_path, '"topology.nodes" = [3, 4, 5, 6, 7]')
    out = tmp_path / "out"
    names = [f"topology.nodes={n}" for n in (3, 4, 5, 6, 7)]
    # One worker, so points finish one after another; its own session, so the kill takes
    # the sweep and its worker processes together, as a kill -9 of a terminal's job would.
    sweep = subprocess.Popen(
        [sys.executable, "-m", "gossiplab", "sweep", str(path), "-o", str(out), "-j", "1", "-q"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while sum((out / name).is_dir() for name in names) < 2:
            assert sweep.poll() is None, "the sweep ended before it could be killed"
            assert time.monotonic() < deadline, "no point finished within 2 minutes"
            time.sleep(0.02)
        os.killpg(sweep.pid, signal.SIGKILL)
    finally:
        sweep.wait(timeout=30)
    finished = {name: fingerprint(out / name) for name in names if (out / name).is_dir()}
    assert 2 <= len(finished) < len(names)
    assert not (out / "points.csv").exists()  # the table is written when the sweep ends

    resumed = gossiplab("sweep", path, "-o", out, "-j", "2")
    assert resumed.returncode == 0, resumed.stderr
    assert f"{len(finished)} of {len(names)} points already finished" in resumed.stderr
    assert f"({len(finished)} from an earlier run)" in resumed.stdout
    assert {name: fingerprint(out / name) for name in finished} == finished
    table = pl.read_csv(out / "points.csv")
    assert table["status"].to_list() == ["ok"] * len(names)
    # Line of n nodes, 10 ms links: (n - 1) × 10 ms, however the run was interrupted.
    assert table["dissemination_p50_ms"].to_list() == [20.0, 30.0, 40.0, 50.0, 60.0]
    assert not [p.name for p in out.iterdir() if p.name.startswith(".")]


def test_a_changed_sweep_does_not_silently_mix_old_results(tmp_path: Path) -> None:
    path = sweep_file(tmp_path, '"topology.nodes" = [3]')
    run_sweep(path, tmp_path / "out", workers=1)
    changed = sweep_file(tmp_path, '"topology.nodes" = [3]', latency="30ms")
    with pytest.raises(SweepError, match=r"different scenario.*--force"):
        run_sweep(changed, tmp_path / "out", workers=1)
    outcome = run_sweep(changed, tmp_path / "out", workers=1, force=True)
    assert outcome.table["dissemination_p50_ms"].to_list() == [60.0]


def test_a_scenario_without_sweep_is_refused_with_a_hint(tmp_path: Path) -> None:
    path = tmp_path / "plain.toml"
    path.write_text('name = "plain"\n')
    with pytest.raises(SweepError, match=r"plain.toml has no \[sweep\] table"):
        plan_sweep(path)


def test_cli_sweep_reports_a_bad_sweep_key_without_a_traceback(tmp_path: Path) -> None:
    path = sweep_file(tmp_path, '"topology.nodez" = [3, 4]')
    done = gossiplab("sweep", path, "-o", tmp_path / "out")
    assert done.returncode == 2
    assert "topology.nodez" in done.stderr and "no such field" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists()
