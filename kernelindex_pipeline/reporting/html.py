"""The static HTML catalogue report: index.html plus SVG charts next to it.

Readable from the file system without a server. Machine-checkable structure
(used by the tests and handy for anyone scripting against the report):

- ``<body data-kernel-count data-series-count data-chart-count data-regression-count>``
- one ``<section class="kernel" data-kernel="<upstream kernel name>" data-series-count data-chart-count
  data-regression-count>`` per kernel with data, linked from the table of contents ``nav#toc``;
- inside it one ``<section class="gpu" data-gpu data-series-count>`` per environment;
- one ``<figure class="chart" data-chart-kind="latency|memory|speedup|memory-saving|versions" data-kernel
  data-gpu data-series-count data-drawn-series>`` per chart; ``data-series-count`` on latency and memory
  charts counts the series that chart accounts for (each latency series is accounted for by exactly one
  latency chart, each peak-memory series by one memory chart), so summing them per kernel gives the
  kernel's series count; a sweep's memory charts follow its latency chart;
- regressions as ``<tr class="regression">`` rows (table ``#regressions``) and per kernel;
- ``<section id="efficiency-section">``: per GPU a ``<table class="efficiency-ranking">`` of ``<tr
  class="efficiency" data-gpu data-kernel data-mode data-provider data-pct data-flags>`` rows, one per kernel,
  pass and Liger provider (largest workload, newest run), least efficient first, implausible readings in a
  folded table after it;
- with coverage input, ``<table id="coverage">`` with one ``<tr class="coverage" data-kernel data-provider
  data-mode data-gpu data-version data-rows data-runs data-skipped>`` per import cell.
"""

from __future__ import annotations

import html
import os
import shutil
import tempfile
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kernelindex_pipeline.imports.coverage import CoverageCell
from kernelindex_pipeline.records.names import kebab

from .charts import (
    ACCOUNTING_KINDS,
    EFFICIENCY,
    LATENCY,
    MEMORY,
    SAVING,
    SPEEDUP,
    VERSIONS,
    Chart,
    ChartGroup,
    plan_charts,
    provider_colors,
    render_chart,
)
from .efficiency import (
    FLAG_LOW,
    SIDECAR_NAME,
    STATUS_OK,
    TERA,
    EfficiencyReport,
    TableRow,
    derive_series_efficiency,
    format_pct,
    rank_by_efficiency,
)
from .regressions import Change, RegressionReport, detect_regressions
from .regressions_page import PAGE_NAME as REGRESSIONS_PAGE
from .regressions_page import write_regressions
from .series import PEAK_MEMORY_METRIC, RecordIndex, build_series

INDEX_NAME = "index.html"
CHARTS_DIR = "charts"


@dataclass
class ReportResult:
    path: Path  # the report's index.html
    summary_markdown: str
    counts: dict[str, int]  # kernels, series, charts, regressions (+ runs, improvements, insufficientSeries)
    regressions: RegressionReport


