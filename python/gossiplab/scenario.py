"""The scenario: one TOML file that describes one experiment, and its fully resolved form.

Loading runs in three steps, and a user sees every mistake at once:

1. TOML syntax (``tomllib``); an error names the line and column.
2. Structure and the rules of each section (the pydantic models below). Keys are checked
   strictly (an unknown key is an error with a did-you-mean hint), types are not coerced
   ("100" is not a number), and each section's own rules (``D_lo <= D``) are checked here.
3. Rules that span sections (publisher ids below the node count, fault times within the run).
   They run once every section is well-formed.

Every failure becomes a ``Problem`` with a dotted path and a hint, raised together as one
``ScenarioError``. Defaults that depend on other fields are resolved while loading (protocol
preset, topology seed, workload count/rate/duration, node-class bandwidths, the node count of
an edges file), so a ``Scenario`` is complete and ``scenario_to_toml`` writes every value out.
"""

from __future__ import annotations

import copy
import difflib
import hashlib
import itertools
import json
import math
import re
import tomllib
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import tomli_w
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    PlainValidator,
    PrivateAttr,
    Tag,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from gossiplab.errors import Problem, ScenarioError
from gossiplab.network_presets import CLASS_PRESETS, REGION_PRESETS
from gossiplab.topology import read_edges_file
from gossiplab.units import (
    NS_PER_SECOND,
    Bandwidth,
    Duration,
    Rate,
    Size,
    UnitError,
    format_duration,
    format_rate,
    parse_bandwidth,
    parse_duration,
    parse_rate,
)
from gossiplab.workload import batch_count, batch_offset_ns

MAX_SEED = 2**63 - 1  # TOML integers are signed 64-bit
MAX_U32 = 2**32 - 1  # node ids, sizes and message indices are stored as uint32
MAX_U16 = 2**16 - 1  # topic indices are stored as uint16
SHARE_TOLERANCE = 1e-9


# --------------------------------------------------------------------------------------------
# Reporting problems from inside validators
# --------------------------------------------------------------------------------------------


def _raise_problems(problems: list[Problem]) -> None:
    """Raise the problems a validator found as one pydantic error; paths are relative to it."""
    if problems:
        context = {"count": len(problems), "problems": problems}
        raise PydanticCustomError("gossiplab_problems", "{count} problem(s)", context)


def _range_problem(path: str, value: float, low: float, high: float, what: str) -> list[Problem]:
    if low <= value <= high:
        return []
    return [Problem(path, f"must be between {low} and {high}, got {value}", f"use {what}")]


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_index(part: str) -> bool:
    """An array index in a dotted path; ASCII only, since "²".isdigit() is true too."""
    return part.isascii() and part.isdigit()


class _Section(BaseModel):
    """Common settings: unknown keys are errors, no type coercion, no NaN, immutable."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, allow_inf_nan=False)


# --------------------------------------------------------------------------------------------
# [topology]
# --------------------------------------------------------------------------------------------

DEFAULT_NODES = 100
DEFAULT_TOPOLOGY_KIND = "barabasi-albert"  # what the 2019 Whiteblock/EF testbed used
_Nodes = Annotated[int, Field(description="number of nodes, ids 0..nodes-1")]
_TopologySeed = Annotated[
    int, Field(ge=0, le=MAX_SEED, description="defaults to the scenario seed")
]


def _nodes_problems(nodes: int) -> list[Problem]:
    if nodes < 2:
        return [Problem("nodes", f"must be >= 2, got {nodes}", "use an integer from 2 upwards")]
    if nodes > MAX_U32:
        # Node ids are stored as uint32 in every table.
        return [Problem("nodes", f"must be <= {MAX_U32}, got {nodes}", "use fewer nodes")]
    return []


def _peer_count_problems(name: str, value: int, nodes: int) -> list[Problem]:
    """A per-node neighbour count must leave room: 1 <= value <= nodes-1."""
    if 1 <= value <= nodes - 1:
        return []
    bound = ">= 1" if value < 1 else f"<= nodes-1 = {nodes - 1}"
    return [Problem(name, f"must be {bound}, got {value}", "use an integer from 1 to nodes-1")]


class BarabasiAlbertTopology(_Section):
    """Preferential attachment, exactly networkx.barabasi_albert_graph(nodes, m, seed)."""

    kind: Literal["barabasi-albert"] = "barabasi-albert"
    nodes: _Nodes = DEFAULT_NODES
    m: int = 6
    seed: _TopologySeed = 1
    allow_disconnected: bool = False

    @model_validator(mode="after")
    def _check(self) -> BarabasiAlbertTopology:
        problems = _nodes_problems(self.nodes)
        _raise_problems(problems or _peer_count_problems("m", self.m, self.nodes))
        return self


class RandomRegularTopology(_Section):
    """Every node has exactly ``degree`` neighbours: networkx.random_regular_graph."""

    kind: Literal["random-regular"] = "random-regular"
    nodes: _Nodes = DEFAULT_NODES
    degree: int = 10
    seed: _TopologySeed = 1
    allow_disconnected: bool = False

    @model_validator(mode="after")
    def _check(self) -> RandomRegularTopology:
        problems = _nodes_problems(self.nodes)
        problems = problems or _peer_count_problems("degree", self.degree, self.nodes)
        if not problems and (self.nodes * self.degree) % 2:
            message = f"nodes × degree must be even, got {self.nodes} × {self.degree}"
            problems.append(Problem("degree", message, "make degree or nodes even"))
        _raise_problems(problems)
        return self


class ErdosRenyiTopology(_Section):
    """Each pair is connected with probability p: networkx.gnp_random_graph."""

    kind: Literal["erdos-renyi"] = "erdos-renyi"
    nodes: _Nodes = DEFAULT_NODES
    p: float = 0.1
    seed: _TopologySeed = 1
    allow_disconnected: bool = False

    @model_validator(mode="after")
    def _check(self) -> ErdosRenyiTopology:
        problems = _nodes_problems(self.nodes)
        if not 0 < self.p <= 1:
            problems.append(Problem("p", f"must be > 0 and <= 1, got {self.p}", "use e.g. 0.1"))
        _raise_problems(problems)
        return self


class FullTopology(_Section):
    """Every node connects to every other; the smaller id dials."""

    kind: Literal["full"] = "full"
    nodes: _Nodes = DEFAULT_NODES
    allow_disconnected: bool = False

    @model_validator(mode="after")
    def _check(self) -> FullTopology:
        _raise_problems(_nodes_problems(self.nodes))
        return self


class ConnectRandomTopology(_Section):
    """Each node dials k distinct random peers; the union of the dials is the graph."""

    kind: Literal["connect-random"] = "connect-random"
    nodes: _Nodes = DEFAULT_NODES
    k: int = 8
    seed: _TopologySeed = 1
    allow_disconnected: bool = False

    @model_validator(mode="after")
    def _check(self) -> ConnectRandomTopology:
        problems = _nodes_problems(self.nodes)
        _raise_problems(problems or _peer_count_problems("k", self.k, self.nodes))
        return self


class LineTopology(_Section):
    """0 - 1 - 2 - ... - (nodes-1); node i dials i+1."""

    kind: Literal["line"] = "line"
    nodes: _Nodes = DEFAULT_NODES
    allow_disconnected: bool = False

    @model_validator(mode="after")
    def _check(self) -> LineTopology:
        _raise_problems(_nodes_problems(self.nodes))
        return self


class RingTopology(_Section):
    """A closed line; node i dials (i+1) mod nodes."""

    kind: Literal["ring"] = "ring"
    nodes: _Nodes = DEFAULT_NODES
    allow_disconnected: bool = False

    @model_validator(mode="after")
    def _check(self) -> RingTopology:
        _raise_problems(_nodes_problems(self.nodes))
        return self


def _context_base_dir(info: ValidationInfo) -> Path:
    context = info.context if isinstance(info.context, dict) else {}
    return Path(context.get("base_dir") or Path.cwd())


class EdgesTopology(_Section):
    """Edges read from a file of lines "a b" (a dials b), relative to the scenario's folder."""

    kind: Literal["edges"] = "edges"
    file: str
    nodes: _Nodes = Field(
        description="must equal the largest id + 1; read from the file if omitted"
    )
    allow_disconnected: bool = False

    @model_validator(mode="before")
    @classmethod
    def _nodes_from_file(cls, data: Any, info: ValidationInfo) -> Any:
        # The node count is part of the resolved scenario, so the file is read while loading.
        if not isinstance(data, dict):
            return data
        if not isinstance(data.get("file"), str):
            # Without a readable file name the count cannot be known; the file's own problem
            # is reported, and a placeholder keeps a second "nodes is required" from hiding it.
            return {"nodes": 2, **data}
        given = data.get("nodes") if _is_int(data.get("nodes")) else None
        path = _context_base_dir(info) / data["file"]
        edges = read_edges_file(path, display=data["file"], nodes=given)
        problems = [Problem("file", p.message, p.hint) for p in edges.problems]
        if not problems and "nodes" not in data:
            data = {**data, "nodes": edges.max_id + 1}
        elif not problems and given != edges.max_id + 1:
            message = f"is {given}, but the largest id in '{data['file']}' is {edges.max_id}"
            hint = f"set nodes = {edges.max_id + 1}, or leave it out to read it from the file"
            problems.append(Problem("nodes", message, hint))
        _raise_problems(problems)
        return data

    @model_validator(mode="after")
    def _check(self) -> EdgesTopology:
        _raise_problems(_nodes_problems(self.nodes))
        return self


