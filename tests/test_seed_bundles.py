"""The three published seed rows reproduce every manifest byte for byte (canonical JSON and digest)."""

from __future__ import annotations

import csv
import io
import json

import pytest

from kernelindex_pipeline.liger import import_csv
from kernelindex_pipeline.liger.csv import UPSTREAM_COLUMNS
from kernelindex_pipeline.records.canonical import canonical_bytes, digest_of
from tests.support import FIXTURES

BUNDLES = json.loads((FIXTURES / "seed-bundles.json").read_text("utf-8"))


def csv_bytes(rows: list[dict[str, str]]) -> bytes:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(UPSTREAM_COLUMNS)
    for row in rows:
        writer.writerow([row[c] for c in UPSTREAM_COLUMNS])
    return buf.getvalue().encode("utf-8")


@pytest.fixture(scope="module")
def seed_import():
    return import_csv(csv_bytes([b["row"] for b in BUNDLES]))


@pytest.mark.parametrize("bundle", BUNDLES, ids=lambda b: f"{b['row']['kernel_name']}-{b['row']['kernel_provider']}")
def test_each_seed_row_alone_yields_exactly_its_seven_manifests(bundle):
    result = import_csv(csv_bytes([bundle["row"]]))
    expected = {m["digest"]: m["manifest"] for m in bundle["manifests"]}
    assert set(result.manifests) == set(expected)
    for digest, manifest in expected.items():
        ours = result.manifests[digest]
        assert canonical_bytes(ours) == canonical_bytes(manifest)  # metadata too, byte for byte
        assert digest_of(ours) == digest
    assert result.report.runs == 1 and result.report.conserved()


def test_all_seed_rows_together(seed_import):
    expected = {m["digest"]: m["manifest"] for b in BUNDLES for m in b["manifests"]}
    assert set(seed_import.manifests) == set(expected)
    for digest, manifest in expected.items():
        assert canonical_bytes(seed_import.manifests[digest]) == canonical_bytes(manifest)


def _seed_files():
    return sorted((FIXTURES / "seeds").glob("*.txt"))


@pytest.mark.parametrize("path", _seed_files(), ids=lambda p: p.stem)
def test_published_seed_records(path, seed_import):
    provider_title, _, body = path.read_text("utf-8").partition("\n")
    seed = json.loads(body)
    by_digest = seed_import.manifests
    run_digest = digest_of(seed["run"])
    assert canonical_bytes(by_digest[run_digest]) == canonical_bytes(seed["run"])
    run_spec = by_digest[run_digest]["spec"]
    assert digest_of(seed["protocol"]) == run_spec["protocolDigest"]
    assert canonical_bytes(by_digest[run_spec["protocolDigest"]]) == canonical_bytes(seed["protocol"])
    assert digest_of(seed["environment"]) == run_spec["environmentDigest"]
    assert canonical_bytes(by_digest[run_spec["environmentDigest"]]) == canonical_bytes(seed["environment"])
    implementation = by_digest[run_spec["implementationDigest"]]
    assert implementation["metadata"]["title"].endswith(" · " + provider_title.strip())


def test_run_template_equals_generic_canonical_json(seed_import):
    from kernelindex_pipeline.liger.normalize import RunRecord

    lines: list[RunRecord] = []
    import_csv(csv_bytes([b["row"] for b in BUNDLES]), on_run=lines.append)
    assert len(lines) == 3
    for run in lines:
        assert run.line == canonical_bytes(run.manifest)
        assert run.digest == digest_of(run.manifest)
