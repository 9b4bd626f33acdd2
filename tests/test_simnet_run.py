"""The simnet backend end to end: real go-libp2p-pubsub hosts in virtual time (needs Go).

A 20-node scenario delivers every message to every node, its results folder holds the
same tables as the model's and passes the same schema checks, and summary.json says how
it ran. A runner that fails is reported in its own words.
"""

from __future__ import annotations

import json
import shutil
import stat
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from gossiplab.analysis.results import load_results
from gossiplab.analysis.tables import REQUIRED_TABLES, check_tables
from gossiplab.backends.simnet.errors import SimnetError
from gossiplab.backends.simnet.process import run_runner
from gossiplab.cli.main import app
from gossiplab.runner import run

NEEDS_GO = pytest.mark.skipif(shutil.which("go") is None, reason="the simnet runner needs Go")
MS = 1_000_000
QUICK = Path(__file__).resolve().parents[1] / "scenarios" / "simnet" / "quick.toml"

SMALL = """
name = "xc-simnet"
seed = 5
backend = "model"
[topology]
kind = "random-regular"
nodes = 12
degree = 4
[network]
latency = "20ms"
upload = "50Mbit"
download = "50Mbit"
[protocol]
version = "1.1"
[workload]
messages = 6
rate = "5/s"
size = "2KiB"
warmup = "3s"
cooldown = "3s"
"""


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("go") is None:
        pytest.skip("the simnet runner needs Go")
    return run(QUICK, tmp_path_factory.mktemp("simnet") / "quick").out_dir


@NEEDS_GO
def test_twenty_hosts_deliver_every_message_to_every_other_node(quick_run: Path) -> None:
    tables, run_info, _ = load_results(quick_run)  # load_results runs the schema checks
    check_tables(tables)
    assert tables.deliveries is not None
    # 20 messages, each to the 19 nodes other than its publisher, once.
    assert tables.publishes.height == 20
    assert tables.deliveries.height == 20 * 19
    pairs = tables.deliveries.select("msg", "node").unique()
    assert pairs.height == 20 * 19
    receipts = tables.deliveries.join(tables.publishes, on="msg")
    assert (receipts["node"] != receipts["publisher"]).all()
    # No receipt beats one 25 ms link; no message left the first-receipt tree.
    latency = receipts["t_ns"] - receipts["t_publish_ns"]
    assert latency.min() >= 25 * MS  # type: ignore[operator]
    assert receipts["hop"].min() == 1 and receipts["hop"].max() < 20  # type: ignore[operator]
    # Virtual time stands still while a host works: each message is published exactly at
    # its scheduled time, 10/s after the 3 s warm-up.
    published = tables.publishes.sort("msg")["t_publish_ns"].to_list()
    assert published == [3_000 * MS + k * 100 * MS for k in range(20)]
    summary = json.loads((quick_run / "summary.json").read_text())
    assert summary["delivery"]["ratio"] == 1.0
    assert run_info["backend"] == "simnet"


@NEEDS_GO
def test_the_results_folder_has_the_model_tables_and_says_how_it_ran(quick_run: Path) -> None:
    for name in REQUIRED_TABLES:
        assert (quick_run / f"{name}.parquet").is_file(), name
    nodes = pl.read_parquet(quick_run / "nodes.parquet")
    assert nodes["upload_bps"].to_list() == [50_000_000] * 20
    run_info = json.loads((quick_run / "summary.json").read_text())["run"]
    simnet = run_info["simnet"]
    assert simnet["virtual_ns"] == run_info["end_ns"]
    assert simnet["peak_rss_bytes"] > 0 and simnet["wall_s"] > 0
    assert simnet["phases"][0] == "hosts" and "run" in simnet["phases"]
    assert simnet["conversion"]["missing_results"] == []
    assert simnet["connections"]["edges_connected"] == 20 * 6 // 2
    assert run_info["versions"]["github.com/libp2p/go-libp2p-pubsub"] == "v0.17.0"
    assert run_info["versions"]["go"].startswith("go")
    page = (quick_run / "report.html").read_text()
    assert "The simnet run" in page and "peak memory" in page


def test_a_failing_runner_is_reported_in_its_own_words(tmp_path: Path) -> None:
    runner = tmp_path / "gossiplab-simnet"
    runner.write_text(
        "#!/bin/sh\n"
        'echo \'{"event":"phase","name":"connect"}\'\n'
        "echo 'gossiplab-simnet: node 3: no route to node 7' >&2\n"
        "exit 1\n"
    )
    runner.chmod(runner.stat().st_mode | stat.S_IEXEC)
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(SimnetError) as failed:
        run_runner(runner, tmp_path / "RUN.json", out, 10, None)
    assert "no route to node 7" in str(failed.value)
    assert "after phase 'connect'" in str(failed.value)


