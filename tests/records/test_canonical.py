"""The fast canonical paths must write exactly what the `rfc8785` package writes."""

from __future__ import annotations

import hashlib
import json
import math

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from kernelindex_pipeline.records import canonical
from kernelindex_pipeline.records.canonical import canonical_bytes, canonical_json, digest_of
from kernelindex_pipeline.records.units import normal_spec
from tests.support import FIXTURES
from tests.support.json_paths import leaf_paths, replaced

SEED_BUNDLES = json.loads((FIXTURES / "seed-bundles.json").read_text(encoding="utf-8"))
SEED_MANIFESTS = [entry for bundle in SEED_BUNDLES for entry in bundle["manifests"]]


def _with_fast_path(fast_path):
    """canonical_bytes with the given fast path, falling back to the reference as the module does."""

    def encode(value):
        try:
            return fast_path(value)
        except canonical._NotSure:
            return rfc8785.dumps(value)

    return encode


# Every implementation the module may use: whichever fast path it chose, and each one explicitly.
IMPLEMENTATIONS = {"chosen": canonical_bytes, "stdlib": _with_fast_path(canonical._stdlib_canonical_bytes)}
if canonical.orjson is not None:
    IMPLEMENTATIONS["orjson"] = _with_fast_path(canonical._orjson_canonical_bytes)


@pytest.fixture(params=sorted(IMPLEMENTATIONS))
def encode(request):
    return IMPLEMENTATIONS[request.param]


def _outcome(function, value):
    """Bytes, or the exception type (so error behaviour is compared too)."""
    try:
        return function(value)
    except rfc8785.CanonicalizationError as error:
        return type(error)


# ---------------------------------------------------------------- known answers

NUMBER_CASES = [
    (1e-6, "0.000001"),
    (1e-7, "1e-7"),
    (1.5e-7, "1.5e-7"),
    (1e-5, "0.00001"),
    (1.5e-5, "0.000015"),
    (1e-9, "1e-9"),
    (1e-10, "1e-10"),
    (1e21, "1e+21"),
    (1e20, "100000000000000000000"),
    (1e16, "10000000000000000"),
    (2.0**60, "1152921504606847000"),
    (1.5e300, "1.5e+300"),
    (5e-324, "5e-324"),
    (1.7976931348623157e308, "1.7976931348623157e+308"),
    (-0.0, "0"),
    (0.0, "0"),
    (2.0, "2"),
    (-2.0, "-2"),
    (4096.0, "4096"),
    (0.1, "0.1"),
    (-3.25, "-3.25"),
    (94.83366394042969, "94.83366394042969"),
    (2**53 - 1, "9007199254740991"),
    (-(2**53 - 1), "-9007199254740991"),
    (9007199254740993.0, "9007199254740992"),  # the float nearest 2**53 + 1
    (True, "true"),
    (False, "false"),
    (None, "null"),
]


@pytest.mark.parametrize(("value", "expected"), NUMBER_CASES, ids=[repr(case[0]) for case in NUMBER_CASES])
def test_numbers_are_written_the_ecmascript_way(encode, value, expected):
    assert encode(value).decode() == expected
    assert encode([value]).decode() == f"[{expected}]"
    assert encode({"k": value}).decode() == f'{{"k":{expected}}}'


@pytest.mark.parametrize("value", [2**53, -(2**53), 10**30])
def test_integers_beyond_the_safe_range_are_refused(encode, value):
    with pytest.raises(rfc8785.IntegerDomainError):
        encode({"n": value})


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_nan_and_infinity_are_refused(encode, value):
    with pytest.raises(rfc8785.FloatDomainError):
        encode({"x": [value]})


def test_non_string_keys_and_lone_surrogates_are_refused(encode):
    with pytest.raises(rfc8785.CanonicalizationError):
        encode({1: "a"})
    with pytest.raises(rfc8785.CanonicalizationError):
        encode({"a": "\ud800"})


def test_strings_are_escaped_minimally(encode):
    text = '\x00\x01\b\t\n\x0b\f\r\x1f\x7f "\\ / \u2028 \u2029 é \U0001f600'
    expected = '"\\u0000\\u0001\\b\\t\\n\\u000b\\f\\r\\u001f\x7f \\"\\\\ / \u2028 \u2029 é \U0001f600"'
    assert encode(text) == expected.encode("utf-8")


def test_keys_sort_by_utf16_code_units(encode):
    # U+1F600 is D83D DE00 in UTF-16, which sorts before U+FFFF; code-point order says the opposite.
    value = {"\uffff": 1, "\U0001f600": 2, "b": 3, "a": 4, "é": 5, "\ue000": 6}
    assert encode(value).decode() == '{"a":4,"b":3,"é":5,"\U0001f600":2,"\ue000":6,"\uffff":1}'


def test_canonical_json_is_the_text_of_canonical_bytes():
    value = {"b": [1, 2.5, "é"], "a": None}
    assert canonical_json(value) == '{"a":null,"b":[1,2.5,"é"]}'
    assert canonical_json(value).encode() == canonical_bytes(value)


