"""The strict schema: every seed manifest is valid; targeted mutations are problems naming record and field."""

from __future__ import annotations

import copy
import json

import pytest

from kernelindex_pipeline.records.schema import (
    KINDS,
    InvalidRecords,
    Problem,
    ensure_valid,
    json_schema,
    json_schemas,
    validate_manifest,
)
from tests.support import FIXTURES
from tests.support.json_paths import every_path, replaced

SEED_BUNDLES = json.loads((FIXTURES / "seed-bundles.json").read_text(encoding="utf-8"))
SEED_MANIFESTS = [entry["manifest"] for bundle in SEED_BUNDLES for entry in bundle["manifests"]]


def _seed(kind: str) -> dict:
    return copy.deepcopy(next(m for m in SEED_MANIFESTS if m["kind"] == kind))


@pytest.mark.parametrize("manifest", SEED_MANIFESTS, ids=[f"{m['kind']}-{i}" for i, m in enumerate(SEED_MANIFESTS)])
def test_every_seed_manifest_is_valid(manifest):
    assert validate_manifest(manifest) == []


def test_kinds_are_in_dependency_order():
    assert KINDS == (
        "SoftwareProject",
        "OperationSpec",
        "WorkloadCase",
        "ImplementationRevision",
        "BenchmarkProtocol",
        "ExecutionEnvironment",
        "BenchmarkRun",
    )


def test_unknown_kind_and_api_version_are_problems_not_exceptions():
    problems = validate_manifest({"apiVersion": "kernelindex.dev/v2", "kind": "Nope", "metadata": {"name": "x"}})
    assert [(p.record, p.field) for p in problems] == [("Nope/x", "kind"), ("Nope/x", "apiVersion")]
    run = _seed("BenchmarkRun")
    run["apiVersion"] = "kernelindex.dev/v2"
    assert [p.field for p in validate_manifest(run)] == ["apiVersion"]
    assert [p.field for p in validate_manifest("not a manifest")] == [""]


def test_problem_names_record_and_field_in_one_line():
    run = _seed("BenchmarkRun")
    run["spec"]["timing"]["latencyNs"]["median"] = -1
    (problem,) = validate_manifest(run)
    assert isinstance(problem, Problem)
    assert problem.record == f"BenchmarkRun/{run['metadata']['name']}"
    assert problem.field == "spec.timing.latencyNs.median"
    assert str(problem).startswith(f"{problem.record}: spec.timing.latencyNs.median: ")
    assert "\n" not in str(problem)


def test_ensure_valid_raises_with_every_problem():
    good = _seed("SoftwareProject")
    bad_one = _seed("BenchmarkRun")
    bad_one["spec"]["status"] = "great"
    bad_two = _seed("WorkloadCase")
    del bad_two["spec"]["axes"]
    assert ensure_valid([good]) is None
    with pytest.raises(InvalidRecords) as caught:
        ensure_valid([good, bad_one, bad_two])
    assert [(p.record.split("/")[0], p.field) for p in caught.value.problems] == [
        ("BenchmarkRun", "spec.status"),
        ("WorkloadCase", "spec.axes"),
    ]
    assert "spec.status" in str(caught.value)


def test_json_schemas_cover_every_kind():
    schemas = json_schemas()
    assert list(schemas) == list(KINDS)
    for kind, schema in schemas.items():
        assert schema["title"] == kind
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        assert schema == json_schema(kind)


# ---------------------------------------------------------------- targeted mutations


def _set(path: str, value):
    """A mutation that sets the value at a dotted path ('spec.measurements.0.value')."""

    def mutate(manifest):
        *parents, last = path.split(".")
        node = manifest
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value

    return mutate


def _delete(path: str):
    def mutate(manifest):
        *parents, last = path.split(".")
        node = manifest
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        del node[last]

    return mutate


A_DIGEST = "sha256:" + "ab" * 32

