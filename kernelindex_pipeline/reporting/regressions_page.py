"""The regressions page (regressions.html), its chart data (data/regressions.js) and regressions.json, from a
RegressionReport.

One minute for a reader: a summary line, the changes grouped by the commit that made them ("What changed
it", with their bisections), the pending steps, the host changes, the host effects as their own small chart
and table, then the changes by cause (`CAUSES`: the five of docs/concepts/detection.md, "Verdict and
cause"), each sorted by magnitude then confidence; every change has a trend chart of its series (observedAt on x, Liger version boundaries
marked, the noise band shaded around each segment's level, the change point drawn). Latency and peak
memory series alike. The charts are drawn in the browser (site.js, the vendored Vega-Lite) from the compact
JSON of data/regressions.js, each only when it scrolls into view; a point's tooltip names its run (date, source,
Liger version, commit, raw value). Machine-checkable: ``<section class="cause" data-cause data-change-count>``,
``<figure class="trend" data-kernel data-metric data-direction data-trend data-split>``, ``<figure
id="host-effects">``.

data/regressions.js (``KI.load({...})``): ``sources``/``versions`` are lookup tables (``sourceOrigins[i]``: the link to where source i came from, or null); ``trends[i]`` is a judged
series that has a change: ``metric``, ``t`` (observedAt), ``v`` (raw values, ns or bytes), ``c`` (host effects
taken out), ``ver``/``src`` (indexes into versions/sources), ``ref`` (the code measured, or null), ``band`` (the
noise factor) and ``segments`` ([first, last index, level]); a figure's ``data-trend`` indexes it and its
``data-split`` is the first run after the change. ``host`` lists run factors per latency class.
"""

from __future__ import annotations

import html
import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelindex_pipeline.detection import acknowledgements
from kernelindex_pipeline.detection.attribution import (
    check_message,
    group_changes,
    short_subject,
    with_bisection,
)
from kernelindex_pipeline.detection.changes import (
    CAUSES,
    PEAK_MEMORY,
    CauseEvidence,
    Change,
    RegressionReport,
    Trend,
    run_name,
)
from kernelindex_pipeline.detection.document import regressions_json
from kernelindex_pipeline.detection.host_effects import CLASS_LABELS, MIN_GROUPS

from .efficiency import EfficiencyReport, change_efficiency, format_pct
from .site_files import DATA_DIR, copy_assets, js_payload, script_tags, write_text

PAGE_NAME = "regressions.html"
JSON_NAME = "regressions.json"
DATA_NAME = "regressions.js"  # in data/; site.kernel_slugs keeps kernel data files off this name
PAGE_FORMAT = 1  # site.js reads `format`: bump when the layout of data/regressions.js changes

_CAUSE_TEXT = {
    "liger_kernel": "commits between the two runs' code touch the kernel (its op module, the modules it imports, its wrapper)",
    "benchmark_script": "commits between the two runs' code touch its benchmark script or the shared benchmark utilities",
    "environment": "the toolchain differs: measured (environment digests), or an unpinned package the series' code "
    "imports (torch and triton for everything) released between the runs, or the Modal image changed",
    "host": "without a Liger clone, most kernels of that latency class moved the same way at the same run, and stayed",
    "unknown": "nothing recorded or found that reaches the series changes there",
}


@dataclass(frozen=True)
class WrittenRegressions:
    json: Path
    page: Path
    data: Path
    rewritten: int  # of the three files, how many changed (the others were left as they were)


def write_regressions(
    report: RegressionReport,
    out_dir: str | os.PathLike[str],
    efficiency: EfficiencyReport | None = None,
    source_origins: Mapping[str, str] | None = None,
) -> WrittenRegressions:
    """DIR/regressions.json (the documented shape), DIR/regressions.html and its chart data DIR/data/regressions.js,
    with the charting library and site.js beside them (a page that opens from file://, offline); with `efficiency`,
    each latency change also says how it moved the percent of peak; with `source_origins` (a source run's label ->
    the link to where it came from), each trend point links there. A file whose content is unchanged is kept."""
    out = Path(out_dir)
    json_path, page, data = out / JSON_NAME, out / PAGE_NAME, out / DATA_DIR / DATA_NAME
    trends = _charted_trends(report)
    copy_assets(out)
    rewritten = [
        write_text(json_path, json.dumps(regressions_json(report), indent=1, ensure_ascii=False) + "\n"),
        write_text(data, js_payload(regressions_data(report, trends, source_origins))),
        write_text(page, render_page(report, efficiency, trends)),  # the page last: it is what readers open
    ]
    return WrittenRegressions(json=json_path, page=page, data=data, rewritten=sum(rewritten))


