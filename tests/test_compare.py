"""`gossiplab compare`: runs side by side, with numbers known before the runs.

Floodsub on a line of n nodes with one-way latency L: dissemination (n - 1) × L, last
delivery hop n - 1, no duplicates (each node hears a message from one neighbour only).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from gossiplab.analysis.digest import load_digest
from gossiplab.multirun.compare import CompareError, compare_runs, expand_runs
from gossiplab.runner import run
from gossiplab.scenario import parse_scenario

DATA_URI_IMG = re.compile(r'<img src="data:image/png;base64,[A-Za-z0-9+/=]+"')
OVERLAYS = 6


def line_run(tmp_path: Path, name: str, nodes: int, latency: str) -> Path:
    s = parse_scenario(
        {
            "name": name,
            "topology": {"kind": "line", "nodes": nodes},
            "network": {"latency": latency},
            "protocol": {"name": "floodsub"},
            "workload": {"messages": 5, "publishers": [0], "warmup": "1s", "cooldown": "1s"},
        },
        base_dir=tmp_path,
    )
    return run(s, tmp_path / name).out_dir


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("runs")
    return line_run(root, "short", 4, "10ms"), line_run(root, "long", 6, "20ms")


def test_compare_writes_overlays_and_a_side_by_side_table(
    tmp_path: Path, two_runs: tuple[Path, Path]
) -> None:
    page = compare_runs(list(two_runs), tmp_path / "cmp")

    table = pl.read_csv(tmp_path / "cmp" / "headline.csv", infer_schema_length=0)
    assert table.columns == ["metric", "label", "short", "long"]
    rows = {row[0]: row[2:] for row in table.iter_rows()}
    assert rows["dissemination_p50_ms"] == ("30.00", "100.00")  # 3 × 10 ms, 5 × 20 ms
    assert rows["ldh_mean"] == ("3.00", "5.00")
    assert rows["delivery_ratio"] == ("1.0000", "1.0000")
    assert rows["duplicates_mean"] == ("0.000", "0.000")

    html = page.read_text()
    assert len(DATA_URI_IMG.findall(html)) == OVERLAYS
    assert len(list((tmp_path / "cmp" / "plots").glob("*.png"))) == OVERLAYS
    assert "<script" not in html and re.search(r"https?://", html) is None
    assert "<th>short</th>" in html and "<th>long</th>" in html


def test_a_digest_keeps_every_dissemination_time(two_runs: tuple[Path, Path]) -> None:
    short = load_digest(two_runs[0], "short")
    assert short.dissemination_ms.tolist() == [30.0] * 5
    assert short.last_delivery_hop == {3: 5}
    assert short.messages == 5


def test_a_sweep_folder_stands_for_its_finished_points(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    for name in ("a", "b"):
        (sweep / name).symlink_to(line_run(tmp_path, f"run-{name}", 3, "5ms"))
    pl.DataFrame({"point": ["a", "b", "c"], "status": ["ok", "ok", "failed"]}).write_parquet(
        sweep / "points.parquet"
    )
    refs = expand_runs([sweep])
    assert [(r.folder, r.label) for r in refs] == [(sweep / "a", "a"), (sweep / "b", "b")]


def test_labels_must_match_the_folders(two_runs: tuple[Path, Path]) -> None:
    with pytest.raises(CompareError, match="one label per folder"):
        expand_runs(list(two_runs), ["only one"])
    refs = expand_runs(list(two_runs), ["fast", "slow"])
    assert [r.label for r in refs] == ["fast", "slow"]


def test_compare_needs_two_runs_and_real_folders(
    tmp_path: Path, two_runs: tuple[Path, Path]
) -> None:
    with pytest.raises(CompareError, match="at least two runs"):
        expand_runs([two_runs[0]])
    with pytest.raises(CompareError, match="does not exist"):
        expand_runs([two_runs[0], tmp_path / "missing"])
    with pytest.raises(CompareError, match="neither a results folder"):
        expand_runs([two_runs[0], tmp_path])


def test_cli_compare_prints_the_table_and_refuses_to_overwrite(
    tmp_path: Path, two_runs: tuple[Path, Path]
) -> None:
    def gossiplab(*args: str | Path) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "gossiplab", *map(str, args)]
        return subprocess.run(command, capture_output=True, text=True, timeout=300)

    out = tmp_path / "cmp"
    done = gossiplab("compare", *two_runs, "-o", out)
    assert done.returncode == 0, done.stderr
    assert "Dissemination p50 (ms)" in done.stdout and "100.00" in done.stdout
    assert (out / "compare.html").is_file()
    again = gossiplab("compare", *two_runs, "-o", out)
    assert again.returncode == 2 and "--force" in again.stderr
    assert "Traceback" not in again.stderr
    missing = gossiplab("compare", two_runs[0], tmp_path / "nope")
    assert missing.returncode == 2 and "does not exist" in missing.stderr
