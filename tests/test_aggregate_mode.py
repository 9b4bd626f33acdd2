"""The aggregate output mode against the full one, and its memory staying flat.

The full mode is the reference: the same scenario run both ways must give the same
summary.json, exactly for every value the aggregates hold exactly, and within the latency
histogram's stated error (1/256) for the per-receipt latency percentiles it approximates.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from gossiplab.analysis.aggregates import values_at_ranks, weighted_distribution
from gossiplab.analysis.digest import load_digest
from gossiplab.analysis.metrics import compute_summary
from gossiplab.analysis.results import SIGNIFICANT_DIGITS, load_results
from gossiplab.analysis.tables import RunTables, from_rows
from gossiplab.backends.model import check_supported
from gossiplab.errors import ScenarioError
from gossiplab.estimate import estimate
from gossiplab.report.run_report import build_report
from gossiplab.runner import run
from gossiplab.scenario import parse_scenario
from gossiplab.topology import build_topology
from gossiplab.workload import build_schedule

MS = 1_000_000
HISTOGRAM_ERROR = 1 / 256
# Means are sums divided in another order: equal up to float rounding.
FLOAT_TOLERANCE = 1e-9

SCENARIO: dict[str, Any] = {
    "name": "aggregate-vs-full",
    "seed": 17,
    "topology": {"kind": "random-regular", "nodes": 36, "degree": 6},
    "network": {
        "latency": {"distribution": "uniform", "min": "5ms", "max": "80ms"},
        "jitter": "3ms",
        "loss": 0.002,
        "upload": "50Mbit",
        "classes": [
            {"name": "fast", "share": 0.25, "upload": "1Gbit"},
            {"name": "slow", "share": 0.75, "upload": "20Mbit", "cpu_per_message": "300us"},
        ],
    },
    "protocol": {"version": "1.2"},
    "workload": {
        "messages": 400,
        "rate": "40/s",
        "size": "2KiB",
        "batch": 4,
        "topics": 2,
        "warmup": "3s",
    },
    # Nodes that restart and two that stop for good while messages are in flight, a
    # partition longer than gossip can repair, and nodes that leave a topic (some for
    # good, some for a while).
    "faults": [
        {"kind": "churn", "start": "5s", "end": "9s", "leave_rate": "0.5/s", "rejoin_after": "2s"},
        {"kind": "crash", "at": "11s", "count": 2},
        {"kind": "partition", "start": "9s", "end": "12.5s", "split": 0.5},
        {"kind": "leave", "topic": 1, "at": "6s", "count": 4, "rejoin_after": "3s"},
        {"kind": "leave", "topic": 0, "at": "8s", "nodes": [3, 4]},
    ],
}


def _run(tmp_path: Path, mode: str, extra: dict[str, Any] | None = None) -> tuple[Path, dict]:
    data = json.loads(json.dumps(SCENARIO))
    data.update(extra or {})
    data["output"] = {"mode": mode}
    result = run(parse_scenario(data, tmp_path), tmp_path / mode)
    return result.out_dir, result.summary


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, dict]]:
    tmp = tmp_path_factory.mktemp("aggregate")
    return {mode: _run(tmp, mode) for mode in ("full", "aggregate")}


def _leaves(value: Any, path: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            out.update(_leaves(item, f"{path}.{key}" if path else str(key)))
        return out
    return {path: value}


def _approximated(path: str) -> bool:
    parts = path.split(".")
    latency = parts[0] == "receipt_latency_ms" or (
        parts[0] in ("by_class", "by_region") and len(parts) == 4 and parts[2] == "latency_ms"
    )
    return latency and parts[-1] in ("p50", "p90", "p95", "p99")


def test_every_metric_agrees_with_the_full_mode(both: dict[str, tuple[Path, dict]]) -> None:
    full = _leaves({k: v for k, v in both["full"][1].items() if k != "run"})
    aggregate = _leaves(
        {k: v for k, v in both["aggregate"][1].items() if k not in ("run", "approximated")}
    )
    assert full.pop("output_mode") == "full"
    assert aggregate.pop("output_mode") == "aggregate"
    assert full.keys() == aggregate.keys()
    approximated = []
    for path, expected in full.items():
        got = aggregate[path]
        if _approximated(path) and expected is not None:
            approximated.append(path)
            assert abs(got - expected) <= HISTOGRAM_ERROR * expected, path
        elif isinstance(expected, float) and isinstance(got, float):
            # summary.json keeps SIGNIFICANT_DIGITS: a value on a rounding edge may come out
            # one unit apart in the last digit, computed by polars in one mode and by
            # Python in the other.
            magnitude = math.floor(math.log10(abs(expected) or 1))
            last_digit = 10 ** (magnitude - SIGNIFICANT_DIGITS + 1)
            tolerance = 1.5 * last_digit
            assert math.isclose(got, expected, rel_tol=FLOAT_TOLERANCE, abs_tol=tolerance), path
        else:
            assert got == expected, f"{path}: full {expected!r}, aggregate {got!r}"
    # The scenario exercises what the aggregates must get right.
    summary = both["full"][1]
    assert summary["messages"]["receivers_excluded"] > 0
    assert 0 < summary["delivery"]["messages_fully_delivered"] < summary["messages"]["measured"]
    assert summary["duplicates"]["per_node_per_message"]["max"] > 0
    assert set(summary["by_class"]) == {"fast", "slow"}
    assert len(approximated) == 12  # overall and for both classes: p50, p90, p95, p99


def test_the_summary_says_which_values_are_approximated(
    both: dict[str, tuple[Path, dict]],
) -> None:
    note = both["aggregate"][1]["approximated"]
    assert note["max_relative_error"] == HISTOGRAM_ERROR
    assert "receipt_latency_ms.p99" in note["values"]
    assert "by_class.*.latency_ms.p50" in note["values"]
    assert "approximated" not in both["full"][1]


def test_the_aggregate_folder_has_no_per_receipt_rows(
    both: dict[str, tuple[Path, dict]],
) -> None:
    folder, summary = both["aggregate"]
    assert not (folder / "deliveries.parquet").exists()
    tables, run_info, _ = load_results(folder)
    assert tables.aggregate and tables.deliveries is None
    assert tables.messages is not None and tables.messages.height == 400
    histogram = tables.latency_histogram
    assert histogram is not None
    # Every bin is exact or at most 1/128 of its lower bound wide.
    width = histogram["hi_ns"] - histogram["lo_ns"]
    assert ((width == 1) | (width * 128 <= histogram["lo_ns"])).all()
    assert int(histogram["count"].sum()) == summary["receipt_latency_ms"]["count"]
    # Rebuilding the report from the folder gives the same summary and the figures.
    build_report(folder)
    again = json.loads((folder / "summary.json").read_text())
    assert {k: v for k, v in again.items() if k != "run"} == {
        k: v for k, v in summary.items() if k != "run"
    }
    for figure in ("receipt_latency_cdf", "duplicates", "duplicates_per_node"):
        assert (folder / "plots" / f"{figure}.png").is_file(), figure
    assert run_info["nodes"] == 36


def test_the_aggregate_tables_add_up_to_the_full_rows(
    both: dict[str, tuple[Path, dict]],
) -> None:
    full, _, _ = load_results(both["full"][0])
    aggregate, _, _ = load_results(both["aggregate"][0])
    assert full.deliveries is not None and aggregate.messages is not None
    per_message = full.deliveries.group_by("msg").agg(n=pl.len())
    got = aggregate.messages.filter(pl.col("first_receipts") > 0).select(
        "msg", n=pl.col("first_receipts").cast(pl.UInt32)
    )
    assert per_message.sort("msg").equals(got.sort("msg"))


def test_receipts_cannot_be_asked_for_in_aggregate_mode(tmp_path: Path) -> None:
    data = {**SCENARIO, "output": {"mode": "aggregate", "receipts": True}}
    with pytest.raises(ScenarioError, match=r"output\.receipts"):
        check_supported(parse_scenario(data, tmp_path))


# Runs the engine alone in a child process (so that its memory is its own) and reports
# resident memory after 100 s of simulated time and at the end, and the peak number of
# seen-cache entries. seen_ttl is 1 s so the seen caches are at their plateau by then.
CHILD = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from gossiplab.backends.model import start_engine
    from gossiplab.scenario import parse_scenario
    from gossiplab.topology import build_topology
    from gossiplab.workload import build_schedule, end_time_ns

    def rss():
        for line in open("/proc/self/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024

    messages, mode = int(sys.argv[1]), sys.argv[2]
    s = parse_scenario({
        "seed": 3, "topology": {"kind": "random-regular", "nodes": 30, "degree": 6},
        "network": {"latency": "10ms"}, "protocol": {"seen_ttl": "1s"},
        "workload": {"messages": messages, "rate": "100/s", "size": "500B", "warmup": "1s"},
        "output": {"mode": mode},
    }, Path("."))
    topology = build_topology(s)
    schedule = build_schedule(s, topology.nodes)
    engine = start_engine(s, topology, schedule, end_time_ns(s, schedule))
    t = 100 * 10**9
    engine.run_until(t)
    warm = rss()
    seen = 0
    while not engine.run_until(t):
        t += 10 * 10**9
        seen = max(seen, engine.live_state()["seen"])
    print(json.dumps({"warm": warm, "end": rss(), "seen": seen,
                      "deliveries": engine.live_state()["deliveries"]}))
    """
)


