"""bench/tcp_counters.py reads the TCP counters of /proc/net/snmp and /proc/net/netstat:
checked on hand-written files in the kernel's format (a line of names, then a line of
values, per table) whose wanted values are known."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from tcp_counters import NETSTAT, SNMP, counters

SNMP_TEXT = """Ip: Forwarding DefaultTTL InReceives
Ip: 2 64 1000
Tcp: RtoAlgorithm RtoMin ActiveOpens InSegs OutSegs RetransSegs
Tcp: 1 200 7 51718 51744 3
Udp: InDatagrams OutDatagrams
Udp: 5 6
"""
NETSTAT_TEXT = """TcpExt: SyncookiesSent DelayedACKs TCPAutoCorking TCPOrigDataSent
TcpExt: 0 1751 2 39705
IpExt: InNoRoutes InOctets
IpExt: 0 12345
"""


def test_the_wanted_fields_are_read_by_name_from_their_table() -> None:
    assert counters(SNMP_TEXT, SNMP) == {"OutSegs": 51744}
    assert counters(NETSTAT_TEXT, NETSTAT) == {
        "TCPOrigDataSent": 39705,
        "TCPAutoCorking": 2,
        "DelayedACKs": 1751,
    }


def test_a_field_the_table_does_not_have_is_left_out() -> None:
    # "InOctets" is counted in IpExt only (and an older kernel may lack a TcpExt field).
    assert counters(NETSTAT_TEXT, {"TcpExt": ("InOctets",)}) == {}
