"""[topology]: who connects to whom, one model per graph kind."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, ValidationInfo, model_validator

from gossiplab.errors import Problem
from gossiplab.scenario.base import (
    MAX_SEED,
    MAX_U32,
    Section,
    context_base_dir,
    is_int,
    raise_problems,
)
from gossiplab.topology import read_edges_file

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


class BarabasiAlbertTopology(Section):
    """Preferential attachment, exactly networkx.barabasi_albert_graph(nodes, m, seed)."""

    kind: Literal["barabasi-albert"] = "barabasi-albert"
    nodes: _Nodes = DEFAULT_NODES
    m: int = 6
    seed: _TopologySeed = 1
    allow_disconnected: bool = False

    @model_validator(mode="after")
    def _check(self) -> BarabasiAlbertTopology:
        problems = _nodes_problems(self.nodes)
        raise_problems(problems or _peer_count_problems("m", self.m, self.nodes))
        return self


class RandomRegularTopology(Section):
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
        raise_problems(problems)
        return self


class ErdosRenyiTopology(Section):
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
        raise_problems(problems)
        return self


class FullTopology(Section):
    """Every node connects to every other; the smaller id dials."""

    kind: Literal["full"] = "full"
    nodes: _Nodes = DEFAULT_NODES
    allow_disconnected: bool = False

    @model_validator(mode="after")
    def _check(self) -> FullTopology:
        raise_problems(_nodes_problems(self.nodes))
        return self


class ConnectRandomTopology(Section):
    """Each node dials k distinct random peers; the union of the dials is the graph."""

    kind: Literal["connect-random"] = "connect-random"
    nodes: _Nodes = DEFAULT_NODES
    k: int = 8
    seed: _TopologySeed = 1
    allow_disconnected: bool = False

    @model_validator(mode="after")
    def _check(self) -> ConnectRandomTopology:
        problems = _nodes_problems(self.nodes)
        raise_problems(problems or _peer_count_problems("k", self.k, self.nodes))
        return self


class DialUntilTopology(Section):
    """Each node dials random peers until it has k connections, the ones it received counted."""

    kind: Literal["dial-until"] = "dial-until"
    nodes: _Nodes = DEFAULT_NODES
    k: int = 8
    seed: _TopologySeed = 1
    allow_disconnected: bool = False

    @model_validator(mode="after")
    def _check(self) -> DialUntilTopology:
        problems = _nodes_problems(self.nodes)
        raise_problems(problems or _peer_count_problems("k", self.k, self.nodes))
        return self


class LineTopology(Section):
    """0 - 1 - 2 - ... - (nodes-1); node i dials i+1."""

    kind: Literal["line"] = "line"
    nodes: _Nodes = DEFAULT_NODES
    allow_disconnected: bool = False

    @model_validator(mode="after")
    def _check(self) -> LineTopology:
        raise_problems(_nodes_problems(self.nodes))
        return self


class RingTopology(Section):
    """A closed line; node i dials (i+1) mod nodes."""

    kind: Literal["ring"] = "ring"
    nodes: _Nodes = DEFAULT_NODES
    allow_disconnected: bool = False

    @model_validator(mode="after")
    def _check(self) -> RingTopology:
        raise_problems(_nodes_problems(self.nodes))
        return self


class EdgesTopology(Section):
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
        given = data.get("nodes") if is_int(data.get("nodes")) else None
        path = context_base_dir(info) / data["file"]
        edges = read_edges_file(path, display=data["file"], nodes=given)
        problems = [Problem("file", p.message, p.hint) for p in edges.problems]
        if not problems and "nodes" not in data:
            data = {**data, "nodes": edges.max_id + 1}
        elif not problems and given != edges.max_id + 1:
            message = f"is {given}, but the largest id in '{data['file']}' is {edges.max_id}"
            hint = f"set nodes = {edges.max_id + 1}, or leave it out to read it from the file"
            problems.append(Problem("nodes", message, hint))
        raise_problems(problems)
        return data

    @model_validator(mode="after")
    def _check(self) -> EdgesTopology:
        raise_problems(_nodes_problems(self.nodes))
        return self


TopologyConfig = Annotated[
    BarabasiAlbertTopology
    | RandomRegularTopology
    | ErdosRenyiTopology
    | FullTopology
    | ConnectRandomTopology
    | DialUntilTopology
    | LineTopology
    | RingTopology
    | EdgesTopology,
    Field(discriminator="kind"),
]
SEEDED_TOPOLOGY_KINDS = (
    "barabasi-albert",
    "random-regular",
    "erdos-renyi",
    "connect-random",
    "dial-until",
)
