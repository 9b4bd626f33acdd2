"""Unit parsing is exact, errors say what was expected, and format/parse round-trips."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from gossiplab.units import (
    MAX_UNIT_VALUE,
    Bandwidth,
    Duration,
    Rate,
    Size,
    UnitError,
    format_bandwidth,
    format_duration,
    format_rate,
    format_size,
    parse_bandwidth,
    parse_duration,
    parse_rate,
    parse_size,
)


@pytest.mark.parametrize(
    ("text", "ns"),
    [
        ("150ms", 150_000_000),
        ("1s", 1_000_000_000),
        ("2.5s", 2_500_000_000),
        ("100us", 100_000),
        ("100µs", 100_000),
        ("250ns", 250),
        ("2min", 120_000_000_000),
        ("1h", 3_600_000_000_000),
        ("0", 0),
        (0, 0),
        ("0ms", 0),
        (" 50 ms ", 50_000_000),
        (".5s", 500_000_000),
        ("1.000000001s", 1_000_000_001),
    ],
)
def test_parse_duration(text: object, ns: int) -> None:
    assert parse_duration(text) == ns


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("150 mss", "cannot read '150 mss' as a duration"),
        ("2m", "cannot read"),  # ambiguous: minutes or a typo for ms?
        ("-5s", "negative"),
        (-1, "negative"),
        (150, "needs a unit"),
        (1.5, "cannot read"),
        (True, "cannot read"),
        ("0.5ns", "whole number of ns"),
        ("1.0000000000000000000000000001s", "whole number of ns"),
        ("99999999999h", "too large"),
        ("", "cannot read"),
        ("ms", "cannot read"),
    ],
)
def test_parse_duration_errors(text: object, fragment: str) -> None:
    with pytest.raises(UnitError) as err:
        parse_duration(text)
    assert fragment in err.value.message
    assert err.value.hint


def test_duration_error_names_examples() -> None:
    with pytest.raises(UnitError) as err:
        parse_duration("150 mss")
    assert (
        str(err.value)
        == 'cannot read \'150 mss\' as a duration (write e.g. "150ms", "1.5s", "200us")'
    )


@pytest.mark.parametrize(
    ("ns", "text"),
    [
        (150_000_000, "150ms"),
        (1_500_000_000, "1500ms"),
        (90_000_000_000, "90s"),
        (120_000_000_000, "2min"),
        (3_600_000_000_000, "1h"),
        (1, "1ns"),
        (0, "0ms"),
    ],
)
def test_format_duration(ns: int, text: str) -> None:
    assert format_duration(ns) == text


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("1000B", 1000),
        ("1000", 1000),
        (1000, 1000),
        ("128KiB", 131_072),
        ("1MiB", 1_048_576),
        ("1KB", 1000),
        ("1kB", 1000),
        ("1MB", 1_000_000),
        ("1.5KiB", 1536),
        (0, 0),
    ],
)
def test_parse_size(text: object, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize(
    "text", ["1.5B", "10 bytes", "-1", -1, "1Mb", 2.0, "12kb", "²", "٣KiB", "1_000"]
)
def test_parse_size_errors(text: object) -> None:
    with pytest.raises(UnitError):
        parse_size(text)


@pytest.mark.parametrize(
    ("size", "text"), [(131_072, "128KiB"), (1000, "1000B"), (1_048_576, "1MiB"), (0, "0B")]
)
def test_format_size(size: int, text: str) -> None:
    assert format_size(size) == text


@pytest.mark.parametrize(
    ("text", "bits"),
    [
        ("50Mbit", 50_000_000),
        ("1Gbit", 1_000_000_000),
        ("100kbit", 100_000),
        ("10MB/s", 80_000_000),
        ("10MiB/s", 83_886_080),
        ("50Mbps", 50_000_000),
        ("50Mbit/s", 50_000_000),
        ("unlimited", 0),
    ],
)
def test_parse_bandwidth(text: str, bits: int) -> None:
    assert parse_bandwidth(text) == bits


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("10MB", "cannot read"),  # a size, not a rate
        ("0Mbit", "zero"),
        (100, "needs a unit"),
        ("fast", "cannot read"),
        ("-5Mbit", "negative"),
        ("0.5bit", "whole number"),
    ],
)
def test_parse_bandwidth_errors(text: object, fragment: str) -> None:
    with pytest.raises(UnitError) as err:
        parse_bandwidth(text)
    assert fragment in err.value.message


@pytest.mark.parametrize(
    ("bits", "text"),
    [(0, "unlimited"), (50_000_000, "50Mbit"), (80_000_000, "80Mbit"), (83_886_080, "10MiB/s")],
)
def test_format_bandwidth(bits: int, text: str) -> None:
    assert format_bandwidth(bits) == text


@pytest.mark.parametrize(
    ("text", "rate"),
    [("200/s", 200.0), ("12/min", 0.2), ("3600/h", 1.0), (5, 5.0), (2.5, 2.5), ("7", 7.0)],
)
def test_parse_rate(text: object, rate: float) -> None:
    assert parse_rate(text) == pytest.approx(rate)


@pytest.mark.parametrize("text", ["0/s", "-1/s", "fast", "10/week", 0, math.inf, math.nan, True])
def test_parse_rate_errors(text: object) -> None:
    with pytest.raises(UnitError):
        parse_rate(text)


def test_format_rate() -> None:
    assert format_rate(200.0) == "200/s"
    assert format_rate(0.2) == "0.2/s"


@given(st.integers(min_value=0, max_value=MAX_UNIT_VALUE))
def test_duration_round_trip(ns: int) -> None:
    assert parse_duration(format_duration(ns)) == ns


@given(st.integers(min_value=0, max_value=MAX_UNIT_VALUE))
def test_size_round_trip(size: int) -> None:
    assert parse_size(format_size(size)) == size


@given(st.integers(min_value=0, max_value=MAX_UNIT_VALUE))
def test_bandwidth_round_trip(bits: int) -> None:
    assert parse_bandwidth(format_bandwidth(bits)) == bits


@given(st.floats(min_value=0, exclude_min=True, allow_infinity=False, allow_nan=False))
def test_rate_round_trip(rate: float) -> None:
    assert parse_rate(format_rate(rate)) == rate


@given(st.text(max_size=20))
def test_parsers_raise_only_unit_errors(text: str) -> None:
    for parse in (parse_duration, parse_size, parse_bandwidth, parse_rate):
        try:
            parse(text)
        except UnitError as err:
            assert err.hint


@given(st.sampled_from(["150ms", "2.5s", "0", "1h", "90s", "1500us"]))
def test_formatting_a_parsed_duration_is_canonical(text: str) -> None:
    canonical = format_duration(parse_duration(text))
    assert format_duration(parse_duration(canonical)) == canonical


class _Units(BaseModel):
    latency: Duration = 0
    size: Size = 0
    upload: Bandwidth = 0
    rate: Rate = 1.0


def test_pydantic_types_store_numbers_and_serialise_strings() -> None:
    model = _Units.model_validate(
        {"latency": "150ms", "size": "128KiB", "upload": "50Mbit", "rate": "12/min"}
    )
    assert (model.latency, model.size, model.upload) == (150_000_000, 131_072, 50_000_000)
    assert model.model_dump()["latency"] == 150_000_000
    assert model.model_dump(mode="json") == {
        "latency": "150ms",
        "size": "128KiB",
        "upload": "50Mbit",
        "rate": "0.2/s",
    }


def test_pydantic_error_carries_message_and_hint() -> None:
    with pytest.raises(ValidationError) as err:
        _Units.model_validate({"latency": "150 mss"})
    (error,) = err.value.errors()
    assert error["loc"] == ("latency",)
    assert error["ctx"]["message"] == "cannot read '150 mss' as a duration"
    assert "150ms" in error["ctx"]["hint"]
