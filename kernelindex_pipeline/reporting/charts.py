"""Charts of the catalogue report: real matplotlib plots written as SVG files.

Per kernel and execution environment (GPU), workloads are split into sweeps (one
varying axis, see `series.find_sweeps`). Each sweep gets up to three figures, with
one panel per timed pass (forward, backward, full):

- latency: median latency against the swept axis for every provider, with the
  p20-p80 band shaded; each series is drawn at its latest Liger version;
- speedup: baseline median / Liger median for each Liger provider over each
  baseline provider (ImplementationRevision labels.role == baseline), at the
  newest Liger version both were measured with;
- versions: the Liger providers' latency at every Liger version measured
  (only drawn when the sweep has two versions or more).

Figures use the object API (no pyplot state) and the Agg/SVG canvases only.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # never try a GUI backend (the report is built headless)

from matplotlib.figure import Figure  # noqa: E402

from kernelindex_pipeline.records.names import kebab  # noqa: E402

from .series import MODE_ORDER, Series, SeriesSet, Sweep, Workload, find_sweeps  # noqa: E402

LATENCY, SPEEDUP, VERSIONS = "latency", "speedup", "versions"
CHART_KINDS = (LATENCY, SPEEDUP, VERSIONS)

_RC = {
    "svg.fonttype": "none",  # text stays text: smaller files, selectable labels
    "svg.hashsalt": "kernelindex-report",  # stable element ids, so a rebuild of the same data is byte-identical
    "font.size": 9,
}
_PROVIDER_COLORS = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22",
    "#7f7f7f", "#393b79", "#637939",
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
    owned_series: list[Series] = field(default_factory=list)  # series this chart accounts for (latency charts)
    filename: str = ""
    caption: str = ""

    @property
    def modes(self) -> list[str]:
        return sorted({s.mode for s in self.series}, key=_mode_rank)

    @property
    def providers(self) -> list[str]:
        return sorted({s.provider for s in self.series})


@dataclass
class ChartGroup:
    """The charts of one kernel on one environment (GPU)."""

    kernel: str
    kernel_title: str
    gpu: str
    environment_digest: str
    series: list[Series]
    charts: list[Chart]
    versions: list[str]  # Liger versions measured for this kernel on this environment
    notes: list[str] = field(default_factory=list)


def _mode_rank(mode: str) -> tuple[int, str]:
    return (MODE_ORDER.index(mode) if mode in MODE_ORDER else len(MODE_ORDER), mode)


def plan_charts(series_set: SeriesSet) -> dict[str, list[ChartGroup]]:
    """Which charts the report holds: kernel -> groups (one per environment), with file names."""
    planned: dict[str, list[ChartGroup]] = {}
    for kernel, kernel_series in series_set.by_kernel().items():
        by_environment: dict[str, list[Series]] = defaultdict(list)
        for s in kernel_series:
            by_environment[s.key.environment_digest].append(s)
        groups = []
        counter = 0
        for environment, env_series in sorted(by_environment.items(), key=lambda kv: (kv[1][0].gpu, kv[0])):
            first = env_series[0]
            versions = _sorted_versions({p.version for s in env_series for p in s.points})
            group = ChartGroup(kernel=kernel, kernel_title=first.kernel_title, gpu=first.gpu,
                               environment_digest=environment, series=env_series, charts=[], versions=versions)
            workloads = {s.workload.digest: s.workload for s in env_series}
            for sweep in find_sweeps(workloads.values()):
                on_sweep = {w.digest for w in sweep.workloads}
                drawn = [s for s in env_series if s.workload.digest in on_sweep]
                owned = [s for s in env_series if s.workload.digest in sweep.owned]
                charts = [Chart(LATENCY, kernel, first.kernel_title, first.gpu, environment, sweep, drawn, owned)]
                if _speedup_pairs(drawn):
                    charts.append(Chart(SPEEDUP, kernel, first.kernel_title, first.gpu, environment, sweep, drawn))
                liger = [s for s in drawn if s.role == "liger"]
                if len({p.version for s in liger for p in s.points}) >= 2:
                    charts.append(Chart(VERSIONS, kernel, first.kernel_title, first.gpu, environment, sweep, liger))
                for chart in charts:
                    counter += 1
                    chart.filename = f"{kebab(kernel)}-{counter:03d}-{chart.kind}.svg"
                    chart.caption = _caption(chart)
                group.charts.extend(charts)
            if not any(c.kind == SPEEDUP for c in group.charts):
                roles = {s.role for s in env_series}
                missing = [r for r in ("liger", "baseline") if r not in roles]
                group.notes.append("No Liger-over-baseline speed-up: "
                                   + (f"no {' or '.join(missing)} provider measured here." if missing
                                      else "Liger and baseline providers share no workload and mode."))
            if len(versions) < 2:
                group.notes.append(f"Only Liger {', '.join(versions) or '(no version)'} measured for this kernel "
                                   f"on {first.gpu}: no comparison across Liger versions is possible.")
            groups.append(group)
        planned[kernel] = groups
    return planned


def _sorted_versions(versions: set[str]) -> list[str]:
    from .series import parse_version

    return sorted(versions, key=lambda v: parse_version(v) or parse_version("0"))


def _speedup_pairs(series: list[Series]) -> list[tuple[Series, Series]]:
    """(liger, baseline) series pairs on the same workload and mode that share a Liger version."""
    pairs = []
    by_place: dict[tuple[str, str], list[Series]] = defaultdict(list)
    for s in series:
        by_place[(s.mode, s.workload.digest)].append(s)
    for members in by_place.values():
        for liger in (s for s in members if s.role == "liger"):
            for baseline in (s for s in members if s.role == "baseline"):
                if set(liger.versions) & set(baseline.versions):
                    pairs.append((liger, baseline))
    return pairs


def _caption(chart: Chart) -> str:
    sweep = chart.sweep
    axis = sweep.x_axis or "workload"
    what = {
        LATENCY: f"Median latency against {axis} (p20–p80 band shaded), latest Liger version per series",
        SPEEDUP: f"Speed-up of Liger over baselines against {axis} (baseline median / Liger median; >1 = Liger faster)",
        VERSIONS: f"Liger latency against {axis} for every Liger version measured",
    }[chart.kind]
    return f"{what} · {chart.gpu} · {sweep.label()}"


# --------------------------------------------------------------------------- rendering

def provider_colors(series_set: SeriesSet) -> dict[str, str]:
    providers = sorted({s.provider for s in series_set})
    return {p: _PROVIDER_COLORS[i % len(_PROVIDER_COLORS)] for i, p in enumerate(providers)}


def _x(sweep: Sweep, workload: Workload) -> int:
    return workload.axes.get(sweep.x_axis, 0) if sweep.x_axis else 0


def _scale_x(ax, xs: list[int]) -> None:
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


def _new_figure(chart: Chart) -> tuple[Figure, list]:
    modes = chart.modes
    # Fixed margins instead of constrained layout: it halves the time to draw a report of ~100 charts.
    width, height, legend_in = 3.8 * len(modes) + 2.2, 3.4, 2.2
    figure = Figure(figsize=(width, height))
    figure.subplots_adjust(left=0.75 / width, right=1 - (legend_in + 0.1) / width, bottom=0.45 / height,
                           top=1 - 0.75 / height, wspace=0.28 * 3.8 / 3.8)
    axes = figure.subplots(1, len(modes), squeeze=False)[0]
    for ax, mode in zip(axes, modes, strict=False):
        ax.set_title(mode)
        ax.grid(True, alpha=0.3)
        ax.set_xlabel(chart.sweep.x_axis or "workload")
    figure.suptitle(f"{chart.kernel_title} ({chart.kernel}) · {chart.gpu}\n{chart.sweep.label()}", fontsize=9)
    return figure, list(zip(axes, modes, strict=False))


def render_chart(chart: Chart, path: Path, colors: dict[str, str]) -> None:
    """Draw one chart and write it as SVG to `path`."""
    with matplotlib.rc_context(_RC):
        figure, panels = _new_figure(chart)
        drawn = {LATENCY: _draw_latency, SPEEDUP: _draw_speedup, VERSIONS: _draw_versions}[chart.kind](
            chart, panels, colors)
        if drawn:
            figure.legend(handles=drawn, loc="upper right", bbox_to_anchor=(1, 1 - 0.6 / figure.get_figheight()),
                          fontsize=8, frameon=False)
        figure.savefig(path, format="svg", metadata={"Date": None})


def _draw_latency(chart: Chart, panels, colors) -> list:
    handles = {}
    for ax, mode in panels:
        in_mode = [s for s in chart.series if s.mode == mode and s.latest is not None]
        scale, unit = _unit([s.latest.median_ns for s in in_mode])
        xs_all = []
        for provider in sorted({s.provider for s in in_mode}):
            line = sorted((s for s in in_mode if s.provider == provider), key=lambda s: _x(chart.sweep, s.workload))
            xs = [_x(chart.sweep, s.workload) for s in line]
            xs_all += xs
            median = [s.latest.median_ns / scale for s in line]
            title = line[0].provider_title
            label = f"{title} ({provider})" if title != provider else provider
            (handle,) = ax.plot(xs, median, marker="o", markersize=3.5, color=colors[provider], label=label,
                                linestyle="--" if line[0].role == "baseline" else "-")
            banded = [(x, s.latest.p20_ns / scale, s.latest.p80_ns / scale)
                      for x, s in zip(xs, line, strict=False) if s.latest.has_band]
            if banded:
                bx, lo, hi = zip(*banded, strict=False)
                ax.fill_between(bx, lo, hi, color=colors[provider], alpha=0.18, linewidth=0)
            handles[label] = handle
        ax.set_ylabel(f"median latency ({unit})")
        _scale_x(ax, xs_all)
        ax.set_ylim(bottom=0)
    return [handles[k] for k in sorted(handles)]


def _draw_speedup(chart: Chart, panels, colors) -> list:
    from .series import parse_version

    handles = {}
    pairs = _speedup_pairs(chart.series)
    for ax, mode in panels:
        ax.axhline(1.0, color="black", linewidth=0.8, alpha=0.6)
        lines: dict[tuple[str, str], list[tuple[int, float]]] = defaultdict(list)
        for liger, baseline in pairs:
            if liger.mode != mode:
                continue
            version = max(set(liger.versions) & set(baseline.versions), key=parse_version)
            l_point = next(p for p in liger.points if p.version == version)
            b_point = next(p for p in baseline.points if p.version == version)
            lines[(liger.provider, baseline.provider)].append(
                (_x(chart.sweep, liger.workload), b_point.median_ns / l_point.median_ns))
        xs_all = []
        for (liger_provider, baseline_provider), points in sorted(lines.items()):
            points.sort()
            xs, ys = zip(*points, strict=False)
            xs_all += xs
            label = f"{liger_provider} vs {baseline_provider}"
            (handle,) = ax.plot(xs, ys, marker="o", markersize=3.5, color=colors[liger_provider], label=label,
                                linestyle=["-", "--", ":", "-."][sorted({b for _, b in lines}).index(
                                    baseline_provider) % 4])
            handles[label] = handle
        ax.set_ylabel("speed-up (×)")
        if xs_all:
            _scale_x(ax, xs_all)
        ax.set_ylim(bottom=0)
    return [handles[k] for k in sorted(handles)]


def _draw_versions(chart: Chart, panels, colors) -> list:
    from matplotlib import colormaps

    versions = _sorted_versions({p.version for s in chart.series for p in s.points})
    cmap = colormaps["viridis"]
    version_color = {v: cmap(i / max(1, len(versions) - 1) * 0.9) for i, v in enumerate(versions)}
    providers = sorted({s.provider for s in chart.series})
    styles = {p: ["-", "--", ":", "-."][i % 4] for i, p in enumerate(providers)}
    handles = {}
    for ax, mode in panels:
        in_mode = [s for s in chart.series if s.mode == mode]
        scale, unit = _unit([p.median_ns for s in in_mode for p in s.points])
        xs_all = []
        for provider in providers:
            for version in versions:
                points = sorted((_x(chart.sweep, s.workload), p) for s in in_mode if s.provider == provider
                                for p in s.points if p.version == version)
                if not points:
                    continue
                xs = [x for x, _ in points]
                xs_all += xs
                label = f"{provider} {version}"
                (handle,) = ax.plot(xs, [p.median_ns / scale for _, p in points], marker="o", markersize=3.5,
                                    color=version_color[version], linestyle=styles[provider], label=label)
                banded = [(x, p.p20_ns / scale, p.p80_ns / scale) for x, p in points if p.has_band]
                if banded:
                    bx, lo, hi = zip(*banded, strict=False)
                    ax.fill_between(bx, lo, hi, color=version_color[version], alpha=0.15, linewidth=0)
                handles[(providers.index(provider), versions.index(version))] = handle
        ax.set_ylabel(f"median latency ({unit})")
        if xs_all:
            _scale_x(ax, xs_all)
        ax.set_ylim(bottom=0)
    return [handles[k] for k in sorted(handles)]
