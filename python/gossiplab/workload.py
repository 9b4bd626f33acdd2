"""The publish schedule: which node publishes which message, when, how big, on which topic.

The schedule is a pure function of the resolved scenario. Randomness comes from rng.py's
"workload" stream: index 0 picks publishers, index 1 draws Poisson gaps, so switching the
arrival process leaves the choice of publishers unchanged (and vice versa).

Messages are published in batches of ``workload.batch`` messages at the same instant, by
distinct publishers or, with ``batch_publisher = "same"``, all by one (in message order, as
consecutive publish calls); batch ``j`` holds messages ``j*batch .. (j+1)*batch - 1`` (the
last batch may be smaller). With uniform arrival batch ``j`` starts at
``warmup + batch_offset_ns(j, ...)``; with Poisson arrival the gaps between batches are
exponential with the same mean.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from gossiplab.errors import Problem, ScenarioError
from gossiplab.rng import SplitMix64, stream_seed

if TYPE_CHECKING:
    from gossiplab.scenario import Scenario

NS_PER_SECOND = 1_000_000_000
PUBLISHER_STREAM_INDEX = 0
ARRIVAL_STREAM_INDEX = 1


def batch_count(messages: int, batch: int) -> int:
    """How many batches ``messages`` messages make in batches of ``batch``."""
    return -(-messages // batch)


def batch_offset_ns(j: int, batch: int, rate: float) -> int:
    """Uniform arrival: batch ``j`` starts this long after warm-up.

    Computed from ``j`` directly (not by adding up gaps) so rounding never accumulates:
    ``round(j * 1e9 * batch / rate)``, with the integer part multiplied exactly.
    """
    return round(j * NS_PER_SECOND * batch / rate)


@dataclass(frozen=True, eq=False)
class Schedule:
    """One row per message, sorted by intended time then position in the batch."""

    t_intended_ns: np.ndarray  # int64, ns from the run's start
    publisher: np.ndarray  # uint32 node id
    size: np.ndarray  # uint32 bytes of payload
    topic: np.ndarray  # uint16 topic index
    batch: np.ndarray  # uint32 batch id

    def __post_init__(self) -> None:
        lengths = {len(column) for column in self._columns()}
        if len(lengths) != 1:
            raise ValueError(f"schedule columns differ in length: {sorted(lengths)}")
        for column in self._columns():
            column.setflags(write=False)  # frozen means frozen, arrays included

    def _columns(self) -> tuple[np.ndarray, ...]:
        return (self.t_intended_ns, self.publisher, self.size, self.topic, self.batch)

    def __len__(self) -> int:
        return len(self.t_intended_ns)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Schedule):
            return NotImplemented
        pairs = zip(self._columns(), other._columns(), strict=True)
        return all(a.dtype == b.dtype and np.array_equal(a, b) for a, b in pairs)

    __hash__ = None  # type: ignore[assignment]  # mutable-looking arrays: not hashable


def schedule_seed(s: Scenario) -> int:
    """The seed the publication schedule is drawn from: `[workload] seed`, else the
    scenario's."""
    return s.seed if s.workload.seed is None else s.workload.seed


def _batch_starts_ns(s: Scenario, batches: int) -> np.ndarray:
    w = s.workload
    if w.arrival == "uniform":
        offsets = [batch_offset_ns(j, w.batch, w.rate) for j in range(batches)]
        return w.warmup + np.array(offsets, dtype=np.int64)
    rng = SplitMix64(stream_seed(schedule_seed(s), "workload", ARRIVAL_STREAM_INDEX))
    mean_gap_ns = NS_PER_SECOND * w.batch / w.rate
    starts = np.empty(batches, dtype=np.int64)
    t = w.warmup  # the first batch goes out when warm-up ends, as with uniform arrival
    for j in range(batches):
        if j > 0:
            # Inverse CDF of the exponential; 1 - u lies in (0, 1], so the log is finite.
            t += round(-math.log(1.0 - rng.uniform()) * mean_gap_ns)
        starts[j] = t
    return starts


def _publishers(s: Scenario, nodes: int, batches: int) -> np.ndarray:
    w = s.workload
    pool = list(range(nodes)) if w.publishers == "random" else list(w.publishers)
    rng = SplitMix64(stream_seed(schedule_seed(s), "workload", PUBLISHER_STREAM_INDEX))
    chosen: list[int] = []
    for j in range(batches):
        in_batch = min(w.batch, w.messages - j * w.batch)
        if w.batch_publisher == "same":
            # One draw per batch; a batch of one draws exactly as with distinct publishers.
            chosen.extend(rng.sample(pool, 1) * in_batch)
        else:
            chosen.extend(rng.sample(pool, in_batch))  # distinct publishers within one batch
    return np.array(chosen, dtype=np.uint32)


def build_schedule(s: Scenario, nodes: int) -> Schedule:
    """The publish schedule of ``s`` for a graph of ``nodes`` nodes."""
    w = s.workload
    if w.publishers != "random" and max(w.publishers) >= nodes:
        message = f"node {max(w.publishers)} is not in a graph of {nodes} nodes"
        hint = f"ids run from 0 to nodes-1 = {nodes - 1}"
        raise ScenarioError([Problem("workload.publishers", message, hint)])
    batches = batch_count(w.messages, w.batch)
    batch_ids = np.arange(w.messages, dtype=np.uint32) // w.batch
    starts = _batch_starts_ns(s, batches)
    return Schedule(
        t_intended_ns=starts[batch_ids],
        publisher=_publishers(s, nodes, batches),
        size=np.full(w.messages, w.size, dtype=np.uint32),
        topic=(np.arange(w.messages, dtype=np.int64) % w.topics).astype(np.uint16),
        batch=batch_ids,
    )


def end_time_ns(s: Scenario, schedule: Schedule) -> int:
    """When the run ends: the last intended publish plus the cool-down."""
    return int(schedule.t_intended_ns[-1]) + s.workload.cooldown