def answer_lines(json_path: Path, limit: int = 5) -> list[str]:
    """The morning's answer from a regressions.json this module wrote: slowdowns by commit, the worst first,
    each at the run after its boundary (what an import command prints once the refresh ran)."""
    try:
        saved = json.loads(json_path.read_text())
    except (OSError, ValueError):
        return []
    groups = [g for g in saved.get("groups") or () if g.get("slowdowns") and "acknowledgement" not in g]
    counts = saved.get("counts") or {}
    if not saved.get("series"):
        return [f"regressions: nothing judged yet ({saved.get('insufficient', 0)} series have too few runs)"]
    head = f"regressions: {sum(g['slowdowns'] for g in groups)} slowdowns in {len(groups)} group{'' if len(groups) == 1 else 's'}"
    if counts.get("acknowledged"):
        head += f" ({counts['acknowledged']} acknowledged changes left out)"
    lines = [head + (", the worst first:" if groups else "")]

    def worst(group: dict) -> float:
        return max(s["magnitude"] for s in group["series"] if s["direction"] == "slowdown")

    for group in sorted(groups, key=worst, reverse=True)[:limit]:
        commits = group["suspects"].get("commits") or []
        why = f"{commits[0]['sha'][:8]} {short_subject(commits[0]['subject'], 60)}" if commits else group["cause"]
        series = max((s for s in group["series"] if s["direction"] == "slowdown"), key=lambda s: s["magnitude"])
        lines.append(
            f"  ×{series['magnitude']:.2f} {series['kernel']} {series['mode']} {series['provider']} "
            f"(+{group['slowdowns'] - 1} more) at {run_name(group['after'])}: {why}"
        )
    return lines


def _charted_trends(report: RegressionReport) -> dict[int, int]:
    """id(trend) -> its index in the data's ``trends``: every trend with a change, in the page's order."""
    found: dict[int, int] = {}
    for cause in CAUSES:
        for change in report.by_cause()[cause]:
            found.setdefault(id(change.trend), len(found))
    return found


def _number(value: float) -> float | int:
    """Six significant digits (a chart's resolution); whole numbers without their ``.0``."""
    rounded = float(f"{value:.6g}")
    return int(rounded) if rounded.is_integer() else rounded


def _trend_data(t: Trend, versions: dict[str, int], sources: dict[str, int]) -> dict[str, Any]:
    cuts = [0, *[s.index for s in t.splits], len(t.observed_at)]
    segments = [
        [a, b - 1, _number(math.exp(sum(math.log(v) for v in t.corrected[a:b]) / (b - a)))]
        for a, b in zip(cuts[:-1], cuts[1:], strict=True)
    ]
    refs = t.code_refs or [None] * len(t.observed_at)
    return {
        "metric": t.key.metric,
        "t": list(t.observed_at),
        "v": [_number(float(v)) for v in t.values],
        "c": [_number(float(v)) for v in t.corrected],
        "ver": [versions.setdefault(v, len(versions)) for v in t.versions],
        "src": [sources.setdefault(s, len(sources)) for s in t.sources],
        "ref": list(refs),
        "band": _number(math.exp(t.noise)),
        "segments": segments,
    }


