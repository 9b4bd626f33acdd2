"""Units in scenario files: parse them into integers, write them back in one canonical spelling.

Internally a duration is int nanoseconds, a size int bytes, a bandwidth int bits per second
(0 means unlimited) and a rate float messages per second. Parsing is exact: "2.5s" is read as a
decimal, never through a binary float, and a value that is not a whole number of the base unit
("0.5ns", "1.5bit") is refused rather than rounded. Formatting picks the largest unit that
represents the value exactly, so ``parse(format(x)) == x`` for every value a parser returns.

The pydantic types ``Duration``, ``Size``, ``Bandwidth`` and ``Rate`` store the numbers above
and serialise (in JSON mode, which is what resolved scenario files use) to canonical strings.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from decimal import Decimal, InvalidOperation, localcontext
from typing import Annotated

from pydantic import BeforeValidator, PlainSerializer
from pydantic_core import PydanticCustomError

# TOML integers are signed 64-bit; every resolved scenario must be writable as TOML.
MAX_UNIT_VALUE = 2**63 - 1

NS_PER_SECOND = 1_000_000_000

DURATION_UNITS: dict[str, int] = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,  # micro sign
    "μs": 1_000,  # Greek mu: both look alike on screen
    "ms": 1_000_000,
    "s": NS_PER_SECOND,
    "min": 60 * NS_PER_SECOND,
    "h": 3600 * NS_PER_SECOND,
}
# Largest first; "min" rather than "m" so that "2m" is never mistaken for "2ms".
_DURATION_OUTPUT = [("h", 3600 * NS_PER_SECOND), ("min", 60 * NS_PER_SECOND), ("s", NS_PER_SECOND)]
_DURATION_OUTPUT += [("ms", 1_000_000), ("us", 1_000), ("ns", 1)]

SIZE_UNITS: dict[str, int] = {
    "B": 1,
    "kB": 1000,
    "KB": 1000,
    "MB": 1000**2,
    "GB": 1000**3,
    "KiB": 1024,
    "MiB": 1024**2,
    "GiB": 1024**3,
}
_SIZE_OUTPUT = [("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)]

_BIT_UNITS: dict[str, int] = {
    "bit": 1,
    "kbit": 1000,
    "Kbit": 1000,
    "Mbit": 1000**2,
    "Gbit": 1000**3,
    "Tbit": 1000**4,
    "Kibit": 1024,
    "Mibit": 1024**2,
    "Gibit": 1024**3,
}
_BPS_UNITS = {"bps": 1, "kbps": 1000, "Kbps": 1000, "Mbps": 1000**2, "Gbps": 1000**3}
BANDWIDTH_UNITS: dict[str, int] = {**_BIT_UNITS, **_BPS_UNITS}
BANDWIDTH_UNITS.update({f"{unit}/s": factor for unit, factor in _BIT_UNITS.items()})
# Bytes per second count 8 bits per byte; a bare "10MB" is a size, so "/s" is required here.
BANDWIDTH_UNITS.update({f"{unit}/s": 8 * factor for unit, factor in SIZE_UNITS.items()})
UNLIMITED = "unlimited"
_BANDWIDTH_BIT_OUTPUT = [("Gbit", 1000**3), ("Mbit", 1000**2), ("kbit", 1000)]
_BANDWIDTH_BYTE_OUTPUT = [("GiB/s", 1024**3), ("MiB/s", 1024**2), ("KiB/s", 1024)]

RATE_UNITS: dict[str, float] = {"ms": 0.001, "s": 1.0, "sec": 1.0, "min": 60.0, "h": 3600.0}

# ASCII digits only: str.isdigit() and \d also accept "²" or "٣", which int() may refuse.
_NUMBER = r"[0-9]+(?:\.[0-9]*)?|\.[0-9]+"
_QUANTITY = re.compile(rf"^(?P<number>{_NUMBER})\s*(?P<unit>\S*)$")
_RATE = re.compile(
    rf"^(?P<number>(?:{_NUMBER})(?:[eE][+-]?[0-9]+)?)\s*(?:/\s*(?P<unit>[A-Za-z]+))?$"
)
_INTEGER = re.compile(r"^[0-9]+$")

DURATION_EXAMPLES = 'write e.g. "150ms", "1.5s", "200us"'
SIZE_EXAMPLES = 'write e.g. "1000B", "128KiB", "1MB", or a plain integer number of bytes'
BANDWIDTH_EXAMPLES = 'write e.g. "50Mbit", "1Gbit", "10MB/s", or "unlimited"'
RATE_EXAMPLES = 'write e.g. "200/s", "12/min", or a number of messages per second'


class UnitError(ValueError):
    """A value that cannot be read in the expected unit; ``hint`` says how to write it."""

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(f"{message} ({hint})")
        self.message = message
        self.hint = hint


def _exact_quantity(text: str, units: dict[str, int], what: str, examples: str) -> int:
    """Read "<decimal><unit>" exactly as an integer count of the base unit."""
    stripped = text.strip()
    if stripped.startswith("-"):
        raise UnitError(f"{what} {text!r} is negative", f"{what}s cannot be negative; {examples}")
    match = _QUANTITY.match(stripped)
    if match is None or match["unit"] not in units:
        raise UnitError(f"cannot read {text!r} as a {what}", examples)
    try:
        # Enough precision that the product is exact: the default (28 digits) would round
        # "1.0000000000000000000000000001s" to a whole number of nanoseconds.
        with localcontext() as context:
            context.prec = len(match["number"]) + 30
            value = Decimal(match["number"]) * units[match["unit"]]
    except InvalidOperation:
        raise UnitError(f"cannot read {text!r} as a {what}", examples) from None
    if value != value.to_integral_value():
        smallest = min(units, key=units.__getitem__)
        raise UnitError(
            f"{what} {text!r} is not a whole number of {smallest}", f"round it to whole {smallest}"
        )
    return _within_limit(int(value), text, what)


def _within_limit(value: int, text: object, what: str) -> int:
    if value > MAX_UNIT_VALUE:
        raise UnitError(f"{what} {text!r} is too large", f"use at most {MAX_UNIT_VALUE} base units")
    return value


def _largest_exact_unit(value: int, units: list[tuple[str, int]]) -> str | None:
    for name, factor in units:
        if value % factor == 0:
            return f"{value // factor}{name}"
    return None


def parse_duration(value: object) -> int:
    """A duration string ("150ms", "2.5s", "0") as int nanoseconds."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise UnitError(f"cannot read {value!r} as a duration", DURATION_EXAMPLES)
    if isinstance(value, int):
        if value < 0:
            raise UnitError(
                f"duration {value} is negative",
                f"durations cannot be negative; {DURATION_EXAMPLES}",
            )
        if value != 0:
            raise UnitError(
                f"cannot read {value} as a duration: a number needs a unit", DURATION_EXAMPLES
            )
        return 0
    if value.strip() == "0":
        return 0
    return _exact_quantity(value, DURATION_UNITS, "duration", DURATION_EXAMPLES)


