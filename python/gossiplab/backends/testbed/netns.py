"""Network namespaces of a testbed run: naming, building the network, tearing it down.

Layout: one namespace per node (``gl<pid>-<i>``) with one interface ``eth0``, and a core
namespace (``gl<pid>-c``) holding the other end of every node's veth pair (``n<i>``) and
routing between them. Everything is created inside these namespaces (veth pairs are
created directly in them), so deleting the namespaces removes the interfaces, addresses,
qdiscs and iptables rules with them. Nothing is added to the host's own namespace.

Node i owns the /30 at 10.77.0.0 + 4i: the core side is .1, the node side .2 of it.
Names carry the orchestrator's PID, so leftovers of a run that was killed are found at
the next start (their PID is dead) and removed, while a concurrent live run is left alone.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import re
import shutil
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

from gossiplab.backends.testbed.commands import batch, sh

PREFIX = "gl"
CORE = "c"
NAME_PATTERN = re.compile(rf"^{PREFIX}(?P<pid>\d+)-(?P<part>{CORE}|probe|\d+)$")
BASE_ADDRESS = ipaddress.IPv4Address("10.77.0.0")
MAX_NODES = 16_383  # /30 blocks in 10.77.0.0/16
WORK_ROOT = Path(os.environ.get("GOSSIPLAB_TESTBED_WORK", "/tmp/gossiplab-testbed"))
NODE_IFACE = "eth0"


def run_prefix(pid: int | None = None) -> str:
    return f"{PREFIX}{os.getpid() if pid is None else pid}"


def core_ns(prefix: str) -> str:
    return f"{prefix}-{CORE}"


def node_ns(prefix: str, node: int) -> str:
    return f"{prefix}-{node}"


def core_iface(node: int) -> str:
    return f"n{node}"  # at most 15 characters for up to 16,383 nodes


def node_ip(node: int) -> str:
    return str(BASE_ADDRESS + 4 * node + 2)


def core_ip(node: int) -> str:
    return str(BASE_ADDRESS + 4 * node + 1)


def list_namespaces() -> list[str]:
    out = sh(["ip", "netns", "list"], check=False)
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def namespace_pids(name: str) -> list[int]:
    out = sh(["ip", "netns", "pids", name], check=False)
    return [int(word) for word in out.split() if word.isdigit()]


def delete_namespaces(names: list[str]) -> None:
    """Kill every process inside the namespaces, then delete them."""
    for name in names:
        for pid in namespace_pids(name):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    batch([f"netns delete {name}" for name in names if name in set(list_namespaces())])


@dataclass(frozen=True)
class Cleaned:
    namespaces: list[str]
    work_dirs: list[str]


def clean_stale(all_runs: bool = False) -> Cleaned:
    """Remove namespaces and work folders of runs whose orchestrator is dead.

    With ``all_runs`` also those of live runs other than this process (``gossiplab clean
    --all``); this process's own run is never touched.
    """
    mine = run_prefix()
    stale = []
    for name in list_namespaces():
        match = NAME_PATTERN.match(name)
        if match is None or name.startswith(mine + "-"):
            continue
        if all_runs or not _pid_alive(int(match["pid"])):
            stale.append(name)
    delete_namespaces(stale)
    dirs = []
    if WORK_ROOT.is_dir():
        for entry in WORK_ROOT.iterdir():
            match = re.match(rf"^{PREFIX}(\d+)\.", entry.name)
            if match is None or entry.name.startswith(mine + "."):
                continue
            if all_runs or not _pid_alive(int(match[1])):
                shutil.rmtree(entry, ignore_errors=True)
                dirs.append(str(entry))
    return Cleaned(stale, dirs)


def build_network(
    prefix: str,
    nodes: list[int],
    upload_bps: list[int],
    download_bps: list[int],
    congestion: str | None = None,
) -> None:
    """Namespaces, veth pairs, addresses, routes and HTB shaping for ``nodes``.

    ``congestion`` sets TCP's congestion control on the nodes' route to each other (a
    route's ``congctl``, which the kernel applies to every connection over it:
    net/ipv4/tcp_cong.c:tcp_ca_dst_init, active and passive ends alike); None keeps the
    host's default, which a namespace cannot change unless the host allows it."""
    congctl = f" congctl {congestion}" if congestion else ""
    core = core_ns(prefix)
    root = [f"netns add {core}"] + [f"netns add {node_ns(prefix, i)}" for i in nodes]
    root += [
        f"link add {core_iface(i)} netns {core} type veth peer name {NODE_IFACE} "
        f"netns {node_ns(prefix, i)}"
        for i in nodes
    ]
    batch(root)
    core_lines = ["link set lo up"]
    for i in nodes:
        core_lines += [
            f"addr add {core_ip(i)}/30 dev {core_iface(i)}",
            f"link set {core_iface(i)} up",
        ]
    batch(core_lines, netns=core)
    for i in nodes:
        node_lines = [
            "link set lo up",
            f"addr add {node_ip(i)}/30 dev {NODE_IFACE}",
            f"link set {NODE_IFACE} up",
            f"route add default via {core_ip(i)}{congctl}",
        ]
        batch(node_lines, netns=node_ns(prefix, i))
    sh(["ip", "netns", "exec", core, "sysctl", "-qw", "net.ipv4.ip_forward=1"])
    core_tc = []
    for i in nodes:
        # Upload: the node's own egress. Download: the core's egress towards the node,
        # which is the node's ingress without needing an IFB device.
        if upload_bps[i]:
            batch(_htb(NODE_IFACE, upload_bps[i]), tool="tc", netns=node_ns(prefix, i))
        if download_bps[i]:
            core_tc += _htb(core_iface(i), download_bps[i])
    batch(core_tc, tool="tc", netns=core)