def build_report(
    manifests: Iterable[dict[str, Any]],
    out_dir: str | os.PathLike,
    *,
    title: str = "Liger-Kernel benchmarks in the KernelIndex catalogue",
    coverage: Iterable[CoverageCell] | None = None,
    regressions: RegressionReport | None = None,
) -> ReportResult:
    """Write the report into `out_dir` (index.html, charts/*.svg, summary.md, and the regressions page:
    regressions.html, regressions.json, regression-charts/*.svg).

    `coverage` (the import reports' coverage cells, `liger.report.CoverageTable.of(reports).cells`, when the
    caller has them) adds a coverage table. `regressions`: the detection result to show (the Dagster asset's,
    or the CLI's with its settings), so the report never judges with other settings than the alert; without
    it, detection runs here with the default settings.
    Everything is built in a staging folder first and moved into place at the end,
    so a failure leaves any previous report in `out_dir` untouched.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    index = RecordIndex(manifests)
    series_set = build_series(index)
    memory_set = build_series(index, PEAK_MEMORY_METRIC)
    if regressions is None:
        regressions = detect_regressions(index.by_digest.values())
    efficiency = derive_series_efficiency(index, series_set)  # no work per run: the series' groups and points
    table = rank_by_efficiency(series_set, efficiency)
    planned = plan_charts(series_set, memory_set, efficiency)
    charts = [c for groups in planned.values() for g in groups for c in g.charts]
    every_series = [*series_set, *memory_set]
    # a run neither metric can hold is skipped by both sets for the same reason: list it once
    skipped = list(dict.fromkeys([*series_set.skipped_runs, *memory_set.skipped_runs]))
    counts = {
        "kernels": len(planned),
        "series": len(every_series),
        "latencySeries": len(series_set),
        "memorySeries": len(memory_set),
        "charts": len(charts),
        "memoryCharts": sum(1 for c in charts if c.kind in (MEMORY, SAVING)),
        "regressions": len(regressions.slowdowns),
        "runs": series_set.runs,
        "improvements": len(regressions.speedups),
        "judgedSeries": len(regressions.trends),
        "insufficientSeries": len(regressions.insufficient),
        "hostEffects": len(regressions.host_effects),
        # runs the version charts do not draw because a later run of the same series and Liger version
        # exists (regression detection uses every run)
        "supersededRuns": sum(p.runs_for_version - 1 for s in every_series for p in s.points),
        "unversionedRuns": sum(len(s.unversioned_runs) for s in every_series),
        "efficiencyCharts": sum(1 for c in charts if c.kind == EFFICIENCY),
        "efficiencyRuns": efficiency.status_counts().get(STATUS_OK, 0),
    }
    summary = summary_markdown(counts, regressions)

    staging = Path(tempfile.mkdtemp(prefix=".building-", dir=out_dir))
    try:
        (staging / CHARTS_DIR).mkdir()
        colors = provider_colors(series_set, memory_set)
        for chart in charts:
            render_chart(chart, staging / CHARTS_DIR / chart.filename, colors)
        page = render_page(
            title,
            planned,
            regressions,
            counts,
            skipped,
            len(index.by_digest),
            coverage=None if coverage is None else list(coverage),
            efficiency=(efficiency, table),
        )
        (staging / INDEX_NAME).write_text(page, encoding="utf-8")
        (staging / "summary.md").write_text(summary + "\n", encoding="utf-8")
        write_regressions(regressions, out_dir, efficiency=efficiency)  # its charts are drawn in the browser
        _move_into_place(staging, out_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return ReportResult(path=out_dir / INDEX_NAME, summary_markdown=summary, counts=counts, regressions=regressions)


def _move_into_place(staging: Path, out_dir: Path) -> None:
    old_charts = out_dir / CHARTS_DIR
    retired = None
    if old_charts.exists():
        retired = staging / "previous-charts"
        old_charts.rename(retired)
    (staging / CHARTS_DIR).rename(old_charts)
    for name in ("summary.md", INDEX_NAME):  # index last: it is what readers open
        os.replace(staging / name, out_dir / name)


def summary_markdown(counts: dict[str, int], regressions: RegressionReport, limit: int = 20) -> str:
    lines = [
        "| kernels | series | charts | slowdowns | speed-ups | judged series | series with insufficient data |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        f"| {counts['kernels']} | {counts['series']} | {counts['charts']} | {counts['regressions']} | "
        f"{counts['improvements']} | {counts['judgedSeries']} | {counts['insufficientSeries']} |",
        "",
        regressions.markdown(limit=limit) if regressions.changes else regressions.summary() + ".",
    ]
    return "\n".join(lines)


# --------------------------------------------------------------------------- page


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _anchor(kernel: str) -> str:
    return "kernel-" + (kebab(kernel) or "unnamed")


_STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:1400px;padding:0 1.5rem 3rem;
color:#1b1f24;line-height:1.45}
h1{margin-top:1.2rem}h2{border-bottom:1px solid #d0d7de;padding-bottom:.2rem;margin-top:2.2rem}
table{border-collapse:collapse;margin:.6rem 0;font-size:.9rem}th,td{border:1px solid #d0d7de;padding:.25rem .5rem;
text-align:left}th{background:#f6f8fa}td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.regression td{background:#ffebe9}tr.efficiency.low td{background:#fff8c5}tr.efficiency.implausible td{color:#57606a;
font-style:italic}table.efficiency-ranking td.num{white-space:nowrap}tr.improvement td{background:#e6ffec}tr.coverage.incomplete td{background:#fff8c5}
.alert{border-left:4px solid #cf222e;background:#ffebe9;padding:.6rem .9rem;margin:1rem 0}
.ok{border-left:4px solid #1a7f37;background:#e6ffec;padding:.6rem .9rem;margin:1rem 0}
.caution{border-left:4px solid #9a6700;background:#fff8c5;padding:.6rem .9rem;margin:1rem 0}
nav#toc ol{columns:3;column-gap:2rem}nav#toc li{break-inside:avoid}
.badge{display:inline-block;border-radius:1em;padding:0 .5em;font-size:.8rem;background:#cf222e;color:#fff}
div.sweep{display:flex;flex-wrap:wrap;gap:0 1rem;align-items:flex-start}
figure.chart{margin:1rem 0;border:1px solid #d0d7de;border-radius:6px;padding:.5rem;background:#fff;flex:0 1 auto;
max-width:100%;box-sizing:border-box}
figure.chart[data-panels="1"]{max-width:calc(50% - .5rem)}
@media (max-width:900px){figure.chart[data-panels="1"]{max-width:100%}}
figure.chart.has-regression{border:2px solid #cf222e}
figure.chart img{max-width:100%;height:auto;display:block}
figcaption{font-size:.85rem;color:#57606a;width:0;min-width:100%}
.note{color:#57606a;font-size:.9rem}details{margin:.5rem 0}
"""


