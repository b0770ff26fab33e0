"""Peak-memory and model_config charts, and the coverage table, of the static report (synthetic records
in the memory-run contract's shape, built by reporting.example_records; no browser needed)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import pytest

from kernelindex_pipeline.imports.coverage import CoverageCell
from kernelindex_pipeline.reporting import build_report
from kernelindex_pipeline.reporting.charts import (
    EFFICIENCY,
    LATENCY,
    MEMORY,
    SAVING,
    SPEEDUP,
    bytes_unit,
    format_bytes,
    plan_charts,
    provider_colors,
    render_chart,
)
from kernelindex_pipeline.reporting.example_records import SampleCatalogue
from kernelindex_pipeline.reporting.series import PEAK_MEMORY_METRIC, build_series, run_metric

MIB = 2**20
HIDDEN = (1024, 2048, 4096, 8192)
# peak MiB per hidden size: Liger keeps one copy, the baselines several (real rms_norm rows look like this)
MEMORY_MIB = {"liger": 12.5, "huggingface": 80.0, "torch": 50.0}


def memory_catalogue(version: str = "0.8.0") -> SampleCatalogue:
    catalogue = SampleCatalogue()
    for provider, per_1k in MEMORY_MIB.items():
        for hidden in HIDDEN:
            axes = {"hidden": hidden, "rows": 2048}
            catalogue.run(
                kernel="rms_norm",
                mode="full",
                provider=provider,
                axes=axes,
                version=version,
                median_ns=hidden * (100 if provider == "liger" else 300),
            )
            catalogue.memory_run(
                kernel="rms_norm",
                mode="full",
                provider=provider,
                axes=axes,
                version=version,
                mib=per_1k * hidden / 1024,
            )
    return catalogue


class Figures(HTMLParser):
    def __init__(self):
        super().__init__()
        self.figures: list[dict[str, str]] = []
        self.sections: dict[str, dict[str, str]] = {}
        self.coverage: list[dict[str, str]] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        if tag == "figure":
            self.figures.append(a)
        elif tag == "section" and "kernel" in classes:
            self.sections[a["data-kernel"]] = a
        elif tag == "tr" and "coverage" in classes:
            self.coverage.append(a)


def parse(path) -> Figures:
    parser = Figures()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def provider_of(label: str) -> str:
    """The CSV provider of a legend label "<provider title> (<provider>)" (or just "<provider>")."""
    return label.rsplit("(", 1)[-1].rstrip(")")


def charts_of(catalogue: SampleCatalogue):
    return charts_of_manifests(catalogue.manifests())


def charts_of_manifests(manifests):
    latency, memory = build_series(manifests), build_series(manifests, PEAK_MEMORY_METRIC)
    planned = plan_charts(latency, memory)
    return [c for groups in planned.values() for g in groups for c in g.charts], provider_colors(latency, memory)


def test_memory_runs_are_their_own_series_and_never_skipped():
    manifests = memory_catalogue().manifests()
    latency = build_series(manifests)
    memory = build_series(manifests, PEAK_MEMORY_METRIC)
    assert len(latency) == len(memory) == len(MEMORY_MIB) * len(HIDDEN)
    assert latency.skipped_runs == memory.skipped_runs == []
    assert (latency.other_metric_runs, memory.other_metric_runs) == (len(memory), len(latency))
    # a memory series shares workload, implementation and environment with the speed series of its case
    speed_places = {
        (s.provider, s.key.workload_digest, s.key.implementation_digest, s.key.environment_digest) for s in latency
    }
    assert {
        (s.provider, s.key.workload_digest, s.key.implementation_digest, s.key.environment_digest) for s in memory
    } == speed_places
    # kernel, pass and titles read from the memory formats (benchmark `<kernel>/<mode>/memory`, title `... · peak memory`)
    assert {(s.kernel, s.mode, s.kernel_title) for s in memory} == {(s.kernel, s.mode, s.kernel_title) for s in latency}
    point = next(s for s in memory if s.provider == "liger" and s.workload.axes["hidden"] == 4096).latest
    assert (point.median, point.p20, point.p80, point.unit) == (50 * MIB, 50 * MIB, 50 * MIB, "bytes")


def test_run_metric_reads_the_contract_not_names():
    catalogue = SampleCatalogue()
    speed = catalogue.run()
    memory = catalogue.memory_run()
    assert run_metric(speed["spec"]) == "latency"
    assert run_metric(memory["spec"]) == "peak_memory"
    renamed = {**memory["spec"], "sourceNative": {**memory["spec"]["sourceNative"], "externalId": "speed"}}
    assert run_metric(renamed) == "peak_memory"
    other = {**memory["spec"], "measurements": [{"metric": "energy", "unit": "j", "statistic": "median", "value": 3}]}
    assert run_metric(other) is None


def test_memory_chart_has_one_line_per_provider_in_mib(tmp_path):
    charts, colors = charts_of(memory_catalogue())
    [chart] = [c for c in charts if c.kind == MEMORY]
    lines = render_chart(chart, tmp_path / "memory.svg", colors)
    assert sorted(provider_of(line.label) for line in lines) == sorted(MEMORY_MIB)
    by_provider = {provider_of(line.label): line for line in lines}
    for provider, per_1k in MEMORY_MIB.items():
        assert by_provider[provider].xs == HIDDEN
        # the largest value is 640 MiB: the axis reads in MiB, values exact
        assert by_provider[provider].ys == tuple(per_1k * h / 1024 for h in HIDDEN)
    svg = (tmp_path / "memory.svg").read_text(encoding="utf-8")
    assert "peak memory (MiB)" in svg


def test_memory_saving_is_liger_over_each_baseline(tmp_path):
    charts, colors = charts_of(memory_catalogue())
    [chart] = [c for c in charts if c.kind == SAVING]
    lines = {line.label: line for line in render_chart(chart, tmp_path / "saving.svg", colors)}
    assert set(lines) == {"liger vs huggingface", "liger vs torch"}
    # (baseline - liger) / baseline: 1 - 12.5/80 and 1 - 12.5/50, the same at every hidden size
    assert lines["liger vs huggingface"].ys == pytest.approx([84.375] * len(HIDDEN))
    assert lines["liger vs torch"].ys == pytest.approx([75.0] * len(HIDDEN))
    assert lines["liger vs torch"].xs == HIDDEN


def test_saving_uses_the_newest_version_both_measured(tmp_path):
    catalogue = SampleCatalogue()
    axes = {"hidden": 4096, "rows": 2048}
    for provider, version, mib in (
        ("liger", "0.8.0", 40),
        ("huggingface", "0.8.0", 80),
        ("liger", "0.8.1", 20),
        ("huggingface", "0.8.1", 80),
        ("liger", "0.8.2", 10),
    ):  # no baseline at 0.8.2
        month = int(version[-1]) + 1  # each version measured on its own day, as real runs are
        catalogue.memory_run(
            provider=provider, axes=axes, version=version, mib=mib, timestamp=f"2025-{month:02d}-01 00:00:00"
        )
    charts, colors = charts_of(catalogue)
    [chart] = [c for c in charts if c.kind == SAVING]
    [line] = render_chart(chart, tmp_path / "saving.svg", colors)
    assert line.ys == (75.0,)


def test_report_puts_memory_charts_next_to_latency_and_counts_every_series(tmp_path):
    result = build_report(memory_catalogue().manifests(), tmp_path)
    page = parse(result.path)
    kinds = [f["data-chart-kind"] for f in page.figures]
    assert kinds == [LATENCY, MEMORY, SAVING, SPEEDUP]
    section = page.sections["rms_norm"]
    assert int(section["data-series-count"]) == result.counts["series"] == 2 * len(MEMORY_MIB) * len(HIDDEN)
    assert result.counts["memorySeries"] == result.counts["latencySeries"] == len(MEMORY_MIB) * len(HIDDEN)
    # latency and memory charts together account for each series once
    assert sum(int(f["data-series-count"]) for f in page.figures) == int(section["data-series-count"])
    text = result.path.read_text(encoding="utf-8")
    assert "Peak-memory saving of Liger over baselines" in text
    assert "Runs left out" not in text  # memory runs are not "skipped latency runs"


def test_a_run_of_no_known_metric_is_listed_once(tmp_path):
    catalogue = memory_catalogue()
    run = catalogue.memory_run(provider="liger", axes={"hidden": 64, "rows": 1}, mib=1)
    run["spec"]["measurements"][0]["metric"] = "energy"
    result = build_report(catalogue.manifests(), tmp_path)
    assert (
        result.path.read_text(encoding="utf-8").count("1 runs: neither spec.timing nor a peak_memory first measurement")
        == 1
    )


MODELS = ("qwen2.5_7b", "llama_3_8b", "deepseek_v3", "llama_2_7b")  # input order: neither alphabetical nor the table's
MODEL_DIMS = {
    "qwen2.5_7b": (3584, 152064),
    "llama_3_8b": (4096, 128256),
    "deepseek_v3": (7168, 129280),
    "llama_2_7b": (4096, 32000),
}


def registry_order(models) -> list[str]:
    """The models in the order of the catalogue's model table (benchmark_model_configs.MODEL_REGISTRY's)."""
    from kernelindex_pipeline.liger.catalogue import default_catalogue

    table = list(default_catalogue().models)
    assert set(models) <= set(table)
    return sorted(models, key=table.index)


def model_config_catalogue(models=MODELS) -> SampleCatalogue:
    catalogue = SampleCatalogue()
    for model in models:
        hidden, vocab = MODEL_DIMS.get(model, (1024, 1000))
        for provider in ("liger", "huggingface"):
            axes = {"bsz": 4, "seq_len": 1024, "hidden_size": hidden, "vocab_size": vocab}
            catalogue.run(
                kernel="fused_linear_cross_entropy",
                mode="full",
                provider=provider,
                axes=axes,
                model=model,
                median_ns=vocab * (10 if provider == "liger" else 15),
            )
            catalogue.memory_run(
                kernel="fused_linear_cross_entropy",
                mode="full",
                provider=provider,
                axes=axes,
                model=model,
                mib=vocab / 1000 * (1 if provider == "liger" else 8),
            )
    return catalogue


def _xtick_labels(svg_path) -> list[str]:
    root = ET.parse(svg_path).getroot()
    labels = []
    for group in root.iter("{http://www.w3.org/2000/svg}g"):
        if (group.get("id") or "").startswith("xtick_"):
            texts = ["".join(t.itertext()).strip() for t in group.iter("{http://www.w3.org/2000/svg}text")]
            labels += [t for t in texts if t]
    return labels


def test_model_config_charts_have_model_names_on_x_in_the_scripts_order(tmp_path):
    order = registry_order(MODELS)
    assert order not in (list(MODELS), sorted(MODELS))  # the test tells the three orders apart
    charts, colors = charts_of(model_config_catalogue())
    assert sorted(c.kind for c in charts) == sorted([LATENCY, MEMORY, SPEEDUP, SAVING])
    for chart in charts:
        assert chart.sweep.categories == order
        lines = render_chart(chart, tmp_path / f"{chart.kind}.svg", colors)
        assert all(line.xs == tuple(range(len(MODELS))) for line in lines)
        assert _xtick_labels(tmp_path / f"{chart.kind}.svg") == order
    [speedup] = [c for c in charts if c.kind == SPEEDUP]
    [line] = render_chart(speedup, tmp_path / "s.svg", colors)
    assert line.ys == pytest.approx([1.5] * len(MODELS))
    [memory] = [c for c in charts if c.kind == MEMORY]
    lines = {provider_of(line.label): line for line in render_chart(memory, tmp_path / "m.svg", colors)}
    # each model's value sits at its model's position; the largest is 8 * 152.064 MiB, so the panel reads GiB
    assert lines["liger"].ys == pytest.approx([MODEL_DIMS[m][1] / 1000 / 1024 for m in order])
    assert lines["huggingface"].ys == pytest.approx([8 * MODEL_DIMS[m][1] / 1000 / 1024 for m in order])
    assert "peak memory (GiB)" in (tmp_path / "m.svg").read_text(encoding="utf-8")


def test_model_order_does_not_depend_on_the_input_order_and_unknown_names_follow_the_data():
    models = (*MODELS, "zeta_custom", "alpha_custom")  # names a `category: label` rule may carry
    for manifests in (
        model_config_catalogue(models).manifests(),
        list(reversed(model_config_catalogue(models).manifests())),
    ):
        latency = build_series(manifests)
        [chart] = [c for g in plan_charts(latency)["fused_linear_cross_entropy"] for c in g.charts if c.kind == LATENCY]
        first_seen = [
            w.category for w in sorted(chart.sweep.workloads, key=lambda w: w.position) if w.category not in MODELS
        ]
        assert chart.sweep.categories == registry_order(MODELS) + list(dict.fromkeys(first_seen))
    assert first_seen[0] == "alpha_custom"  # reversed input: the unknown names in the order they came


def test_memory_rows_imported_from_csv_make_memory_charts(tmp_path):
    """The real path: Liger CSV rows (speed and memory, as run_benchmarks writes them) -> import_csv ->
    report. Peak MB are MiB: the chart's values and the saving come from the CSV numbers."""
    from liger_rows import csv_bytes, row

    from kernelindex_pipeline.liger import import_csv

    mb = {
        ("liger", 1024): "12.5390625",
        ("liger", 2048): "25.0703125",
        ("huggingface", 1024): "80.01953125",
        ("huggingface", 2048): "160.03125",
    }
    rows = []
    for (provider, hidden), value in mb.items():
        common = dict(kernel_provider=provider, x_value=str(hidden), kernel_operation_mode="full")
        rows.append(row(**common))
        rows.append(
            row(**common, metric_name="memory", metric_unit="MB", y_value_50=value, y_value_20=value, y_value_80=value)
        )
    result = import_csv(csv_bytes(rows))
    assert result.report.memory_runs == 4
    manifests = list(result.manifests.values())
    charts, colors = charts_of_manifests(manifests)
    [memory] = [c for c in charts if c.kind == MEMORY]
    lines = {provider_of(line.label): line for line in render_chart(memory, tmp_path / "m.svg", colors)}
    assert set(lines) == {"liger", "huggingface"}
    assert lines["liger"].xs == (1024, 2048)
    assert lines["liger"].ys == (12.5390625, 25.0703125)  # MiB exactly: bytes / 2**20
    [saving] = [c for c in charts if c.kind == SAVING]
    [line] = render_chart(saving, tmp_path / "s.svg", colors)
    assert line.ys == pytest.approx([(1 - 12.5390625 / 80.01953125) * 100, (1 - 25.0703125 / 160.03125) * 100])
    page = parse(build_report(manifests, tmp_path / "report").path)
    # rms_norm has a cost model: the sweep's efficiency chart comes last (reporting/efficiency.py)
    assert [f["data-chart-kind"] for f in page.figures] == [LATENCY, MEMORY, SAVING, SPEEDUP, EFFICIENCY]


