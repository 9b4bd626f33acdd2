"""[workload]: what is published, how fast, how big, by whom, on which topics."""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import Field, PlainValidator, model_validator
from pydantic_core import PydanticCustomError

from gossiplab.errors import Problem
from gossiplab.scenario.base import (
    MAX_SEED,
    MAX_U16,
    MAX_U32,
    Section,
    describe_value,
    is_int,
    raise_problems,
)
from gossiplab.scenario.partial import PartialConfig
from gossiplab.units import (
    NS_PER_SECOND,
    Duration,
    Rate,
    Size,
    UnitError,
    format_duration,
    format_rate,
    parse_duration,
    parse_rate,
    parse_size,
)
from gossiplab.workload import batch_count, batch_offset_ns

DEFAULT_MESSAGES = 100
DEFAULT_RATE = "10/s"


def _check_publishers(value: Any) -> Literal["random"] | list[int]:
    if value == "random":
        return "random"
    if isinstance(value, list) and value and all(is_int(v) and v >= 0 for v in value):
        if len(set(value)) == len(value):
            return list(value)
        raise PydanticCustomError(
            "gossiplab", "{message}", {"message": "lists a node twice", "hint": "list each id once"}
        )
    context = {
        "message": f'expected "random" or a list of node ids, got {describe_value(value)}',
        "hint": 'write publishers = "random" or e.g. publishers = [0, 5, 9]',
    }
    raise PydanticCustomError("gossiplab", "{message}", context)


Publishers = Annotated[Literal["random"] | list[int], PlainValidator(_check_publishers)]


def _parsed(parse: Any, value: Any) -> Any:
    try:
        return parse(value)
    except UnitError:
        return None


