"""The operator commands: `import-history` (the README's main job) and `export`, as real processes."""

from __future__ import annotations

import json

import pytest

from kernelindex_pipeline.catalogue.store import CatalogueStore
from tests.support.cli_process import run_cli


def test_export_writes_jsonl_manifest_and_a_bundle_that_validates(tmp_path, sqlite_url, catalogue_records):
    store = CatalogueStore.open(sqlite_url)
    store.publish(catalogue_records, partition="seed|0.0.0")
    store.close()
    out = tmp_path / "export"
    completed = run_cli("export", "--catalogue", sqlite_url, "--out", str(out))
    assert completed.returncode == 0, completed.stderr
    manifest = json.loads((out / "kernelindex-catalogue.jsonl.manifest.json").read_text())
    assert manifest["lineCount"] == len(catalogue_records)
    for name in ("kernelindex-catalogue.jsonl", "kernelindex-catalogue.bundle.yaml"):
        validated = run_cli("validate", str(out / name))
        assert validated.returncode == 0, validated.stdout + validated.stderr


def test_export_names_an_unreachable_catalogue_in_one_line(tmp_path):
    completed = run_cli(
        "export", "--catalogue", "postgresql+psycopg://user:hunter2@127.0.0.1:1/db", "--out", str(tmp_path)
    )
    assert completed.returncode == 1
    assert "hunter2" not in completed.stderr and len(completed.stderr.strip().splitlines()) == 1


def test_import_history_usage_error_for_a_bad_partition(tmp_path):
    completed = run_cli("import-history", "--partition", "nvidia-h100-80gb-hbm3", env={"DAGSTER_HOME": str(tmp_path)})
    assert completed.returncode == 2 and "GPU|VERSION" in completed.stderr


@pytest.mark.network
@pytest.mark.slow  # 53 s on a quiet two-core machine
def test_import_history_runs_a_partition_through_dagster(tmp_path):
    home = tmp_path / "home"
    env = {"DAGSTER_HOME": str(home), "KERNELINDEX_HISTORY_RELEASE": "0.8.5"}
    completed = run_cli("import-history", "--wait", "--partition", "nvidia-b200|0.8.0", env=env)
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert (home / "dagster.yaml").exists()
    assert "1 partitions in 1 run(s)" in completed.stdout and "BenchmarkRun 32" in completed.stdout
    again = run_cli("import-history", "--partition", "nvidia-b200|0.8.0", env=env)
    assert "publication: 0 new" in again.stdout
    # Nothing new: the catalogue's fingerprint is unchanged, no refresh comes, and none is awaited or called missing.
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-2000:]
    assert "the catalogue is unchanged (0 new records)" in again.stdout + again.stderr
    # Real runs of history_import_job with the code location's origin: the UI lists them under the job.
    from dagster import DagsterInstance, RunsFilter

    with DagsterInstance.from_config(str(home)) as instance:
        history_runs = instance.get_runs(RunsFilter(job_name="history_import_job"))
        assert len(history_runs) == 2
        assert {run.remote_job_origin.location_name for run in history_runs} == {"kernelindex_pipeline"}
        assert {run.tags.get("dagster/partition") for run in history_runs} == {"nvidia-b200|0.8.0"}


@pytest.mark.slow  # three CLI processes over the CI slice: about 40 s on two shared cores
def test_export_for_kernelindex_from_the_catalogue(tmp_path, sqlite_url):
    """`export --kernelindex`: the two KernelIndex files of a catalogue, memory runs only on request, a local
    file's snapshot by its file:// URI."""
    import yaml

    from kernelindex_pipeline.liger import import_csv
    from tests.support import FIXTURES

    csv = FIXTURES / "liger-ci-slice.csv"
    records = list(import_csv(csv).manifests.values())
    store = CatalogueStore.open(sqlite_url)
    store.publish(records, partition="ci|slice", source={"locator": csv.resolve().as_uri(), "sha256": "0" * 64})
    store.close()
    out = tmp_path / "export"
    completed = run_cli("export", "--catalogue", sqlite_url, "--out", str(out), "--kernelindex")
    assert completed.returncode == 0, completed.stderr
    document = yaml.safe_load((out / "kernelindex-submission.yaml").read_text())
    bundle = json.loads((out / "kernelindex-import-bundle.json").read_text())
    memory = sum("timing" not in r["spec"] for r in records if r["kind"] == "BenchmarkRun")
    speed = sum(r["kind"] == "BenchmarkRun" for r in records) - memory
    assert memory and len(document["runs"]) == len(bundle["runs"]) == speed
    assert [(s["locator"], s["contentDigest"]) for s in bundle["snapshots"]] == [
        (csv.resolve().as_uri(), "sha256:" + "0" * 64)
    ]
    assert not (out / "kernelindex-import-bundle.sweeps.json").exists()  # Liger's rows only
    stamps = [r["manifest"]["spec"]["observedAt"] for r in bundle["runs"]]
    assert stamps == sorted(stamps)  # time order: a catalogue lists runs by name
    with_memory = run_cli(
        "export", "--catalogue", sqlite_url, "--out", str(tmp_path / "m"), "--kernelindex", "--kernelindex-memory"
    )
    assert with_memory.returncode == 0, with_memory.stderr
    assert len(yaml.safe_load((tmp_path / "m" / "kernelindex-submission.yaml").read_text())["runs"]) == speed + memory
    alone = run_cli("export", "--catalogue", sqlite_url, "--out", str(tmp_path / "x"), "--kernelindex-memory")
    assert alone.returncode == 2 and "--kernelindex-memory goes with --kernelindex" in alone.stderr


