"""A synthetic sweep of liger-kernel 0.8.5 in its scripts' own row format: every row type binds.

`fixtures/liger-0.8.5-sweep-rows.csv` is what `scripts/liger_row_formats.py 0.8.5` writes: one row
per script x sweep mode x kernel x provider x mode x metric, by the scripts' own code (see its .md).
"""

from __future__ import annotations

import csv
import importlib.util
import io
import sys

import pytest

from kernelindex_pipeline.imports.coverage import CoverageTable
from kernelindex_pipeline.liger import import_csv
from kernelindex_pipeline.records.canonical import canonical_bytes
from kernelindex_pipeline.records.schema import validate_manifest
from tests.support import FIXTURES, ROOT

ROWS = FIXTURES / "liger-0.8.5-sweep-rows.csv"


def test_every_row_type_of_a_0_8_5_sweep_binds_under_the_full_profile():
    result = import_csv(ROWS, profile="full")
    report = result.report
    assert report.conserved() and report.issues == []
    assert report.runs == report.rows_read  # 100 % of the row types
    by_metric = CoverageTable.of([report]).by_metric()
    assert by_metric["speed"]["rows"] > 0 and by_metric["memory"]["rows"] > 0
    assert report.memory_runs == by_metric["memory"]["rows"]
    for manifest in result.manifests.values():
        assert validate_manifest(manifest) == [], manifest["metadata"]["name"]
    # model_config rows are there, on a categorical axis
    labelled = [m for m in result.iter_kind("WorkloadCase") if "model_config" in (m["metadata"].get("labels") or {})]
    assert labelled


def test_the_reference_binds_only_part_of_it_and_the_full_profile_keeps_those_objects():
    reference = import_csv(ROWS, profile="reference")
    full = import_csv(ROWS, profile="full")
    assert 0 < reference.report.runs < full.report.runs
    for digest, manifest in reference.manifests.items():
        assert canonical_bytes(full.manifests[digest]) == canonical_bytes(manifest)


def _row_types(text: str) -> set[tuple[str, ...]]:
    return {tuple(v for k, v in row.items() if k != "timestamp") for row in csv.DictReader(io.StringIO(text))}


@pytest.mark.network
def test_the_fixture_is_what_the_generator_makes_from_the_0_8_5_sdist(capsys):
    spec = importlib.util.spec_from_file_location("liger_row_formats", ROOT / "scripts" / "liger_row_formats.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    assert module.main(["0.8.5"]) == 0
    made = capsys.readouterr().out
    assert _row_types(made) == _row_types(ROWS.read_text("utf-8"))
