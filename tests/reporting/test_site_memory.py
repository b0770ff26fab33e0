"""Peak-memory and model_config series on the site (synthetic records in the memory-run contract's shape, built
by tests.support.factories, and real CSV rows through import_csv): each kernel's data in exact bytes and in the
scripts' model order, and, in headless Chromium, what the memory, saving and speed-up charts draw. (The matplotlib
report's chart tests, moved to the site when the report became the site: issue 21.)"""

from __future__ import annotations

import json

import pytest

from kernelindex_pipeline.reporting.series import PEAK_MEMORY_METRIC, build_series, find_sweeps, run_metric
from kernelindex_pipeline.reporting.site import build_site
from kernelindex_pipeline.reporting.site_files import read_js_payload
from tests.support.browser import connected, page_of
from tests.support.factories import SampleCatalogue

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


def kernel_data(site, kernel: str) -> dict:
    state = json.loads((site.path.parent / "site-state.json").read_text(encoding="utf-8"))["kernels"]
    return read_js_payload((site.path.parent / "data" / f"{state[kernel]['slug']}.js").read_text(encoding="utf-8"))


def medians(data: dict, metric: str) -> dict[tuple[str, object], list[float]]:
    """(provider, x) -> the medians of that series' points, from a kernel's data (x: the sweep's x, a category
    index for a model axis)."""
    x_of = {w: x for sweep in data["sweeps"] for w, x in sweep["members"]}
    found = {}
    for row, points in zip(data["series"], data["points"], strict=True):
        if data["metrics"][row[3]] == metric:
            found[(data["providers"][row[1]]["name"], x_of[row[4]])] = [p[1] for p in points]
    return found


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


def test_memory_series_are_in_the_kernels_data_in_exact_bytes(tmp_path):
    site = build_site(memory_catalogue().manifests(), tmp_path)
    data = kernel_data(site, "rms_norm")
    assert site.counts["series"] == len(data["series"]) == 2 * len(MEMORY_MIB) * len(HIDDEN)
    assert medians(data, PEAK_MEMORY_METRIC) == {
        (provider, h): [per_1k * h / 1024 * MIB] for provider, per_1k in MEMORY_MIB.items() for h in HIDDEN
    }
    [sweep] = data["sweeps"]  # latency and memory share the sweep: one x axis, hidden
    assert sweep["axis"] == "hidden" and sorted(x for _, x in sweep["members"]) == list(HIDDEN)


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


def test_model_order_does_not_depend_on_the_input_order_and_unknown_names_follow_the_data():
    models = (*MODELS, "zeta_custom", "alpha_custom")  # names a `category: label` rule may carry
    for manifests in (
        model_config_catalogue(models).manifests(),
        list(reversed(model_config_catalogue(models).manifests())),
    ):
        latency = build_series(manifests)
        [sweep] = find_sweeps({s.workload.key: s.workload for s in latency}.values())
        first_seen = [w.category for w in sorted(sweep.workloads, key=lambda w: w.position) if w.category not in MODELS]
        assert sweep.categories == registry_order(MODELS) + list(dict.fromkeys(first_seen))
    assert first_seen[0] == "alpha_custom"  # reversed input: the unknown names in the order they came


def test_model_config_data_has_model_names_on_x_in_the_scripts_order(tmp_path):
    order = registry_order(MODELS)
    assert order not in (list(MODELS), sorted(MODELS))  # the test tells the three orders apart
    data = kernel_data(build_site(model_config_catalogue().manifests(), tmp_path), "fused_linear_cross_entropy")
    [sweep] = data["sweeps"]
    assert sweep["categories"] == order
    assert medians(data, PEAK_MEMORY_METRIC) == {
        (provider, order.index(m)): [pytest.approx(MODEL_DIMS[m][1] / 1000 * factor * MIB)]
        for m in MODELS
        for provider, factor in (("liger", 1), ("huggingface", 8))
    }


def csv_memory_manifests():
    """The real path: Liger CSV rows (speed and memory, as run_benchmarks writes them) -> import_csv. Peak MB
    are MiB."""
    from kernelindex_pipeline.liger import import_csv
    from tests.support.liger_rows import csv_bytes, row

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
    return list(result.manifests.values())


def test_memory_rows_imported_from_csv_are_exact_bytes_in_the_data(tmp_path):
    data = kernel_data(build_site(csv_memory_manifests(), tmp_path), "rms_norm")
    assert medians(data, PEAK_MEMORY_METRIC) == {
        ("liger", 1024): [12.5390625 * MIB],
        ("liger", 2048): [25.0703125 * MIB],
        ("huggingface", 1024): [80.01953125 * MIB],
        ("huggingface", 2048): [160.03125 * MIB],
    }


def model_config_csv_manifests():
    """model_config rows (x_name model_config, x_value a model, config {bsz, seq_len}): llama_2_7b and llama_3_8b
    have the same hidden size, so their rms_norm rows share one WorkloadCase digest; they are still two places on
    the model axis."""
    from kernelindex_pipeline.liger import import_csv
    from tests.support.liger_rows import csv_bytes, row

    config = json.dumps({"bsz": 1, "seq_len": 512, "eps": 1e-6})
    rows = []
    for provider, mib in (("liger", 10.0), ("huggingface", 40.0)):
        for i, model in enumerate(CSV_MODELS):
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
    return list(result.manifests.values())


CSV_MODELS = ("qwen2.5_7b", "llama_3_8b", "llama_2_7b")  # written in this order; the table's order differs


