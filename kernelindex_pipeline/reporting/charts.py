"""Charts of the catalogue report: real matplotlib plots written as SVG files.

Per kernel and execution environment (GPU), workloads are split into sweeps (one
varying axis, or a categorical axis such as the model names of model_config rows;
see `series.find_sweeps`). Each sweep gets up to five figures, with one panel per
pass (forward, backward, full):

- latency: median latency against the swept axis for every provider, with the
  p20-p80 band shaded; each series is drawn at its latest Liger version;
- memory: peak memory (``max_memory_allocated``) against the swept axis for every
  provider, in KiB/MiB/GiB as the values need, at each series' latest Liger version;
- speedup: baseline median / Liger median for each Liger provider over each
  baseline provider (ImplementationRevision labels.role == baseline), at the
  newest Liger version both were measured with;
- memory-saving: Liger's peak-memory saving over each baseline,
  (baseline - Liger) / baseline in percent (> 0: Liger needs less), paired the same way;
- versions: the Liger providers' latency at every Liger version measured
  (only drawn when the sweep has two versions or more);
- efficiency: percent of the GPU's datasheet peak (reporting/efficiency.py) against the swept axis for
  every provider at its latest Liger version, the implausible region (above 100 %) shaded, workloads
  whose re-read set fits in L2 shaded too and their points hollow (only drawn where a cost model and a
  peak give figures).

Figures use the object API (no pyplot state) and the Agg/SVG canvases only.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # never try a GUI backend (the report is built headless)

from matplotlib.figure import Figure  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from kernelindex_pipeline.records.names import kebab  # noqa: E402

from .efficiency import FLAG_L2, IMPLAUSIBLE_FLAGS, EfficiencyReport, RunEfficiency  # noqa: E402
from .series import (  # noqa: E402
    LATENCY_METRIC,
    MODE_ORDER,
    PEAK_MEMORY_METRIC,
    Point,
    Series,
    SeriesSet,
    Sweep,
    find_sweeps,
    parse_version,
)

LATENCY, MEMORY, SPEEDUP, SAVING, VERSIONS = "latency", "memory", "speedup", "memory-saving", "versions"
EFFICIENCY = "efficiency"
CHART_KINDS = (LATENCY, MEMORY, SPEEDUP, SAVING, VERSIONS, EFFICIENCY)
ACCOUNTING_KINDS = {LATENCY: LATENCY_METRIC, MEMORY: PEAK_MEMORY_METRIC}  # charts that account for series

_RC = {
    "svg.fonttype": "none",  # text stays text: smaller files, selectable labels
    "svg.hashsalt": "kernelindex-report",  # stable element ids, so a rebuild of the same data is byte-identical
    "font.size": 9,
}
_PROVIDER_COLORS = [
    "#1f77b4",
    "#d62728",
    "#2ca02c",
    "#ff7f0e",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#17becf",
    "#bcbd22",
    "#7f7f7f",
    "#393b79",
    "#637939",
]


@dataclass
class Chart:
    kind: str
    kernel: str
    kernel_title: str
    gpu: str
    environment_digest: str
    sweep: Sweep
    series: list[Series]  # every series drawn
    owned_series: list[Series] = field(default_factory=list)  # series this chart accounts for (latency, memory)
    filename: str = ""
    caption: str = ""
    efficiency: EfficiencyReport | None = None  # the run facts an efficiency chart draws

    @property
    def modes(self) -> list[str]:
        return sorted({s.mode for s in self.series}, key=_mode_rank)

    @property
    def providers(self) -> list[str]:
        return sorted({s.provider for s in self.series})


@dataclass(frozen=True)
class DrawnLine:
    """One line a chart drew: its panel (pass), legend label and points (x positions, y in the axis unit)."""

    mode: str
    label: str
    xs: tuple[float, ...]
    ys: tuple[float, ...]


@dataclass
class ChartGroup:
    """The charts of one kernel on one environment (GPU)."""

    kernel: str
    kernel_title: str
    gpu: str
    environment_digest: str
    series: list[Series]  # latency and peak-memory series alike
    charts: list[Chart]
    versions: list[str]  # Liger versions measured for this kernel on this environment
    notes: list[str] = field(default_factory=list)


def _mode_rank(mode: str) -> tuple[int, str]:
    return (MODE_ORDER.index(mode) if mode in MODE_ORDER else len(MODE_ORDER), mode)


def plan_charts(
    series_set: SeriesSet, memory_set: SeriesSet | None = None, efficiency: EfficiencyReport | None = None
) -> dict[str, list[ChartGroup]]:
    """Which charts the report holds: kernel -> groups (one per environment), with file names.

    `series_set` holds latency series, `memory_set` (optional) peak-memory series; both metrics of
    one kernel and GPU share the sweeps, so a sweep's memory charts sit next to its latency charts.
    `efficiency` (optional) adds a sweep's efficiency chart where its latency runs have figures.
    """
    by_kernel: dict[str, list[Series]] = defaultdict(list)
    for s in [*series_set, *(memory_set or [])]:
        by_kernel[s.kernel].append(s)
    planned: dict[str, list[ChartGroup]] = {}
    for kernel, kernel_series in sorted(by_kernel.items()):
        by_environment: dict[str, list[Series]] = defaultdict(list)
        for s in kernel_series:
            by_environment[s.key.environment_digest].append(s)
        groups = []
        counter = 0
        for environment, env_series in sorted(by_environment.items(), key=lambda kv: (kv[1][0].gpu, kv[0])):
            first = env_series[0]
            versions = _sorted_versions({p.version for s in env_series for p in s.points})
            group = ChartGroup(
                kernel=kernel,
                kernel_title=first.kernel_title,
                gpu=first.gpu,
                environment_digest=environment,
                series=env_series,
                charts=[],
                versions=versions,
            )
            workloads = {s.workload.key: s.workload for s in env_series}
            for sweep in find_sweeps(workloads.values()):
                on_sweep = {w.key for w in sweep.workloads}
                # page order: latency, then memory and its saving (usually one panel each: side by side),
                # then the speed-up and the version chart
                charts = []
                by_metric = {}
                for kind, metric in ACCOUNTING_KINDS.items():
                    drawn = [s for s in env_series if s.metric == metric and s.workload.key in on_sweep]
                    owned = [s for s in drawn if s.workload.key in sweep.owned]
                    by_metric[metric] = drawn
                    if drawn:
                        charts.append(_chart(kind, group, sweep, drawn, owned))
                for kind, metric in ((SAVING, PEAK_MEMORY_METRIC), (SPEEDUP, LATENCY_METRIC)):
                    if comparison_pairs(by_metric[metric]):
                        charts.append(_chart(kind, group, sweep, by_metric[metric]))
                liger = [s for s in by_metric[LATENCY_METRIC] if s.role == "liger"]
                if len({p.version for s in liger for p in s.points}) >= 2:
                    charts.append(_chart(VERSIONS, group, sweep, liger))
                with_figures = [s for s in by_metric[LATENCY_METRIC] if _efficiency_of(efficiency, s) is not None]
                if with_figures:
                    charts.append(_chart(EFFICIENCY, group, sweep, with_figures))
                    charts[-1].efficiency = efficiency
                for c in charts:
                    counter += 1
                    c.filename = f"{kebab(kernel)}-{counter:03d}-{c.kind}.svg"
                    c.caption = _caption(c)
                group.charts.extend(charts)
            for kind, metric, what in (
                (SPEEDUP, LATENCY_METRIC, "speed-up"),
                (SAVING, PEAK_MEMORY_METRIC, "memory saving"),
            ):
                measured = [s for s in env_series if s.metric == metric]
                if measured and not any(c.kind == kind for c in group.charts):
                    roles = {s.role for s in measured}
                    missing = [r for r in ("liger", "baseline") if r not in roles]
                    group.notes.append(
                        f"No Liger-over-baseline {what}: "
                        + (
                            f"no {' or '.join(missing)} provider measured here."
                            if missing
                            else "Liger and baseline providers share no workload and pass."
                        )
                    )
            if len(versions) < 2:
                group.notes.append(
                    f"Only Liger {', '.join(versions) or '(no version)'} measured for this kernel "
                    f"on {first.gpu}: no comparison across Liger versions is possible."
                )
            groups.append(group)
        planned[kernel] = groups
    return planned


def _chart(kind: str, group: ChartGroup, sweep: Sweep, drawn: list[Series], owned: list[Series] | None = None) -> Chart:
    return Chart(kind, group.kernel, group.kernel_title, group.gpu, group.environment_digest, sweep, drawn, owned or [])


def _sorted_versions(versions: set[str]) -> list[str]:
    return sorted(versions, key=lambda v: parse_version(v) or parse_version("0"))


def comparison_pairs(series: list[Series]) -> list[tuple[Series, Series]]:
    """(liger, baseline) series pairs of one metric on the same workload and pass that share a Liger version."""
    pairs = []
    by_place: dict[tuple[str, str, str], list[Series]] = defaultdict(list)
    for s in series:
        by_place[(s.metric, s.mode, s.workload.key)].append(s)
    for members in by_place.values():
        for liger in (s for s in members if s.role == "liger"):
            for baseline in (s for s in members if s.role == "baseline"):
                if set(liger.versions) & set(baseline.versions):
                    pairs.append((liger, baseline))
    return pairs


def speedup(liger: Point, baseline: Point) -> float:
    """How many times faster Liger is: baseline median / Liger median."""
    return baseline.median / liger.median


def memory_saving_pct(liger: Point, baseline: Point) -> float:
    """Liger's peak-memory saving over the baseline in percent: (baseline - Liger) / baseline * 100."""
    return (baseline.median - liger.median) / baseline.median * 100


