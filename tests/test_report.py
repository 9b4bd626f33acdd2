"""report.html is one offline page, and `gossiplab report` rebuilds it from the tables."""

from __future__ import annotations

import base64
import dataclasses
import json
import re
import shutil
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from gossiplab.analysis.results import write_results
from gossiplab.analysis.tables import RunTables, empty_table, from_rows
from gossiplab.errors import ResultsError
from gossiplab.report.plots import resource_samples
from gossiplab.report.run_report import build_report

MS = 1_000_000
FIGURES = 12
"""Figures of every run; testbed runs (with a resources table) add CPU and memory."""
SCENARIO = 'name = "line"\nseed = 7\n'
DATA_URI_IMG = re.compile(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)"')


def run_info() -> dict[str, Any]:
    return {
        "nodes": 5,
        "subscribers": [5],
        "backend": "model",
        "seed": 7,
        "scenario_name": "line",
        "scenario_hash": "0123abcd",
        "versions": {"gossiplab": "0.1.0"},
        "wall_time_s": 0.25,
        "events": 42,
        "warmup_ns": 0,
        "end_ns": 100 * MS,
    }


def run_tables() -> RunTables:
    """Two messages along the line 0-1-2-3-4, the second with a duplicate, and some gossip."""
    deliveries = [(0, i, i * 10 * MS, i - 1, i, 0) for i in range(1, 5)]
    deliveries += [(1, i, (50 + i * 12) * MS, i - 1, i, 1 if i == 2 else 0) for i in range(1, 5)]
    return RunTables(
        publishes=from_rows(
            "publishes", [(0, 0, 0, 0, 100, 0, 0, 4, 0), (1, 0, 50 * MS, 50 * MS, 100, 0, 1, 5, 0)]
        ),
        deliveries=from_rows("deliveries", deliveries),
        traffic=from_rows(
            "traffic",
            [(i, "payload", 2, 300, 2, 300) for i in range(4)]
            + [(i, "ihave", 2, 40, 2, 40) for i in range(5)]
            + [(i, "graft", 1, 10, 1, 10) for i in range(5)],
        ),
        drops=from_rows("drops", [(3, 4, "payload", "queue-full", 2)]),
    )


def empty_tables() -> RunTables:
    return RunTables(
        *(empty_table(name) for name in ("publishes", "deliveries", "traffic", "drops"))
    )


def test_report_embeds_every_figure_and_references_nothing_online(tmp_path: Path) -> None:
    out = write_results(tmp_path / "run", run_tables(), SCENARIO, run_info())
    html = (out / "report.html").read_text()

    embedded = DATA_URI_IMG.findall(html)
    pngs = sorted((out / "plots").glob("*.png"))
    assert len(embedded) == len(pngs) == FIGURES
    assert {base64.b64decode(data) for data in embedded} == {png.read_bytes() for png in pngs}
    assert re.search(r"https?://", html) is None
    assert "<script" not in html
    assert "<link" not in html


def test_report_shows_header_headline_traffic_and_scenario(tmp_path: Path) -> None:
    out = write_results(tmp_path / "run", run_tables(), SCENARIO, run_info())
    html = (out / "report.html").read_text()

    for text in ("line", "model", "0123abcd", "Delivery ratio", "RMR", "Payload amplification"):
        assert text in html
    assert "<td>ihave</td>" in html
    assert "<td>queue-full</td>" in html
    assert "seed = 7" in html


def test_figures_with_nothing_to_show_say_no_data(tmp_path: Path) -> None:
    out = write_results(tmp_path / "run", empty_tables(), SCENARIO, run_info())
    html = (out / "report.html").read_text()

    assert html.count("no data to plot") == FIGURES - 1
    assert "no drops: no node discarded anything" in html
    assert "<img" not in html
    assert list((out / "plots").glob("*.png")) == []


def test_scenario_text_is_escaped(tmp_path: Path) -> None:
    scenario = 'name = "<script>alert(1)</script>"\n'
    out = write_results(tmp_path / "run", run_tables(), scenario, run_info())
    html = (out / "report.html").read_text()
    assert "<script" not in html
    assert "&lt;script&gt;" in html


def test_build_report_rebuilds_the_same_summary_from_the_folder(tmp_path: Path) -> None:
    out = write_results(tmp_path / "run", run_tables(), SCENARIO, run_info())
    original = (out / "summary.json").read_text()
    (out / "report.html").unlink()
    shutil.rmtree(out / "plots")
    # Only the run section survives: every metric must come back from the tables alone.
    run_only = {"run": json.loads(original)["run"]}
    (out / "summary.json").write_text(json.dumps(run_only))

    report = build_report(out)
    assert report == out / "report.html"
    assert (out / "summary.json").read_text() == original
    assert len(DATA_URI_IMG.findall(report.read_text())) == FIGURES
    assert len(list((out / "plots").glob("*.png"))) == FIGURES


