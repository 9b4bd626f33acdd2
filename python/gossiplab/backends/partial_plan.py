"""Who enables partial messages and which parts each node holds before a group is published.

Every backend runs the same plan, so the model and the real go nodes start from the same
roles and the same mempools. The draws, exactly (rng.py's SplitMix64 and stream seeds):

- Roles: the node ids ``0..n-1`` shuffled by ``SplitMix64(stream_seed(seed,
  "workload.partial.roles"))``; the first ``round(requests × n)`` request, the next
  ``round(supports × n)`` only support, the rest have no extension. Every publisher of the
  schedule then requests (it sends its parts as partial messages).
- Mempool, per node and block (a block is a workload batch: the groups of one batch are the
  columns of one block and share the draw, since a blob missing from a node's mempool is
  missing from every column): a generator ``SplitMix64(stream_seed(stream_seed(seed,
  "workload.partial.mempool", node), "block", block))``. With ``p``, part ``i`` is held when
  the generator's ``i``-th ``uniform()`` is below ``p``; with ``missing = k``, the parts
  ``sample_indices(parts, k)`` are missing and the rest held.
- A group's publisher holds every part. A node without the extension holds none: it cannot
  use them and takes the full message.

A set of parts is a Python int, bit ``i`` set when part ``i`` is held.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np

from gossiplab.rng import GOLDEN_GAMMA, SplitMix64, stream_seed

if TYPE_CHECKING:
    from gossiplab.scenario import Scenario
    from gossiplab.scenario.partial import PartialConfig
    from gossiplab.workload import Schedule

Role = Literal["requests", "supports", "none"]
ROLES: tuple[Role, ...] = ("none", "supports", "requests")  # engine codes 0, 1, 2


@dataclass(frozen=True)
class PartialPlan:
    """The roles of the nodes and the parts each holds before each group is published."""

    parts: int
    roles: tuple[Role, ...]  # per node
    held: tuple[tuple[int, ...], ...]  # per schedule row (group), per node: a set of parts

    def role_codes(self) -> list[int]:
        """The engine's role codes per node: 0 none, 1 supports, 2 requests."""
        return [ROLES.index(role) for role in self.roles]

    def to_json(self) -> str:
        """The plan for the Go node: parts, roles per node, and per group per node the held
        parts as lowercase hex without prefix (bit i of the number = part i)."""
        held = [[format(bits, "x") for bits in group] for group in self.held]
        return json.dumps({"parts": self.parts, "roles": list(self.roles), "held": held})


def draw_roles(s: Scenario, schedule: Schedule) -> tuple[Role, ...]:
    partial = _partial(s)
    nodes = s.topology.nodes
    order = list(range(nodes))
    SplitMix64(stream_seed(s.seed, "workload.partial.roles")).shuffle(order)
    requests = round(partial.roles.requests * nodes)
    supports = round(partial.roles.supports * nodes)
    roles: list[Role] = ["none"] * nodes
    for rank, node in enumerate(order):
        if rank < requests:
            roles[node] = "requests"
        elif rank < requests + supports:
            roles[node] = "supports"
    for publisher in np.unique(schedule.publisher).tolist():
        roles[publisher] = "requests"
    return tuple(roles)


def _uniforms(seed: int, count: int) -> np.ndarray:
    """The first `count` uniform() draws of SplitMix64(seed), vectorised (uint64 wraps)."""
    steps = np.arange(1, count + 1, dtype=np.uint64)
    z = np.uint64(seed) + steps * np.uint64(GOLDEN_GAMMA)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) * 2.0**-53


def mempool_draw(seed: int, partial: PartialConfig, node: int, block: int) -> int:
    """The parts `node` holds of every group of `block`, as a set of parts."""
    block_seed = stream_seed(stream_seed(seed, "workload.partial.mempool", node), "block", block)
    everything = (1 << partial.parts) - 1
    if partial.mempool.missing is not None:
        missing = SplitMix64(block_seed).sample_indices(partial.parts, partial.mempool.missing)
        return everything & ~sum(1 << i for i in missing)
    assert partial.mempool.p is not None
    held = np.flatnonzero(_uniforms(block_seed, partial.parts) < partial.mempool.p)
    return sum(1 << int(i) for i in held)


def draw_partial_plan(s: Scenario, schedule: Schedule, seed: int) -> PartialPlan:
    """The plan of scenario `s` (which has [workload.partial]) for its schedule."""
    partial = _partial(s)
    roles = draw_roles(s, schedule)
    everything = (1 << partial.parts) - 1
    blocks: dict[int, tuple[int, ...]] = {}
    held: list[tuple[int, ...]] = []
    with np.errstate(over="ignore"):  # SplitMix64 wraps modulo 2**64 by design
        for row in range(len(schedule)):
            block = int(schedule.batch[row])
            if block not in blocks:
                blocks[block] = tuple(
                    0 if role == "none" else mempool_draw(seed, partial, node, block)
                    for node, role in enumerate(roles)
                )
            group = list(blocks[block])
            group[int(schedule.publisher[row])] = everything
            held.append(tuple(group))
    return PartialPlan(partial.parts, roles, tuple(held))


def _partial(s: Scenario) -> PartialConfig:
    if s.workload.partial is None:
        raise ValueError("the scenario has no [workload.partial]")
    return s.workload.partial