def _chart_key(kernel: str, mode: str, provider: str, workload_digest: str, gpu_slug: str, metric: str) -> tuple:
    """What a chart's series and a change have in common (the chart's series also fixes the environment)."""
    return (kernel, mode, provider, workload_digest, gpu_slug, metric)


def render_page(
    title: str,
    planned: dict[str, list[ChartGroup]],
    regressions: RegressionReport,
    counts: dict[str, int],
    skipped_runs: list[tuple[str, str]],
    manifest_count: int,
    coverage: list[CoverageCell] | None = None,
    efficiency: tuple[EfficiencyReport, list[TableRow]] | None = None,
) -> str:
    regressed_keys: dict[tuple, list[Change]] = defaultdict(list)
    by_kernel: dict[str, list[Change]] = defaultdict(list)
    for item in regressions.slowdowns:
        k = item.key
        regressed_keys[_chart_key(k.kernel, k.mode, k.provider, k.workload_digest, k.gpu, k.metric)].append(item)
        by_kernel[k.kernel].append(item)

    built = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    out = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(title)}</title><style>{_STYLE}</style></head>",
        f'<body data-kernel-count="{counts["kernels"]}" data-series-count="{counts["series"]}" '
        f'data-chart-count="{counts["charts"]}" data-regression-count="{counts["regressions"]}">',
        f"<header><h1>{_e(title)}</h1>",
        f'<p class="note">Built {built} from {manifest_count} records ({counts["runs"]} benchmark runs). '
        "Latencies are medians of triton.testing.do_bench with the p20–p80 spread; peak memory is "
        "torch.cuda.max_memory_allocated, shown in binary units (MiB = 2<sup>20</sup> bytes). A series is one "
        "kernel, pass, provider, workload, execution environment and metric, followed across Liger "
        "versions.</p></header>",
        _summary_section(counts, regressions),
        _regressions_section(regressions),
    ]
    if efficiency is not None:
        out.append(efficiency_section(*efficiency))
    if coverage is not None:
        out.append(coverage_section(coverage))
    out.append(_toc(planned, by_kernel))
    for kernel, groups in planned.items():
        out.append(_kernel_section(kernel, groups, by_kernel.get(kernel, []), regressed_keys))
    if skipped_runs:
        reasons = Counter(reason for _, reason in skipped_runs)
        out.append(
            '<section id="skipped"><h2>Runs left out</h2><ul>'
            + "".join(f"<li>{n} runs: {_e(r)}</li>" for r, n in sorted(reasons.items()))
            + "</ul></section>"
        )
    out.append("</body></html>")
    return "\n".join(out)


