"""The partial-message analysis and report against a hand-built run and hand-built studies.

The run: node 0 publishes groups of 4 parts to nodes 1-4; msg 2 is a warm-up group and
must count nowhere. Every expectation below is worked out by hand from the rows.
"""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from gossiplab.analysis.partial_curves import (
    bytes_received_by_kind,
    completion_by_role,
    completion_curve,
    duplicate_counts,
    measured_pairs,
    part_sources,
)
from gossiplab.analysis.partial_study import (
    EAGER,
    FULL,
    PARTIAL,
    StudyRun,
    coverage_where_it_matters,
    full_message_pairs,
    load_study,
    point_mode,
    study_table,
)
from gossiplab.analysis.results import write_results
from gossiplab.analysis.tables import RunTables, empty_table, from_rows
from gossiplab.multirun.sweep import plan_sweep, run_sweep
from gossiplab.report.pages import Figure, Table
from gossiplab.report.partial_study_report import partial_study_section
from gossiplab.scenario import load_scenario, scenario_to_toml

REPO = Path(__file__).resolve().parent.parent
MS = 1_000_000
PARTS = 4
WARMUP_NS = 50 * MS

# (msg, node, role, held, parts_recv, parts_dup, full_recv, t_complete in ms or None)
ROWS: list[tuple[int, int, str, int, int, int, int, int | None]] = [
    # msg 0, published at 100 ms
    (0, 0, "requests", 4, 0, 0, 0, 100),  # the publisher: never a receiver
    (0, 1, "requests", 3, 1, 0, 0, 110),
    (0, 2, "requests", 2, 2, 1, 0, 130),
    (0, 3, "supports", 4, 0, 1, 0, 100),  # held every part: complete at the publish
    (0, 4, "none", 0, 0, 0, 0, None),  # never complete
    # msg 1, published at 200 ms
    (1, 0, "requests", 4, 0, 0, 0, 200),
    (1, 1, "requests", 0, 4, 2, 0, 220),
    (1, 2, "requests", 1, 3, 0, 0, 240),
    (1, 3, "supports", 2, 2, 0, 0, 250),
    (1, 4, "none", 0, 4, 0, 1, 260),  # a full copy: its 4 parts count as received
    # msg 2, in the warm-up: left out of everything
    (2, 1, "requests", 0, 4, 9, 0, 40),
    (2, 4, "none", 0, 0, 9, 1, None),
]


def partial_table() -> pl.DataFrame:
    rows = [
        (msg, node, role, PARTS, held, recv, dup, full, None if t is None else t * MS, 0)
        for msg, node, role, held, recv, dup, full, t in ROWS
    ]
    return from_rows("partial", rows)


def publishes() -> pl.DataFrame:
    return from_rows(
        "publishes",
        [
            (0, 0, 100 * MS, 100 * MS, 8400, 0, 0, 4, 0),
            (1, 0, 200 * MS, 200 * MS, 8400, 0, 1, 4, 0),
            (2, 0, 10 * MS, 10 * MS, 8400, 0, 2, 4, 0),
        ],
    )


def run_info() -> dict[str, Any]:
    return {"nodes": 5, "subscribers": [5], "warmup_ns": WARMUP_NS, "end_ns": 500 * MS}


def pairs() -> pl.DataFrame:
    return measured_pairs(partial_table(), publishes(), run_info())


def test_measured_pairs_leave_out_the_publisher_and_the_warm_up() -> None:
    measured = pairs()
    assert measured.select("msg", "node").rows() == [(m, n) for m in (0, 1) for n in (1, 2, 3, 4)]
    assert measured["latency_ns"].to_list() == [
        10 * MS, 30 * MS, 0, None, 20 * MS, 40 * MS, 50 * MS, 60 * MS,
    ]  # fmt: skip


