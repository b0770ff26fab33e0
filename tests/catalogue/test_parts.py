"""The export per publication (catalogue/parts.py): incremental equals a rebuild, damage is repaired, a killed
export leaves the previous manifest whole, and the parts hold exactly what the single-file export holds."""

from __future__ import annotations

import copy
import hashlib
import json
import tempfile
from pathlib import Path

import pandas as pd
import pyarrow.dataset as ds
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernelindex_pipeline.catalogue import parts as parts_module
from kernelindex_pipeline.catalogue.export import JSONL_MANIFEST_NAME, JSONL_NAME, export_jsonl
from kernelindex_pipeline.catalogue.parts import MANIFEST_NAME, RUNS_DATASET, export_parts, part_name
from kernelindex_pipeline.catalogue.store import CatalogueStore
from kernelindex_pipeline.catalogue.tables import RUNS_TABLE, export_tables
from kernelindex_pipeline.cli import main
from kernelindex_pipeline.records.canonical import digest_of
from kernelindex_pipeline.records.io import load_manifests
from tests.support import factories


def _pool() -> list[dict]:
    """Records to publish in random subsets: the seed records, cloned runs, a twin sharing a run's name (a name
    collision), and a new GPU's environment with runs on it."""
    seeds = factories.seed_manifests()
    runs = factories.cloned_runs(seeds, 12)
    pool = [*seeds.values(), *runs.values()]
    twin = copy.deepcopy(next(iter(runs.values())))
    twin["spec"]["sourceNative"]["externalId"] += "-twin"  # another run, another digest, the same name
    environment = copy.deepcopy(next(m for m in seeds.values() if m["kind"] == "ExecutionEnvironment"))
    environment["metadata"]["name"] = "liger-bench-b300"
    environment["spec"]["hardware"] = {"vendor": "nvidia", "product": "NVIDIA B300", "architecture": "sm_103"}
    on_new_gpu = []
    for run in list(runs.values())[:3]:
        run = copy.deepcopy(run)
        run["spec"]["environmentDigest"] = digest_of(environment)
        run["spec"]["sourceNative"]["externalId"] = run["spec"]["sourceNative"]["externalId"].replace(
            "/nvidia-", "/nvidia-b300-"
        )
        run["metadata"]["name"] += "-b300"
        on_new_gpu.append(run)
    return [*pool, twin, environment, *on_new_gpu]


POOL = _pool()


def _files(root: Path) -> dict[str, bytes]:
    """Every file under `root`, the manifest's generatedAt masked."""
    found = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        data = path.read_bytes()
        if path.name == MANIFEST_NAME:
            data = json.dumps({**json.loads(data), "generatedAt": None}).encode()
        found[path.relative_to(root).as_posix()] = data
    return found


def _assert_manifest_whole(out: Path) -> dict:
    """Every file the manifest lists is there with its size and sha256."""
    described = json.loads((out / MANIFEST_NAME).read_text())
    for part in described["parts"]:
        for entry in part["files"]:
            data = (out / entry["path"]).read_bytes()
            assert (len(data), hashlib.sha256(data).hexdigest()) == (entry["bytes"], entry["sha256"]), entry["path"]
    return described


steps = st.lists(
    st.tuples(st.sampled_from(["history-0.6", "ci-a", "ci-b", "sweep-1"]), st.sets(st.sampled_from(range(len(POOL))))),
    min_size=1,
    max_size=5,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=steps, republish=st.booleans())
