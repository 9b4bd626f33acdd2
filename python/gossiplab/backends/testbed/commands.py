"""Running the system commands the testbed needs, with errors that say what failed."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence

from gossiplab.backends.testbed.errors import TestbedError

# Where each command comes from, for the hint when it is missing.
PACKAGES = {"ip": "iproute2", "tc": "iproute2", "iptables": "iptables"}


def require_root() -> None:
    if os.geteuid() != 0:
        raise TestbedError(
            "the testbed backend needs root: it creates network namespaces, veth pairs, "
            "qdiscs and iptables rules; run it as root (e.g. with sudo), or use "
            'backend = "model"'
        )


def require_commands(names: Sequence[str]) -> None:
    missing = [name for name in names if shutil.which(name) is None]
    if missing:
        packages = sorted({PACKAGES.get(name, name) for name in missing})
        raise TestbedError(
            f"the testbed needs {', '.join(missing)}, which is not installed; "
            f"run `make install-testbed` (or apt-get install -y {' '.join(packages)})"
        )


def sh(args: Sequence[str], *, check: bool = True, timeout: float = 30) -> str:
    """Run a command and return its stdout; a failure raises TestbedError with its stderr."""
    try:
        done = subprocess.run(
            list(args), capture_output=True, text=True, timeout=timeout, check=False
        )
    except FileNotFoundError as err:
        raise TestbedError(f"cannot run {args[0]}: {err.strerror}") from None
    except subprocess.TimeoutExpired:
        raise TestbedError(f"`{' '.join(args)}` did not finish within {timeout:g} s") from None
    if check and done.returncode != 0:
        detail = (done.stderr or done.stdout).strip()
        raise TestbedError(f"`{' '.join(args)}` failed ({done.returncode}): {detail}")
    return done.stdout


def batch(lines: Sequence[str], tool: str = "ip", netns: str | None = None) -> None:
    """Run many `ip`/`tc` commands in one process (`-batch -`): much faster than one each.

    ``netns`` runs them all in that namespace (`-n`, which batch lines cannot carry).
    """
    if not lines:
        return
    text = "\n".join(lines) + "\n"
    where = ["-n", netns] if netns else []
    try:
        done = subprocess.run(
            [tool, *where, "-batch", "-"], input=text, capture_output=True, text=True, timeout=120
        )
    except FileNotFoundError as err:
        raise TestbedError(f"cannot run {tool}: {err.strerror}") from None
    if done.returncode != 0:
        raise TestbedError(f"`{tool} -batch` failed: {done.stderr.strip()}")