def _summary_section(counts: dict[str, int], regressions: RegressionReport) -> str:
    rows = [
        ("Kernels with data", counts["kernels"]),
        ("Benchmark runs", counts["runs"]),
        ("Comparable series", counts["series"]),
        ("Latency series", counts["latencySeries"]),
        ("Peak-memory series", counts["memorySeries"]),
        ("Charts", counts["charts"]),
        ("Series judged for changes (every run)", counts["judgedSeries"]),
        ("Slowdowns", counts["regressions"]),
        ("Speed-ups", counts["improvements"]),
        ("Host effects taken out", counts["hostEffects"]),
        ("Series with insufficient data", counts["insufficientSeries"]),
        (
            "Runs the version charts do not draw (a later run of the same series and version exists)",
            counts["supersededRuns"],
        ),
        ("Runs without a Liger version label", counts["unversionedRuns"]),
    ]
    body = "".join(f'<tr><th>{_e(k)}</th><td class="num">{v}</td></tr>' for k, v in rows)
    return f'<section id="summary"><h2>Summary</h2><table>{body}</table></section>'


def _change_rows(items: list[Change]) -> str:
    rows = []
    for c in items:
        d = c.to_dict()
        rows.append(
            f'<tr class="regression" data-kernel="{_e(d["kernel"])}"><td>{_e(d["kernel"])}</td><td>{_e(d["mode"])}</td>'
            f"<td>{_e(d['provider'])}</td><td>{_e(d['gpu'])}</td><td>{_e(d['caseKey'])}</td><td>{_e(d['metric'])}</td>"
            f"<td>{_e(d['before']['ligerVersion'])} → {_e(d['after']['ligerVersion'])}</td>"
            f'<td class="num">×{d["magnitude"]:.3g}</td><td class="num">{d["ci95"][0]:.3g}–{d["ci95"][1]:.3g}</td>'
            f"<td>{_e(d['cause'])}</td></tr>"
        )
    head = (
        "<tr><th>kernel</th><th>pass</th><th>provider</th><th>GPU</th><th>workload</th><th>metric</th><th>versions</th>"
        "<th>after / before</th><th>95 % CI</th><th>cause</th></tr>"
    )
    return f"<table>{head}{''.join(rows)}</table>"


def _regressions_section(regressions: RegressionReport) -> str:
    out = [
        '<section id="regressions"><h2>Regressions</h2>',
        '<p class="note">Change points over every run of each series, whole-run host effects taken out; causes, '
        f'trend charts and the host effects are on the <a href="{REGRESSIONS_PAGE}">regressions page</a>.</p>',
    ]
    if regressions.slowdowns:
        out.append(
            f'<div class="alert"><strong>{len(regressions.slowdowns)} slowdown(s)</strong>. '
            f"{_e(regressions.summary())}.</div>"
        )
        out.append(_change_rows(regressions.slowdowns))
    elif regressions.data_sufficient:
        out.append(f'<div class="ok">No slowdowns. {_e(regressions.summary())}.</div>')
    else:
        out.append(
            '<div class="caution"><strong>Insufficient data:</strong> no series has enough runs to judge, so '
            f"nothing can be said about regressions. {_e(regressions.summary())}.</div>"
        )
    out.append("</section>")
    return "\n".join(out)