def test_an_incremental_export_after_each_publication_equals_a_rebuild(steps, republish):
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        with CatalogueStore.open(f"sqlite:///{tmp}/catalogue.sqlite") as store:
            published = []
            for number, (partition, chosen) in enumerate(steps):
                store.publish([POOL[i] for i in sorted(chosen)], partition=partition)
                published.append((partition, chosen))
                if republish and number == 0:  # the same partition again: nothing new, no part
                    store.publish([POOL[i] for i in sorted(chosen)], partition=partition)
                with CatalogueStore.open(f"sqlite:///{tmp}/catalogue.sqlite", read_only=True) as reader:  # as the asset
                    result = export_parts(reader, tmp / "incremental")
                    fresh = export_parts(reader, tmp / f"rebuild-{number}")
                assert not result.warnings and not result.repaired
                assert _files(tmp / "incremental") == _files(tmp / f"rebuild-{number}")
                described = _assert_manifest_whole(tmp / "incremental")
                assert (
                    result.records == described["records"] == len({digest_of(POOL[i]) for _, c in published for i in c})
                )
                assert fresh.rebuild and result.parts == fresh.parts
            export_parts(store, tmp / "incremental", rebuild=True)  # rebuild asked, in place: the same bytes
            assert _files(tmp / "incremental") == _files(tmp / f"rebuild-{len(steps) - 1}")


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def catalogue_url(request) -> str:
    return request.getfixturevalue(f"{request.param}_url")


@pytest.fixture
def store(catalogue_url):
    with CatalogueStore.open(catalogue_url) as opened:
        opened.publish(POOL[:30], partition="history-0.6")
        opened.publish(POOL[30:], partition="ci-a")
        yield opened


def test_a_night_writes_its_part_and_the_manifest_and_keeps_the_rest(store, tmp_path):
    tmp_path = tmp_path / "out"  # beside the catalogue
    first = export_parts(store, tmp_path)
    assert first.rebuild == "no manifest: a first export" and first.parts == [1, 2] and first.manifest_written
    nothing = export_parts(store, tmp_path)
    assert (nothing.written, nothing.kept, nothing.manifest_written) == ([], [1, 2], False)
    assert nothing.recomputed() == "0 of 2 parts written, 2 kept; manifest unchanged (nothing new)"
    store.publish(POOL[:5], partition="history-0.6")  # a republication bringing nothing: no part
    republished = export_parts(store, tmp_path)
    assert republished.recomputed() == "0 of 2 parts written, 2 kept; manifest rewritten (newer publications)"
    store.publish(factories.cloned_runs(factories.seed_manifests(), 4, start=100), partition="sweep-1")
    night = export_parts(store, tmp_path)
    assert night.written == [4] and night.kept == [1, 2] and night.manifest_written
    assert night.recomputed() == "1 of 3 parts written (new publications 4), 2 kept; manifest rewritten"
    described = _assert_manifest_whole(tmp_path)
    assert [p["publication"] for p in described["parts"]] == [1, 2, 4]
    assert described["parts"][2]["partition"] == "sweep-1" and described["parts"][2]["recordsByKind"] == {
        "BenchmarkRun": 4
    }
    assert described["newestPublication"] == 4


def test_the_parts_hold_what_the_single_file_export_holds(store, tmp_path):
    export_parts(store, tmp_path / "parts")
    single = export_jsonl(store, tmp_path / "single")
    tables = export_tables(store, tmp_path / "single")
    described = json.loads((tmp_path / "parts" / MANIFEST_NAME).read_text())
    whole = json.loads((tmp_path / "single" / JSONL_MANIFEST_NAME).read_text())
    # the lines of all parts are the single file's lines (each part in the catalogue's order within it)
    lines = b"".join((tmp_path / "parts" / p["files"][0]["path"]).read_bytes() for p in described["parts"])
    assert sorted(lines.splitlines()) == sorted(single.path.read_bytes().splitlines())
    assert described["records"] == whole["lineCount"] and described["recordsByKind"] == whole["recordsByKind"]
    collisions = {k: v for k, v in described["nameCollisions"].items() if k != "note"}
    assert collisions == {k: v for k, v in whole["nameCollisions"].items() if k != "note"}
    assert collisions["records"] >= 2  # the twin shares its run's name
    # the runs dataset, partitioned by source / gpu / liger_version, is runs.parquet's rows
    dataset = pd.read_parquet(tmp_path / "parts" / RUNS_DATASET)
    for column in ("source", "gpu", "liger_version"):
        dataset[column] = dataset[column].astype(object).where(dataset[column].notna(), None)
    expected = pd.read_parquet(tables.paths[RUNS_TABLE])
    columns = list(expected.columns)
    left = dataset[columns].sort_values("digest").reset_index(drop=True).astype(object)
    right = expected.sort_values("digest").reset_index(drop=True).astype(object)
    pd.testing.assert_frame_equal(left, right)
    assert dataset["gpu_product"].eq("NVIDIA B300").sum() == 3  # the new GPU's runs, resolved to its environment
    # a record's line in its part, found from the records table
    records = ds.dataset(tmp_path / "parts" / "tables" / "records").to_table().to_pandas()
    row = records.iloc[-1]
    path = tmp_path / "parts" / "jsonl" / f"{part_name(int(row['publication']))}.jsonl"
    line = path.read_bytes().splitlines()[int(row["line"]) - 1]
    assert digest_of(json.loads(line)) == row["digest"]