TopologyConfig = Annotated[
    BarabasiAlbertTopology
    | RandomRegularTopology
    | ErdosRenyiTopology
    | FullTopology
    | ConnectRandomTopology
    | LineTopology
    | RingTopology
    | EdgesTopology,
    Field(discriminator="kind"),
]
SEEDED_TOPOLOGY_KINDS = ("barabasi-albert", "random-regular", "erdos-renyi", "connect-random")


# --------------------------------------------------------------------------------------------
# [network]
# --------------------------------------------------------------------------------------------


class UniformLatency(_Section):
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
            _raise_problems([Problem("max", message, "swap min and max")])
        return self


class NormalLatency(_Section):
    """One-way latency per link drawn once from a normal distribution (negatives become 0)."""

    distribution: Literal["normal"] = "normal"
    mean: Duration
    std: Duration


class LognormalLatency(_Section):
    """One-way latency per link drawn once: median × exp(sigma × standard normal)."""

    distribution: Literal["lognormal"] = "lognormal"
    median: Duration
    sigma: float = Field(ge=0)

    @model_validator(mode="after")
    def _check(self) -> LognormalLatency:
        if self.median == 0:
            _raise_problems([Problem("median", "must be > 0", 'use e.g. median = "50ms"')])
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
RegionPreset = Literal["ethereum"]
ClassPreset = Literal["reliable", "home", "laggy", "constrained", "bad"]


class NodeClass(_Section):
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


class RegionTable(_Section):
    """Where the nodes are: region names, the share of nodes in each, latency between them."""

    preset: RegionPreset | None = None
    names: list[str] = Field(min_length=1)
    weights: list[float]
    # One-way latency from the row's region to the column's (it may differ per direction).
    latency: list[list[Duration]]

    @model_validator(mode="after")
    def _check(self) -> RegionTable:
        _raise_problems(_region_name_problems(self) + _region_table_problems(self))
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
        total = math.fsum(r.weights)
        if abs(total - 1.0) > SHARE_TOLERANCE:
            message = f"must add up to 1, got {total:.9g}"
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


class NetworkConfig(_Section):
    latency: LatencyConfig = 0
    jitter: Duration = 0
    loss: float = Field(default=0.0, ge=0, lt=1)
    upload: Bandwidth = 0
    download: Bandwidth = 0
    cpu_per_message: Duration = 0
    # TCP initial congestion window of a new connection, in segments (Linux: IW10, RFC 6928);
    # 0 turns slow start off.
    initial_window: int = Field(default=10, ge=0, le=MAX_U32)
    regions: Annotated[RegionTable | None, BeforeValidator(_expand_region_preset)] = None
    classes: list[NodeClass] = []
    # Groups of nodes behind one IP address each (every other node has its own): what
    # peer scoring's IP colocation factor (P6) counts, e.g. a Sybil operator's nodes.
    shared_ips: list[Annotated[list[Annotated[int, Field(ge=0)]], Field(min_length=2)]] = []

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
        problems += _geography_latency_problems(self) + _link_loss_problems(self)
        _raise_problems(problems)
        return self

    def has_bandwidth_limit(self) -> bool:
        return bool(self.upload or self.download) or any(
            c.upload or c.download for c in self.classes
        )

    def has_cpu_cost(self) -> bool:
        return bool(self.cpu_per_message) or any(c.cpu_per_message for c in self.classes)


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


# --------------------------------------------------------------------------------------------
# [protocol]
# --------------------------------------------------------------------------------------------

# go-libp2p-pubsub defaults (protocol-notes §6; gossipsub.go:52-82, pubsub.go, validation.go).
GO_DEFAULT: dict[str, Any] = {
    "D": 6,
    "D_lo": 5,  # the spec says 4; go uses 5
    "D_hi": 12,
    "D_lazy": 6,
    "D_score": 4,
    "D_out": 2,
    "D_announce": 4,  # v2.0 draft (specs PR #653; go PR #587)
    "heartbeat": "1s",
    "heartbeat_initial_delay": "100ms",
    "history_length": 5,
    "history_gossip": 3,
    "gossip_factor": 0.25,
    "gossip_retransmission": 3,
    "fanout_ttl": "60s",
    "seen_ttl": "120s",
    "flood_publish": False,  # go never enables it by default, unlike the spec, rust and js
    "prune_backoff": "60s",
    "unsubscribe_backoff": "10s",
    # go forgets a backoff only at every 15th heartbeat, once it expired more than 2 s ago
    # (2 × the package-level 1 s GossipSubHeartbeatInterval, which per-router params do not
    # change): at a 1 s heartbeat that is 2 ticks.
    "backoff_slack_ticks": 2,
    "backoff_clear_ticks": 15,
    "graft_flood_threshold": "10s",
    "opportunistic_graft_ticks": 60,
    "opportunistic_graft_peers": 2,
    "max_ihave_length": 5000,
    "max_ihave_messages": 10,
    "iwant_followup_time": "3s",
    "idontwant_threshold": "1024B",  # go sends IDONTWANT when len(data) >= 1024
    "ineed_timeout": "400ms",  # v2.0 draft
    "peer_outbound_queue": 32,  # RPCs, not bytes
    "validate_queue": 32,
    "signing": "strict-sign",
    "message_id": "go",
    # v1.1 peer exchange: off unless WithPeerExchange(true); 16 peers per PRUNE.
    "peer_exchange": False,
    "prune_peers": 16,
}