def test_completion_curve_counts_never_complete_pairs_in_the_denominator() -> None:
    curve = completion_curve(pairs()["latency_ns"])
    # Latencies 0, 10, 20, 30, 40, 50, 60 ms of 8 pairs; one pair never completes.
    assert curve.pairs == 8 and curve.complete == 7
    assert curve.times_ms.tolist() == [0.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0]
    assert curve.share.tolist() == [k / 8 for k in range(1, 8)]
    # Half the pairs are complete 35 ms after the publish; never all of them.
    assert curve.share[np.searchsorted(curve.times_ms, 35.0, side="right") - 1] == 0.5


def test_completion_is_split_by_role_when_the_network_is_mixed() -> None:
    curves = {c.label: c for c in completion_by_role(pairs())}
    assert list(curves) == ["all nodes", "role requests", "role supports", "role none"]
    assert curves["role requests"].times_ms.tolist() == [10.0, 20.0, 30.0, 40.0]
    assert curves["role supports"].times_ms.tolist() == [0.0, 50.0]
    assert (curves["role none"].pairs, curves["role none"].complete) == (2, 1)
    assert curves["role none"].share.tolist() == [0.5]


def test_one_role_gives_one_curve() -> None:
    only = pairs().filter(pl.col("role") == "requests")
    assert [c.label for c in completion_by_role(only)] == ["all nodes"]


def test_part_sources_sum_each_role() -> None:
    sources = part_sources(pairs())
    assert sources.rows() == [
        # role, pairs, parts, held, parts_recv, parts_dup, full_recv, completed
        ("requests", 4, 16, 3 + 2 + 0 + 1, 1 + 2 + 4 + 3, 0 + 1 + 2 + 0, 0, 4),
        ("supports", 2, 8, 4 + 2, 0 + 2, 1 + 0, 0, 2),
        # Node 4 never completed msg 0; it took msg 1's 4 parts in one full copy.
        ("none", 2, 8, 0, 4, 0, 1, 1),
    ]


def test_duplicate_counts_over_pairs() -> None:
    # parts_dup of the 8 measured pairs: 0, 1, 1, 0, 2, 0, 0, 0.
    assert duplicate_counts(pairs()).rows() == [(0, 5), (1, 2), (2, 1)]


def test_bytes_received_by_kind_fills_absent_kinds_with_zero() -> None:
    traffic = pl.DataFrame(
        {
            "node": [1, 2, 1, 2],
            "kind": ["payload", "payload", "partial", "ihave"],
            "bytes_recv": [100, 50, 7, 3],
        }
    )
    assert bytes_received_by_kind(traffic, ("payload", "partial", "partsmeta")) == {
        "payload": 150,
        "partial": 7,
        "partsmeta": 0,
    }


@pytest.mark.parametrize(
    ("partial", "expected"),
    [
        (None, None),
        ({"parts": 6, "roles": {"requests": 0.0, "supports": 0.0}, "mempool": {"p": 0.5}},
         (FULL, 6, 0.5)),
        ({"parts": 6, "enabled": False, "eager_push": True, "mempool": {"p": 0.0}},
         (FULL, 6, 0.0)),
        ({"parts": 6, "roles": {"requests": 1.0}, "eager_push": False, "mempool": {"p": 1.0}},
         (PARTIAL, 6, 1.0)),
        ({"parts": 48, "roles": {"requests": 0.5, "supports": 0.2}, "eager_push": True,
          "mempool": {"missing": 1}}, (EAGER, 48, None)),
    ],
)  # fmt: skip
def test_point_mode_reads_the_resolved_scenario(
    partial: dict[str, Any] | None, expected: tuple[str, int, float | None] | None
) -> None:
    workload: dict[str, Any] = {"messages": 8} if partial is None else {"partial": partial}
    assert point_mode({"workload": workload}) == expected


def study_run(
    mode: str, parts: int, coverage: float, p99: float | None, group_bytes: float
) -> StudyRun:
    ms = {"count": 10, "reached": 10 if p99 is not None else 9, "p50": 50.0, "p99": p99}
    return StudyRun(
        folder=Path(f"{mode}-{parts}-{coverage}"),
        parts=parts,
        coverage=coverage,
        mode=mode,
        curve=completion_curve(pl.Series([1], dtype=pl.Int64)),
        completion_ms={**ms, "max": p99},
        group_bytes_per_node=group_bytes,
        parts_from_network=0,
        parts_held=0,
        parts_dup=0,
    )


