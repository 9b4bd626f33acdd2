"""Where a testbed run lost packets: the kernel's own counters, read at the end of a run.

Every counter here is per network namespace (the kernel keeps SNMP MIBs, qdisc and
interface statistics per netns) and the run's namespaces are fresh, so the value at the
end of the run is the run's total: nothing needs subtracting. Only the per-CPU backlog
(``/proc/net/softnet_stat``) is host-wide; it is read before and after.

What each place means:

- ``tcp``: the senders' view, summed over node namespaces. ``RetransSegs`` counts every
  retransmitted segment, including tail loss probes (``TCPLossProbes``), which are sent
  after two round trips without an ACK whether or not anything was lost;
  ``TCPTimeouts`` counts retransmission timeouts (RTO, at least 200 ms, ``TCP_RTO_MIN``
  in include/net/tcp.h). Receivers' own drops (socket buffer full, out-of-order queue
  pruned) are ``TCPRcvQDrop``, ``TCPOFODrop``, ``PruneCalled``...
- ``qdisc``: drops and overlimits of every qdisc (``tc -s qdisc``), in the node
  namespaces (the HTB uplinks) and in the core (the HTB downlinks).
- ``interfaces``: rx/tx drops of every interface (``/proc/net/dev``).
- ``ip``: IP-layer discards, in the core too (forwarding, and ``network.loss``'s
  iptables DROP, which the kernel counts nowhere else).
- ``nfqueue``: the delay stage's queue (its own statistics): packets the queue or the
  netlink socket had no room for, and verdicts that failed (a packet whose verdict is
  never written stays in the kernel's queue until the stage exits: lost).
- ``softnet``: packets dropped because a CPU's input backlog (``netdev_max_backlog``)
  was full; veth delivers through it.
"""

from __future__ import annotations

import itertools
import json
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

# TcpExt counters worth reporting (include/uapi/linux/snmp.h names, as /proc/net/netstat
# prints them): how losses were detected and repaired, and where receivers dropped.
TCP_EXT = (
    "TCPTimeouts",
    "TCPLossProbes",
    "TCPLossProbeRecovery",
    "TCPFastRetrans",
    "TCPSlowStartRetrans",
    "TCPLostRetransmit",
    "TCPSpuriousRTOs",
    "TCPSackRecovery",
    "TCPDSACKRecv",
    "TCPDSACKOldSent",
    "TCPDSACKRecvSegs",
    "TCPRetransFail",
    "TCPSynRetrans",
    "TCPRcvQDrop",
    "TCPBacklogDrop",
    "TCPOFODrop",
    "TCPZeroWindowDrop",
    "PruneCalled",
    "RcvPruned",
    "OfoPruned",
    "TCPOFOQueue",
    "TCPSACKReorder",
    # Not losses: slow start ended by cubic's HyStart (tcp_cubic.c:hystart_update), on a
    # train of ACKs or on a rising round trip, with the windows (segments) it ended at.
    # Such a connection grows by cubic's curve from there, and after idle slow start
    # stops at that ssthresh again (tcp_output.c:tcp_cwnd_restart keeps it).
    "TCPHystartTrainDetect",
    "TCPHystartTrainCwnd",
    "TCPHystartDelayDetect",
    "TCPHystartDelayCwnd",
)
TCP = ("RetransSegs", "OutSegs", "InSegs", "InErrs")
RECEIVER_DROPS = (
    "TCPRcvQDrop",
    "TCPBacklogDrop",
    "TCPOFODrop",
    "TCPZeroWindowDrop",
    "RcvPruned",
    "OfoPruned",
)
IP = ("InDiscards", "OutDiscards", "InHdrErrors", "InAddrErrors", "ForwDatagrams")
PROC_FILES = ("/proc/net/snmp", "/proc/net/netstat", "/proc/net/dev")
SOFTNET = Path("/proc/net/softnet_stat")


def parse_snmp(text: str) -> dict[str, dict[str, int]]:
    """``/proc/net/snmp`` and ``/proc/net/netstat``: pairs of lines, names then values."""
    tables: dict[str, dict[str, int]] = {}
    lines = [line.split() for line in text.splitlines() if ":" in line.split(" ", 1)[0]]
    for head, values in itertools.pairwise(lines):
        if head[0] != values[0] or not all(v.lstrip("-").isdigit() for v in values[1:]):
            continue
        tables.setdefault(head[0].rstrip(":"), {}).update(
            {name: int(v) for name, v in zip(head[1:], values[1:], strict=False)}
        )
    return tables


