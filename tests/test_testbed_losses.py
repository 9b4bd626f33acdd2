"""Where a testbed run lost packets (losses.py): the kernel's counters, read per namespace.

The parsers are checked on hand-written copies of the kernel's files. The real ones run
in network namespaces (root), where the expectation is known beforehand: a bulk TCP
transfer through a FIFO of 5 packets must overflow it and retransmit; the same transfer
through the testbed's own deep FIFO must not; a gossipsub run on links that drop 10 % of
packets retransmits and a clean one at low load does not; a bulk transfer on cubic ends
slow start by HyStart without a loss, and the same on reno does not.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from gossiplab.backends.testbed import orchestrate
from gossiplab.backends.testbed.losses import (
    drop_places,
    loss_warning,
    parse_dev,
    parse_snmp,
    parse_softnet,
    read_namespace,
    summarize,
    unexplained_retransmissions,
)
from gossiplab.backends.testbed.netns import (
    build_network,
    core_iface,
    core_ns,
    delete_namespaces,
    node_ip,
    node_ns,
    run_prefix,
)
from gossiplab.backends.testbed.orchestrate import delay_scheduling
from gossiplab.runner import run
from gossiplab.scenario import parse_scenario
from test_testbed_links import CLIENT, in_ns, server
from testbed_marks import REAL_NODES

SNMP = """Ip: Forwarding DefaultTTL InReceives InDiscards OutDiscards ForwDatagrams
Ip: 1 64 100 3 4 90
Tcp: RtoAlgorithm RtoMin InSegs OutSegs RetransSegs InErrs
Tcp: 1 200 1000 2000 17 0
TcpExt: SyncookiesSent TCPTimeouts TCPLossProbes TCPOFODrop
TcpExt: 0 2 5 1
"""
DEV = (
    "Inter-|   Receive |  Transmit\n"
    " face |bytes packets errs drop fifo frame compressed multicast|bytes packets errs drop ...\n"
    "  eth0: 1000 10 0 7 0 0 0 0 2000 20 0 9 0 0 0 0\n"
)
SOFTNET = "0000000a 00000002 00000010 0\n00000005 00000001 00000001 0\n"


def test_snmp_tables_pair_names_with_values() -> None:
    tables = parse_snmp(SNMP)
    assert tables["Tcp"]["RetransSegs"] == 17
    assert tables["TcpExt"]["TCPTimeouts"] == 2 and tables["TcpExt"]["TCPOFODrop"] == 1
    assert tables["Ip"]["InDiscards"] == 3 and tables["Ip"]["ForwDatagrams"] == 90


def test_interface_drops_are_the_fourth_and_twelfth_columns() -> None:
    assert parse_dev(DEV) == {"eth0": {"rx_dropped": 7, "tx_dropped": 9}}


def test_softnet_columns_are_hexadecimal_and_summed_over_cpus() -> None:
    assert parse_softnet(SOFTNET) == {"dropped": 3, "time_squeeze": 17}


def _counters(tcp: dict[str, int], qdisc_drops: int = 0) -> dict[str, Any]:
    return {
        "tcp": tcp,
        "ip": {"InDiscards": 0, "OutDiscards": 0},
        "interfaces": {},
        "qdiscs": [{"drops": qdisc_drops}],
    }


def test_a_run_without_loss_that_retransmitted_is_reported_with_its_place() -> None:
    nodes = {0: _counters({"RetransSegs": 3, "TCPTimeouts": 1}, qdisc_drops=2), 1: _counters({})}
    core = _counters({})
    losses = summarize(nodes, core, {"user_dropped": 4}, {"dropped": 0})
    assert losses["tcp_by_node"] == {"0": {"RetransSegs": 3, "TCPTimeouts": 1}}
    assert drop_places(losses) == {"qdisc (node uplinks)": 2, "delay stage socket full": 4}
    text = loss_warning(losses, configured_loss=0.0)
    assert text is not None and "3 segments" in text and "1 retransmission timeouts" in text
    assert "qdisc (node uplinks): 2" in text and "nodes 0" in text
    # With loss configured, retransmissions are expected: no warning.
    assert loss_warning(losses, configured_loss=0.01) is None


def test_retransmissions_without_any_drop_say_so() -> None:
    losses = summarize({0: _counters({"RetransSegs": 1})}, _counters({}), None, {"dropped": 0})
    text = loss_warning(losses, 0.0)
    assert text is not None and "no drop counter moved" in text


def test_tail_loss_probes_alone_are_no_loss() -> None:
    tcp = {"RetransSegs": 4, "TCPLossProbes": 4}
    losses = summarize({0: _counters(tcp)}, _counters({}), {}, {"dropped": 0})
    assert loss_warning(losses, 0.0) is None
    tcp = {"RetransSegs": 5, "TCPLossProbes": 4}
    losses = summarize({0: _counters(tcp)}, _counters({}), {}, {"dropped": 0})
    assert loss_warning(losses, 0.0) is not None


def test_retransmissions_the_receiver_got_twice_are_no_loss() -> None:
    # A stalled host's timeout resent 3 segments that had arrived: the receiver D-SACKed
    # them (RFC 2883), so nothing was lost; a fourth resent segment nobody saw twice was.
    tcp = {"RetransSegs": 3, "TCPTimeouts": 1, "TCPDSACKRecvSegs": 3}
    losses = summarize({0: _counters(tcp)}, _counters({}), {}, {"dropped": 0})
    assert loss_warning(losses, 0.0) is None
    receiver_side = {"RetransSegs": 4, "TCPLossProbes": 1, "TCPDSACKOldSent": 2}
    assert unexplained_retransmissions(receiver_side, receiver_side) == 1
    losses = summarize({0: _counters(receiver_side)}, _counters({}), {}, {"dropped": 0})
    assert loss_warning(losses, 0.0) is not None


def test_a_clean_run_gets_no_warning() -> None:
    losses = summarize({0: _counters({"OutSegs": 500})}, _counters({}), {}, {"dropped": 0})
    assert loss_warning(losses, 0.0) is None


# ---- real namespaces ---------------------------------------------------------------------

RATE_BPS = 8_000_000
F = TypeVar("F")


@pytest.fixture
def pair() -> Iterator[str]:
    """Two node namespaces and the core; torn down afterwards."""
    prefix = run_prefix()
    try:
        yield prefix
    finally:
        delete_namespaces([core_ns(prefix), node_ns(prefix, 0), node_ns(prefix, 1)])


def _bulk(prefix: str) -> None:
    """4 s of bulk TCP from node 0 to node 1, until node 1 has read it all."""
    srv = server(prefix, "tcp")
    try:
        client = in_ns(node_ns(prefix, 0), CLIENT, "bulk", node_ip(1))
        client.communicate(timeout=30)
        assert srv.stdout is not None
        srv.stdout.readline()  # the server read to the end: every segment was delivered
    finally:
        srv.kill()


def real(test: F) -> F:
    """The marks of a test that needs root and namespaces (the parsers' tests do not)."""
    for mark in REAL_NODES:
        test = mark(test)
    return test


@real
def test_a_shallow_fifo_overflows_and_tcp_retransmits(pair: str) -> None:
    prefix = pair
    # The bottleneck is node 1's downlink, in the core: forwarded packets are not held
    # back by TCP small queues as the sender's own qdisc is (tcp_output.c:
    # tcp_small_queue_check), so a FIFO of five packets under 8 Mbit/s must overflow
    # under cubic, which sends as its window allows (tcp_cubic.c); BBR, some hosts'
    # default, paces at the bottleneck's rate (tcp_bbr.c:bbr_set_pacing_rate) and may
    # not overflow it at all.
    build_network(prefix, [0, 1], [0, 0], [0, RATE_BPS], "cubic")
    subprocess.run(
        ["tc", "-n", core_ns(prefix), "qdisc", "replace", "dev", core_iface(1), "parent",
         "1:1", "handle", "10:", "pfifo", "limit", "5"],
        check=True,
    )  # fmt: skip
    _bulk(prefix)
    sender, core = read_namespace(node_ns(prefix, 0)), read_namespace(core_ns(prefix))
    fifo = next(q for q in core["qdiscs"] if q["kind"] == "pfifo")
    assert fifo["drops"] > 0
    assert sender["read"] and sender["tcp"]["RetransSegs"] > 0, sender
    assert sender["tcp"]["OutSegs"] > 1000  # 4 s at 8 Mbit/s: about 2,700 segments


@real
def test_the_testbeds_deep_fifo_loses_nothing(pair: str) -> None:
    prefix = pair
    build_network(prefix, [0, 1], [0, 0], [0, RATE_BPS])
    _bulk(prefix)
    nodes = {i: read_namespace(node_ns(prefix, i)) for i in (0, 1)}
    losses = summarize(nodes, read_namespace(core_ns(prefix)), None, {"dropped": 0})
    assert not losses["unread"], losses
    # No queue, interface or receiver anywhere dropped a packet ...
    assert drop_places(losses) == {}, losses
    # ... so every retransmission was of a late segment, not a lost one.
    assert unexplained_retransmissions(nodes[0]["tcp"], nodes[1]["tcp"]) == 0, losses
    assert nodes[0]["tcp"]["OutSegs"] > 1000


def _scenario(tmp: Path, loss: float) -> Any:
    return parse_scenario(
        {
            "name": f"losses-{loss}",
            "seed": 7,
            "backend": "testbed",
            "topology": {"kind": "line", "nodes": 3},
            "network": {"latency": "10ms", "loss": loss},
            "workload": {
                "messages": 20,
                "rate": "10/s",
                "size": "16KB",
                "publishers": [0],
                "warmup": "3s",
                "cooldown": "2s",
            },
        },
        base_dir=tmp,
    )


@real
def test_a_lossy_run_records_retransmissions_and_a_clean_one_none(tmp_path: Path) -> None:
    lossy = run(_scenario(tmp_path, 0.1), tmp_path / "lossy").summary["run"]["testbed"]
    clean = run(_scenario(tmp_path, 0.0), tmp_path / "clean").summary["run"]["testbed"]
    # 20 messages of 16 KB both ways along the line, plus heartbeats: hundreds of
    # segments, of which about 10 % are dropped and must be sent again.
    assert lossy["losses"]["tcp"]["RetransSegs"] > 10
    assert lossy["losses"]["tcp_by_node"]
    assert unexplained_retransmissions(clean["losses"]["tcp"], clean["losses"]["tcp"]) == 0
    assert clean["losses"]["tcp"]["OutSegs"] > 100
    assert not drop_places(clean["losses"])
    assert not any("retransmitted" in w for w in clean["warnings"])
    assert clean["delay_stage_scheduling"] == "SCHED_FIFO 1"
    json.dumps(clean["losses"])  # summary.json holds it as plain JSON


@real
def test_the_delay_stage_runs_real_time() -> None:
    # What the kernel reports for a process started the way the stage is (chrt -p).
    name, prefix = delay_scheduling()
    shown = subprocess.run(
        [*prefix, "sh", "-c", "chrt -p $$"], capture_output=True, text=True, check=True
    ).stdout
    assert name == "SCHED_FIFO 1"
    assert "SCHED_FIFO" in shown and "priority: 1" in shown


def test_without_chrt_the_delay_stage_falls_back_to_nice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(orchestrate.shutil, "which", lambda name: None)
    assert delay_scheduling() == ("nice -15", ["nice", "-n", "-15"])


@real
@pytest.mark.parametrize("congestion", ["cubic", "reno"])
def test_hystart_ends_cubics_slow_start_without_a_loss(pair: str, congestion: str) -> None:
    prefix = pair
    # Behind the deep FIFO the round trip grows with the queue; cubic's HyStart ends slow
    # start once a round's minimum RTT exceeds the connection's by max(4 ms, RTT/8)
    # (tcp_cubic.c:hystart_update, HYSTART_DELAY) or on a long train of ACKs, with no
    # loss; reno has no HyStart (tcp_cong.c:tcp_reno_cong_avoid).
    build_network(prefix, [0, 1], [0, 0], [0, RATE_BPS], congestion)
    _bulk(prefix)
    tcp, receiver = (read_namespace(node_ns(prefix, i))["tcp"] for i in (0, 1))
    exits = tcp["TCPHystartDelayDetect"] + tcp["TCPHystartTrainDetect"]
    assert exits >= 1 if congestion == "cubic" else exits == 0, tcp
    assert unexplained_retransmissions(tcp, receiver) == 0, (tcp, receiver)
