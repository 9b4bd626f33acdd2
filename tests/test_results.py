"""The results folder: atomic writes, round trips, and errors that say what to do."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow.parquet as pq
import pytest
from polars.testing import assert_frame_equal

from gossiplab.analysis.results import load_results, write_results
from gossiplab.analysis.tables import RunTables, check_tables, empty_table, from_rows
from gossiplab.errors import ResultsError

MS = 1_000_000
SCENARIO = 'name = "line"\nseed = 7\n\n[topology]\nkind = "edges"\nnodes = 5\n'


def run_info(**extra: Any) -> dict[str, Any]:
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
        **extra,
    }


def line_tables() -> RunTables:
    """One message from node 0 along the line 0-1-2-3-4, one hop each 10 ms."""
    return RunTables(
        publishes=from_rows("publishes", [(0, 0, 0, 0, 100, 0, 0, 4, 0)]),
        deliveries=from_rows("deliveries", [(0, i, i * 10 * MS, i - 1, i, 0) for i in range(1, 5)]),
        traffic=from_rows(
            "traffic",
            [(i, "payload", 1, 150, 1, 150) for i in range(4)]
            + [(i, "ihave", 2, 40, 2, 40) for i in range(5)],
        ),
        drops=from_rows("drops", [(3, 4, "payload", "queue_full", 1)]),
    )


def hidden_siblings(folder: Path) -> list[str]:
    return sorted(entry.name for entry in folder.iterdir() if entry.name.startswith("."))


def unserializable(tables: RunTables) -> RunTables:
    """The same tables, but drops carries an extra column Parquet cannot store.

    Extra columns pass the schema check, so the write fails only after the tables before
    drops are already on disk: a failure in the middle of the write.
    """
    bad = pl.Series("note", [object()] * tables.drops.height, dtype=pl.Object)
    return replace(tables, drops=tables.drops.with_columns(bad))


def dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


# --- writing ------------------------------------------------------------------------


def test_write_then_load_round_trips(tmp_path: Path) -> None:
    tables = line_tables()
    out = write_results(tmp_path / "run", tables, SCENARIO, run_info())

    loaded, run, scenario = load_results(out)
    for name, frame in tables.present().items():
        assert_frame_equal(getattr(loaded, name), frame)
    assert loaded.receipts is None
    assert run == run_info()
    assert scenario == SCENARIO


def test_receipts_table_is_written_when_present(tmp_path: Path) -> None:
    receipts = from_rows("receipts", [(0, 1, 0, 10 * MS, False), (0, 1, 2, 30 * MS, True)])
    tables = replace(line_tables(), receipts=receipts)
    loaded, _, _ = load_results(write_results(tmp_path / "run", tables, SCENARIO, run_info()))
    assert loaded.receipts is not None
    assert_frame_equal(loaded.receipts, receipts)


def test_folder_holds_every_file_and_parquet_is_zstd(tmp_path: Path) -> None:
    out = write_results(tmp_path / "run", line_tables(), SCENARIO, run_info())

    names = {path.relative_to(out).as_posix() for path in out.rglob("*")}
    expected = {"scenario.toml", "summary.json", "report.html", "plots"}
    expected |= {f"{name}.parquet" for name in ("publishes", "deliveries", "traffic", "drops")}
    assert expected <= names
    assert any(name.startswith("plots/") and name.endswith(".png") for name in names)
    metadata = pq.ParquetFile(out / "deliveries.parquet").metadata
    assert metadata.row_group(0).column(0).compression == "ZSTD"
    assert hidden_siblings(tmp_path) == []


def test_summary_json_is_sorted_indented_rounded_and_has_no_nan(tmp_path: Path) -> None:
    run = run_info(wall_time_s=float("nan"), ratio_hint=1 / 3)
    out = write_results(tmp_path / "run", line_tables(), SCENARIO, run)

    text = (out / "summary.json").read_text()
    summary = json.loads(text)
    assert text == json.dumps(summary, sort_keys=True, indent=2) + "\n"
    assert "NaN" not in text
    assert summary["run"]["wall_time_s"] is None
    assert summary["run"]["ratio_hint"] == 0.333333333
    assert summary["delivery"]["ratio"] == 1.0


def test_existing_folder_is_refused_without_overwrite(tmp_path: Path) -> None:
    out = tmp_path / "run"
    out.mkdir()
    (out / "mine.txt").write_text("keep me")

    with pytest.raises(ResultsError, match=r"already exists.*--force"):
        write_results(out, line_tables(), SCENARIO, run_info())
    assert (out / "mine.txt").read_text() == "keep me"


def test_overwrite_replaces_the_folder(tmp_path: Path) -> None:
    out = tmp_path / "run"
    out.mkdir()
    (out / "old.txt").write_text("old result")

    write_results(out, line_tables(), SCENARIO, run_info(), overwrite=True)
    assert not (out / "old.txt").exists()
    assert (out / "summary.json").is_file()
    assert hidden_siblings(tmp_path) == []


def test_failed_write_leaves_nothing_behind(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with pytest.raises(pl.exceptions.PolarsError):
        write_results(out, unserializable(line_tables()), SCENARIO, run_info())
    assert not out.exists()
    assert hidden_siblings(tmp_path) == []


def test_failed_overwrite_keeps_the_existing_result(tmp_path: Path) -> None:
    out = write_results(tmp_path / "run", line_tables(), SCENARIO, run_info())
    before = {path.name: path.read_bytes() for path in out.iterdir() if path.is_file()}

    with pytest.raises(pl.exceptions.PolarsError):
        write_results(out, unserializable(line_tables()), "changed", run_info(), overwrite=True)
    after = {path.name: path.read_bytes() for path in out.iterdir() if path.is_file()}
    assert after == before
    assert hidden_siblings(tmp_path) == []


def test_failure_while_rendering_the_report_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object) -> None:
        raise RuntimeError("plotting failed")

    monkeypatch.setattr("gossiplab.report.run_report.render_all", broken)
    with pytest.raises(RuntimeError, match="plotting failed"):
        write_results(tmp_path / "run", line_tables(), SCENARIO, run_info())
    assert list(tmp_path.iterdir()) == []


def test_schema_mismatch_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    tables = line_tables()
    wrong = replace(tables, deliveries=tables.deliveries.with_columns(pl.col("hop").cast(pl.Int32)))
    with pytest.raises(ResultsError, match=r"deliveries\.hop"):
        write_results(tmp_path / "run", wrong, SCENARIO, run_info())
    assert list(tmp_path.iterdir()) == []


def test_leftovers_of_dead_writers_are_cleaned_and_live_ones_kept(tmp_path: Path) -> None:
    dead = dead_pid()
    (tmp_path / f".crashed.partial-{dead}").mkdir()
    (tmp_path / f".busy.partial-{os.getpid()}").mkdir()  # a write in progress here
    # A writer died after moving "restored" aside and before moving its new copy in.
    (tmp_path / f".restored.old-{dead}").mkdir()
    (tmp_path / f".restored.old-{dead}" / "summary.json").write_text("{}")

    write_results(tmp_path / "run", line_tables(), SCENARIO, run_info())
    assert hidden_siblings(tmp_path) == [f".busy.partial-{os.getpid()}"]
    assert (tmp_path / "restored" / "summary.json").read_text() == "{}"


def test_write_creates_missing_parent_folders(tmp_path: Path) -> None:
    out = write_results(tmp_path / "a" / "b" / "run", line_tables(), SCENARIO, run_info())
    assert (out / "report.html").is_file()


def test_empty_tables_still_make_a_complete_folder(tmp_path: Path) -> None:
    empty = RunTables(
        *(empty_table(name) for name in ("publishes", "deliveries", "traffic", "drops"))
    )
    out = write_results(tmp_path / "run", empty, SCENARIO, run_info())
    loaded, _, _ = load_results(out)
    assert loaded.deliveries.height == 0
    assert json.loads((out / "summary.json").read_text())["delivery"]["ratio"] is None


# --- loading ------------------------------------------------------------------------


def test_load_names_a_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(ResultsError, match="does not exist"):
        load_results(tmp_path / "nowhere")


def test_load_names_a_missing_file(tmp_path: Path) -> None:
    out = write_results(tmp_path / "run", line_tables(), SCENARIO, run_info())
    (out / "deliveries.parquet").unlink()
    with pytest.raises(ResultsError, match=r"incomplete: deliveries\.parquet missing"):
        load_results(out)


def test_load_names_an_unreadable_parquet_file(tmp_path: Path) -> None:
    out = write_results(tmp_path / "run", line_tables(), SCENARIO, run_info())
    (out / "traffic.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(ResultsError, match=r"traffic\.parquet is not a readable Parquet file"):
        load_results(out)


def test_load_needs_the_run_section(tmp_path: Path) -> None:
    out = write_results(tmp_path / "run", line_tables(), SCENARIO, run_info())
    (out / "summary.json").write_text('{"delivery": {}}')
    with pytest.raises(ResultsError, match='no "run" section'):
        load_results(out)


def test_a_run_written_before_the_sysmon_columns_loads_with_them_null(tmp_path: Path) -> None:
    # A testbed run of an earlier version has no sysmon columns in resources.parquet: it
    # still reads (as a crosscheck's --partner-run, for a report), recording nothing there.
    rows = [(0, 1_000, 0.5, 1, 2, 3, 4, 5, 0.01, 100)]
    tables = replace(line_tables(), resources=from_rows("resources", rows))
    out = write_results(tmp_path / "run", tables, SCENARIO, run_info())
    older = pl.read_parquet(out / "resources.parquet").drop("sysmon_cpu_s", "sysmon_runs")
    older.write_parquet(out / "resources.parquet")
    resources = load_results(out)[0].resources
    assert resources is not None
    assert resources.columns == tables.resources.columns
    assert resources["sysmon_runs"].is_null().all()
    assert resources["cpu_s"].to_list() == [0.5]


def test_goroutine_waits_written_before_readied_by_load_with_it_null(tmp_path: Path) -> None:
    # A model run of an earlier version recorded goroutine waits without readied_by.
    rows = [(1, "validator", 2_000, 500, None, "event loop")]
    tables = replace(line_tables(), goroutine_waits=from_rows("goroutine_waits", rows))
    out = write_results(tmp_path / "run", tables, SCENARIO, run_info())
    older = pl.read_parquet(out / "goroutine_waits.parquet").drop("readied_by")
    older.write_parquet(out / "goroutine_waits.parquet")
    waits = load_results(out)[0].goroutine_waits
    assert waits is not None
    assert waits.columns == tables.goroutine_waits.columns
    assert waits["readied_by"].to_list() == [None]
    assert waits["wait_ns"].to_list() == [500]


# --- schema checks ------------------------------------------------------------------


def test_check_tables_names_table_and_column() -> None:
    tables = line_tables()
    with pytest.raises(ResultsError, match=r"table traffic has no column 'bytes_sent'"):
        check_tables(replace(tables, traffic=tables.traffic.drop("bytes_sent")))
    with pytest.raises(ResultsError, match=r"column publishes\.topic is UInt32, UInt16 expected"):
        check_tables(
            replace(
                tables, publishes=tables.publishes.with_columns(pl.col("topic").cast(pl.UInt32))
            )
        )


def test_check_tables_rejects_unknown_traffic_kinds() -> None:
    tables = line_tables()
    odd = pl.concat([tables.traffic, from_rows("traffic", [(0, "gossip", 1, 1, 1, 1)])])
    with pytest.raises(ResultsError, match="'gossip'"):
        check_tables(replace(tables, traffic=odd))


def test_check_tables_allows_extra_columns() -> None:
    tables = line_tables()
    check_tables(replace(tables, drops=tables.drops.with_columns(note=pl.lit("backend detail"))))
