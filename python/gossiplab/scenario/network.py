"""[network]: latency, loss, bandwidth and CPU cost, node classes and regions."""

from __future__ import annotations

import copy
import difflib
import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, Discriminator, Field, Tag, model_validator
from pydantic_core import PydanticCustomError

from gossiplab.errors import Problem
from gossiplab.network_presets import CLASS_PRESETS, REGION_PRESETS
from gossiplab.scenario.base import MAX_U32, SHARE_TOLERANCE, Section, raise_problems
from gossiplab.units import (
    Bandwidth,
    Duration,
    Size,
    UnitError,
    format_duration,
    parse_bandwidth,
    parse_duration,
)

# What uplink_sharing = "shadow" sets unless given: Shadow's legacy TCP starts from 2
# packets (tcp_cong_reno.c:tcp_cong_reno_init sets cwnd = 1; the SYN's acknowledgement
# adds one) and has no restart after idle.
SHADOW_TCP_DEFAULTS = {"initial_window": 2, "slow_start_after_idle": False}


class UniformLatency(Section):
    """One-way latency per link drawn once, uniformly in [min, max]."""

    distribution: Literal["uniform"] = "uniform"
    min: Duration
    max: Duration

    @model_validator(mode="after")
    def _check(self) -> UniformLatency:
        if self.min > self.max:
            message = (
                f"must be >= min ({format_duration(self.min)}), got {format_duration(self.max)}"
            )
            raise_problems([Problem("max", message, "swap min and max")])
        return self


class NormalLatency(Section):
    """One-way latency per link drawn once from a normal distribution (negatives become 0)."""

    distribution: Literal["normal"] = "normal"
    mean: Duration
    std: Duration


class LognormalLatency(Section):
    """One-way latency per link drawn once: median × exp(sigma × standard normal)."""

    distribution: Literal["lognormal"] = "lognormal"
    median: Duration
    sigma: float = Field(ge=0)

    @model_validator(mode="after")
    def _check(self) -> LognormalLatency:
        if self.median == 0:
            raise_problems([Problem("median", "must be > 0", 'use e.g. median = "50ms"')])
        return self


def _latency_kind(value: Any) -> str | None:
    """Which form a latency takes: a table names its distribution, anything else is constant."""
    if isinstance(value, dict):
        return value.get("distribution") if isinstance(value.get("distribution"), str) else None
    if isinstance(value, BaseModel):
        return str(getattr(value, "distribution", ""))
    return "constant"


# A constant latency is stored as plain int nanoseconds (`latency = "50ms"`), a distribution
# as its model. The callable discriminator makes pydantic report only the chosen form's errors.
LatencyConfig = Annotated[
    Annotated[Duration, Tag("constant")]
    | Annotated[UniformLatency, Tag("uniform")]
    | Annotated[NormalLatency, Tag("normal")]
    | Annotated[LognormalLatency, Tag("lognormal")],
    Discriminator(_latency_kind),
]


# Region and class preset names; tests check they match gossiplab.network_presets.
RegionPreset = Literal["ethereum", "pubsub-shadow"]
ClassPreset = Literal["reliable", "home", "laggy", "constrained", "bad"]


class NodeClass(Section):
    """A share of the nodes with their own bandwidth, CPU cost and link quality.

    A preset (ethshadow's reliability classes) fills upload, download, added_latency and
    added_loss; fields written next to it win. The name defaults to the preset's.
    """

    name: str = Field(min_length=1)
    preset: ClassPreset | None = None
    share: float = Field(gt=0, le=1)
    upload: Bandwidth
    download: Bandwidth
    cpu_per_message: Duration
    # Added at each end of a link, as ethshadow does: a link's one-way latency is the base
    # latency + the sender's added_latency + the receiver's; loss likewise.
    added_latency: Duration = 0
    added_loss: float = Field(default=0.0, ge=0, lt=1)


_CLASS_INHERITS = ("upload", "download", "cpu_per_message")