def regressions_data(
    report: RegressionReport, trends: dict[int, int], source_origins: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The compact JSON the page's charts are drawn from (layout in the module docstring; ``sourceOrigins``: per
    source, the link to where its runs came from, or null)."""
    versions: dict[str, int] = {}
    sources: dict[str, int] = {}
    by_id = {id(c.trend): c.trend for c in report.changes}
    drawn = [_trend_data(by_id[i], versions, sources) for i in sorted(trends, key=trends.__getitem__)]
    reported = {(h.source, h.gpu) for h in report.host_effects if not h.kernel}
    runs = sorted(
        (
            (cls, run, log_factor)
            for run, cls, log_factor, _se, groups in report.all_host_effects
            if groups >= MIN_GROUPS
        ),
        key=lambda r: (r[0], r[1].observed_at),
    )
    host = [
        {
            "class": CLASS_LABELS[cls],
            "date": run.observed_at,
            "factor": _number(math.exp(log_factor)),
            "reported": (run.label, run.gpu) in reported,
            "source": run.label,
            "gpu": run.gpu,
        }
        for cls, run, log_factor in runs
    ]
    return {
        "format": PAGE_FORMAT,
        "page": "regressions",
        "versions": list(versions),
        "sources": list(sources),
        "sourceOrigins": [(source_origins or {}).get(label) for label in sources],
        "trends": drawn,
        "host": host,
        "classes": list(dict.fromkeys(h["class"] for h in host)),  # the legend in latency order
    }


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


_STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:1300px;padding:0 1.5rem 3rem;
color:#1b1f24;line-height:1.45}h2{border-bottom:1px solid #d0d7de;padding-bottom:.2rem;margin-top:2rem}
table{border-collapse:collapse;margin:.6rem 0;font-size:.85rem}th,td{border:1px solid #d0d7de;padding:.2rem .45rem;text-align:left}
th{background:#f6f8fa}td.num{text-align:right;font-variant-numeric:tabular-nums}
.slowdown{color:#cf222e;font-weight:600}.speedup{color:#1a7f37;font-weight:600}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(400px,1fr));gap:.8rem}
figure{margin:0;border:1px solid #d0d7de;border-radius:6px;padding:.4rem;background:#fff}
figure .vega{min-height:200px}figure#host-effects .vega{min-height:150px}figcaption{font-size:.8rem;color:#57606a}
.note{color:#57606a;font-size:.9rem}.summary{font-size:1.05rem;border-left:4px solid #0969da;background:#ddf4ff;padding:.5rem .8rem}
"""


def render_page(
    report: RegressionReport, efficiency: EfficiencyReport | None = None, trends: dict[int, int] | None = None
) -> str:
    """The page; `trends` (id(trend) -> index in the chart data, `_charted_trends`) ties each figure to its data."""
    trends = _charted_trends(report) if trends is None else trends
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
        f'<a href="{JSON_NAME}">regressions.json</a> · <a href="index.html">the site</a>. Each chart is drawn when it '
        "scrolls into view; hover a point for its run.</p>",
    ]
    by_cause = report.by_cause()
    out.append(
        '<nav id="causes">Changes by cause: '
        + " · ".join(f'<a href="#cause-{c}">{c}: {len(by_cause[c])}</a>' for c in CAUSES)
        + "</nav>"
    )
    out.append(_groups_section(report))
    out.append(_pending_section(report))
    out.append(_host_changes_section(report))
    out.append(_host_section(report))
    for cause in CAUSES:
        out.append(_cause_section(cause, by_cause[cause], trends, efficiency))
    if report.insufficient:
        out.append(
            f'<section id="insufficient"><h2>Insufficient data</h2><p class="note">{len(report.insufficient)} '
            f"series have fewer than {s.min_runs} runs: no verdict, which is not “no change”.</p><table>"
            "<tr><th>kernel</th><th>GPU</th><th>metric</th><th>runs</th><th>series</th></tr>"
            + "".join(
                f"<tr><td>{_e(i['kernel'])}</td><td>{_e(i['gpu'])}</td><td>{_e(i['metric'])}</td>"
                f'<td class="num">{i["runs"]}</td><td class="num">{i["series"]}</td></tr>'
                for i in regressions_json(report)["insufficientSeries"]
            )
            + "</table></section>"
        )
    out.append(script_tags("", DATA_NAME))
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
                f"<td>{_e(run_name(d['before']))}</td><td>{_e(run_name(d['after']))}</td><td>{_e(d['cause'])}</td></tr>"
            )
        out.append("</table>")
    out.append("</section>")
    return "\n".join(out)