def test_study_table_pairs_each_partial_run_with_the_full_run_of_its_blob_count() -> None:
    runs = [
        study_run(FULL, 6, 0.0, 100.0, 1000.0),
        study_run(PARTIAL, 6, 0.0, 150.0, 1100.0),  # slower and heavier: negative savings
        study_run(EAGER, 6, 0.9, 80.0, 200.0),  # paired with the full run at p = 0.0
        study_run(PARTIAL, 12, 0.9, 90.0, 100.0),  # no full run with 12 parts
        study_run(PARTIAL, 6, 0.5, None, 500.0),  # p99 never reached
    ]
    table = study_table(runs)
    got = {(row["mode"], row["parts"], row["coverage"]): row for row in table.iter_rows(named=True)}
    full = got[(FULL, 6, 0.0)]
    assert full["p99_saved_ms"] is None and full["bytes_saved_share"] is None
    slower = got[(PARTIAL, 6, 0.0)]
    assert slower["p99_saved_ms"] == pytest.approx(-50.0)
    assert slower["p99_saved_share"] == pytest.approx(-0.5)
    assert slower["bytes_saved_share"] == pytest.approx(-0.1)
    eager = got[(EAGER, 6, 0.9)]
    assert eager["p99_saved_ms"] == pytest.approx(20.0)
    assert eager["p99_saved_share"] == pytest.approx(0.2)
    assert eager["bytes_saved_share"] == pytest.approx(0.8)
    assert eager["p50_saved_ms"] == pytest.approx(0.0)
    alone = got[(PARTIAL, 12, 0.9)]
    assert alone["bytes_saved_share"] is None and alone["p99_saved_ms"] is None
    never = got[(PARTIAL, 6, 0.5)]
    assert never["p99_saved_ms"] is None and never["complete_share"] == pytest.approx(0.9)
    assert never["bytes_saved_share"] == pytest.approx(0.5)
    # Sorted by parts, coverage, then mode in MODES order.
    assert [(r[0], r[1], str(r[2])) for r in table.select("parts", "coverage", "mode").rows()] == [
        (6, 0.0, FULL), (6, 0.0, PARTIAL), (6, 0.5, PARTIAL), (6, 0.9, EAGER), (12, 0.9, PARTIAL),
    ]  # fmt: skip


def test_a_full_run_at_the_same_coverage_is_preferred() -> None:
    runs = [
        study_run(FULL, 6, 0.0, 100.0, 1000.0),
        study_run(FULL, 6, 0.9, 100.0, 400.0),
        study_run(PARTIAL, 6, 0.9, 100.0, 100.0),
    ]
    row = study_table(runs).filter(pl.col("mode") == PARTIAL).row(0, named=True)
    assert row["bytes_saved_share"] == pytest.approx(0.75)


def test_coverage_where_it_matters_lists_the_coverages_past_the_threshold() -> None:
    runs = [study_run(FULL, 6, p, 100.0, 1000.0) for p in (0.0, 0.5, 1.0)]
    runs += [
        study_run(PARTIAL, 6, 0.0, 130.0, 1050.0),  # slower, heavier
        study_run(PARTIAL, 6, 0.5, 95.0, 600.0),  # 5 % faster: below the 10 % threshold
        study_run(PARTIAL, 6, 1.0, 50.0, 10.0),
        study_run(EAGER, 6, 0.0, 90.0, 1200.0),
        study_run(EAGER, 6, 1.0, 105.0, 1200.0),  # 5 % slower: below the threshold too
    ]
    answer = coverage_where_it_matters(study_table(runs))
    rows = {row["mode"]: row for row in answer.iter_rows(named=True)}
    assert rows[PARTIAL]["bytes_from"] == [0.5, 1.0]
    assert rows[PARTIAL]["time_from"] == [1.0]
    assert rows[PARTIAL]["slower_at"] == [0.0]
    assert rows[EAGER]["bytes_from"] == [] and rows[EAGER]["time_from"] == [0.0]
    assert rows[EAGER]["slower_at"] == []


