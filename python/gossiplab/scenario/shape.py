"""The shape of the schema: for did-you-mean hints, error paths and sweep keys."""

from __future__ import annotations

import difflib
import types
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, Tag

from gossiplab.scenario.base import is_index


@dataclass(frozen=True)
class UnionNode:
    """A field that takes one of several forms, told apart by ``tag_field`` (e.g. kind)."""

    tag_field: str
    members: dict[str, type[BaseModel] | None]  # None: a plain value (constant latency)


@dataclass(frozen=True)
class ListNode:
    item: Node


@dataclass(frozen=True)
class MapNode:
    """A table with free keys (sweep)."""


Node = type[BaseModel] | UnionNode | ListNode | MapNode | None  # None: a plain value


def _strip_annotated(annotation: Any) -> tuple[Any, list[Any]]:
    metadata: list[Any] = []
    while get_origin(annotation) is Annotated:
        annotation, *more = get_args(annotation)
        metadata += more
    return annotation, metadata


def _literal_tag(model: type[BaseModel], name: str) -> str | None:
    field_info = model.model_fields.get(name)
    if field_info is None or get_origin(field_info.annotation) is not Literal:
        return None
    return str(get_args(field_info.annotation)[0])


def _union_node(arms: tuple[Any, ...]) -> Node:
    """The forms of a union, keyed by tag: a Tag() annotation, or the Literal field they share."""
    tagged: dict[str, type[BaseModel] | None] = {}
    untagged: list[type[BaseModel]] = []
    for arm in arms:
        arm, metadata = _strip_annotated(arm)
        tag = next((m.tag for m in metadata if isinstance(m, Tag)), None)
        model = arm if isinstance(arm, type) and issubclass(arm, BaseModel) else None
        if tag is not None:
            tagged[tag] = model
        elif model is not None:
            untagged.append(model)
    if not tagged and len(untagged) <= 1:
        return untagged[0] if untagged else None  # an optional model, or plain values
    models = untagged + [m for m in tagged.values() if m is not None]
    shared = [n for n in models[0].model_fields if all(_literal_tag(m, n) for m in models)]
    if not shared:
        return None
    for model in untagged:
        tagged[str(_literal_tag(model, shared[0]))] = model
    return UnionNode(shared[0], tagged)


def _node_of(annotation: Any) -> Node:
    annotation, _ = _strip_annotated(annotation)
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        return _union_node(get_args(annotation))
    if origin is list:
        return ListNode(_node_of(get_args(annotation)[0]))
    if origin is dict:
        return MapNode()
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def _child(model: type[BaseModel], name: str) -> Node:
    field_info = model.model_fields[name]
    return _node_of(field_info.annotation)


def fields_of(node: Node) -> dict[str, Node]:
    """The named children of a node; for a union, those of every member."""
    if isinstance(node, type):
        return {name: _child(node, name) for name in node.model_fields}
    if isinstance(node, UnionNode):
        merged: dict[str, Node] = {}
        for member in node.members.values():
            if member is not None:
                merged.update(fields_of(member))
        return merged
    return {}


def field_paths(node: Node, prefix: str = "") -> list[str]:
    """Every dotted path a sweep may set (list items shown as index 0)."""
    paths = []
    for name, child in fields_of(node).items():
        if prefix == "" and name == "sweep":
            continue
        path = f"{prefix}{name}"
        paths.append(path)
        if isinstance(child, ListNode):
            paths += field_paths(child.item, f"{path}.0.")
        else:
            paths += field_paths(child, f"{path}.")
    return paths


def is_field_path(path: str, root: type[BaseModel]) -> bool:
    """Whether ``path`` (dotted, list items as an index) names a field under ``root``."""
    node: Node = root
    parts = path.split(".")
    if parts[0] == "sweep":
        return False
    for part in parts:
        if isinstance(node, ListNode) and is_index(part):
            node = node.item
            continue
        fields = fields_of(node)
        if part not in fields:
            return False
        node = fields[part]
    return True


def did_you_mean(word: str, candidates: list[str]) -> str:
    close = difflib.get_close_matches(word, candidates, n=1, cutoff=0.6)
    if close:
        return f"did you mean '{close[0]}'?"
    shown = ", ".join(candidates[:12]) + (", ..." if len(candidates) > 12 else "")
    return f"known names: {shown}"


@dataclass
class Located:
    """Where a pydantic error location points: a user-facing path and the schema node there."""

    path: str
    node: Node
    union: UnionNode | None = None  # set when ``node`` was reached through a kind tag


def join_path(path: str, part: str) -> str:
    if not part:
        return path
    if not path or part.startswith("["):
        return f"{path}{part}"
    return f"{path}.{part}"


def locate(loc: tuple[int | str, ...], root: type[BaseModel]) -> Located:
    """Turn pydantic's location under ``root`` into a path, dropping the union tags pydantic
    inserts."""
    here = Located("", root)
    for item in loc:
        node = here.node
        if isinstance(node, UnionNode) and isinstance(item, str) and item in node.members:
            here = Located(here.path, node.members[item], node)
        elif isinstance(node, ListNode) and isinstance(item, int):
            here = Located(join_path(here.path, f"[{item}]"), node.item)
        elif isinstance(node, MapNode):
            key = f'"{item}"' if "." in str(item) else str(item)
            here = Located(join_path(here.path, key), None)
        elif isinstance(node, type) and isinstance(item, str) and item in node.model_fields:
            here = Located(join_path(here.path, item), _child(node, item))
        else:
            part = f"[{item}]" if isinstance(item, int) else str(item)
            here = Located(join_path(here.path, part), None)
    return here
