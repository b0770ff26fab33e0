"""The import commands' own logic, without a daemon: which runs cover which partitions, the progress
lines a chain step writes and the command reads back, and what the summary says about a partition
that made no runs."""

from __future__ import annotations

import io
import json

from dagster import AssetKey, AssetMaterialization, AssetRecordsFilter, instance_for_test

from kernelindex_pipeline.defs.chain import _publish_partition, no_runs_reason, parse_progress, progress_message
from kernelindex_pipeline.defs.chain_values import PartRecords
from kernelindex_pipeline.defs.import_plan import (
    CATALOGUE_EXPORT,
    FINGERPRINT,
    PARTITION_TAG,
    RANGE_END_TAG,
    RANGE_START_TAG,
    AfterImport,
    after_import,
    partition_runs,
    stale_since,
)
from kernelindex_pipeline.defs.import_summary import ImportSummary, PartitionOutcome, Progress, on_its_own_line

REGISTERED = ["a|0.1", "b|0.1", "a|0.2", "b|0.2", "a|0.3"]


def test_consecutive_partitions_share_one_run_and_gaps_split_them():
    assert partition_runs(REGISTERED, REGISTERED, {"t": "v"}) == [
        {"t": "v", RANGE_START_TAG: "a|0.1", RANGE_END_TAG: "a|0.3"}
    ]
    assert partition_runs(["a|0.3", "a|0.1", "b|0.1"], REGISTERED, {}) == [
        {RANGE_START_TAG: "a|0.1", RANGE_END_TAG: "b|0.1"},
        {PARTITION_TAG: "a|0.3"},
    ]


def test_progress_lines_round_trip_and_other_lines_are_not_progress():
    info = {"rows": 3, "runs": 0, "why_no_runs": "no rows upstream"}
    assert parse_progress(progress_message("catalogue_publication", "a|0.1", info)) == (
        "catalogue_publication",
        "a|0.1",
        info,
    )
    assert parse_progress("parsed 3 rows") is None


def test_why_a_partition_made_no_runs():
    empty = {"rowsRead": 0, "runs": 0, "issues": [], "skipped": {}}
    assert no_runs_reason(empty) == "no rows upstream"
    skipped = {
        "rowsRead": 5,
        "runs": 0,
        "issues": [{"row": 1}],
        "skipped": {"uncuratedKernels": {"x": 4}, "unknownGpu": 0},
    }
    assert no_runs_reason(skipped) == "every row skipped: rows with issues 1, uncuratedKernels 4"


def test_summary_and_non_terminal_progress_name_the_reason():
    outcome = PartitionOutcome(
        "a|0.1",
        {
            "rows": 4,
            "runs": 0,
            "new": 0,
            "already_present": 0,
            "issues": 0,
            "why_no_runs": "every row skipped: uncuratedKernels 4",
        },
    )
    summary = ImportSummary(
        "history",
        "history of liger-kernel 9.9",
        ["a|0.1", "b|0.1"],
        run_ids=["r"],
        outcomes={"a|0.1": outcome},
        catalogue_by_kind={"BenchmarkRun": 0},
    )
    lines = summary.lines()
    assert (
        lines[0].startswith("history of liger-kernel 9.9: 2 partitions in 1 run(s)")
        and "(1 published, 1 not)" in lines[0]
    )
    assert "  a|0.1: 4 rows, 0 runs, 0 new, 0 already present - every row skipped: uncuratedKernels 4" in lines
    assert not summary.ok
    stream = io.StringIO()  # not a terminal: one line per published partition, no bar
    progress = Progress(2, "history import", stream=stream)
    progress.step("benchmark_csv", None)
    progress.step("catalogue_publication", outcome)
    progress.close()
    assert (
        stream.getvalue()
        == "[1/2] a|0.1: 4 rows, 0 runs, 0 new, 0 already present - every row skipped: uncuratedKernels 4\n"
    )