def test_the_example_study_validates_and_crosses_blobs_coverage_and_modes() -> None:
    plan = plan_sweep(REPO / "scenarios/partial/study.toml")
    shapes = [point_mode(tomllib.loads(scenario_to_toml(p.scenario))) for p in plan.points]
    coverages = (0.0, 0.25, 0.5, 0.75, 0.9, 0.99, 1.0)
    # Full messages once per blob count (the mempool is of no use without the extension).
    assert sorted(shapes, key=str) == sorted(
        [(FULL, parts, 0.0) for parts in (6, 12, 24, 48)]
        + [
            (mode, parts, p)
            for mode in (PARTIAL, EAGER)
            for parts in (6, 12, 24, 48)
            for p in coverages
        ],
        key=str,
    )
    for point in plan.points:
        partial = point.scenario.workload.partial
        assert partial is not None
        # A column is one 2 KiB cell and its 48-byte proof per blob.
        assert point.scenario.workload.size == partial.parts * (2048 + 48)
        assert point.scenario.topology.nodes == 1000


def test_the_example_run_is_the_studys_48_blob_partial_point_at_p_0_9() -> None:
    run = load_scenario(REPO / "scenarios/partial/columns-1000.toml")
    study = load_scenario(REPO / "scenarios/partial/study.toml")
    point = next(
        p.scenario
        for p in plan_sweep(REPO / "scenarios/partial/study.toml").points
        if point_mode(tomllib.loads(scenario_to_toml(p.scenario))) == (PARTIAL, 48, 0.9)
    )
    assert run.model_copy(update={"name": study.name, "description": study.description}) == (
        point.model_copy(update={"sweep": run.sweep})
    )


SCENARIO_TOML = """name = "partial-line"
seed = 7

[workload.partial]
parts = 4
part_size = "2KiB"
part_overhead = "48B"
eager_push = false
rule = "go-reference"

[workload.partial.mempool]
p = 0.5

[workload.partial.roles]
requests = {requests}
supports = 0.0
"""


def full_run_info() -> dict[str, Any]:
    return {
        **run_info(),
        "backend": "model",
        "seed": 7,
        "scenario_name": "partial-line",
        "scenario_hash": "0123abcd",
        "versions": {"gossiplab": "0.1.0"},
        "wall_time_s": 0.25,
        "events": 42,
    }


def run_tables(partial: pl.DataFrame, traffic: list[tuple[int, str, int]]) -> RunTables:
    """The tables of a run around ``partial``: deliveries are its completions."""
    done = partial.filter(pl.col("t_complete_ns").is_not_null() & (pl.col("node") != 0))
    deliveries = [
        (m, n, t, 0, 1, 0) for m, n, t in done.select("msg", "node", "t_complete_ns").rows()
    ]
    return RunTables(
        publishes=publishes(),
        deliveries=from_rows("deliveries", deliveries),
        traffic=from_rows("traffic", [(n, k, 1, b, 1, b) for n, k, b in traffic]),
        drops=empty_table("drops"),
        partial=partial,
    )


PARTIAL_TRAFFIC = [
    (1, "partial", 2000),
    (2, "partial", 1000),
    (3, "partsmeta", 500),
    (1, "graft", 999),
]
FULL_TRAFFIC = [(n, "payload", 2500) for n in range(1, 5)]


def full_tables(lost: tuple[int, int] | None = None) -> RunTables:
    """Full messages only (no partial table): every receiver of msg 0 and 1 gets its first
    copy 100 ms after the publish, but the (msg, node) pair ``lost``."""
    rows = [(m, n, (200 + 100 * m) * MS, 0, 1, 0) for m in (0, 1) for n in (1, 2, 3, 4)]
    deliveries = [row for row in rows if row[:2] != lost]
    return RunTables(
        publishes=publishes(),
        deliveries=from_rows("deliveries", deliveries),
        traffic=from_rows("traffic", [(n, k, 1, b, 1, b) for n, k, b in FULL_TRAFFIC]),
        drops=empty_table("drops"),
    )