def _memory(messages: int, mode: str) -> dict[str, int]:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(messages), mode],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


def test_aggregate_memory_does_not_grow_with_the_messages() -> None:
    mib = 2**20
    short = _memory(20_000, "aggregate")
    long = _memory(80_000, "aggregate")
    # After warm-up, 60,000 more messages (1.7 million more first receipts) cost nothing.
    assert long["end"] - long["warm"] < 4 * mib, long
    assert short["end"] - short["warm"] < 4 * mib, short
    # The per-message state at its plateau is the same however long the run.
    assert abs(long["seen"] - short["seen"]) <= short["seen"] // 100, (short, long)
    assert long["deliveries"] == 0
    # The same measurement sees the full mode's rows grow (25 bytes each, 1.7 million).
    full = _memory(80_000, "full")
    assert full["end"] - full["warm"] > 30 * mib, full


# --- pieces, against numbers worked out by hand ---------------------------------------


def test_a_publisher_getting_its_own_message_back_is_no_delivery() -> None:
    # Node 0 published message 0 at 0 ms, restarted, and got it back at 900 ms: the two
    # other nodes are its only receivers, so the ratio is 1, not 3/2, and the last
    # receipt is node 2's at 20 ms.
    publishes = from_rows("publishes", [(0, 0, 0, 0, 100, 0, 0, 4, 0)])
    deliveries = from_rows(
        "deliveries",
        [(0, 1, 10 * MS, 0, 1, 0), (0, 2, 20 * MS, 1, 2, 1), (0, 0, 900 * MS, 1, 2, 0)],
    )
    empty = from_rows("traffic", [])
    tables = RunTables(publishes, deliveries, empty, from_rows("drops", []))
    summary = compute_summary(tables, {"nodes": 3, "subscribers": [3], "warmup_ns": 0})
    assert summary["delivery"]["ratio"] == 1.0
    assert summary["dissemination_ms"]["max"] == 20.0
    assert summary["receipt_latency_ms"]["count"] == 2


