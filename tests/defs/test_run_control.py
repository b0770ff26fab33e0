"""`import-ci` as an operator runs it: a real process that launches real runs on the instance under
DAGSTER_HOME (through `dagster job launch` and the daemon), waits for them, and prints a summary.
Runs the small CI fixture files: the catalogue then holds exactly what `transform` makes of each file,
the runs carry the code location's origin (so the UI lists them under their job), and a second call
publishes nothing new."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from dagster import AssetKey, DagsterInstance, RunsFilter

from kernelindex_pipeline.catalogue.store import CatalogueStore
from kernelindex_pipeline.liger import import_csv
from tests import support

FIXTURES = support.FIXTURES / "liger-ci"
FILES = [FIXTURES / name for name in ("7644a0f-v0.7.0.csv", "7644a0f.csv", "0701bab.csv")]


def _cli(*args, home: Path):
    return subprocess.run(
        [sys.executable, "-m", "kernelindex_pipeline.cli", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "DAGSTER_HOME": str(home)},
        stdin=subprocess.DEVNULL,
    )


def _catalogue(home: Path, expected: set[str]) -> tuple[set[str], int]:
    """(the expected digests the catalogue holds, how many records it holds in all)."""
    with CatalogueStore.open(None, home=home) as store:
        return store.present_digests(expected), sum(store.counts_by_kind().values())


@pytest.mark.slow  # 40 s on a quiet two-core machine
def test_import_ci_publishes_what_transform_makes_then_nothing_new(tmp_path):
    home = tmp_path / "home"
    first = _cli("import-ci", "--wait", *map(str, FILES), home=home)
    assert first.returncode == 0, first.stdout + first.stderr[-3000:]
    # --wait: the command also waited for the catalogue automation's refresh, with a line per refreshed asset.
    assert "waiting for the catalogue automation" in first.stderr and "] catalogue_export refreshed" in first.stderr
    assert "catalogue-wide assets refreshed by run" in first.stderr, first.stderr[-3000:]
    assert (home / "exports" / "kernelindex-catalogue.parts.json").is_file()  # the export per publication
    expected = set().union(*(import_csv(path).manifests for path in FILES))
    assert _catalogue(home, expected) == (expected, len(expected))
    assert "2 partitions in 1 run(s)" in first.stdout, first.stdout
    # Without -v the operator sees a summary, not Dagster's event log.
    assert "STEP_START" not in first.stdout + first.stderr and "DEBUG" not in first.stdout + first.stderr
    assert "dagster dev -w" in first.stderr
    # Dagster's telemetry thread uploads (then deletes) whatever is in these folders: nothing of ours goes there.
    for reserved in ("logs", ".logs_queue"):
        ours = [str(path) for path in (home / reserved).rglob("*") if path.is_file()]
        assert not ours, f"files in DAGSTER_HOME/{reserved}, which Dagster's telemetry upload reads: {ours}"
    assert (home / "kernelindex" / "import-daemon.log").stat().st_size > 0  # the daemon's output, kept where it is ours

    with DagsterInstance.from_config(str(home)) as instance:
        (run,) = instance.get_runs(RunsFilter(job_name="ci_import_job"))
        assert run.status.value == "SUCCESS"
        assert run.remote_job_origin is not None and run.remote_job_origin.location_name == "kernelindex_pipeline"
        assert instance.get_dynamic_partitions("ci_partitions") == ["nvidia-h200|0.5.10", "nvidia-h100-80gb-hbm3|0.7.0"]
        assert instance.get_materialized_partitions(AssetKey(["ci", "catalogue_publication"])) == set(
            instance.get_dynamic_partitions("ci_partitions")
        )

    second = _cli("import-ci", *map(str, FILES[:2]), home=home)
    assert second.returncode == 0, second.stderr[-3000:]
    assert "0 partitions in 0 run(s)" in second.stdout and "1 partitions unchanged" in second.stdout, second.stdout
    assert _catalogue(home, expected) == (expected, len(expected))
    with DagsterInstance.from_config(str(home)) as instance:
        assert len(instance.get_runs(RunsFilter(job_name="ci_import_job"))) == 1


@pytest.mark.slow  # about 40 s on a quiet two-core machine
def test_import_ci_returns_when_its_own_run_ends_and_leaves_the_refresh_to_the_automation(tmp_path):
    """Issue 21: without --wait the command waits for its own runs only; the catalogue automation refreshes
    the catalogue-wide assets on its own (on `dagster dev`'s daemon, or the next import's). Nothing is left
    running: a refresh the command's own daemon had already started still ends before that daemon stops."""
    home = tmp_path / "home"
    done = _cli("import-ci", str(FILES[2]), home=home)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert "1 partitions in 1 run(s)" in done.stdout and "(1 published, 0 not)" in done.stdout, done.stdout
    assert "refreshes export, regressions, coverage and report on its own" in done.stderr, done.stderr[-3000:]
    assert "waiting for the catalogue automation" not in done.stderr and "NOT refreshed" not in done.stderr
    expected = import_csv(FILES[2]).manifests
    assert _catalogue(home, set(expected)) == (set(expected), len(expected))
    with DagsterInstance.from_config(str(home)) as instance:
        (run,) = instance.get_runs(RunsFilter(job_name="ci_import_job"))
        assert run.status.value == "SUCCESS"
        # No run is cut off. A refresh the automation queued while the command's daemon stopped stays queued for
        # the next daemon (as a dead command's queued runs do): it selects the catalogue-wide assets only.
        left = [(r.run_id, r.job_name, r.status.value) for r in instance.get_runs() if not r.is_finished]
        queued_refreshes = [
            r.run_id
            for r in instance.get_runs()
            if r.status.value == "QUEUED" and r.asset_selection and AssetKey("catalogue_export") in r.asset_selection
        ]
        assert {run_id for run_id, _, _ in left} == set(queued_refreshes), f"runs left unfinished: {left}"

    # The same file again with --wait: nothing new, yet the command leaves the catalogue-wide assets showing the
    # catalogue as it is (the refresh the first command left to the automation, unless its daemon already ran it).
    again = _cli("import-ci", "--wait", str(FILES[2]), home=home)
    assert again.returncode == 0, again.stdout + again.stderr[-3000:]
    assert "publication: 0 new" in again.stdout and "1 partitions unchanged" in again.stdout, again.stdout
    with CatalogueStore.open(None, home=home) as store:
        fingerprint = store.content_fingerprint()
    with DagsterInstance.from_config(str(home)) as instance:
        (export,) = instance.fetch_materializations(AssetKey("catalogue_export"), limit=1).records
        assert export.asset_materialization.metadata["catalogue_fingerprint"].value == fingerprint, again.stderr[-3000:]


def test_import_ci_names_a_bad_locator_and_lists_nothing(tmp_path):
    home = tmp_path / "home"
    completed = _cli("import-ci", str(tmp_path / "absent.csv"), "https://user:s3cret@example.invalid/x.csv", home=home)
    assert completed.returncode == 1
    assert "absent.csv: no such file" in completed.stderr and "s3cret" not in completed.stderr
    assert not (home / "liger-ci-files.txt").exists()
