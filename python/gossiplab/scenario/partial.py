"""[workload.partial]: every message is a group of parts (gossipsub v1.3 partial messages).

A group stands for e.g. a PeerDAS data column: one part (cell) per blob. Nodes that enable
the extension exchange parts metadata (a bitmap of the parts they hold) and only the parts
the other side lacks; others get the full message. What a node holds before a group is
published is drawn from its mempool (``mempool``), and which nodes enable the extension
from ``roles``. go-libp2p-pubsub v0.17.0 leaves what to send to the application; the only
application rule offered is ``"go-reference"``, go's own test application
(gossipsub_test.go:minimalTestPartialMessage), generalised to ``parts`` parts.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from gossiplab.errors import Problem
from gossiplab.scenario.base import MAX_U16, SHARE_TOLERANCE, Section, raise_problems
from gossiplab.units import Size

# A node's parts are a 128-bit set in the engine (u128); go's bitmap has no such cap.
MAX_PARTS = 128
# go's minimum group TTL in heartbeats (partialmessages/partialmsgs.go: minGroupTTL).
MIN_GROUP_TTL = 3


class MempoolConfig(Section):
    """What a node holds before a group is published: each part with probability ``p``, or
    all but exactly ``missing`` parts. Drawn per node per block (a workload batch)."""

    p: float | None = None
    missing: int | None = Field(default=None, ge=0, le=MAX_PARTS)

    @model_validator(mode="before")
    @classmethod
    def _default_p(cls, data: Any) -> Any:
        # Neither given: nodes hold nothing beforehand (plain dissemination of parts).
        if isinstance(data, dict) and "p" not in data and "missing" not in data:
            return {**data, "p": 0.0}
        return data

    @model_validator(mode="after")
    def _check(self) -> MempoolConfig:
        problems: list[Problem] = []
        if self.p is not None and self.missing is not None:
            hint = "give p (a probability per part) or missing (a count per node), not both"
            problems.append(Problem("missing", "cannot be combined with p", hint))
        if self.p is not None and not 0.0 <= self.p <= 1.0:
            message = f"must be between 0 and 1, got {self.p}"
            problems.append(Problem("p", message, "use e.g. p = 0.9"))
        raise_problems(problems)
        return self


class RolesConfig(Section):
    """Shares of nodes that request partial messages, or only support sending them; the
    rest do not enable the extension. Publishers always request."""

    requests: float = 1.0
    supports: float = 0.0

    @model_validator(mode="after")
    def _check(self) -> RolesConfig:
        problems: list[Problem] = []
        for name in ("requests", "supports"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                message = f"must be between 0 and 1, got {value}"
                problems.append(Problem(name, message, "a share of the nodes, e.g. 0.5"))
        if not problems and self.requests + self.supports > 1.0 + SHARE_TOLERANCE:
            message = f"requests + supports = {self.requests + self.supports:g} exceeds 1"
            problems.append(Problem("supports", message, "the two shares split one set of nodes"))
        raise_problems(problems)
        return self


class PartialConfig(Section):
    """Messages as groups of parts, exchanged with the v1.3 partial-messages extension."""

    # False: the same groups sent only as full messages (a paired baseline for sweeps).
    enabled: bool = True
    parts: int = Field(default=48, ge=1, le=MAX_PARTS)
    part_size: Size = Field(default=2048, ge=1)
    part_overhead: Size = 48
    full_overhead: Size = 0
    group_id_size: Size = Field(default=32, ge=1, le=MAX_U16)
    eager_push: bool = False
    full_fallback: bool = True
    rule: Literal["go-reference"] = "go-reference"
    group_ttl_heartbeats: int = Field(default=MIN_GROUP_TTL, ge=0, le=255)
    peer_group_limit_per_topic: int = Field(default=255, ge=1, le=MAX_U16)
    peer_group_limit_per_peer: int = Field(default=8, ge=1, le=MAX_U16)
    mempool: MempoolConfig = Field(default_factory=lambda: MempoolConfig.model_validate({}))
    roles: RolesConfig = RolesConfig()

    @model_validator(mode="after")
    def _check(self) -> PartialConfig:
        missing = self.mempool.missing
        if missing is not None and missing > self.parts:
            message = f"must be <= parts ({self.parts}), got {missing}"
            raise_problems(
                [Problem("mempool.missing", message, "a node misses at most every part")]
            )
        return self

    def full_size(self) -> int:
        """Bytes of a group sent as one full message: every part with its overhead, plus the
        rest of the full message (header, commitments)."""
        return self.parts * (self.part_size + self.part_overhead) + self.full_overhead

    def group_ttl(self) -> int:
        """The TTL go applies: max(GroupTTLByHeatbeat, 3) (partialmsgs.go:Init)."""
        return max(self.group_ttl_heartbeats, MIN_GROUP_TTL)
