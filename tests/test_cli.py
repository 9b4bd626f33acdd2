"""The command line as a user meets it: exit codes, messages, files."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
QUICK = ROOT / "scenarios" / "examples" / "quick.toml"


def gossiplab(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gossiplab", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
    )


def test_run_writes_a_complete_results_folder(tmp_path: Path) -> None:
    out = tmp_path / "quick"
    done = gossiplab("run", QUICK, "-o", out, "--quiet")
    assert done.returncode == 0, done.stderr
    for name in ("scenario.toml", "publishes.parquet", "deliveries.parquet", "traffic.parquet"):
        assert (out / name).is_file(), name
    assert "report:" in done.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert summary["run"]["nodes"] == 50
    assert summary["messages"]["published"] == 200


def test_run_refuses_to_overwrite_without_force(tmp_path: Path) -> None:
    out = tmp_path / "quick"
    assert gossiplab("run", QUICK, "-o", out, "-q").returncode == 0
    again = gossiplab("run", QUICK, "-o", out, "-q")
    assert again.returncode == 2
    assert "--force" in again.stderr
    assert "Traceback" not in again.stderr
    assert gossiplab("run", QUICK, "-o", out, "-q", "--force").returncode == 0


def test_report_rebuilds_from_the_tables_alone(tmp_path: Path) -> None:
    out = tmp_path / "quick"
    assert gossiplab("run", QUICK, "-o", out, "-q").returncode == 0
    before = json.loads((out / "summary.json").read_text())
    (out / "report.html").unlink()
    (out / "summary.json").write_text(json.dumps({"run": before["run"]}))
    rebuilt = gossiplab("report", out)
    assert rebuilt.returncode == 0, rebuilt.stderr
    after = json.loads((out / "summary.json").read_text())
    assert after["delivery"] == before["delivery"]
    assert after["dissemination_ms"] == before["dissemination_ms"]
    assert (out / "report.html").is_file()


def test_validate_prints_the_resolved_scenario() -> None:
    done = gossiplab("validate", QUICK)
    assert done.returncode == 0, done.stderr
    # Defaults the file leaves out are written out in full.
    assert 'preset = "go-default"' in done.stdout
    assert "D_lo = 5" in done.stdout


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("[topology]\nkind = 'barabasi-albert'\nm = 0\n", "topology.m"),
        ("[network]\nlatncy = '5ms'\n", "network.latncy"),
        ("[network]\nloss = 1.5\n", "network.loss"),
        ("[workload\n", "line 1"),
    ],
)
def test_bad_scenarios_fail_cleanly_naming_the_field(tmp_path: Path, text: str, field: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    for command in ("validate", "run"):
        done = gossiplab(command, path, cwd=tmp_path)
        assert done.returncode == 2
        assert field in done.stderr
        assert "Traceback" not in done.stderr + done.stdout


def test_missing_files_are_reported_not_raised(tmp_path: Path) -> None:
    done = gossiplab("run", tmp_path / "nope.toml")
    assert done.returncode == 2 and "nope.toml" in done.stderr
    done = gossiplab("report", tmp_path / "no-results")
    assert done.returncode == 2 and "no-results" in done.stderr
    assert "Traceback" not in done.stderr


def _help_sources() -> list[tuple[str, str]]:
    """(command, help text as written) for every command and every parameter's help."""
    import typer.main

    from gossiplab.cli.main import app

    group = typer.main.get_command(app)
    found = []
    for name, command in group.commands.items():  # type: ignore[attr-defined]
        texts = [command.help or ""] + [getattr(p, "help", None) or "" for p in command.params]
        found += [(name, text) for text in texts if "[" in text]
    return found


def test_help_shows_the_brackets_it_is_written_with() -> None:
    # Rich reads "[sweep]" as a style tag and drops it, unless it is escaped "\[sweep]".
    sources = _help_sources()
    assert {"sweep", "run"} <= {name for name, _ in sources}
    for name, text in sources:
        shown = gossiplab(name, "--help").stdout
        for word in re.findall(r"\\?\[(\w+)\]", text):
            assert f"[{word}]" in shown, f"gossiplab {name} --help lost [{word}]"


def test_run_warns_when_the_headline_hides_lost_messages(tmp_path: Path) -> None:
    # Line 0-1-2 under floodsub, node 1 relays nothing: no message reaches node 2, so the
    # dissemination percentiles cover none of them.
    scenario = tmp_path / "cut.toml"
    scenario.write_text(
        '[topology]\nkind = "line"\nnodes = 3\n[network]\nlatency = "10ms"\n'
        '[protocol]\nname = "floodsub"\n'
        '[workload]\nmessages = 5\npublishers = [0]\nwarmup = "1s"\ncooldown = "1s"\n'
        '[[faults]]\nkind = "adversary"\nnodes = [1]\nbehaviour = "drop-forwards"\n'
    )
    done = gossiplab("run", scenario, "-o", tmp_path / "out", "-q")
    assert done.returncode == 0, done.stderr
    assert "warning: the dissemination percentiles cover only 0 of 5 messages" in done.stdout