def _with_class_preset(item: Any) -> Any:
    """A class table with its preset's fields filled in underneath the ones written."""
    if not isinstance(item, dict):
        return item
    preset = item.get("preset")
    if not isinstance(preset, str):
        return item
    if preset not in CLASS_PRESETS:
        return {"name": preset, **item}  # the Literal check reports the preset, not the name
    return {"name": preset, **CLASS_PRESETS[preset], **item}


WEIGHT_TOLERANCE = 1e-3
"""How far region weights may add up from 1: shares rounded to a few digits are accepted."""


class RegionTable(Section):
    """Where the nodes are: region names, the share of nodes in each, latency between them."""

    preset: RegionPreset | None = None
    names: list[str] = Field(min_length=1)
    weights: list[float]
    # One-way latency from the row's region to the column's (it may differ per direction).
    latency: list[list[Duration]]

    @model_validator(mode="after")
    def _check(self) -> RegionTable:
        raise_problems(_region_name_problems(self) + _region_table_problems(self))
        return self


def _region_name_problems(r: RegionTable) -> list[Problem]:
    problems: list[Problem] = []
    seen: set[str] = set()
    for i, name in enumerate(r.names):
        if not name.strip():
            hint = 'give every region a name, e.g. "europe"'
            problems.append(Problem(f"names[{i}]", "must not be empty", hint))
        elif name in seen:
            message = f"the name '{name}' is used by an earlier region"
            problems.append(Problem(f"names[{i}]", message, "give each region its own name"))
        seen.add(name)
    return problems


def _region_table_problems(r: RegionTable) -> list[Problem]:
    n = len(r.names)
    problems: list[Problem] = []
    if len(r.weights) != n:
        message = f"has {len(r.weights)} value(s) for {n} region(s)"
        problems.append(Problem("weights", message, "give one weight per name, in that order"))
    else:
        for i, weight in enumerate(r.weights):
            if not weight > 0:
                hint = "leave the region out rather than give it no weight"
                problems.append(Problem(f"weights[{i}]", f"must be > 0, got {weight}", hint))
        # Weights are used in proportion to their sum, so a sum of rounded shares will do.
        total = math.fsum(r.weights)
        if abs(total - 1.0) > WEIGHT_TOLERANCE:
            message = f"must add up to 1 (within {WEIGHT_TOLERANCE:g}), got {total:.9g}"
            problems.append(Problem("weights", message, "adjust the weight of each region"))
    if len(r.latency) != n:
        message = f"has {len(r.latency)} row(s) for {n} region(s)"
        hint = "give one row per region in the order of names (row = from, column = to)"
        problems.append(Problem("latency", message, hint))
    for i, row in enumerate(r.latency):
        if len(row) != n:
            message = f"has {len(row)} value(s) for {n} region(s)"
            hint = "give one latency per region in the order of names (column = to)"
            problems.append(Problem(f"latency[{i}]", message, hint))
    return problems


def _expand_region_preset(value: Any) -> Any:
    # `regions = "ethereum"` is short for `regions = { preset = "ethereum" }`; a table with
    # a preset starts from the preset's names, weights and latency and overrides what it gives.
    if isinstance(value, str):
        if value not in REGION_PRESETS:
            close = difflib.get_close_matches(value, list(REGION_PRESETS), n=1)
            hint = (
                f"did you mean '{close[0]}'?" if close else "use a table {names, weights, latency}"
            )
            message = f"unknown region preset '{value}' (built in: {', '.join(REGION_PRESETS)})"
            context = {"message": message, "hint": hint}
            raise PydanticCustomError("gossiplab", "{message}", context)
        value = {"preset": value}
    if isinstance(value, dict):
        preset = value.get("preset")
        if isinstance(preset, str) and preset in REGION_PRESETS:
            return {**copy.deepcopy(REGION_PRESETS[preset]), **value}
    return value


