"""The JSON configuration of each Go node (testbed/config.go is its other half)."""

from __future__ import annotations

from typing import Any

import numpy as np

from gossiplab.backends.params import graft_params, protocol_params, score_params
from gossiplab.backends.partial_plan import PartialPlan, draw_partial_plan
from gossiplab.backends.testbed.netns import node_ip
from gossiplab.rng import SplitMix64, stream_seed
from gossiplab.scenario import Scenario
from gossiplab.topology import Topology
from gossiplab.workload import Schedule

PORT = 4001


def listen_addr(s: Scenario, node: int) -> str:
    if s.testbed.transport == "quic":
        return f"/ip4/{node_ip(node)}/udp/{PORT}/quic-v1"
    return f"/ip4/{node_ip(node)}/tcp/{PORT}"


def protocol_config(s: Scenario) -> dict[str, Any]:
    # The Go node reads the graft parameters from its protocol section; the v2.0 fork's
    # node (testbed/forknode/config.go) its lazy-push parameters too.
    p = s.protocol
    v20 = {"D_announce": p.D_announce, "ineed_timeout_ns": p.ineed_timeout}
    return {**protocol_params(p), **graft_params(p), **(v20 if p.version == "2.0" else {})}


def score_config(s: Scenario) -> dict[str, Any] | None:
    if s.testbed.router != "gossipsub":
        return None
    return score_params(s.protocol.score)


def partial_plan(s: Scenario, schedule: Schedule) -> PartialPlan | None:
    """The roles and mempools every backend runs (the model draws the same); None for
    whole messages, which is also what ``enabled = false`` sends (the paired baseline)."""
    if s.workload.partial is None or not s.workload.partial.enabled:
        return None
    return draw_partial_plan(s, schedule, s.seed)


def held_hex(bits: int, parts: int) -> str:
    """A set of parts in go's bitmap layout (part i is bit i % 8 of byte i // 8,
    partialmessages/bitmap/bitmap.go), as hex: what the Go node reads (config.go Held)."""
    return bits.to_bytes((parts + 7) // 8, "little").hex()


def partial_config(s: Scenario, plan: PartialPlan, node: int) -> dict[str, Any]:
    """Node ``node``'s [workload.partial]: the group's sizes and rule, its role, and the
    parts it holds of every group (testbed/gossipnode/config.go PartialConfig)."""
    p = s.workload.partial
    assert p is not None
    return {
        "parts": p.parts,
        "part_size": p.part_size,
        "part_overhead": p.part_overhead,
        "full_overhead": p.full_overhead,
        "group_id_size": p.group_id_size,
        "eager_push": p.eager_push,
        "full_fallback": p.full_fallback,
        "rule": p.rule,
        "group_ttl_heartbeats": p.group_ttl_heartbeats,
        "peer_group_limit_per_topic": p.peer_group_limit_per_topic,
        "peer_group_limit_per_peer": p.peer_group_limit_per_peer,
        "role": plan.roles[node],
        "held": {str(msg): held_hex(group[node], p.parts) for msg, group in enumerate(plan.held)},
        # One line per part received (parts.ndjson), kept with the traces.
        "log_parts": s.testbed.keep_traces,
    }


def node_configs(
    s: Scenario, topology: Topology, schedule: Schedule, dirs: dict[int, str]
) -> dict[int, dict[str, Any]]:
    """One configuration per node, keyed by node index."""
    peers: dict[int, list[dict[str, Any]]] = {i: [] for i in range(topology.nodes)}
    for dialer, listener in topology.edges.tolist():
        peers[dialer].append({"index": listener, "addr": listen_addr(s, listener), "dial": True})
        peers[listener].append({"index": dialer, "addr": listen_addr(s, dialer), "dial": False})
    # Direct peers on both ends (a pair listed twice, or both ways, counts once); only
    # gossipsub has them.
    direct: dict[int, set[int]] = {i: set() for i in range(topology.nodes)}
    if s.testbed.router == "gossipsub":
        for a, b in s.protocol.direct_peers:
            direct[a].add(b)
            direct[b].add(a)
    own: dict[int, list[dict[str, Any]]] = {i: [] for i in range(topology.nodes)}
    for msg in np.argsort(schedule.t_intended_ns, kind="stable").tolist():
        own[int(schedule.publisher[msg])].append(
            {
                "msg": msg,
                "t_ns": int(schedule.t_intended_ns[msg]),
                "size": int(schedule.size[msg]),
                "topic": int(schedule.topic[msg]),
            }
        )
    common = {
        "seed": s.seed,
        "transport": s.testbed.transport,
        "security": s.testbed.security,
        "muxer": s.testbed.muxer,
        "router": s.testbed.router,
        "randomsub_size": topology.nodes,
        "version": s.protocol.version,
        "protocol": protocol_config(s),
        "score": score_config(s),
        "topics": s.workload.topics,
        "warmup_ns": s.workload.warmup,
        "profile": s.testbed.profile,
        "trace_rpc": s.testbed.trace_rpc,
    }
    plan = partial_plan(s, schedule)
    configs = {
        i: {
            **common,
            "index": i,
            "listen": listen_addr(s, i),
            "peers": sorted(peers[i], key=lambda p: p["index"]),
            "direct": [
                {"index": d, "addr": listen_addr(s, d), "dial": False} for d in sorted(direct[i])
            ],
            "schedule": own[i],
            "dir": dirs[i],
            "go_trace": i in s.testbed.go_trace,
            **({"partial": partial_config(s, plan, i)} if plan is not None else {}),
        }
        for i in range(topology.nodes)
    }
    stagger_heartbeats(s, configs)
    return configs


def stagger_heartbeats(s: Scenario, configs: dict[int, dict[str, Any]]) -> None:
    """Give each node's first heartbeat a random phase within one interval, as the model does.

    Nodes of a real network start at unrelated instants, so their heartbeats fall at
    unrelated phases. The testbed starts its processes within about 0.2 s of each other and
    simnet its hosts at virtual time 0; with go's fixed initial delay their heartbeats would
    nearly coincide, and synchronised heartbeats GRAFT each other in the same instant and
    overfill meshes (20 nodes of degree 10: meshes of 8.4 peers against 7.2). The engine
    draws each node's phase uniformly in [0, heartbeat) after the initial delay
    (crates/engine/src/setup.rs, `start`); the same rule goes here into go's
    HeartbeatInitialDelay (gossipsub.go `heartbeatTimer` sleeps it, then ticks every
    interval), from a stream of its own. The stream's name fixes every seeded run's phases.
    """
    if s.protocol.name != "gossipsub":
        return
    rng = SplitMix64(stream_seed(s.seed, "simnet-heartbeat-phase"))
    for node in sorted(configs):
        protocol = dict(configs[node]["protocol"])
        protocol["heartbeat_initial_delay_ns"] += rng.randbelow(protocol["heartbeat_ns"])
        configs[node]["protocol"] = protocol
