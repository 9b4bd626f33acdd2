"""The testbed's gossipsub v2.0: refused unless $GOSSIPLAB_FORK_NODE names the v2.0 fork's
node (testbed/forknode), then run with that binary, within what the node can run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gossiplab.backends.testbed import binary
from gossiplab.backends.testbed.crosscheck import check_both, table_rows
from gossiplab.backends.testbed.errors import TestbedError
from gossiplab.backends.testbed.nodeconfig import protocol_config
from gossiplab.backends.testbed.support import unsupported_features
from gossiplab.errors import ScenarioError
from gossiplab.scenario import Scenario, load_scenario, parse_scenario
from gossiplab.scenario.rules import FORK_NODE_ENV

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "crosscheck" / "v20-fork.toml"


@pytest.fixture
def fork_node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    node = tmp_path / "gossiplab-forknode"
    node.write_text("#!/bin/sh\n")
    node.chmod(0o755)
    monkeypatch.setenv(FORK_NODE_ENV, str(node))
    return node


def v20(protocol: dict[str, Any] | None = None, **extra: Any) -> Scenario:
    data = {"backend": "testbed", "protocol": {"version": "2.0", **(protocol or {})}, **extra}
    return parse_scenario(data, ROOT)


def test_v20_is_refused_without_the_fork_node(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(FORK_NODE_ENV, raising=False)
    with pytest.raises(ScenarioError) as err:
        v20()
    (problem,) = err.value.problems
    assert problem.path == "protocol.version"
    assert FORK_NODE_ENV in (problem.hint or "")


def test_crosscheck_refuses_v20_without_the_fork_node(monkeypatch: pytest.MonkeyPatch) -> None:
    # A model scenario is checked against the testbed's limits before either runs.
    monkeypatch.delenv(FORK_NODE_ENV, raising=False)
    s = parse_scenario({"protocol": {"version": "2.0"}}, ROOT)
    with pytest.raises(ScenarioError) as err:
        check_both(s)
    assert [p.path for p in err.value.problems] == ["protocol.version"]


def test_the_committed_scenario_runs_with_the_fork_node(fork_node: Path) -> None:
    s = load_scenario(SCENARIO)
    assert unsupported_features(s) == []
    check_both(s)  # the model runs it too
    assert binary.node_binary("2.0") == fork_node


@pytest.mark.parametrize(
    ("protocol", "path"),
    [
        ({"announce_own": "eager"}, "protocol.announce_own"),
        ({"idontwant_on_publish": True}, "protocol.idontwant_on_publish"),
        ({"idontwant_to_sender": False}, "protocol.idontwant_to_sender"),
        ({"score": {"enabled": True}}, "protocol.score.enabled"),
        ({"direct_peers": [[0, 1]]}, "protocol.direct_peers"),
    ],
)
def test_what_the_fork_node_cannot_run_is_refused(
    fork_node: Path, protocol: dict[str, Any], path: str
) -> None:
    assert [p.path for p in unsupported_features(v20(protocol))] == [path]


def test_the_fork_node_records_no_go_execution_trace(fork_node: Path) -> None:
    refused = unsupported_features(v20(testbed={"go_trace": [0]}))
    assert [p.path for p in refused] == ["testbed.go_trace"]


def test_the_fork_rules_are_accepted_when_written_out(fork_node: Path) -> None:
    rules = {"announce_own": "coin", "idontwant_on_publish": False, "idontwant_to_sender": True}
    assert unsupported_features(v20(rules)) == []


def test_a_missing_fork_binary_names_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for value in (str(tmp_path / "absent"), str(tmp_path)):
        monkeypatch.setenv(FORK_NODE_ENV, value)
        with pytest.raises(TestbedError, match=FORK_NODE_ENV):
            binary.fork_node()
    plain = tmp_path / "not-executable"
    plain.write_text("")
    monkeypatch.setenv(FORK_NODE_ENV, str(plain))
    with pytest.raises(TestbedError, match=FORK_NODE_ENV):
        binary.fork_node()


def test_other_versions_keep_the_testbed_node(
    fork_node: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    own = Path("/own/gossiplab-node")
    monkeypatch.setattr(binary, "ensure_binary", lambda: own)
    assert binary.node_binary("1.2") == own
    assert binary.node_binary("2.0") == fork_node


def test_the_node_config_carries_the_lazy_push_parameters(fork_node: Path) -> None:
    config = protocol_config(v20({"D_announce": 3, "ineed_timeout": "250ms"}))
    assert (config["D_announce"], config["ineed_timeout_ns"]) == (3, 250_000_000)
    older = protocol_config(parse_scenario({"backend": "testbed"}, ROOT))
    assert "D_announce" not in older and "ineed_timeout_ns" not in older


def _summary(control: dict[str, int]) -> dict[str, Any]:
    return {"control": control, "last_delivery_hop": {"histogram": {}}}


def test_the_table_shows_v20_rows_only_where_they_are_counted() -> None:
    model = _summary({"iannounce": 0, "ineed": 0, "idontwant_transmissions_saved": 5})
    # go v0.17.0's node counts no saved copies and sends no IANNOUNCE: no such rows.
    names = {r.metric for r in table_rows(model, _summary({"idontwant": 3}))}
    assert not names & {"IANNOUNCE sent (items)", "transmissions saved by IDONTWANT"}
    fork = _summary({"iannounce": 4, "ineed": 2, "idontwant_transmissions_saved": 6})
    rows = {r.metric: (r.model, r.partner) for r in table_rows(model, fork)}
    assert rows["IANNOUNCE sent (items)"] == (0, 4)
    assert rows["INEED sent (items)"] == (0, 2)
    assert rows["transmissions saved by IDONTWANT"] == (5, 6)
