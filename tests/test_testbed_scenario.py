"""The [testbed] section, what the testbed refuses, and its capacity warning (no root needed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gossiplab.backends.testbed.ceiling import (
    CPU_PER_COPY_SIGNED_S,
    capacity_warning,
    estimated_cores,
)
from gossiplab.backends.testbed.crosscheck import check_both
from gossiplab.backends.testbed.support import check_supported, notes
from gossiplab.errors import ScenarioError
from gossiplab.scenario import parse_scenario, scenario_to_toml
from gossiplab.topology import build_topology


def load(tmp_path: Path, **sections: Any) -> Any:
    return parse_scenario({"backend": "testbed", **sections}, base_dir=tmp_path)


def problems(tmp_path: Path, **sections: Any) -> str:
    with pytest.raises(ScenarioError) as err:
        load(tmp_path, **sections)
    return str(err.value)


def test_defaults_are_tcp_noise_yamux_and_the_protocols_router(tmp_path: Path) -> None:
    s = load(tmp_path, protocol={"name": "floodsub"})
    assert (s.testbed.transport, s.testbed.security, s.testbed.muxer) == ("tcp", "noise", "yamux")
    assert s.testbed.router == "floodsub"
    assert 'router = "floodsub"' in scenario_to_toml(s)


def test_quic_brings_its_own_security_and_streams(tmp_path: Path) -> None:
    s = load(tmp_path, testbed={"transport": "quic"})
    assert (s.testbed.security, s.testbed.muxer) == ("tls", "quic")
    assert "testbed.transport" in problems(
        tmp_path, testbed={"transport": "quic", "security": "noise"}
    )


def test_secio_and_mplex_are_refused_with_the_reason(tmp_path: Path) -> None:
    text = problems(tmp_path, testbed={"security": "secio", "muxer": "mplex"})
    assert "testbed.security: 'secio' is not available in go-libp2p v0.51.0" in text
    assert "testbed.muxer: 'mplex' is not available in go-libp2p v0.51.0" in text


def test_router_must_match_the_protocol_unless_randomsub(tmp_path: Path) -> None:
    assert "testbed.router" in problems(tmp_path, testbed={"router": "floodsub"})
    assert load(tmp_path, testbed={"router": "randomsub"}).testbed.router == "randomsub"


def test_unknown_testbed_field_gets_a_hint(tmp_path: Path) -> None:
    assert "did you mean 'profile'" in problems(tmp_path, testbed={"profil": True})


def test_faults_are_refused_by_the_testbed(tmp_path: Path) -> None:
    s = load(tmp_path, faults=[{"kind": "crash", "count": 1, "at": "6s"}])
    with pytest.raises(ScenarioError, match="faults"):
        check_supported(s)


def test_crosscheck_refuses_what_either_backend_cannot_run_before_running(
    tmp_path: Path,
) -> None:
    s = load(tmp_path, faults=[{"kind": "crash", "count": 1, "at": "6s"}])
    with pytest.raises(ScenarioError, match=r"faults.*on the testbed"):
        check_both(s)


def test_capacity_warning_follows_copies_per_second(tmp_path: Path) -> None:
    # Full graph of 10 nodes with gossipsub D = 6: each node gets each message from its
    # 6 mesh peers, so 10 nodes × 6 copies × rate copies per second.
    s = load(tmp_path, topology={"kind": "full", "nodes": 10}, workload={"rate": "100/s"})
    expected = 100 * 10 * 6 * CPU_PER_COPY_SIGNED_S
    assert estimated_cores(s, build_topology(s)) == pytest.approx(expected)
    assert capacity_warning(s, build_topology(s), cores=2) is None  # under 0.6 × 2 cores
    heavy = load(tmp_path, topology={"kind": "full", "nodes": 10}, workload={"rate": "1000/s"})
    warning = capacity_warning(heavy, build_topology(heavy), cores=2)
    assert warning is not None and f"{10 * expected:.2f} cores" in warning


def test_shared_ips_are_refused_by_the_testbed(tmp_path: Path) -> None:
    s = load(tmp_path, topology={"kind": "line", "nodes": 4}, network={"shared_ips": [[0, 1]]})
    with pytest.raises(ScenarioError) as err:
        check_supported(s)
    assert "network.shared_ips" in str(err.value) and 'use backend = "model"' in str(err.value)


def test_per_class_loss_is_refused_not_ignored(tmp_path: Path) -> None:
    classes = [{"name": "a", "share": 0.5, "added_loss": 0.01}, {"name": "b", "share": 0.5}]
    s = load(tmp_path, network={"classes": classes})
    with pytest.raises(ScenarioError, match=r"network\.classes\[0\]\.added_loss"):
        check_supported(s)


def test_peer_exchange_direct_peers_and_app_scores_run_on_the_testbed(tmp_path: Path) -> None:
    s = load(
        tmp_path,
        topology={"kind": "line", "nodes": 4},
        protocol={
            "peer_exchange": True,
            "direct_peers": [[1, 2]],
            "score": {"enabled": True, "app_specific": [{"nodes": [3], "score": -1.0}]},
        },
    )
    check_supported(s)
    assert notes(s) == []
    randomsub = load(
        tmp_path,
        topology={"kind": "line", "nodes": 4},
        protocol={"direct_peers": [[1, 2]]},
        testbed={"router": "randomsub"},
    )
    assert any("direct_peers apply to gossipsub only" in note for note in notes(randomsub))
