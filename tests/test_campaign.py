"""Campaigns: series of sweeps over one base scenario, and the Whiteblock Phase 2 campaign.

The Whiteblock expectations are the published test plan (github.com/whiteblock/
gossipsub-testing, README, "Phase 2: Test Series"), not what the code produces.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from gossiplab.backends import model as model_backend
from gossiplab.errors import GossiplabError, Problem
from gossiplab.multirun.campaign import CampaignError, case_letter, plan_campaign, run_campaign
from gossiplab.scenario import Scenario, load_scenario, scenario_to_toml

ROOT = Path(__file__).resolve().parents[1]
WHITEBLOCK = ROOT / "scenarios" / "whiteblock" / "phase2.toml"
DEMO = ROOT / "scenarios" / "whiteblock" / "phase2-series1b.toml"
MBIT = 1_000_000
MS = 1_000_000

BASE = """
name = "line"
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
"""

CAMPAIGN = """
name = "small"
base = "base.toml"
parameters = ["topology.nodes", "network.latency"]

[[series]]
id = "lat"
title = "Latency"
sweep = { "network.latency" = ["10ms", "20ms"] }

[[series]]
id = "len"
title = "Longer lines, 5 ms"
sweep = { "topology.nodes,network.latency" = [[4, "5ms"], [6, "5ms"]] }
"""


def write_campaign(tmp_path: Path, text: str = CAMPAIGN) -> Path:
    (tmp_path / "base.toml").write_text(BASE)
    path = tmp_path / "campaign.toml"
    path.write_text(text)
    return path


# ------------------------------------------------------------------------------------------
# The Whiteblock Phase 2 campaign, as published
# ------------------------------------------------------------------------------------------


def test_whiteblock_campaign_holds_the_published_phase2_series() -> None:
    plan = plan_campaign(WHITEBLOCK)
    cases = {p.labels["case"]: p.scenario for p in plan.points}
    four = [f"{series}{case}" for series in "12356" for case in "abcd"]
    assert sorted(cases) == sorted([*four, "4a", "4b", "4c"])

    m_of_case = {"a": 2, "b": 6, "c": 12, "d": 16}
    for case, s in cases.items():
        series, letter = case[0], case[1]
        assert s.topology.kind == "barabasi-albert"
        assert (s.topology.nodes, s.topology.seed) == (95, 42)
        assert s.workload.rate == 200.0
        assert s.workload.size == 1000
        assert s.workload.messages == 200 * 180
        assert s.topology.m == (6 if series == "4" else m_of_case[letter])
        # The report's latencies are round trips (its 100 ms series has 50 ms per hop);
        # the model's is one-way: half.
        round_trip = {"2": 100, "5": 400, "6": 150}.get(series, 0)
        assert s.network.latency == round_trip * MS // 2, case
        # go-libp2p-pubsub v0.1.1, the testbed's: gossipsub v1.0, GossipSubDlo = 4.
        assert (s.protocol.version, s.protocol.D, s.protocol.D_lo) == ("1.0", 6, 4), case
        assert s.network.loss == {"3": 0.001, "6": 0.0001}.get(series, 0.0), case
        megabytes_per_s = {"4a": 10, "4b": 50, "4c": 100}.get(case, 10 if series == "6" else 0)
        assert s.network.upload == s.network.download == megabytes_per_s * 8 * MBIT, case


def test_whiteblock_case_1b_is_the_demo() -> None:
    plan = plan_campaign(WHITEBLOCK)
    case_1b = next(p.scenario for p in plan.points if p.labels["case"] == "1b")
    demo = load_scenario(DEMO)
    # Only the name and description say which case it is.
    renamed = case_1b.model_copy(update={"name": demo.name, "description": demo.description})
    assert scenario_to_toml(renamed) == scenario_to_toml(demo)


def test_case_letters_follow_the_published_reports() -> None:
    assert [case_letter(i) for i in (0, 1, 3, 25, 26, 27)] == ["a", "b", "d", "z", "aa", "ab"]


# ------------------------------------------------------------------------------------------
# Running a campaign
# ------------------------------------------------------------------------------------------


def test_a_campaign_runs_every_case_and_writes_the_series_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    supported = model_backend.unsupported_features

    def refuse_6_nodes(s: Scenario) -> list[Problem]:
        refused = [Problem("topology.nodes", "6 nodes are not modelled yet", "")]
        return supported(s) + (refused if s.topology.nodes == 6 else [])

    monkeypatch.setattr(model_backend, "unsupported_features", refuse_6_nodes)
    outcome = run_campaign(write_campaign(tmp_path), tmp_path / "out", workers=1)

    series = pl.read_csv(tmp_path / "out" / "series.csv")
    assert series["case"].to_list() == ["lata", "latb", "lena", "lenb"]
    assert series["topology.nodes"].to_list() == [3, 3, 4, 6]
    assert series["network.latency"].to_list() == ["10ms", "20ms", "5ms", "5ms"]
    assert series["status"].to_list() == ["ok", "ok", "ok", "failed"]
    # Floodsub on a line of n nodes: (n - 1) links of the latency, LDH n - 1.
    assert series["dissemination_p50_ms"].to_list() == [20.0, 40.0, 15.0, None]
    assert series["ldh_mean"].to_list() == [2.0, 2.0, 3.0, None]
    assert series["reason"][3] == "topology.nodes: 6 nodes are not modelled yet"

    markdown = (tmp_path / "out" / "series.md").read_text()
    assert markdown.startswith("| case | series | topology.nodes | network.latency |")
    assert "| lenb | Longer lines, 5 ms | 6 | 5ms | failed: topology.nodes" in markdown
    html = outcome.report.read_text()
    assert "Series lat — Latency" in html and "Series len — Longer lines, 5 ms" in html
    assert "Not run: lenb failed" in html
    points = pl.read_parquet(tmp_path / "out" / "points.parquet")
    assert points["point"].to_list() == [
        "lata_network.latency=10ms",
        "latb_network.latency=20ms",
        "lena_topology.nodes=4,network.latency=5ms",
        "lenb_topology.nodes=6,network.latency=5ms",
    ]
    assert (tmp_path / "out" / "campaign.toml").read_text() == CAMPAIGN


def test_cli_campaign_prints_the_series_table(tmp_path: Path) -> None:
    text = CAMPAIGN.split('[[series]]\nid = "len"')[0]
    path = write_campaign(tmp_path, text)
    done = subprocess.run(
        [sys.executable, "-m", "gossiplab", "campaign", str(path), "-o", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    header = "case nodes latency delivery p50 ms p99 ms max ms LDH"
    assert lines[0].split() == header.split()
    assert lines[1].split() == ["lata", "3", "10ms", "1.0000", "20.00", "20.00", "20.00", "2.00"]
    assert "series.md" in done.stdout


# ------------------------------------------------------------------------------------------
# Mistakes in a campaign file
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('base = "base.toml"\n[[series]]\nid = "1"\ncolour = 3\n', r"series\[0\]\.colour: unknown"),
        ('[[series]]\nid = "1"\n', "base: required"),
        ('base = "base.toml"\n', "series: required"),
        (
            'base = "base.toml"\n[[series]]\nid = "1"\n[[series]]\nid = "1"\n',
            "id '1' is used more than once",
        ),
        (
            'base = "base.toml"\n[[series]]\nid = "1"\nsweep = {"topology.nodes" = 3}\n',
            r"series '1': sweep\.\"topology\.nodes\": expected a non-empty array",
        ),
        (
            'base = "base.toml"\n[[series]]\nid = "2"\nset = {"network.latncy" = "5ms"}\n',
            r"series '2': network.latncy: unknown field \(did you mean 'latency'\?\)",
        ),
        (
            'base = "base.toml"\n[[series]]\nid = "3"\nsweep = {"topology.nodes" = [0]}\n',
            "series '3': topology.nodes",
        ),
        ('base = "base.toml"\n[[series]]\nid = "1"\nsweep = [\n', "TOML syntax error"),
    ],
)
def test_campaign_mistakes_name_the_series_and_field(
    tmp_path: Path, text: str, expected: str
) -> None:
    with pytest.raises(CampaignError, match=expected):
        plan_campaign(write_campaign(tmp_path, text))


def test_a_missing_base_scenario_is_named(tmp_path: Path) -> None:
    path = tmp_path / "campaign.toml"
    path.write_text('base = "nowhere.toml"\n[[series]]\nid = "1"\n')
    with pytest.raises(GossiplabError, match=r"(?s)nowhere\.toml: .*cannot read"):
        plan_campaign(path)


def validate(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gossiplab", "validate", str(path)],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_validate_checks_every_case_of_a_campaign() -> None:
    done = validate(WHITEBLOCK)
    assert done.returncode == 0, done.stderr
    assert "23 case(s), all valid" in done.stdout
    assert "  6d: " in done.stdout


def test_validate_names_the_case_a_run_would_refuse(tmp_path: Path) -> None:
    # Three nodes with p = 0.01: the graph the case asks for is in pieces, which only
    # building it (not parsing the file) finds out.
    text = 'base = "base.toml"\n[[series]]\nid = "er"\n'
    text += 'set = { "topology.kind" = "erdos-renyi", "topology.p" = 0.01 }\n'
    done = validate(write_campaign(tmp_path, text))
    assert done.returncode == 2
    assert "case era: topology: the graph is disconnected" in done.stderr


def test_validate_reports_a_campaign_without_its_base_as_a_campaign(tmp_path: Path) -> None:
    done = validate(write_campaign(tmp_path, '[[series]]\nid = "1"\n'))
    assert done.returncode == 2
    assert "base: required" in done.stderr
