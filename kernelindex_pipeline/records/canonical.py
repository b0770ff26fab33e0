"""RFC 8785 (JCS) canonical JSON and the kernelindex.dev digest.

`canonical_bytes` must equal the `rfc8785` package's output byte for byte; that
package costs about 40-50 µs per BenchmarkRun body, too slow for a million rows.
So a fast path writes the bytes, and the reference (`rfc8785`) takes over
wherever the fast path cannot vouch for its output:

* With `orjson` installed (the fast path, ~1 µs): orjson's compact, key-sorted
  output equals JCS except in a few places, all of which
  `_orjson_output_hazardous` finds in the output: whole floats (`2.0`,
  `-0.0`), exponent forms (`1e+16`, `1e-6`: ECMAScript writes
  10000000000000000 and 0.000001), NaN/inf (orjson
  writes `null`, JCS refuses them), and characters from U+E000 up, for which
  sorting by UTF-16 code units (JCS) and by code points (orjson) can disagree.
  orjson itself refuses non-string keys, integers beyond +-(2**53 - 1) and lone
  surrogates; those go to the reference too, which raises its own errors.
  At import, a sample of floats checks that this orjson lays numbers out as that
  check assumes; if not, the standard-library path is used instead.
* Without orjson (~15 µs): the standard library's C encoder (`sort_keys`,
  no whitespace, no ASCII escaping) after a walk that rewrites floats:

  - Python's `repr` and ECMAScript's Number::toString pick the same shortest
    round-trip digits and only lay them out differently: `repr` is positional
    for 1e-4 <= |f| < 1e16, ECMAScript for 1e-6 <= |f| < 1e21; `repr` adds
    ".0" to whole numbers; `repr` pads exponents to two digits (1e-07 vs 1e-7).
  - a non-whole float with |f| >= 1e-4 is the same text in both;
  - a whole float with |f| < 1e21 is ECMAScript's shortest digits then zeros,
    i.e. the text of an integer: it is replaced by that int (-0.0 becomes 0);
  - |f| >= 1e21 and 0 < |f| < 1e-9 are exponent forms with at least two
    exponent digits in both ("1e+21", "1e-10"): the same text;
  - 1e-9 <= |f| < 1e-4 (e.g. 1e-6 -> "0.000001", 1e-7 -> "1e-7") goes to the reference.

Objects that are not JSON values (Enum members, UUIDs) are written by orjson
where `rfc8785` would refuse them; records never contain such objects.

The tests compare every path with `rfc8785` (hypothesis over arbitrary JSON
values, known answers, and every seed manifest's digest).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from typing import Any

import rfc8785

from .units import MAX_SAFE_INTEGER, normal_spec

try:
    import orjson
except ImportError:  # optional speed-up: without it the standard-library path serves
    orjson = None

API_VERSION = "kernelindex.dev/v1alpha1"


class _NotSure(Exception):
    """The fast path cannot vouch for this value; the reference implementation decides."""


# ---------------------------------------------------------------- standard-library path

_ENCODER = json.JSONEncoder(
    ensure_ascii=False,
    check_circular=False,
    allow_nan=False,  # moot: non-finite floats never reach it
    sort_keys=True,
    separators=(",", ":"),
)
# From this code point up, UTF-16 code-unit order can differ from code-point order (against non-BMP).
_UTF16_ORDER_HAZARD = "\ue000"


def _ecmascript_whole(f: float) -> int:
    """The integer ECMAScript writes for a whole float with |f| < 1e21 (its shortest digits, then zeros)."""
    if abs(f) < 1e16:
        return int(f)  # repr is positional below 1e16, so the shortest digits are the exact integer
    mantissa, exponent = repr(abs(f)).split("e")
    digits = mantissa.replace(".", "")
    text = digits + "0" * (int(exponent) - (len(digits) - 1))
    return int(text) if f > 0 else -int(text)


def _float_needs_rewrite(f: float) -> bool:
    """True when repr(f) differs from ECMAScript but an int says it exactly; _NotSure when neither works."""
    if f != f or f in (math.inf, -math.inf):
        raise _NotSure
    magnitude = abs(f)
    if magnitude >= 1e21:
        return False
    if f.is_integer():
        return True
    if magnitude >= 1e-4 or magnitude < 1e-9:
        return False
    raise _NotSure


def _scan(value: Any) -> bool:
    """Walk a value: True if some float must be rewritten; _NotSure for anything the path cannot vouch for."""
    kind = type(value)
    if kind is str or value is None or kind is bool:
        return False
    if kind is int:
        if -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
            return False
        raise _NotSure
    if kind is float:
        return _float_needs_rewrite(value)
    if kind is dict:
        rewrite = False
        for key, item in value.items():
            if type(key) is not str or (not key.isascii() and max(key) >= _UTF16_ORDER_HAZARD):
                raise _NotSure
            if _scan(item):
                rewrite = True
        return rewrite
    if kind is list or kind is tuple:
        rewrite = False
        for item in value:
            if _scan(item):
                rewrite = True
        return rewrite
    raise _NotSure


def _rewrite(value: Any) -> Any:
    """A copy of a value that passed _scan, with floats ECMAScript writes as integers replaced by ints."""
    kind = type(value)
    if kind is float:
        if value.is_integer() and abs(value) < 1e21:
            return _ecmascript_whole(value)
        return value
    if kind is dict:
        return {key: _rewrite(item) for key, item in value.items()}
    if kind is list or kind is tuple:
        return [_rewrite(item) for item in value]
    return value


def _stdlib_canonical_bytes(value: Any) -> bytes:
    """Canonical bytes through the standard library's C encoder; _NotSure where it does not apply."""
    if _scan(value):
        value = _rewrite(value)
    try:
        return _ENCODER.encode(value).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: the reference reports it
        raise _NotSure from None