# rust-libp2p gossipsub (config.rs): go's values except these.
RUST_DEFAULT: dict[str, Any] = {
    **GO_DEFAULT,
    "heartbeat_initial_delay": "5s",
    "seen_ttl": "60s",
    "flood_publish": True,
    # rust's queue also has 5 s publish / 1 s forward timeouts, which are not modelled.
    "peer_outbound_queue": 5000,
    # rust has no validation queue; a bound this large is never reached, so nothing drops.
    "validate_queue": 1_000_000,
    # rust sends IDONTWANT when the Message *protobuf* is > 1000 B, go when the *data* is
    # >= 1024 B; gossiplab compares the data size, so 1001 B is the nearest equivalent.
    "idontwant_threshold": "1001B",
    # rust sweeps expired backoffs every heartbeat with one heartbeat of slack.
    "backoff_slack_ticks": 1,
    "backoff_clear_ticks": 1,
    # rust's message id (base58 source + decimal seqno) is longer than go's; sizes use go's.
}

# Ethereum consensus clients (consensus-specs p2p-interface; Prysm): go's values except these.
ETHEREUM: dict[str, Any] = {
    **GO_DEFAULT,
    "D": 8,
    "D_lo": 6,
    "D_hi": 12,
    "D_lazy": 6,
    "heartbeat": "700ms",
    "history_length": 6,
    "history_gossip": 3,
    "seen_ttl": "768s",  # SLOT_DURATION_MS * SLOTS_PER_EPOCH * 2 // 1000
    "flood_publish": False,  # Prysm leaves go's default
    "signing": "strict-no-sign",
    "message_id": "ethereum",
    "peer_outbound_queue": 1000,  # Prysm --pubsub-queue-size
    "validate_queue": 1000,
    # go's fixed 2 s backoff slack is 2.86 heartbeats of 700 ms; rounded up to whole ticks.
    "backoff_slack_ticks": 3,
}

PROTOCOL_PRESETS: dict[str, dict[str, Any]] = {
    "go-default": GO_DEFAULT,
    "rust-default": RUST_DEFAULT,
    "ethereum": ETHEREUM,
}

# Peer scoring. go ships no default parameters (every score and threshold is 0 without
# WithPeerScore), so the defaults below are rust-libp2p's (peer_score/params.rs), which js
# shares except for topic_score_cap; where rust has no default a sensible value is noted.
RUST_SCORE: dict[str, Any] = {
    "enabled": False,
    "gossip_threshold": -10.0,
    "publish_threshold": -50.0,
    "graylist_threshold": -80.0,
    "accept_px_threshold": 10.0,
    "opportunistic_graft_threshold": 20.0,
    "topic_score_cap": 3600.0,
    "topic_weight": 0.5,
    "time_in_mesh_weight": 1.0,  # P1
    "time_in_mesh_quantum": "1ms",
    "time_in_mesh_cap": 3600.0,
    "first_message_deliveries_weight": 1.0,  # P2
    "first_message_deliveries_decay": 0.5,
    "first_message_deliveries_cap": 2000.0,
    "mesh_message_deliveries_weight": -1.0,  # P3
    "mesh_message_deliveries_decay": 0.5,
    "mesh_message_deliveries_threshold": 20.0,
    "mesh_message_deliveries_cap": 100.0,
    "mesh_message_deliveries_activation": "5s",
    "mesh_message_deliveries_window": "10ms",
    "mesh_failure_penalty_weight": -1.0,  # P3b
    "mesh_failure_penalty_decay": 0.5,
    "invalid_message_deliveries_weight": -1.0,  # P4
    "invalid_message_deliveries_decay": 0.3,
    "app_specific_weight": 10.0,  # P5, of the scores in app_specific
    "ip_colocation_factor_weight": -5.0,  # P6, of nodes sharing an IP (network.shared_ips)
    "ip_colocation_factor_threshold": 10.0,
    "behaviour_penalty_weight": -10.0,  # P7
    "behaviour_penalty_threshold": 0.0,
    "behaviour_penalty_decay": 0.2,
    "decay_interval": "1s",
    "decay_to_zero": 0.1,
    "retain_score": "3600s",
}
# Prysm's thresholds (beacon-chain/p2p/gossip_scoring_params.go); its per-topic weights are
# computed from the beacon chain's message rates, so the parameters stay rust's.
PRYSM_SCORE: dict[str, Any] = {
    **RUST_SCORE,
    "gossip_threshold": -4000.0,
    "publish_threshold": -8000.0,
    "graylist_threshold": -16000.0,
    "accept_px_threshold": 100.0,
    "opportunistic_graft_threshold": 5.0,
}
SCORE_PRESETS: dict[str, dict[str, Any]] = {
    "go-default": RUST_SCORE,
    "rust-default": RUST_SCORE,
    "ethereum": PRYSM_SCORE,
}

_Count = Annotated[int, Field(ge=0, le=MAX_U32)]
_AtLeastOne = Annotated[int, Field(ge=1, le=MAX_U32)]
_Weight = Annotated[float, Field(description="multiplies its score term")]
_Positive = Annotated[float, Field(ge=0)]
_Negative = Annotated[float, Field(le=0)]
_Decay = Annotated[float, Field(gt=0, lt=1, description="kept per decay_interval")]


class AppScore(_Section):
    """P5: every node gives `nodes` this application-specific score."""

    nodes: list[Annotated[int, Field(ge=0)]] = Field(min_length=1)
    score: float


class ScoreConfig(_Section):
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
    app_specific: list[AppScore] = []

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
        _raise_problems(problems)
        return self


PROTOCOL_VERSIONS = ("1.0", "1.1", "1.2", "2.0")


def _version_string(value: Any) -> Any:
    """TOML reads `version = 1.1` as a float; accept it and keep the string "1.1"."""
    if isinstance(value, float) and repr(value) in PROTOCOL_VERSIONS:
        return repr(value)
    if _is_int(value) and f"{value}.0" in PROTOCOL_VERSIONS:
        return f"{value}.0"
    return value  # anything else is reported as written


class ProtocolConfig(_Section):
    """The pub/sub protocol and every gossipsub parameter; omitted ones come from the preset."""

    name: Literal["floodsub", "gossipsub"] = "gossipsub"
    version: Annotated[Literal["1.0", "1.1", "1.2", "2.0"], BeforeValidator(_version_string)] = (
        "1.1"
    )
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
    ] = []
    # v1.1 peer exchange (go's WithPeerExchange): a PRUNE carries up to prune_peers other
    # topic peers, and the pruned node dials them if it trusts the pruner's score.
    peer_exchange: bool
    prune_peers: _Count
    score: ScoreConfig

    @model_validator(mode="before")
    @classmethod
    def _apply_preset(cls, data: Any) -> Any:
        # What the user wrote beats the preset; the preset beats go's defaults.
        if not isinstance(data, dict):
            return data
        preset = data.get("preset", "go-default")
        preset = preset if isinstance(preset, str) and preset in PROTOCOL_PRESETS else "go-default"
        resolved = {**PROTOCOL_PRESETS[preset], **data}
        score = data.get("score", {})
        resolved["score"] = {**SCORE_PRESETS[preset], **score} if isinstance(score, dict) else score
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
        for name in ("D_score", "D_announce"):
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
        problems += _range_problem("gossip_factor", self.gossip_factor, 0, 1, "e.g. 0.25")
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
        _raise_problems(problems)
        return self


# --------------------------------------------------------------------------------------------
# [workload]
# --------------------------------------------------------------------------------------------

DEFAULT_MESSAGES = 100
DEFAULT_RATE = "10/s"


