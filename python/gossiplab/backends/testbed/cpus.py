"""Which CPUs the nodes and the delay stage run on (testbed.node_cpus).

The model is told "one host of N cores"; the real nodes only get N cores if nothing else
runs there. Confining the nodes to the listed CPUs and the delay stage to the others
makes that exact. The confinement is applied at spawn (`taskset -c`, inherited through
`ip netns exec` and exec, sched_setaffinity(2)), because Go sizes GOMAXPROCS from the
affinity mask at start (runtime/os_linux.go: getCPUCount, sched_getaffinity).
"""

from __future__ import annotations

from pathlib import Path

from gossiplab.errors import Problem
from gossiplab.scenario import Scenario

ONLINE = "/sys/devices/system/cpu/online"


def parse_cpu_list(text: str) -> list[int]:
    """The kernel's CPU list format ("0-3,6"), as in /sys/devices/system/cpu/online."""
    cpus: list[int] = []
    for part in text.strip().split(","):
        if not part:
            continue
        low, _, high = part.partition("-")
        cpus += range(int(low), int(high or low) + 1)
    return cpus


def online_cpus() -> list[int]:
    return parse_cpu_list(Path(ONLINE).read_text(encoding="ascii"))


def format_cpu_list(cpus: list[int]) -> str:
    return ",".join(str(c) for c in sorted(cpus))


def node_cpu_problems(s: Scenario) -> list[Problem]:
    """CPUs this host does not have online cannot take the nodes."""
    wanted = s.testbed.node_cpus
    if wanted is None:
        return []
    online = online_cpus()
    missing = sorted(set(wanted) - set(online))
    if not missing:
        return []
    message = (
        f"CPU {format_cpu_list(missing)} is not online here (online: {format_cpu_list(online)})"
    )
    hint = f"list CPUs among {format_cpu_list(online)}, or leave node_cpus out"
    return [Problem("testbed.node_cpus", message, hint)]


def delay_cpus(node_cpus: list[int] | None) -> list[int] | None:
    """The delay stage's CPUs: the online ones the nodes do not have; None (any CPU) when
    the nodes are not confined or have them all (the stage then shares with them)."""
    if node_cpus is None:
        return None
    rest = [c for c in online_cpus() if c not in node_cpus]
    return rest or None


def affinity_prefix(cpus: list[int] | None) -> list[str]:
    """The command prefix that starts a process confined to `cpus` (none: unconfined)."""
    return [] if cpus is None else ["taskset", "-c", format_cpu_list(cpus)]
