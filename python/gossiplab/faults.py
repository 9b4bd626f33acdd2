"""Turn the scenario's `[[faults]]` into explicit, per-node events for the engine.

Which nodes a fault hits (`count`/`share`), when churning nodes leave and which side of a
`split` a node falls on are drawn here, from named sub-streams of the scenario seed
(`faults.<i>`), so the same scenario always hits the same nodes and adding a fault does
not move the others. The engine receives only node ids and times:

- `down` intervals (crash: from `at` to the end; churn: each leave until its rejoin);
- `partition` groups with their window;
- `adversaries`, one entry per misbehaving node.

The same intervals go into the run info, so the metrics can leave out, per message,
the nodes that were down while it spread.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from gossiplab.rng import SplitMix64, stream_seed
from gossiplab.scenario import Scenario

NS_PER_S = 1_000_000_000


def _pick(s: Scenario, fault: Any, index: int, nodes: int) -> list[int]:
    """The node ids a fault with a `nodes`/`count`/`share` selection hits."""
    if fault.nodes is not None:
        return sorted(set(fault.nodes))
    count = fault.count if fault.count is not None else max(1, round(fault.share * nodes))
    rng = SplitMix64(stream_seed(s.seed, f"faults.{index}"))
    return sorted(rng.sample(list(range(nodes)), min(count, nodes)))


def _churn(s: Scenario, fault: Any, index: int, nodes: int) -> list[dict[str, Any]]:
    """Leaves as a Poisson process of `leave_rate` per second (network-wide) between start
    and end; each leaving node is one that is up, chosen at random, and rejoins after
    `rejoin_after`."""
    rng = SplitMix64(stream_seed(s.seed, f"faults.{index}"))
    back_at: dict[int, int] = {}
    events: list[dict[str, Any]] = []
    t = fault.start
    while True:
        gap = -math.log(1.0 - rng.uniform()) / fault.leave_rate
        t += round(gap * NS_PER_S)
        if t >= fault.end:
            return events
        up = [n for n in range(nodes) if back_at.get(n, 0) <= t]
        if not up:
            continue
        node = up[rng.randbelow(len(up))]
        back_at[node] = t + fault.rejoin_after
        events.append(
            {"kind": "down", "node": node, "from_ns": t, "until_ns": t + fault.rejoin_after}
        )


def _partition(s: Scenario, fault: Any, index: int, nodes: int) -> dict[str, Any]:
    if fault.groups is not None:
        groups = [sorted(set(g)) for g in fault.groups]
    else:
        order = list(range(nodes))
        SplitMix64(stream_seed(s.seed, f"faults.{index}")).shuffle(order)
        cut = max(1, min(nodes - 1, round(fault.split * nodes)))
        groups = [sorted(order[:cut]), sorted(order[cut:])]
    return {"kind": "partition", "groups": groups, "start_ns": fault.start, "end_ns": fault.end}


def slow_down(
    s: Scenario, nodes: int, upload: np.ndarray, download: np.ndarray, cpu: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Apply `slow` faults: the chosen nodes' CPU cost × cpu_factor and bandwidth ×
    bandwidth_factor, for the whole run (unlimited bandwidth stays unlimited)."""
    upload, download, cpu = upload.copy(), download.copy(), cpu.copy()
    for i, fault in enumerate(s.faults):
        if fault.kind != "slow":
            continue
        chosen = np.array(_pick(s, fault, i, nodes), dtype=np.int64)
        cpu[chosen] = np.round(cpu[chosen] * fault.cpu_factor).astype(cpu.dtype)
        for side in (upload, download):
            limited = chosen[side[chosen] > 0]
            scaled = np.maximum(1, np.round(side[limited] * fault.bandwidth_factor))
            side[limited] = scaled.astype(side.dtype)
    return upload, download, cpu


def engine_faults(s: Scenario, nodes: int) -> dict[str, list[dict[str, Any]]]:
    """The engine config's `faults` and `adversaries` for scenario `s`."""
    faults: list[dict[str, Any]] = []
    adversaries: list[dict[str, Any]] = []
    changes: list[dict[str, Any]] = []
    for i, fault in enumerate(s.faults):
        if fault.kind == "crash":
            for node in _pick(s, fault, i, nodes):
                faults.append({"kind": "down", "node": node, "from_ns": fault.at, "until_ns": None})
        elif fault.kind == "churn":
            faults.extend(_churn(s, fault, i, nodes))
        elif fault.kind == "partition":
            faults.append(_partition(s, fault, i, nodes))
        elif fault.kind == "leave":
            for node in _pick(s, fault, i, nodes):
                change = {"node": node, "topic": fault.topic, "at_ns": fault.at}
                changes.append({**change, "subscribe": False})
                if fault.rejoin_after is not None:
                    back = fault.at + fault.rejoin_after
                    changes.append({**change, "at_ns": back, "subscribe": True})
        elif fault.kind == "adversary":
            for node in _pick(s, fault, i, nodes):
                adversaries.append(
                    {
                        "node": node,
                        "behaviour": fault.behaviour,
                        "delay_ns": fault.delay,
                        "spam_ids": (
                            fault.invalid_per_heartbeat
                            if fault.behaviour == "spam-invalid"
                            else s.protocol.max_ihave_length
                        ),
                        "spam_size": s.workload.size,
                    }
                )
    return {"faults": faults, "adversaries": adversaries, "subscription_changes": changes}


def unsubscribed_intervals(changes: list[dict[str, Any]]) -> list[list[int | None]]:
    """The run info's ``unsubscribed``: [node, topic, from_ns, until_ns or None] for each
    stretch a node spent out of a topic (every node starts in every topic), from the
    engine config's ``subscription_changes``."""
    ordered = sorted(changes, key=lambda c: (c["node"], c["topic"], c["at_ns"]))
    intervals: list[list[int | None]] = []
    left: dict[tuple[int, int], int] = {}
    for c in ordered:
        key = (c["node"], c["topic"])
        if not c["subscribe"]:
            left.setdefault(key, c["at_ns"])
        elif key in left:
            intervals.append([*key, left.pop(key), c["at_ns"]])
    intervals += [[*key, start, None] for key, start in left.items()]
    return sorted(intervals, key=lambda i: (i[0], i[1], i[2]))


def down_intervals(engine_fault_list: list[dict[str, Any]]) -> list[list[int | None]]:
    """[node, from_ns, until_ns or None] for every down interval (for the run info)."""
    return [
        [f["node"], f["from_ns"], f["until_ns"]] for f in engine_fault_list if f["kind"] == "down"
    ]