def test_every_ci_run_keeps_the_snapshot_of_its_file_local_files_too(tmp_path, sqlite_url):
    """Issue 32, item 2: CI files imported as `import-ci` reads them (the shipped snapshot unpacked, a CI file given
    as a path) keep a source snapshot each in the importer bundle, with the digest and size of the file itself:
    the shipped snapshot's by the gh-pages URL it was published at, another local file by its file:// URI; a
    sweep's working directory stays in our catalogue. The bundle comes with its loader (kernelindex-load-bundle.mjs)."""
    import hashlib
    import shutil

    from kernelindex_pipeline.catalogue.export import BUNDLE_LOADER_NAME
    from kernelindex_pipeline.imports.fetch import fetch
    from kernelindex_pipeline.liger import ci, identity, import_csv
    from kernelindex_pipeline.liger.ci_snapshot import GH_PAGES, extract_snapshot
    from tests.support import FIXTURES
    from tests.support import kernelindex_scenarios as scenarios

    shipped = next(path for path in extract_snapshot(tmp_path / "home") if path.name == "7644a0f-v0.7.0.csv")
    given = tmp_path / "mine" / "0701bab.csv"  # a CI file (here a slice of one) given as a path
    given.parent.mkdir()
    shutil.copy(FIXTURES / "liger-ci" / "0701bab.csv", given)
    with CatalogueStore.open(sqlite_url) as store:
        for path in (shipped, given):
            for (gpu, version), parts in ci.gather([fetch(str(path))]).parts.items():
                for part in parts:
                    records = import_csv(
                        part.csv_bytes, profile="reference", code_ref=identity.code_ref_of_locator(str(path))
                    )
                    store.publish(records.manifests, partition=f"ci:{gpu}|{version}", source=part.snapshot)
        sweep, _ = scenarios.standin_sweep()
        store.publish(sweep, partition="sweep:x", source={"locator": "sweep:/work/run-1/data.csv", "sha256": "2" * 64})
    out = tmp_path / "export"
    completed = run_cli("export", "--catalogue", sqlite_url, "--out", str(out), "--kernelindex")
    assert completed.returncode == 0, completed.stderr
    bundle = json.loads((out / "kernelindex-import-bundle.json").read_text())
    found = {(s["locator"], s["contentDigest"], s["sizeBytes"]) for s in bundle["snapshots"]}
    assert found == {
        (
            f"{GH_PAGES}/7644a0f-v0.7.0/benchmark.csv",
            "sha256:" + hashlib.sha256(shipped.read_bytes()).hexdigest(),
            shipped.stat().st_size,
        ),
        (given.as_uri(), "sha256:" + hashlib.sha256(given.read_bytes()).hexdigest(), given.stat().st_size),
    }
    sweeps = json.loads((out / "kernelindex-import-bundle.sweeps.json").read_text())
    assert sweeps["runs"] and sweeps["snapshots"] == []
    assert "1 source snapshots of local files keep their file:// locator" in completed.stdout
    assert (out / BUNDLE_LOADER_NAME).is_file()


def test_export_for_kernelindex_links_the_operations_at_the_source_commit(tmp_path, sqlite_url, capsys):
    """`export --kernelindex --source-commit SHA`: the operations link their benchmark script at SHA, as KernelIndex's
    importer does; without it, at the tag of the newest history release the catalogue holds (the history
    chain's snapshots name the sdist's CSV and its version); a ref that is no commit or tag is a usage error."""
    import yaml

    from kernelindex_pipeline.cli import main
    from tests.support import kernelindex_scenarios as scenarios

    records, _ = scenarios.seeds()
    sdist = "https://files.pythonhosted.org/packages/ab/liger_kernel-{v}.tar.gz#liger_kernel-{v}/benchmark/data/all_benchmark_data.csv"
    with CatalogueStore.open(sqlite_url) as store:
        for version in ("0.8.5", "0.10.0", "0.9.1"):
            source = {"locator": sdist.format(v=version), "resolvedVersion": version, "sha256": "1" * 64}
            store.publish(records, partition=f"nvidia-h100-80gb-hbm3|{version}", source=source)

    def script_refs(*extra: str) -> set[str]:
        out = tmp_path / "-".join(extra or ("default",))
        assert main(["export", "--catalogue", sqlite_url, "--out", str(out), "--kernelindex", *extra]) == 0
        document = yaml.safe_load((out / "kernelindex-submission.yaml").read_text())
        assert document["operations"]
        return {ref["url"].split("/")[6] for op in document["operations"] for ref in op["metadata"]["sourceRefs"]}

    commit = "2120862ba532c9449e72d603ba6324310ae756e7"
    assert script_refs("--source-commit", commit) == {commit}
    assert script_refs() == {"v0.10.0"}  # the newest release by version, not the last published
    bad = ["export", "--catalogue", sqlite_url, "--out", str(tmp_path / "x"), "--kernelindex", "--source-commit", "a/b"]
    assert main(bad) == 2 and "--source-commit: 'a/b' is not a commit or tag" in capsys.readouterr().err
