"""The catalogue-wide assets downstream of publication: export, regressions (with its warning check)
and the HTML report, materialized through Dagster over a published catalogue."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from dagster import DagsterInstance, materialize

from kernelindex_pipeline.defs.catalogue_assets import (
    benchmark_coverage,
    benchmark_regressions,
    catalogue_export,
    catalogue_report,
    efficiency_table,
    no_regressions,
)
from kernelindex_pipeline.defs.resources import (
    CatalogueResource,
    EfficiencySettingsResource,
    LigerGitResource,
    RegressionSettingsResource,
)
from kernelindex_pipeline.records.io import load_manifests
from tests.defs.test_history_chain import _materialize_all, instance, resources  # noqa: F401 (fixtures)
from tests.support.factories import SAMPLE_GPU, SampleCatalogue


def test_export_regressions_and_report_over_the_published_history(instance, resources, tmp_path, sqlite_url):  # noqa: F811
    assert _materialize_all(instance, resources).success
    out = tmp_path / "out"
    config = {
        "ops": {
            "catalogue_export": {"config": {"out_dir": str(out / "export")}},
            "catalogue_report": {"config": {"out_dir": str(out / "report")}},
        }
    }
    detection = {
        "catalogue": CatalogueResource(url=sqlite_url),
        "regression_settings": RegressionSettingsResource(
            alpha=0.001, min_effect=0.05, judgement_store=str(tmp_path / "judgements.json")
        ),
        "liger_git": LigerGitResource(),
        "efficiency_settings": EfficiencySettingsResource(),
    }
    with DagsterInstance.ephemeral() as fresh:
        result = materialize(
            [
                efficiency_table,
                catalogue_export,
                benchmark_regressions,
                benchmark_coverage,
                catalogue_report,
                no_regressions,
            ],
            instance=fresh,
            resources=detection,
            run_config=config,
        )
    assert result.success

    # each says how much it recomputed and why (issue 33)
    recomputed = {
        node: result.asset_materializations_for_node(node)[0].metadata["recomputed"].value
        for node in ("catalogue_export", "benchmark_regressions", "benchmark_coverage", "catalogue_report")
    }
    # a first export into an empty folder: every part (one per publication of the history's three partitions)
    assert recomputed["catalogue_export"].startswith("all 3 parts written (no manifest: a first export)")
    assert "the KernelIndex files written whole" in recomputed["catalogue_export"]
    assert " series judged afresh (their inputs changed), 0 reused" in recomputed["benchmark_regressions"]
    assert " kernel pages rewritten (their data changed)" in recomputed["catalogue_report"]
    assert recomputed["benchmark_coverage"].startswith("all ")

    (export,) = result.asset_materializations_for_node("catalogue_export")
    described = json.loads(Path(export.metadata["manifest"].value).read_text())
    jsonl = [Path(export.metadata["manifest"].value).parent / p["files"][0]["path"] for p in described["parts"]]
    records = [m for path in jsonl for _, m in load_manifests(path)]
    assert export.metadata["records"].value == len(records) == described["records"] > 0
    assert export.metadata["parts"].value == 3 and export.metadata["export_warnings"].value == []
    assert export.metadata["table_rows"].value["runs"] == sum(m["kind"] == "BenchmarkRun" for m in records)
    # the KernelIndex files: speed runs only (memory runs behind kernelindex_memory_runs, default off)
    runs = [m for m in records if m["kind"] == "BenchmarkRun"]
    assert export.metadata["kernelindex_runs"].value == sum("timing" in r["spec"] for r in runs) < len(runs)
    assert Path(export.metadata["kernelindex_submission"].value).is_file()
    # operations link their benchmark script at the revision of the history's sdist (liger-kernel 0.6.0: v0.6.0)
    submission = yaml.safe_load(Path(export.metadata["kernelindex_submission"].value).read_text("utf-8"))
    script_urls = [ref["url"] for op in submission["operations"] for ref in op["metadata"].get("sourceRefs", [])]
    assert submission["operations"] and len(script_urls) == len(submission["operations"])
    assert all(url.startswith("https://github.com/linkedin/Liger-Kernel/blob/v0.6.0/benchmark/") for url in script_urls)

    # rms_norm on the H100 at 0.5.0 and 0.6.0 and on the A100 at 0.6.0: one or two runs per series, so every
    # series is insufficient (a change needs two runs on each side): reported as such, not as "no regression".
    (regressions,) = result.asset_materializations_for_node("benchmark_regressions")
    assert regressions.metadata["regressions"].value == 0 and regressions.metadata["series_judged"].value == 0
    assert regressions.metadata["insufficient_data"].value >= 12  # 3 workloads x 2 providers x 2 GPUs (+ memory series)
    assert "not evidence of 'no regression'" in regressions.metadata["table"].value
    (check,) = result.get_asset_check_evaluations()
    # ... and the check judged nothing: no green "Passed", a warning that says why
    assert check.check_name == "no_regressions" and not check.passed and check.severity.value == "WARN"
    assert check.description.startswith("Nothing judged: ") and "fewer than 4 runs" in check.description

    # Coverage: every history row of the three partitions, once, even after a re-import of one of them.
    assert _materialize_all(instance, resources).success
    with DagsterInstance.ephemeral() as fresh:
        again = materialize(
            [benchmark_coverage], instance=fresh, resources={"catalogue": CatalogueResource(url=sqlite_url)}
        )
    (coverage,) = again.asset_materializations_for_node("benchmark_coverage")
    by_metric = coverage.metadata["by_metric"].value
    assert (by_metric["speed"]["rows"], by_metric["speed"]["runs"]) == (
        21,
        18,
    )  # the uncurated kernel's 3 rows are skipped
    assert (by_metric["memory"]["rows"], by_metric["memory"]["runs"]) == (3, 3)
    assert set(coverage.metadata["by_source"].value) == {"history"}

    (report,) = result.asset_materializations_for_node("catalogue_report")
    index = Path(report.metadata["path"].value)
    # the site: its landing page with the coverage pivot (from the publications' import reports), a page and
    # the data of each kernel (rms_norm and the uncurated kernel's skipped rows: one kernel)
    page = index.read_text()
    assert 'id="pivot"' in page and 'data-kernel="rms_norm"' in page
    assert (index.parent / "kernels" / "rms-norm.html").is_file() and (index.parent / "data" / "rms-norm.js").is_file()
    assert report.metadata["kernels_rewritten"].value == 1
    assert "|" in report.metadata["summary"].value  # a markdown table
    json.dumps({k: str(v) for k, v in report.metadata.items()})  # metadata is serialisable as shown in the UI


def test_regressions_asset_warns_on_a_slowdown_over_every_run(tmp_path, sqlite_url):
    """The asset and its check on a catalogue where a series has runs enough (`_sweeps_with_a_slowdown`)."""
    from kernelindex_pipeline.catalogue.store import CatalogueStore

    with CatalogueStore.open(sqlite_url) as catalogue_store:
        catalogue_store.publish(_sweeps_with_a_slowdown().manifests(), partition="samples")
    store = tmp_path / "judgements.json"
    with DagsterInstance.ephemeral() as fresh:
        result = materialize(
            [benchmark_regressions, no_regressions],
            instance=fresh,
            resources={
                "catalogue": CatalogueResource(url=sqlite_url),
                "regression_settings": RegressionSettingsResource(judgement_store=str(store)),
                "liger_git": LigerGitResource(path=str(tmp_path / "no-clone")),
            },
        )
    assert result.success
    (regressions,) = result.asset_materializations_for_node("benchmark_regressions")
    assert regressions.metadata["regressions"].value == 1 and regressions.metadata["series_judged"].value == 3
    # the version label alone names no cause; the clone given is missing: a warning, detection goes on
    assert "| unknown | rms_norm | forward | liger |" in regressions.metadata["table"].value
    (check,) = result.get_asset_check_evaluations()
    # a slowdown no one acknowledged: an error (red in the UI, blocking nothing), not a warning
    assert not check.passed and check.severity.value == "ERROR" and check.metadata["regressions"].value == 1
    assert regressions.metadata["pending"].value == check.metadata["pending"].value == 0
    assert check.description.startswith("0 slowdowns from 0 commits. Without a commit: 1 unknown.")
    # One settings object, one detection: with a minimum effect of 50 % the asset finds no slowdown, and the
    # check (which reads the asset's stored result instead of detecting again with defaults) agrees.
    with DagsterInstance.ephemeral() as fresh:
        lenient = materialize(
            [benchmark_regressions, no_regressions],
            instance=fresh,
            resources={
                "catalogue": CatalogueResource(url=sqlite_url),
                "regression_settings": RegressionSettingsResource(min_effect=0.5, judgement_store=str(store)),
                "liger_git": LigerGitResource(),
            },
        )
    (regressions,) = lenient.asset_materializations_for_node("benchmark_regressions")
    assert regressions.metadata["regressions"].value == 0 and regressions.metadata["settings"].value["minEffect"] == 0.5
    assert (regressions.metadata["series_rejudged"].value, regressions.metadata["series_reused"].value) == (3, 0)
    (check,) = lenient.get_asset_check_evaluations()
    assert check.passed and check.metadata["regressions"].value == 0


def _sweeps_with_a_slowdown(gpu: str = SAMPLE_GPU, scale: float = 1.0) -> SampleCatalogue:
    """Six sweeps of rms_norm on `gpu`, Liger 30 % slower from the fourth (a new version) on; torch and
    huggingface unchanged; times of about `scale` ms."""
    catalogue = SampleCatalogue()
    for sweep in range(6):
        for provider in ("liger", "torch", "huggingface"):
            slower = 1.3 if provider == "liger" and sweep >= 3 else 1.0
            catalogue.run(
                provider=provider,
                gpu=gpu,
                median_ns=int(1_000_000 * scale * slower * (1 + 0.004 * (sweep % 2))),
                version="0.8.0" if sweep < 3 else "0.8.1",
                timestamp=f"2025-0{sweep + 1}-01 00:00:00",
            )
    return catalogue


def test_a_refresh_judges_afresh_only_the_series_whose_runs_changed(tmp_path, sqlite_url):
    """Two materializations of `benchmark_regressions` with the same judgement store: after runs of another
    GPU were published, the H100's three series are reused and only the new GPU's are judged."""
    from kernelindex_pipeline.catalogue.store import CatalogueStore

    detection = {
        "catalogue": CatalogueResource(url=sqlite_url),
        "regression_settings": RegressionSettingsResource(judgement_store=str(tmp_path / "judgements.json")),
        "liger_git": LigerGitResource(),
    }

    said = []

    def refresh(rebuild: bool = False):
        config = {"ops": {"benchmark_regressions": {"config": {"rebuild": rebuild}}}}
        with DagsterInstance.ephemeral() as fresh:
            result = materialize([benchmark_regressions], instance=fresh, resources=detection, run_config=config)
        (materialization,) = result.asset_materializations_for_node("benchmark_regressions")
        metadata = materialization.metadata
        said.append(metadata["recomputed"].value)
        return metadata["series_rejudged"].value, metadata["series_reused"].value, metadata["regressions"].value

    with CatalogueStore.open(sqlite_url) as store:
        store.publish(_sweeps_with_a_slowdown().manifests(), partition="h100")
    assert refresh() == (3, 0, 1)
    with CatalogueStore.open(sqlite_url) as store:
        # other times: a series whose inputs equal a stored one's would be reused, which is right but tests less
        store.publish(_sweeps_with_a_slowdown("NVIDIA A100-SXM4-80GB", scale=1.7).manifests(), partition="a100")
    assert refresh() == (3, 3, 2)
    assert refresh() == (0, 6, 2)  # nothing changed: nothing judged
    assert said[-1].startswith("run table: 0 publication files written (0 runs read from their manifests), 2 kept")
    assert "the previous result kept whole (6 series): nothing it depends on changed" in said[-1]
    assert refresh(rebuild=True) == (0, 6, 2)  # every publication read again, detected again: the same judgements
    assert said[-1].startswith("run table: 2 publication files written (") and "kept whole" not in said[-1]


@pytest.mark.slow
def test_efficiency_table_asset_over_the_published_history(instance, resources, tmp_path, sqlite_url):  # noqa: F811
    """rms_norm's history runs get a percent of peak (H100, A100) written beside the records, never into them."""
    from kernelindex_pipeline.catalogue.store import CatalogueStore
    from kernelindex_pipeline.records.canonical import digest_of
    from kernelindex_pipeline.reporting.efficiency import read_sidecar

    assert _materialize_all(instance, resources).success
    with CatalogueStore.open(sqlite_url) as store:
        before = sorted(digest_of(m) for m in store.manifests())
    with DagsterInstance.ephemeral() as fresh:
        result = materialize(
            [efficiency_table],
            instance=fresh,
            resources={
                "catalogue": CatalogueResource(url=sqlite_url),
                "efficiency_settings": EfficiencySettingsResource(),
            },
            run_config={"ops": {"efficiency_table": {"config": {"out_dir": str(tmp_path / "eff")}}}},
        )
    assert result.success
    (table,) = result.asset_materializations_for_node("efficiency_table")
    sidecar = read_sidecar(table.metadata["sidecar"].value)
    with_figures = [r for r in sidecar.runs.values() if r.pct_of_peak is not None]
    assert table.metadata["runs_with_figures"].value == len(with_figures) > 0
    assert {r.kernel for r in with_figures} == {"rms_norm"} and {r.bound for r in with_figures} == {"bytes"}
    assert "| rms_norm |" in table.metadata["least_efficient"].value
    assert table.metadata["recomputed"].value.endswith(f"parts ({len(sidecar.runs)} runs) derived: the first derivation in this folder")  # fmt: skip
    with CatalogueStore.open(sqlite_url) as store:
        assert sorted(digest_of(m) for m in store.manifests()) == before


