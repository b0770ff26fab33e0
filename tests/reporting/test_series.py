"""Series grouping of the report's charts (reporting/series.py) on constructed series."""

from __future__ import annotations

from kernelindex_pipeline.reporting.series import build_series, find_sweeps, parse_case_key
from tests.support.factories import SampleCatalogue


def test_latest_observation_wins_within_one_version():
    catalogue = SampleCatalogue()
    catalogue.run(version="0.8.0", median_ns=1_000_000, timestamp="2025-08-01 10:00:00")
    catalogue.run(version="0.8.1", median_ns=9_000_000, timestamp="2025-09-01 10:00:00")  # superseded
    catalogue.run(version="0.8.1", median_ns=1_010_000, timestamp="2025-09-02 10:00:00")
    [series] = build_series(catalogue.manifests()).series
    assert [(p.version, p.median, p.runs_for_version) for p in series.points] == [
        ("0.8.0", 1_000_000, 1),
        ("0.8.1", 1_010_000, 2),
    ]


def test_series_are_kept_apart_by_provider_mode_gpu_and_workload():
    catalogue = SampleCatalogue()
    base = dict(version="0.8.0", median_ns=1_000_000)
    catalogue.run(**base)
    catalogue.run(**{**base, "version": "0.8.1", "median_ns": 5_000_000, "provider": "torch"})
    catalogue.run(**{**base, "version": "0.8.1", "median_ns": 5_000_000, "mode": "backward"})
    catalogue.run(**{**base, "version": "0.8.1", "median_ns": 5_000_000, "gpu": "NVIDIA A100-SXM4-80GB"})
    catalogue.run(**{**base, "version": "0.8.1", "median_ns": 5_000_000, "axes": {"batch": 16, "hidden": 4096}})
    series = build_series(catalogue.manifests())
    assert len(series) == 5
    torch = next(s for s in series if s.provider == "torch")
    assert torch.role == "baseline"
    assert next(s for s in series if s.provider == "liger").role == "liger"


def test_case_key_parsing_and_sweeps():
    assert parse_case_key("batch8-seq1024-vocab128256-bf16") == ({"batch": 8, "seq": 1024, "vocab": 128256}, "bf16")
    catalogue = SampleCatalogue()
    # a sweep over seq at hidden=4096, a sweep over hidden at seq=512, and one lone fp32 case
    for seq in (512, 1024, 2048):
        catalogue.run(axes={"seq": seq, "hidden": 4096})
    for hidden in (1024, 2048):
        catalogue.run(axes={"seq": 512, "hidden": hidden})
    catalogue.run(axes={"seq": 512, "hidden": 4096}, dtype="fp32")
    workloads = [s.workload for s in build_series(catalogue.manifests())]
    sweeps = find_sweeps(workloads)
    described = sorted(
        (s.x_axis, tuple(sorted(s.fixed.items())), s.dtype, len(s.workloads), len(s.owned)) for s in sweeps
    )
    # the crossing point seq=512/hidden=4096 is drawn on both lines, owned by one (tie: axis name order)
    assert described == [
        ("hidden", (("seq", 512),), "bf16", 3, 3),
        ("hidden", (("seq", 512),), "fp32", 1, 1),
        ("seq", (("hidden", 4096),), "bf16", 3, 2),
    ]
    owned = [d for s in sweeps for d in s.owned]
    assert sorted(owned) == sorted(w.key for w in workloads)


def test_runs_without_their_referenced_records_still_form_series():
    # a partial catalogue export: only the runs; names come from sourceNative, roles from the provider table
    catalogue = SampleCatalogue()
    catalogue.run(provider="liger", version="0.8.0", median_ns=1_000_000)
    catalogue.run(provider="liger", version="0.8.1", median_ns=2_000_000, timestamp="2025-09-01 00:00:00")
    catalogue.run(provider="huggingface", version="0.8.1", median_ns=3_000_000)
    runs = [m for m in catalogue.manifests() if m["kind"] == "BenchmarkRun"]
    series = build_series(runs)
    assert {(s.provider, s.role, s.case_key) for s in series} == {
        ("liger", "liger", "batch8-hidden4096-bf16"),
        ("huggingface", "baseline", "batch8-hidden4096-bf16"),
    }
    assert next(s for s in series if s.provider == "liger").workload.axes == {"batch": 8, "hidden": 4096}