def test_full_message_pairs_come_from_the_first_receipts() -> None:
    pairs = full_message_pairs(full_tables(lost=(1, 3)), run_info(), PARTS)
    assert pairs.height == 8  # 2 measured messages x 4 expected receivers
    assert sorted(pairs["latency_ns"].to_list(), key=lambda v: (v is None, v)) == [100 * MS] * 7 + [
        None
    ]
    assert pairs["parts_recv"].sum() == 7 * PARTS
    assert pairs["held"].sum() == pairs["parts_dup"].sum() == 0


def test_a_partial_run_report_has_its_section_and_figures(tmp_path: Path) -> None:
    scenario = SCENARIO_TOML.replace("{requests}", "1.0")
    out = write_results(
        tmp_path / "run", run_tables(partial_table(), PARTIAL_TRAFFIC), scenario, full_run_info()
    )
    for name in ("partial_completion", "partial_parts", "partial_bytes"):
        assert (out / "plots" / f"{name}.png").is_file()
    html = (out / "report.html").read_text()
    section = html[html.index('<section id="partial-messages">') :]
    section = section[: section.index("</section>")]
    assert "a group of 4 parts of 2KiB (+48B each)" in section
    assert "application rule &#39;go-reference&#39;" in section
    assert section.count("<img ") == 3


def test_a_run_without_partial_messages_has_no_partial_section(tmp_path: Path) -> None:
    tables = dataclasses.replace(run_tables(partial_table(), PARTIAL_TRAFFIC), partial=None)
    out = write_results(tmp_path / "run", tables, 'name = "plain"\n', full_run_info())
    assert 'id="partial-messages"' not in (out / "report.html").read_text()
    assert not list((out / "plots").glob("partial_*.png"))


def write_point(
    tmp_path: Path, name: str, requests: str, tables: RunTables, *, enabled: bool = True
) -> Path:
    scenario = SCENARIO_TOML.replace("{requests}", requests)
    if not enabled:
        scenario = scenario.replace("[workload.partial]\n", "[workload.partial]\nenabled = false\n")
    return write_results(tmp_path / name, tables, scenario, full_run_info())


def test_the_sweep_section_compares_partial_with_full_messages(tmp_path: Path) -> None:
    full = write_point(tmp_path, "full", "1.0", full_tables(), enabled=False)
    partial = write_point(tmp_path, "partial", "1.0", run_tables(partial_table(), PARTIAL_TRAFFIC))
    runs = load_study([full, partial])
    table = study_table(runs)
    rows = {str(row["mode"]): row for row in table.iter_rows(named=True)}
    assert rows[FULL]["completion_p50_ms"] == pytest.approx(100.0)
    # The partial run's 8 pairs: 0, 10, 20, 30, 40, 50, 60 ms and never. Nearest rank:
    # p50 is the 4th (30 ms), p99 the 8th (never).
    assert rows[PARTIAL]["completion_p50_ms"] == pytest.approx(30.0)
    assert rows[PARTIAL]["completion_p99_ms"] is None
    assert rows[PARTIAL]["p50_saved_ms"] == pytest.approx(70.0)
    assert rows[PARTIAL]["complete_share"] == pytest.approx(7 / 8)
    # Group bytes per node (5 nodes): full 4 x 2500 / 5 = 2000; partial (2000 + 1000 +
    # 500) / 5 = 700, the GRAFT left out: 65 % saved.
    assert rows[FULL]["group_bytes_per_node"] == pytest.approx(2000.0)
    assert rows[PARTIAL]["group_bytes_per_node"] == pytest.approx(700.0)
    assert rows[PARTIAL]["bytes_saved_share"] == pytest.approx(0.65)
    # Held and received parts exclude the publisher and the warm-up group.
    assert rows[PARTIAL]["parts_held"] == 3 + 2 + 4 + 0 + 0 + 1 + 2 + 0
    assert rows[PARTIAL]["parts_dup"] == 0 + 1 + 1 + 0 + 2 + 0 + 0 + 0

    section = partial_study_section(runs, tmp_path / "plots")
    assert section is not None
    figures = [block for block in section.blocks if isinstance(block, Figure)]
    assert [f.png is not None and f.png.is_file() for f in figures] == [True, True]
    cells = [row for block in section.blocks if isinstance(block, Table) for row in block.rows]
    assert ["4", "0.5", PARTIAL, "87.50%", "30.0", "never", "never", "700 B", "", "+65.0%"] in cells