def _toc(planned: dict[str, list[ChartGroup]], by_kernel: dict[str, list[Change]]) -> str:
    items = []
    for kernel, groups in planned.items():
        series = sum(len(g.series) for g in groups)
        charts = sum(len(g.charts) for g in groups)
        gpus = ", ".join(g.gpu for g in groups)
        badge = f' <span class="badge">{len(by_kernel[kernel])} regressions</span>' if by_kernel.get(kernel) else ""
        items.append(
            f'<li><a href="#{_anchor(kernel)}">{_e(groups[0].kernel_title)}</a> '
            f'<span class="note">({_e(kernel)} · {_e(gpus)} · {series} series, {charts} charts)</span>'
            f"{badge}</li>"
        )
    return f'<nav id="toc"><h2>Kernels</h2><ol>{"".join(items)}</ol></nav>'


def _kernel_section(
    kernel: str, groups: list[ChartGroup], regressions: list[Change], regressed_keys: dict[tuple, list[Change]]
) -> str:
    series = sum(len(g.series) for g in groups)
    charts = sum(len(g.charts) for g in groups)
    out = [
        f'<section class="kernel" id="{_anchor(kernel)}" data-kernel="{_e(kernel)}" data-series-count="{series}" '
        f'data-chart-count="{charts}" data-regression-count="{len(regressions)}">',
        f"<h2>{_e(groups[0].kernel_title)} <small>({_e(kernel)})</small></h2>",
    ]
    if regressions:
        out.append(f'<div class="alert"><strong>{len(regressions)} regression(s)</strong> for this kernel.</div>')
        out.append(_change_rows(regressions))
    for group in groups:
        providers = sorted({(s.role, s.provider) for s in group.series})
        provider_text = ", ".join(f"{p}{' (baseline)' if r == 'baseline' else ''}" for r, p in providers)
        out.append(
            f'<section class="gpu" data-gpu="{_e(group.gpu)}" data-environment="{_e(group.environment_digest)}" '
            f'data-series-count="{len(group.series)}" data-chart-count="{len(group.charts)}">'
        )
        out.append(f"<h3>{_e(group.gpu)}</h3>")
        out.append(
            f'<p class="note">Liger versions: {_e(", ".join(group.versions) or "none")} · providers: '
            f"{_e(provider_text)} · {len(group.series)} series</p>"
        )
        for note in group.notes:
            out.append(f'<p class="note">{_e(note)}</p>')
        sweeps: dict[int, list[Chart]] = {}  # a sweep's charts side by side where the page is wide enough
        for chart in group.charts:
            sweeps.setdefault(id(chart.sweep), []).append(chart)
        for charts in sweeps.values():
            out.append('<div class="sweep">' + "".join(_figure(c, regressed_keys) for c in charts) + "</div>")
        out.append("</section>")
    out.append("</section>")
    return "\n".join(out)


def _figure(chart: Chart, regressed_keys: dict[tuple, list[Change]]) -> str:
    accounted = len(chart.owned_series) if chart.kind in ACCOUNTING_KINDS else 0
    flagged = [
        c
        for s in chart.series
        for c in regressed_keys.get(
            _chart_key(s.kernel, s.mode, s.provider, s.key.workload_digest, s.gpu_slug, s.key.metric), []
        )
    ]
    if chart.kind in (SPEEDUP, SAVING, EFFICIENCY):
        flagged = []  # regressions are marked on the charts of the series' own values, where they are visible
    css = "chart has-regression" if flagged else "chart"
    badge = f' <span class="badge">{len(flagged)} regression(s) on this chart</span>' if flagged else ""
    alt = f"{chart.kind} chart of {chart.kernel} on {chart.gpu}, {chart.sweep.label()}"
    return (
        f'<figure class="{css}" data-chart-kind="{chart.kind}" data-kernel="{_e(chart.kernel)}" '
        f'data-gpu="{_e(chart.gpu)}" data-series-count="{accounted}" data-drawn-series="{len(chart.series)}" '
        f'data-panels="{len(chart.modes)}" '
        f'data-regression-count="{len(flagged)}">'
        f'<img src="{CHARTS_DIR}/{_e(chart.filename)}" alt="{_e(alt)}">'
        f"<figcaption>{_e(chart.caption)}{badge}</figcaption></figure>"
    )