def _check_publishers(value: Any) -> Literal["random"] | list[int]:
    if value == "random":
        return "random"
    if isinstance(value, list) and value and all(_is_int(v) and v >= 0 for v in value):
        if len(set(value)) == len(value):
            return list(value)
        raise PydanticCustomError(
            "gossiplab", "{message}", {"message": "lists a node twice", "hint": "list each id once"}
        )
    context = {
        "message": f'expected "random" or a list of node ids, got {_describe_value(value)}',
        "hint": 'write publishers = "random" or e.g. publishers = [0, 5, 9]',
    }
    raise PydanticCustomError("gossiplab", "{message}", context)


Publishers = Annotated[Literal["random"] | list[int], PlainValidator(_check_publishers)]


def _parsed(parse: Any, value: Any) -> Any:
    try:
        return parse(value)
    except UnitError:
        return None


class WorkloadConfig(_Section):
    """What is published: how many messages, how fast, how big, by whom, on which topics."""

    messages: int = Field(default=DEFAULT_MESSAGES, le=MAX_U32)  # >= 1, checked below
    rate: Rate = 10.0
    duration: Duration = 10 * NS_PER_SECOND
    arrival: Literal["uniform", "poisson"] = "uniform"
    size: Size = Field(default=1000, le=MAX_U32)
    publishers: Publishers = "random"
    batch: int = Field(default=1, ge=1)
    topics: int = Field(default=1, ge=1, le=MAX_U16)
    warmup: Duration = 5 * NS_PER_SECOND
    cooldown: Duration = 10 * NS_PER_SECOND

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
        messages = data.get("messages") if _is_int(data.get("messages")) else None
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
        _raise_problems(problems)
        return self

    def publish_span_ns(self) -> int:
        """Time from the first batch to the last with uniform arrival (Poisson: its mean)."""
        return batch_offset_ns(batch_count(self.messages, self.batch) - 1, self.batch, self.rate)

    def planned_end_ns(self) -> int:
        """When the run ends with uniform arrival: warm-up, publishing, cool-down."""
        return self.warmup + self.publish_span_ns() + self.cooldown


def _messages_from(rate: float, duration_ns: int) -> int:
    """round(rate × duration), or MAX_U32 + 1 when the product is out of any sensible range."""
    product = rate * (duration_ns / NS_PER_SECOND)
    return round(product) if math.isfinite(product) and product <= MAX_U32 else MAX_U32 + 1


# --------------------------------------------------------------------------------------------
# [[faults]]
# --------------------------------------------------------------------------------------------

_NodeIds = Annotated[list[Annotated[int, Field(ge=0)]], Field(min_length=1)]
_SELECTORS = ("nodes", "count", "share")


class _NodeSelection(_Section):
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


class CrashFault(_NodeSelection):
    """Nodes stop for good at time ``at``."""

    kind: Literal["crash"] = "crash"
    at: Duration

    @model_validator(mode="after")
    def _check(self) -> CrashFault:
        _raise_problems(self.selection_problems())
        return self


class ChurnFault(_Section):
    """Between start and end nodes leave at ``leave_rate`` and come back after ``rejoin_after``."""

    kind: Literal["churn"] = "churn"
    start: Duration
    end: Duration
    leave_rate: Rate
    rejoin_after: Duration

    @model_validator(mode="after")
    def _check(self) -> ChurnFault:
        _raise_problems(_window_problems(self.start, self.end))
        return self


class PartitionFault(_Section):
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
        _raise_problems(problems)
        return self


class SlowFault(_NodeSelection):
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
        _raise_problems(problems)
        return self


class AdversaryFault(_NodeSelection):
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
        _raise_problems(problems)
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


class LeaveFault(_NodeSelection):
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
        _raise_problems(problems)
        return self


FaultConfig = Annotated[
    CrashFault | ChurnFault | PartitionFault | SlowFault | AdversaryFault | LeaveFault,
    Field(discriminator="kind"),
]


# --------------------------------------------------------------------------------------------
# [output] and the scenario
# --------------------------------------------------------------------------------------------


class OutputConfig(_Section):
    receipts: bool = False  # also write receipts.parquet (every copy, duplicates included)
    mode: Literal["full", "aggregate"] = "full"


# --------------------------------------------------------------------------------------------
# [testbed]: only read by the testbed backend (real go-libp2p-pubsub nodes)
# --------------------------------------------------------------------------------------------

# What go-libp2p v0.51.0 no longer ships, and what to say instead of silently substituting.
_GONE_FROM_GO_LIBP2P = {
    ("security", "secio"): "go-libp2p no longer ships it: use noise or tls",
    ("muxer", "mplex"): "go-libp2p no longer ships it: use yamux",
}