def format_duration(ns: int) -> str:
    """Canonical spelling of a duration: the largest unit that represents it exactly."""
    if ns == 0:
        return "0ms"
    text = _largest_exact_unit(ns, _DURATION_OUTPUT)
    assert text is not None  # every integer is a whole number of nanoseconds
    return text


def parse_size(value: object) -> int:
    """A size ("1000B", "128KiB", "1MB", or a plain integer number of bytes) as int bytes."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise UnitError(f"cannot read {value!r} as a size", SIZE_EXAMPLES)
    if isinstance(value, int):
        if value < 0:
            raise UnitError(
                f"size {value} is negative", f"sizes cannot be negative; {SIZE_EXAMPLES}"
            )
        return _within_limit(value, value, "size")
    if _INTEGER.match(value.strip()):
        return _within_limit(int(value.strip()), value, "size")
    return _exact_quantity(value, SIZE_UNITS, "size", SIZE_EXAMPLES)


def format_size(size: int) -> str:
    """Canonical spelling of a size: binary units when exact ("128KiB"), else bytes ("1000B")."""
    if size == 0:
        return "0B"
    return _largest_exact_unit(size, _SIZE_OUTPUT) or f"{size}B"


def parse_bandwidth(value: object) -> int:
    """A bandwidth ("50Mbit", "10MB/s", "unlimited") as int bits per second; 0 means unlimited."""
    if isinstance(value, bool) or not isinstance(value, str):
        raise UnitError(
            f"cannot read {value!r} as a bandwidth: it needs a unit", BANDWIDTH_EXAMPLES
        )
    if value.strip() == UNLIMITED:
        return 0
    bits = _exact_quantity(value, BANDWIDTH_UNITS, "bandwidth", BANDWIDTH_EXAMPLES)
    if bits == 0:
        # A zero-capacity link would silently carry nothing; "no limit" has its own word.
        raise UnitError(f"bandwidth {value!r} is zero", 'write "unlimited" for no limit')
    return bits


def format_bandwidth(bits_per_second: int) -> str:
    """Canonical spelling of a bandwidth: "unlimited", "50Mbit", "10MiB/s" or "1234bit"."""
    if bits_per_second == 0:
        return UNLIMITED
    text = _largest_exact_unit(bits_per_second, _BANDWIDTH_BIT_OUTPUT)
    if text is None and bits_per_second % 8 == 0:
        text = _largest_exact_unit(bits_per_second // 8, _BANDWIDTH_BYTE_OUTPUT)
    return text or f"{bits_per_second}bit"


def parse_rate(value: object) -> float:
    """A rate ("200/s", "12/min", or a number per second) as float messages per second."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise UnitError(f"cannot read {value!r} as a rate", RATE_EXAMPLES)
    if isinstance(value, str):
        if value.strip().startswith("-"):
            raise UnitError(f"rate {value!r} is negative", f"rates must be > 0; {RATE_EXAMPLES}")
        match = _RATE.match(value.strip())
        if match is None or (match["unit"] is not None and match["unit"] not in RATE_UNITS):
            raise UnitError(f"cannot read {value!r} as a rate", RATE_EXAMPLES)
        seconds = RATE_UNITS[match["unit"]] if match["unit"] else 1.0
        rate = float(match["number"]) / seconds
    else:
        rate = float(value)
    if not math.isfinite(rate) or rate <= 0:
        raise UnitError(
            f"rate {value!r} is not a positive finite number", f"rates must be > 0; {RATE_EXAMPLES}"
        )
    return rate


