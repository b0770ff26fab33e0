"""The strict schema: every seed manifest is valid; targeted mutations are problems naming record and field."""

from __future__ import annotations

import copy
import json
from pathlib import Path

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

FIXTURES = Path(__file__).parent / "fixtures"
SEED_BUNDLES = json.loads((FIXTURES / "seed-bundles.json").read_text(encoding="utf-8"))
SEED_MANIFESTS = [entry["manifest"] for bundle in SEED_BUNDLES for entry in bundle["manifests"]]


def _seed(kind: str) -> dict:
    return copy.deepcopy(next(m for m in SEED_MANIFESTS if m["kind"] == kind))


@pytest.mark.parametrize("manifest", SEED_MANIFESTS, ids=[f"{m['kind']}-{i}" for i, m in enumerate(SEED_MANIFESTS)])
def test_every_seed_manifest_is_valid(manifest):
    assert validate_manifest(manifest) == []


def test_kinds_are_in_dependency_order():
    assert KINDS == (
        "SoftwareProject", "OperationSpec", "WorkloadCase", "ImplementationRevision",
        "BenchmarkProtocol", "ExecutionEnvironment", "BenchmarkRun",
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