class TestbedConfig(_Section):
    """How the testbed backend runs the scenario: libp2p stack, router, profiling, limits."""

    transport: Literal["tcp", "quic"] = "tcp"
    # Resolved from the transport: noise + yamux over TCP; QUIC has its own TLS and streams.
    security: Literal["noise", "tls"] = "noise"
    muxer: Literal["yamux", "quic"] = "yamux"
    # Resolved to protocol.name; "randomsub" is go-libp2p-pubsub's random-fanout baseline.
    router: Literal["gossipsub", "floodsub", "randomsub"] = "gossipsub"
    profile: bool = False  # CPU profile (runtime/pprof) of every node over the measured interval
    # The delay stage's p99 release lateness above which the run fails: the links were
    # then not the scenario's any more.
    max_delay_error: Duration = 10 * NS_PER_SECOND // 1000
    sample_interval: Duration = NS_PER_SECOND // 2  # CPU and memory of every node
    keep_traces: bool = False  # copy every node's trace and result files into the results
    trace_rpc: bool = False  # also trace SEND_RPC/RECV_RPC (large; traffic is counted anyway)

    @model_validator(mode="before")
    @classmethod
    def _stack_defaults(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        problems = [
            Problem(field, f"'{value}' is not available in go-libp2p v0.51.0", why)
            for (field, value), why in _GONE_FROM_GO_LIBP2P.items()
            if data.get(field) == value
        ]
        _raise_problems(problems)
        quic = data.get("transport") == "quic"
        defaults = {"security": "tls", "muxer": "quic"} if quic else {}
        return {**defaults, **data}

    @model_validator(mode="after")
    def _check(self) -> TestbedConfig:
        problems = []
        if self.transport == "quic" and (self.security, self.muxer) != ("tls", "quic"):
            message = "QUIC brings its own TLS 1.3 handshake and stream multiplexing"
            hint = 'leave security and muxer out, or set security = "tls", muxer = "quic"'
            problems.append(Problem("transport", message, hint))
        if self.transport == "tcp" and self.muxer == "quic":
            hint = 'use muxer = "yamux" over TCP, or transport = "quic"'
            problems.append(Problem("muxer", "'quic' streams need transport = \"quic\"", hint))
        if self.sample_interval < NS_PER_SECOND // 100:
            message = f"must be >= 10ms, got {format_duration(self.sample_interval)}"
            problems.append(Problem("sample_interval", message, 'use e.g. "500ms"'))
        _raise_problems(problems)
        return self


_NAME_PATTERN = r"^[A-Za-z0-9_.-]+$"


class Scenario(_Section):
    """One experiment, fully resolved: every default is filled in."""

    name: str = Field(default="scenario", pattern=_NAME_PATTERN)
    description: str = ""
    seed: int = Field(default=1, ge=0, le=MAX_SEED)
    backend: Literal["model", "testbed"] = "model"
    topology: TopologyConfig = BarabasiAlbertTopology()
    network: NetworkConfig = NetworkConfig()
    protocol: ProtocolConfig = Field(default_factory=lambda: ProtocolConfig.model_validate({}))
    workload: WorkloadConfig = WorkloadConfig()
    faults: list[FaultConfig] = []
    output: OutputConfig = OutputConfig()
    testbed: TestbedConfig = TestbedConfig()
    sweep: dict[str, list[Any]] = {}

    # Where relative paths (topology.file) are found; not part of the experiment itself.
    _base_dir: Path = PrivateAttr(default_factory=Path.cwd)
    # The data as the user wrote it: sweeps are expanded from it, not from the resolved form,
    # so that a swept preset or seed still changes the values derived from it.
    _source_data: dict[str, Any] = PrivateAttr(default_factory=dict)

    @property
    def base_dir(self) -> Path:
        return self._base_dir

    @property
    def source_data(self) -> dict[str, Any]:
        return copy.deepcopy(self._source_data)

    def __eq__(self, other: object) -> bool:
        # Equal experiments compare equal wherever their files were loaded from.
        if not isinstance(other, Scenario):
            return NotImplemented
        return self.__dict__ == other.__dict__

    __hash__ = None  # type: ignore[assignment]

    @model_validator(mode="before")
    @classmethod
    def _testbed_router_default(cls, data: Any) -> Any:
        # The testbed runs the scenario's protocol unless told to run another router.
        if not isinstance(data, dict) or not isinstance(data.get("testbed", {}), dict):
            return data
        name = (
            data.get("protocol", {}).get("name") if isinstance(data.get("protocol"), dict) else None
        )
        router = name if name in ("gossipsub", "floodsub") else "gossipsub"
        return {**data, "testbed": {"router": router, **data.get("testbed", {})}}

    @model_validator(mode="before")
    @classmethod
    def _topology_defaults(cls, data: Any) -> Any:
        # The topology seed follows the scenario seed unless given; the kind defaults too.
        if not isinstance(data, dict):
            return data
        topology = data.get("topology", {})
        if not isinstance(topology, dict):
            return data
        topology = {"kind": DEFAULT_TOPOLOGY_KIND, **topology}
        seed = data.get("seed", 1)
        valid_seed = _is_int(seed) and 0 <= seed <= MAX_SEED  # else only `seed` is reported
        if topology["kind"] in SEEDED_TOPOLOGY_KINDS and "seed" not in topology and valid_seed:
            topology["seed"] = seed
        return {**data, "topology": topology}

    @field_validator("name")
    @classmethod
    def _name_is_a_folder(cls, name: str) -> str:
        if set(name) == {"."}:
            hint = "use letters, digits, '-', '_' or '.', not only dots"
            _raise_problems([Problem("", f"'{name}' cannot be a folder name", hint)])
        return name

    @field_validator("sweep")
    @classmethod
    def _sweep_names_fields(cls, sweep: dict[str, list[Any]]) -> dict[str, list[Any]]:
        _raise_problems(_sweep_key_problems(sweep))
        return sweep

    @model_validator(mode="after")
    def _check_across_sections(self, info: ValidationInfo) -> Scenario:
        self._base_dir = _context_base_dir(info)
        _raise_problems(_cross_section_problems(self))
        return self


# --------------------------------------------------------------------------------------------
# Rules that span sections
# --------------------------------------------------------------------------------------------


def _node_id_problems(path: str, ids: list[int], nodes: int) -> list[Problem]:
    bad = sorted({i for i in ids if i >= nodes})
    if not bad:
        return []
    shown = ", ".join(str(i) for i in bad[:10]) + (", ..." if len(bad) > 10 else "")
    message = f"node id(s) {shown} out of range for {nodes} nodes"
    return [Problem(path, message, f"ids run from 0 to nodes-1 = {nodes - 1}")]


def _workload_problems(s: Scenario) -> list[Problem]:
    w, nodes = s.workload, s.topology.nodes
    if w.publishers == "random":
        candidates = nodes
        problems = []
    else:
        candidates = len(w.publishers)
        problems = _node_id_problems("workload.publishers", w.publishers, nodes)
    if w.batch > candidates:
        message = f"must be <= the number of possible publishers ({candidates}), got {w.batch}"
        hint = "a batch is published by distinct nodes: lower batch or add publishers"
        problems.append(Problem("workload.batch", message, hint))
    return problems


def _fault_times(fault: FaultConfig) -> list[tuple[str, int]]:
    if isinstance(fault, CrashFault | LeaveFault):
        return [("at", fault.at)]
    if isinstance(fault, ChurnFault | PartitionFault):
        return [("start", fault.start), ("end", fault.end)]
    return []


def _selection_problems(path: str, fault: _NodeSelection, nodes: int) -> list[Problem]:
    if fault.nodes is not None:
        problems = _node_id_problems(f"{path}.nodes", fault.nodes, nodes)
        if len(set(fault.nodes)) != len(fault.nodes):
            problems.append(Problem(f"{path}.nodes", "lists a node twice", "list each id once"))
        return problems
    if fault.count is not None and fault.count > nodes:
        message = f"must be <= nodes ({nodes}), got {fault.count}"
        return [Problem(f"{path}.count", message, "lower count")]
    return []


def _partition_problems(path: str, fault: PartitionFault, nodes: int) -> list[Problem]:
    if fault.split is not None:
        first_side = round(fault.split * nodes)
        if 1 <= first_side <= nodes - 1:
            return []
        message = f"puts {first_side} of {nodes} nodes on the first side"
        return [Problem(f"{path}.split", message, "choose a split that leaves nodes on both sides")]
    assert fault.groups is not None
    listed = [i for group in fault.groups for i in group]
    problems = _node_id_problems(f"{path}.groups", listed, nodes)
    if len(set(listed)) != len(listed):
        message = "a node is in more than one group"
        problems.append(Problem(f"{path}.groups", message, "groups must not overlap"))
    # Nodes in no group form one more group of their own.
    sides = len(fault.groups) + (1 if len(set(listed)) < nodes else 0)
    if not problems and sides < 2:
        message = "every node is in the one group: nothing is cut off"
        problems.append(Problem(f"{path}.groups", message, "give at least two groups"))
    return problems


def _behaviour_problems(path: str, fault: AdversaryFault, s: Scenario) -> list[Problem]:
    protocol = s.protocol
    needs_gossip = fault.behaviour in ("ignore-iwant", "spam-ihave", "ignore-ineed")
    if needs_gossip and protocol.name != "gossipsub":
        message = f"'{fault.behaviour}' has no effect with floodsub"
        return [Problem(f"{path}.behaviour", message, 'set protocol.name = "gossipsub"')]
    if fault.behaviour == "ignore-ineed" and protocol.version != "2.0":
        message = f"INEED exists only in gossipsub v2.0, not v{protocol.version}"
        return [Problem(f"{path}.behaviour", message, 'set protocol.version = "2.0"')]
    return []


def _slow_problems(path: str, fault: SlowFault, s: Scenario) -> list[Problem]:
    # A factor applied to something that is not limited would silently change nothing.
    problems = []
    if fault.bandwidth_factor != 1 and not s.network.has_bandwidth_limit():
        message = "has no effect: every link has unlimited bandwidth"
        hint = "set network.upload/download or a class's bandwidth"
        problems.append(Problem(f"{path}.bandwidth_factor", message, hint))
    if fault.cpu_factor != 1 and not s.network.has_cpu_cost():
        message = "has no effect: messages cost no CPU time"
        problems.append(Problem(f"{path}.cpu_factor", message, "set network.cpu_per_message"))
    return problems


def _fault_problems(s: Scenario) -> list[Problem]:
    nodes, run_end = s.topology.nodes, s.workload.planned_end_ns()
    problems: list[Problem] = []
    for i, fault in enumerate(s.faults):
        path = f"faults[{i}]"
        for name, t in _fault_times(fault):
            if t > run_end:
                message = f"{format_duration(t)} is after the run ends ({format_duration(run_end)})"
                hint = "the run is warmup + publishing + cooldown long"
                problems.append(Problem(f"{path}.{name}", message, hint))
        if isinstance(fault, _NodeSelection):
            problems += _selection_problems(path, fault, nodes)
        if isinstance(fault, PartitionFault):
            problems += _partition_problems(path, fault, nodes)
        if isinstance(fault, AdversaryFault):
            problems += _behaviour_problems(path, fault, s)
        if isinstance(fault, SlowFault):
            problems += _slow_problems(path, fault, s)
        if isinstance(fault, LeaveFault) and fault.topic >= s.workload.topics:
            message = f"topic {fault.topic} does not exist: workload.topics = {s.workload.topics}"
            hint = f"topics run from 0 to {s.workload.topics - 1}"
            problems.append(Problem(f"{path}.topic", message, hint))
    return problems


def _backend_problems(s: Scenario) -> list[Problem]:
    if s.backend != "testbed" or s.protocol.name != "gossipsub":
        return []
    problems = []
    if s.protocol.version == "2.0":
        message = "the testbed runs go-libp2p-pubsub v0.17.0, which has no gossipsub v2.0"
        problems.append(Problem("protocol.version", message, 'use backend = "model" for v2.0'))
    if not s.protocol.D_out < s.protocol.D // 2:
        # go refuses Dout >= D/2 (integer division), stricter than the spec's Dout <= D/2.
        message = (
            f"go-libp2p-pubsub needs D_out < D/2 = {s.protocol.D // 2}, got {s.protocol.D_out}"
        )
        problems.append(Problem("protocol.D_out", message, "lower D_out for the testbed"))
    return problems


def _testbed_problems(s: Scenario) -> list[Problem]:
    router = s.testbed.router
    if router != "randomsub" and router != s.protocol.name:
        message = f"'{router}' differs from protocol.name '{s.protocol.name}'"
        hint = f'set protocol.name = "{router}" instead (the model runs it too)'
        return [Problem("testbed.router", message, hint)]
    return []


def _node_list_problems(s: Scenario) -> list[Problem]:
    """Node ids in shared_ips and app_specific exist; a node has one IP address."""
    nodes = s.topology.nodes
    problems: list[Problem] = []
    owner: dict[int, int] = {}
    for i, group in enumerate(s.network.shared_ips):
        path = f"network.shared_ips[{i}]"
        problems += _node_id_problems(path, group, nodes)
        for node in group:
            if node in owner:
                message = f"node {node} is already behind the address of shared_ips[{owner[node]}]"
                problems.append(Problem(path, message, "put each node in at most one group"))
            owner.setdefault(node, i)
    for i, entry in enumerate(s.protocol.score.app_specific):
        problems += _node_id_problems(f"protocol.score.app_specific[{i}].nodes", entry.nodes, nodes)
    return problems


def _peer_exchange_problems(s: Scenario) -> list[Problem]:
    p = s.protocol
    if p.peer_exchange and (p.name != "gossipsub" or p.version == "1.0"):
        message = "peer exchange is part of gossipsub v1.1 and later"
        hint = 'set protocol.version = "1.1" or later, or peer_exchange = false'
        return [Problem("protocol.peer_exchange", message, hint)]
    return []


def _cross_section_problems(s: Scenario) -> list[Problem]:
    problems = _workload_problems(s) + _fault_problems(s) + _backend_problems(s)
    problems += _node_list_problems(s) + _peer_exchange_problems(s)
    return problems + _testbed_problems(s)


# --------------------------------------------------------------------------------------------
# The shape of the schema: for did-you-mean hints, error paths and sweep keys
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _UnionNode:
    """A field that takes one of several forms, told apart by ``tag_field`` (e.g. kind)."""

    tag_field: str
    members: dict[str, type[BaseModel] | None]  # None: a plain value (constant latency)


@dataclass(frozen=True)
class _ListNode:
    item: _Node


@dataclass(frozen=True)
class _MapNode:
    """A table with free keys (sweep)."""


_Node = type[BaseModel] | _UnionNode | _ListNode | _MapNode | None  # None: a plain value


def _strip_annotated(annotation: Any) -> tuple[Any, list[Any]]:
    metadata: list[Any] = []
    while get_origin(annotation) is Annotated:
        annotation, *more = get_args(annotation)
        metadata += more
    return annotation, metadata


def _literal_tag(model: type[BaseModel], name: str) -> str | None:
    field_info = model.model_fields.get(name)
    if field_info is None or get_origin(field_info.annotation) is not Literal:
        return None
    return str(get_args(field_info.annotation)[0])


def _union_node(arms: tuple[Any, ...]) -> _Node:
    """The forms of a union, keyed by tag: a Tag() annotation, or the Literal field they share."""
    tagged: dict[str, type[BaseModel] | None] = {}
    untagged: list[type[BaseModel]] = []
    for arm in arms:
        arm, metadata = _strip_annotated(arm)
        tag = next((m.tag for m in metadata if isinstance(m, Tag)), None)
        model = arm if isinstance(arm, type) and issubclass(arm, BaseModel) else None
        if tag is not None:
            tagged[tag] = model
        elif model is not None:
            untagged.append(model)
    if not tagged and len(untagged) <= 1:
        return untagged[0] if untagged else None  # an optional model, or plain values
    models = untagged + [m for m in tagged.values() if m is not None]
    shared = [n for n in models[0].model_fields if all(_literal_tag(m, n) for m in models)]
    if not shared:
        return None
    for model in untagged:
        tagged[str(_literal_tag(model, shared[0]))] = model
    return _UnionNode(shared[0], tagged)


def _node_of(annotation: Any) -> _Node:
    annotation, _ = _strip_annotated(annotation)
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        return _union_node(get_args(annotation))
    if origin is list:
        return _ListNode(_node_of(get_args(annotation)[0]))
    if origin is dict:
        return _MapNode()
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def _child(model: type[BaseModel], name: str) -> _Node:
    field_info = model.model_fields[name]
    return _node_of(field_info.annotation)


def _fields_of(node: _Node) -> dict[str, _Node]:
    """The named children of a node; for a union, those of every member."""
    if isinstance(node, type):
        return {name: _child(node, name) for name in node.model_fields}
    if isinstance(node, _UnionNode):
        merged: dict[str, _Node] = {}
        for member in node.members.values():
            if member is not None:
                merged.update(_fields_of(member))
        return merged
    return {}


def _field_paths(node: _Node = Scenario, prefix: str = "") -> list[str]:
    """Every dotted path a sweep may set (list items shown as index 0)."""
    paths = []
    for name, child in _fields_of(node).items():
        if prefix == "" and name == "sweep":
            continue
        path = f"{prefix}{name}"
        paths.append(path)
        if isinstance(child, _ListNode):
            paths += _field_paths(child.item, f"{path}.0.")
        else:
            paths += _field_paths(child, f"{path}.")
    return paths


def _is_field_path(path: str) -> bool:
    node: _Node = Scenario
    parts = path.split(".")
    if parts[0] == "sweep":
        return False
    for part in parts:
        if isinstance(node, _ListNode) and _is_index(part):
            node = node.item
            continue
        fields = _fields_of(node)
        if part not in fields:
            return False
        node = fields[part]
    return True


def _did_you_mean(word: str, candidates: list[str]) -> str:
    close = difflib.get_close_matches(word, candidates, n=1, cutoff=0.6)
    if close:
        return f"did you mean '{close[0]}'?"
    shown = ", ".join(candidates[:12]) + (", ..." if len(candidates) > 12 else "")
    return f"known names: {shown}"


@dataclass
class _Located:
    """Where a pydantic error location points: a user-facing path and the schema node there."""

    path: str
    node: _Node
    union: _UnionNode | None = None  # set when ``node`` was reached through a kind tag


def _join(path: str, part: str) -> str:
    if not part:
        return path
    if not path or part.startswith("["):
        return f"{path}{part}"
    return f"{path}.{part}"


def _locate(loc: tuple[int | str, ...]) -> _Located:
    """Turn pydantic's location into a path, dropping the union tags pydantic inserts."""
    here = _Located("", Scenario)
    for item in loc:
        node = here.node
        if isinstance(node, _UnionNode) and isinstance(item, str) and item in node.members:
            here = _Located(here.path, node.members[item], node)
        elif isinstance(node, _ListNode) and isinstance(item, int):
            here = _Located(_join(here.path, f"[{item}]"), node.item)
        elif isinstance(node, _MapNode):
            key = f'"{item}"' if "." in str(item) else str(item)
            here = _Located(_join(here.path, key), None)
        elif isinstance(node, type) and isinstance(item, str) and item in node.model_fields:
            here = _Located(_join(here.path, item), _child(node, item))
        else:
            part = f"[{item}]" if isinstance(item, int) else str(item)
            here = _Located(_join(here.path, part), None)
    return here


# --------------------------------------------------------------------------------------------
# Turning pydantic's errors into problems a user can act on
# --------------------------------------------------------------------------------------------

_TYPE_ERRORS: dict[str, tuple[str, str]] = {
    "int_type": ("an integer", "write a whole number without quotes, e.g. 6"),
    "int_parsing": ("an integer", "write a whole number without quotes, e.g. 6"),
    "int_from_float": ("an integer", "write a whole number, e.g. 6"),
    "float_type": ("a number", "write a number without quotes, e.g. 0.25"),
    "float_parsing": ("a number", "write a number without quotes, e.g. 0.25"),
    "finite_number": ("a finite number", "nan and inf are not allowed here"),
    "bool_type": ("true or false", "write true or false without quotes"),
    "bool_parsing": ("true or false", "write true or false without quotes"),
    "string_type": ("a string", 'write it in double quotes, e.g. "text"'),
    "list_type": ("an array", "write it as [a, b, ...]"),
    "dict_type": ("a table", "write it as a [section] or as { key = value }"),
    "model_type": ("a table", "write it as a [section] or as { key = value }"),
    "model_attributes_type": ("a table", "write it as a [section] or as { key = value }"),
}
_BOUNDS = {
    "greater_than": ">",
    "greater_than_equal": ">=",
    "less_than": "<",
    "less_than_equal": "<=",
}
_REQUIRED_HINTS = {
    "at": 'give the time, e.g. at = "30s"',
    "start": 'give the time, e.g. start = "30s"',
    "end": 'give the time, e.g. end = "60s"',
    "file": 'give the edges file, e.g. file = "graph.txt"',
    "behaviour": 'e.g. behaviour = "drop-forwards"',
    "leave_rate": 'e.g. leave_rate = "1/s"',
    "rejoin_after": 'e.g. rejoin_after = "30s"',
    "share": "e.g. share = 0.2",
    "name": 'e.g. name = "fast", or a preset such as preset = "home", which names it',
}


def _describe_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f"the string {json.dumps(value)}"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, int | float):
        return repr(value)
    return f"a {type(value).__name__}"