class NetworkConfig(Section):
    latency: LatencyConfig = 0
    jitter: Duration = 0
    loss: float = Field(default=0.0, ge=0, lt=1)
    upload: Bandwidth = 0
    download: Bandwidth = 0
    cpu_per_message: Duration = 0
    # TCP initial congestion window of a new connection, in segments (Linux: IW10, RFC 6928);
    # 0 turns slow start off.
    initial_window: int = Field(default=10, ge=0, le=MAX_U32)
    # After idle for longer than the retransmission timeout a connection's window falls
    # back towards the initial one (Linux's net.ipv4.tcp_slow_start_after_idle = 1).
    slow_start_after_idle: bool = True
    # quic-go's pacer on every connection (10 packets at once, then twice the window per
    # round trip), as simnet's QUIC hosts send; it paces the window, so needs slow start.
    pacing: bool = False
    # Round trips a topology connection takes, from its dial at time 0, before the dialer
    # sends its subscriptions; the listener's follow one latency later. 0: at time 0.
    connect_round_trips: int = Field(default=0, ge=0, le=100)
    # How a node's uplink serves its connections: "fair" (turns of 16 KiB: TCP flows
    # through the kernel's FIFO qdisc, measured), "fifo" (whole RPCs in queueing order),
    # "window" (each connection releases what its congestion window allows into one FIFO
    # queue) or "shadow" (Shadow's stack: windows, the queue in write order). See
    # docs/network-calibration.md.
    uplink_sharing: Literal["fair", "fifo", "window", "shadow"] = "fair"
    # How a node's limited downlink serves the connections arriving on it: "fair" (the
    # connections being read share it equally, as the packets of concurrent connections
    # interleave in a real link's queue), "fifo" (whole RPCs one after the other, in
    # arrival order) or "packets" (one FIFO of the pieces congestion windows release,
    # which acknowledgements cross too; not with uplink_sharing = "fifo"). See
    # docs/network.md.
    downlink_sharing: Literal["fair", "fifo", "packets"] = "fair"
    # Bytes per connection the transport takes from the 32-RPC outbound queue (yamux's
    # initial stream window); what it took can no longer be overtaken by IDONTWANT.
    send_buffer: Size = Field(default=256 * 1024, ge=0)
    regions: Annotated[RegionTable | None, BeforeValidator(_expand_region_preset)] = None
    classes: list[NodeClass] = Field(default_factory=list)
    # Groups of nodes behind one IP address each (every other node has its own): what
    # peer scoring's IP colocation factor (P6) counts, e.g. a Sybil operator's nodes.
    shared_ips: list[Annotated[list[Annotated[int, Field(ge=0)]], Field(min_length=2)]] = Field(
        default_factory=list
    )

    @model_validator(mode="before")
    @classmethod
    def _shadow_tcp(cls, data: Any) -> Any:
        # Shadow's TCP defaults, written out in the resolved scenario.
        if isinstance(data, dict) and data.get("uplink_sharing") == "shadow":
            return {**SHADOW_TCP_DEFAULTS, **data}
        return data

    @model_validator(mode="before")
    @classmethod
    def _classes_inherit(cls, data: Any) -> Any:
        # A class that leaves out upload/download/cpu_per_message gets its preset's value, or
        # else the network-wide one, written out in the resolved scenario. Invalid network-wide
        # values are reported once, at their own path, rather than again in every class.
        if not isinstance(data, dict) or not isinstance(data.get("classes"), list):
            return data
        parsers = {"upload": parse_bandwidth, "download": parse_bandwidth}
        parsers["cpu_per_message"] = parse_duration
        defaults = {"upload": "unlimited", "download": "unlimited", "cpu_per_message": "0ms"}
        inherited = {}
        for key in _CLASS_INHERITS:
            value = data.get(key, defaults[key])
            try:
                parsers[key](value)
                inherited[key] = value
            except UnitError:
                inherited[key] = defaults[key]
        classes = [
            {**inherited, **item} if isinstance(item, dict) else item
            for item in map(_with_class_preset, data["classes"])
        ]
        return {**data, "classes": classes}

    @model_validator(mode="after")
    def _check(self) -> NetworkConfig:
        problems: list[Problem] = []
        if self.classes:
            total = math.fsum(c.share for c in self.classes)
            if abs(total - 1.0) > SHARE_TOLERANCE:
                message = f"shares must add up to 1, got {total:.9g}"
                problems.append(Problem("classes", message, "adjust the share of each class"))
        seen: set[str] = set()
        for i, node_class in enumerate(self.classes):
            if node_class.name in seen:
                message = f"the name '{node_class.name}' is used by an earlier class"
                problems.append(
                    Problem(f"classes[{i}].name", message, "give each class its own name")
                )
            seen.add(node_class.name)
        problems += _shadow_problems(self)
        if self.downlink_sharing == "packets" and self.uplink_sharing == "fifo":
            message = (
                '"packets" reads the pieces that congestion windows release, but '
                'uplink_sharing = "fifo" writes whole RPCs without windows'
            )
            fix = 'set uplink_sharing = "fair" (the default), "window" or "shadow"'
            problems.append(Problem("downlink_sharing", message, fix))
        if self.pacing and self.initial_window == 0:
            message = "paces the congestion window, but initial_window = 0 turns it off"
            fix = "set initial_window (28 for QUIC) or pacing = false"
            problems.append(Problem("pacing", message, fix))
        problems += _geography_latency_problems(self) + _link_loss_problems(self)
        raise_problems(problems)
        return self

    def has_bandwidth_limit(self) -> bool:
        return bool(self.upload or self.download) or any(
            c.upload or c.download for c in self.classes
        )

    def has_download_limit(self) -> bool:
        return bool(self.download) or any(c.download for c in self.classes)

    def has_cpu_cost(self) -> bool:
        return bool(self.cpu_per_message) or any(c.cpu_per_message for c in self.classes)


