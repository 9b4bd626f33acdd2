"""The scenario: one TOML file that describes one experiment, and its fully resolved form.

Loading runs in three steps, and a user sees every mistake at once:

1. TOML syntax (``tomllib``); an error names the line and column.
2. Structure and the rules of each section (one pydantic model per section, in the module
   named after it). Keys are checked strictly (an unknown key is an error with a
   did-you-mean hint), types are not coerced ("100" is not a number), and each section's
   own rules (``D_lo <= D``) are checked here.
3. Rules that span sections (``rules``: publisher ids below the node count, fault times
   within the run). They run once every section is well-formed.

Every failure becomes a ``Problem`` with a dotted path and a hint, raised together as one
``ScenarioError`` (``problems`` translates pydantic's errors, with ``shape``'s map of the
schema). Defaults that depend on other fields are resolved while loading (protocol preset,
topology seed, workload count/rate/duration, node-class bandwidths, the node count of an
edges file), so a ``Scenario`` is complete and ``scenario_to_toml`` writes every value out.

The modules: ``base`` (what every section shares), one per section (``topology``,
``network``, ``protocol`` over ``presets`` and ``scoring``, ``workload``, ``faults``,
``output``, ``testbed``, ``sweep``), ``root`` (the ``Scenario`` that holds them), ``rules``,
``shape``, ``problems``, and ``load`` (reading and writing TOML, expanding sweeps).
"""

from __future__ import annotations

from gossiplab.scenario.faults import FaultConfig
from gossiplab.scenario.load import (
    expand_sweep,
    load_scenario,
    parse_scenario,
    scenario_hash,
    scenario_to_toml,
    sweep_points,
)
from gossiplab.scenario.network import ClassPreset, NetworkConfig, RegionPreset
from gossiplab.scenario.output import OutputConfig
from gossiplab.scenario.presets import GO_DEFAULT, PROTOCOL_PRESETS, SCORE_PRESETS
from gossiplab.scenario.protocol import ProtocolConfig
from gossiplab.scenario.root import Scenario
from gossiplab.scenario.scoring import ScoreConfig
from gossiplab.scenario.sweep import set_dotted
from gossiplab.scenario.testbed import TestbedConfig
from gossiplab.scenario.topology import TopologyConfig
from gossiplab.scenario.workload import WorkloadConfig

__all__ = [
    "GO_DEFAULT",
    "PROTOCOL_PRESETS",
    "SCORE_PRESETS",
    "ClassPreset",
    "FaultConfig",
    "NetworkConfig",
    "OutputConfig",
    "ProtocolConfig",
    "RegionPreset",
    "Scenario",
    "ScoreConfig",
    "TestbedConfig",
    "TopologyConfig",
    "WorkloadConfig",
    "expand_sweep",
    "load_scenario",
    "parse_scenario",
    "scenario_hash",
    "scenario_to_toml",
    "set_dotted",
    "sweep_points",
]