def _htb(dev: str, bps: int) -> list[str]:
    # A deep FIFO under the rate limit: the scenario's bandwidth should queue, not drop.
    return [
        f"qdisc add dev {dev} root handle 1: htb default 1",
        f"class add dev {dev} parent 1: classid 1:1 htb rate {bps}bit ceil {bps}bit",
        f"qdisc add dev {dev} parent 1:1 handle 10: pfifo limit 10000",
    ]


def install_impairments(prefix: str, loss: float, queue: int | None) -> None:
    """iptables in the core: random loss on forwarded packets, then the delay queue."""
    core = core_ns(prefix)
    rules = []
    if loss > 0:
        rules.append(
            ["-A", "FORWARD", "-m", "statistic", "--mode", "random",
             "--probability", f"{loss:.6f}", "-j", "DROP"]
        )  # fmt: skip
    if queue is not None:
        rules.append(["-A", "FORWARD", "-j", "NFQUEUE", "--queue-num", str(queue)])
    for rule in rules:
        sh(["ip", "netns", "exec", core, "iptables", "-w", *rule])


def has_netem() -> bool:
    """Whether this kernel has sch_netem (checked in a throwaway namespace)."""
    name = f"{run_prefix()}-probe"
    sh(["ip", "netns", "add", name], check=False)
    try:
        done = subprocess.run(
            ["tc", "-n", name, "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms"],
            capture_output=True,
            check=False,
        )
        return done.returncode == 0
    finally:
        sh(["ip", "netns", "delete", name], check=False)


def congestion_control(ns: str) -> str:
    """TCP's congestion control in namespace ``ns``: a new namespace inherits the host's
    default (net/ipv4/tcp_cong.c: tcp_set_default_congestion_control refuses any other
    than the host's allowed ones outside the initial namespace)."""
    path = "/proc/sys/net/ipv4/tcp_congestion_control"
    return sh(["ip", "netns", "exec", ns, "cat", path], check=False).strip() or "unknown"
