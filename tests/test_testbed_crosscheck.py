"""`gossiplab crosscheck` on a scenario both backends run: five nodes on a line.

On a line there is one path, so both backends must deliver everything over exactly
4 hops for the farthest node; their latencies differ only by the real nodes' processing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gossiplab.cli.main import app
from testbed_marks import REAL_NODES

pytestmark = REAL_NODES

SCENARIO = """
name = "xc-line"
seed = 9
backend = "model"
[topology]
kind = "line"
nodes = 5
[network]
latency = "10ms"
[workload]
messages = 5
rate = "5/s"
publishers = [0]
warmup = "3s"
cooldown = "1s"
"""


def test_crosscheck_writes_both_runs_the_table_and_the_overlays(tmp_path: Path) -> None:
    scenario = tmp_path / "line.toml"
    scenario.write_text(SCENARIO)
    out = tmp_path / "xc"
    result = CliRunner().invoke(app, ["crosscheck", str(scenario), "-o", str(out)])
    assert result.exit_code == 0, result.output
    rows = {row["metric"]: row for row in json.loads((out / "crosscheck.json").read_text())}
    testbed_run = json.loads((out / "testbed" / "summary.json").read_text())["run"]["testbed"]
    assert rows["delivery ratio"]["model"] == rows["delivery ratio"]["testbed"] == 1.0, json.dumps(
        testbed_run, indent=1
    )
    assert rows["delivery ratio"]["relative"] == 0.0
    assert rows["LDH = 4 (share of messages)"]["testbed"] == 1.0
    assert rows["LDH = 4 (share of messages)"]["model"] == 1.0
    # The model's 4 × 10 ms exactly; the testbed at least that, plus a little per hop.
    assert rows["dissemination p50"]["model"] == pytest.approx(40.0, abs=1.0)
    assert 40.0 <= rows["dissemination p50"]["testbed"] <= 40.0 + 4 * 15.0
    assert "| delivery ratio | 1 | 1 | +0.0% |" in (out / "crosscheck.md").read_text()
    assert (out / "model" / "summary.json").is_file()
    assert (out / "testbed" / "resources.parquet").is_file()
    # The testbed samples its nodes' CPU (in 10 ms ticks: five light messages may use
    # none); this scenario sets no CPU cost, so the model has no resources table and no
    # value in the row.
    cpu = rows["node CPU while publishing"]
    assert cpu["unit"] == "cores" and cpu["model"] is None and cpu["testbed"] >= 0
    assert not (out / "model" / "resources.parquet").exists()
    page = (out / "crosscheck.html").read_text()
    assert "data:image/png;base64," in page and "testbed vs model" in page
    # By time of publication: both delivered every message of every interval.
    assert "<h2>By time of publication</h2>" in page
    assert (out / "crosscheck-over-time.png").read_bytes().startswith(b"\x89PNG")
    intervals = [
        line.split(" | ")
        for line in (out / "crosscheck.md").read_text().splitlines()
        if line.startswith("| ") and line[2].isdigit() and line.count(" / ") >= 4
    ]
    assert intervals and all(cells[2] == "1.000 / 1.000" for cells in intervals), intervals
    assert sum(int(cells[1].split(" / ")[0]) for cells in intervals) == 5
    # The same real run compared again (--partner-run): the nodes do not run again, the
    # testbed's numbers are the same.
    again = tmp_path / "xc-again"
    args = ["crosscheck", str(scenario), "-o", str(again), "--partner-run", str(out / "testbed")]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    rerun = {row["metric"]: row for row in json.loads((again / "crosscheck.json").read_text())}
    assert {m: r["testbed"] for m, r in rerun.items()} == {m: r["testbed"] for m, r in rows.items()}
    # Two real runs, the first of them finished: the nodes run once more, into testbed-2/,
    # and the table gives the median of the two (their mean) and their range.
    twice = tmp_path / "xc-twice"
    args = ["crosscheck", str(scenario), "-o", str(twice), "--runs", "2"]
    result = CliRunner().invoke(app, [*args, "--partner-run", str(out / "testbed")])
    assert result.exit_code == 0, result.output
    second = json.loads((twice / "testbed-2" / "summary.json").read_text())
    assert second["run"]["backend"] == "testbed" and second["delivery"]["ratio"] == 1.0
    both = {row["metric"]: row for row in json.loads((twice / "crosscheck.json").read_text())}
    p50s = [rows["dissemination p50"]["testbed"], second["dissemination_ms"]["p50"]]
    assert both["dissemination p50"]["testbed_runs"] == p50s
    assert both["dissemination p50"]["testbed"] == pytest.approx(sum(p50s) / 2)
    assert "testbed (median of 2 runs)" in (twice / "crosscheck.md").read_text()


def test_crosscheck_refuses_to_overwrite(tmp_path: Path) -> None:
    scenario = tmp_path / "line.toml"
    scenario.write_text(SCENARIO)
    (tmp_path / "xc").mkdir()
    result = CliRunner().invoke(app, ["crosscheck", str(scenario), "-o", str(tmp_path / "xc")])
    assert result.exit_code == 2 and "--force" in result.output