def test_model_config_rows_imported_from_csv_make_categorical_charts(tmp_path):
    """The real path for model_config rows (x_name model_config, x_value a model, config {bsz, seq_len}):
    llama_2_7b and llama_3_8b have the same hidden size, so their rms_norm rows share one WorkloadCase
    digest; they are still two places on the model axis."""
    import json

    from liger_rows import csv_bytes, row

    from kernelindex_pipeline.liger import import_csv

    models = ("qwen2.5_7b", "llama_3_8b", "llama_2_7b")  # written in this order; the table's order differs
    config = json.dumps({"bsz": 1, "seq_len": 512, "eps": 1e-6})
    rows = []
    for provider, mib in (("liger", 10.0), ("huggingface", 40.0)):
        for i, model in enumerate(models):
            common = dict(
                kernel_name="rms_norm",
                kernel_provider=provider,
                kernel_operation_mode="full",
                x_name="model_config",
                x_label="model configuration",
                x_value=model,
                extra_benchmark_config_str=config,
            )
            rows.append(row(**common, y_value_50=str(0.1 * (i + 1))))
            rows.append(
                row(
                    **common,
                    metric_name="memory",
                    metric_unit="MB",
                    y_value_50=str(mib * (i + 1)),
                    y_value_20=str(mib * (i + 1)),
                    y_value_80=str(mib * (i + 1)),
                )
            )
    result = import_csv(csv_bytes(rows))
    assert result.report.runs == len(rows)
    manifests = list(result.manifests.values())
    charts, colors = charts_of_manifests(manifests)
    assert sorted(c.kind for c in charts) == sorted([LATENCY, MEMORY, SAVING, SPEEDUP])
    order = registry_order(models)
    mib_of = {m: 10.0 * (models.index(m) + 1) for m in models}
    for chart in charts:
        assert chart.sweep.categories == order
        lines = {provider_of(line.label): line for line in render_chart(chart, tmp_path / f"{chart.kind}.svg", colors)}
        assert all(line.xs == (0, 1, 2) for line in lines.values())
        if chart.kind == MEMORY:
            assert set(lines) == {"liger", "huggingface"}
            assert lines["liger"].ys == tuple(mib_of[m] for m in order)  # MiB, each at its model
        if chart.kind == SAVING:
            assert lines["liger vs huggingface"].ys == pytest.approx([75.0, 75.0, 75.0])
        assert _xtick_labels(tmp_path / f"{chart.kind}.svg") == order
    page = parse(build_report(manifests, tmp_path / "report").path)
    section = page.sections["rms_norm"]
    # 2 providers x 3 models x 2 metrics: the shared case digest does not merge two models' series
    assert int(section["data-series-count"]) == 12
    assert sum(int(f["data-series-count"]) for f in page.figures) == 12


