"""Several runs of the real backend in one crosscheck (`crosscheck --runs N`), and of the
model with several protocol seeds (`crosscheck --model-seeds N`).

Real nodes sharing a host's cores do not give the same latency twice: near saturation a
little more or less of the machine's speed decides how long their queues grow, and one
run's p99 can be twice the next one's. One run then cannot tell the model's deviation
from the real backend's own. With several runs the crosscheck compares the model with
their median, metric by metric, shows their range, and judges each target also by the
runs' own spread: each run's largest distance from their median, measured as the
target measures the model's.

The model has a spread of its own: gossipsub's random choices (mesh members, gossip
targets, the event loop's select) and the CPU costs' draws follow the scenario's seed.
With several seeds, on the scenario's graph and publication schedule (their own seeds
kept), the model's value is the median of its runs too, with their range beside it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from gossiplab.backends.testbed.crosscheck_tables import cell
from gossiplab.errors import GossiplabError
from gossiplab.scenario.base import MAX_SEED
from gossiplab.workload import schedule_seed

if TYPE_CHECKING:
    from gossiplab.backends.testbed.crosscheck import Row
    from gossiplab.scenario import Scenario


def folder_names(partner: str, runs: int) -> list[str]:
    """Each real run's folder in the crosscheck's: `testbed/`, then `testbed-2/`, ..."""
    return [partner if k == 1 else f"{partner}-{k}" for k in range(1, runs + 1)]


def seeded(s: Scenario, count: int) -> list[Scenario]:
    """The model's runs of `s` with `count` protocol seeds: the scenario's seed, the next
    and so on, each on the scenario's graph and schedule (`[topology]` already holds its
    resolved seed; `[workload] seed` is pinned to the schedule's)."""
    if count < 1:
        raise GossiplabError(f"--model-seeds {count}: run the model at least once")
    if s.seed + count - 1 > MAX_SEED:
        raise GossiplabError(
            f"--model-seeds {count}: seeds from {s.seed} on pass {MAX_SEED}; lower the "
            "scenario's seed"
        )
    pinned = s.workload.model_copy(update={"seed": schedule_seed(s)})
    return [s.model_copy(update={"seed": s.seed + k, "workload": pinned}) for k in range(count)]


def with_model_runs(rows: Sequence[Row], model_tables: Sequence[Sequence[Row]]) -> list[Row]:
    """`rows` with the model's value the median of its seeds' (one table per seed, against
    the same real run), each seed's value kept."""
    by_seed = [{r.metric: r.model for r in table} for table in model_tables]
    found = []
    for row in rows:
        values = tuple(seed.get(row.metric) for seed in by_seed)
        found.append(replace(row, model=median(values), model_runs=values))
    return found


def median(values: Sequence[float | None]) -> float | None:
    """The median of the known values (the mean of the middle two for an even count)."""
    known = sorted(v for v in values if v is not None)
    if not known:
        return None
    middle = len(known) // 2
    return known[middle] if len(known) % 2 else (known[middle - 1] + known[middle]) / 2


def merged(tables: Sequence[Sequence[Row]]) -> list[Row]:
    """One table from the model's rows against each real run: per metric the runs'
    median, each run's value kept (None where a run has no such row); the metrics in
    the first table's order, then those only later runs have."""
    by_run = [{r.metric: r for r in table} for table in tables]
    order: list[str] = []
    for rows in by_run:
        order += [metric for metric in rows if metric not in order]
    found = []
    for metric in order:
        first = next(rows[metric] for rows in by_run if metric in rows)
        values = tuple(rows[metric].partner if metric in rows else None for rows in by_run)
        found.append(replace(first, partner=median(values), partner_runs=values))
    return found


def last_delivery_hops(summaries: Sequence[dict[str, Any]]) -> frozenset[int]:
    """The last delivery hops any of the summaries saw, so every run's table lists them."""
    return frozenset(
        int(hop)
        for summary in summaries
        for hop in (summary.get("last_delivery_hop", {}).get("histogram") or {})
    )


def most_common(reasons: Sequence[str]) -> tuple[str, int]:
    """The reason most runs give, and how many give it; a tie goes to the earliest run."""
    counts = Counter(reasons)
    best = max(counts.values())
    reason = next(r for r in reasons if counts[r] == best)
    return reason, best


def spread(values: Sequence[float | None], relative: bool) -> float | None:
    """The runs' own spread: the largest distance of a run from their median, relative
    to it or in absolute points. None with fewer than two known values."""
    known = [v for v in values if v is not None]
    centre = median(known)
    if len(known) < 2 or centre is None:
        return None
    far = max(abs(v - centre) for v in known)
    if not relative:
        return far
    if centre == 0:
        return 0.0 if far == 0 else None
    return far / abs(centre)


def inside(model: float | None, values: Sequence[float | None]) -> bool | None:
    """True if the model's value lies within the runs' range; None with fewer than two."""
    known = [v for v in values if v is not None]
    if model is None or len(known) < 2:
        return None
    return min(known) <= model <= max(known)


# The per-run table: the machine's speed beside what a run's nodes used and got.
RUN_COLUMNS = (
    ("machine speed: ns per memory load (p50)", "ns per memory load", 0),
    ("node CPU while publishing", "node CPU (cores)", 3),
    ("per-receipt latency p50", "latency p50 (ms)", 1),
    ("per-receipt latency p99", "latency p99 (ms)", 1),
    ("drops", "drops", 0),
)


RUNS_INTRO = "The real runs one by one (the machine's speed: higher is slower):"


def runs_table(rows: Sequence[Row], folders: Sequence[str]) -> tuple[list[str], list[list[str]]]:
    """With several real runs, one line per run (its folder): its machine speed, node CPU,
    latency and drops, so a run on a slower machine can be told from the others; no
    lines with one run."""
    by_metric = {r.metric: r.partner_runs for r in rows}
    columns = [(name, title, digits) for name, title, digits in RUN_COLUMNS if name in by_metric]
    headers = ["run", *(title for _, title, _ in columns)]
    if len(folders) < 2:
        return headers, []
    lines = [
        [folder, *(cell(by_metric[name][k], digits) for name, _, digits in columns)]
        for k, folder in enumerate(folders)
    ]
    return headers, lines
