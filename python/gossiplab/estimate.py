"""How much memory and time a model run will take, before it starts.

A scenario that cannot fit in this machine's memory is refused up front, with the
estimate and how to shrink it, instead of being killed by the kernel an hour in. The
figures are deliberately simple and a little pessimistic; they were calibrated on the
demo (3.4 million deliveries: about 700 MiB peak) and the 1,000- and 10,000-node
benchmarks (bench/RESULTS.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from gossiplab.backends.params import engine_cpu
from gossiplab.errors import Problem, ScenarioError
from gossiplab.scenario import Scenario
from gossiplab.topology import Topology
from gossiplab.workload import Schedule

# Peak bytes per first-receipt row over the whole run: the engine's columns, their
# numpy and polars copies, the Parquet writer and the metrics' joins.
BYTES_PER_DELIVERY = 200
# Per duplicate-inclusive receipt row when receipts.parquet is written.
BYTES_PER_RECEIPT = 120
# Engine state per directed link (queues, network, counters) and per node.
BYTES_PER_LINK = 200
BYTES_PER_NODE = 4096
# Interpreter, libraries and plotting.
BASELINE = 300 * 2**20
# The uplink writes large RPCs in chunks of this size, one event each.
CHUNK = 16 * 1024
# Events per second the engine sustains on this machine kind (bench/RESULTS.md).
EVENTS_PER_SECOND = 2.5e6
# Longer than this is refused: a day of computing is a mistake more often than a plan.
MAX_SECONDS = 24 * 3600
# Use at most this share of the memory available now.
MEMORY_HEADROOM = 0.9
# Aggregate output mode (no first-receipt rows): per message, the engine's schedule entry
# and aggregate record, and the publishes and messages tables through the analysis; per
# seen-cache entry, its hash-map slot at the map's lowest load (bench/RESULTS.md, soak).
BYTES_PER_MESSAGE_AGGREGATE = 600
BYTES_PER_SEEN_ENTRY = 70
# Seen entries live seen_ttl plus up to one sweep interval (go's timecache: 1 min).
SEEN_SWEEP_NS = 60 * 10**9
# A run that charges CPU samples each node's CPU at every simulated second: the engine's
# per-second counter, its column copies, the resources table and its Parquet writer.
BYTES_PER_CPU_SAMPLE = 80


@dataclass(frozen=True)
class Estimate:
    memory_bytes: int
    deliveries: int
    events: int
    seconds: float


def estimate(s: Scenario, topology: Topology, schedule: Schedule) -> Estimate:
    nodes = topology.nodes
    links = 2 * len(topology.edges)
    messages = len(schedule.t_intended_ns)
    deliveries = messages * max(nodes - 1, 0)
    aggregate = s.output.mode == "aggregate"
    # Each node receives a message from about D mesh peers (all topic peers with floodsub).
    degree = links / nodes if nodes else 0
    copies = degree if s.protocol.name == "floodsub" else min(degree, s.protocol.D + 1)
    receipts = round(deliveries * copies) if s.output.receipts else 0
    memory = (
        BASELINE + receipts * BYTES_PER_RECEIPT + links * BYTES_PER_LINK + nodes * BYTES_PER_NODE
    )
    if aggregate:
        memory += messages * BYTES_PER_MESSAGE_AGGREGATE
        memory += nodes * _seen_at_once(s, schedule) * BYTES_PER_SEEN_ENTRY
    else:
        memory += deliveries * BYTES_PER_DELIVERY
    if charges_cpu(s):
        memory += nodes * (math.ceil(schedule_end_s(s, schedule)) + 1) * BYTES_PER_CPU_SAMPLE
    limited = s.network.has_bandwidth_limit()
    chunks = max(1, math.ceil(int(schedule.size.mean()) / CHUNK)) if messages and limited else 1
    heartbeats = nodes * (schedule_end_s(s, schedule) / (s.protocol.heartbeat / 1e9))
    events = round(deliveries * copies * (1 + chunks) + heartbeats * (1 + degree / 4))
    recorded = 0 if aggregate else deliveries
    return Estimate(memory, recorded, events, events / EVENTS_PER_SECOND)


def charges_cpu(s: Scenario) -> bool:
    """True if some work costs CPU in the model (then it writes resources.parquet)."""
    costs = engine_cpu(s.cpu)
    charged = [v for k, v in costs.items() if k.startswith("per_") and k.endswith("_ns")]
    per_message = [s.network.cpu_per_message, *(c.cpu_per_message for c in s.network.classes)]
    return any(charged) or any(per_message)


def _seen_at_once(s: Scenario, schedule: Schedule) -> int:
    """The most messages a node's seen cache holds at once (aggregate mode's memory)."""
    times = schedule.t_intended_ns
    messages = len(times)
    if messages < 2:
        return messages
    span = int(times.max()) - int(times.min())
    window = s.protocol.seen_ttl + SEEN_SWEEP_NS
    if span <= window:
        return messages
    return min(messages, math.ceil(messages * window / span))


def schedule_end_s(s: Scenario, schedule: Schedule) -> float:
    last = int(schedule.t_intended_ns.max()) if len(schedule.t_intended_ns) else 0
    return (last + s.workload.cooldown) / 1e9


def available_memory() -> int | None:
    """MemAvailable from /proc/meminfo, in bytes (None where there is no such file)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def check_fits(e: Estimate, available: int | None) -> None:
    """Refuse a run that would not fit in memory or would run for days, saying by how much
    and how to shrink it."""
    problems = []
    if available is not None and e.memory_bytes > available * MEMORY_HEADROOM:
        gib = 2**30
        message = (
            f"this run needs about {e.memory_bytes / gib:.1f} GiB "
            f"({e.deliveries:,} first receipts to record) but this machine has "
            f"{available / gib:.1f} GiB available"
        )
        hint = (
            "shrink it: fewer messages (workload.messages, or rate × duration), fewer nodes "
            '(topology.nodes), output.receipts = false, or output.mode = "aggregate"'
        )
        problems.append(Problem("workload.messages", message, hint))
    if e.seconds > MAX_SECONDS:
        message = (
            f"this run would take about {e.seconds / 3600:,.0f} hours "
            f"({e.events:,} events at about {EVENTS_PER_SECOND / 1e6:.1f} million a second)"
        )
        hint = "shrink it: fewer nodes, fewer messages, or a shorter workload.duration"
        problems.append(Problem("workload.messages", message, hint))
    if problems:
        raise ScenarioError(problems)