def test_byte_units():
    assert bytes_unit([512 * MIB, 3 * MIB]) == (MIB, "MiB")
    assert bytes_unit([3 * 2**30]) == (2**30, "GiB")
    assert bytes_unit([900 * 1024]) == (1024, "KiB")
    assert format_bytes(1536 * MIB) == "1.5 GiB"
    assert format_bytes(12.5 * MIB) == "12.5 MiB"


def test_coverage_table(tmp_path):
    h100, nvl = "NVIDIA H100 80GB HBM3", "NVIDIA H100 NVL"
    coverage = [
        CoverageCell("rms_norm", "liger", "full", h100, "0.6.0", "speed", rows=12, runs=12, skipped={}, issues=0),
        CoverageCell(
            "dyt",
            "liger",
            "forward",
            h100,
            "0.6.0",
            "speed",
            rows=10,
            runs=5,
            skipped={"unknownConfig": 3, "duplicateRows": 1},
            issues=1,
        ),
        CoverageCell(
            "rms_norm",
            "liger-fp32-accum",
            "full",
            nvl,
            "0.6.0",
            "memory",
            rows=4,
            runs=0,
            skipped={"unknownGpu": 4},
            issues=0,
        ),
        CoverageCell("rms_norm", "liger", "full", h100, "0.6.0", "memory", rows=6, runs=6, skipped={}, issues=0),
    ]
    result = build_report(memory_catalogue().manifests(), tmp_path, coverage=coverage)
    page = parse(result.path)
    # cells that lost rows come first, most lost first; every cell is there with its numbers
    assert [(r["data-kernel"], r["data-provider"], r["data-metric"]) for r in page.coverage] == [
        ("dyt", "liger", "speed"),
        ("rms_norm", "liger-fp32-accum", "memory"),
        ("rms_norm", "liger", "memory"),
        ("rms_norm", "liger", "speed"),
    ]
    assert [(int(r["data-rows"]), int(r["data-runs"])) for r in page.coverage] == [(10, 5), (4, 0), (6, 6), (12, 12)]
    assert [("incomplete" in r["class"]) for r in page.coverage] == [True, True, False, False]
    text = result.path.read_text(encoding="utf-8")
    assert "memory: 10 rows, 6 runs (60.0%); speed: 22 rows, 17 runs (77.3%)" in text
    assert '<td>unknownGpu</td><td class="num">4</td>' in text
    assert "duplicateRows: 1, unknownConfig: 3, issues: 1" in text
    # without coverage input the report has no coverage section at all
    plain = build_report(memory_catalogue().manifests(), tmp_path / "plain")
    assert 'id="coverage' not in plain.path.read_text(encoding="utf-8")
