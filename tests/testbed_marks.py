"""Marks of every test that runs real nodes in network namespaces."""

from __future__ import annotations

import os
import shutil

import pytest

REAL_NODES = [
    pytest.mark.testbed,
    pytest.mark.skipif(
        os.geteuid() != 0 or shutil.which("ip") is None or shutil.which("iptables") is None,
        reason="needs root, iproute2 and iptables (make test installs them)",
    ),
]
