"""Built-in geography and node classes: the numbers Shadow-based Ethereum studies use.

Data only, written in scenario units, so that a preset expands into exactly what a user
could have typed (and the resolved scenario shows it that way).
"""

from __future__ import annotations

from typing import Any

# ethshadow's built-in locations (github.com/ethereum/ethshadow, lib/src/config/ethshadow.rs,
# `add_default_builtins`): one-way latency in ms of the Shadow edge from the row's region to
# the column's. The matrix is slightly asymmetric as published (south_africa -> south_america
# 190 ms, 195 ms the other way) and is kept so.
_ETHEREUM_NAMES = (
    "australia",
    "east_asia",
    "europe",
    "na_west",
    "na_east",
    "south_america",
    "south_africa",
    "west_asia",
)
_ETHEREUM_LATENCY_MS = (
    (2, 110, 165, 110, 150, 190, 220, 180),  # australia
    (110, 4, 125, 100, 140, 175, 175, 110),  # east_asia
    (165, 125, 2, 110, 70, 140, 95, 60),  # europe
    (110, 100, 110, 2, 60, 100, 160, 150),  # na_west
    (150, 140, 70, 60, 2, 100, 130, 110),  # na_east
    (190, 175, 140, 100, 100, 7, 195, 145),  # south_america
    (220, 175, 95, 160, 130, 190, 7, 110),  # south_africa
    (180, 110, 60, 150, 110, 145, 110, 5),  # west_asia
)
# Node shares of the 1,000-node ethshadow IDONTWANT experiments
# (github.com/dknopik/ethshadow-experiments, idontwant/high_blob_current_gossipsub.yaml):
# europe 360, na_east + na_west 440, east_asia 80, australia + west_asia 100,
# south_africa + south_america 20 of 1000, each pair split evenly as ethshadow does.
_ETHEREUM_WEIGHTS = (0.05, 0.08, 0.36, 0.22, 0.22, 0.01, 0.01, 0.05)

# Node weights of the gossipsub v2.0 Shadow study (github.com/ppopth/pubsub-shadow,
# network_graph.py, `Location(...)`): australia 290, east_asia 1059, europe 5599, na_west 1240,
# na_east 2894, south_america 36, south_africa 47, west_asia 161, of 11,326; here rounded to
# millionths (they add up to 1.000001). Its latency matrix is ethshadow's, above.
_PUBSUB_SHADOW_WEIGHTS = (
    0.025605,
    0.093502,
    0.494349,
    0.109483,
    0.255518,
    0.003179,
    0.00415,
    0.014215,
)
_ETHEREUM_LATENCY = [[f"{ms}ms" for ms in row] for row in _ETHEREUM_LATENCY_MS]

REGION_PRESETS: dict[str, dict[str, Any]] = {
    "ethereum": {
        "names": list(_ETHEREUM_NAMES),
        "weights": list(_ETHEREUM_WEIGHTS),
        "latency": _ETHEREUM_LATENCY,
    },
    "pubsub-shadow": {
        "names": list(_ETHEREUM_NAMES),
        "weights": list(_PUBSUB_SHADOW_WEIGHTS),
        "latency": _ETHEREUM_LATENCY,
    },
}
"""Region tables by preset name, as a scenario would write them."""

# ethshadow's built-in reliabilities (same file and function): bandwidth up and down, and
# latency and packet loss added to every link at each end.
CLASS_PRESETS: dict[str, dict[str, Any]] = {
    "reliable": {"upload": "1Gbit", "download": "1Gbit", "added_latency": "0ms", "added_loss": 0.0},
    "home": {
        "upload": "50Mbit",
        "download": "50Mbit",
        "added_latency": "20ms",
        "added_loss": 0.001,
    },
    "laggy": {
        "upload": "50Mbit",
        "download": "50Mbit",
        "added_latency": "300ms",
        "added_loss": 0.05,
    },
    "constrained": {
        "upload": "5Mbit",
        "download": "5Mbit",
        "added_latency": "20ms",
        "added_loss": 0.001,
    },
    "bad": {"upload": "2Mbit", "download": "2Mbit", "added_latency": "500ms", "added_loss": 0.2},
}
"""Node-class fields by preset name, as a scenario would write them."""