def _host_changes_section(report: RegressionReport) -> str:
    """Lasting moves of a run's host (`host_changes.py`): one entry each, with its factor per latency
    class and the series it moved, none of which is also a change."""
    entries = report.host_changes
    out = [
        f'<section id="host-changes" data-host-change-count="{len(entries)}"><h2>Host changes</h2>',
        f'<p class="note">{len(entries)} lasting moves of a run\'s host: nothing that reaches their series changed '
        "(code, scripts, a package they import), and the run moved. Their series are not changes.</p>",
    ]
    for entry in entries:
        d = entry.to_dict()
        factors = "; ".join(
            f"{_e(f['latencyClass'])} ×{f['factor']:.3g} ({f['ci95'][0]:.3g}–{f['ci95'][1]:.3g}, {f['series']} series)"
            for f in d["factors"]
        )
        commits = "".join(
            f' <a href="{_e(c["url"])}">{_e(c["sha"][:8])}</a> {_e(short_subject(c["subject"]))}' for c in d["commits"]
        )
        out.append(
            f'<p class="host-change">{_e(run_name(d["before"]))} → {_e(run_name(d["after"]))} '
            f'({_e(d["gpu"])}, {_e(d["direction"])}): {factors}.{commits} <span class="note">{_e(d["note"])}</span></p>'
        )
    out.append("</section>")
    return "\n".join(out)


def _acknowledgement_html(report: RegressionReport, group) -> str:
    """The group's acknowledgement, or the command that acknowledges it (copyable)."""
    marked = acknowledgements.group_acknowledgement(report, group.changes)
    if marked is not None:
        return f'<p class="acknowledged">{_e(marked.status.capitalize())}: {_e(marked.text)}</p>'
    command = f"kernelindex-pipeline acknowledge {group.id} --note '...'"
    return (
        '<p class="note">Known and expected? Mark it (add <code>--status expected</code> or <code>--status fixed '
        f'--fixed-in COMMIT</code>): <code class="acknowledge">{_e(command)}</code></p>'
    )


def _groups_section(report: RegressionReport) -> str:
    """One entry per (boundary, cause, suspects): what changed, what changed it, and its series."""
    groups = group_changes(report.changes)
    out = [
        f'<section id="by-commit" data-group-count="{len(groups)}"><h2>What changed it</h2>',
        f'<p class="summary">{_e(check_message(groups, bisections=report.bisections))}.</p>',
    ]
    out += [f'<p class="note">{_e(note)}</p>' for note in report.attribution_notes]
    for i, group in enumerate(groups):
        d = with_bisection(group.to_dict(), report.bisections)
        shas = ",".join(c.sha for c in group.evidence.commits)
        before, after = d["before"], d["after"]
        marked = acknowledgements.group_acknowledgement(report, group.changes)
        out.append(
            f'<details class="change-group" data-group-id="{_e(group.id)}" '
            f'data-acknowledged="{_e(marked.status if marked else "")}" '
            f'data-cause="{group.cause}" data-change-count="{len(group.changes)}" '
            f'data-commits="{shas}"{" open" if i < 8 else ""}><summary><b>{_e(group.cause)}</b>: '
            f"{len(group.changes)} changes ({d['slowdowns']} slower, {d['speedups']} faster) between "
            f"{_e(run_name(before))} and {_e(run_name(after))}</summary>"
        )
        out.append(_bisection_html(d["id"], d["bisection"]))
        out.append(_evidence_html(group.evidence))
        out.append(_acknowledgement_html(report, group))
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


