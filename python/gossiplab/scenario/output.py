"""[output]: what the results folder holds."""

from __future__ import annotations

from typing import Literal

from gossiplab.scenario.base import Section


class OutputConfig(Section):
    receipts: bool = False  # also write receipts.parquet (every copy, duplicates included)
    mode: Literal["full", "aggregate"] = "full"
    # Also count traffic per message (message_traffic.parquet), so that the summary can give
    # the traffic of the measured messages alone (traffic_measured).
    message_traffic: bool = False
