"""bench/node_switches.py: each class of node's CPU, sysmon runs, blocks and preemptions
while it published, on hand-written runs: three nodes, node 0 the hub (it received the most
copies); published from 1 s to 3 s, samples at 0, 2 and 4 s."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gossiplab.analysis.tables import from_rows

sys.path.insert(0, str(Path(__file__).parents[1] / "bench"))
from node_switches import class_rows

S = 1_000_000_000


def _run(folder: Path, per_second: dict[int, tuple[float, int, int, int]], model: bool) -> None:
    """A run whose node n uses per_second[n] = (CPU s, sysmon runs, blocks, preemptions)
    each second."""
    folder.mkdir(parents=True)
    rows = []
    for node, (cpu, runs, blocks, preempted) in per_second.items():
        for t in (0, 2, 4):
            if model and node == 2:
                rows.append((node, t * S, cpu * t, None, None, None, None, None, None, None))
                continue
            counts = (blocks * t, preempted * t, None, runs * t)
            rows.append((node, t * S, cpu * t, None, None, None, *counts))
    from_rows("resources", rows).write_parquet(folder / "resources.parquet")
    publishes = [(i, 0, t * S, t * S, 100, 0, i, 0, 0) for i, t in enumerate((1, 3))]
    from_rows("publishes", publishes).write_parquet(folder / "publishes.parquet")
    copies = {0: 50, 1: 10, 2: 5}
    traffic = [(n, "payload", 0, 0, c, 0) for n, c in copies.items()]
    from_rows("traffic", traffic).write_parquet(folder / "traffic.parquet")


def test_the_hub_and_the_others_are_averaged_apart(tmp_path: Path) -> None:
    real = {0: (0.03, 130, 140, 60), 1: (0.02, 160, 200, 40), 2: (0.01, 150, 190, 20)}
    _run(tmp_path / "xc" / "testbed", real, model=False)
    # The model's node 2 has no counts (a column left null): it is left out of them.
    _run(
        tmp_path / "xc" / "model",
        {0: (0.03, 100, 108, 50), 1: (0.02, 150, 190, 30), 2: (0.01, 0, 0, 0)},
        True,
    )
    rows = {(cls, side): values for cls, side, values in class_rows(tmp_path / "xc", hubs=1)}
    assert rows[("hubs", "testbed")] == pytest.approx([0.03, 130, 140, 60, 10])
    assert rows[("others", "testbed")] == pytest.approx([0.015, 155, 195, 30, 40])
    assert rows[("hubs", "model")] == pytest.approx([0.03, 100, 108, 50, 8])
    assert rows[("others", "model")] == pytest.approx([0.015, 150, 190, 30, 40])