class WorkloadConfig(Section):
    """What is published: how many messages, how fast, how big, by whom, on which topics."""

    messages: int = Field(default=DEFAULT_MESSAGES, le=MAX_U32)  # >= 1, checked below
    rate: Rate = 10.0
    duration: Duration = 10 * NS_PER_SECOND
    arrival: Literal["uniform", "poisson"] = "uniform"
    size: Size = Field(default=1000, le=MAX_U32)
    publishers: Publishers = "random"
    batch: int = Field(default=1, ge=1)
    # "distinct": each message of a batch from another node; "same": one node publishes the
    # whole batch, one message after another (go's sequential topic.Publish calls).
    batch_publisher: Literal["distinct", "same"] = "distinct"
    topics: int = Field(default=1, ge=1, le=MAX_U16)
    warmup: Duration = 5 * NS_PER_SECOND
    # The first N messages published are left out of every metric, as those of the warm-up
    # (studies send a few first to open TCP windows).
    exclude_first: int = Field(default=0, ge=0, le=MAX_U32)
    cooldown: Duration = 10 * NS_PER_SECOND
    # The schedule's own seed (Poisson gaps, random publishers), so that the scenario's
    # seed can vary the protocol's randomness over one schedule; unset: the scenario's.
    seed: int | None = Field(default=None, ge=0, le=MAX_SEED)
    # Present: every message is a group of parts (gossipsub v1.3 partial messages), and
    # `size` is the group's full size (see PartialConfig.full_size).
    partial: PartialConfig | None = None

    @model_validator(mode="before")
    @classmethod
    def _derive_partial_size(cls, data: Any) -> Any:
        # With partial messages the message size follows from the parts; a given size that
        # disagrees is reported in _check, one that does not parse by its own field.
        if not isinstance(data, dict) or not isinstance(data.get("partial"), dict):
            return data
        full = _partial_full_size(data["partial"])
        if full is None or "size" in data:
            return data
        return {**data, "size": f"{full}B"}

    @model_validator(mode="before")
    @classmethod
    def _derive_messages_rate_duration(cls, data: Any) -> Any:
        # Any two of messages, rate and duration fix the third (the rate defaults to 10/s,
        # the count to 100); all three must agree. Derived values are written out resolved.
        # A value that does not parse is left alone: its own field reports it.
        if not isinstance(data, dict):
            return data
        data = dict(data)
        given = {key for key in ("messages", "rate", "duration") if key in data}
        messages = data.get("messages") if is_int(data.get("messages")) else None
        messages = messages if messages is not None and messages > 0 else None
        rate = _parsed(parse_rate, data.get("rate", DEFAULT_RATE))
        duration = _parsed(parse_duration, data["duration"]) if "duration" in data else None
        if "messages" not in given:
            if "duration" not in given:
                data["messages"] = messages = DEFAULT_MESSAGES
            elif rate is not None and duration is not None:
                data["messages"] = messages = _messages_from(rate, duration)
        if "rate" not in given:
            if "duration" in given and messages and duration:
                data["rate"] = rate = messages / (duration / NS_PER_SECOND)
            else:
                data["rate"] = DEFAULT_RATE
        if "duration" not in given and messages and rate:
            data["duration"] = f"{round(messages / rate * NS_PER_SECOND)}ns"
        return data

    @model_validator(mode="after")
    def _check(self) -> WorkloadConfig:
        problems: list[Problem] = []
        expected = _messages_from(self.rate, self.duration)
        if self.messages < 1:
            message = f"must be >= 1, got {self.messages}"
            hint = "publish at least one message: raise messages, or rate × duration"
            problems.append(Problem("messages", message, hint))
        elif expected != self.messages:
            message = (
                f"{self.messages} messages disagree with rate × duration = "
                f"{format_rate(self.rate)} × {format_duration(self.duration)} = {expected}"
            )
            hint = "give messages, or rate and duration, or make all three agree"
            problems.append(Problem("messages", message, hint))
        if self.duration == 0:
            problems.append(Problem("duration", "must be > 0", 'use e.g. duration = "60s"'))
        if self.batch > self.messages >= 1:
            message = f"must be <= messages ({self.messages}), got {self.batch}"
            problems.append(Problem("batch", message, "a batch holds at most all the messages"))
        elif self.planned_end_ns() > MAX_SEED:
            problems.append(Problem("rate", "the run would last over 290 years", "raise the rate"))
        if self.partial is not None and self.partial.full_size() != self.size:
            full = self.partial.full_size()
            message = (
                f"{self.size} B disagrees with the full size of a group of parts, "
                f"parts × (part_size + part_overhead) + full_overhead = {full} B"
            )
            hint = "remove size: with [workload.partial] it is derived from the parts"
            problems.append(Problem("size", message, hint))
        raise_problems(problems)
        return self

    def publish_span_ns(self) -> int:
        """Time from the first batch to the last with uniform arrival (Poisson: its mean)."""
        return batch_offset_ns(batch_count(self.messages, self.batch) - 1, self.batch, self.rate)

    def planned_end_ns(self) -> int:
        """When the run ends with uniform arrival: warm-up, publishing, cool-down."""
        return self.warmup + self.publish_span_ns() + self.cooldown


def _partial_full_size(partial: dict[str, Any]) -> int | None:
    """The full size a [workload.partial] table gives, or None if a field does not parse
    (PartialConfig then reports it)."""
    defaults = PartialConfig.model_fields
    values = []
    for name in ("parts", "part_size", "part_overhead", "full_overhead"):
        value = partial.get(name, defaults[name].default)
        value = value if name == "parts" else _parsed(parse_size, value)
        if not is_int(value):
            return None
        values.append(value)
    parts, part_size, part_overhead, full_overhead = values
    full = parts * (part_size + part_overhead) + full_overhead
    return full if 0 < full <= MAX_U32 else None


def _messages_from(rate: float, duration_ns: int) -> int:
    """round(rate × duration), or MAX_U32 + 1 when the product is out of any sensible range."""
    product = rate * (duration_ns / NS_PER_SECOND)
    return round(product) if math.isfinite(product) and product <= MAX_U32 else MAX_U32 + 1