def compare_at_newest_common_version(
    liger: Series, baseline: Series, compare: Callable[[Point, Point], float]
) -> tuple[str, float]:
    """(version, compare(liger point, baseline point)) at the newest Liger version both series have."""
    version = max(set(liger.versions) & set(baseline.versions), key=parse_version)
    l_point = next(p for p in liger.points if p.version == version)
    b_point = next(p for p in baseline.points if p.version == version)
    return version, compare(l_point, b_point)


def _axis_name(sweep: Sweep) -> str:
    return sweep.x_axis or "workload"


def _caption(chart: Chart) -> str:
    sweep = chart.sweep
    axis = _axis_name(sweep)
    what = {
        LATENCY: f"Median latency against {axis} (p20–p80 band shaded), latest Liger version per series",
        MEMORY: f"Peak memory (torch.cuda.max_memory_allocated) against {axis}, latest Liger version per series",
        SPEEDUP: f"Speed-up of Liger over baselines against {axis} (baseline median / Liger median; >1 = Liger faster)",
        SAVING: f"Peak-memory saving of Liger over baselines against {axis} ((baseline − Liger) / baseline; "
        ">0 = Liger needs less memory)",
        VERSIONS: f"Liger latency against {axis} for every Liger version measured",
        EFFICIENCY: f"Percent of the datasheet peak against {axis} (HBM bandwidth or dense FLOP/s, whichever bounds "
        "the kernel), latest Liger version per series; shaded: implausible (above peak, or the re-read "
        "set fits in L2: hollow points)",
    }[chart.kind]
    return f"{what} · {chart.gpu} · {sweep.label()}"


