"""The regressions page (regressions.html + SVG charts) and regressions.json, from a RegressionReport.

One minute for a reader: a summary line, the host effects as their own small chart and table, then the
changes grouped by cause (liger, environment, host, unknown), each group sorted by magnitude then
confidence; every change has a trend chart of its series (observedAt on x, Liger version boundaries
marked, the noise band shaded around each segment's level, the change point drawn). Latency and peak
memory series alike. Machine-checkable: ``<section class="cause" data-cause data-change-count>``,
``<figure class="trend" data-kernel data-metric data-direction>``, ``<figure id="host-effects">``.
"""

from __future__ import annotations

import html
import json
import math
import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.dates as mdates  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402

from .attribution import CauseEvidence, check_message, group_changes  # noqa: E402
from .efficiency import EfficiencyReport, change_efficiency, format_pct  # noqa: E402
from .host_effects import CLASS_LABELS, MEMORY_CLASS, MIN_GROUPS  # noqa: E402
from .regressions import CAUSES, PEAK_MEMORY, Change, RegressionReport  # noqa: E402

PAGE_NAME = "regressions.html"
JSON_NAME = "regressions.json"
CHARTS_DIR = "regression-charts"
MAX_CHARTS_PER_CAUSE = 24  # the rest of a cause's changes are listed in its table without a chart

_CAUSE_TEXT = {
    "liger_kernel": "commits between the two runs' code touch the kernel (its op module, the modules it imports, its wrapper)",
    "benchmark_script": "commits between the two runs' code touch its benchmark script or the shared benchmark utilities",
    "environment": "the toolchain differs: measured (environment digests), or unpinned torch/triton/transformers "
    "released between the runs, or the benchmark workflow / its image changed",
    "host": "most kernels of that latency class moved the same way at the same run, and stayed",
    "unknown": "nothing recorded or found changes there",
}


@dataclass(frozen=True)
class WrittenRegressions:
    json: Path
    page: Path


