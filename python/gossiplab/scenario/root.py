"""The scenario's root table: its own fields and one model per section."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, PrivateAttr, ValidationInfo, field_validator, model_validator

from gossiplab.errors import Problem
from gossiplab.scenario.base import MAX_SEED, Section, context_base_dir, is_int, raise_problems
from gossiplab.scenario.cpu import CpuConfig, fill_measured
from gossiplab.scenario.faults import FaultConfig
from gossiplab.scenario.network import NetworkConfig
from gossiplab.scenario.output import OutputConfig
from gossiplab.scenario.protocol import ProtocolConfig
from gossiplab.scenario.rules import cross_section_problems
from gossiplab.scenario.sweep import sweep_key_problems
from gossiplab.scenario.testbed import TestbedConfig
from gossiplab.scenario.topology import (
    DEFAULT_TOPOLOGY_KIND,
    SEEDED_TOPOLOGY_KINDS,
    BarabasiAlbertTopology,
    TopologyConfig,
)
from gossiplab.scenario.workload import WorkloadConfig

_NAME_PATTERN = r"^[A-Za-z0-9_.-]+$"


class Scenario(Section):
    """One experiment, fully resolved: every default is filled in."""

    name: str = Field(default="scenario", pattern=_NAME_PATTERN)
    description: str = ""
    seed: int = Field(default=1, ge=0, le=MAX_SEED)
    backend: Literal["model", "testbed", "simnet"] = "model"
    topology: TopologyConfig = BarabasiAlbertTopology()
    network: NetworkConfig = NetworkConfig()
    cpu: CpuConfig = CpuConfig()
    protocol: ProtocolConfig = Field(default_factory=lambda: ProtocolConfig.model_validate({}))
    workload: WorkloadConfig = WorkloadConfig()
    faults: list[FaultConfig] = Field(default_factory=list)
    output: OutputConfig = OutputConfig()
    testbed: TestbedConfig = TestbedConfig()
    sweep: dict[str, list[Any]] = Field(default_factory=dict)

    # Where relative paths (topology.file) are found; not part of the experiment itself.
    _base_dir: Path = PrivateAttr(default_factory=Path.cwd)
    # The data as the user wrote it: sweeps are expanded from it, not from the resolved form,
    # so that a swept preset or seed still changes the values derived from it.
    _source_data: dict[str, Any] = PrivateAttr(default_factory=dict)

    @property
    def base_dir(self) -> Path:
        return self._base_dir

    @property
    def source_data(self) -> dict[str, Any]:
        return copy.deepcopy(self._source_data)

    def __eq__(self, other: object) -> bool:
        # Equal experiments compare equal wherever their files were loaded from.
        if not isinstance(other, Scenario):
            return NotImplemented
        return self.__dict__ == other.__dict__

    __hash__ = None  # type: ignore[assignment]

    @model_validator(mode="before")
    @classmethod
    def _testbed_router_default(cls, data: Any) -> Any:
        # The testbed runs the scenario's protocol unless told to run another router.
        if not isinstance(data, dict) or not isinstance(data.get("testbed", {}), dict):
            return data
        name = (
            data.get("protocol", {}).get("name") if isinstance(data.get("protocol"), dict) else None
        )
        router = name if name in ("gossipsub", "floodsub") else "gossipsub"
        return {**data, "testbed": {"router": router, **data.get("testbed", {})}}

    @model_validator(mode="before")
    @classmethod
    def _measured_cpu_costs(cls, data: Any) -> Any:
        # costs = "measured" writes the measured costs out, for the scenario's signing.
        return fill_measured(data) if isinstance(data, dict) else data

    @model_validator(mode="before")
    @classmethod
    def _topology_defaults(cls, data: Any) -> Any:
        # The topology seed follows the scenario seed unless given; the kind defaults too.
        if not isinstance(data, dict):
            return data
        topology = data.get("topology", {})
        if not isinstance(topology, dict):
            return data
        topology = {"kind": DEFAULT_TOPOLOGY_KIND, **topology}
        seed = data.get("seed", 1)
        valid_seed = is_int(seed) and 0 <= seed <= MAX_SEED  # else only `seed` is reported
        if topology["kind"] in SEEDED_TOPOLOGY_KINDS and "seed" not in topology and valid_seed:
            topology["seed"] = seed
        return {**data, "topology": topology}

    @field_validator("name")
    @classmethod
    def _name_is_a_folder(cls, name: str) -> str:
        if set(name) == {"."}:
            hint = "use letters, digits, '-', '_' or '.', not only dots"
            raise_problems([Problem("", f"'{name}' cannot be a folder name", hint)])
        return name

    @field_validator("sweep")
    @classmethod
    def _sweep_names_fields(cls, sweep: dict[str, list[Any]]) -> dict[str, list[Any]]:
        raise_problems(sweep_key_problems(sweep, cls))
        return sweep

    @model_validator(mode="after")
    def _check_across_sections(self, info: ValidationInfo) -> Scenario:
        self._base_dir = context_base_dir(info)
        raise_problems(cross_section_problems(self))
        return self