# ---------------------------------------------------------------- orjson path

# What orjson writes differently from JCS, found in its output by a few literal-led patterns
# (one combined alternation is ~10x slower: it cannot skip ahead to a literal).
# "2.0", "-0.0" (ECMAScript: 2, 0), and a positional number below 1e-6 should some orjson write one:
_WHOLE_OR_TINY_FLOAT = re.compile(rb"\.0(?:[,\]}]|$|00000)")
_EXPONENT = re.compile(rb"e[-+][0-9]")  # "1e+16", "1e-6" (ECMAScript: 10000000000000000, 0.000001)
_NULL = re.compile(rb"null")  # orjson writes NaN and infinities as null; JCS refuses them
_FROM_U_E000 = re.compile(rb"[\xee-\xf4]")  # UTF-8 lead bytes of U+E000 and up: UTF-16 key order


def _orjson_output_hazardous(out: bytes) -> bool:
    """Whether orjson's output may differ from JCS (false alarms only cost the reference path)."""
    return (
        _WHOLE_OR_TINY_FLOAT.search(out) is not None
        or _EXPONENT.search(out) is not None
        or _NULL.search(out) is not None
        or (not out.isascii() and _FROM_U_E000.search(out) is not None)
    )


if orjson is not None:
    _ORJSON_OPTIONS = (
        orjson.OPT_SORT_KEYS
        | orjson.OPT_STRICT_INTEGER  # refuse integers beyond +-(2**53 - 1), as rfc8785 does
        | orjson.OPT_PASSTHROUGH_SUBCLASS  # str/int/dict/list subclasses go to the reference
        | orjson.OPT_PASSTHROUGH_DATACLASS
        | orjson.OPT_PASSTHROUGH_DATETIME
    )


def _orjson_canonical_bytes(value: Any) -> bytes:
    """Canonical bytes through orjson; _NotSure where the output may differ from JCS."""
    try:
        out = orjson.dumps(value, option=_ORJSON_OPTIONS)
    except TypeError:  # non-str key, integer beyond 2**53 - 1, lone surrogate, other types
        raise _NotSure from None
    if _orjson_output_hazardous(out):
        raise _NotSure
    return out


# Floats around every boundary of the layouts involved (repr, orjson, ECMAScript).
LAYOUT_SAMPLES = (
    0.1,
    0.5,
    2.5,
    -3.25,
    94.83366394042969,
    2.2900800704956055,
    123456.789,
    9007199254740.5,
    1e-4,
    9.999999999999999e-05,
    1e-5,
    1.5e-5,
    9.5e-6,
    1e-6,
    9.99e-7,
    1e-7,
    1.5e-7,
    -1e-7,
    1e-9,
    9.999999999999999e-10,
    1e-10,
    5e-324,
    0.0,
    -0.0,
    2.0,
    1e15,
    9007199254740993.0,
    1e16,
    2.0**60,
    1e20,
    1e21,
    1.5e300,
    1.7976931348623157e308,
)


def _orjson_agrees_with_reference() -> bool:
    """Whether this orjson lays out floats as _orjson_output_hazardous assumes (checked once, at import)."""
    for sample in LAYOUT_SAMPLES:
        for value in (sample, [sample], {"k": sample}):
            try:
                out = _orjson_canonical_bytes(value)
            except _NotSure:
                continue
            if out != rfc8785.dumps(value):
                return False
    return True


if orjson is not None and _orjson_agrees_with_reference():
    _fast_canonical_bytes = _orjson_canonical_bytes
    FAST_PATH = "orjson"
else:
    _fast_canonical_bytes = _stdlib_canonical_bytes
    FAST_PATH = "stdlib"


# ---------------------------------------------------------------- public API


def canonical_bytes(value: Any) -> bytes:
    """The RFC 8785 canonical UTF-8 bytes of a JSON value.

    Raises `rfc8785.CanonicalizationError` (or a subclass: `FloatDomainError` for
    NaN/inf, `IntegerDomainError` for integers beyond +-(2**53 - 1)) for values JCS cannot write.
    """
    try:
        return _fast_canonical_bytes(value)
    except _NotSure:
        return rfc8785.dumps(value)


def canonical_json(value: Any) -> str:
    """The RFC 8785 canonical JSON text of a value."""
    return canonical_bytes(value).decode("utf-8")


def digest_of(manifest: dict[str, Any]) -> str:
    """`sha256:<hex>` over the canonical JSON of {apiVersion, kind, spec}; metadata never counts.

    The spec is taken in KernelIndex's normal form (records/units.py: durations in integer ns, set-like
    lists sorted), since KernelIndex digests the manifest its schemas parsed, not the text it was given."""
    spec = normal_spec(manifest["kind"], manifest["spec"])
    body = {"apiVersion": manifest["apiVersion"], "kind": manifest["kind"], "spec": spec}
    return "sha256:" + hashlib.sha256(canonical_bytes(body)).hexdigest()