def _unknown_field(loc: tuple[int | str, ...], path: str) -> Problem:
    key = str(loc[-1])
    parent = _locate(loc[:-1])
    known = list(_fields_of(parent.node))
    if parent.union is not None and isinstance(parent.node, type):
        kind = loc[-2] if len(loc) >= 2 else ""
        own = [name for name in known if name != parent.union.tag_field]
        elsewhere = [
            tag
            for tag, member in parent.union.members.items()
            if member is not None and key in member.model_fields
        ]
        if elsewhere:
            message = f"not a field of {parent.union.tag_field} '{kind}'"
            return Problem(path, message, f"its fields: {', '.join(own)}")
    return Problem(path, "unknown field", _did_you_mean(key, known))


def _literal_options(expected: str) -> list[str]:
    return re.findall(r"'((?:[^'\\]|\\.)*)'", expected)


def _problems_from_error(error: Any) -> list[Problem]:
    kind, loc, ctx = error["type"], tuple(error["loc"]), error.get("ctx") or {}
    value = error.get("input")
    here = _locate(loc)
    path = here.path
    if kind == "gossiplab":
        return [Problem(path, ctx["message"], ctx["hint"])]
    if kind == "gossiplab_problems":
        return [Problem(_join(path, p.path), p.message, p.hint) for p in ctx["problems"]]
    if kind == "extra_forbidden":
        return [_unknown_field(loc, path)]
    if kind == "missing":
        hint = _REQUIRED_HINTS.get(str(loc[-1]), "add this field")
        return [Problem(path, "is required", hint)]
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        union = here.node if isinstance(here.node, _UnionNode) else None
        tag_field = union.tag_field if union else "kind"
        # Only forms written as tables have a tag (a constant latency is a plain string).
        tags = [tag for tag, m in union.members.items() if m is not None] if union else []
        if kind == "union_tag_not_found":
            hint = f"set {tag_field} to one of: {', '.join(tags)}"
            return [Problem(_join(path, tag_field), "is required", hint)]
        tag = str(ctx.get("tag", ""))
        close = difflib.get_close_matches(tag, tags, n=1)
        hint = f"did you mean '{close[0]}'?" if close else f"use one of: {', '.join(tags)}"
        return [Problem(_join(path, tag_field), f"unknown {tag_field} '{tag}'", hint)]
    if kind == "literal_error":
        options = _literal_options(str(ctx.get("expected", "")))
        message = (
            f"must be one of {', '.join(repr(o) for o in options)}, got {_describe_value(value)}"
        )
        close = difflib.get_close_matches(str(value), options, n=1)
        hint = f"did you mean '{close[0]}'?" if close else f"use one of: {', '.join(options)}"
        return [Problem(path, message, hint)]
    if kind in _TYPE_ERRORS:
        expected, hint = _TYPE_ERRORS[kind]
        return [Problem(path, f"expected {expected}, got {_describe_value(value)}", hint)]
    if kind in _BOUNDS:
        bound = next(v for k, v in ctx.items() if k in ("gt", "ge", "lt", "le"))
        sign = _BOUNDS[kind]
        message = f"must be {sign} {bound}, got {_describe_value(value)}"
        return [Problem(path, message, f"use a value {sign} {bound}")]
    if kind == "too_short":
        return [Problem(path, "must not be empty", "give at least one value")]
    if kind == "string_pattern_mismatch":
        hint = "use only letters, digits, '-', '_' and '.' (it becomes a folder name)"
        return [Problem(path, f"{_describe_value(value)} is not allowed here", hint)]
    return [Problem(path, str(error.get("msg", "is invalid")), "")]


