"""[[faults]]: crashes, churn, partitions, slow nodes, adversaries and topic leaves."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from gossiplab.errors import Problem
from gossiplab.scenario.base import MAX_U16, MAX_U32, Section, raise_problems
from gossiplab.units import Duration, Rate, format_duration

_NodeIds = Annotated[list[Annotated[int, Field(ge=0)]], Field(min_length=1)]
_SELECTORS = ("nodes", "count", "share")


class NodeSelection(Section):
    """Which nodes a fault hits: exactly one of a list of ids, a count, or a share."""

    nodes: _NodeIds | None = None
    count: int | None = Field(default=None, ge=1)
    share: float | None = Field(default=None, gt=0, le=1)

    def selection_problems(self) -> list[Problem]:
        given = [name for name in _SELECTORS if getattr(self, name) is not None]
        if len(given) == 1:
            return []
        said = f"got {', '.join(given)}" if given else "got none"
        hint = "e.g. count = 5, or share = 0.1, or nodes = [0, 7]"
        return [Problem("", f"give exactly one of nodes, count, share ({said})", hint)]


def _window_problems(start: int, end: int) -> list[Problem]:
    if start < end:
        return []
    message = f"must be after start ({format_duration(start)}), got {format_duration(end)}"
    return [Problem("end", message, "the fault needs a time window: start < end")]


class CrashFault(NodeSelection):
    """Nodes stop for good at time ``at``."""

    kind: Literal["crash"] = "crash"
    at: Duration

    @model_validator(mode="after")
    def _check(self) -> CrashFault:
        raise_problems(self.selection_problems())
        return self


class ChurnFault(Section):
    """Between start and end nodes leave at ``leave_rate`` and come back after ``rejoin_after``."""

    kind: Literal["churn"] = "churn"
    start: Duration
    end: Duration
    leave_rate: Rate
    rejoin_after: Duration

    @model_validator(mode="after")
    def _check(self) -> ChurnFault:
        raise_problems(_window_problems(self.start, self.end))
        return self


class PartitionFault(Section):
    """Between start and end, links between different groups carry nothing."""

    kind: Literal["partition"] = "partition"
    start: Duration
    end: Duration
    groups: list[_NodeIds] | None = Field(default=None, min_length=1)
    split: float | None = Field(default=None, gt=0, lt=1)

    @model_validator(mode="after")
    def _check(self) -> PartitionFault:
        problems = _window_problems(self.start, self.end)
        if (self.groups is None) == (self.split is None):
            hint = "e.g. split = 0.5, or groups = [[0, 1, 2], [3, 4]]"
            problems.append(Problem("", "give exactly one of groups, split", hint))
        raise_problems(problems)
        return self


class SlowFault(NodeSelection):
    """Nodes with ``cpu_factor`` × the CPU cost and ``bandwidth_factor`` × the bandwidth."""

    kind: Literal["slow"] = "slow"
    cpu_factor: float = Field(default=1.0, gt=0)
    bandwidth_factor: float = Field(default=1.0, gt=0)

    @model_validator(mode="after")
    def _check(self) -> SlowFault:
        problems = self.selection_problems()
        if self.cpu_factor == 1 and self.bandwidth_factor == 1:
            message = "cpu_factor and bandwidth_factor are both 1: the fault changes nothing"
            problems.append(Problem("", message, "e.g. cpu_factor = 4 or bandwidth_factor = 0.1"))
        raise_problems(problems)
        return self


class AdversaryFault(NodeSelection):
    """Nodes that misbehave in one way; ``delay`` applies to delay-forwards only and
    ``invalid_per_heartbeat`` to spam-invalid only."""

    kind: Literal["adversary"] = "adversary"
    behaviour: Literal[
        "drop-forwards",
        "ignore-iwant",
        "ignore-ineed",
        "delay-forwards",
        "spam-ihave",
        "spam-invalid",
    ]
    delay: Duration = 0
    # spam-invalid: messages that fail validation, sent to each topic peer per heartbeat.
    invalid_per_heartbeat: int = Field(default=0, ge=0, le=MAX_U32)

    @model_validator(mode="after")
    def _check(self) -> AdversaryFault:
        problems = self.selection_problems()
        problems += self._setting_problems("delay", "delay-forwards", 'delay = "500ms"')
        problems += self._setting_problems(
            "invalid_per_heartbeat", "spam-invalid", "invalid_per_heartbeat = 10"
        )
        raise_problems(problems)
        return self

    def _setting_problems(self, name: str, owner: str, example: str) -> list[Problem]:
        """A setting that behaviour `owner` needs, and that no other behaviour takes."""
        value = getattr(self, name)
        if self.behaviour == owner and not value:
            return [Problem(name, f"must be > 0 for {owner}", f"e.g. {example}")]
        if self.behaviour != owner and value:
            message = f"applies only to behaviour '{owner}', not '{self.behaviour}'"
            return [Problem(name, message, f"remove {name}")]
        return []


class LeaveFault(NodeSelection):
    """Nodes leave a topic at ``at`` (unsubscribe) and, with ``rejoin_after``, join again."""

    kind: Literal["leave"] = "leave"
    topic: int = Field(default=0, ge=0, le=MAX_U16)
    at: Duration
    rejoin_after: Duration | None = None

    @model_validator(mode="after")
    def _check(self) -> LeaveFault:
        problems = self.selection_problems()
        if self.rejoin_after == 0:
            message = "must be > 0 (or left out: the nodes stay out of the topic)"
            problems.append(Problem("rejoin_after", message, 'e.g. rejoin_after = "30s"'))
        raise_problems(problems)
        return self


FaultConfig = Annotated[
    CrashFault | ChurnFault | PartitionFault | SlowFault | AdversaryFault | LeaveFault,
    Field(discriminator="kind"),
]
