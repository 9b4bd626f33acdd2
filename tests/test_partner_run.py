"""`crosscheck --partner-run DIR`: which finished real runs stand for a new one.

The runs here are the model's (quick and deterministic), relabelled as the testbed's
where a test needs a partner run: the check reads only the folder's scenario and backend.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gossiplab.backends.testbed.crosscheck import run_crosscheck, variant
from gossiplab.backends.testbed.partner_run import check_partner_run, differences
from gossiplab.errors import GossiplabError
from gossiplab.runner import run
from gossiplab.scenario import load_scenario

SCENARIO = """
name = "partner-line"
seed = 3
backend = "model"
[topology]
kind = "line"
nodes = 4
[network]
latency = "10ms"
[workload]
messages = 3
rate = "5/s"
publishers = [0]
warmup = "2s"
cooldown = "1s"
"""


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _as_testbed_run(tmp_path: Path, scenario: str, name: str) -> Path:
    """A model run of `scenario` labelled as the testbed's (backend in both files)."""
    s = load_scenario(_write(tmp_path, f"{name}.toml", scenario))
    folder = tmp_path / name
    run(variant(s, "model"), folder)
    summary = json.loads((folder / "summary.json").read_text())
    summary["run"]["backend"] = "testbed"
    (folder / "summary.json").write_text(json.dumps(summary))
    toml = (folder / "scenario.toml").read_text()
    (folder / "scenario.toml").write_text(
        re.sub(r'(?m)^backend = ".*"$', 'backend = "testbed"', toml)
    )
    return folder


def test_differences_name_each_field_with_both_values() -> None:
    here = {"seed": 1, "workload": {"rate": "5/s", "size": 1000}, "name": "a"}
    there = {"seed": 1, "workload": {"rate": "9/s", "size": 1000}, "extra": True, "name": "a"}
    assert differences(here, there) == [
        "extra (True there, None here)",
        "workload.rate ('9/s' there, '5/s' here)",
    ]
    assert differences(here, here) == []


def test_a_run_of_the_same_scenario_is_taken_whatever_the_model_cpu_costs(tmp_path: Path) -> None:
    folder = _as_testbed_run(tmp_path, SCENARIO, "real")
    costed = SCENARIO + '[cpu]\nper_copy = "50us"\n'
    s = load_scenario(_write(tmp_path, "costed.toml", costed))
    check_partner_run(folder, variant(s, "testbed"), "testbed")


def test_a_run_is_taken_whatever_the_model_s_sharing_and_transport_buffer(
    tmp_path: Path,
) -> None:
    # No real backend reads them: they describe what the real kernel, streams and links do.
    folder = _as_testbed_run(tmp_path, SCENARIO, "real")
    shared = SCENARIO.replace(
        'latency = "10ms"',
        'latency = "10ms"\nuplink_sharing = "window"\ndownlink_sharing = "packets"\n'
        'send_buffer = "0B"',
    )
    s = load_scenario(_write(tmp_path, "shared.toml", shared))
    check_partner_run(folder, variant(s, "testbed"), "testbed")
    # The network's other fields still count.
    slower = load_scenario(_write(tmp_path, "slower.toml", shared.replace("10ms", "11ms")))
    with pytest.raises(GossiplabError, match=r"network\.latency"):
        check_partner_run(folder, variant(slower, "testbed"), "testbed")


def test_a_run_of_another_scenario_or_backend_is_refused_naming_why(tmp_path: Path) -> None:
    folder = _as_testbed_run(tmp_path, SCENARIO, "real")
    other = load_scenario(_write(tmp_path, "other.toml", SCENARIO.replace("seed = 3", "seed = 4")))
    with pytest.raises(GossiplabError, match=r"another scenario \(seed \(3 there, 4 here\)\)"):
        check_partner_run(folder, variant(other, "testbed"), "testbed")
    s = load_scenario(_write(tmp_path, "same.toml", SCENARIO))
    model_run = tmp_path / "model-run"
    run(variant(s, "model"), model_run)
    with pytest.raises(GossiplabError, match="a run of the model backend, not of the testbed"):
        check_partner_run(model_run, variant(s, "testbed"), "testbed")
    with pytest.raises(GossiplabError, match=r"--partner-run: results folder .* does not exist"):
        check_partner_run(tmp_path / "nowhere", variant(s, "testbed"), "testbed")


def test_the_crosscheck_copies_the_partner_run_and_compares_it(tmp_path: Path) -> None:
    folder = _as_testbed_run(tmp_path, SCENARIO, "real")
    scenario = _write(tmp_path, "line.toml", SCENARIO)
    result = run_crosscheck(scenario, tmp_path / "xc", partner_runs=[folder])
    assert (tmp_path / "xc" / "testbed" / "deliveries.parquet").read_bytes() == (
        folder / "deliveries.parquet"
    ).read_bytes()
    # The partner is the model's own run relabelled: every metric equal.
    assert all(r.model == r.partner for r in result.rows), result.markdown
    assert f"--partner-run {folder}" in result.markdown
    # Identical runs meet every fidelity target.
    verdicts = json.loads((tmp_path / "xc" / "crosscheck-targets.json").read_text())
    assert [v["within"] for v in verdicts] == [True] * 6, result.markdown
    assert "Against the fidelity targets" in result.markdown
    with pytest.raises(GossiplabError, match="inside the crosscheck's folder"):
        run_crosscheck(
            scenario, tmp_path / "xc", force=True, partner_runs=[tmp_path / "xc" / "testbed"]
        )


