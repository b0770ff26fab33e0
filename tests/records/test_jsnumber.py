"""ECMAScript number semantics: Number(), JSON.parse, Math.round and Number#toString."""

from __future__ import annotations

import math

import pytest
import rfc8785
from hypothesis import given
from hypothesis import strategies as st

from kernelindex_pipeline.records.jsnumber import (
    JSParseError,
    is_positive_integer,
    js_json_parse,
    js_number,
    js_number_text,
    js_round,
    ms_to_ns,
    whole,
)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("", 0.0),
        ("   ", 0.0),
        (" 64 ", 64.0),
        ("\t64\n", 64.0),
        ("\u00a064\ufeff", 64.0),
        ("1e3", 1000.0),
        ("1E3", 1000.0),
        ("0x40", 64.0),
        ("0X40", 64.0),
        ("0o17", 15.0),
        ("0b101", 5.0),
        ("Infinity", math.inf),
        ("-Infinity", -math.inf),
        ("+Infinity", math.inf),
        ("1.", 1.0),
        (".5", 0.5),
        ("-0", -0.0),
        ("+5", 5.0),
        ("1e400", math.inf),
        ("0.1", 0.1),
        ("007", 7.0),
    ],
)
def test_number_known_answers(text, expected):
    assert js_number(text) == expected


@pytest.mark.parametrize(
    "text",
    ["inf", "nan", "NaN", "infinity", "1_000", "0x", "-0x40", "1e", "e5", ".", "1.5.2", "١٢", "1 2", "0x1.8", "\x1c5"],
)
def test_number_nan(text):
    assert math.isnan(js_number(text))


def test_round_halves_up_unlike_python():
    assert js_round(0.5) == 1 and round(0.5) == 0
    assert js_round(2.5) == 3 and round(2.5) == 2
    assert js_round(-2.5) == -2
    assert js_round(-0.5) == 0 and math.copysign(1, js_round(-0.5)) == -1  # Math.round(-0.5) is -0
    assert js_round(0.49999999999999994) == 0  # floor(x + 0.5) would say 1
    assert js_round(4503599627370495.5) == 4503599627370496
    assert math.isnan(js_round(math.nan)) and js_round(math.inf) == math.inf


def test_ms_to_ns():
    assert ms_to_ns(94.83366394042969) == 94833664
    assert ms_to_ns(7.958672523498535) == 7958673
    assert ms_to_ns(0.0000005) == 1  # 0.5 ns rounds up
    assert type(ms_to_ns(1.0)) is int


def test_json_parse_is_javascript_json():
    assert js_json_parse('{"a": 4096.0, "b": 1e3, "c": -0.0}') == {"a": 4096, "b": 1000, "c": 0}
    assert type(js_json_parse("4096.0")) is int
    assert js_json_parse("9007199254740993") == 9007199254740992  # a double, like JavaScript
    assert js_json_parse("1e400") == math.inf
    assert js_json_parse("null") is None
    assert js_json_parse('{"a": 1, "a": 2}') == {"a": 2}
    for bad in [
        "NaN",
        "Infinity",
        "-Infinity",
        '{"a": NaN}',
        "",
        "{'a': 1}",
        "{a: 1}",
        "[1,]",
        "\ufeff{}",
        "1 2",
        '"\x01"',
    ]:
        with pytest.raises(JSParseError):
            js_json_parse(bad)
    assert js_json_parse("1" * 5000) == math.inf  # no Python int-size error


def test_positive_integer():
    assert is_positive_integer(1) and is_positive_integer(1024.0)
    assert not is_positive_integer(0) and not is_positive_integer(1.5) and not is_positive_integer(True)
    assert not is_positive_integer(math.inf) and not is_positive_integer(math.nan) and not is_positive_integer("1")


def test_whole():
    assert whole(4096.0) == 4096 and type(whole(4096.0)) is int
    assert type(whole(1e21)) is float and whole(True) is True and whole(1.5) == 1.5


@pytest.mark.parametrize(
    "value, text",
    [
        (1e-6, "0.000001"),
        (1e-7, "1e-7"),
        (1e21, "1e+21"),
        (1e20, "100000000000000000000"),
        (-0.0, "0"),
        (2.0, "2"),
        (1.5e-7, "1.5e-7"),
        (123456789012345680000.0, "123456789012345680000"),
        (5e-324, "5e-324"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (0.1, "0.1"),
        (9007199254740991, "9007199254740991"),
        (2**60, "1152921504606847000"),
        (1e16, "10000000000000000"),
        (-1.25e-5, "-0.0000125"),
    ],
)
def test_number_text_known_answers(value, text):
    assert js_number_text(value) == text


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_number_text_equals_rfc8785(value):
    assert js_number_text(value) == rfc8785.dumps(value).decode()


@given(st.integers(min_value=-(2**53 - 1), max_value=2**53 - 1))
def test_integer_text_equals_rfc8785(value):
    assert js_number_text(value) == rfc8785.dumps(value).decode()


def test_number_text_refuses_non_finite():
    for value in (math.nan, math.inf, -math.inf):
        with pytest.raises(ValueError):
            js_number_text(value)