def test_providers_sharing_an_implementation_digest_stay_apart():
    # torch and torch_compile implementations have identical specs (one digest); torch is the baseline
    catalogue = SampleCatalogue()
    catalogue.run(provider="torch", median_ns=1_000_000)
    catalogue.run(provider="torch_compile", median_ns=5_000_000)
    series = build_series(catalogue.manifests())
    assert len({s.key.implementation_digest for s in series}) == 1
    assert {(s.provider, s.role, s.latest.median) for s in series} == {
        ("torch", "baseline", 1_000_000),
        ("torch_compile", "other", 5_000_000),
    }


def test_the_index_keeps_runs_as_rows_sharing_their_repeated_strings():
    import json

    from kernelindex_pipeline.reporting.series import RecordIndex, RunRow

    catalogue = SampleCatalogue()
    catalogue.run(version="0.8.0", median_ns=1_000_000, timestamp="2025-08-01 10:00:00")
    catalogue.run(version="0.8.0", median_ns=1_100_000, timestamp="2025-08-02 10:00:00")
    # as a catalogue's stream gives them: every manifest its own objects, equal strings not shared
    index = RecordIndex(json.loads(json.dumps(m)) for m in catalogue.manifests())
    first, second = index.runs
    assert isinstance(first, RunRow) and not hasattr(first, "__dict__")  # slots: no per-run dict
    assert not any(m["kind"] == "BenchmarkRun" for m in index.by_digest.values())  # no run kept whole
    assert first.workload == second.workload and first.workload is second.workload
    assert first.version is second.version and first.external_head is second.external_head
    assert first.digest != second.digest and index.run(second.digest) is second
    run = next(m for m in catalogue.manifests() if m["spec"].get("observedAt") == first.observed_at)
    assert first.external_id == run["spec"]["sourceNative"]["externalId"]
    assert (first.metric, first.value, first.name) == ("latency", 1_000_000, run["metadata"]["name"])


def test_the_index_passes_each_record_on_once_in_the_single_pass_it_reads():
    from kernelindex_pipeline.reporting.series import RecordIndex

    catalogue = SampleCatalogue()
    catalogue.run(version="0.8.0", median_ns=1_000_000, timestamp="2025-08-01 10:00:00")
    catalogue.run(version="0.8.1", median_ns=1_100_000, timestamp="2025-09-01 10:00:00")
    given = catalogue.manifests()
    index = RecordIndex()
    passed_on = list(index.read(m for m in [*given, *given]))  # every record given twice, streamed once
    assert passed_on == given  # first sight of each digest, in the input's order
    assert len(index.runs) == 4  # a run given twice is counted twice, as before
    [series] = build_series(index).series
    assert [p.runs_for_version for p in series.points] == [2, 2]


def test_an_index_of_stored_records_is_the_index_of_their_manifests(catalogue_records, synthetic_runs):
    """`RecordIndex.read_records` takes the digests a catalogue stored: the same index as `read` makes."""
    from kernelindex_pipeline.reporting.series import RecordIndex, build_series

    records = list((catalogue_records | synthetic_runs(12)).items())
    stored, read = RecordIndex(), RecordIndex(m for _, m in records)
    stored.read_records(records)
    assert stored.by_digest == read.by_digest and stored.position == read.position
    assert stored.implementations_by_name == read.implementations_by_name
    assert [(r.digest, r.external_id, r.value) for r in stored.runs] == [
        (r.digest, r.external_id, r.value) for r in read.runs
    ]
    assert [s.points for s in build_series(stored)] == [s.points for s in build_series(read)]