def test_a_missing_or_damaged_part_is_rewritten_with_a_warning(store, tmp_path):
    tmp_path = tmp_path / "out"  # beside the catalogue
    export_parts(store, tmp_path)
    before = _files(tmp_path)
    described = json.loads((tmp_path / MANIFEST_NAME).read_text())
    damaged = tmp_path / described["parts"][0]["files"][0]["path"]
    damaged.write_bytes(damaged.read_bytes()[:-10])
    missing = tmp_path / described["parts"][1]["files"][-1]["path"]
    missing.unlink()
    warnings = []
    result = export_parts(store, tmp_path, log=warnings.append)
    assert sorted(result.repaired) == [1, 2] and result.written == [] and warnings == result.warnings
    assert "damaged" in result.repaired[1] and "missing" in result.repaired[2]
    assert all(w.endswith("; rewritten") for w in warnings) and len(warnings) == 2
    assert result.recomputed().startswith("2 of 2 parts written (repaired 1, 2), 0 kept")
    assert _files(tmp_path) == before
    # same size, other bytes: only the sha256 check sees it
    data = bytearray(damaged.read_bytes())
    data[5] ^= 1
    damaged.write_bytes(bytes(data))
    assert export_parts(store, tmp_path).repaired == {}
    assert "sha256" in export_parts(store, tmp_path, verify="sha256").repaired[1]
    assert _files(tmp_path) == before


def test_a_killed_export_leaves_the_previous_manifest_whole(store, tmp_path, monkeypatch):
    out = tmp_path / "out"
    export_parts(store, out)
    previous = (out / MANIFEST_NAME).read_bytes()
    store.publish(factories.cloned_runs(factories.seed_manifests(), 6, start=200), partition="sweep-1")
    store.publish(factories.cloned_runs(factories.seed_manifests(), 6, start=300), partition="sweep-2")
    written = []
    real = parts_module._write_part

    def dies_on_the_second(*args, **kwargs):
        if written:
            raise KeyboardInterrupt  # killed midway
        written.append(args[2])
        return real(*args, **kwargs)

    monkeypatch.setattr(parts_module, "_write_part", dies_on_the_second)
    with pytest.raises(KeyboardInterrupt):
        export_parts(store, out)
    assert (out / MANIFEST_NAME).read_bytes() == previous and written == [3]
    _assert_manifest_whole(out)
    monkeypatch.undo()
    result = export_parts(store, out)
    assert result.written == [3, 4] and result.kept == [1, 2]
    export_parts(store, tmp_path / "rebuild")
    assert _files(out) == _files(tmp_path / "rebuild")