def write_regressions(
    report: RegressionReport, out_dir: str | os.PathLike[str], efficiency: EfficiencyReport | None = None
) -> WrittenRegressions:
    """DIR/regressions.json (the documented shape) and DIR/regressions.html with its charts; with
    `efficiency`, each latency change also says how it moved the percent of peak."""
    out = Path(out_dir)
    (out / CHARTS_DIR).mkdir(parents=True, exist_ok=True)
    json_path = out / JSON_NAME
    json_path.write_text(json.dumps(report.to_dict(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    page = out / PAGE_NAME
    page.write_text(render_page(report, out / CHARTS_DIR, efficiency), encoding="utf-8")
    return WrittenRegressions(json=json_path, page=page)


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _time(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


_STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:1300px;padding:0 1.5rem 3rem;
color:#1b1f24;line-height:1.45}h2{border-bottom:1px solid #d0d7de;padding-bottom:.2rem;margin-top:2rem}
table{border-collapse:collapse;margin:.6rem 0;font-size:.85rem}th,td{border:1px solid #d0d7de;padding:.2rem .45rem;text-align:left}
th{background:#f6f8fa}td.num{text-align:right;font-variant-numeric:tabular-nums}
.slowdown{color:#cf222e;font-weight:600}.speedup{color:#1a7f37;font-weight:600}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(400px,1fr));gap:.8rem}
figure{margin:0;border:1px solid #d0d7de;border-radius:6px;padding:.4rem;background:#fff}
figure img{width:100%;height:auto;display:block}figcaption{font-size:.8rem;color:#57606a}
.note{color:#57606a;font-size:.9rem}.summary{font-size:1.05rem;border-left:4px solid #0969da;background:#ddf4ff;padding:.5rem .8rem}
"""


def render_page(report: RegressionReport, charts_dir: Path, efficiency: EfficiencyReport | None = None) -> str:
    s = report.settings
    counts = report.counts()
    out = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>Regressions</title><style>{_STYLE}</style></head>",
        f'<body data-change-count="{counts["changes"]}" data-series-count="{counts["series"]}" '
        f'data-host-effect-count="{counts["hostEffects"]}">',
        "<h1>Regressions and speed-ups</h1>",
        f'<p class="summary">{_e(report.summary())}.</p>',
        f'<p class="note">Every run counts: a series (kernel, pass, provider, workload, GPU, metric) is followed '
        f"through all its runs in time order; whole-run host effects are estimated and taken out first; a change "
        f"needs {s.min_segment} runs on each side, significance {s.alpha:g} and at least {s.min_effect:.0%}. "
        f"Magnitude is after / before with its 95 % interval. "
        f'<a href="{JSON_NAME}">regressions.json</a> · <a href="index.html">catalogue report</a></p>',
    ]
    by_cause = report.by_cause()
    out.append(
        '<nav id="causes">Changes by cause: '
        + " · ".join(f'<a href="#cause-{c}">{c}: {len(by_cause[c])}</a>' for c in CAUSES)
        + "</nav>"
    )
    out.append(_groups_section(report))
    out.append(_pending_section(report))
    out.append(_host_section(report, charts_dir))
    for cause in CAUSES:
        out.append(_cause_section(cause, by_cause[cause], charts_dir, efficiency))
    if report.insufficient:
        out.append(
            f'<section id="insufficient"><h2>Insufficient data</h2><p class="note">{len(report.insufficient)} '
            f"series have fewer than {s.min_runs} runs: no verdict, which is not “no change”.</p><table>"
            "<tr><th>kernel</th><th>GPU</th><th>metric</th><th>runs</th><th>series</th></tr>"
            + "".join(
                f"<tr><td>{_e(i['kernel'])}</td><td>{_e(i['gpu'])}</td><td>{_e(i['metric'])}</td>"
                f'<td class="num">{i["runs"]}</td><td class="num">{i["series"]}</td></tr>'
                for i in report.to_dict()["insufficientSeries"]
            )
            + "</table></section>"
        )
    out.append("</body></html>")
    return "\n".join(out)


def _pending_section(report: RegressionReport) -> str:
    """Steps at a series' newest run: one run after them, not the two a change needs. Listed, never
    counted as changes; the next run confirms (a change) or drops them."""
    pending = report.pending
    out = [
        f'<section id="pending" data-pending-count="{len(pending)}"><h2>Pending: steps at the newest run</h2>',
        f'<p class="note">{len(pending)} series moved at their newest run by at least {report.settings.min_effect:.0%} '
        f"(significance {report.settings.alpha:g}); one run after is not yet a change: the next run decides.</p>",
    ]
    if pending:
        out.append(
            "<table><tr><th>kernel</th><th>pass</th><th>provider</th><th>workload</th><th>metric</th>"
            "<th>step</th><th>95 % CI</th><th>p</th><th>before</th><th>newest run</th><th>cause so far</th></tr>"
        )
        for change in pending:
            d = change.to_dict()
            out.append(
                f'<tr class="pending"><td>{_e(d["kernel"])}</td><td>{_e(d["mode"])}</td><td>{_e(d["provider"])}</td>'
                f"<td>{_e(d['caseKey'])}</td><td>{_e(d['metric'])}</td>"
                f'<td class="num {d["direction"]}">×{d["magnitude"]:.3g}</td>'
                f'<td class="num">{d["ci95"][0]:.3g}–{d["ci95"][1]:.3g}</td><td class="num">{d["pValue"]:.1g}</td>'
                f"<td>{_e(d['before']['source'])} · {_e(d['before']['observedAt'][:10])}</td>"
                f"<td>{_e(d['after']['source'])} · {_e(d['after']['observedAt'][:10])}</td><td>{_e(d['cause'])}</td></tr>"
            )
        out.append("</table>")
    out.append("</section>")
    return "\n".join(out)


def _groups_section(report: RegressionReport) -> str:
    """One entry per (boundary, cause, suspects): what changed, what changed it, and its series."""
    groups = group_changes(report.changes)
    out = [
        f'<section id="by-commit" data-group-count="{len(groups)}"><h2>What changed it</h2>',
        f'<p class="summary">{_e(check_message(groups))}.</p>',
    ]
    out += [f'<p class="note">{_e(note)}</p>' for note in report.attribution_notes]
    for i, group in enumerate(groups):
        d = group.to_dict()
        shas = ",".join(c.sha for c in group.evidence.commits)
        before, after = d["before"], d["after"]
        out.append(
            f'<details class="change-group" data-cause="{group.cause}" data-change-count="{len(group.changes)}" '
            f'data-commits="{shas}"{" open" if i < 8 else ""}><summary><b>{_e(group.cause)}</b>: '
            f"{len(group.changes)} changes ({d['slowdowns']} slower, {d['speedups']} faster) between "
            f"{_e(before['source'])} ({_e(before['observedAt'][:10])}) and {_e(after['source'])} "
            f"({_e(after['observedAt'][:10])})</summary>"
        )
        out.append(_evidence_html(group.evidence))
        if group.others:
            out.append('<p class="note">Also possible: ' + "; ".join(_evidence_text(e) for e in group.others) + "</p>")
        out.append(
            "<table><tr><th>kernel</th><th>pass</th><th>provider</th><th>workload</th><th>metric</th><th>change</th></tr>"
            + "".join(
                f"<tr><td>{_e(s['kernel'])}</td><td>{_e(s['mode'])}</td><td>{_e(s['provider'])}</td>"
                f"<td>{_e(s['caseKey'])}</td><td>{_e(s['metric'])}</td>"
                f'<td class="num {s["direction"]}">×{s["magnitude"]:.3g}</td></tr>'
                for s in d["series"]
            )
            + "</table></details>"
        )
    out.append("</section>")
    return "\n".join(out)


def _evidence_html(evidence: CauseEvidence) -> str:
    out = []
    if evidence.commits:
        out.append(
            '<ul class="suspects">'
            + "".join(
                f'<li><a href="{_e(c.url)}"><code>{_e(c.sha[:8])}</code></a> {_e(c.date[:10])} {_e(c.subject)} '
                f'<span class="note">({_e(", ".join(c.files))})</span></li>'
                for c in evidence.commits
            )
            + "</ul>"
        )
    if evidence.diffstat:
        out.append(f'<pre class="diffstat">{_e(evidence.diffstat)}</pre>')
    if evidence.toolchain:
        out.append(
            '<p class="toolchain">Toolchain: ' + ", ".join(_e(_toolchain_text(t)) for t in evidence.toolchain) + "</p>"
        )
    if evidence.note:
        out.append(f'<p class="note">{_e(evidence.note)}</p>')
    return "\n".join(out)


def _toolchain_text(step: dict[str, Any]) -> str:
    if "measured" in step:
        return str(step["measured"])
    return f"{step['package']} {step.get('before') or '—'} → {step['after']} (released {str(step['released'])[:10]})"


def _evidence_text(evidence: CauseEvidence) -> str:
    parts = [evidence.cause]
    if evidence.commits:
        parts.append(
            ", ".join(f"{c.sha[:8]} {c.subject[:60]}" for c in evidence.commits[:3])
            + (f" (+{len(evidence.commits) - 3})" if len(evidence.commits) > 3 else "")
        )
    if evidence.toolchain:
        parts.append(", ".join(_toolchain_text(t) for t in evidence.toolchain))
    return _e(": ".join(parts))


def _host_section(report: RegressionReport, charts_dir: Path) -> str:
    out = [
        '<section id="host"><h2>Host effects</h2>',
        '<p class="note">How much slower (above 1) or faster the whole source run was than its neighbours, per '
        "latency class (robust over kernel groups), and single benchmark scripts of a run that moved on their own. "
        "Taken out of every series before changes are judged.</p>",
    ]
    if _host_chart(report, charts_dir / "host-effects.svg"):
        out.append(
            f'<figure id="host-effects"><img src="{CHARTS_DIR}/host-effects.svg" alt="host effect per run and '
            'latency class"><figcaption>Run-level factor per latency class; filled markers are reported '
            "effects.</figcaption></figure>"
        )
    if report.host_effects:
        out.append(
            f"<details><summary>{len(report.host_effects)} host effects reported (table)</summary>"
            "<table><tr><th>source run</th><th>observed</th><th>GPU</th><th>scope</th><th>factor</th><th>95 % CI</th>"
            "<th>evidence</th></tr>"
        )
        for h in report.host_effects:
            scope = f"script {h.kernel}" if h.kernel else f"every kernel {h.latency_class}"
            evidence = f"{h.series} series" if h.kernel else f"{h.kernel_groups} kernel groups"
            css = "slowdown" if h.factor > 1 else "speedup"
            out.append(
                f"<tr><td>{_e(h.source)}</td><td>{_e(h.observed_at[:16])}</td><td>{_e(h.gpu)}</td><td>{_e(scope)}</td>"
                f'<td class="num {css}">×{h.factor:.2f}</td><td class="num">{h.ci95[0]:.2f}–{h.ci95[1]:.2f}</td>'
                f"<td>{_e(evidence)}</td></tr>"
            )
        out.append("</table></details>")
    else:
        out.append('<p class="note">No run stood out.</p>')
    out.append("</section>")
    return "\n".join(out)


def _host_chart(report: RegressionReport, path: Path) -> bool:
    """The run factor per latency class over time; False (and no file) when no run had enough groups."""
    reported = {(h.source, h.gpu) for h in report.host_effects if not h.kernel}
    by_class: dict[int, list] = {}
    for run, cls, log_factor, _se, groups in report.all_host_effects:
        if groups >= MIN_GROUPS:
            by_class.setdefault(cls, []).append(
                (_time(run.observed_at), math.exp(log_factor), (run.label, run.gpu) in reported)
            )
    if not by_class:
        return False
    fig, ax = plt.subplots(figsize=(9, 2.2), dpi=100)
    cmap = plt.get_cmap("viridis")
    for cls, points in sorted(by_class.items()):
        points.sort()
        color = "#888888" if cls == MEMORY_CLASS else cmap(cls / max(1, MEMORY_CLASS - 1))
        ax.plot(
            [p[0] for p in points], [p[1] for p in points], "-", color=color, lw=1, alpha=0.7, label=CLASS_LABELS[cls]
        )
        ax.scatter([p[0] for p in points if p[2]], [p[1] for p in points if p[2]], color=color, s=18, zorder=3)
    ax.axhline(1.0, color="#444", lw=0.8, ls=":")
    ax.set_yscale("log")
    factors = [p[1] for points in by_class.values() for p in points]
    ticks = [t for t in (0.5, 0.8, 1.0, 1.5, 2, 3, 5, 8) if min(factors) * 0.9 <= t <= max(factors) * 1.1]
    ax.yaxis.set_major_locator(matplotlib.ticker.FixedLocator(ticks or [1.0]))
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"×{v:g}"))
    ax.yaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.set_ylabel("run factor")
    ax.legend(fontsize=6, ncol=5, loc="upper left", frameon=False)
    ax.xaxis.set_major_formatter(mdates.DateFormatter("%Y-%m-%d"))
    fig.autofmt_xdate()
    fig.tight_layout()
    fig.savefig(path, format="svg")
    plt.close(fig)
    return True


def _efficiency_moved(change: Change, efficiency: EfficiencyReport | None) -> str:
    """ "8 % → 22 % of peak": the series' percent of peak at its levels before and after the change."""
    t, s, k = change.trend, change.split, change.key
    if efficiency is None or k.metric == PEAK_MEMORY:
        return ""
    before, after = (
        math.exp(sum(map(math.log, t.corrected[a:b])) / (b - a)) for a, b in ((s.start, s.index), (s.index, s.stop))
    )
    moved = change_efficiency(efficiency, k.kernel, k.mode, k.provider, k.workload_digest, k.gpu, before, after)
    return "" if moved is None else f"{format_pct(moved[0])} → {format_pct(moved[1])} of peak"


def _cause_section(
    cause: str, changes: list[Change], charts_dir: Path, efficiency: EfficiencyReport | None = None
) -> str:
    out = [
        f'<section class="cause" id="cause-{cause}" data-cause="{cause}" data-change-count="{len(changes)}">',
        f'<h2>{cause}: {len(changes)} changes</h2><p class="note">{_e(_CAUSE_TEXT[cause])}.</p>',
    ]
    if not changes:
        out.append("</section>")
        return "\n".join(out)
    out.append('<div class="grid">')
    for i, change in enumerate(changes[:MAX_CHARTS_PER_CAUSE]):
        name = f"{cause}-{i:03d}.svg"
        _trend_chart(change, charts_dir / name)
        d = change.to_dict()
        out.append(
            f'<figure class="trend" data-kernel="{_e(d["kernel"])}" data-metric="{_e(d["metric"])}" '
            f'data-direction="{d["direction"]}"><img src="{CHARTS_DIR}/{name}" alt="trend of {_e(d["kernel"])} '
            f'{_e(d["mode"])} {_e(d["provider"])}"><figcaption>{_caption(d)}'
            f"{_efficiency_line(_efficiency_moved(change, efficiency))}</figcaption></figure>"
        )
    out.append("</div>")
    out.append(
        "<table><tr><th>kernel</th><th>pass</th><th>provider</th><th>workload</th><th>metric</th><th>change</th>"
        "<th>95 % CI</th><th>p</th><th>efficiency</th><th>before</th><th>after</th></tr>"
    )
    for change in changes:
        d = change.to_dict()
        out.append(
            f"<tr><td>{_e(d['kernel'])}</td><td>{_e(d['mode'])}</td><td>{_e(d['provider'])}</td><td>{_e(d['caseKey'])}</td>"
            f'<td>{_e(d["metric"])}</td><td class="num {d["direction"]}">×{d["magnitude"]:.3g}</td>'
            f'<td class="num">{d["ci95"][0]:.3g}–{d["ci95"][1]:.3g}</td><td class="num">{d["pValue"]:.1g}</td>'
            f"<td>{_e(_efficiency_moved(change, efficiency))}</td>"
            f"<td>{_e(d['before']['ligerVersion'])} · {_e(d['before']['observedAt'][:10])}</td>"
            f"<td>{_e(d['after']['ligerVersion'])} · {_e(d['after']['observedAt'][:10])}</td></tr>"
        )
    out.append("</table></section>")
    return "\n".join(out)


def _efficiency_line(text: str) -> str:
    return f'<br><span class="efficiency-moved">{_e(text)}</span>' if text else ""


def _caption(d: dict[str, Any]) -> str:
    return (
        f"<b>{_e(d['kernel'])}</b> {_e(d['mode'])} · {_e(d['provider'])} · {_e(d['gpu'])}<br>{_e(d['caseKey'])} · "
        f'{_e(d["metric"])}: <span class="{d["direction"]}">{d["direction"]} ×{d["magnitude"]:.3g}</span> '
        f"(95 % CI {d['ci95'][0]:.3g}–{d['ci95'][1]:.3g}), Liger {_e(d['before']['ligerVersion'])} → "
        f"{_e(d['after']['ligerVersion'])}" + _suspect_caption(d)
    )


def _suspect_caption(d: dict[str, Any]) -> str:
    causes = d.get("causes") or []
    commits = causes[0]["commits"] if causes else []
    if not commits:
        return ""
    return (
        "<br>suspects: "
        + ", ".join(
            f'<a href="{_e(c["url"])}"><code>{_e(c["sha"][:8])}</code></a> {_e(c["subject"][:50])}' for c in commits[:2]
        )
        + (f" (+{len(commits) - 2})" if len(commits) > 2 else "")
    )


def _trend_chart(change: Change, path: Path) -> None:
    t, split = change.trend, change.split
    times = [_time(s) for s in t.observed_at]
    unit = 2**20 if t.key.metric == PEAK_MEMORY else 1e6
    fig, ax = plt.subplots(figsize=(5.2, 2.6), dpi=100)
    ax.plot(times, t.values / unit, "o", color="#bbbbbb", ms=3, label="measured")
    ax.plot(times, t.corrected / unit, "o-", color="#0969da", ms=3.5, lw=1, label="host effects out")
    # version boundaries
    for i in range(1, len(t.versions)):
        if t.versions[i] != t.versions[i - 1]:
            middle = times[i - 1] + (times[i] - times[i - 1]) / 2
            ax.axvline(middle, color="#999", lw=0.6, ls=":")
            ax.text(
                middle,
                1.0,
                t.versions[i],
                transform=ax.get_xaxis_transform(),
                fontsize=6,
                rotation=90,
                va="top",
                ha="right",
                color="#666",
            )
    # noise band around each segment's level, and the change point
    cuts = [0, *[s.index for s in t.splits], len(times)]
    band = math.exp(t.noise)
    for a, b in zip(cuts[:-1], cuts[1:], strict=True):
        level = math.exp(sum(math.log(v) for v in t.corrected[a:b]) / (b - a)) / unit
        ax.fill_between([times[a], times[b - 1]], level / band, level * band, color="#0969da", alpha=0.15, lw=0)
        ax.plot([times[a], times[b - 1]], [level, level], color="#0969da", lw=0.8, alpha=0.6)
    at = times[split.index - 1] + (times[split.index] - times[split.index - 1]) / 2
    ax.axvline(at, color="#cf222e" if change.direction == "slowdown" else "#1a7f37", lw=1.6)
    if max(t.values) / min(t.values) > 5:  # a change of more than 5x: on a linear axis the rest is flat
        ax.set_yscale("log")
    ax.set_ylabel("MiB" if t.key.metric == PEAK_MEMORY else "ms")
    ax.xaxis.set_major_formatter(mdates.DateFormatter("%y-%m"))
    ax.tick_params(labelsize=7)
    ax.legend(fontsize=6, loc="best", frameon=False)
    fig.tight_layout()
    fig.savefig(path, format="svg")
    plt.close(fig)


__all__ = ["write_regressions", "render_page"]
