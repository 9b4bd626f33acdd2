"""The simnet runner: a Go test binary (synctest needs a ``*testing.T``) built from
testbed/simnet by the same build-once logic as the testbed's node."""

from __future__ import annotations

from pathlib import Path

from gossiplab.backends.testbed.binary import GoBinary, ensure_binary, module_dir

RUNNER = GoBinary("gossiplab-simnet", ("test", "-c", "-trimpath"), "./simnet", tests=True)
# The modules a run's versions name (besides Go itself).
RECORDED = (
    "github.com/libp2p/go-libp2p",
    "github.com/libp2p/go-libp2p-pubsub",
    "github.com/marcopolo/simnet",
    "github.com/quic-go/quic-go",
)


def ensure_runner() -> Path:
    """The path of an up-to-date gossiplab-simnet, building it if needed."""
    return ensure_binary(RUNNER)


def pinned_versions(go_mod: Path | None = None) -> dict[str, str]:
    """The recorded modules' versions as go.mod pins them.

    A `go test -c` binary carries no module list in its build info, so the runner can
    name only Go's version; the versions it was built with are the ones go.mod requires.
    """
    path = go_mod or module_dir() / "go.mod"
    found: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        words = line.replace("require", " ").split()
        if len(words) >= 2 and words[0] in RECORDED:
            found[words[0]] = words[1]
    return found