def _bisection_html(group_id: str, bisection: dict[str, Any] | None) -> str:
    """The group's id (what a bisection is launched with) and, once one ran, its verdict, the commits it
    tried with their values, and a link to the confirmed commit."""
    if not bisection:
        return f'<p class="note bisection-none">Group <code>{_e(group_id)}</code>: not bisected (kernelindex-pipeline bisect --group {_e(group_id)}, or bisection_job).</p>'
    culprit = bisection.get("culprit")
    link = (
        f' <a class="culprit" href="{_e(bisection.get("culpritUrl") or "")}"><code>{_e(str(culprit)[:8])}</code></a>'
        if culprit
        else ""
    )
    rows = "".join(_bisection_step_row(step) for step in bisection.get("steps") or [])
    return (
        f'<div class="bisection" data-verdict="{_e(bisection.get("verdict"))}" data-culprit="{_e(culprit or "")}">'
        f"<p>Group <code>{_e(group_id)}</code>, bisected: <b>{_e(bisection.get('verdict'))}</b>{link} "
        f"({_e(bisection.get('measurements'))} of at most {_e(bisection.get('maxMeasurements'))} measurements, "
        f"{_e(bisection.get('gpuSeconds'))} GPU-s): {_e(bisection.get('reason'))}</p>"
        "<table><tr><th>step</th><th>commit</th><th>role</th><th>level</th><th>value</th><th>95 % interval</th>"
        f"<th>note</th></tr>{rows}</table></div>"
    )


def _bisection_step_row(step: dict[str, Any]) -> str:
    value, interval = step.get("value"), step.get("interval")
    shown = "" if value is None else f"{value / 1e3:,.1f} µs"
    band = "" if not interval else f"{interval[0] / 1e3:,.1f} – {interval[1] / 1e3:,.1f}"
    return (
        f'<tr class="{_e(step.get("outcome"))}"><td class="num">{_e(step.get("step"))}</td>'
        f"<td><code>{_e(str(step.get('commit'))[:8])}</code></td><td>{_e(step.get('role'))}</td>"
        f'<td>{_e(step.get("outcome"))}</td><td class="num">{shown}</td><td class="num">{band}</td>'
        f"<td>{_e(step.get('reason') or '')}</td></tr>"
    )


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
            ", ".join(f"{c.sha[:8]} {short_subject(c.subject, 60)}" for c in evidence.commits[:3])
            + (f" (+{len(evidence.commits) - 3})" if len(evidence.commits) > 3 else "")
        )
    if evidence.toolchain:
        parts.append(", ".join(_toolchain_text(t) for t in evidence.toolchain))
    return _e(": ".join(parts))


def _host_section(report: RegressionReport) -> str:
    out = [
        '<section id="host"><h2>Host effects</h2>',
        '<p class="note">How much slower (above 1) or faster the whole source run was than its neighbours, per '
        "latency class (robust over kernel groups), and single benchmark scripts of a run that moved on their own. "
        "Taken out of every series before changes are judged.</p>",
    ]
    if any(groups >= MIN_GROUPS for *_, groups in report.all_host_effects):  # the runs data/regressions.js lists
        out.append(
            '<figure id="host-effects"><div class="vega" role="img" aria-label="host effect per run and latency '
            'class"></div><figcaption>Run-level factor per latency class; filled markers are reported '
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
    cause: str, changes: list[Change], trends: dict[int, int], efficiency: EfficiencyReport | None = None
) -> str:
    out = [
        f'<section class="cause" id="cause-{cause}" data-cause="{cause}" data-change-count="{len(changes)}">',
        f'<h2>{cause}: {len(changes)} changes</h2><p class="note">{_e(_CAUSE_TEXT[cause])}.</p>',
    ]
    if not changes:
        out.append("</section>")
        return "\n".join(out)
    out.append('<div class="grid">')
    for change in changes:  # every change its chart, drawn by site.js when it scrolls into view
        d = change.to_dict()
        out.append(
            f'<figure class="trend" data-kernel="{_e(d["kernel"])}" data-metric="{_e(d["metric"])}" '
            f'data-direction="{d["direction"]}" data-trend="{trends[id(change.trend)]}" '
            f'data-split="{change.split.index}"><div class="vega" role="img" aria-label="trend of {_e(d["kernel"])} '
            f'{_e(d["mode"])} {_e(d["provider"])}"></div><figcaption>{_caption(d)}'
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
            f"<td>{_e(run_name(d['before']))}</td><td>{_e(run_name(d['after']))}</td></tr>"
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
            f'<a href="{_e(c["url"])}"><code>{_e(c["sha"][:8])}</code></a> {_e(short_subject(c["subject"], 50))}'
            for c in commits[:2]
        )
        + (f" (+{len(commits) - 2})" if len(commits) > 2 else "")
    )


__all__ = ["write_regressions", "render_page"]
