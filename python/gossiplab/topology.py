"""Who connects to whom: the graph of a scenario, with a direction on every edge.

An edge is a (dialer, listener) pair: the dialer opened the connection. Direction matters only
for gossipsub's outbound quota (D_out counts mesh peers we dialed), so generators whose graphs
have no natural direction let the smaller id dial. Every undirected pair appears once, and the
rows are sorted by (smaller id, larger id) so equal graphs give byte-equal arrays.

Random graphs come from networkx with the scenario's topology seed (barabasi-albert,
random-regular, erdos-renyi: the same seed gives the same graph as calling networkx directly)
or from rng.py's "topology" stream (connect-random, dial-until), never from an unseeded source.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import networkx as nx
import numpy as np

from gossiplab.errors import Problem, ScenarioError
from gossiplab.rng import SplitMix64, stream_seed

if TYPE_CHECKING:
    from gossiplab.scenario import Scenario

# Plain ASCII digits: int() would also take "1_000", "+5" or non-ASCII digits.
_NODE_ID = re.compile(r"[0-9]+")
MAX_REPORTED_LINES = 20  # a broken 100k-line file should not print 100k problems
_FILE_PATH = "topology.file"


@dataclass(frozen=True, eq=False)
class Topology:
    """``nodes`` nodes with ids 0..nodes-1 and an (E, 2) uint32 array of (dialer, listener)."""

    nodes: int
    edges: np.ndarray

    def __post_init__(self) -> None:
        if self.edges.ndim != 2 or self.edges.shape[1] != 2 or self.edges.dtype != np.uint32:
            raise ValueError(f"edges must be an (E, 2) uint32 array, got {self.edges.shape}")
        self.edges.setflags(write=False)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Topology):
            return NotImplemented
        return self.nodes == other.nodes and np.array_equal(self.edges, other.edges)

    __hash__ = None  # type: ignore[assignment]

    def degrees(self) -> np.ndarray:
        """Number of neighbours of each node, dialed or dialing."""
        return np.bincount(self.edges.ravel(), minlength=self.nodes)

    def components(self) -> list[int]:
        """Sizes of the connected components, largest first."""
        graph = nx.Graph()
        graph.add_nodes_from(range(self.nodes))
        graph.add_edges_from(self.edges.tolist())
        return sorted((len(c) for c in nx.connected_components(graph)), reverse=True)


def _canonical(pairs: list[tuple[int, int]] | np.ndarray, nodes: int) -> Topology:
    """Keep the first dialer of each undirected pair and sort rows by (min, max)."""
    array = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    low, high = array.min(axis=1), array.max(axis=1)
    # A stable sort keeps file/draw order within a pair, so the first dialer comes first.
    order = np.lexsort((high, low))
    array, low, high = array[order], low[order], high[order]
    first = np.ones(len(array), dtype=bool)
    first[1:] = (low[1:] != low[:-1]) | (high[1:] != high[:-1])
    return Topology(nodes=nodes, edges=array[first].astype(np.uint32))


def _from_undirected(graph: nx.Graph, nodes: int, *, larger_dials: bool) -> Topology:
    edges = np.array(list(graph.edges()), dtype=np.int64).reshape(-1, 2)
    low, high = edges.min(axis=1), edges.max(axis=1)
    oriented = np.column_stack((high, low) if larger_dials else (low, high))
    return _canonical(oriented, nodes)


def _connect_random(nodes: int, k: int, seed: int) -> Topology:
    """Each node dials k distinct others, drawn in node order from one "topology" stream."""
    rng = SplitMix64(stream_seed(seed, "topology"))
    pairs: list[tuple[int, int]] = []
    for dialer in range(nodes):
        for j in rng.sample_indices(nodes - 1, k):
            # Draw among the nodes-1 others: skip over the dialer's own id.
            pairs.append((dialer, j if j < dialer else j + 1))
    return _canonical(pairs, nodes)


def _dial_until(nodes: int, k: int, seed: int) -> Topology:
    """Nodes dial random peers until each has at least k connections, inbound ones counted.

    The v2.0 study's node (ppopth/pubsub-shadow main.go) loops ``while peers < target: dial a
    random untried node``, every node at once. Done deterministically: in rounds, each node
    still below k (in id order, seeing the connections made before it in the round) dials one
    peer drawn uniformly from those it is not yet connected to. A peer already at k still
    accepts, so degrees end between k and a little more.
    """
    rng = SplitMix64(stream_seed(seed, "topology"))
    target = min(k, nodes - 1)
    neighbours: list[set[int]] = [set() for _ in range(nodes)]
    pairs: list[tuple[int, int]] = []
    while True:
        below = [node for node in range(nodes) if len(neighbours[node]) < target]
        if not below:
            return _canonical(pairs, nodes)
        for dialer in below:
            if len(neighbours[dialer]) >= target:
                continue  # reached k through dials received earlier in this round
            peer = _unconnected_peer(rng, dialer, neighbours[dialer], nodes)
            neighbours[dialer].add(peer)
            neighbours[peer].add(dialer)
            pairs.append((dialer, peer))


def _unconnected_peer(rng: SplitMix64, node: int, connected: set[int], nodes: int) -> int:
    """A node drawn uniformly from those other than ``node`` and not in ``connected``."""
    if 2 * len(connected) < nodes:
        # Rejection: each try succeeds with probability above 1/2.
        while True:
            j = rng.randbelow(nodes - 1)
            peer = j if j < node else j + 1  # skip over the node's own id
            if peer not in connected:
                return peer
    candidates = [peer for peer in range(nodes) if peer != node and peer not in connected]
    return candidates[rng.randbelow(len(candidates))]


def _chain(nodes: int, *, closed: bool) -> Topology:
    dialers = np.arange(nodes if closed else nodes - 1, dtype=np.int64)
    return _canonical(np.column_stack((dialers, (dialers + 1) % nodes)), nodes)


def _full(nodes: int) -> Topology:
    low, high = np.triu_indices(nodes, k=1)
    return _canonical(np.column_stack((low, high)), nodes)


@dataclass
class EdgeFile:
    """The pairs of an edges file in file order, and what is wrong with it."""

    pairs: list[tuple[int, int]] = field(default_factory=list)
    max_id: int = -1
    problems: list[Problem] = field(default_factory=list)
    _more: int = 0

    def add_problem(self, message: str, hint: str) -> None:
        if len(self.problems) < MAX_REPORTED_LINES:
            self.problems.append(Problem(_FILE_PATH, message, hint))
        else:
            self._more += 1

    def finish(self) -> None:
        if self._more:
            self.problems.append(
                Problem(_FILE_PATH, f"... and {self._more} more problem line(s)", "")
            )


def _parse_edge_line(text: str) -> tuple[int, int] | str:
    """The pair on one line, or what is wrong with it."""
    tokens = text.split()
    if len(tokens) != 2:
        return f"expected two node ids 'a b', got {len(tokens)} field(s)"
    if any(t.startswith("-") and _NODE_ID.fullmatch(t[1:]) for t in tokens):
        return f"node ids cannot be negative: '{text.strip()}'"
    if not all(_NODE_ID.fullmatch(t) for t in tokens):
        return f"'{text.strip()}' is not two integer node ids"
    a, b = int(tokens[0]), int(tokens[1])
    if a == b:
        return f"self-loop '{text.strip()}': a node does not connect to itself"
    return (a, b)


def read_edges_file(path: Path, display: str, nodes: int | None = None) -> EdgeFile:
    """Read lines "a b" (a dials b; '#' starts a comment). ``display`` names the file in problems.

    With ``nodes`` given, ids must be below it. Problems use the path ``topology.file``.
    """
    result = EdgeFile()
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        hint = "the path is relative to the scenario file's folder"
        result.add_problem(f"cannot read '{display}' ({path}): {reason}", hint)
        return result
    for number, line in enumerate(text.splitlines(), start=1):
        content = line.split("#", 1)[0]
        if not content.strip():
            continue
        parsed = _parse_edge_line(content)
        if isinstance(parsed, str):
            result.add_problem(
                f"{display} line {number}: {parsed}", "write one edge per line: 'a b'"
            )
            continue
        if nodes is not None and max(parsed) >= nodes:
            message = f"{display} line {number}: node id {max(parsed)} is out of range"
            result.add_problem(message, f"ids run from 0 to nodes-1 = {nodes - 1}")
            continue
        result.pairs.append(parsed)
        result.max_id = max(result.max_id, *parsed)
    if not result.pairs and not result.problems:
        result.add_problem(f"'{display}' holds no edges", "write one edge per line: 'a b'")
    result.finish()
    return result


def _from_file(s: Scenario, file: str, nodes: int) -> Topology:
    edge_file = read_edges_file(s.base_dir / file, display=file, nodes=nodes)
    if not edge_file.problems and edge_file.max_id + 1 != nodes:
        message = f"is {nodes}, but the largest id in '{file}' is {edge_file.max_id}"
        hint = f"set topology.nodes = {edge_file.max_id + 1}, or leave it out"
        edge_file.problems.append(Problem("topology.nodes", message, hint))
    if edge_file.problems:
        raise ScenarioError(edge_file.problems)
    return _canonical(edge_file.pairs, nodes)


_RAISE_HINT = {
    "barabasi-albert": "raise topology.m",
    "random-regular": "raise topology.degree",
    "erdos-renyi": "raise topology.p",
    "connect-random": "raise topology.k",
    "dial-until": "raise topology.k",
    "edges": "add edges between the parts in the file",
}


def _check_connected(topology: Topology, kind: str) -> None:
    sizes = topology.components()
    if len(sizes) == 1:
        return
    message = (
        f"the graph is disconnected ({len(sizes)} components; "
        f"largest has {sizes[0]} of {topology.nodes} nodes)"
    )
    fix = _RAISE_HINT.get(kind, "raise topology.m/degree/p/k")
    hint = f"{fix}, or set topology.allow_disconnected = true"
    raise ScenarioError([Problem("topology", message, hint)])


def build_topology(s: Scenario) -> Topology:
    """The graph ``s.topology`` describes; ScenarioError if it is disconnected (unless allowed)."""
    t = s.topology
    match t.kind:
        case "barabasi-albert":
            # networkx attaches each new node (the larger id) to m existing ones: it dials them.
            graph = nx.barabasi_albert_graph(t.nodes, t.m, seed=t.seed)
            topology = _from_undirected(graph, t.nodes, larger_dials=True)
        case "random-regular":
            graph = nx.random_regular_graph(t.degree, t.nodes, seed=t.seed)
            topology = _from_undirected(graph, t.nodes, larger_dials=False)
        case "erdos-renyi":
            graph = nx.gnp_random_graph(t.nodes, t.p, seed=t.seed)
            topology = _from_undirected(graph, t.nodes, larger_dials=False)
        case "full":
            topology = _full(t.nodes)
        case "connect-random":
            topology = _connect_random(t.nodes, t.k, t.seed)
        case "dial-until":
            topology = _dial_until(t.nodes, t.k, t.seed)
        case "line":
            topology = _chain(t.nodes, closed=False)
        case "ring":
            topology = _chain(t.nodes, closed=True)
        case "edges":
            topology = _from_file(s, t.file, t.nodes)
    if not t.allow_disconnected:
        _check_connected(topology, t.kind)
    return topology