def test_an_acknowledged_regression_stays_off_the_check_until_its_series_changes_again(tmp_path, sqlite_url):
    """Issue 30: a group marked known (`acknowledge`) is shown as such on the page and in the JSON, carried
    by the export, and left out of no_regressions' count; a new change of the series is not marked."""
    from kernelindex_pipeline.catalogue.store import CatalogueStore
    from kernelindex_pipeline.cli import main

    with CatalogueStore.open(sqlite_url) as store:
        store.publish(_sweeps_with_a_slowdown().manifests(), partition="samples")

    def check():
        with DagsterInstance.ephemeral() as fresh:
            result = materialize(
                [benchmark_regressions, no_regressions],
                instance=fresh,
                resources={
                    "catalogue": CatalogueResource(url=sqlite_url),
                    "regression_settings": RegressionSettingsResource(),
                    "liger_git": LigerGitResource(path=str(tmp_path / "no-clone")),
                },
            )
        (evaluation,) = result.get_asset_check_evaluations()
        return evaluation

    assert not check().passed
    out = tmp_path / "regressions"
    assert main(["regressions", "--catalogue", sqlite_url, "--out", str(out)]) == 0
    (group,) = json.loads((out / "regressions.json").read_text())["groups"]
    assert group["id"].startswith("g-") and len(group["changeIds"]) == 1
    page = (out / "regressions.html").read_text()
    assert f"kernelindex-pipeline acknowledge {group['id']}" in page  # the copyable command
    assert (
        main(
            [
                "acknowledge",
                group["id"],
                "--catalogue",
                sqlite_url,
                "--regressions",
                str(out / "regressions.json"),
                "--status",
                "expected",
                "--note",
                "accum_dtype costs time",
                "--by",
                "maintainer",
            ]
        )
        == 0
    )

    evaluation = check()
    assert evaluation.passed and evaluation.metadata["acknowledged"].value == 1
    assert "1 slowdowns acknowledged, not counted" in evaluation.description
    assert main(["regressions", "--catalogue", sqlite_url, "--out", str(out)]) == 0
    saved = json.loads((out / "regressions.json").read_text())
    assert saved["groups"][0]["acknowledgement"]["status"] == "expected" and saved["counts"]["acknowledged"] == 1
    page = (out / "regressions.html").read_text()
    assert 'data-acknowledged="expected"' in page and "expected by maintainer on " in page
    assert main(["export", "--catalogue", sqlite_url, "--out", str(tmp_path / "export")]) == 0
    [mark] = [json.loads(line) for line in (tmp_path / "export" / "kernelindex-acknowledgements.jsonl").open()]
    assert mark["status"] == "expected" and mark["note"] == "accum_dtype costs time"

    # the series gets slower again at a later run: a new change, not acknowledged
    later = SampleCatalogue()
    for sweep in range(6, 9):
        later.run(
            provider="liger",
            gpu=SAMPLE_GPU,
            median_ns=int(1_300_000 * 1.4),
            version="0.8.2",
            timestamp=f"2025-0{sweep + 1}-01 00:00:00",
        )
    with CatalogueStore.open(sqlite_url) as store:
        store.publish(later.manifests(), partition="later")
    evaluation = check()
    assert not evaluation.passed and evaluation.metadata["regressions"].value == 1


