"""Exports of the catalogue: JSON Lines with its manifest file, and the grouped YAML submission bundle."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime

import pytest
import yaml

from kernelindex_pipeline.catalogue import export as export_module
from kernelindex_pipeline.catalogue.export import BUNDLE_GROUPS, export_bundle, export_jsonl
from kernelindex_pipeline.catalogue.store import CatalogueStore
from kernelindex_pipeline.records import yaml12
from kernelindex_pipeline.records.canonical import canonical_json, digest_of
from kernelindex_pipeline.records.io import load_manifests
from kernelindex_pipeline.records.schema import KINDS


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def catalogue_url(request) -> str:
    return request.getfixturevalue(f"{request.param}_url")


@pytest.fixture
def records(catalogue_records, synthetic_runs) -> dict[str, dict]:
    return catalogue_records | synthetic_runs(60)


@pytest.fixture
def store(catalogue_url, records):
    with CatalogueStore.open(catalogue_url) as opened:
        opened.publish(records, partition="p")
        yield opened


def in_catalogue_order(records: dict[str, dict]) -> list[dict]:
    ordered = sorted(records, key=lambda d: (KINDS.index(records[d]["kind"]), records[d]["metadata"]["name"], d))
    return [records[d] for d in ordered]


def test_jsonl_holds_one_canonical_manifest_per_line_in_catalogue_order(store, records, tmp_path):
    generated_at = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
    result = export_jsonl(store, tmp_path / "out", generated_at=generated_at)

    data = result.path.read_bytes()
    assert data.decode("utf-8").splitlines() == [canonical_json(m) for m in in_catalogue_order(records)]
    assert data.endswith(b"\n")
    described = json.loads(result.manifest_path.read_text(encoding="utf-8"))
    assert described["file"] == result.path.name
    assert described["sha256"] == hashlib.sha256(data).hexdigest() == result.sha256
    assert described["lineCount"] == data.count(b"\n") == len(records) == result.records
    assert described["generatedAt"] == "2026-11-29T12:00:00Z"
    assert described["recordsByKind"] == {kind: sum(m["kind"] == kind for m in records.values()) for kind in KINDS}
    assert sorted(p.name for p in result.path.parent.iterdir()) == sorted([result.path.name, result.manifest_path.name])


def test_bundle_groups_the_records_in_dependency_order(store, records, tmp_path):
    result = export_bundle(store, tmp_path)

    documents = list(yaml.safe_load_all(result.path.read_text(encoding="utf-8")))
    assert [next(iter(doc)) for doc in documents] == list(BUNDLE_GROUPS.values())
    assert [m for doc in documents for m in next(iter(doc.values()))] == in_catalogue_order(records)
    assert result.sha256 == hashlib.sha256(result.path.read_bytes()).hexdigest()
    assert result.records == len(records)


def test_both_exports_round_trip_through_load_manifests(store, records, tmp_path):
    jsonl = export_jsonl(store, tmp_path)
    bundle = export_bundle(store, tmp_path)

    for exported in (jsonl, bundle):
        loaded = [manifest for _location, manifest in load_manifests(exported.path)]
        assert loaded == in_catalogue_order(records), exported.path.name
        assert [digest_of(m) for m in loaded] == [digest_of(m) for m in in_catalogue_order(records)]


def test_exports_are_byte_stable(store, records, tmp_path):
    first = (export_jsonl(store, tmp_path / "a"), export_bundle(store, tmp_path / "a"))
    # The same content published again, in another order and under another partition, changes nothing.
    store.publish(dict(reversed(list(records.items()))), partition="q")
    second = (export_jsonl(store, tmp_path / "b"), export_bundle(store, tmp_path / "b"))

    for one, two in zip(first, second, strict=False):
        assert one.path.read_bytes() == two.path.read_bytes()
        assert one.sha256 == two.sha256


@pytest.mark.postgres
def test_sqlite_and_postgresql_export_the_same_bytes(sqlite_url, postgres_url, records, tmp_path):
    exported = {}
    for name, url in (("sqlite", sqlite_url), ("postgres", postgres_url)):
        with CatalogueStore.open(url) as store:
            store.publish(records, partition="p")
            exported[name] = (export_jsonl(store, tmp_path / name).sha256, export_bundle(store, tmp_path / name).sha256)
    assert exported["sqlite"] == exported["postgres"]


def test_the_libyaml_and_pure_python_emitters_write_the_same_bundle(store, tmp_path, monkeypatch):
    store.publish([TRICKY_PROJECT], partition="tricky")
    fast = export_bundle(store, tmp_path / "fast")
    monkeypatch.setattr(export_module, "_DUMPER", yaml12.core_schema_dumper(yaml.SafeDumper))
    pure = export_bundle(store, tmp_path / "pure")
    assert fast.path.read_bytes() == pure.path.read_bytes()


def test_the_streamed_bundle_is_the_bytes_of_each_group_dumped_whole(store, tmp_path):
    """The bundle is written one manifest at a time; its bytes are those of `{group: [manifests]}` dumped whole
    per group (the form before streaming, and the one a reader expects)."""
    bundle = export_bundle(store, tmp_path)
    dumper = yaml12.SafeDumper
    whole = [
        yaml.dump(
            {group: list(store.manifests(kinds=[kind]))},
            Dumper=dumper,
            explicit_start=True,
            sort_keys=False,
            allow_unicode=True,
            default_flow_style=False,
            width=1_000_000,
        )
        for kind, group in BUNDLE_GROUPS.items()
    ]
    text = bundle.path.read_text(encoding="utf-8")
    assert text[text.index("---") :] == "".join(whole)


def test_an_empty_catalogue_exports_empty_files_that_still_load(sqlite_url, tmp_path):
    with CatalogueStore.open(sqlite_url) as store:
        jsonl = export_jsonl(store, tmp_path)
        bundle = export_bundle(store, tmp_path)
    assert jsonl.path.read_bytes() == b""
    assert json.loads(jsonl.manifest_path.read_text())["lineCount"] == 0
    assert [doc for doc in yaml.safe_load_all(bundle.path.read_text())] == [{g: []} for g in BUNDLE_GROUPS.values()]
    assert load_manifests(bundle.path) == []


def test_a_failed_export_keeps_the_previous_file_and_leaves_no_partial_one(store, tmp_path, monkeypatch):
    previous = export_jsonl(store, tmp_path)
    previous_bytes = previous.path.read_bytes()

    def broken_records(kinds=None):  # the stream export_jsonl reads: (digest, manifest) pairs
        yield from (("sha256:" + "0" * 64, {"kind": "SoftwareProject", "metadata": {"name": "x"}, "spec": {}}),)
        raise OSError("connection lost (simulated)")

    monkeypatch.setattr(store, "records", broken_records)
    with pytest.raises(OSError, match="connection lost"):
        export_jsonl(store, tmp_path)
    assert previous.path.read_bytes() == previous_bytes
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".partial")]


TRICKY_TEXT = [
    "on",
    "yes",
    "no",
    "null",
    "~",
    "",
    "2025-08-05",
    "2025-08-05 00:08:54",
    "017",
    "0x40",
    "1e3",
    "22:13:03",
    "1_000",
    ".inf",
    "-",
    "'quoted'",
    "a: b",
    "# not a comment",
    "· unicode ·",
    "\ttab",
    "49e6353",  # a short commit; like "0o17", ".5e3" and "TRUE", a string in YAML 1.1 and not in YAML 1.2
    "0o17",
    ".5e3",
    "TRUE",
]
# A record whose text and numbers a YAML 1.1 or YAML 1.2 reader could take for something else.
TRICKY_PROJECT = {
    "apiVersion": "kernelindex.dev/v1alpha1",
    "kind": "SoftwareProject",
    "metadata": {"name": "tricky", "labels": {f"l{i}": text for i, text in enumerate(TRICKY_TEXT)}},
    "spec": {"numbers": [1e-07, 0.1, 94.83366394042969, 2**53 - 1, -0.5, 1e21, 0, True, False, None]},
}


def test_scalars_that_yaml_could_misread_survive_both_exports(sqlite_url, tmp_path):
    with CatalogueStore.open(sqlite_url) as store:
        store.publish([TRICKY_PROJECT], partition="p")
        bundle = export_bundle(store, tmp_path)
        jsonl = export_jsonl(store, tmp_path)

    for exported in (bundle, jsonl):
        [(_, loaded)] = load_manifests(exported.path)
        assert loaded == TRICKY_PROJECT, exported.path.name
        assert canonical_json(loaded) == canonical_json(TRICKY_PROJECT)
    # and a YAML 1.2 (core schema) parser, as KernelIndex's, reads the bundle back the same
    from ruamel.yaml import YAML

    documents = list(YAML(typ="safe", pure=True).load_all(bundle.path.read_text("utf-8")))
    assert [m for document in documents for m in document.get("projects", [])] == [TRICKY_PROJECT]
