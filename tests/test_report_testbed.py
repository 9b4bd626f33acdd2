"""Testbed runs: the report shows the host's warnings and where the nodes' CPU went."""

from __future__ import annotations

import json
from pathlib import Path

from gossiplab.report.run_report import build_report
from gossiplab.runner import run
from gossiplab.scenario import parse_scenario


def test_testbed_warnings_and_profile_top_are_in_the_report(tmp_path: Path) -> None:
    s = parse_scenario({"topology": {"kind": "ring", "nodes": 6}}, base_dir=tmp_path)
    out = run(s, tmp_path / "run").out_dir
    summary = json.loads((out / "summary.json").read_text())
    # What a profiled testbed run records (gossiplab.backends.testbed.pprof.aggregate's shape).
    summary["run"]["testbed"] = {
        "warnings": ["the nodes need about 1.6 cores of this host's 2"],
        "profile": {
            "profiles": 6,
            "cpu_s": 1.5,
            "top": [{"function": "crypto/ed25519.Verify", "flat_share": 0.31, "cum_share": 0.4}],
            "layers": {"crypto": 0.4, "router": 0.2},
        },
    }
    (out / "summary.json").write_text(json.dumps(summary))
    html = build_report(out).read_text()
    assert "the nodes need about 1.6 cores" in html
    assert "crypto/ed25519.Verify" in html and "31.0%" in html and "40.0%" in html


def test_model_runs_have_no_testbed_sections(tmp_path: Path) -> None:
    s = parse_scenario({"topology": {"kind": "ring", "nodes": 6}}, base_dir=tmp_path)
    html = (run(s, tmp_path / "run").out_dir / "report.html").read_text()
    assert "Where the nodes" not in html and "Testbed warnings" not in html