# (kind, mutation, the field the problem must name). Each leaves every other field valid.
MUTATIONS = [
    # unknown fields at every level
    ("BenchmarkRun", _set("extra", 1), "extra"),
    ("BenchmarkRun", _set("metadata.owner", "me"), "metadata.owner"),
    ("BenchmarkRun", _set("spec.extra", 1), "spec.extra"),
    ("BenchmarkRun", _set("spec.timing.extra", 1), "spec.timing.extra"),
    ("BenchmarkRun", _set("spec.timing.latencyNs.p50", 1), "spec.timing.latencyNs.p50"),
    ("BenchmarkRun", _set("spec.measurements.0.extra", 1), "spec.measurements[0].extra"),
    ("BenchmarkRun", _set("spec.sourceNative.extra", 1), "spec.sourceNative.extra"),
    ("SoftwareProject", _set("spec.host.extra", 1), "spec.host.extra"),
    ("OperationSpec", _set("spec.inputs.0.tensor.extra", 1), "spec.inputs[0].tensor.extra"),
    ("OperationSpec", _set("spec.axes.batch.extra", 1), "spec.axes.batch.extra"),
    ("WorkloadCase", _set("spec.tensors.advantages.extra", 1), "spec.tensors.advantages.extra"),
    ("ImplementationRevision", _set("spec.support.extra", 1), "spec.support.extra"),
    ("BenchmarkProtocol", _set("spec.measurement.extra", 1), "spec.measurement.extra"),
    ("ExecutionEnvironment", _set("spec.hardware.extra", 1), "spec.hardware.extra"),
    ("ExecutionEnvironment", _set("spec.software.extra", 1), "spec.software.extra"),
    # missing required fields
    ("BenchmarkRun", _delete("spec.observedAt"), "spec.observedAt"),
    ("BenchmarkRun", _delete("metadata.name"), "metadata.name"),
    ("BenchmarkRun", _delete("spec.timing.latencyNs"), "spec.timing.latencyNs"),
    ("OperationSpec", _delete("spec.semantics"), "spec.semantics"),
    ("ImplementationRevision", _delete("spec.support.dtypes"), "spec.support.dtypes"),
    # patterns and enums
    ("BenchmarkRun", _set("spec.workloadDigest", "sha256:ABC"), "spec.workloadDigest"),
    ("BenchmarkRun", _set("spec.workloadDigest", A_DIGEST.upper()), "spec.workloadDigest"),
    ("BenchmarkRun", _set("spec.status", "great"), "spec.status"),
    ("BenchmarkRun", _set("metadata.name", "Liger-Run"), "metadata.name"),
    ("BenchmarkRun", _set("metadata.name", "-leading-dash"), "metadata.name"),
    ("BenchmarkRun", _set("metadata.name", "a" * 201), "metadata.name"),
    ("BenchmarkRun", _set("metadata.title", "t" * 201), "metadata.title"),
    ("BenchmarkRun", _set("metadata.labels.liger_version", 61), "metadata.labels.liger_version"),
    ("BenchmarkRun", _set("metadata.labels.Liger-Version", "0.6.1"), "metadata.labels.Liger-Version"),
    ("BenchmarkRun", _set("spec.sourceNative.source", "Liger Bench"), "spec.sourceNative.source"),
    ("BenchmarkRun", _set("spec.measurements.0.unit", "Nanoseconds"), "spec.measurements[0].unit"),
    ("ExecutionEnvironment", _set("spec.hardware.vendor", "NVIDIA"), "spec.hardware.vendor"),
    ("OperationSpec", _set("spec.family", "GRPO"), "spec.family"),
    ("OperationSpec", _set("spec.axes.batch.type", "float"), "spec.axes.batch.type"),
    ("OperationSpec", _set("spec.axes.seq_next.expression", "seq ** 2 ; rm"), "spec.axes.seq_next.expression"),
    ("OperationSpec", _set("spec.semantics.mutation", "sometimes"), "spec.semantics.mutation"),
    ("OperationSpec", _set("spec.inputs.0.tensor.shape.0", "Batch"), "spec.inputs[0].tensor.shape[0]"),
    ("OperationSpec", _set("spec.inputs.0.tensor.shape", []), "spec.inputs[0].tensor.shape"),
    ("OperationSpec", _set("spec.inputs", []), "spec.inputs"),
    ("WorkloadCase", _set("spec.axes.Batch", 8), "spec.axes.Batch"),
    ("WorkloadCase", _set("spec.correctness.comparator", "Not Asserted"), "spec.correctness.comparator"),
    ("SoftwareProject", _set("spec.kind", "company"), "spec.kind"),
    ("SoftwareProject", _set("spec.host.kind", "bitbucket"), "spec.host.kind"),
    ("ImplementationRevision", _set("spec.projectRevision.commit", "abc123"), "spec.projectRevision.commit"),
    # URLs
    ("SoftwareProject", _set("spec.repository", "http://github.com/pytorch/pytorch"), "spec.repository"),
    ("SoftwareProject", _set("spec.homepage", "pytorch.org"), "spec.homepage"),
    ("ImplementationRevision", _set("metadata.sourceRefs.0.url", "http://github.com/x"), "metadata.sourceRefs[0].url"),
    ("BenchmarkProtocol", _set("spec.harness.repository", "git@github.com:x/y.git"), "spec.harness.repository"),
    (
        "BenchmarkRun",
        _set("spec.evidence", {"logs": {"uri": "logs/run.txt", "digest": A_DIGEST}}),
        "spec.evidence.logs.uri",
    ),
    (
        "BenchmarkRun",
        _set("spec.evidence", {"logs": {"uri": "file:///a b", "digest": A_DIGEST}}),
        "spec.evidence.logs.uri",
    ),
    (
        "BenchmarkRun",
        _set("spec.evidence", {"harness": {"repository": "http://x.org/y", "commit": "a" * 40}}),
        "spec.evidence.harness.repository",
    ),
    # UTC instants
    ("BenchmarkRun", _set("spec.observedAt", "2025-02-30T00:00:00.000Z"), "spec.observedAt"),
    ("BenchmarkRun", _set("spec.observedAt", "2023-02-29T00:00:00.000Z"), "spec.observedAt"),
    ("BenchmarkRun", _set("spec.observedAt", "2025-08-05T00:08:54.000+01:00"), "spec.observedAt"),
    ("BenchmarkRun", _set("spec.observedAt", "2025-08-05T00:08:54.000"), "spec.observedAt"),
    ("BenchmarkRun", _set("spec.observedAt", "2025-08-05 00:08:54"), "spec.observedAt"),
    ("BenchmarkRun", _set("spec.observedAt", "2025-08-05T24:00:00Z"), "spec.observedAt"),
    ("BenchmarkRun", _set("spec.observedAt", "٢٠٢٥-08-05T00:08:54Z"), "spec.observedAt"),
    # integers
    ("BenchmarkRun", _set("spec.timing.latencyNs.median", -1), "spec.timing.latencyNs.median"),
    ("BenchmarkRun", _set("spec.timing.latencyNs.median", 2**53), "spec.timing.latencyNs.median"),
    ("BenchmarkRun", _set("spec.timing.latencyNs.median", True), "spec.timing.latencyNs.median"),
    ("BenchmarkRun", _set("spec.timing.latencyNs.median", 1.5), "spec.timing.latencyNs.median"),
    ("BenchmarkRun", _set("spec.timing.latencyNs.median", "fast"), "spec.timing.latencyNs.median"),
    ("BenchmarkRun", _set("spec.timing.latencyNs.median", "12.5 minutes"), "spec.timing.latencyNs.median"),
    ("BenchmarkRun", _set("spec.timing.samples", 0), "spec.timing.samples"),
    ("BenchmarkRun", _set("spec.timing.samples", False), "spec.timing.samples"),
    ("BenchmarkRun", _set("spec.timing.latencyNs.confidence95", [1, 2, 3]), "spec.timing.latencyNs.confidence95"),
    ("WorkloadCase", _set("spec.axes.batch", True), "spec.axes.batch"),
    ("WorkloadCase", _set("spec.axes.batch", 2**53), "spec.axes.batch"),
    ("WorkloadCase", _set("spec.axes.batch", -(2**53)), "spec.axes.batch"),
    ("WorkloadCase", _set("spec.axes.batch", "8"), "spec.axes.batch"),
    ("WorkloadCase", _set("spec.tensors.advantages.shape.0", -8), "spec.tensors.advantages.shape[0]"),
    ("WorkloadCase", _set("spec.tensors.advantages.shape.0", 8.5), "spec.tensors.advantages.shape[0]"),
    ("ExecutionEnvironment", _set("spec.hardware.count", 0), "spec.hardware.count"),
    # numbers
    ("BenchmarkRun", _set("spec.measurements.0.value", "94833664"), "spec.measurements[0].value"),
    ("BenchmarkRun", _set("spec.measurements.0.value", True), "spec.measurements[0].value"),
    ("BenchmarkRun", _set("spec.sourceNative.metrics.ms_50", None), "spec.sourceNative.metrics.ms_50"),
    (
        "BenchmarkRun",
        _set("spec.correctness", {"comparator": "allclose", "matchedRatio": 1.5}),
        "spec.correctness.matchedRatio",
    ),
    ("ExecutionEnvironment", _set("spec.settings", {"powerLimitWatts": 0}), "spec.settings.powerLimitWatts"),
    # types
    ("BenchmarkRun", _set("spec.measurements", {"0": {}}), "spec.measurements"),
    ("BenchmarkRun", _set("metadata", "liger"), "metadata"),
    ("BenchmarkRun", _set("kind", "BenchmarkRuns"), "kind"),
    ("BenchmarkRun", _set("spec.status", None), "spec.status"),
]