@pytest.mark.slow
def test_a_low_threshold_reaches_the_table_the_export_and_the_site(tmp_path, sqlite_url):
    """Efficiency is derived once per refresh, by efficiency_table with the operator's low_threshold
    (EfficiencySettingsResource); the export's and the site's efficiency.jsonl are that derivation, byte for
    byte, and the table's count and the site's text say the threshold (issue 28)."""
    from kernelindex_pipeline.catalogue.store import CatalogueStore
    from kernelindex_pipeline.records.canonical import digest_of
    from kernelindex_pipeline.reporting.efficiency import FLAG_LOW, derive_efficiency, read_sidecar
    from tests.reporting.test_efficiency import softmax_run

    catalogue = SampleCatalogue()
    run = softmax_run(catalogue, 65536, 4096, 1_000_000)  # 2.147 TB/s: 64 % of the H100's 3.35 TB/s
    assert FLAG_LOW not in derive_efficiency(catalogue.manifests()).runs[digest_of(run)].flags  # not by default
    with CatalogueStore.open(sqlite_url) as store:
        store.publish(catalogue.manifests(), partition="samples")
    out = tmp_path / "out"
    names = ("efficiency_table", "catalogue_export", "catalogue_report")
    with DagsterInstance.ephemeral() as fresh:
        result = materialize(
            [efficiency_table, catalogue_export, benchmark_regressions, catalogue_report],
            instance=fresh,
            resources={
                "catalogue": CatalogueResource(url=sqlite_url),
                "efficiency_settings": EfficiencySettingsResource(low_threshold=0.95),
                "regression_settings": RegressionSettingsResource(judgement_store=str(tmp_path / "judgements.json")),
                "liger_git": LigerGitResource(),
            },
            run_config={"ops": {name: {"config": {"out_dir": str(out / name)}} for name in names}},
        )
    assert result.success
    sidecars = [(out / name / "efficiency.jsonl").read_bytes() for name in names]
    assert sidecars[0] == sidecars[1] == sidecars[2]
    figures = read_sidecar(out / "efficiency_table" / "efficiency.jsonl")
    assert figures.low_threshold == 0.95 and FLAG_LOW in figures.runs[digest_of(run)].flags
    (table,) = result.asset_materializations_for_node("efficiency_table")
    assert table.metadata["low_efficiency"].value == 1 and table.metadata["low_threshold"].value == 0.95
    assert "below 95% is <em>low efficiency</em>" in (out / "catalogue_report" / "index.html").read_text("utf-8")
