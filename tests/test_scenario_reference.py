"""docs/scenario.md checked field by field against the schema: every field of every section
has its row, every default written there is the default the parser applies, and every
quantity says its unit. The protocol's parameters live in docs/protocol.md's table, which
tests/test_protocol_table.py checks the same way."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any, get_args

import pytest
from pydantic import BaseModel, PlainSerializer

from gossiplab.scenario import ScoreConfig, parse_scenario
from gossiplab.scenario import testbed as testbed_schema
from gossiplab.scenario.cpu import COST_FIELDS as CPU_COSTS
from gossiplab.scenario.cpu import CpuConfig
from gossiplab.scenario.faults import (
    AdversaryFault,
    ChurnFault,
    CrashFault,
    LeaveFault,
    PartitionFault,
    SlowFault,
)
from gossiplab.scenario.network import NetworkConfig, NodeClass, RegionTable
from gossiplab.scenario.output import OutputConfig
from gossiplab.scenario.partial import MempoolConfig, PartialConfig, RolesConfig
from gossiplab.scenario.root import Scenario
from gossiplab.scenario.topology import (
    BarabasiAlbertTopology,
    ConnectRandomTopology,
    DialUntilTopology,
    EdgesTopology,
    ErdosRenyiTopology,
    FullTopology,
    LineTopology,
    RandomRegularTopology,
    RingTopology,
)
from gossiplab.scenario.workload import WorkloadConfig
from gossiplab.units import format_bandwidth, format_duration, format_rate, format_size

REPO = Path(__file__).resolve().parent.parent
TEXT = (REPO / "docs" / "scenario.md").read_text(encoding="utf-8")
SECTIONS = (
    "topology",
    "network",
    "cpu",
    "protocol",
    "workload",
    "faults",
    "output",
    "testbed",
    "sweep",
)
UNITS = {format_duration: "duration", format_size: "size", format_bandwidth: "bandwidth"}
UNITS[format_rate] = "rate"
# Defaults that follow from other fields; their cells explain the rule instead of a value.
DERIVED = {
    ("topology", "seed"): "the scenario `seed`",
    ("workload", "seed"): "the scenario `seed`",
    ("workload", "duration"): "`messages / rate`",
    ("network.classes", "name"): "the preset's name",
    ("network.classes", "share"): "required",
    ("network.classes", "upload"): "network.upload",
    ("network.classes", "download"): "network.upload",
    ("network.classes", "cpu_per_message"): "network.cpu_per_message",
    ("network.classes", "added_latency"): "preset, else",
    ("network.classes", "added_loss"): "preset, else",
    ("testbed", "security"): "with QUIC",
    ("testbed", "muxer"): "with QUIC",
    ("testbed", "router"): "protocol.name",
    ("cpu", "time_slice"): "Linux's",
    **{("cpu", f"sigma_{cost}"): "`sigma`" for cost in CPU_COSTS},
}


def section(heading: str) -> str:
    """The text under `heading` (a line starting with it) up to the next heading."""
    start = TEXT.index("\n" + heading) + 1
    rest = TEXT[start:].split("\n", 1)[1]
    stop = re.search(r"^#+ ", rest, flags=re.M)
    return rest[: stop.start()] if stop else rest


def tables(text: str) -> list[list[dict[str, str]]]:
    """Every markdown table in `text`, as rows keyed by the header's cells."""
    found: list[list[dict[str, str]]] = []
    block: list[list[str]] = []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            block.append([c.strip() for c in re.split(r"(?<!\\)\|", line.strip()[1:-1])])
            continue
        if len(block) > 2:
            header = block[0]
            found.append([dict(zip(header, row, strict=True)) for row in block[2:]])
        block = []
    return found


def field_rows(text: str) -> dict[str, dict[str, str]]:
    """Field name -> its row, from the tables whose first column is `Field`; a row may name
    several fields (`upload`, `download`)."""
    rows: dict[str, dict[str, str]] = {}
    for table in tables(text):
        for row in table:
            for name in re.findall(r"`(\w+)`", row.get("Field", "")):
                rows[name] = row
    return rows