def test_progress_follows_virtual_time_to_the_end(tmp_path: Path) -> None:
    runner = tmp_path / "gossiplab-simnet"
    lines = [
        '{"event":"phase","name":"run"}',
        '{"event":"progress","virtual_ns":400,"end_ns":1000,"events":7}',
        "not json, ignored",
        '{"event":"done"}',
        "PASS",
    ]
    runner.write_text("#!/bin/sh\n" + "".join(f"echo '{line}'\n" for line in lines))
    runner.chmod(runner.stat().st_mode | stat.S_IEXEC)
    out = tmp_path / "out"
    out.mkdir()
    seen: list[tuple[int, int, int]] = []
    followed = run_runner(
        runner, tmp_path / "RUN.json", out, 1000, lambda *update: seen.append(update)
    )
    # The bar reaches the end on "done", keeping the last count of trace events.
    assert seen == [(400, 1000, 7), (1000, 1000, 7)]
    assert followed.phases == ["run"] and followed.done


def test_a_runner_that_stops_without_done_fails(tmp_path: Path) -> None:
    runner = tmp_path / "gossiplab-simnet"
    runner.write_text('#!/bin/sh\necho \'{"event":"phase","name":"run"}\'\n')
    runner.chmod(runner.stat().st_mode | stat.S_IEXEC)
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(SimnetError, match="stopped without finishing"):
        run_runner(runner, tmp_path / "RUN.json", out, 10, None)


@NEEDS_GO
def test_crosscheck_against_simnet_writes_the_side_by_side_table(tmp_path: Path) -> None:
    scenario = tmp_path / "small.toml"
    scenario.write_text(SMALL)
    out = tmp_path / "xc"
    result = CliRunner().invoke(
        app, ["crosscheck", "--against", "simnet", str(scenario), "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    rows = {row["metric"]: row for row in json.loads((out / "crosscheck.json").read_text())}
    assert rows["delivery ratio"]["model"] == rows["delivery ratio"]["simnet"] == 1.0
    assert rows["delivery ratio"]["relative"] == 0.0
    # Both sides: at least one 20 ms link per receipt.
    assert rows["per-receipt latency p50"]["simnet"] >= 20.0
    assert rows["per-receipt latency p50"]["model"] >= 20.0
    assert "| metric | model | simnet | simnet vs model |" in (out / "crosscheck.md").read_text()
    assert json.loads((out / "simnet" / "summary.json").read_text())["run"]["backend"] == "simnet"
    assert "simnet vs model" in (out / "crosscheck.html").read_text()


def test_crosscheck_names_what_simnet_refuses_before_running(tmp_path: Path) -> None:
    scenario = tmp_path / "v2.toml"
    scenario.write_text(SMALL.replace('version = "1.1"', 'version = "2.0"'))
    out = tmp_path / "xc"
    result = CliRunner().invoke(
        app, ["crosscheck", "--against", "simnet", str(scenario), "-o", str(out)]
    )
    assert result.exit_code == 2
    assert "protocol.version" in result.output and "(on simnet)" in result.output
    assert not (out / "model").exists()


FAULTS = """
name = "simnet-faults"
seed = 4
backend = "simnet"
[topology]
kind = "random-regular"
nodes = 10
degree = 4
[network]
latency = "10ms"
[workload]
messages = 10
rate = "10/s"
publishers = [0]
warmup = "3s"
cooldown = "3s"
[[faults]]
kind = "crash"
nodes = [7]
at = "2s"
[[faults]]
kind = "leave"
nodes = [5]
at = "2s"
"""


@NEEDS_GO
def test_a_crashed_node_and_one_out_of_the_topic_receive_nothing_and_are_left_out(
    tmp_path: Path,
) -> None:
    scenario = tmp_path / "faults.toml"
    scenario.write_text(FAULTS)
    result = run(scenario, tmp_path / "out")
    deliveries = pl.read_parquet(result.out_dir / "deliveries.parquet")
    # Node 7 is down and node 5 out of the topic before the first message (3 s): the
    # other 7 non-publishers get all 10 messages, they get none.
    assert sorted(deliveries["node"].unique().to_list()) == [1, 2, 3, 4, 6, 8, 9]
    assert deliveries.group_by("node").len()["len"].to_list() == [10] * 7
    assert result.summary["run"]["down"] == [[7, 2_000 * MS, None]]
    assert result.summary["run"]["unsubscribed"] == [[5, 0, 2_000 * MS, None]]
    assert result.summary["delivery"]["expected_first_receipts"] == 10 * 7
    assert result.summary["delivery"]["ratio"] == 1.0
