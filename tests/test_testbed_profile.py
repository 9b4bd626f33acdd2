"""The pprof reader against `go tool pprof`, on a CPU profile a testbed node recorded."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from gossiplab.backends.testbed.pprof import aggregate, layer_of, read_profile, top_table

PROFILE = Path(__file__).parent / "data" / "testbed-profile" / "cpu.pprof"
TOP_LINE = re.compile(r"^\s*\S+\s+([\d.]+)%\s+[\d.]+%\s+\S+\s+([\d.]+)%\s+(.+)$")


@pytest.mark.skipif(shutil.which("go") is None, reason="needs the Go toolchain's pprof")
def test_flat_and_cumulative_shares_match_go_tool_pprof() -> None:
    out = subprocess.run(
        ["go", "tool", "pprof", "-top", "-nodecount=1000", str(PROFILE)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    # go tool pprof marks functions seen only inlined with " (inline)".
    expected = {m[3].strip().removesuffix(" (inline)"): (float(m[1]), float(m[2]))
                for m in map(TOP_LINE.match, out.splitlines()) if m}  # fmt: skip
    assert expected, out
    profile = read_profile(PROFILE)
    assert profile.total > 0
    for function, (flat, cum) in expected.items():
        assert 100 * profile.flat.get(function, 0) / profile.total == pytest.approx(flat, abs=0.01)
        assert 100 * profile.cum.get(function, 0) / profile.total == pytest.approx(cum, abs=0.01)


def test_aggregate_over_nodes_adds_their_samples() -> None:
    one = aggregate([PROFILE])
    two = aggregate([PROFILE, PROFILE])
    assert two["profiles"] == 2
    assert two["cpu_s"] == pytest.approx(2 * one["cpu_s"])  # type: ignore[operator]
    assert two["top"] == one["top"]  # the same shares: both profiles are alike
    assert "flat%" in top_table(two)


def test_layers_name_the_usual_suspects() -> None:
    assert layer_of("crypto/internal/fips140/edwards25519/field.feMul").startswith("signing")
    assert layer_of("crypto/internal/fips140/sha256.blockSHANI").startswith("hashing")
    assert layer_of("github.com/libp2p/go-yamux/v5.(*Session).recv") == "muxer (yamux)"
    assert layer_of("github.com/libp2p/go-libp2p-pubsub.(*PubSub).handleIncomingRPC") == (
        "router (pubsub)"
    )