def test_an_earlier_partner_run_s_cpu_is_read_again_as_the_model_s(tmp_path: Path) -> None:
    # A partner run whose summary an earlier version wrote, without the threads' blocks
    # (its resources table has them): the crosscheck reads its CPU section again from
    # the table, so both sides have the row. The partner folder itself is left as it was.
    shared = SCENARIO + '[cpu]\nper_copy = "50us"\nnodes_per_host = 4\n'
    folder = _as_testbed_run(tmp_path, shared, "real")
    summary = json.loads((folder / "summary.json").read_text())
    del summary["cpu"]["voluntary_switches_per_s_all_nodes"]
    (folder / "summary.json").write_text(json.dumps(summary))
    scenario = _write(tmp_path, "shared.toml", shared)
    result = run_crosscheck(scenario, tmp_path / "xc", partner_runs=[folder])
    blocks = {r.metric: r for r in result.rows}["thread blocks per second while publishing"]
    assert blocks.model is not None and blocks.model == pytest.approx(blocks.partner)
    adopted = json.loads((tmp_path / "xc" / "testbed" / "summary.json").read_text())
    assert adopted["cpu"]["voluntary_switches_per_s_all_nodes"] == pytest.approx(blocks.partner)
    assert (
        "voluntary_switches_per_s_all_nodes"
        not in json.loads((folder / "summary.json").read_text())["cpu"]
    )


def _set_receipt_p50(folder: Path, p50: float) -> None:
    """Give a run's summary another per-receipt latency p50, as a second real run would."""
    summary = json.loads((folder / "summary.json").read_text())
    summary["receipt_latency_ms"]["p50"] = p50
    (folder / "summary.json").write_text(json.dumps(summary))


def test_several_real_runs_are_compared_by_their_median_and_range(tmp_path: Path) -> None:
    runs = [_as_testbed_run(tmp_path, SCENARIO, f"real-{k}") for k in (1, 2, 3)]
    model_p50 = json.loads((runs[0] / "summary.json").read_text())["receipt_latency_ms"]["p50"]
    # Three real runs: the model's p50, 1.5 times it and 0.8 times it. Median: the
    # model's own value; range 0.8-1.5 times it; the runs' own spread: the farthest run
    # from the median, 50 %.
    _set_receipt_p50(runs[1], 1.5 * model_p50)
    _set_receipt_p50(runs[2], 0.8 * model_p50)
    scenario = _write(tmp_path, "line.toml", SCENARIO)
    result = run_crosscheck(scenario, tmp_path / "xc", partner_runs=runs)
    assert all((tmp_path / "xc" / name).is_dir() for name in ("testbed", "testbed-2", "testbed-3"))
    rows = {r.metric: r for r in result.rows}
    p50 = rows["per-receipt latency p50"]
    assert p50.partner == model_p50
    assert p50.partner_runs == (model_p50, 1.5 * model_p50, 0.8 * model_p50)
    assert "| metric | model | testbed (median of 3 runs) | testbed vs model |" in result.markdown
    verdicts = {
        v["metric"]: v
        for v in json.loads((tmp_path / "xc" / "crosscheck-targets.json").read_text())
    }
    assert verdicts["per-receipt latency p50"]["spread"] == "50.0%"
    assert verdicts["per-receipt latency p50"]["inside"] is True
    assert verdicts["delivery ratio"]["spread"] == "0.0 points"
    assert verdicts["main drop reason"]["spread"] == "3 of 3 runs"
    table = json.loads((tmp_path / "xc" / "crosscheck.json").read_text())
    saved = next(r for r in table if r["metric"] == "per-receipt latency p50")
    assert saved["testbed_runs"] == [model_p50, 1.5 * model_p50, 0.8 * model_p50]
    command = " ".join(f"--partner-run {run}" for run in runs)
    assert f"gossiplab crosscheck {command} {scenario}" in result.markdown


def test_fewer_runs_than_finished_runs_given_is_refused(tmp_path: Path) -> None:
    runs = [_as_testbed_run(tmp_path, SCENARIO, f"real-{k}") for k in (1, 2)]
    scenario = _write(tmp_path, "line.toml", SCENARIO)
    with pytest.raises(GossiplabError, match="--runs 1 is fewer than the 2 --partner-run"):
        run_crosscheck(scenario, tmp_path / "xc", partner_runs=runs, runs=1)
    with pytest.raises(GossiplabError, match=r"--runs 0: run the real backend at least once"):
        run_crosscheck(scenario, tmp_path / "xc", runs=0)
    assert not (tmp_path / "xc").exists()