# Outside the JSON Schema comparison; the models still reject them.
NON_JSON_MUTATIONS = [
    # Python's re (used by jsonschema) lets '$' match before a final newline; ECMAScript and pydantic do not.
    ("BenchmarkRun", _set("spec.workloadDigest", A_DIGEST + "\n"), "spec.workloadDigest"),
    # NaN and infinities have no JSON form.
    ("BenchmarkRun", _set("spec.measurements.0.value", float("nan")), "spec.measurements[0].value"),
    ("BenchmarkRun", _set("spec.sourceNative.metrics.ms_50", float("inf")), "spec.sourceNative.metrics.ms_50"),
    # RFC 8785 cannot write this integer, so no digest could be computed.
    ("BenchmarkRun", _set("spec.sourceNative.metrics.ms_50", 2**60), "spec.sourceNative.metrics.ms_50"),
]


def _mutated(kind, mutation):
    manifest = _seed(kind)
    mutation(manifest)
    return manifest


def _ids(cases):
    return [f"{kind}:{field}:{i}" for i, (kind, _, field) in enumerate(cases)]


@pytest.mark.parametrize(
    ("kind", "mutation", "field"), MUTATIONS + NON_JSON_MUTATIONS, ids=_ids(MUTATIONS + NON_JSON_MUTATIONS)
)
def test_each_mutation_is_a_problem_naming_record_and_field(kind, mutation, field):
    manifest = _mutated(kind, mutation)
    problems = validate_manifest(manifest)
    assert problems, "the mutation was accepted"
    assert field in [problem.field for problem in problems]
    for problem in problems:
        assert problem.record.startswith(f"{manifest['kind'] if isinstance(manifest.get('kind'), str) else '?'}/")
        assert field.split(".")[0] in str(problem)