def unit_of(model: type[BaseModel], name: str) -> str | None:
    """duration, size, bandwidth or rate for a quantity field, else None."""
    info = model.model_fields[name]
    metadata = list(info.metadata)
    for arm in get_args(info.annotation):  # an optional quantity: Duration | None
        metadata += getattr(arm, "__metadata__", ())
    for item in metadata:
        if isinstance(item, PlainSerializer) and item.func in UNITS:
            return UNITS[item.func]
    return None


def literal(cell: str) -> Any:
    """The one TOML value a cell states (`"10ms"`, `100`, `[]`), or None if it states a rule."""
    match = re.fullmatch(r"`([^`]+)`", cell)
    if match is None:
        return None
    return tomllib.loads(f"v = {match.group(1)}")["v"]


# What a section needs from the others to be valid on its own.
PARTIAL_PROTOCOL = {"protocol": {"version": "1.3", "message_id": "ethereum"}}


def resolved(path: str, name: str, value: Any = None) -> Any:
    """The parsed value of field `name` at `path`, written as `value` or left to default."""
    given = {} if value is None else {name: value}
    if path == "":
        data: dict[str, Any] = given
    elif path == "network.classes":
        data = {"network": {"classes": [{"name": "c", "share": 1.0, **given}]}}
    elif path.startswith("workload.partial"):
        table = given
        for key in reversed(path.split(".")[1:]):
            table = {key: table}
        data = {"workload": table, **PARTIAL_PROTOCOL}
    else:
        data = {path: given}
    s = parse_scenario(data, REPO)
    owner: Any = s if path == "" else getattr(s, path.split(".")[0])
    if path == "network.classes":
        owner = owner.classes[0]
    for key in path.split(".")[1:] if path.startswith("workload.partial") else []:
        owner = getattr(owner, key)
    return getattr(owner, name)


# (heading, dotted path of the section, the model, fields documented elsewhere)
FIELD_TABLES = [
    ("## Top level", "", Scenario, set(SECTIONS)),
    ("## `[network]`", "network", NetworkConfig, set()),
    ("### Node classes", "network.classes", NodeClass, set()),
    ("## `[cpu]`", "cpu", CpuConfig, set()),
    ("## `[workload]`", "workload", WorkloadConfig, set()),
    ("### `[workload.partial]`", "workload.partial", PartialConfig, {"mempool", "roles"}),
    ("#### `[workload.partial.mempool]`", "workload.partial.mempool", MempoolConfig, set()),
    ("#### `[workload.partial.roles]`", "workload.partial.roles", RolesConfig, set()),
    ("## `[output]`", "output", OutputConfig, set()),
    ("## `[testbed]`", "testbed", testbed_schema.TestbedConfig, set()),
]


@pytest.mark.parametrize(("heading", "path", "model", "elsewhere"), FIELD_TABLES)
def test_every_field_has_a_row(
    heading: str, path: str, model: type[BaseModel], elsewhere: set[str]
) -> None:
    documented = set(field_rows(section(heading)))
    assert documented == set(model.model_fields) - elsewhere


@pytest.mark.parametrize(("heading", "path", "model", "elsewhere"), FIELD_TABLES)
def test_every_default_is_the_parsers(
    heading: str, path: str, model: type[BaseModel], elsewhere: set[str]
) -> None:
    wrong = {}
    for name, row in field_rows(section(heading)).items():
        cell = row["Default"]
        if (path, name) in DERIVED:
            assert DERIVED[path, name] in cell, f"{path}.{name}: {cell}"
            continue
        value = [] if cell == "none" else literal(cell)
        assert value is not None, f"{path}.{name}: the default {cell!r} is not one value"
        expected = None if cell == "none" else resolved(path, name, value)
        if resolved(path, name) != expected:
            wrong[name] = (cell, resolved(path, name))
    assert not wrong, f"defaults in {heading} that the parser does not apply: {wrong}"


