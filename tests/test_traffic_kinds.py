"""The traffic kinds, one list in three languages: the engine's (Rust), the Go node's and
the event schema's (Python) must name the same kinds in the same column order, or the
two backends' traffic tables stop lining up."""

from __future__ import annotations

import re
from pathlib import Path

from gossiplab.analysis.tables import TRAFFIC_KINDS
from gossiplab.backends.model import start_engine
from gossiplab.scenario import parse_scenario
from gossiplab.topology import build_topology
from gossiplab.workload import build_schedule

REPO = Path(__file__).resolve().parent.parent


def _one_file(folder: Path, pattern: str, suffix: str) -> tuple[Path, str]:
    """The one source file under `folder` that matches `pattern`, and its text."""
    found = []
    for path in sorted(folder.rglob(f"*{suffix}")):
        text = path.read_text(encoding="utf-8")
        if re.search(pattern, text):
            found.append((path, text))
    assert len(found) == 1, f"expected one file matching {pattern!r}, found {found}"
    return found[0]


def rust_kinds() -> list[str]:
    """`enum Kind`'s variants by discriminant, named as the kinds table names them."""
    _, text = _one_file(REPO / "crates" / "engine" / "src", r"pub enum Kind \{", ".rs")
    body = text.split("pub enum Kind {", 1)[1].split("}", 1)[0]
    variants = dict((int(n), v) for v, n in re.findall(r"(\w+)\s*=\s*(\d+)", body))
    names = dict(re.findall(r"kind:\s*Kind::(\w+),\s*name:\s*\"(\w+)\"", text))
    assert set(names) == set(variants.values()), "every Kind needs one row in the table"
    return [names[variants[i]] for i in range(len(variants))]


def go_kinds() -> list[str]:
    """The Go node's kindNames, checked against the order of its kind constants."""
    path, text = _one_file(REPO / "testbed", r"kindNames\s*=\s*\[kindCount\]string\{", ".go")
    listed = text.split("kindNames = [kindCount]string{", 1)[1].split("}", 1)[0]
    names = re.findall(r'"(\w+)"', listed)
    constants = text.split("kindPayload = iota", 1)[1].split("kindCount", 1)[0].split()
    assert ["kind" + n.lower() for n in names[1:]] == [c.lower() for c in constants], path
    return names


def engine_kinds() -> list[str]:
    """The names the built engine attaches to its traffic table's kind codes."""
    s = parse_scenario({"topology": {"kind": "ring", "nodes": 4}}, REPO)
    topology = build_topology(s)
    engine = start_engine(s, topology, build_schedule(s, topology.nodes), 1_000_000)
    engine.run_until(1_000_000)
    return list(engine.tables()["kind_names"])


def test_rust_go_and_python_name_the_same_kinds_in_the_same_order() -> None:
    python = list(TRAFFIC_KINDS)
    assert rust_kinds() == python
    assert go_kinds() == python


def test_the_built_engine_uses_the_rust_sources_list() -> None:
    assert engine_kinds() == rust_kinds()