def efficiency_section(report: EfficiencyReport, rows: list[TableRow], per_gpu: int = 15) -> str:
    """The catalogue-wide ranking: per GPU, the least efficient (kernel, pass) of the Liger providers first;
    implausible readings apart, folded."""
    counts = report.status_counts()
    out = [
        '<section id="efficiency-section"><h2>Efficiency: percent of peak</h2>',
        '<p class="note">Each latency run against its GPU\'s roofline: the minimum HBM bytes or FLOPs of its '
        "workload (data/liger-cost-models.yaml) per second, as a percent of the datasheet peak (data/gpu-peaks.yaml) "
        "and, where a sweep's copy sentinel ran on the same host, of that measured ceiling. Per GPU, kernel, pass "
        f"and Liger provider, its largest workload at the newest version; below {report.low_threshold:.0%} is "
        "<em>low efficiency</em>; readings whose re-read set fits in L2 or above a ceiling are "
        "<em>implausible</em>, listed apart. "
        f"{counts.get('ok', 0)} runs with a figure, {counts.get('no cost model', 0)} without a cost model, "
        f"{counts.get('no peak', 0)} on a GPU without a sourced peak. Every run's figures are in the "
        f"export's {SIDECAR_NAME} (the export command, the catalogue_export and efficiency_table assets).</p>",
    ]
    if not rows:
        out.append(
            '<p class="caution">No run has an efficiency figure (no cost model or no peak for these '
            "kernels and GPUs).</p></section>"
        )
        return "\n".join(out)
    by_gpu: dict[str, list[TableRow]] = defaultdict(list)
    for row in rows:
        by_gpu[row.gpu].append(row)
    head = (
        "<tr><th>kernel</th><th>pass</th><th>provider</th><th>largest workload</th><th>achieved</th>"
        "<th>% of datasheet peak</th><th>% of measured ceiling</th><th>flags</th><th>Liger</th></tr>"
    )
    for gpu, gpu_rows in by_gpu.items():
        plausible = [r for r in gpu_rows if r.facts.plausible]
        implausible = [r for r in gpu_rows if not r.facts.plausible]
        out.append(
            f'<h3>{_e(gpu)}</h3><table class="efficiency-ranking" data-gpu="{_e(gpu)}">{head}'
            + "".join(_efficiency_row(r) for r in plausible[:per_gpu])
            + "</table>"
        )
        if len(plausible) > per_gpu:
            out.append(
                f'<p class="note">… and {len(plausible) - per_gpu} more (kernel, pass, provider) readings on '
                f"{_e(gpu)}, in the export's {SIDECAR_NAME}.</p>"
            )
        if implausible:
            out.append(
                f"<details><summary>{len(implausible)} implausible reading{'s' if len(implausible) != 1 else ''} "
                f"on {_e(gpu)} (re-read set fits in "
                f"L2, or above a ceiling)</summary><table>{head}"
                + "".join(_efficiency_row(r) for r in implausible)
                + "</table></details>"
            )
    out.append("</section>")
    return "\n".join(out)


def _efficiency_row(row: TableRow) -> str:
    f = row.facts
    measured = format_pct(f.pct_of_measured) if f.pct_of_measured is not None else "–"
    css = "efficiency" + (" implausible" if not f.plausible else " low" if FLAG_LOW in f.flags else "")
    return (
        f'<tr class="{css}" data-gpu="{_e(f.gpu)}" data-kernel="{_e(f.kernel)}" data-mode="{_e(f.mode)}" '
        f'data-provider="{_e(f.provider)}" data-pct="{f.pct_of_peak:.2f}" data-flags="{_e(" ".join(f.flags))}">'
        f"<td>{_e(f.kernel)}</td><td>{_e(f.mode)}</td><td>{_e(f.provider)}</td><td>{_e(f.case_key)}</td>"
        f'<td class="num">{f.achieved / TERA:.3g} {_e(f.unit)}</td>'
        f'<td class="num">{format_pct(f.pct_of_peak)}</td><td class="num">{measured}</td>'
        f"<td>{_e(', '.join(f.flags) or '–')}</td><td>{_e(f.liger_version or '')}</td></tr>"
    )


