"""The export's Parquet tables (catalogue/tables.py) and the name collisions of its manifest file, on real Liger CI
rows (fixtures/liger-ci-report) published into a catalogue."""

from __future__ import annotations

import copy
import json
from collections import Counter

import pytest

from kernelindex_pipeline.catalogue.export import JSONL_MANIFEST_NAME, export_jsonl
from kernelindex_pipeline.catalogue.store import CatalogueStore
from kernelindex_pipeline.catalogue.tables import RECORDS_TABLE, RUNS_TABLE, WORKLOADS_TABLE, export_tables
from kernelindex_pipeline.records.canonical import digest_of
from tests.reporting.test_site import CSVS, _import

pd = pytest.importorskip("pandas")


@pytest.fixture(scope="module")
def manifests():
    return _import(CSVS)


@pytest.fixture
def exported(manifests, sqlite_url, tmp_path):
    with CatalogueStore.open(sqlite_url) as store:
        store.publish(manifests, partition="ci", source=None, report=None)
        jsonl = export_jsonl(store, tmp_path)
        tables = export_tables(store, tmp_path)
    return jsonl, tables


def test_records_table_gives_each_line_its_digest(exported):
    jsonl, tables = exported
    records = pd.read_parquet(tables.paths[RECORDS_TABLE])
    lines = jsonl.path.read_text(encoding="utf-8").splitlines()
    assert list(records["line"]) == list(range(1, len(lines) + 1))
    assert list(records["digest"]) == [digest_of(json.loads(line)) for line in lines]
    assert list(records["kind"]) == [json.loads(line)["kind"] for line in lines]


def test_runs_table_resolves_the_identity_digests(exported, manifests):
    _, tables = exported
    runs = pd.read_parquet(tables.paths[RUNS_TABLE]).set_index("digest")
    by_digest = {digest_of(m): m for m in manifests}
    expected = {d: m for d, m in by_digest.items() if m["kind"] == "BenchmarkRun"}
    assert set(runs.index) == set(expected) and tables.rows[RUNS_TABLE] == len(expected)
    for digest, run in expected.items():
        row, spec = runs.loc[digest], run["spec"]
        kernel, mode, *rest = spec["sourceNative"]["externalId"].split("/")
        assert (row["kernel"], row["mode"]) == (kernel, mode)
        assert row["liger_version"] == run["metadata"]["labels"]["liger_version"]
        if "timing" in spec:
            assert (row["metric"], row["value"]) == ("latency", spec["timing"]["latencyNs"]["median"])
        else:
            assert (row["metric"], row["value"]) == ("peak_memory", spec["measurements"][0]["value"])
        workload = by_digest[spec["workloadDigest"]]["spec"]
        assert json.loads(row["workload_axes"]) == workload["axes"]
        assert row["gpu_product"] == by_digest[spec["environmentDigest"]]["spec"]["hardware"]["product"]
    workloads = pd.read_parquet(tables.paths[WORKLOADS_TABLE])
    assert set(workloads["digest"]) == {d for d, m in by_digest.items() if m["kind"] == "WorkloadCase"}


def test_the_exports_page_example_answers_a_question(exported):
    """docs/reference/exports.md's three lines: rms_norm forward latency of Liger per GPU and version."""
    _, tables = exported
    runs = pd.read_parquet(tables.paths[RUNS_TABLE])
    rms = runs.query("kernel == 'rms_norm' and mode == 'forward' and provider == 'liger' and metric == 'latency'")
    table = rms.pivot_table(index="case_key", columns=["gpu", "liger_version"], values="value", aggfunc="median")
    assert table.shape[0] > 0 and table.notna().any().all()


def test_shared_names_are_counted_in_the_manifest_file(manifests, sqlite_url, tmp_path):
    runs = [m for m in manifests if m["kind"] == "BenchmarkRun"][:3]
    twins = []
    for number, run in enumerate(runs):
        twin = copy.deepcopy(run)
        twin["spec"]["sourceNative"]["externalId"] += f"-{number}"  # another run, another digest, the same name
        twin["spec"]["observedAt"] = "2030-01-01T00:00:00.000Z"
        twins.append(twin)
    with CatalogueStore.open(sqlite_url) as store:
        store.publish([*manifests, *twins], partition="ci", source=None, report=None)
        export_jsonl(store, tmp_path)
        tables = export_tables(store, tmp_path)
    collisions = json.loads((tmp_path / JSONL_MANIFEST_NAME).read_text())["nameCollisions"]
    # counted independently: real CI rows already collide (long case keys cut at 100 characters), the twins add 3
    names = Counter((m["kind"], m["metadata"]["name"]) for m in [*manifests, *twins])
    shared = {key: n for key, n in names.items() if n > 1}
    by_kind = Counter()
    for (kind, _), n in shared.items():
        by_kind[kind] += n
    assert (collisions["records"], collisions["names"], collisions["byKind"]) == (
        sum(shared.values()),
        len(shared),
        dict(by_kind),
    )
    before = Counter((m["kind"], m["metadata"]["name"]) for m in manifests)
    assert len(shared) == len([k for k, n in before.items() if n > 1]) + 3 - sum(
        before[("BenchmarkRun", r["metadata"]["name"])] > 1 for r in runs
    )
    assert all(e["records"] == shared[(e["kind"], e["name"])] for e in collisions["examples"])
    # harmless in the tables: keyed on digests, every run present
    table = pd.read_parquet(tables.paths[RUNS_TABLE])
    assert (
        table["digest"].is_unique and tables.rows[RUNS_TABLE] == sum(m["kind"] == "BenchmarkRun" for m in manifests) + 3
    )