def test_resume_keeps_the_finished_real_runs_and_runs_the_model_again(tmp_path: Path) -> None:
    runs = [_as_testbed_run(tmp_path, SCENARIO, f"real-{k}") for k in (1, 2)]
    _set_receipt_p50(runs[1], 99.0)
    scenario = _write(tmp_path, "line.toml", SCENARIO)
    out = tmp_path / "xc"
    run_crosscheck(scenario, out, partner_runs=runs)
    # Interrupted: the second real run unfinished (no summary), the first one kept with
    # a mark that only a kept folder still has.
    (out / "testbed-2" / "summary.json").unlink()
    (out / "testbed" / "kept").touch()
    with pytest.raises(GossiplabError, match="--resume to keep its finished real runs"):
        run_crosscheck(scenario, out, partner_runs=runs)
    # Resumed with the same runs given: the first is kept, the second taken again.
    result = run_crosscheck(scenario, out, partner_runs=runs, resume=True)
    assert (out / "testbed" / "kept").exists()
    assert (out / "model" / "summary.json").is_file()
    p50 = next(r for r in result.rows if r.metric == "per-receipt latency p50")
    assert p50.partner_runs[1] == 99.0
    with pytest.raises(GossiplabError, match="pass one of them"):
        run_crosscheck(scenario, out, partner_runs=runs, resume=True, force=True)
    # A kept run of another scenario is refused, naming the folder.
    other = SCENARIO.replace("seed = 3", "seed = 4")
    with pytest.raises(GossiplabError, match=r"--resume: .*testbed is not a run of this scenario"):
        run_crosscheck(_write(tmp_path, "other.toml", other), out, resume=True)


SPREAD = """
name = "partner-spread"
seed = 3
backend = "model"
[topology]
kind = "random-regular"
nodes = 12
degree = 3
[network]
latency = "10ms"
[workload]
messages = 6
rate = "5/s"
warmup = "2s"
cooldown = "1s"
[cpu]
per_copy = "2ms"
sigma = 1.0
"""


def test_model_seeds_compare_the_median_of_the_model_s_runs(tmp_path: Path) -> None:
    # Validation draws its time from the scenario's seed (sigma = 1): the model with
    # seeds 3, 4 and 5, each run here on its own on the scenario's graph (topology seed
    # 3) and schedule ([workload] seed 3), gives the crosscheck's model values.
    real = _as_testbed_run(tmp_path, SPREAD, "real")
    alone = []
    for seed in (3, 4, 5):
        text = (
            SPREAD.replace("seed = 3", f"seed = {seed}")
            .replace("[workload]", "[workload]\nseed = 3")
            .replace("[topology]", "[topology]\nseed = 3")
        )
        folder = tmp_path / f"alone-{seed}"
        run(load_scenario(_write(tmp_path, f"alone-{seed}.toml", text)), folder)
        summary = json.loads((folder / "summary.json").read_text())
        alone.append(summary["receipt_latency_ms"]["p50"])
    assert len(set(alone)) == 3, alone  # the seeds do change the model's latency
    scenario = _write(tmp_path, "spread.toml", SPREAD)
    result = run_crosscheck(scenario, tmp_path / "xc", partner_runs=[real], model_seeds=3)
    assert all((tmp_path / "xc" / name).is_dir() for name in ("model", "model-2", "model-3"))
    p50 = {r.metric: r for r in result.rows}["per-receipt latency p50"]
    assert p50.model_runs == tuple(alone)
    assert p50.model == sorted(alone)[1]
    assert "| metric | model (median of 3 seeds) | testbed | testbed vs model |" in result.markdown
    assert "model seeds (min - max)" in result.markdown
    assert "--model-seeds 3" in result.markdown
    # Resumed with two seeds: every model folder made again, none left over.
    (tmp_path / "xc" / "model-3" / "stale").touch()
    again = run_crosscheck(scenario, tmp_path / "xc", partner_runs=[real], resume=True,
                           model_seeds=2)  # fmt: skip
    assert not (tmp_path / "xc" / "model-3").exists()
    assert {r.metric: r for r in again.rows}["per-receipt latency p50"].model_runs == tuple(
        alone[:2]
    )
    with pytest.raises(GossiplabError, match="--model-seeds 0: run the model at least once"):
        run_crosscheck(scenario, tmp_path / "xc0", partner_runs=[real], model_seeds=0)


def test_a_hop_only_a_later_real_run_saw_is_a_share_of_0_for_every_seed(tmp_path: Path) -> None:
    # Two real runs; the second reached one message's last node at hop 9, which neither
    # the first nor any model seed did. With one model run that row's model value is 0;
    # with seeds each seed's is 0 too.
    real = [_as_testbed_run(tmp_path, SPREAD, f"real-{k}") for k in (1, 2)]
    summary = json.loads((real[1] / "summary.json").read_text())
    summary["last_delivery_hop"]["histogram"]["9"] = 1
    (real[1] / "summary.json").write_text(json.dumps(summary))
    scenario = _write(tmp_path, "spread.toml", SPREAD)
    result = run_crosscheck(scenario, tmp_path / "xc", partner_runs=real, model_seeds=2)
    hop9 = {r.metric: r for r in result.rows}["LDH = 9 (share of messages)"]
    assert hop9.model_runs == (0.0, 0.0)
    assert hop9.model == 0.0