def test_parts_of_publications_the_catalogue_no_longer_has_are_removed(tmp_path):
    out = tmp_path / "out"
    with CatalogueStore.open(f"sqlite:///{tmp_path}/one.sqlite") as one:
        one.publish(POOL[:30], partition="a")
        one.publish(POOL[30:], partition="b")
        export_parts(one, out)
    (out / JSONL_NAME).write_text("stale\n")  # a single file of the layout before parts
    with CatalogueStore.open(f"sqlite:///{tmp_path}/two.sqlite") as two:  # another catalogue, one publication
        two.publish(POOL[:30], partition="a")
        result = export_parts(two, out)
        assert result.removed == [2] and result.kept == [1] and result.removed_files > 2
        assert "1 removed (publications 2 no longer in the catalogue)" in result.recomputed()
        export_parts(two, tmp_path / "rebuild")
    assert _files(out) == _files(tmp_path / "rebuild")


def test_the_single_file_command_writes_export_jsonl_bytes_and_validate_accepts_them(store, catalogue_url, tmp_path):
    sqlite_url = catalogue_url
    export_jsonl(store, tmp_path / "today")
    assert main(["export", "--catalogue", sqlite_url, "--out", str(tmp_path / "one")]) == 0
    assert (tmp_path / "one" / JSONL_NAME).read_bytes() == (tmp_path / "today" / JSONL_NAME).read_bytes()
    assert len(load_manifests(tmp_path / "one" / JSONL_NAME)) == len(POOL)
    assert main(["validate", str(tmp_path / "one" / JSONL_NAME)]) == 0
    # and `export --parts` writes the export per publication, as the asset does
    assert main(["export", "--catalogue", sqlite_url, "--out", str(tmp_path / "parts"), "--parts"]) == 0
    export_parts(store, tmp_path / "api")
    assert _files(tmp_path / "parts") == {
        **_files(tmp_path / "api"),
        "efficiency.jsonl": (tmp_path / "parts" / "efficiency.jsonl").read_bytes(),
    }
    assert main(["export", "--catalogue", sqlite_url, "--out", str(tmp_path / "parts"), "--parts", "--verify"]) == 0
    assert main(["export", "--catalogue", sqlite_url, "--out", str(tmp_path / "x"), "--rebuild"]) == 2


def test_an_acknowledgement_rewrites_the_manifest_and_its_file_only(store, tmp_path):
    from types import SimpleNamespace

    out = tmp_path / "out"
    export_parts(store, out)
    mark = SimpleNamespace(
        change="c1", status="expected", fixed_in="", note="known", by="me", at="2026-12-01T00:00:00Z"
    )
    store.acknowledge([mark])
    result = export_parts(store, out)
    assert result.recomputed() == "0 of 2 parts written, 2 kept; manifest rewritten (acknowledgements changed)"
    described = _assert_manifest_whole(out)
    lines = (out / described["acknowledgements"]["file"]).read_bytes()
    assert described["acknowledgements"]["sha256"] == hashlib.sha256(lines).hexdigest()
    assert json.loads(lines)["note"] == "known" and described["acknowledgements"]["lineCount"] == 1
    export_parts(store, tmp_path / "rebuild")
    assert _files(out) == _files(tmp_path / "rebuild")


def test_an_export_killed_inside_a_part_leaves_no_file_of_it(store, tmp_path, monkeypatch):
    out = tmp_path / "out"
    export_parts(store, out)
    before = _files(out)
    store.publish(factories.cloned_runs(factories.seed_manifests(), 6, start=400), partition="sweep-1")
    real = store.records

    def dies_midway(*args, **kwargs):
        for number, row in enumerate(real(*args, **kwargs)):
            if number == 3:
                raise RuntimeError("killed")
            yield row

    monkeypatch.setattr(store, "records", dies_midway)
    with pytest.raises(RuntimeError, match="killed"):
        export_parts(store, out)
    assert _files(out) == before  # no temporary file, no file of the new part, the previous manifest
    monkeypatch.undo()
    assert export_parts(store, out).written == [3]
    _assert_manifest_whole(out)
