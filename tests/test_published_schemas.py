"""Differential test: our records against KernelIndex's published JSON Schemas (draft 2020-12).

The schemas are not part of this project (they are KernelIndex's): they are read from
`../shared/spec/schemas/` when that folder exists (the development checkout and CI have it). Where it is
absent (a user's clone) the test is skipped and says so; on CI (CI=true) its absence is a failure.
Our own strict model (`records/schema.py`) is what the pipeline validates with; this test checks that
everything it lets through, every kind and every extension of the full profile included, is also valid
for the published schemas.
"""

from __future__ import annotations

import json
import os

import pytest
from jsonschema import Draft202012Validator

from kernelindex_pipeline.liger import import_csv
from kernelindex_pipeline.liger.sample_statistics import latency_statistics, with_raw_samples
from kernelindex_pipeline.records.schema import KINDS
from tests.support import FIXTURES, ROOT

PUBLISHED = ROOT.parent / "shared" / "spec" / "schemas"


def published_validators() -> dict[str, Draft202012Validator]:
    """A validator per kind from the published schemas; skips (fails on CI) where they are absent."""
    files = sorted(PUBLISHED.glob("*.schema.json")) if PUBLISHED.is_dir() else []
    if not files:
        message = f"differential test against the published schemas skipped: {PUBLISHED} is not here"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message + " (CI=true: CI has ../shared)")
        pytest.skip(message)
    validators = {}
    for path in files:
        schema = json.loads(path.read_text(encoding="utf-8"))
        Draft202012Validator.check_schema(schema)
        validators[schema["properties"]["kind"]["const"]] = Draft202012Validator(schema)
    assert sorted(validators) == sorted(KINDS)
    return validators


@pytest.fixture(scope="module")
def validators() -> dict[str, Draft202012Validator]:
    return published_validators()


def _problems(validators, manifests) -> list[str]:
    problems = []
    for manifest in manifests:
        for error in validators[manifest["kind"]].iter_errors(manifest):
            problems.append(f"{manifest['kind']} {manifest['metadata']['name']}: {error.json_path}: {error.message}")
    return problems


def test_seed_records_are_valid_for_the_published_schemas(validators, catalogue_records):
    assert _problems(validators, catalogue_records.values()) == []


@pytest.mark.parametrize("fixture", ["liger-ci-slice.csv", "liger-0.8.5-sweep-rows.csv"])
@pytest.mark.parametrize("profile", ["reference", "full"])
def test_every_kind_the_importer_makes_is_valid_for_the_published_schemas(validators, fixture, profile):
    manifests = list(import_csv(FIXTURES / fixture, profile=profile).manifests.values())
    assert {m["kind"] for m in manifests} == set(KINDS)
    assert _problems(validators, manifests) == []


def test_memory_runs_and_raw_sample_runs_are_valid_for_the_published_schemas(validators):
    runs = list(import_csv(FIXTURES / "liger-ci-slice.csv", profile="full").runs())
    memory = [run for run in runs if "timing" not in run["spec"]]
    speed = next(run for run in runs if "timing" in run["spec"])
    entry = {
        "artifact": {"uri": "logs/samples/x.json", "digest": "sha256:" + "a" * 64},
        **latency_statistics([0.101, 0.102, 0.1035, 0.099, 0.1001]),
    }
    measured = {**speed, "spec": with_raw_samples(speed["spec"], entry)}
    assert memory and "rawSamples" in measured["spec"]["timing"]
    assert _problems(validators, [*memory, measured]) == []