# --------------------------------------------------------------------------- rendering


def provider_colors(*series_sets: SeriesSet | None) -> dict[str, str]:
    providers = sorted({s.provider for series_set in series_sets for s in (series_set or [])})
    return {p: _PROVIDER_COLORS[i % len(_PROVIDER_COLORS)] for i, p in enumerate(providers)}


def _scale_x(ax, sweep: Sweep, xs: list[int]) -> None:
    if sweep.categories is not None:
        labels = sweep.categories
        ax.set_xticks(
            range(len(labels)),
            labels,
            rotation=30 if sum(map(len, labels)) > 40 else 0,
            ha="right" if sum(map(len, labels)) > 40 else "center",
        )
        ax.set_xlim(-0.5, len(labels) - 0.5)
        ax.minorticks_off()
        return
    positive = [x for x in xs if x > 0]
    if positive and len(positive) == len(xs) and max(positive) / min(positive) >= 8:
        ax.set_xscale("log", base=2)
    ticks = sorted(set(xs))
    if len(ticks) <= 10:
        ax.set_xticks(ticks, [str(t) for t in ticks])
        ax.minorticks_off()


def _unit(values_ns: list[float]) -> tuple[float, str]:
    top = max(values_ns, default=0)
    if top >= 1e6:
        return 1e6, "ms"
    if top >= 1e3:
        return 1e3, "µs"
    return 1.0, "ns"