def _problems_from(err: ValidationError) -> list[Problem]:
    problems: list[Problem] = []
    for error in err.errors(include_url=False):
        for problem in _problems_from_error(error):
            if problem not in problems:
                problems.append(problem)
    return problems


# --------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------


def parse_scenario(data: dict[str, Any], base_dir: Path, source: str = "") -> Scenario:
    """Validate a scenario given as a dict (as read from TOML) and resolve every default.

    ``base_dir`` is the folder relative paths are resolved against. Raises ScenarioError
    listing every problem found; a sweep's points are validated too.
    """
    if not isinstance(data, dict):
        found = _describe_value(data)
        raise ScenarioError([Problem("", f"expected a table, got {found}", "")], source)
    try:
        scenario = Scenario.model_validate(data, context={"base_dir": Path(base_dir)})
    except ValidationError as err:
        raise ScenarioError(_problems_from(err), source) from None
    if scenario.sweep:
        try:
            expand_sweep(data, base_dir=base_dir)
        except ScenarioError as err:
            raise ScenarioError(err.problems, source) from None
    scenario._source_data = copy.deepcopy(data)
    return scenario


def load_scenario(path: str | Path) -> Scenario:
    """Read, validate and resolve a scenario file; relative paths in it are from its folder."""
    path = Path(path)
    source = str(path)
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as err:
        problem = Problem("", f"cannot read the scenario file: {err.strerror}", "check the path")
        raise ScenarioError([problem], source) from None
    except UnicodeDecodeError:
        problem = Problem("", "the file is not UTF-8 text", "save it as UTF-8")
        raise ScenarioError([problem], source) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        hint = "fix the TOML syntax at that line and column (see https://toml.io)"
        raise ScenarioError([Problem("", f"TOML syntax error: {err}", hint)], source) from None
    return parse_scenario(data, path.resolve().parent, source=source)