# (kind, mutation): valid variations, which must stay valid.
VALID_VARIATIONS = [
    ("BenchmarkRun", _set("spec.timing.latencyNs.median", 4096.0)),  # a whole JSON number is an integer
    ("BenchmarkRun", _set("spec.timing.latencyNs.median", "12.5 ms")),
    ("BenchmarkRun", _set("spec.timing.latencyNs.median", 0)),
    ("BenchmarkRun", _set("spec.timing.latencyNs.median", 2**53 - 1)),
    ("BenchmarkRun", _set("spec.timing.latencyNs.confidence95", [1, "2 us"])),
    ("BenchmarkRun", _set("spec.observedAt", "2024-02-29T00:00:00Z")),
    ("BenchmarkRun", _set("spec.observedAt", "2000-02-29T23:59:59.123456Z")),
    ("BenchmarkRun", _set("spec.observedAt", "2025-08-05T00:08Z")),
    ("BenchmarkRun", _set("spec.measurements.0.value", 1e300)),
    ("BenchmarkRun", _set("spec.measurements.0.value", -2.5)),
    (
        "BenchmarkRun",
        _set(
            "spec.evidence",
            {
                "logs": {"uri": "s3://bucket/run.log", "digest": A_DIGEST},
                "harness": {"repository": "https://github.com/a/b", "commit": "0" * 40},
            },
        ),
    ),
    ("WorkloadCase", _set("spec.axes.batch", -(2**53 - 1))),
    ("WorkloadCase", _set("spec.scalars", {"eps": {"dtype": "fp32", "value": 1e-6}})),
    ("SoftwareProject", _set("spec.homepage", "https://pytorch.org:443/docs?x=1#y")),
    ("ExecutionEnvironment", _set("spec.settings", {"environmentVariables": {"CUDA_VISIBLE_DEVICES": "0"}})),
    ("OperationSpec", _set("spec.inputs.0.tensor.shape.0", 4)),
]