def bytes_unit(values: list[float]) -> tuple[int, str]:
    """The binary unit the largest value reads best in: (bytes per unit, name). Liger measures MiB."""
    top = max(values, default=0)
    for power, name in ((3, "GiB"), (2, "MiB"), (1, "KiB")):
        if top >= 1024**power:
            return 1024**power, name
    return 1, "bytes"


def format_bytes(value: float | None) -> str:
    if value is None:
        return "–"
    scale, unit = bytes_unit([value])
    return f"{value / scale:.3g} {unit}" if scale > 1 else f"{value:g} bytes"


_LEFT_IN, _PANEL_IN, _GAP_IN = 0.75, 3.8, 0.3  # left margin, width per panel, gap before the legend


def _new_figure(chart: Chart) -> tuple[Figure, list]:
    modes = chart.modes
    categorical = chart.sweep.categories is not None
    # Fixed margins instead of constrained layout: it halves the time to draw a report of ~100 charts.
    # The right margin (the legend's) is set to the legend's measured width once it is drawn (_fit_legend).
    width, height = _PANEL_IN * len(modes) + 2.2, 3.4 + (0.5 if categorical else 0)
    bottom = 0.45 + (0.5 if categorical else 0)
    figure = Figure(figsize=(width, height))
    figure.subplots_adjust(
        left=_LEFT_IN / width, right=1 - 2.3 / width, bottom=bottom / height, top=1 - 0.75 / height, wspace=0.28
    )
    axes = figure.subplots(1, len(modes), squeeze=False)[0]
    for ax, mode in zip(axes, modes, strict=False):
        ax.set_title(mode)
        ax.grid(True, alpha=0.3)
        ax.set_xlabel(_axis_name(chart.sweep))
    figure.suptitle(f"{chart.kernel_title} ({chart.kernel}) · {chart.gpu}\n{chart.sweep.label()}", fontsize=9)
    return figure, list(zip(axes, modes, strict=False))