def parse_dev(text: str) -> dict[str, dict[str, int]]:
    """``/proc/net/dev``: rx and tx drops per interface (columns 4 and 12)."""
    out = {}
    for line in text.splitlines():
        name, sep, rest = line.partition(":")
        fields = rest.split()
        if not sep or len(fields) < 16 or not fields[0].isdigit():
            continue
        out[name.strip()] = {"rx_dropped": int(fields[3]), "tx_dropped": int(fields[11])}
    return out


def parse_softnet(text: str) -> dict[str, int]:
    """Dropped (column 2) and time_squeeze (column 3), summed over CPUs, hexadecimal."""
    dropped = squeezed = 0
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 3:
            dropped += int(fields[1], 16)
            squeezed += int(fields[2], 16)
    return {"dropped": dropped, "time_squeeze": squeezed}


def softnet() -> dict[str, int]:
    try:
        return parse_softnet(SOFTNET.read_text(encoding="ascii"))
    except OSError:
        return {"dropped": 0, "time_squeeze": 0}


def _run(args: list[str]) -> str:
    try:
        return subprocess.run(args, capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""


def _proc_files(ns: str) -> str:
    """The namespace's /proc/net files, from one `cat` inside it (/proc/net follows the
    reading process's netns); a second try if the first printed nothing."""
    for _ in range(2):
        raw = _run(["ip", "netns", "exec", ns, "cat", *PROC_FILES])
        if "Tcp:" in raw:
            return raw
    return ""


def read_namespace(ns: str) -> dict[str, Any]:
    """The counters of one namespace: SNMP tables, interface drops, qdisc drops.

    ``read`` is False when the counters could not be read: zeros then mean nothing."""
    raw = _proc_files(ns)
    snmp_part, _, dev_part = raw.partition("Inter-|")
    tables = parse_snmp(snmp_part)
    qdiscs = []
    try:
        shown = json.loads(_run(["tc", "-n", ns, "-s", "-j", "qdisc", "show"]) or "[]")
    except ValueError:
        shown = []
    for q in shown:
        qdiscs.append(
            {
                "dev": q.get("dev"),
                "kind": q.get("kind"),
                "handle": q.get("handle"),
                "drops": int(q.get("drops", 0)),
                "overlimits": int(q.get("overlimits", 0)),
                "requeues": int(q.get("requeues", 0)),
            }
        )
    return {
        "read": bool(raw),
        "tcp": {k: tables.get("Tcp", {}).get(k, 0) for k in TCP}
        | {k: tables.get("TcpExt", {}).get(k, 0) for k in TCP_EXT},
        "ip": {k: tables.get("Ip", {}).get(k, 0) for k in IP},
        "interfaces": parse_dev(dev_part),
        "qdiscs": qdiscs,
    }


def _sum(dicts: Iterable[dict[str, int]]) -> dict[str, int]:
    total: dict[str, int] = {}
    for d in dicts:
        for k, v in d.items():
            total[k] = total.get(k, 0) + v
    return total


def summarize(
    nodes: dict[int, dict[str, Any]],
    core: dict[str, Any],
    delay_stage: dict[str, Any] | None,
    softnet_delta: dict[str, int],
) -> dict[str, Any]:
    """``run.testbed.losses``: totals per place, and the nodes that retransmitted."""
    tcp = _sum(n["tcp"] for n in nodes.values())
    by_node = {
        str(i): {k: v for k, v in n["tcp"].items() if v and k not in ("OutSegs", "InSegs")}
        for i, n in nodes.items()
        if n["tcp"].get("RetransSegs") or n["tcp"].get("TCPTimeouts")
    }
    node_qdisc = sum(q["drops"] for n in nodes.values() for q in n["qdiscs"])
    core_qdisc = sum(q["drops"] for q in core["qdiscs"])
    iface_nodes = sum(d["rx_dropped"] + d["tx_dropped"]
                      for n in nodes.values() for d in n["interfaces"].values())  # fmt: skip
    iface_core = sum(d["rx_dropped"] + d["tx_dropped"] for d in core["interfaces"].values())
    stage = delay_stage or {}
    nfqueue = {
        k: int(stage.get(k, 0))
        for k in ("queue_dropped", "user_dropped", "verdict_errors", "held_in_kernel")
    }
    return {
        "tcp": {k: v for k, v in tcp.items()},
        "tcp_by_node": by_node,
        "qdisc_drops": {"nodes": node_qdisc, "core": core_qdisc},
        "interface_drops": {"nodes": iface_nodes, "core": iface_core},
        "ip_discards": {
            "nodes": _sum(n["ip"] for n in nodes.values()).get("InDiscards", 0)
            + _sum(n["ip"] for n in nodes.values()).get("OutDiscards", 0),
            "core": core["ip"].get("InDiscards", 0) + core["ip"].get("OutDiscards", 0),
        },
        "nfqueue": nfqueue,
        "softnet": softnet_delta,
        "core_forwarded": core["ip"].get("ForwDatagrams", 0),
        # Namespaces whose counters could not be read (their zeros above mean nothing).
        "unread": [str(i) for i, n in nodes.items() if not n.get("read", True)]
        + ([] if core.get("read", True) else ["core"]),
    }


def drop_places(losses: dict[str, Any]) -> dict[str, int]:
    """Every place that counted a dropped packet, with its count (zero ones left out)."""
    places = {
        "qdisc (node uplinks)": losses["qdisc_drops"]["nodes"],
        "qdisc (core, downlinks)": losses["qdisc_drops"]["core"],
        "interfaces (nodes)": losses["interface_drops"]["nodes"],
        "interfaces (core)": losses["interface_drops"]["core"],
        "IP discards (nodes)": losses["ip_discards"]["nodes"],
        "IP discards (core)": losses["ip_discards"]["core"],
        "delay stage queue full": losses["nfqueue"]["queue_dropped"],
        "delay stage socket full": losses["nfqueue"]["user_dropped"],
        "delay stage verdicts failed": losses["nfqueue"]["verdict_errors"],
        "delay stage never released": losses["nfqueue"]["held_in_kernel"],
        "CPU backlog (host-wide)": losses["softnet"]["dropped"],
        "TCP receivers (queue/ofo/prune)": sum(losses["tcp"].get(k, 0) for k in RECEIVER_DROPS),
    }
    return {name: count for name, count in places.items() if count}


def unexplained_retransmissions(sender: dict[str, int], receiver: dict[str, int]) -> int:
    """Retransmitted segments that were neither tail loss probes nor reported by their
    receiver as duplicates: the ones that may have repaired a loss.

    A probe follows a late ACK, lost or not (tcp_output.c: tcp_schedule_loss_probe). A
    host that stalls (busy, or a virtual machine descheduled) even times out on segments
    that were only late; their copies then arrive twice and the receiver says so with a
    D-SACK (RFC 2883; tcp_input.c: tcp_dsack_set), counted per segment by the sender
    (``TCPDSACKRecvSegs``) and per D-SACK by the receiver (``TCPDSACKOldSent``). Summed
    counters of all nodes serve as both sides."""
    duplicates = max(sender.get("TCPDSACKRecvSegs", 0), receiver.get("TCPDSACKOldSent", 0))
    probes = sender.get("TCPLossProbes", 0)
    return max(0, sender.get("RetransSegs", 0) - probes - duplicates)


def loss_warning(losses: dict[str, Any], configured_loss: float) -> str | None:
    """A sentence when a run without configured loss retransmitted, saying where it lost."""
    if configured_loss > 0:
        return None
    tcp = losses["tcp"]
    retrans, timeouts, probes = (tcp.get(k, 0) for k in
                                 ("RetransSegs", "TCPTimeouts", "TCPLossProbes"))  # fmt: skip
    places = drop_places(losses)
    if not places and unexplained_retransmissions(tcp, tcp) == 0:
        return None
    nodes = ", ".join(sorted(losses["tcp_by_node"], key=int)[:10]) or "none"
    where = (
        "; ".join(f"{name}: {count}" for name, count in places.items())
        if places
        else "no drop counter moved (qdiscs, interfaces, IP, delay stage, CPU backlog, "
        "TCP receivers), so these were retransmissions of late, not lost, segments "
        "(or of their ACKs)"
    )
    return (
        f"the run sets no loss but TCP retransmitted {retrans} segments ({timeouts} "
        f"retransmission timeouts, {probes} tail loss probes; senders: nodes {nodes}); "
        f"drops: {where} (run.testbed.losses)"
    )