def _shadow_problems(net: NetworkConfig) -> list[Problem]:
    # Shadow's TCP has neither; with them the setting would no longer be Shadow's stack.
    if net.uplink_sharing != "shadow":
        return []
    problems = []
    fix = 'remove it, or use uplink_sharing = "window" for Linux or QUIC windows'
    if net.slow_start_after_idle:
        message = 'Shadow\'s TCP never restarts a window after idle (uplink_sharing = "shadow")'
        problems.append(Problem("slow_start_after_idle", message, fix))
    if net.pacing:
        message = 'Shadow\'s TCP does not pace (uplink_sharing = "shadow")'
        problems.append(Problem("pacing", message, fix))
    return problems


def _geography_latency_problems(net: NetworkConfig) -> list[Problem]:
    # A region matrix gives every link its latency; adding a second base latency on top
    # would double-count it silently, so the two are exclusive. Per-node extra delay
    # belongs in a class's added_latency.
    if net.regions is not None and net.latency != 0:
        message = "cannot be combined with network.regions, whose matrix gives every link's latency"
        hint = "drop network.latency (per-node extra delay goes into a class's added_latency)"
        return [Problem("latency", message, hint)]
    if not isinstance(net.latency, int) and any(c.added_latency for c in net.classes):
        # The engine draws distribution latencies itself; adding class latencies would need
        # the draws in Python.
        message = (
            f"a {net.latency.distribution} distribution cannot be combined with the classes' "
            "added_latency"
        )
        hint = 'use a constant latency or network.regions, or set added_latency = "0ms"'
        return [Problem("latency", message, hint)]
    return []


def _link_loss_problems(net: NetworkConfig) -> list[Problem]:
    # A link loses network.loss + added_loss of each end (ethshadow's rule). Refused rather
    # than clamped: a link that loses every segment would stall TCP, not model a network.
    if not net.classes:
        return []
    worst = max(range(len(net.classes)), key=lambda i: net.classes[i].added_loss)
    node_class = net.classes[worst]
    total = net.loss + 2 * node_class.added_loss
    if total < 1:
        return []
    message = (
        f"a link between two '{node_class.name}' nodes would lose network.loss + "
        f"2 x added_loss = {total:.6g} of its segments; it must stay below 1"
    )
    hint = "lower this class's added_loss or network.loss"
    return [Problem(f"classes[{worst}].added_loss", message, hint)]
