"""`gossiplab sweep --ray ADDRESS` runs the points on a Ray cluster (here a local one).

The test starts a Ray instance of its own, points the CLI at its address, and checks that
every point came back complete: the folder a Ray worker wrote travels back as an archive,
so its tables must be byte for byte those of the same point run locally.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest

from gossiplab.multirun.sweep import plan_sweep
from gossiplab.runner import run

ray = pytest.importorskip(
    "ray", reason="ray is not installed: pip install -e '.[ray]' (make test installs it)"
)

SWEEP = """
name = "ray-line"
[topology]
kind = "line"
nodes = 4
[network]
latency = "10ms"
[protocol]
name = "floodsub"
[workload]
messages = 4
publishers = [0]
warmup = "1s"
cooldown = "1s"
[sweep]
"network.latency" = ["10ms", "30ms"]
"""


def gossiplab(*args: str | Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "gossiplab", *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def ray_address() -> Iterator[str]:
    context = ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield context.address_info["gcs_address"]
    finally:
        ray.shutdown()  # stops the instance this test started, and only it


def test_sweep_points_run_on_ray_and_come_back_complete(tmp_path: Path, ray_address: str) -> None:
    path = tmp_path / "sweep.toml"
    path.write_text(SWEEP)
    out = tmp_path / "out"
    done = gossiplab("sweep", path, "-o", out, "-q", "--ray", ray_address)
    assert done.returncode == 0, done.stderr

    table = pl.read_csv(out / "points.csv")
    assert table["status"].to_list() == ["ok", "ok"]
    # A line of 4 nodes: 3 links of 10 ms, then of 30 ms.
    assert table["dissemination_p50_ms"].to_list() == [30.0, 90.0]
    assert not [p.name for p in out.iterdir() if p.name.startswith(".")]

    point = plan_sweep(path).points[1]
    local = run(point.scenario, tmp_path / "local").out_dir
    for name in ("publishes", "deliveries", "traffic", "drops"):
        remote_bytes = (out / point.folder / f"{name}.parquet").read_bytes()
        assert remote_bytes == (local / f"{name}.parquet").read_bytes(), name


def test_an_unreachable_ray_cluster_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "sweep.toml"
    path.write_text(SWEEP)
    # Port 9 (discard) has nobody listening: the error comes at once, not after Ray's
    # own minute of retries.
    done = gossiplab("sweep", path, "-o", tmp_path / "out", "-q", "--ray", "127.0.0.1:9")
    assert done.returncode == 2
    assert "cannot connect to the Ray cluster at '127.0.0.1:9'" in done.stderr
    assert "Traceback" not in done.stderr
