"""Real v2.0 fork nodes (testbed/forknode) on the testbed: a hub publishing to three
leaves, where the fork's code fixes every count. Runs only where the fork's node is built
and named by $GOSSIPLAB_FORK_NODE (testbed/forknode/README.md), never in CI."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from gossiplab.runner import run
from gossiplab.scenario import parse_scenario
from gossiplab.scenario.rules import FORK_NODE_ENV
from testbed_marks import REAL_NODES

pytestmark = [
    *REAL_NODES,
    pytest.mark.skipif(not os.environ.get(FORK_NODE_ENV), reason=f"needs {FORK_NODE_ENV}"),
]

LEAVES = 3
MESSAGES = 4


def hub_run(tmp: Path, d_announce: int) -> dict[str, Any]:
    """Hub 0 meshed with leaves 1-3 (D = 3 = its degree); each leaf's mesh is the hub.
    2 KiB messages: above the fork's 1 KiB IDONTWANT threshold."""
    (tmp / "star.txt").write_text("".join(f"{leaf} 0\n" for leaf in range(1, LEAVES + 1)))
    s = parse_scenario(
        {
            "name": f"fork-hub-{d_announce}",
            "seed": 5,
            "backend": "testbed",
            "topology": {"kind": "edges", "file": "star.txt"},
            "network": {"latency": "5ms"},
            "protocol": {
                "version": "2.0",
                **{"D": 3, "D_lo": 1, "D_hi": 4, "D_score": 1, "D_out": 0},
                "D_announce": d_announce,
                "signing": "strict-no-sign",
                "message_id": "ethereum",
            },
            "workload": {
                **{"messages": MESSAGES, "rate": "4/s", "size": "2KiB", "publishers": [0]},
                **{"warmup": "4s", "cooldown": "2s"},
            },
        },
        base_dir=tmp,
    )
    return run(s, tmp / s.name).summary


def test_eager_publish_and_idontwant_follow_the_fork(tmp_path: Path) -> None:
    # D_announce 0: Publish sends every leaf the message. No IDONTWANT on publish (the
    # fork's Publish has none); each leaf sends one to its only mesh peer, the hub it
    # got the message from (PreValidation: the sender too). go v0.17.0 does the opposite
    # on both counts (3 per message from the hub, none from the leaves).
    summary = hub_run(tmp_path, 0)
    assert summary["delivery"]["ratio"] == 1
    sent = {k: v["msgs_sent"] for k, v in summary["traffic"]["by_kind"].items()}
    assert sent["payload"] == LEAVES * MESSAGES
    assert summary["control"]["idontwant"] == LEAVES * MESSAGES
    assert summary["control"]["iannounce"] == summary["control"]["ineed"] == 0
    assert summary["duplicates"]["per_node_per_message"]["mean"] == 0


def test_lazy_push_covers_the_publishers_own_messages(tmp_path: Path) -> None:
    # D_announce = D: the coin (rand.Intn(D) < D_announce) always says IANNOUNCE, for the
    # publisher's own messages too (Publish has no own-message case): each leaf is
    # announced each message, asks the hub with INEED, and gets it from handleINeed.
    summary = hub_run(tmp_path, 3)
    assert summary["delivery"]["ratio"] == 1
    control = summary["control"]
    assert control["iannounce"] == control["ineed"] == LEAVES * MESSAGES
    assert summary["traffic"]["by_kind"]["payload"]["msgs_sent"] == LEAVES * MESSAGES
    assert summary["duplicates"]["per_node_per_message"]["mean"] == 0
