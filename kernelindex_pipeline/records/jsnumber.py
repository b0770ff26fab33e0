"""ECMAScript number semantics, because the catalogue's reference importer is TypeScript.

Three things must behave exactly as JavaScript does for the records to hash the same:

* `js_number(s)`      -- `Number(s)` on a CSV cell ("" -> 0, " 64 " -> 64, "0x40" -> 64, "inf" -> NaN).
* `js_json_parse(s)`  -- `JSON.parse(s)`: NaN/Infinity literals rejected, every number a double.
* `js_round(x)`       -- `Math.round(x)`: halves go up (towards +inf), unlike Python's `round`.

and `js_number_text(x)` writes a double the way `Number.prototype.toString` (and so RFC 8785) does.

A JSON or CSV number that is whole and within 2**53 is used as a Python `int` everywhere
(`whole(4096.0) == 4096`), so case keys, names and axes read `4096`, never `4096.0`.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from kernelindex_pipeline.records.units import MAX_SAFE_INTEGER

# StrWhiteSpaceChar: WhiteSpace and LineTerminator of ECMA-262 (Unicode "Zs" plus a few controls).
_JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
# StrDecimalLiteral: optional sign, then Infinity or digits with optional fraction/exponent.
# No underscores, no "inf"/"nan" spellings (Python's float() accepts those; JavaScript does not).
_DECIMAL = re.compile(r"[+-]?(?:Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)\Z")
_NON_DECIMAL = re.compile(r"0(?:[xX][0-9a-fA-F]+|[oO][0-7]+|[bB][01]+)\Z")
_RADIX = {"x": 16, "o": 8, "b": 2}


def js_number(text: str) -> float:
    """`Number(text)` for a string, as a Python float (NaN where JavaScript gives NaN)."""
    s = text.strip(_JS_WHITESPACE)
    if not s:
        return 0.0
    if _DECIMAL.match(s):
        if s.endswith("Infinity"):
            return -math.inf if s[0] == "-" else math.inf
        return float(s)  # correctly rounded, like JavaScript; overflow gives +-inf like JavaScript
    if _NON_DECIMAL.match(s):
        return float(int(s[2:], _RADIX[s[1].lower()]))  # int -> double rounds to nearest, ties to even
    return math.nan


def whole(value: Any) -> Any:
    """A float that is a whole number within +-2**53 becomes an int (JavaScript has one number type).

    Larger whole floats stay floats: as doubles they print like `1e+21`, which is what JavaScript writes.
    Booleans and other types pass through unchanged.
    """
    if type(value) is float and value.is_integer() and -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
        return int(value)
    return value


def is_number(value: Any) -> bool:
    """A JSON number (never a boolean: `true` is not `1` in JavaScript's typeof)."""
    t = type(value)
    return t is int or t is float


def is_positive_integer(value: Any) -> bool:
    """`Number.isInteger(v) && v > 0`."""
    t = type(value)
    if t is int:
        return value > 0
    if t is float:
        return value > 0 and value.is_integer()  # inf.is_integer() is False
    return False


def js_round(x: float) -> float:
    """`Math.round(x)`: nearest integer, halves towards +infinity. NaN and infinities pass through.

    `math.floor(x + 0.5)` would be wrong for 0.49999999999999994 (the sum rounds up to 1.0);
    `x - floor(x)` is exact for doubles, so comparing it with 0.5 is safe.
    """
    if not math.isfinite(x):
        return x
    f = math.floor(x)
    r = float(f + 1) if x - f >= 0.5 else float(f)
    if r == 0 and (x < 0 or (x == 0 and math.copysign(1.0, x) < 0)):
        return -0.0  # Math.round(-0.4) is -0; it prints as 0 in JSON anyway
    return r


def ms_to_ns(ms: float) -> int | float:
    """Milliseconds to whole nanoseconds as the reference does: `Math.round(ms * 1e6)`."""
    return whole(js_round(ms * 1e6))


# ---------------------------------------------------------------------------------------- JSON.parse


class JSParseError(ValueError):
    """The text is not JSON under JavaScript's `JSON.parse` rules."""


def _reject_constant(name: str) -> Any:
    raise JSParseError(f"{name} is not JSON")


def _parse_int(digits: str) -> int | float:
    # JavaScript keeps every number as a double: integers beyond 2**53 lose precision exactly as
    # float() loses it. Very long digit strings go straight to float (Python caps int() at 4300 digits).
    if len(digits) > 300:
        return float(digits)
    n = int(digits)
    if -MAX_SAFE_INTEGER <= n <= MAX_SAFE_INTEGER:
        return n
    return whole(float(n))


def _parse_float(text: str) -> int | float:
    return whole(float(text))


_DECODER = json.JSONDecoder(parse_float=_parse_float, parse_int=_parse_int, parse_constant=_reject_constant)


def js_json_parse(text: str) -> Any:
    """`JSON.parse(text)`; raises JSParseError where JavaScript throws SyntaxError.

    Python's decoder already matches JSON.parse on whitespace (space, tab, CR, LF only), on control
    characters inside strings and on duplicate keys (last wins); NaN/Infinity are refused here.
    Whole numbers come back as ints.
    """
    try:
        return _DECODER.decode(text)
    except JSParseError:
        raise
    except (ValueError, RecursionError) as exc:  # json.JSONDecodeError is a ValueError
        raise JSParseError(str(exc)) from None


# --------------------------------------------------------------------------- Number.prototype.toString


def js_number_text(value: int | float) -> str:
    """The text JavaScript (and RFC 8785) writes for a number: `1e-6` -> `0.000001`, `1e21` -> `1e+21`.

    Raises ValueError for NaN and infinities, which JSON cannot carry.
    """
    if type(value) is int:
        if -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
            return str(value)
        value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{value!r} is not a finite number and cannot be written as JSON")
    if value == 0:
        return "0"  # also -0
    r = repr(value)
    if 1e-4 <= abs(value) < 1e16:  # repr writes these in plain notation, as JavaScript does
        return r[:-2] if r.endswith(".0") else r
    # General case: take the shortest round-trip digits from repr and lay them out the JavaScript way.
    sign = ""
    if r[0] == "-":
        sign, r = "-", r[1:]
    mantissa, _, exp_text = r.partition("e")
    exponent = int(exp_text) if exp_text else 0
    int_part, _, frac_part = mantissa.partition(".")
    digits = (int_part + frac_part).lstrip("0")
    # position of the decimal point relative to the first significant digit
    n = (
        len(int_part.lstrip("0")) + exponent
        if int_part.strip("0")
        else exponent - (len(frac_part) - len(frac_part.lstrip("0")))
    )
    digits = digits.rstrip("0")
    k = len(digits)
    if k <= n <= 21:
        out = digits + "0" * (n - k)
    elif 0 < n <= 21:
        out = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        out = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        exp = ("+" if e >= 0 else "-") + str(abs(e))
        out = (digits if k == 1 else digits[0] + "." + digits[1:]) + "e" + exp
    return sign + out
