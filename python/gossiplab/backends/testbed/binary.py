"""The Go binaries (the testbed node, the simnet runner): built once from testbed/, rebuilt
only when its sources change."""

from __future__ import annotations

import fcntl
import functools
import hashlib
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from gossiplab.backends.testbed.errors import TestbedError
from gossiplab.scenario.rules import FORK_NODE_ENV

BINARY_NAME = "gossiplab-node"
# The sources' hash is kept beside the binary: mtimes are meaningless in a fresh clone.
STAMP_SUFFIX = ".sha256"


def module_dir() -> Path:
    """The Go module: $GOSSIPLAB_TESTBED_DIR, else testbed/ of the checkout this runs from."""
    override = os.environ.get("GOSSIPLAB_TESTBED_DIR")
    here = Path(override) if override else Path(__file__).resolve().parents[4] / "testbed"
    if not (here / "go.mod").is_file():
        raise TestbedError(
            f"the Go module of the testbed is not at {here}; install gossiplab from a "
            "checkout (`make install`) or set GOSSIPLAB_TESTBED_DIR to its testbed/ folder"
        )
    return here


@dataclass(frozen=True)
class GoBinary:
    """A binary built from the Go module into its bin/ folder."""

    name: str
    command: tuple[str, ...]  # `go` arguments; "-o <path> <package>" follows
    package: str
    tests: bool = False  # built from _test.go files too (a `go test -c` binary)


NODE = GoBinary(BINARY_NAME, ("build", "-trimpath"), ".")


def sources_hash(module: Path, tests: bool = False) -> str:
    """Hash of go.mod, go.sum and every .go file of the module (its packages included)."""
    digest = hashlib.sha256()
    files = sorted(
        p
        for p in module.rglob("*")
        if (p.name in ("go.mod", "go.sum") or p.suffix == ".go")
        and "bin" not in p.relative_to(module).parts
        # forknode/ is a module of its own (the v2.0 fork's node), built by hand.
        and "forknode" not in p.relative_to(module).parts
    )
    for path in files:
        if path.name.endswith("_test.go") and not tests:
            continue
        name = path.relative_to(module).as_posix()
        digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def ensure_binary(target: GoBinary = NODE) -> Path:
    """The path of an up-to-date binary (gossiplab-node by default), building it if needed."""
    module = module_dir()
    binary = module / "bin" / target.name
    stamp = binary.with_name(target.name + STAMP_SUFFIX)
    wanted = sources_hash(module, target.tests)
    binary.parent.mkdir(exist_ok=True)
    # One build at a time, even across processes (parallel test workers, sweeps).
    with (binary.parent / ".build.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if binary.is_file() and stamp.is_file() and stamp.read_text().strip() == wanted:
            return binary
        go = shutil.which("go")
        if go is None:
            raise TestbedError(
                f"building {target.name} needs Go (go-libp2p v0.51.0 wants Go >= 1.25); "
                'install it, or use backend = "model"'
            )
        partial = binary.with_name(f".{target.name}.partial-{os.getpid()}")
        done = subprocess.run(
            [go, *target.command, "-o", str(partial), target.package],
            cwd=module,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            partial.unlink(missing_ok=True)
            raise TestbedError(f"building {target.name} failed:\n{done.stderr.strip()}")
        partial.replace(binary)
        stamp.write_text(wanted + "\n")
    versions.cache_clear()
    return binary


def fork_node() -> Path:
    """The v2.0 fork's node binary that $GOSSIPLAB_FORK_NODE names (testbed/forknode)."""
    value = os.environ.get(FORK_NODE_ENV, "")
    path = Path(value)
    if not value or not path.is_file() or not os.access(path, os.X_OK):
        raise TestbedError(
            f"{FORK_NODE_ENV}={value!r} is not an executable file; build gossiplab-forknode "
            "as testbed/forknode/README.md says and set it to the binary's path"
        )
    return path


def node_binary(version: str) -> Path:
    """The binary that runs the nodes: the fork's for gossipsub v2.0, else gossiplab-node."""
    return fork_node() if version == "2.0" else ensure_binary()


@functools.cache
def versions(binary: Path | None = None) -> dict[str, str]:
    """Go and the libp2p modules a node binary (gossiplab-node by default) was built with."""
    binary = binary or ensure_binary()
    out = subprocess.run([binary, "version"], capture_output=True, text=True, check=False)
    try:
        found = json.loads(out.stdout)
    except ValueError:
        return {}
    return {str(k): str(v) for k, v in found.items()}