def test_the_summary_names_the_first_rows_with_issues_and_the_file_that_lists_them_all(
    tmp_path, monkeypatch, sqlite_url
):
    """Issue 30: 'issues 5' alone said neither which rows nor why."""
    from kernelindex_pipeline.catalogue.store import CatalogueStore
    from kernelindex_pipeline.liger.partition import PartitionCsv

    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    problems = [{"row": r, "problem": f"metric_value {r}x is not a number"} for r in (3, 7, 12, 40, 41)]
    part = PartitionCsv("h100", "0.8.5", "ci", b"", {"locator": "https://host/benchmarks/49e6353/benchmark.csv"})
    report = {"rowsRead": 50, "runs": 45, "issues": problems, "skipped": {}}
    with CatalogueStore.open(sqlite_url) as store:
        info = _publish_partition(store, "ci:h100|0.8.5", [part], [PartRecords({}, report)])
    assert info["first_issues"] == [
        "row 3: metric_value 3x is not a number",
        "row 7: metric_value 7x is not a number",
        "row 12: metric_value 12x is not a number",
    ]
    listed = json.loads(open(info["issues_file"]).read())
    assert [i["row"] for i in listed["issues"]] == [3, 7, 12, 40, 41]
    assert {i["file"] for i in listed["issues"]} == {"https://host/benchmarks/49e6353/benchmark.csv"}
    assert parse_progress(progress_message("catalogue_publication", "h100|0.8.5", info))[2] == info
    summary = ImportSummary(
        "ci",
        "Liger CI results",
        ["h100|0.8.5"],
        run_ids=["r"],
        outcomes={"h100|0.8.5": PartitionOutcome("h100|0.8.5", info)},
    )
    assert (
        "h100|0.8.5: 5 rows with issues: row 3: metric_value 3x is not a number; row 7: metric_value 7x is not a "
        f"number; row 12: metric_value 12x is not a number, +2 more (all in {info['issues_file']})"
    ) in summary.lines()


def test_after_its_runs_an_import_waits_for_the_refresh_only_when_asked_and_one_can_come():
    """Issue 21: the import commands return when their own runs end; --wait also waits for the refresh."""
    assert after_import(True, True, wait=False, automation_stopped=False) is AfterImport.ON_ITS_OWN
    assert after_import(True, True, wait=True, automation_stopped=False) is AfterImport.WAIT
    # No refresh comes, so none is awaited even with --wait: nothing stale, a stopped automation, nothing published.
    assert after_import(True, False, wait=True, automation_stopped=False) is AfterImport.UNCHANGED
    assert after_import(True, True, wait=True, automation_stopped=True) is AfterImport.AUTOMATION_STOPPED
    assert after_import(False, False, wait=True, automation_stopped=False) is AfterImport.NOTHING


def _materialized(instance, key, fingerprint: str | None, partition: str | None = None) -> float:
    metadata = {FINGERPRINT: fingerprint} if fingerprint is not None else {"records": 1}
    instance.report_runless_asset_event(AssetMaterialization(key, partition=partition, metadata=metadata))
    return instance.fetch_materializations(AssetRecordsFilter(asset_key=key), limit=1).records[0].timestamp


def test_the_catalogue_wide_assets_are_stale_from_the_first_publication_of_content_the_export_did_not_see():
    """What `--wait` waits for when the import itself added nothing: an earlier import that did not wait left
    the refresh to come (the export's fingerprint is not the catalogue's)."""
    history, ci = AssetKey(["history", "catalogue_publication"]), AssetKey(["ci", "catalogue_publication"])
    with instance_for_test() as instance:
        _materialized(instance, history, "sha256:old", "a|0.1")
        assert stale_since(instance, "sha256:old", [history, ci]) is not None  # never exported
        _materialized(instance, CATALOGUE_EXPORT, "sha256:old")
        assert stale_since(instance, "sha256:old", [history, ci]) is None
        first = _materialized(instance, ci, "sha256:new", "b|0.1")  # brought the catalogue to new content
        _materialized(instance, ci, "sha256:new", "b|0.2")  # a later publication of nothing new
        _materialized(instance, history, "sha256:new", "a|0.1")
        assert stale_since(instance, "sha256:new", [history, ci]) == first
        _materialized(instance, CATALOGUE_EXPORT, "sha256:new")
        assert stale_since(instance, "sha256:new", [history, ci]) is None
        # An export made before it recorded its fingerprint cannot tell: nothing is awaited that may never come.
        _materialized(instance, ci, "sha256:newer", "b|0.1")
        _materialized(instance, CATALOGUE_EXPORT, None)
        assert stale_since(instance, "sha256:newer", [history, ci]) is None


def test_the_line_of_a_refresh_left_to_the_automation_says_who_runs_it_and_how_to_wait():
    ours, theirs = on_its_own_line(our_daemon=True), on_its_own_line(our_daemon=False)
    assert "dagster dev" in ours and "the next import command" in ours and "--wait" in ours
    assert "running dagster-daemon" in theirs and "UI" in theirs and "--wait" in theirs