def test_a_sweep_without_partial_messages_gets_no_partial_section(tmp_path: Path) -> None:
    tables = dataclasses.replace(run_tables(partial_table(), PARTIAL_TRAFFIC), partial=None)
    plain = write_results(tmp_path / "plain", tables, 'name = "plain"\n', full_run_info())
    assert load_study([plain]) == []
    assert partial_study_section([], tmp_path / "plots") is None


TINY_STUDY = """name = "partial-tiny"
seed = 3

[topology]
kind = "full"
nodes = 5

[network]
latency = "10ms"      # no bandwidth limit: every RPC takes exactly 10 ms

[protocol]
version = "1.3"
message_id = "ethereum"
signing = "strict-no-sign"

[workload]
messages = 2
rate = "1/s"
warmup = "3s"
cooldown = "2s"

[workload.partial]
parts = 4
part_size = "1KiB"
part_overhead = "0B"

[workload.partial.mempool]
p = 1.0

[sweep]
"workload.partial.enabled" = [false, true]
"""


def test_a_real_sweep_reports_what_partial_messages_save(tmp_path: Path) -> None:
    """Five fully connected nodes, every node holding every part (p = 1), the model run.

    Full messages: the publisher sends its 4 peers the message and each forwards it to
    the 3 others before their IDONTWANT can arrive: 16 copies per group of 4,096 data
    bytes, framed 4,126 B (data field 1+2+4096, topic 22, Message 4121, publish field
    1+2+4121, frame 2). Partial messages: the publisher sends its 4 peers its metadata;
    each learns the group, is complete, and sends its own metadata once to its 4 mesh
    peers; nobody lacks a part, so no parts move: 20 metadata RPCs per group of 62 B (topic
    2+20, group 2+32, metadata 1+1+1, RPC field 1+1, frame 1). Either way every receiver
    is complete 10 ms after the publish.
    """
    study = tmp_path / "tiny.toml"
    study.write_text(TINY_STUDY)
    outcome = run_sweep(study, tmp_path / "out", workers=1)
    assert not outcome.failed
    rows = {str(r["mode"]): r for r in study_table(load_study(
        outcome.out_dir / r.point.folder for r in outcome.results
    )).iter_rows(named=True)}  # fmt: skip
    for mode in (FULL, PARTIAL):
        assert rows[mode]["pairs"] == 2 * 4
        assert rows[mode]["completion_p50_ms"] == rows[mode]["completion_max_ms"] == 10.0
    assert (rows[FULL]["parts_from_network"], rows[FULL]["parts_held"]) == (2 * 4 * 4, 0)
    assert (rows[PARTIAL]["parts_from_network"], rows[PARTIAL]["parts_held"]) == (0, 2 * 4 * 4)
    assert rows[PARTIAL]["parts_dup"] == 0
    metadata_per_node = 2 * 20 * 62 / 5
    assert rows[PARTIAL]["group_bytes_per_node"] == metadata_per_node
    full_per_node = rows[FULL]["group_bytes_per_node"]
    assert full_per_node >= 2 * 16 * 4126 / 5  # the copies, plus their IDONTWANTs
    assert rows[PARTIAL]["bytes_saved_share"] == pytest.approx(
        1 - metadata_per_node / full_per_node
    )
    html = outcome.report.read_text()
    assert 'id="partial-messages-against-full-messages"' in html
    assert (outcome.out_dir / "plots" / "partial_savings.png").is_file()