def _fit_legend(figure: Figure, legend, panels: int) -> None:
    """Keep the panels' size and give the legend exactly the room its labels take (long provider pairs)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    legend_in = legend.get_window_extent(FigureCanvasAgg(figure).get_renderer()).width / figure.dpi
    plots_in = _PANEL_IN * panels + 2.2 - _LEFT_IN - 2.3
    width = _LEFT_IN + plots_in + _GAP_IN + legend_in + 0.1
    figure.set_size_inches(width, figure.get_figheight())
    figure.subplots_adjust(left=_LEFT_IN / width, right=1 - (_GAP_IN + legend_in + 0.1) / width)


def render_chart(chart: Chart, path: Path, colors: dict[str, str]) -> list[DrawnLine]:
    """Draw one chart, write it as SVG to `path` and say which lines it drew."""
    lines: list[DrawnLine] = []
    with matplotlib.rc_context(_RC):
        figure, panels = _new_figure(chart)
        draw = {
            LATENCY: _draw_latency,
            MEMORY: _draw_memory,
            SPEEDUP: _draw_speedup,
            SAVING: _draw_saving,
            VERSIONS: _draw_versions,
            EFFICIENCY: _draw_efficiency,
        }[chart.kind]
        handles = draw(chart, panels, colors, lines)
        if handles:
            legend = figure.legend(
                handles=handles,
                loc="upper right",
                fontsize=8,
                frameon=False,
                bbox_to_anchor=(1, 1 - 0.6 / figure.get_figheight()),
            )
            _fit_legend(figure, legend, len(panels))
        figure.savefig(path, format="svg", metadata={"Date": None})
    return lines


def _plot(ax, mode: str, lines: list[DrawnLine], xs, ys, **style):
    (handle,) = ax.plot(xs, ys, marker="o", markersize=3.5, **style)
    lines.append(DrawnLine(mode, style["label"], tuple(xs), tuple(ys)))
    return handle


def _draw_latency(chart: Chart, panels, colors, lines) -> list:
    return _draw_providers(chart, panels, colors, lines, _unit, "median latency")


def _draw_memory(chart: Chart, panels, colors, lines) -> list:
    return _draw_providers(chart, panels, colors, lines, bytes_unit, "peak memory")


def _draw_providers(chart: Chart, panels, colors, lines, unit_of, quantity: str) -> list:
    """One line per provider and pass: each series at its latest Liger version, p20-p80 band shaded."""
    handles = {}
    for ax, mode in panels:
        in_mode = [s for s in chart.series if s.mode == mode and s.latest is not None]
        scale, unit = unit_of([s.latest.median for s in in_mode])
        xs_all = []
        for provider in sorted({s.provider for s in in_mode}):
            line = sorted((s for s in in_mode if s.provider == provider), key=lambda s: chart.sweep.x_of(s.workload))
            xs = [chart.sweep.x_of(s.workload) for s in line]
            xs_all += xs
            title = line[0].provider_title
            label = f"{title} ({provider})" if title != provider else provider
            handles[label] = _plot(
                ax,
                mode,
                lines,
                xs,
                [s.latest.median / scale for s in line],
                color=colors[provider],
                label=label,
                linestyle="--" if line[0].role == "baseline" else "-",
            )
            banded = [
                (x, s.latest.p20 / scale, s.latest.p80 / scale)
                for x, s in zip(xs, line, strict=False)
                if s.latest.has_band
            ]
            if banded:
                bx, lo, hi = zip(*banded, strict=False)
                ax.fill_between(bx, lo, hi, color=colors[provider], alpha=0.18, linewidth=0)
        ax.set_ylabel(f"{quantity} ({unit})")
        _scale_x(ax, chart.sweep, xs_all)
        ax.set_ylim(bottom=0)
    return [handles[k] for k in sorted(handles)]


def _draw_speedup(chart: Chart, panels, colors, lines) -> list:
    return _draw_comparison(chart, panels, colors, lines, speedup, "speed-up (×)", reference=1.0)


def _draw_saving(chart: Chart, panels, colors, lines) -> list:
    return _draw_comparison(chart, panels, colors, lines, memory_saving_pct, "memory saving (%)", reference=0.0)


def _draw_comparison(chart: Chart, panels, colors, lines, compare, ylabel: str, reference: float) -> list:
    """One line per (Liger provider, baseline provider) and pass, at their newest common Liger version."""
    handles = {}
    pairs = comparison_pairs(chart.series)
    for ax, mode in panels:
        ax.axhline(reference, color="black", linewidth=0.8, alpha=0.6)
        by_pair: dict[tuple[str, str], list[tuple[int, float]]] = defaultdict(list)
        for liger, baseline in pairs:
            if liger.mode == mode:
                _, value = compare_at_newest_common_version(liger, baseline, compare)
                by_pair[(liger.provider, baseline.provider)].append((chart.sweep.x_of(liger.workload), value))
        xs_all = []
        baselines = sorted({b for _, b in by_pair})
        for (liger_provider, baseline_provider), points in sorted(by_pair.items()):
            points.sort()
            xs, ys = zip(*points, strict=False)
            xs_all += xs
            label = f"{liger_provider} vs {baseline_provider}"
            handles[label] = _plot(
                ax,
                mode,
                lines,
                xs,
                ys,
                color=colors[liger_provider],
                label=label,
                linestyle=["-", "--", ":", "-."][baselines.index(baseline_provider) % 4],
            )
        ax.set_ylabel(ylabel)
        if xs_all:
            _scale_x(ax, chart.sweep, xs_all)
        if reference == 1.0:
            ax.set_ylim(bottom=0)
    return [handles[k] for k in sorted(handles)]


def _draw_versions(chart: Chart, panels, colors, lines) -> list:
    from matplotlib import colormaps

    versions = _sorted_versions({p.version for s in chart.series for p in s.points})
    cmap = colormaps["viridis"]
    version_color = {v: cmap(i / max(1, len(versions) - 1) * 0.9) for i, v in enumerate(versions)}
    providers = sorted({s.provider for s in chart.series})
    styles = {p: ["-", "--", ":", "-."][i % 4] for i, p in enumerate(providers)}
    handles = {}
    for ax, mode in panels:
        in_mode = [s for s in chart.series if s.mode == mode]
        scale, unit = _unit([p.median for s in in_mode for p in s.points])
        xs_all = []
        for provider in providers:
            for version in versions:
                points = sorted(
                    (
                        (chart.sweep.x_of(s.workload), p)
                        for s in in_mode
                        if s.provider == provider
                        for p in s.points
                        if p.version == version
                    ),
                    key=lambda xp: xp[0],
                )
                if not points:
                    continue
                xs = [x for x, _ in points]
                xs_all += xs
                handles[(providers.index(provider), versions.index(version))] = _plot(
                    ax,
                    mode,
                    lines,
                    xs,
                    [p.median / scale for _, p in points],
                    color=version_color[version],
                    linestyle=styles[provider],
                    label=f"{provider} {version}",
                )
                banded = [(x, p.p20 / scale, p.p80 / scale) for x, p in points if p.has_band]
                if banded:
                    bx, lo, hi = zip(*banded, strict=False)
                    ax.fill_between(bx, lo, hi, color=version_color[version], alpha=0.15, linewidth=0)
        ax.set_ylabel(f"median latency ({unit})")
        if xs_all:
            _scale_x(ax, chart.sweep, xs_all)
        ax.set_ylim(bottom=0)
    return [handles[k] for k in sorted(handles)]


def _efficiency_of(report: EfficiencyReport | None, series: Series) -> RunEfficiency | None:
    """The efficiency facts of a latency series' latest point, when they give a percent of peak."""
    if report is None or series.latest is None:
        return None
    facts = report.runs.get(series.latest.run_digest)
    return facts if facts is not None and facts.pct_of_peak is not None else None