@pytest.mark.parametrize(("heading", "path", "model", "elsewhere"), FIELD_TABLES)
def test_every_quantity_states_its_unit(
    heading: str, path: str, model: type[BaseModel], elsewhere: set[str]
) -> None:
    # In a table with a Unit column that column names the kind; elsewhere the default
    # is written with its unit (`"10ms"`).
    for name, row in field_rows(section(heading)).items():
        unit = unit_of(model, name)
        if unit is None or (path, name) in DERIVED:
            continue
        if "Unit" in row:
            assert unit in row["Unit"], f"{path}.{name}: {row['Unit']!r} does not say {unit}"
        else:
            assert isinstance(literal(row["Default"]), str), f"{path}.{name}: {row['Default']}"


def test_the_topology_tables_list_every_kind_and_its_fields() -> None:
    text = section("## `[topology]`")
    kinds = {row["`kind`"]: row["Fields (default)"] for row in tables(text)[0]}
    models = [
        BarabasiAlbertTopology,
        RandomRegularTopology,
        ErdosRenyiTopology,
        FullTopology,
        ConnectRandomTopology,
        DialUntilTopology,
        LineTopology,
        RingTopology,
        EdgesTopology,
    ]
    common = set(field_rows(text))
    assert common == {"nodes", "seed", "allow_disconnected"}
    for model in models:
        kind = model.model_fields["kind"].default
        cell = next(v for k, v in kinds.items() if k.startswith(f"`{kind}`"))
        named, own = set(re.findall(r"`(\w+)`", cell)), set(model.model_fields) - {"kind"}
        assert own - common <= named <= own, kind
        for name, default in re.findall(r"`(\w+)` \(([\d.]+)\)", cell):
            assert model.model_fields[name].default == float(default), f"{kind}.{name}"


def test_the_faults_table_lists_every_kind_and_its_fields() -> None:
    rows = {row["`kind`"].strip("`"): row for row in tables(section("## `[[faults]]`"))[0]}
    models = [CrashFault, ChurnFault, PartitionFault, SlowFault, AdversaryFault, LeaveFault]
    assert set(rows) == {m.model_fields["kind"].default for m in models}
    for model in models:
        kind = model.model_fields["kind"].default
        named = set(re.findall(r"`(\w+)`", rows[kind]["Fields"]))
        assert named == set(model.model_fields) - {"kind"}, kind
        for name, default in re.findall(r"`(\w+)` \(([\d.]+)\)", rows[kind]["Fields"]):
            assert model.model_fields[name].default == float(default), f"{kind}.{name}"


def test_the_protocol_table_names_what_the_parameters_table_does_not() -> None:
    rows = field_rows(section("## `[protocol]`"))
    per_version = {"announce_own", "idontwant_on_publish", "idontwant_to_sender"}
    assert set(rows) == {"name", "version", "preset"} | per_version
    for name, row in rows.items():
        assert resolved("protocol", name) == literal(row["Default"]), name


@pytest.mark.parametrize(
    ("column", "preset"), [(2, "go-default"), (2, "rust-default"), (3, "ethereum")]
)
def test_every_score_default_is_the_presets(column: int, preset: str) -> None:
    table = tables(section("### `[protocol.score]`"))[0]
    header = list(table[0])
    documented = {}
    for row in table:
        cells = list(row.values())
        cell = cells[column]
        cell = cells[2] if cell == "same" else cell
        documented[cells[0].strip("`")] = literal(cell)
    assert set(documented) == set(ScoreConfig.model_fields), header
    default = parse_scenario({"protocol": {"preset": preset}}, REPO).protocol.score
    wrong = {}
    for name, value in documented.items():
        written = {"protocol": {"preset": preset, "score": {name: value}}}
        if getattr(parse_scenario(written, REPO).protocol.score, name) != getattr(default, name):
            wrong[name] = value
    assert not wrong, f"score cells that are not the {preset} default: {wrong}"


def test_every_score_duration_is_written_with_its_unit() -> None:
    for row in tables(section("### `[protocol.score]`"))[0]:
        name = row["Field"].strip("`")
        if unit_of(ScoreConfig, name) == "duration":
            assert isinstance(literal(list(row.values())[2]), str), name


def test_the_region_fields_are_named() -> None:
    text = section("### Regions")
    for name in RegionTable.model_fields:
        assert re.search(rf"\b{name}\b", text), name
