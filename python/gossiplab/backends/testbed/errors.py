"""The testbed's user-facing error."""

from __future__ import annotations

from gossiplab.errors import GossiplabError


class TestbedError(GossiplabError):
    """The testbed could not run (missing root or tools, a node that would not start...)."""

    __test__ = False  # not a pytest test class, despite the name
