"""One line for the report: which CPU costs the model charged per hop."""

from __future__ import annotations

import tomllib
from pathlib import Path

from gossiplab.errors import GossiplabError
from gossiplab.scenario import Scenario, parse_scenario
from gossiplab.scenario.cpu import TURN_FIELDS, CpuConfig

NS_PER_US = 1_000


def _us(ns: int) -> str:
    return f"{ns / NS_PER_US:,.3g} µs"


def _step(name: str, per_item: int, item: str, per_kb: int = 0) -> str | None:
    if not per_item and not per_kb:
        return None
    parts = [f"{_us(per_item)}/{item}"] if per_item else []
    if per_kb:
        parts.append(f"{_us(per_kb)}/kB")
    return f"{name} {' + '.join(parts)}"


def _read_step(cpu: CpuConfig) -> str | None:
    """Reading, with the reading goroutine's wake-up (shared by the RPCs read at once)."""
    step = _step("read", cpu.per_rpc_received, "RPC", cpu.per_kb_received)
    if not cpu.per_read_wakeup:
        return step
    wakeup = f"{_us(cpu.per_read_wakeup)}/wake-up"
    return f"{step} + {wakeup}" if step else f"read {wakeup}"


def _loop_step(cpu: CpuConfig) -> str | None:
    """pubsub's event loop: per RPC it handles, per message it publishes, per forward."""
    if not cpu.event_loop:
        return None
    parts = [
        f"{_us(cost)}/{item}"
        for cost, item in (
            (cpu.per_rpc_loop, "RPC"),
            (cpu.per_publish_loop, "message"),
            (cpu.per_forward_loop, "forward"),
        )
        if cost
    ]
    return f"event loop {' + '.join(parts)}" if parts else None


def cpu_per_hop(s: Scenario) -> str:
    """What one hop costs in CPU in the model, in one line (the costs at the hosts'
    speed)."""
    cpu, net = s.cpu.charged(), s.network
    if any(c.cpu_per_message != net.cpu_per_message for c in net.classes):
        validate = "validate: per node class"
    else:
        per_copy = cpu.per_copy + s.cpu.at_speed(net.cpu_per_message)
        validate = _step("validate", per_copy, "copy", cpu.per_kb_copy)
    steps = [
        _step("write", cpu.per_rpc_sent, "RPC", cpu.per_kb_sent),
        _read_step(cpu),
        _step("message id", 0, "copy", cpu.per_kb_message_id),
        _loop_step(cpu),
        validate,
    ]
    charged = [step for step in steps if step]
    parts = [", ".join(charged)] if charged else []
    if cpu.per_node_wakeup:
        parts.append(f"node wake-up {_us(cpu.per_node_wakeup)}")
    publish = _step("publish", cpu.per_publish, "message", cpu.per_kb_publish)
    if publish:
        parts.append(publish)
    parts += _turns(cpu)
    if not parts:
        return "none: no CPU cost is set ([cpu], network.cpu_per_message)"
    line = "; ".join(parts) + _spread(cpu.sigma, cpu.sigmas())
    hosts = "own host" if cpu.nodes_per_host == 1 else f"{cpu.nodes_per_host:,} nodes per host"
    cores = "1 core" if cpu.cores == 1 else f"{cpu.cores} cores"
    line = f"{line}; {hosts}, {cores}"
    if cpu.nodes_per_host > cpu.cores:
        line += f", time slices of {cpu.slice_ns() / 1e6:g} ms" + _slice_end(cpu)
        if cpu.sysmon:
            line += ", each node's sysmon waking the kernel"
            if cpu.per_sysmon_round:
                line += f" ({_us(cpu.per_sysmon_round)} a round)"
            shares = (cpu.send_loop_syscall_share, cpu.recv_loop_syscall_share)
            if shares != (1.0, 1.0):
                line += (
                    f", in a system call for {shares[0]:.0%} of a write's CPU and "
                    f"{shares[1]:.0%} of a read's"
                )
    if s.cpu.speed != 1:
        line += f"; hosts {s.cpu.speed:g}× as fast as the machine the costs were measured on"
    return line


def _slice_end(cpu: CpuConfig) -> str:
    """When a slice that is over ends: on time with HRTICK, else at the kernel's tick or
    a wake-up on the core (crates/engine/src/slices.rs)."""
    if cpu.hrtick:
        return " ended on time (hrtick)"
    return f" ended at the next {1000 / cpu.kernel_hz:g} ms tick or wake-up"


def _turns(cpu: CpuConfig) -> list[str]:
    """The costs per goroutine turn, shared by what a goroutine takes in one turn."""
    charged = [(name, getattr(cpu, field)) for field, name in TURN_FIELDS.items()]
    turns = [f"{name} {_us(ns)}" for name, ns in charged if ns]
    return [f"per goroutine turn: {', '.join(turns)}"] if turns else []


def _spread(sigma: float, sigmas: dict[str, float]) -> str:
    """The lognormal shapes: the common one, then the costs with one of their own."""
    own = [f"{name} {s:g}" for name, s in sigmas.items() if s != sigma]
    if not sigma and not any(sigmas.values()):
        return ""
    return f"; lognormal, σ = {sigma:g}" + (f" ({', '.join(own)})" if own else "")


def cpu_line(scenario_toml: str, base_dir: Path) -> str | None:
    """The line for a resolved scenario, or None if it does not parse (an older folder)."""
    try:
        return cpu_per_hop(parse_scenario(tomllib.loads(scenario_toml), base_dir))
    except (tomllib.TOMLDecodeError, GossiplabError):
        return None
