"""The simnet runner: a Go test binary (synctest needs a ``*testing.T``) built from
testbed/simnet by the same build-once logic as the testbed's node."""

from __future__ import annotations

from pathlib import Path

from gossiplab.backends.testbed.binary import GoBinary, ensure_binary

RUNNER = GoBinary("gossiplab-simnet", ("test", "-c", "-trimpath"), "./simnet", tests=True)


def ensure_runner() -> Path:
    """The path of an up-to-date gossiplab-simnet, building it if needed."""
    return ensure_binary(RUNNER)