def test_model_config_rows_imported_from_csv_are_places_on_the_model_axis(tmp_path):
    data = kernel_data(build_site(model_config_csv_manifests(), tmp_path), "rms_norm")
    order = registry_order(CSV_MODELS)
    [sweep] = data["sweeps"]
    assert sweep["categories"] == order
    # 2 providers x 3 models x 2 metrics: the shared case digest does not merge two models' series
    assert len(data["series"]) == 12
    assert medians(data, PEAK_MEMORY_METRIC) == {
        (provider, order.index(m)): [mib * (CSV_MODELS.index(m) + 1) * MIB]
        for m in CSV_MODELS
        for provider, mib in (("liger", 10.0), ("huggingface", 40.0))
    }


# --------------------------------------------------------------------------- in Chromium: what the charts draw


def saving_newest_catalogue() -> SampleCatalogue:
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
    return catalogue


@pytest.fixture(scope="module")
def drawn(tmp_path_factory, chromium_endpoint):
    """kernel page -> chart kind -> (title, rows) of every chart the page draws (site.js keeps each chart's rows on
    its element), from four small sites, in one Chromium."""
    sites = {
        "memory": (memory_catalogue().manifests(), "rms-norm"),
        "csv": (csv_memory_manifests(), "rms-norm"),
        "models": (model_config_catalogue().manifests(), "fused-linear-cross-entropy"),
        "newest": (saving_newest_catalogue().manifests(), "rms-norm"),
    }
    found = {}
    with connected(chromium_endpoint) as browser:
        for name, (manifests, slug) in sites.items():
            site = build_site(manifests, tmp_path_factory.mktemp(name))
            with page_of(browser, 1300, 4000) as page:  # every chart in view
                errors = []
                page.on("pageerror", lambda e, errors=errors: errors.append(str(e)))
                page.goto((site.path.parent / "kernels" / f"{slug}.html").resolve().as_uri())
                page.wait_for_selector("#chart-grid[data-figure-count]", timeout=30_000)
                count = int(page.locator("#chart-grid").get_attribute("data-figure-count"))
                page.wait_for_function(
                    f"document.querySelectorAll('figure.chart .vega[data-rendered]').length === {count}",
                    timeout=60_000,
                )
                found[name] = page.eval_on_selector_all(
                    "figure.chart",
                    "fs => fs.map(f => [f.dataset.chartKind, f.querySelector('.vega').chartTitle, "
                    "f.querySelector('.vega').chartRows, f.querySelector('.vega').dataset.rendered])",
                )
            assert errors == [] and all(r == "1" for *_, r in found[name]), (name, errors)
    return found


def chart(drawn, site: str, kind: str) -> tuple[str, list[dict]]:
    [(title, rows)] = [(title, rows) for k, title, rows, _ in drawn[site] if k == kind]
    return title, rows


@pytest.mark.browser
def test_memory_chart_has_one_line_per_provider_in_mib(drawn):
    assert [k for k, *_ in drawn["memory"]] == ["latency", "versions", "speedup", "memory", "versions", "saving"]
    title, rows = chart(drawn, "memory", "memory")
    assert title.startswith("peak memory (MiB)")  # the largest value is 640 MiB: the axis reads in MiB
    assert {(r["provider"], r["x"]): r["value"] for r in rows} == {
        (provider, h): per_1k * h / 1024 for provider, per_1k in MEMORY_MIB.items() for h in HIDDEN
    }


@pytest.mark.browser
def test_memory_saving_is_liger_over_each_baseline(drawn):
    _, rows = chart(drawn, "memory", "saving")
    # (baseline - liger) / baseline: 1 - 12.5/80 and 1 - 12.5/50, the same at every hidden size
    assert {(r["pair"], r["x"]): r["value"] for r in rows} == {
        **{("liger vs huggingface", h): pytest.approx(84.375, abs=0.01) for h in HIDDEN},  # 4 significant digits
        **{("liger vs torch", h): pytest.approx(75.0) for h in HIDDEN},
    }


@pytest.mark.browser
def test_saving_uses_the_newest_version_both_measured(drawn):
    _, rows = chart(drawn, "newest", "saving")
    assert [(r["version"], r["value"]) for r in rows] == [("0.8.1", 75.0)]  # not 0.8.2: no baseline there


@pytest.mark.browser
def test_memory_rows_imported_from_csv_make_memory_and_saving_charts(drawn):
    assert [k for k, *_ in drawn["csv"]] == [
        "latency",
        "versions",
        "speedup",
        "efficiency",
        "memory",
        "versions",
        "saving",
    ]
    _, rows = chart(drawn, "csv", "memory")
    assert {(r["provider"], r["x"]): r["value"] for r in rows} == {
        ("liger", 1024): 12.54,  # MiB (bytes / 2**20), at the chart's four significant digits
        ("liger", 2048): 25.07,
        ("huggingface", 1024): 80.02,
        ("huggingface", 2048): 160.0,
    }
    _, rows = chart(drawn, "csv", "saving")
    assert [r["value"] for r in sorted(rows, key=lambda r: r["x"])] == pytest.approx(
        [(1 - 12.5390625 / 80.01953125) * 100, (1 - 25.0703125 / 160.03125) * 100], abs=0.01
    )


@pytest.mark.browser
def test_model_config_charts_have_model_names_on_x_in_the_scripts_order(drawn):
    order = registry_order(MODELS)
    title, rows = chart(drawn, "models", "memory")
    # each model's value sits at its model's place; the largest is 8 * 152.064 MB of 2**20 bytes: GiB
    assert title.startswith("peak memory (GiB)")
    assert {(r["provider"], r["xlabel"]): r["value"] for r in rows} == {
        (provider, m): pytest.approx(MODEL_DIMS[m][1] / 1000 * factor / 1024, rel=1e-3)
        for m in order
        for provider, factor in (("liger", 1), ("huggingface", 8))
    }
    _, rows = chart(drawn, "models", "speedup")
    assert {r["xlabel"]: r["value"] for r in rows} == {m: pytest.approx(1.5) for m in order}