def coverage_section(coverage: list[CoverageCell]) -> str:
    """The coverage table: totals per metric, skips by reason, then every cell (cells that lost rows first)."""

    def lost(c: CoverageCell) -> int:
        return c.rows - c.runs

    totals: dict[str, list[int]] = {}
    reasons: Counter = Counter()
    for c in coverage:
        total = totals.setdefault(c.metric, [0, 0])
        total[0] += c.rows
        total[1] += c.runs
        reasons.update({r: n for r, n in c.skipped.items() if n})
        if c.issues:
            reasons["issues"] += c.issues
    metric_text = "; ".join(
        f"{m}: {rows} rows, {runs} runs ({runs / rows:.1%})" if rows else f"{m}: no rows"
        for m, (rows, runs) in sorted(totals.items())
    )
    out = [
        '<section id="coverage-section"><h2>Coverage of the imported rows</h2>',
        f'<p class="note">{_e(metric_text or "no rows")}. One table row per kernel, provider, mode, GPU, '
        "Liger version and metric.</p>",
    ]
    if reasons:
        out.append(
            '<table id="coverage-reasons"><tr><th>not a run because</th><th>rows</th></tr>'
            + "".join(
                f'<tr><td>{_e(r)}</td><td class="num">{n}</td></tr>'
                for r, n in sorted(reasons.items(), key=lambda rn: (-rn[1], rn[0]))
            )
            + "</table>"
        )
    ordered = sorted(
        coverage, key=lambda c: (lost(c) == 0, -lost(c), c.kernel, c.provider, c.mode, c.gpu, c.version, c.metric)
    )
    body = []
    for c in ordered:
        lost_text = ", ".join(
            [f"{r}: {n}" for r, n in sorted(c.skipped.items()) if n] + ([f"issues: {c.issues}"] if c.issues else [])
        )
        pct = f"{c.runs / c.rows:.0%}" if c.rows else "–"
        body.append(
            f'<tr class="coverage{" incomplete" if lost(c) else ""}" data-kernel="{_e(c.kernel)}" '
            f'data-provider="{_e(c.provider)}" data-mode="{_e(c.mode)}" data-gpu="{_e(c.gpu)}" '
            f'data-version="{_e(c.version)}" data-metric="{_e(c.metric)}" data-rows="{c.rows}" '
            f'data-runs="{c.runs}"><td>{_e(c.kernel)}</td><td>{_e(c.provider)}</td><td>{_e(c.mode)}</td>'
            f"<td>{_e(c.gpu)}</td><td>{_e(c.version)}</td><td>{_e(c.metric)}</td>"
            f'<td class="num">{c.rows}</td><td class="num">{c.runs}</td><td class="num">{pct}</td>'
            f"<td>{_e(lost_text)}</td></tr>"
        )
    incomplete = sum(1 for c in coverage if lost(c))
    out.append(
        f"<details{' open' if incomplete and len(coverage) <= 40 else ''}><summary>{len(coverage)} cells, "
        f'{incomplete} with rows that did not become runs</summary><table id="coverage"><tr><th>kernel</th>'
        "<th>provider</th><th>mode</th><th>GPU</th><th>Liger</th><th>metric</th><th>rows</th><th>runs</th>"
        f"<th>covered</th><th>not a run because</th></tr>{''.join(body)}</table></details></section>"
    )
    return "\n".join(out)


__all__ = [
    "ReportResult",
    "build_report",
    "coverage_section",
    "summary_markdown",
    "VERSIONS",
    "SPEEDUP",
    "LATENCY",
    "MEMORY",
    "SAVING",
]
