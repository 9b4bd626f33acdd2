"""Determinism guard: the event tables of six scenarios, pinned by hash.

A change that alters what the model does (event order, a protocol rule, a random draw)
changes these hashes. That is allowed, but it must be a conscious change: update the
hashes in the same commit and say in its message why behaviour changed.

The hash covers every column's values (names, dtypes and raw little-endian bytes), not
the Parquet files, so upgrading polars or pyarrow does not move it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from gossiplab.analysis.tables import RunTables
from gossiplab.backends.model import run_model
from gossiplab.scenario import parse_scenario
from gossiplab.topology import build_topology
from gossiplab.workload import build_schedule, end_time_ns

# The CPU costs the two CPU scenarios charge, written out (the measured presets may
# change; these do not).
WRITTEN_OUT_COSTS = {
    "per_rpc_received": "48us",
    "per_kb_received": "6us",
    "per_rpc_sent": "48us",
    "per_kb_sent": "6us",
    "per_copy": "84us",
    "per_publish": "29us",
}

SCENARIOS: dict[str, dict[str, Any]] = {
    "floodsub": {
        "seed": 11,
        "topology": {"kind": "barabasi-albert", "nodes": 30, "m": 2},
        "network": {"latency": {"distribution": "uniform", "min": "5ms", "max": "60ms"}},
        "protocol": {"name": "floodsub"},
        "workload": {"messages": 40, "rate": "20/s"},
    },
    "gossipsub-1.1": {
        "seed": 12,
        "topology": {"kind": "random-regular", "nodes": 40, "degree": 8},
        "network": {"latency": "30ms", "upload": "20Mbit", "cpu_per_message": "300us"},
        "protocol": {"version": "1.1", "score": {"enabled": True}},
        "workload": {"messages": 60, "rate": "30/s", "size": "4KiB"},
    },
    "gossipsub-2.0-loss": {
        "seed": 13,
        "topology": {"kind": "connect-random", "nodes": 40, "k": 5},
        "network": {"latency": "25ms", "loss": 0.01, "jitter": "5ms"},
        "protocol": {"version": "2.0", "D_announce": 3},
        "workload": {"messages": 50, "rate": "25/s", "size": "2KiB", "batch": 2},
    },
    # CPU costs (given, so that a new calibration leaves the hash alone) on a core per
    # node: reading and writing RPCs, validation and signing
    # each take time (the Decoded, Encoded and Signed events; links of no latency, as
    # in the demo, where much of that work falls on the same instants).
    "cpu-own-cores": {
        "seed": 14,
        "topology": {"kind": "barabasi-albert", "nodes": 40, "m": 4},
        "network": {"latency": "0ms", "cpu_per_message": "200us"},
        "protocol": {"version": "1.0", "D": 6, "D_lo": 4},
        "workload": {"messages": 300, "rate": "200/s", "size": "1000B"},
        "cpu": WRITTEN_OUT_COSTS,
    },
    # CPU costs on shared hosts, run in time slices, with lognormal costs; overloaded
    # (20 nodes × 200 msg/s on 2 cores), so that slices expire and queues overflow.
    "cpu-shared-hosts": {
        "seed": 15,
        "topology": {"kind": "random-regular", "nodes": 40, "degree": 6},
        "network": {"latency": "10ms", "upload": "50Mbit"},
        "workload": {"messages": 150, "rate": "200/s", "size": "2KiB"},
        "cpu": {
            **WRITTEN_OUT_COSTS,
            "nodes_per_host": 20,
            "cores": 2,
            "sigma": 1.0,
        },
    },
    # pubsub's event loop on one shared core (costs written out, each on its goroutine,
    # with costs per turn): the readers' channel, the stream windows, yamux's sendLoop
    # and recvLoop, Go's run queue and netpoller, its sysmon thread and its rounds' CPU;
    # overloaded (20 nodes × 600 msg/s).
    "cpu-event-loop": {
        "seed": 16,
        "topology": {"kind": "random-regular", "nodes": 20, "degree": 6},
        "network": {"latency": "10ms"},
        "workload": {"messages": 200, "rate": "600/s", "size": "1000B"},
        "cpu": {
            "nodes_per_host": 20,
            "cores": 1,
            "time_slice": "1.5ms",
            "event_loop": True,
            "sysmon": True,
            "per_sysmon_round": "11us",
            "per_rpc_received": "2us",
            "per_kb_received": "1us",
            "per_copy": "45us",
            "per_rpc_sent": "4us",
            "per_kb_sent": "4us",
            "per_publish": "90us",
            "per_node_wakeup": "11us",
            "per_rpc_loop": "4us",
            "per_publish_loop": "4us",
            "per_forward_loop": "1us",
            "per_reader_turn": "1us",
            "per_writer_turn": "1us",
            "per_validator_turn": "29us",
            "per_loop_turn": "4us",
            "per_send_loop_turn": "6us",
            "per_recv_loop_turn": "9us",
        },
    },
}

GOLDEN = {
    "floodsub": "99655374e1351eea79e3e2bde2b03e4d7b1966e4f91f998aed4784aefbc43f8a",
    "gossipsub-1.1": "41d5be567d2409fb175f1b3c2faae50174fe4b3996ee5a5750da54193a78ab81",
    "gossipsub-2.0-loss": "95a66d9536f5600068dc1037e76d87a04bf5ec27bebf4675c9101287027c4ea0",
    "cpu-own-cores": "7c70ab86613c4bf9f7fcb313d10e3c6814c477280250091f78fb5e1670c5e09a",
    "cpu-shared-hosts": "112dc72ef96bf5b61605f012802aa2c7ee6683dedebdbba0d7c5b4f2f82cdce7",
    "cpu-event-loop": "79f8d7189914fd7978d75a00e4edc6a514173391e562f6e07c076f96d0cb1db5",
}


# The tables the engine produces (other tables describe the setup, not what happened).
EVENT_TABLES = ("publishes", "deliveries", "traffic", "drops")


def table_digest(tables: RunTables) -> str:
    digest = hashlib.sha256()
    for name in EVENT_TABLES:
        frame = getattr(tables, name)
        digest.update(name.encode())
        for column in frame.columns:
            series = frame[column]
            digest.update(f"{column}:{series.dtype}".encode())
            if series.dtype == pl.String:
                digest.update("\0".join(series.to_list()).encode())
            else:
                values = series.to_numpy()
                digest.update(
                    np.ascontiguousarray(values).astype(values.dtype.newbyteorder("<")).tobytes()
                )
    return digest.hexdigest()


def run_tables(name: str, tmp_path: Path) -> RunTables:
    s = parse_scenario(SCENARIOS[name], base_dir=tmp_path)
    topology = build_topology(s)
    schedule = build_schedule(s, topology.nodes)
    return run_model(s, topology, schedule, end_time_ns(s, schedule)).tables


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_event_tables_match_their_golden_hash(name: str, tmp_path: Path) -> None:
    assert table_digest(run_tables(name, tmp_path)) == GOLDEN[name]
