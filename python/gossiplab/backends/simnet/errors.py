"""The simnet backend's user-facing error."""

from __future__ import annotations

from gossiplab.errors import GossiplabError


class SimnetError(GossiplabError):
    """The simnet runner could not run the scenario (a failed build, a runner that failed)."""
