"""Whether the testbed's TCP restarts slow start after idle as the model is told to.

Linux restarts an idle connection's window (`tcp_cwnd_restart`, RFC 2861) from
`tcp_slow_start_after_idle_check`, which returns early when the congestion control has a
`cong_control` hook of its own: BBR does, and handles idle periods itself, so its
connections send the next large message on a grown window. The model restarts when
`network.slow_start_after_idle` is true (the default, Linux's with cubic or reno). Where
messages exceed the initial window the two then differ by slow-start round trips per copy.
"""

from __future__ import annotations

from gossiplab.scenario import Scenario

MSS = 1460  # bytes per segment, the model's


def handles_idle_itself(congestion: str) -> bool:
    """True for congestion controls with their own `cong_control` (BBR)."""
    return congestion.startswith("bbr")


def idle_restart_warning(s: Scenario, congestion: str, largest_message: int) -> str | None:
    """A warning when the model restarts slow start after idle but the testbed's TCP does not."""
    if s.testbed.transport != "tcp" or not s.network.slow_start_after_idle:
        return None
    if not handles_idle_itself(congestion):
        return None
    if largest_message <= s.network.initial_window * MSS:
        return None  # one window holds every message: a restart costs nothing
    return (
        f"the nodes' TCP runs {congestion}, which does not restart slow start after an idle "
        "period, while network.slow_start_after_idle = true makes the model restart it; "
        f"messages of up to {largest_message:,} bytes pay slow-start round trips in the "
        'model only: set testbed.congestion_control = "cubic" (Linux\'s default) to compare '
        "like with like, or network.slow_start_after_idle = false to model this host"
    )