def format_rate(per_second: float) -> str:
    """Canonical spelling of a rate: "200/s"; ``repr`` keeps non-integers exact ("0.2/s")."""
    if per_second.is_integer() and per_second < 2**63:
        return f"{int(per_second)}/s"
    return f"{per_second!r}/s"


def _pydantic_validator(parse: Callable[[object], int | float]) -> BeforeValidator:
    """Wrap a parser so its UnitError becomes a pydantic error carrying message and hint."""

    def validate(value: object) -> int | float:
        try:
            return parse(value)
        except UnitError as err:
            # The message goes in the context, not the template, so braces in user text are inert.
            context = {"message": err.message, "hint": err.hint}
            raise PydanticCustomError("gossiplab", "{message}", context) from None

    return BeforeValidator(validate)


Duration = Annotated[
    int,
    _pydantic_validator(parse_duration),
    PlainSerializer(format_duration, return_type=str, when_used="json"),
]
Size = Annotated[
    int,
    _pydantic_validator(parse_size),
    PlainSerializer(format_size, return_type=str, when_used="json"),
]
Bandwidth = Annotated[
    int,
    _pydantic_validator(parse_bandwidth),
    PlainSerializer(format_bandwidth, return_type=str, when_used="json"),
]
Rate = Annotated[
    float,
    _pydantic_validator(parse_rate),
    PlainSerializer(format_rate, return_type=str, when_used="json"),
]