def _draw_efficiency(chart: Chart, panels, colors, lines) -> list:
    """One line per provider and pass: % of the datasheet peak at each series' latest Liger version."""
    handles = {}
    for ax, mode in panels:
        in_mode = [(s, _efficiency_of(chart.efficiency, s)) for s in chart.series if s.mode == mode]
        in_mode = [(s, f) for s, f in in_mode if f is not None]
        xs_all, top = [], 100.0
        for provider in sorted({s.provider for s, _ in in_mode}):
            line = sorted(
                ((chart.sweep.x_of(s.workload), s, f) for s, f in in_mode if s.provider == provider),
                key=lambda xsf: xsf[0],
            )
            xs = [x for x, _, _ in line]
            ys = [f.pct_of_peak for _, _, f in line]
            xs_all += xs
            top = max(top, *ys)
            first = line[0][1]
            label = f"{first.provider_title} ({provider})" if first.provider_title != provider else provider
            handles[label] = _plot(
                ax,
                mode,
                lines,
                xs,
                ys,
                color=colors[provider],
                label=label,
                linestyle="--" if first.role == "baseline" else "-",
            )
            hollow = [
                (x, y) for (x, _, f), y in zip(line, ys, strict=True) if any(g in IMPLAUSIBLE_FLAGS for g in f.flags)
            ]
            if hollow:
                ax.scatter(*zip(*hollow, strict=True), s=40, facecolors="white", edgecolors=colors[provider], zorder=3)
        resident = sorted(
            {x for x, s, f in ((chart.sweep.x_of(s.workload), s, f) for s, f in in_mode) if FLAG_L2 in f.flags}
        )
        for x in resident:  # the workloads whose re-read set fits in L2: the whole column is implausible
            ax.axvspan(
                x * 0.9 if chart.sweep.categories is None else x - 0.4,
                x * 1.1 if chart.sweep.categories is None else x + 0.4,
                color="#9a6700",
                alpha=0.12,
                linewidth=0,
            )
        ax.axhspan(100, max(top * 1.08, 110), color="#cf222e", alpha=0.10, linewidth=0)
        ax.axhline(100, color="#cf222e", linewidth=0.8, alpha=0.6)
        ax.set_ylabel("% of datasheet peak")
        if resident:
            handles["~implausible: re-read set fits in L2"] = Patch(
                color="#9a6700", alpha=0.25, label="implausible: fits in L2"
            )
        handles["~implausible: above peak"] = Patch(color="#cf222e", alpha=0.2, label="implausible: above peak")
        if xs_all:
            _scale_x(ax, chart.sweep, xs_all)
        ax.set_ylim(0, max(top * 1.08, 110))
    return [handles[k] for k in sorted(handles)]
