"""[testbed]: only read by the testbed backend (real go-libp2p-pubsub nodes)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from gossiplab.errors import Problem
from gossiplab.scenario.base import Section, raise_problems
from gossiplab.units import NS_PER_SECOND, Duration, format_duration

# What go-libp2p v0.51.0 no longer ships, and what to say instead of silently substituting.
_GONE_FROM_GO_LIBP2P = {
    ("security", "secio"): "go-libp2p no longer ships it: use noise or tls",
    ("muxer", "mplex"): "go-libp2p no longer ships it: use yamux",
}


class TestbedConfig(Section):
    """How the testbed backend runs the scenario: libp2p stack, router, profiling, limits."""

    transport: Literal["tcp", "quic"] = "tcp"
    # Resolved from the transport: noise + yamux over TCP; QUIC has its own TLS and streams.
    security: Literal["noise", "tls"] = "noise"
    muxer: Literal["yamux", "quic"] = "yamux"
    # Resolved to protocol.name; "randomsub" is go-libp2p-pubsub's random-fanout baseline.
    router: Literal["gossipsub", "floodsub", "randomsub"] = "gossipsub"
    # TCP's congestion control for the nodes' connections: "host" keeps the host's default
    # (inherited by every namespace), the others are set on the nodes' routes.
    congestion_control: Literal["host", "cubic", "bbr", "reno"] = "host"
    profile: bool = False  # CPU profile (runtime/pprof) of every node over the measured interval
    # Nodes whose execution trace (runtime/trace) is recorded over the measured interval:
    # how go scheduled their goroutines (bench/go_trace_schedule.py reads them).
    go_trace: list[int] = Field(default_factory=list)
    # The delay stage's p99 release lateness above which the run fails: the links were
    # then not the scenario's any more.
    max_delay_error: Duration = 10 * NS_PER_SECOND // 1000
    sample_interval: Duration = NS_PER_SECOND // 2  # CPU and memory of every node
    keep_traces: bool = False  # copy every node's trace and result files into the results
    trace_rpc: bool = False  # also trace SEND_RPC/RECV_RPC (large; traffic is counted anyway)
    # The CPUs every node process is confined to (the delay stage gets the others), so the
    # model's [cpu] cores can be exactly what the nodes had; None: the whole host, shared.
    node_cpus: list[int] | None = None

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
        raise_problems(problems)
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
        problems += _node_cpu_problems(self.node_cpus)
        problems += _go_trace_problems(self.go_trace)
        raise_problems(problems)
        return self


def _node_cpu_problems(cpus: list[int] | None) -> list[Problem]:
    """The list's own shape; whether this host has those CPUs online is the backend's check."""
    if cpus is None:
        return []
    hint = "list CPU numbers, e.g. node_cpus = [1], or leave node_cpus out"
    if not cpus:
        return [Problem("node_cpus", "an empty list leaves the nodes no CPU", hint)]
    if min(cpus) < 0:
        return [Problem("node_cpus", f"CPU numbers start at 0, got {min(cpus)}", hint)]
    if len(set(cpus)) != len(cpus):
        return [Problem("node_cpus", f"lists a CPU twice: {cpus}", hint)]
    return []


def _go_trace_problems(ids: list[int]) -> list[Problem]:
    """The list's own shape; that the ids are below topology.nodes is a cross-section rule."""
    hint = "list node ids, e.g. go_trace = [0], each once"
    if ids and min(ids) < 0:
        return [Problem("go_trace", f"node ids start at 0, got {min(ids)}", hint)]
    if len(set(ids)) != len(ids):
        return [Problem("go_trace", f"lists a node twice: {ids}", hint)]
    return []