def test_weighted_distribution_is_nearest_rank_over_the_expanded_values() -> None:
    # 0 x 5, 1 x 3, 4 x 2: ranks 1-5 are 0, 6-8 are 1, 9-10 are 4 (p95: rank 10).
    got = weighted_distribution([4, 0, 1], [2, 5, 3])
    assert got == {
        "count": 10,
        "mean": 1.1,
        "min": 0,
        "p50": 0,
        "p90": 4,
        "p95": 4,
        "p99": 4,
        "max": 4,
    }


def test_a_percentile_is_the_middle_of_the_bin_holding_its_rank() -> None:
    # Two nodes' rows of the same bins are added: [1000, 1008) holds ranks 1-3,
    # [2048, 2064) ranks 4-10.
    histogram = pl.DataFrame(
        {"lo_ns": [1000, 2048, 1000], "hi_ns": [1008, 2064, 1008], "count": [1, 7, 2]}
    )
    assert values_at_ranks(histogram, np.array([1, 3, 4, 10])).tolist() == [
        1003,
        1003,
        2055,
        2055,
    ]


def test_the_estimate_of_an_aggregate_run_does_not_grow_with_first_receipts(
    tmp_path: Path,
) -> None:
    def memory(messages: int, mode: str) -> int:
        s = parse_scenario(
            {
                "topology": {"kind": "random-regular", "nodes": 100, "degree": 8},
                "workload": {"messages": messages, "rate": "1000/s"},
                "output": {"mode": mode},
            },
            tmp_path,
        )
        return estimate(s, build_topology(s), build_schedule(s, 100)).memory_bytes

    # The soak: a million messages through 100 nodes fits in a few GiB in aggregate mode
    # (seen caches of 180 s at 1000/s), not in the full mode's 99 million rows.
    assert memory(1_000_000, "aggregate") < 3 * 2**30 < 16 * 2**30 < memory(1_000_000, "full")
    # Twice the messages at the same rate, both longer than the seen caches' window (180 s):
    # only the per-message records grow.
    extra = memory(400_000, "aggregate") - memory(200_000, "aggregate")
    assert extra < 200_000 * 1000


def test_compare_digests_agree_across_modes(both: dict[str, tuple[Path, dict]]) -> None:
    full = load_digest(both["full"][0], "full")
    aggregate = load_digest(both["aggregate"][0], "aggregate")
    assert aggregate.duplicates == full.duplicates
    assert aggregate.last_delivery_hop == full.last_delivery_hop
    assert np.array_equal(aggregate.dissemination_ms, full.dissemination_ms)
    # The latency CDF at the same ranks, each value within the histogram's error.
    assert np.array_equal(aggregate.receipt_fraction, full.receipt_fraction)
    error = np.abs(aggregate.receipt_latency_ms - full.receipt_latency_ms)
    assert (error <= HISTOGRAM_ERROR * full.receipt_latency_ms + 1e-9).all()
