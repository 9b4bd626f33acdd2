"""[protocol]: the pub/sub protocol and every gossipsub parameter, over a preset."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, model_validator

from gossiplab.errors import Problem
from gossiplab.scenario.base import MAX_U32, Section, is_int, raise_problems, range_problem
from gossiplab.scenario.presets import GO_DEFAULT, SCORE_PRESETS, over_preset, preset_of
from gossiplab.scenario.scoring import ScoreConfig
from gossiplab.units import Duration, Size

_Count = Annotated[int, Field(ge=0, le=MAX_U32)]
_AtLeastOne = Annotated[int, Field(ge=1, le=MAX_U32)]


# 1.3 is /meshsub/1.3.0: 1.2 plus the extensions control message (partial messages).
PROTOCOL_VERSIONS = ("1.0", "1.1", "1.2", "1.3", "2.0")


def _version_string(value: Any) -> Any:
    """TOML reads `version = 1.1` as a float; accept it and keep the string "1.1"."""
    if isinstance(value, float) and repr(value) in PROTOCOL_VERSIONS:
        return repr(value)
    if is_int(value) and f"{value}.0" in PROTOCOL_VERSIONS:
        return f"{value}.0"
    return value  # anything else is reported as written


class ProtocolConfig(Section):
    """The pub/sub protocol and every gossipsub parameter; omitted ones come from the preset."""

    name: Literal["floodsub", "gossipsub"] = "gossipsub"
    version: Annotated[
        Literal["1.0", "1.1", "1.2", "1.3", "2.0"], BeforeValidator(_version_string)
    ] = "1.1"
    preset: Literal["go-default", "rust-default", "ethereum"] = "go-default"
    D: _AtLeastOne
    D_lo: _AtLeastOne
    D_hi: _AtLeastOne
    D_lazy: _Count
    D_score: _Count
    D_out: _Count
    D_announce: _Count
    heartbeat: Duration
    heartbeat_initial_delay: Duration
    history_length: _AtLeastOne
    history_gossip: _Count
    gossip_factor: float
    gossip_retransmission: _Count
    fanout_ttl: Duration
    seen_ttl: Duration
    flood_publish: bool
    prune_backoff: Duration
    unsubscribe_backoff: Duration
    backoff_slack_ticks: _Count
    backoff_clear_ticks: _AtLeastOne
    graft_flood_threshold: Duration
    opportunistic_graft_ticks: _AtLeastOne
    opportunistic_graft_peers: _Count
    max_ihave_length: _Count
    max_ihave_messages: _Count
    iwant_followup_time: Duration
    idontwant_threshold: Size
    ineed_timeout: Duration
    peer_outbound_queue: int = Field(le=MAX_U32)  # >= 1, checked below with a better hint
    validate_queue: int = Field(le=MAX_U32)
    signing: Literal["strict-sign", "strict-no-sign"]
    message_id: Literal["go", "ethereum"]
    # v1.1 direct (explicit) peers: pairs of connected nodes that always forward every
    # message to each other, never mesh or gossip with each other, and answer GRAFT
    # with PRUNE (go's WithDirectPeers, configured on both ends).
    direct_peers: list[
        Annotated[list[Annotated[int, Field(ge=0)]], Field(min_length=2, max_length=2)]
    ] = Field(default_factory=list)
    # v1.1 peer exchange (go's WithPeerExchange): a PRUNE carries up to prune_peers other
    # topic peers, and the pruned node dials them if it trusts the pruner's score.
    peer_exchange: bool
    prune_peers: _Count
    score: ScoreConfig
    # Publisher and IDONTWANT rules where go v0.17.0 (1.2) and the v2.0 fork differ, or the
    # draft spec does; not preset values. announce_own: "coin" tosses the lazy-push coin
    # (D_announce / D) for the node's own messages too, as the v2.0 fork
    # (ppopth/go-libp2p-pubsub@cfecb8a gossipsub.go:1366-1372); "eager" sends them in full
    # to the whole mesh unless D_announce >= D (specs PR #653 draft). The two IDONTWANT
    # settings left unset take the version's reference: 1.2 as go v0.17.0 (on publish,
    # not to the sender), 2.0 as the fork (not on publish, to the sender too).
    announce_own: Literal["coin", "eager"] = "coin"
    idontwant_on_publish: bool | None = None
    idontwant_to_sender: bool | None = None

    @model_validator(mode="before")
    @classmethod
    def _apply_preset(cls, data: Any) -> Any:
        # What the user wrote beats the preset; the preset beats go's defaults.
        if not isinstance(data, dict):
            return data
        resolved = over_preset(data)
        score = data.get("score", {})
        preset = SCORE_PRESETS[preset_of(data)]
        resolved["score"] = {**preset, **score} if isinstance(score, dict) else score
        return resolved

    @model_validator(mode="after")
    def _check(self) -> ProtocolConfig:
        problems: list[Problem] = []
        keep_order = "keep D_lo <= D <= D_hi"
        if self.D_lo > self.D:
            problems.append(
                Problem("D_lo", f"must be <= D ({self.D}), got {self.D_lo}", keep_order)
            )
        if self.D_hi < self.D:
            problems.append(
                Problem("D_hi", f"must be >= D ({self.D}), got {self.D_hi}", keep_order)
            )
        if not (self.D_out < self.D_lo and 2 * self.D_out <= self.D):
            message = f"must be < D_lo ({self.D_lo}) and <= D/2 ({self.D / 2:g}), got {self.D_out}"
            problems.append(Problem("D_out", message, "lower D_out (go's default is 2)"))
        # D_announce is a v2.0 parameter: other versions never read it.
        bounded = ("D_score", "D_announce") if self.version == "2.0" else ("D_score",)
        for name in bounded:
            if getattr(self, name) > self.D:
                message = f"must be <= D ({self.D}), got {getattr(self, name)}"
                problems.append(Problem(name, message, f"lower {name} or raise D"))
        if self.history_gossip > self.history_length:
            message = (
                f"must be <= history_length ({self.history_length}), got {self.history_gossip}"
            )
            problems.append(
                Problem("history_gossip", message, "gossip about at most the history kept")
            )
        problems += range_problem("gossip_factor", self.gossip_factor, 0, 1, "e.g. 0.25")
        for name in ("heartbeat", "seen_ttl", "fanout_ttl"):
            if getattr(self, name) == 0:
                hint = f'use e.g. {name} = "{GO_DEFAULT[name]}"'
                problems.append(Problem(name, "must be > 0", hint))
        for name in ("peer_outbound_queue", "validate_queue"):
            if getattr(self, name) < 1:
                message = f"must be >= 1, got {getattr(self, name)}"
                problems.append(Problem(name, message, "a queue holds at least one entry (go: 32)"))
        if self.score.enabled and self.version == "1.0":
            message = "peer scoring needs gossipsub v1.1 or later"
            problems.append(Problem("score.enabled", message, 'set version = "1.1" or later'))
        problems += _idontwant_problems(self)
        raise_problems(problems)
        return self


def _idontwant_problems(p: ProtocolConfig) -> list[Problem]:
    """The IDONTWANT settings need a version that has IDONTWANT."""
    if p.name == "gossipsub" and p.version in ("1.2", "1.3", "2.0"):
        return []
    problems = []
    for name in ("idontwant_on_publish", "idontwant_to_sender"):
        if getattr(p, name) is not None:
            message = f"IDONTWANT is gossipsub v1.2 and later, got {p.name} {p.version}"
            problems.append(Problem(name, message, 'remove it, or set version = "1.2"'))
    return problems