@pytest.mark.parametrize(
    ("kind", "mutation"), VALID_VARIATIONS, ids=[f"{k}:{i}" for i, (k, _) in enumerate(VALID_VARIATIONS)]
)
def test_valid_variations_stay_valid(kind, mutation):
    assert validate_manifest(_mutated(kind, mutation)) == []


# ---------------------------------------------------------------- the emitted JSON Schema


def test_json_schemas_are_valid_draft_2020_12():
    from jsonschema import Draft202012Validator

    for kind in KINDS:
        Draft202012Validator.check_schema(json_schema(kind))


def _json_schema_accepts(manifest) -> bool:
    from jsonschema import Draft202012Validator

    kind = manifest.get("kind") if isinstance(manifest, dict) else None
    schema = json_schema(kind if kind in KINDS else "BenchmarkRun")
    return Draft202012Validator(schema).is_valid(manifest)


AGREEMENT_CASES = (
    [(m["kind"], m) for m in SEED_MANIFESTS]
    + [(kind, _mutated(kind, mutation)) for kind, mutation, _ in MUTATIONS]
    + [(kind, _mutated(kind, mutation)) for kind, mutation in VALID_VARIATIONS]
)


@pytest.mark.parametrize(
    ("kind", "manifest"), AGREEMENT_CASES, ids=[f"{k}:{i}" for i, (k, _) in enumerate(AGREEMENT_CASES)]
)
def test_json_schema_agrees_with_the_models(kind, manifest):
    assert _json_schema_accepts(manifest) == (validate_manifest(manifest) == [])


def test_pattern_problems_say_what_is_expected_in_words():
    run = _seed("BenchmarkRun")
    run["spec"]["observedAt"] = "2025-02-30T00:00:00Z"
    run["spec"]["workloadDigest"] = "sha256:x"
    run["metadata"]["labels"]["Bad-Key"] = "x"
    messages = {problem.field: problem.message for problem in validate_manifest(run)}
    assert messages["spec.observedAt"].startswith("should be a real UTC instant like 2025-08-05T00:08:54.000Z")
    assert "'2025-02-30T00:00:00Z'" in messages["spec.observedAt"]
    assert messages["spec.workloadDigest"].startswith("should be a digest 'sha256:'")
    assert messages["metadata.labels.Bad-Key"].startswith("the key 'Bad-Key' should be an identifier")


# ---------------------------------------------------------------- robustness

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

anything = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6) | st.integers(), children, max_size=4)
    ),
    max_leaves=15,
)


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_validate_manifest_never_raises_and_always_names_the_record(data):
    seed = data.draw(st.sampled_from(SEED_MANIFESTS))
    path = data.draw(st.sampled_from(list(every_path(seed))))
    manifest = replaced(seed, path, data.draw(anything))
    problems = validate_manifest(manifest)
    assert isinstance(problems, list)
    for problem in problems:
        assert isinstance(problem, Problem)
        assert isinstance(problem.field, str) and isinstance(problem.message, str) and problem.message
        assert "/" in problem.record
        assert "\n" not in str(problem)


@settings(max_examples=200, deadline=None)
@given(anything)
def test_validate_manifest_takes_any_value(value):
    assert isinstance(validate_manifest(value), list)


def test_json_schema_returns_a_fresh_copy_and_rejects_unknown_kinds():
    first = json_schema("BenchmarkRun")
    first["properties"].clear()
    assert json_schema("BenchmarkRun")["properties"]
    with pytest.raises(KeyError, match="unknown kind 'Run'"):
        json_schema("Run")
