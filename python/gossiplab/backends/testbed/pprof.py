"""Top functions of the nodes' CPU profiles (runtime/pprof), aggregated over nodes.

A pprof file is a gzipped protobuf (github.com/google/pprof proto/profile.proto). Only
the few fields needed here are decoded: samples (location ids and values), locations
(their lines' function ids, innermost first), functions (name index) and the string
table. Flat time goes to a sample's innermost function, cumulative time once to every
distinct function on its stack, as `go tool pprof -top` counts them.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

# A function's name tells which part of the stack it belongs to; the first match wins.
_LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("signing (ed25519)", ("ed25519", "edwards25519", "go-libp2p/core/crypto")),
    ("hashing (sha2)", ("sha256", "sha512", "blake3")),
    ("encryption (noise/tls)", ("flynn/noise", "chacha20", "poly1305", "crypto/tls", "aes")),
    ("muxer (yamux)", ("go-yamux",)),
    ("quic", ("quic-go",)),
    ("router (pubsub)", ("go-libp2p-pubsub",)),
    ("protobuf", ("google.golang.org/protobuf",)),
    ("network syscalls", ("syscall", "internal/poll", "net.(")),
    ("go runtime (GC, scheduler)", ("runtime.",)),
)


def layer_of(function: str) -> str:
    for name, needles in _LAYERS:
        if any(needle in function for needle in needles):
            return name
    return "other"


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7


def _fields(data: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    """(field number, wire type, value) of one protobuf message."""
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
            yield number, wire, value
        elif wire == 2:
            length, pos = _varint(data, pos)
            yield number, wire, data[pos : pos + length]
            pos += length
        elif wire == 1:
            yield number, wire, int.from_bytes(data[pos : pos + 8], "little")
            pos += 8
        elif wire == 5:
            yield number, wire, int.from_bytes(data[pos : pos + 4], "little")
            pos += 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")


def _ints(wire: int, value: int | bytes) -> list[int]:
    """A repeated integer field, packed (bytes) or not (one value)."""
    if wire == 0 and isinstance(value, int):
        return [value]
    assert isinstance(value, bytes)
    out, pos = [], 0
    while pos < len(value):
        item, pos = _varint(value, pos)
        out.append(item)
    return out


@dataclass
class Profile:
    """Per-function CPU nanoseconds of one profile: flat (innermost) and cumulative."""

    flat: dict[str, int]
    cum: dict[str, int]
    total: int


def read_profile(path: Path) -> Profile:
    raw = path.read_bytes()
    data = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
    strings: list[str] = []
    samples: list[tuple[list[int], list[int]]] = []
    locations: dict[int, list[int]] = {}
    functions: dict[int, int] = {}
    sample_types: list[int] = []
    for number, _wire, value in _fields(data):
        if number == 6 and isinstance(value, bytes):
            strings.append(value.decode("utf-8", "replace"))
        elif number == 1 and isinstance(value, bytes):
            sample_types.append(next((v for n, _, v in _fields(value) if n == 1), 0))  # type: ignore[misc]
        elif number == 2 and isinstance(value, bytes):
            locs: list[int] = []
            values: list[int] = []
            for n, w, v in _fields(value):
                if n == 1:
                    locs += _ints(w, v)
                elif n == 2:
                    values += _ints(w, v)
            samples.append((locs, values))
        elif number == 4 and isinstance(value, bytes):
            loc_id, funcs = 0, []
            for n, _, v in _fields(value):
                if n == 1 and isinstance(v, int):
                    loc_id = v
                elif n == 4 and isinstance(v, bytes):
                    funcs += [fv for fn, _, fv in _fields(v) if fn == 1 and isinstance(fv, int)]
            locations[loc_id] = funcs
        elif number == 5 and isinstance(value, bytes):
            fields = {n: v for n, _, v in _fields(value)}
            functions[int(fields.get(1, 0))] = int(fields.get(2, 0))  # type: ignore[arg-type]
    # The CPU time column: "cpu" (nanoseconds), else the last one.
    names = [strings[i] if i < len(strings) else "" for i in sample_types]
    column = names.index("cpu") if "cpu" in names else max(len(names) - 1, 0)

    def name(function_id: int) -> str:
        index = functions.get(function_id, 0)
        return strings[index] if index < len(strings) else "?"

    flat: dict[str, int] = {}
    cum: dict[str, int] = {}
    total = 0
    for locs, values in samples:
        if column >= len(values):
            continue
        value = values[column]
        total += value
        stack = [name(f) for loc in locs for f in locations.get(loc, [])]
        if stack:
            flat[stack[0]] = flat.get(stack[0], 0) + value
        for function in set(stack):
            cum[function] = cum.get(function, 0) + value
    return Profile(flat, cum, total)


def aggregate(paths: Iterable[Path], top: int = 25) -> dict[str, object]:
    """The top functions over all profiles, by flat time, with flat and cumulative shares."""
    flat: dict[str, int] = {}
    cum: dict[str, int] = {}
    total = 0
    count = 0
    for path in paths:
        profile = read_profile(path)
        count += 1
        total += profile.total
        for key, value in profile.flat.items():
            flat[key] = flat.get(key, 0) + value
        for key, value in profile.cum.items():
            cum[key] = cum.get(key, 0) + value
    if total == 0:
        return {"profiles": count, "cpu_s": 0.0, "top": [], "layers": {}}
    ranked = sorted(flat.items(), key=lambda item: (-item[1], item[0]))[:top]
    layers: dict[str, int] = {}
    for function, value in flat.items():
        layers[layer_of(function)] = layers.get(layer_of(function), 0) + value
    return {
        "profiles": count,
        "cpu_s": total / 1e9,
        "top": [
            {
                "function": function,
                "flat_share": value / total,
                "cum_share": cum.get(function, 0) / total,
            }
            for function, value in ranked
        ],
        "layers": {
            name: value / total for name, value in sorted(layers.items(), key=lambda i: -i[1])
        },
    }


def top_table(summary: dict[str, object]) -> str:
    """The aggregate as text, in the shape of `go tool pprof -top`."""
    lines = [
        f"{summary['profiles']} node profiles, {summary['cpu_s']:.2f} s of CPU in total",
        "",
        "  flat%    cum%  function",
    ]
    for row in summary["top"]:  # type: ignore[attr-defined]
        lines.append(f"{row['flat_share']:7.1%} {row['cum_share']:7.1%}  {row['function']}")
    lines += ["", "by layer (flat):"]
    for name, share in summary["layers"].items():  # type: ignore[attr-defined]
        lines.append(f"{share:7.1%}  {name}")
    return "\n".join(lines) + "\n"