def scenario_to_toml(s: Scenario) -> str:
    """The fully resolved scenario as TOML: every value written out, units canonical."""
    return tomli_w.dumps(s.model_dump(mode="json", exclude_none=True))


def scenario_hash(s: Scenario) -> str:
    """sha256 (hex) of the resolved TOML: equal scenarios, equal hashes."""
    return hashlib.sha256(scenario_to_toml(s).encode("utf-8")).hexdigest()


def set_dotted(data: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A deep copy of ``data`` with ``a.b.c`` set to ``value``; missing tables are created.

    A numeric part indexes an existing array item (``faults.0.at``).
    """
    result = copy.deepcopy(data)
    parts = path.split(".")
    here: Any = result
    for depth, part in enumerate(parts):
        last = depth == len(parts) - 1
        if isinstance(here, list) and _is_index(part) and int(part) < len(here):
            key: int | str = int(part)
        elif isinstance(here, dict):
            key = part
        else:
            prefix = ".".join(parts[:depth])
            message = f"cannot set it: '{prefix}' is {_describe_value(here)}, not a table"
            raise ScenarioError([Problem(path, message, f"check the path '{path}'")])
        if last:
            here[key] = value
        else:
            here = here.setdefault(key, {}) if isinstance(here, dict) else here[key]
    return result


def _toml_literal(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _linked_paths(key: str) -> list[str]:
    """The fields a sweep key sets: one path, or several changing together ("a.b,c.d")."""
    return [part.strip() for part in key.split(",")]


def _sweep_key_problems(sweep: dict[str, Any]) -> list[Problem]:
    """What is wrong with the sweep's keys and value lists; paths are relative to [sweep]."""
    problems = []
    for key, values in sweep.items():
        where = f'"{key}"'
        paths = _linked_paths(key)
        unknown = [path for path in paths if not _is_field_path(path)]
        if unknown:
            for path in unknown:
                hint = _did_you_mean(path, _field_paths())
                message = "no such field" if len(paths) == 1 else f"no such field '{path}'"
                problems.append(Problem(where, message, hint))
        elif not isinstance(values, list) or not values:
            hint = f'write "{key}" = [value, value, ...]'
            problems.append(Problem(where, "expected a non-empty array of values", hint))
        elif len(paths) > 1 and not all(
            isinstance(v, list) and len(v) == len(paths) for v in values
        ):
            hint = f"each value sets {len(paths)} fields together, e.g. [[1, 1], [2, 2]]"
            message = f"expected an array of {len(paths)}-element arrays"
            problems.append(Problem(where, message, hint))
    return problems


def _point_assignments(sweep: dict[str, Any], values: tuple[Any, ...]) -> dict[str, Any]:
    """One point's field assignments; linked keys are spread over their fields."""
    assignments: dict[str, Any] = {}
    for key, value in zip(sweep.keys(), values, strict=True):
        paths = _linked_paths(key)
        if len(paths) == 1:
            assignments[key] = value
        else:
            assignments.update(zip(paths, value, strict=True))
    return assignments


def expand_sweep(
    data: dict[str, Any], base_dir: Path | None = None
) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """The points of the ``[sweep]`` table: (assignments, data without sweep, assignments applied).

    The product runs in the sweep table's key order, the last key changing fastest. A key
    naming several fields separated by commas sets them together from each value (an
    array with one element per field), so they change in lockstep rather than as a
    product. Every point is validated; problems common to all points are reported once,
    the others prefixed with the point's assignments. ``base_dir`` (default: the current
    folder) locates files.
    """
    sweep = data.get("sweep", {})
    if not isinstance(sweep, dict):
        raise ScenarioError([Problem("sweep", f"expected a table, got {_describe_value(sweep)}")])
    problems = [Problem(f"sweep.{p.path}", p.message, p.hint) for p in _sweep_key_problems(sweep)]
    if problems:
        raise ScenarioError(problems)
    base = {key: value for key, value in data.items() if key != "sweep"}
    points: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for values in itertools.product(*sweep.values()):
        assignments = _point_assignments(sweep, values)
        point = base
        for key, value in assignments.items():
            point = set_dotted(point, key, value)
        points.append((assignments, point if assignments else copy.deepcopy(base)))
    per_point: list[list[Problem]] = []
    for _, point in points:
        try:
            parse_scenario(point, base_dir or Path.cwd())
            per_point.append([])
        except ScenarioError as err:
            per_point.append(err.problems)
    _raise_point_problems(points, per_point)
    return points


def _raise_point_problems(
    points: list[tuple[dict[str, Any], dict[str, Any]]], per_point: list[list[Problem]]
) -> None:
    if not any(per_point):
        return
    common = [p for p in per_point[0] if all(p in others for others in per_point[1:])]
    problems = list(common)
    for (assignments, _), found in zip(points, per_point, strict=True):
        where = ", ".join(f"{k} = {_toml_literal(v)}" for k, v in assignments.items())
        for p in found:
            if p not in common:
                problems.append(Problem(p.path, f"at sweep point {where}: {p.message}", p.hint))
    raise ScenarioError(problems)


def sweep_points(s: Scenario) -> list[tuple[dict[str, Any], Scenario]]:
    """The resolved scenario of every sweep point, expanded from the data as the user wrote it."""
    source = s.source_data or s.model_dump(mode="json", exclude_none=True)
    return [
        (assignments, parse_scenario(point, s.base_dir))
        for assignments, point in expand_sweep(source, base_dir=s.base_dir)
    ]


__all__ = [
    "PROTOCOL_PRESETS",
    "SCORE_PRESETS",
    "Scenario",
    "expand_sweep",
    "load_scenario",
    "parse_scenario",
    "scenario_hash",
    "scenario_to_toml",
    "set_dotted",
    "sweep_points",
]
