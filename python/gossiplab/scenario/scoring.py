"""[protocol.score]: peer scoring's thresholds and the score function's parameters."""

from __future__ import annotations

import itertools
from typing import Annotated

from pydantic import Field, model_validator

from gossiplab.errors import Problem
from gossiplab.scenario.base import Section, raise_problems
from gossiplab.units import NS_PER_SECOND, Duration, format_duration

_Weight = Annotated[float, Field(description="multiplies its score term")]
_Positive = Annotated[float, Field(ge=0)]
_Negative = Annotated[float, Field(le=0)]
_Decay = Annotated[float, Field(gt=0, lt=1, description="kept per decay_interval")]


class AppScore(Section):
    """P5: every node gives `nodes` this application-specific score."""

    nodes: list[Annotated[int, Field(ge=0)]] = Field(min_length=1)
    score: float


class ScoreConfig(Section):
    """Peer scoring (gossipsub v1.1): thresholds and the score function's parameters."""

    enabled: bool
    gossip_threshold: _Negative
    publish_threshold: _Negative
    graylist_threshold: _Negative
    accept_px_threshold: _Positive
    opportunistic_graft_threshold: _Positive
    topic_score_cap: _Positive
    topic_weight: _Positive
    time_in_mesh_weight: _Positive
    time_in_mesh_quantum: Duration
    time_in_mesh_cap: _Positive
    first_message_deliveries_weight: _Positive
    first_message_deliveries_decay: _Decay
    first_message_deliveries_cap: _Positive
    mesh_message_deliveries_weight: _Negative
    mesh_message_deliveries_decay: _Decay
    mesh_message_deliveries_threshold: _Positive
    mesh_message_deliveries_cap: _Positive
    mesh_message_deliveries_activation: Duration
    mesh_message_deliveries_window: Duration
    mesh_failure_penalty_weight: _Negative
    mesh_failure_penalty_decay: _Decay
    invalid_message_deliveries_weight: _Negative
    invalid_message_deliveries_decay: _Decay
    app_specific_weight: _Weight
    ip_colocation_factor_weight: _Negative
    ip_colocation_factor_threshold: float = Field(ge=1)
    behaviour_penalty_weight: _Negative
    behaviour_penalty_threshold: _Positive
    behaviour_penalty_decay: _Decay
    decay_interval: Duration
    decay_to_zero: _Decay
    retain_score: Duration
    # P5: the application's score of given nodes, the same at every node that scores them
    # (go's AppSpecificScore callback); nodes not listed score 0.
    app_specific: list[AppScore] = Field(default_factory=list)

    @model_validator(mode="after")
    def _check(self) -> ScoreConfig:
        problems: list[Problem] = []
        ordered = [
            ("graylist_threshold", self.graylist_threshold),
            ("publish_threshold", self.publish_threshold),
            ("gossip_threshold", self.gossip_threshold),
        ]
        for (low_name, low), (name, value) in itertools.pairwise(ordered):
            if value < low:
                message = f"must be >= {low_name} ({low}), got {value}"
                hint = "keep graylist_threshold <= publish_threshold <= gossip_threshold <= 0"
                problems.append(Problem(name, message, hint))
        if self.time_in_mesh_quantum == 0:
            problems.append(Problem("time_in_mesh_quantum", "must be > 0", 'use e.g. "1s"'))
        if self.mesh_message_deliveries_cap < self.mesh_message_deliveries_threshold:
            cap = self.mesh_message_deliveries_cap
            message = f"must be >= mesh_message_deliveries_threshold, got {cap}"
            hint = "raise the cap or lower the threshold"
            problems.append(Problem("mesh_message_deliveries_cap", message, hint))
        for name in ("decay_interval", "mesh_message_deliveries_activation"):
            if getattr(self, name) < NS_PER_SECOND:
                # go refuses both below one second (score_params.go).
                message = f"must be >= 1s, got {format_duration(getattr(self, name))}"
                problems.append(
                    Problem(name, message, "use at least 1s, as go-libp2p-pubsub requires")
                )
        raise_problems(problems)
        return self
