"""KernelIndex's normal form of a manifest: what its schemas turn a spec into before it digests it.

KernelIndex digests the *parsed* manifest (`specDigest(parseManifestDocument(m))`, apps/web/src/schemas
in SamMausberg/KernelIndex), and parsing normalises two things (its §9.2 steps 3 and 4):

* durations (`durationNs` in schemas/common.ts): BenchmarkProtocol `measurement.warmupDuration` and
  BenchmarkRun `timing.latencyNs.{median, mean, p05, p95, minimum, maximum, mad, confidence95}` become
  integer nanoseconds: "25 ms" -> 25000000, "0.5 us" -> 500; a value that does not land on a whole
  nanosecond is ambiguous and rejected;
* set-like lists (`setLike`): ImplementationRevision `support.{hardwareArchitectures, productsTested,
  axes, dtypes, layouts}` are deduplicated and sorted (by UTF-16 code units, JavaScript's `<`).

A digest over anything else is a "digest mismatch" there, which rejects the whole bundle. So
`digest_of` digests this normal form, and builders write it (records hold what KernelIndex stores).
Every other unit-bearing field we write is already canonical in KernelIndex's terms and is not
transformed by it: `measurements[].value` with its `unit` (ns, bytes), `hardware.memoryBytes`,
`settings.powerLimitWatts` (tests/catalogue/test_kernelindex.py, test_the_sweeps_unit_bearing_fields_are_written_in_kernelindex_units, checks them).

Hand-written: this is KernelIndex's own parsing rule, which no library implements.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

# schemas/common.ts DURATION_UNIT_NS and its pattern (one optional space, µ as U+00B5)
DURATION_UNIT_NS = {"ns": 1, "us": 10**3, "µs": 10**3, "ms": 10**6, "s": 10**9}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s?(ns|us|µs|ms|s)")
# JSON numbers are IEEE doubles (JavaScript's Number.MAX_SAFE_INTEGER): RFC 8785 cannot write a larger
# integer exactly. The one home of this bound: the lowest module of records/, which imports nothing of ours.
MAX_SAFE_INTEGER = 2**53 - 1
LATENCY_FIELDS = ("median", "mean", "p05", "p95", "minimum", "maximum", "mad")
SET_LIKE_SUPPORT_FIELDS = ("hardwareArchitectures", "productsTested", "axes", "dtypes", "layouts")


class AmbiguousDuration(ValueError):
    """A duration KernelIndex rejects: not `<number> ns|us|µs|ms|s`, or not a whole nanosecond count."""


def duration_ns(value: int | str) -> int:
    """A duration as KernelIndex stores it: integer nanoseconds.

    KernelIndex computes `Number(digits) * unit` in doubles; a product that is not a safe integer is
    rejected. Decimal arithmetic gives the exact product, so a value that is whole only by double
    rounding (e.g. "0.0000001 ms") is refused here too rather than silently rounded.
    """
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise AmbiguousDuration(f"duration {value!r}: expected an integer count of ns or a text like '25 ms'")
    if isinstance(value, int):
        if 0 <= value <= MAX_SAFE_INTEGER:
            return value
        raise AmbiguousDuration(f"duration {value}: not 0..2**53-1 ns")
    match = _DURATION.fullmatch(value)
    if match is None:
        raise AmbiguousDuration(f"duration {value!r}: expected '<number> ns|us|ms|s'")
    exact = Decimal(match[1]) * DURATION_UNIT_NS[match[2]]
    if exact != exact.to_integral_value() or exact > MAX_SAFE_INTEGER:
        raise AmbiguousDuration(f"duration {value!r} is not a whole number of nanoseconds")
    return int(exact)


def _normal_duration(value: Any) -> Any:
    """`duration_ns(value)`, or the value unchanged where KernelIndex rejects it (the schema check names it)."""
    try:
        return duration_ns(value)
    except AmbiguousDuration:
        return value


def _utf16_key(text: str) -> bytes:
    return text.encode("utf-16-be")  # JavaScript compares strings by UTF-16 code units


def _latency_normal(latency: dict[str, Any]) -> dict[str, Any] | None:
    changed = None
    for name in LATENCY_FIELDS:
        value = latency.get(name)
        if value is not None and type(value) is not int:
            changed = changed or dict(latency)
            changed[name] = _normal_duration(value)
    interval = latency.get("confidence95")
    if interval is not None and any(type(v) is not int for v in interval):
        changed = changed or dict(latency)
        changed["confidence95"] = [_normal_duration(v) for v in interval] if isinstance(interval, list) else interval
    return changed


def normal_spec(kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    """`spec` in KernelIndex's normal form (the same object when it already is; cheap on that path)."""
    if kind == "BenchmarkRun":
        timing = spec.get("timing")
        latency = timing.get("latencyNs") if isinstance(timing, dict) else None
        latency = _latency_normal(latency) if isinstance(latency, dict) else None
        return spec if latency is None else {**spec, "timing": {**timing, "latencyNs": latency}}
    if kind == "BenchmarkProtocol":
        measurement = spec.get("measurement")
        warmup = measurement.get("warmupDuration") if isinstance(measurement, dict) else None
        if warmup is None or type(warmup) is int:
            return spec
        return {**spec, "measurement": {**measurement, "warmupDuration": _normal_duration(warmup)}}
    if kind == "ImplementationRevision":
        support = spec.get("support")
        if not isinstance(support, dict):
            return spec
        normal = {
            name: sorted(set(values), key=_utf16_key)
            if name in SET_LIKE_SUPPORT_FIELDS and isinstance(values, list) and all(isinstance(v, str) for v in values)
            else values
            for name, values in support.items()
        }
        return spec if normal == support else {**spec, "support": normal}
    return spec


def normal_form(manifest: dict[str, Any]) -> dict[str, Any]:
    """The manifest as KernelIndex stores it after parsing (metadata untouched)."""
    spec = normal_spec(manifest["kind"], manifest["spec"])
    return manifest if spec is manifest["spec"] else {**manifest, "spec": spec}
