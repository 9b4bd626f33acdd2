"""The protocol presets (go-libp2p-pubsub's, rust-libp2p's and Ethereum's parameters), read
from presets.toml, the one place they are defined; the engine's tests and the Go node read
the same file. Its header describes the layout."""

from __future__ import annotations

import tomllib
from importlib import resources
from typing import Any

PRESETS_FILE = resources.files("gossiplab.scenario").joinpath("presets.toml")


def read_presets() -> dict[str, dict[str, Any]]:
    """Every preset by name, as in the file: [protocol] fields, and `score` for [protocol.score]."""
    return tomllib.loads(PRESETS_FILE.read_text(encoding="utf-8"))


_PRESETS = read_presets()
# What a scenario's [protocol] section starts from, by preset name; the score apart.
PROTOCOL_PRESETS: dict[str, dict[str, Any]] = {
    name: {key: value for key, value in table.items() if key != "score"}
    for name, table in _PRESETS.items()
}
SCORE_PRESETS: dict[str, dict[str, Any]] = {
    name: table["score"] for name, table in _PRESETS.items()
}
GO_DEFAULT = PROTOCOL_PRESETS["go-default"]


def preset_of(protocol: dict[str, Any]) -> str:
    """The preset a [protocol] table names; go's defaults where it names none or an
    unknown one (the schema reports a bad name)."""
    preset = protocol.get("preset", "go-default")
    return preset if isinstance(preset, str) and preset in PROTOCOL_PRESETS else "go-default"


def over_preset(protocol: dict[str, Any]) -> dict[str, Any]:
    """A [protocol] table over its preset: what the user wrote beats the preset."""
    return {**PROTOCOL_PRESETS[preset_of(protocol)], **protocol}