# ---------------------------------------------------------------- equality with rfc8785

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53) - 10, max_value=2**53 + 10)
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.floats(min_value=-1e-3, max_value=1e-3)
    | st.floats(min_value=1e15, max_value=1e22)
    | st.integers(min_value=-(10**6), max_value=10**6).map(float)
    | st.text()
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=6) | st.dictionaries(st.text(max_size=6), children, max_size=6),
    max_leaves=30,
)


@settings(max_examples=600, deadline=None)
@given(json_values)
def test_every_path_equals_rfc8785_on_arbitrary_json(value):
    expected = _outcome(rfc8785.dumps, value)
    for function in IMPLEMENTATIONS.values():
        assert _outcome(function, value) == expected


@settings(max_examples=300, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_every_path_equals_rfc8785_on_any_finite_float(value):
    expected = rfc8785.dumps({"v": [value]})
    for function in IMPLEMENTATIONS.values():
        assert function({"v": [value]}) == expected


@pytest.mark.parametrize("sample", canonical.LAYOUT_SAMPLES)
def test_layout_samples_agree(encode, sample):
    assert encode(sample) == rfc8785.dumps(sample)


# ---------------------------------------------------------------- the seed manifests


@pytest.mark.parametrize(
    "entry",
    SEED_MANIFESTS,
    ids=[f"{e['manifest']['kind']}-{e['manifest']['metadata']['name'][:40]}" for e in SEED_MANIFESTS],
)
def test_every_seed_manifest_digest_recomputes(encode, entry):
    manifest = entry["manifest"]
    body = {"apiVersion": manifest["apiVersion"], "kind": manifest["kind"], "spec": manifest["spec"]}
    assert encode(body) == rfc8785.dumps(body)
    assert digest_of(manifest) == entry["digest"]


def test_seed_bundles_cover_all_seven_kinds():
    assert {entry["manifest"]["kind"] for entry in SEED_MANIFESTS} == {
        "SoftwareProject",
        "OperationSpec",
        "WorkloadCase",
        "ImplementationRevision",
        "BenchmarkProtocol",
        "ExecutionEnvironment",
        "BenchmarkRun",
    }


def test_metadata_never_enters_the_digest():
    manifest = json.loads(json.dumps(SEED_MANIFESTS[-1]["manifest"]))
    before = digest_of(manifest)
    manifest["metadata"]["title"] = "something else"
    assert digest_of(manifest) == before
    manifest["spec"]["status"] = "revoked"
    assert digest_of(manifest) != before


def test_float_bearing_spec_digest_matches_the_reference():
    # A workload case with an epsilon scalar and whole-float values, as JSON might give them.
    manifest = {
        "apiVersion": canonical.API_VERSION,
        "kind": "WorkloadCase",
        "spec": {"scalars": {"eps": {"dtype": "fp32", "value": 1e-6}, "beta": {"dtype": "fp32", "value": 1.0}}},
    }
    body = {"apiVersion": manifest["apiVersion"], "kind": manifest["kind"], "spec": manifest["spec"]}
    assert b'"value":0.000001' in canonical_bytes(body)
    assert b'"value":1}' in canonical_bytes(body)
    assert canonical_bytes(body) == rfc8785.dumps(body)


def test_containers_the_fast_paths_do_not_take_still_match_the_reference(encode):
    from collections import OrderedDict

    class Text(str):
        pass

    deep: object = 1.5
    for _ in range(300):  # deeper than orjson's recursion limit
        deep = {"d": [deep]}
    for value in (OrderedDict(b=1, a=2.0), {"k": Text("v"), Text("j"): (1, 2.0)}, deep, ("a", 1e-7)):
        assert encode(value) == rfc8785.dumps(value)


def test_strings_that_look_like_hazards_are_still_exact(encode):
    # Text such as "2.0," or "null" or "1e-6" inside strings only sends orjson's output to the reference.
    value = {"a": "x 2.0, 1e-6 null \ue000", "b": 94.83366394042969, "c": [1, 2.5]}
    assert encode(value) == rfc8785.dumps(value)


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_mutated_seed_manifests_of_every_kind_digest_like_the_reference(data):
    entry = data.draw(st.sampled_from(SEED_MANIFESTS))
    manifest = entry["manifest"]
    path = data.draw(st.sampled_from(list(leaf_paths(manifest["spec"]))))
    spec = replaced(manifest["spec"], path, data.draw(json_values))
    body = {"apiVersion": manifest["apiVersion"], "kind": manifest["kind"], "spec": spec}
    expected = _outcome(rfc8785.dumps, body)
    for function in IMPLEMENTATIONS.values():
        assert _outcome(function, body) == expected
    # the digest is KernelIndex's: over the spec its schemas parse to (records/units.py), e.g. "25 ms" -> 25000000
    normal = {**body, "spec": normal_spec(manifest["kind"], spec)}
    expected = _outcome(rfc8785.dumps, normal)
    if isinstance(expected, bytes):
        assert digest_of({**manifest, "spec": spec}) == "sha256:" + hashlib.sha256(expected).hexdigest()
