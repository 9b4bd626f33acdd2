"""network.downlink_sharing: how a limited downlink serves the connections arriving on it.

Two 1 MB copies published together reach a hub through its 10 Mbit downlink
(scenarios/crosscheck/downlink-2x1m.toml). Each copy alone needs its bits over 10 Mbit,
800 ms of the link. If the link reads whole RPCs one after the other, the first copy is
done after at most one copy's time, the link's 20 ms and TCP's slow start; if the two
connections share it, the first copy is done only after well more than one copy's worth
has passed. The kernel's packet FIFO under HTB interleaves the two TCP flows' packets,
so the real nodes' first copy comes late, as "fair" and "packets" (that FIFO, which the
windows' pieces cross one by one) have it; simnet's links are packet queues too
(testbed/simnet/lean.go), so its scenarios run "fair".
"""

from __future__ import annotations

import shutil
import statistics
import sys
from pathlib import Path

import pytest

from gossiplab.backends.model import engine_config
from gossiplab.backends.simnet.support import notes
from gossiplab.scenario import load_scenario
from gossiplab.topology import build_topology
from gossiplab.workload import build_schedule, end_time_ns
from testbed_marks import REAL_NODES

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from downlink_sharing import SCENARIO as TWO_COPIES
from downlink_sharing import one_run, relay_times, run_folder

REPO = Path(__file__).resolve().parents[1]
SIMNET_SCENARIOS = sorted((REPO / "scenarios/simnet").glob("*.toml"))
COPY_MS = 1_000_000 * 8 / 10_000_000 * 1000  # one copy's payload through 10 Mbit
LINK_MS = 20
# A relay with the hub's downlink to itself, and one held up behind the next copies.
ALONE_MS = 1.25 * (COPY_MS + LINK_MS)
STALLED_MS = 1.5 * (COPY_MS + LINK_MS)


def _two_copies(tmp: Path, backend: str, sharing: str) -> list[list[float]]:
    """Per batch, the hub's two receipts (ms after the publication), in order."""
    seed = load_scenario(TWO_COPIES).seed
    return one_run(backend, seed, tmp / sharing, sharing)


def _shared(batches: list[list[float]]) -> bool:
    # The first copy done after one and a half copies' time: the link carried the other
    # copy meanwhile. The median over batches: a real run's batches scatter (on simnet
    # one batch's first copy came at 1.18 s, the others' at 1.31-1.47 s).
    return statistics.median(b[0] for b in batches) > 1.5 * COPY_MS + LINK_MS


def test_the_model_reads_whole_rpcs_in_turn_or_shares_the_link(tmp_path: Path) -> None:
    fifo = _two_copies(tmp_path, "model", "fifo")
    fair = _two_copies(tmp_path, "model", "fair")
    packets = _two_copies(tmp_path, "model", "packets")
    assert len(fifo) == len(fair) == len(packets) == 4
    assert not _shared(fifo), fifo
    assert _shared(fair), fair
    # Shared, the second is done once both copies crossed the link. (Whole RPCs in turn
    # take an idle link to have read the first while it arrived, whatever its sender's
    # speed, so there the two cross in less.)
    assert all(b[1] >= 2 * COPY_MS + LINK_MS for b in fair), fair
    # One packet FIFO: the two connections' windows interleave their pieces in it.
    assert _shared(packets), packets
    assert all(b[1] >= 2 * COPY_MS + LINK_MS for b in packets), packets


def _assert_relays_stall(relays: list[list[float]]) -> None:
    # Nothing follows the last pair: about a copy's time and the link's (slow start's
    # first rounds add up to three round trips of 40 ms before the window holds the
    # path's 50 kB), where a relay behind the next copies takes half as long again.
    followed = [t for batch in relays[:-1] for t in batch]
    assert min(relays[-1]) <= ALONE_MS, relays
    assert max(followed) >= STALLED_MS, relays


def test_a_relay_stalls_behind_the_next_copies_only_with_packet_downlinks(tmp_path: Path) -> None:
    # The hub relays each copy over the other leaf's 10 Mbit downlink while the next pair's
    # copies fill its own; the relay's acknowledgements come back through that queue.
    seed = load_scenario(TWO_COPIES).seed
    _assert_relays_stall(relay_times(run_folder("model", seed, tmp_path / "packets", "packets")))
    # Whole RPCs have no acknowledgements to hold up: every relay takes the same time.
    fair = relay_times(run_folder("model", seed, tmp_path / "fair", "fair"))
    assert len({round(t, 3) for batch in fair for t in batch}) == 1, fair


@REAL_NODES[0]
@REAL_NODES[1]
def test_the_kernel_s_fifo_interleaves_two_connections_on_a_downlink(tmp_path: Path) -> None:
    batches = _two_copies(tmp_path, "testbed", "fair")
    assert len(batches) == 4
    assert _shared(batches), batches
    assert all(b[1] >= 2 * COPY_MS + LINK_MS for b in batches), batches


@REAL_NODES[0]
@REAL_NODES[1]
def test_the_real_hub_s_relays_stall_behind_the_next_copies(tmp_path: Path) -> None:
    # The same bounds as the model's: the relay's acknowledgements wait in the hub's packet
    # FIFO (HTB with pfifo) behind the next pair's copies.
    _assert_relays_stall(
        relay_times(run_folder("testbed", load_scenario(TWO_COPIES).seed, tmp_path, None))
    )


@pytest.mark.skipif(shutil.which("go") is None, reason="the simnet runner needs Go")
def test_simnet_s_links_interleave_two_connections_on_a_downlink(tmp_path: Path) -> None:
    batches = _two_copies(tmp_path, "simnet", "fair")
    assert len(batches) == 4
    assert _shared(batches), batches
    assert all(b[1] >= 2 * COPY_MS + LINK_MS for b in batches), batches


def test_the_engine_gets_the_scenario_s_discipline() -> None:
    s = load_scenario(TWO_COPIES)
    for sharing in ("fifo", "fair", "packets"):
        net = s.network.model_copy(update={"downlink_sharing": sharing})
        scenario = s.model_copy(update={"backend": "model", "network": net})
        nodes = build_topology(scenario).nodes
        schedule = build_schedule(scenario, nodes)
        config = engine_config(scenario, nodes, end_time_ns(scenario, schedule), schedule)
        assert config["network"]["downlink_sharing"] == sharing


@pytest.mark.parametrize("path", SIMNET_SCENARIOS, ids=lambda p: p.name)
def test_simnet_scenarios_share_limited_downlinks_between_connections(path: Path) -> None:
    s = load_scenario(path)
    if s.network.has_download_limit():
        assert s.network.downlink_sharing == "fair"
        assert not any("downlink_sharing" in note for note in notes(s))
        fifo = s.model_copy(
            update={"network": s.network.model_copy(update={"downlink_sharing": "fifo"})}
        )
        assert any("downlink_sharing" in note for note in notes(fifo))