def test_build_report_keeps_the_run_section_as_written(tmp_path: Path) -> None:
    out = write_results(tmp_path / "run", run_tables(), SCENARIO, run_info())
    summary = json.loads((out / "summary.json").read_text())
    summary["run"]["note"] = "added by the runner"
    (out / "summary.json").write_text(json.dumps(summary))

    build_report(out)
    assert json.loads((out / "summary.json").read_text())["run"]["note"] == "added by the runner"


def test_build_report_on_a_missing_folder_says_so(tmp_path: Path) -> None:
    with pytest.raises(ResultsError, match="does not exist"):
        build_report(tmp_path / "missing")


def resources(nodes: int = 3) -> Any:
    """Node i uses (i + 1) × 0.25 cores and grows by 1 MiB a second, sampled each 500 ms."""
    rows = [
        (node, t * 500 * MS, (node + 1) * 0.25 * t * 0.5, (40 + t // 2) * 2**20, *(t,) * 4)
        + (None,) * 2
        for node in range(nodes)
        for t in range(6)
    ]
    return from_rows("resources", rows)


def test_a_testbed_run_adds_cpu_and_memory(tmp_path: Path) -> None:
    tables = dataclasses.replace(run_tables(), resources=resources())
    out = write_results(tmp_path / "run", tables, SCENARIO, run_info())
    html = (out / "report.html").read_text()

    assert (out / "plots" / "resources.png").is_file()
    assert len(DATA_URI_IMG.findall(html)) == FIGURES + 1
    assert "CPU and memory over time" in html


def test_cpu_is_the_growth_of_cumulative_cpu_seconds_over_time() -> None:
    samples = resource_samples(resources()).drop_nulls("cores")
    for node in range(3):
        cores = samples.filter(pl.col("node") == node)["cores"].to_list()
        assert cores == pytest.approx([(node + 1) * 0.25] * 5)
    assert samples.filter(pl.col("node") == 0)["rss_mib"].to_list() == [40, 41, 41, 42, 42]


def test_a_model_run_has_no_cpu_and_memory_section(tmp_path: Path) -> None:
    out = write_results(tmp_path / "run", run_tables(), SCENARIO, run_info())
    assert "CPU and memory" not in (out / "report.html").read_text()
    assert not (out / "plots" / "resources.png").exists()


def test_a_headline_that_hides_losses_is_flagged_and_timed_over_all_messages(
    tmp_path: Path,
) -> None:
    # Message 1 never reaches node 4: the dissemination percentiles cover 1 of 2 messages.
    full = run_tables()
    lossy = dataclasses.replace(
        full,
        deliveries=full.deliveries.filter(~((pl.col("msg") == 1) & (pl.col("node") == 4))),
    )
    html = write_results(tmp_path / "lossy", lossy, SCENARIO, run_info()) / "report.html"
    text = html.read_text()
    assert "Warning: the dissemination percentiles cover only 1 of 2 messages (50.0%)" in text
    # 100 % of the nodes over both messages: rank ceil(0.9 × 2) = 2 is the lost one.
    row = re.search(r"<td>100%</td><td[^>]*>1 of 2</td>(.*?)</tr>", text)
    assert row is not None
    # p50 (rank 1) is message 0's 40 ms; p90, p95, p99 and max fall on message 1.
    assert re.findall(r"<td[^>]*>([^<]*)</td>", row.group(1)) == ["40.00", *["never"] * 4]
    clean = write_results(tmp_path / "full", full, SCENARIO, run_info()) / "report.html"
    assert "Warning:" not in clean.read_text()


def test_measured_traffic_and_copies_back_to_the_publisher_are_shown(tmp_path: Path) -> None:
    # Message 1 came back to its publisher twice; message 0 is in the warm-up (50 ms), so
    # the measured traffic is message 1's alone: 4 payload copies of 110 B and 3 IHAVE ids
    # of 20 B.
    tables = run_tables()
    publishes = tables.publishes.with_columns(
        publisher_duplicates=pl.Series([0, 2], dtype=pl.UInt32)
    )
    per_message = from_rows(
        "message_traffic",
        [(0, "payload", 4, 400), (1, "payload", 4, 440), (1, "ihave", 3, 60)],
    )
    tables = dataclasses.replace(tables, publishes=publishes, message_traffic=per_message)
    info = {**run_info(), "warmup_ns": 10 * MS}
    text = (write_results(tmp_path / "run", tables, SCENARIO, info) / "report.html").read_text()
    assert "Copies back to their publishers: 2." in text
    assert "Traffic that names one of the 1 measured messages" in text
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", text.split("Traffic that names one of the")[1])
    assert cells[:6] == ["payload", "4", "440 B", "ihave", "3", "60 B"]
    assert ["all", "", "500 B"] in [cells[i : i + 3] for i in range(len(cells) - 2)]
    plain = write_results(tmp_path / "plain", run_tables(), SCENARIO, run_info())
    assert "Traffic of the measured messages" not in (plain / "report.html").read_text()
