"""The catalogue as one static, interactive site, built from data.

Layout of DIR (readable from ``file://`` and offline: no server, no network, no ``fetch()`` of local files):

- ``index.html``: the landing page: what changed since the previous build in DIR, counts, the coverage pivot
  (kernel x GPU x Liger version, each cell linking into the kernel's page with those filters set), the
  efficiency ranking (``efficiency_section``), the regressions summary and a first chart (runs per
  Liger version and GPU) drawn from ``data/summary.js``;
- ``kernels/<kernel>.html``: one page per kernel; its charts are drawn in the browser by ``site.js`` from
  ``data/<kernel>.js`` (that kernel's compact JSON, loaded by a ``<script>`` tag: browsers refuse
  ``fetch()`` under file://), so a page loads only its own kernel's data, and a chart is drawn only when it
  scrolls into view;
- ``regressions.html`` + ``regressions.json`` (``regressions_page.write_regressions``: detection and
  attribution are theirs, the site only links them), ``efficiency.jsonl`` (``efficiency.write_sidecar``);
- ``vendor/``: Vega, Vega-Lite and vega-embed (package data, see ``data/site/vendor/README.md``);
- ``site-state.json``: each kernel's content fingerprint (sha256 of its data file), read back by the next
  build to say what changed and to rewrite only the kernels whose data changed. Every other file is written only
  where its content changed (``site_files.write_text``), so a rebuild after new runs of one kernel rewrites that
  kernel's page, the landing page and, where detection's result changed, the regressions page; ``SiteResult``
  lists the pages rewritten and kept.

Kernel data (``KI.load({...})`` in ``data/<kernel>.js``), columns by index to stay compact:
``gpus``/``providers``/``modes``/``versions``/``workloads`` are lookup tables; ``sweeps`` lists, per GPU, the
workloads on one varying axis with their x (``series.find_sweeps``); ``series`` rows are
``[gpu, provider, mode, metric, workload, environment]`` and ``points[i]`` the series' points
``[version, median, p20, p80, observedAt, run digest, source, commit, % of peak, runs folded, caveat,
efficiency caveat, origin]``: what a chart rings the point for and says in its tooltip (null: nothing), the pass's
(``efficiency.pass_caveats``: a forward that computes gradients) on every chart, the efficiency's
(``efficiency.efficiency_caveats``: above a ceiling, L2-resident) on the percent-of-peak chart; ``origin``: the
index in ``origins`` (the links to where runs came from, ``catalogue/origins.py``: the CI run's file on
gh-pages, the release's sdist, the sweep's run in the Dagster UI) of the point's run, null where not known.
``changes`` are detection's changes of the page's series (the regressions page's, `_series_changes`):
``[series, before observedAt, after observedAt, B/A, ci95 low, ci95 high, change id]``, so the compare view
gives, for two runs of a series, the changes detected between them with the regressions page's numbers.
"""

from __future__ import annotations

import hashlib
import html
import json
import os
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kernelindex_pipeline.detection import acknowledgements
from kernelindex_pipeline.detection.attribution import short_subject
from kernelindex_pipeline.detection.changes import RegressionReport, run_name
from kernelindex_pipeline.detection.detect import detect_regressions
from kernelindex_pipeline.imports.coverage import CoverageCell
from kernelindex_pipeline.liger import identity
from kernelindex_pipeline.records.names import kebab

from .efficiency import (
    FLAG_LOW,
    SIDECAR_NAME,
    TERA,
    EfficiencyReport,
    TableRow,
    derive_efficiency,
    efficiency_caveats,
    format_pct,
    pass_caveats,
    rank_by_efficiency,
    write_sidecar,
)
from .regressions_page import DATA_NAME as REGRESSIONS_DATA
from .regressions_page import PAGE_NAME as REGRESSIONS_PAGE
from .regressions_page import write_regressions
from .series import MODE_ORDER, PEAK_MEMORY_METRIC, RecordIndex, Series, build_series, find_sweeps, parse_version
from .site_files import copy_assets, js_payload, script_tags, write_text

STATE_NAME = "site-state.json"
SITE_FORMAT = 3  # bump when the data layout changes: every kernel is then rewritten
METRICS = ("latency", PEAK_MEMORY_METRIC)
SUMMARY_DATA = "summary.js"
# data/ files that are not a kernel's: a kernel whose slug would take one of these names gets a hashed slug
RESERVED_DATA = {SUMMARY_DATA.removesuffix(".js"), REGRESSIONS_DATA.removesuffix(".js")}


@dataclass
class SiteResult:
    path: Path  # DIR/index.html
    counts: dict[str, int]
    changed: dict[str, str] = field(default_factory=dict)  # kernel -> "new" | "changed" | "removed"
    rewritten: list[str] = field(default_factory=list)  # kernels whose data or page was (re)written
    regressions: RegressionReport | None = None
    # pages (index.html, kernels/<slug>.html, regressions.html, each with its data) written by this build, and
    # those whose content had not changed, left as they were
    pages_rewritten: list[str] = field(default_factory=list)
    pages_kept: list[str] = field(default_factory=list)


def kernel_slugs(kernels: Iterable[str]) -> dict[str, str]:
    """A file name per kernel: its kebab form, plus a short hash of the name where two kernels share one
    (``dyt_beta=True`` and ``dyt-beta-true`` would), so no page overwrites another."""
    kernels = sorted(set(kernels))
    plain = Counter(kebab(k) or "unnamed" for k in kernels)
    return {
        k: (kebab(k) or "unnamed")
        if plain[kebab(k) or "unnamed"] == 1 and (kebab(k) or "unnamed") not in RESERVED_DATA
        else f"{kebab(k) or 'unnamed'}-{hashlib.sha256(k.encode()).hexdigest()[:8]}"
        for k in kernels
    }


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


# --------------------------------------------------------------------------- data


def _run_sources(regressions: RegressionReport) -> dict[tuple, tuple[str, str | None]]:
    """(kernel, mode, provider, workload, gpu, metric, observedAt) -> (source run label, code ref), from the
    judged series of detection (each run's source and the code it measured, where the adapter knows it)."""
    found: dict[tuple, tuple[str, str | None]] = {}
    for t in regressions.trends:
        k = t.key
        refs = t.code_refs or [None] * len(t.observed_at)
        for when, source, ref in zip(t.observed_at, t.sources, refs, strict=False):
            found[(k.kernel, k.mode, k.provider, k.workload_digest, k.gpu, k.metric, when)] = (source, ref)
    return found


def _series_changes(regressions: RegressionReport) -> dict[tuple, list[list[Any]]]:
    """(kernel, mode, provider, workload, gpu, metric) -> detection's changes of that series, as the kernel data's
    ``changes`` rows less the series index: the runs either side of the boundary, the ratio and its 95 %
    interval rounded as regressions.json writes them (`Change.to_dict`: the regressions page's numbers)."""
    found: dict[tuple, list[list[Any]]] = defaultdict(list)
    for change in regressions.changes:
        k, entry = change.key, change.to_dict()
        found[(k.kernel, k.mode, k.provider, k.workload_digest, k.gpu, k.metric)].append(
            [
                entry["before"]["observedAt"],
                entry["after"]["observedAt"],
                entry["magnitude"],
                *entry["ci95"],
                acknowledgements.change_id(change),
            ]
        )
    return found


def _source_origins(index: RecordIndex, origins: Mapping[str, str]) -> dict[str, str]:
    """Detection's label of a catalogue's source run (``"<gpu> <observedAt>"``: the runs of one GPU at one time,
    `detection.regressions`) -> the link to where its first run came from, for the regressions page's points."""
    found: dict[str, str] = {}
    for row in index.runs:
        url = origins.get(row.digest)
        ident = identity.parse_external_id(row.external_id or "") if url else None
        if ident is not None and ident.gpu_slug:
            found.setdefault(f"{ident.gpu_slug} {row.observed_at}", url)
    return found


def _version_order(versions: Iterable[str]) -> list[str]:
    return sorted(set(versions), key=lambda v: (parse_version(v) is None, parse_version(v) or v, v))


def kernel_data(
    kernel: str,
    series: list[Series],
    efficiency: EfficiencyReport,
    sources: dict[tuple, tuple[str, str | None]],
    index: RecordIndex,
    origins: Mapping[str, str] | None = None,
    changes: Mapping[tuple, list[list[Any]]] | None = None,
) -> dict[str, Any]:
    """The compact JSON of one kernel's page (layout in the module docstring). A point's source is the source
    run detection read it from (a records file, a catalogue chain) where detection judged its series, else the
    run's own ``spec.sourceNative.source``."""
    gpus: dict[str, str] = {}
    for s in series:
        gpus.setdefault(s.gpu_slug, s.gpu)
    providers = sorted({(s.provider, s.role) for s in series}, key=lambda pr: (pr[1] != "liger", pr[0]))
    modes = sorted({s.mode for s in series}, key=lambda m: (MODE_ORDER.index(m) if m in MODE_ORDER else 9, m))
    versions = _version_order(p.version for s in series for p in s.points)
    workloads: dict[tuple, int] = {}
    for s in series:
        workloads.setdefault(s.workload.key, len(workloads))
    by_key = {s.workload.key: s.workload for s in series}
    sweeps = _sweeps(series, list(gpus), workloads)
    environments = sorted({s.key.environment_digest for s in series})
    p_index = {p: i for i, p in enumerate(providers)}
    rows, points = [], []
    links: dict[str, int] = {}  # origin URL -> its index in the data's `origins`
    detected: list[list[Any]] = []
    for s in series:
        for change in (changes or {}).get(
            (s.kernel, s.mode, s.provider, s.key.workload_digest, s.gpu_slug, s.metric), ()
        ):
            detected.append([len(rows), *change])
        rows.append(
            [
                list(gpus).index(s.gpu_slug),
                p_index[(s.provider, s.role)],
                modes.index(s.mode),
                METRICS.index(s.metric),
                workloads[s.workload.key],
                environments.index(s.key.environment_digest),
            ]
        )
        drawn = _points(s, {v: i for i, v in enumerate(versions)}, efficiency, sources, index)
        for point, p in zip(drawn, s.points, strict=True):
            url = (origins or {}).get(p.run_digest)
            point.append(None if url is None else links.setdefault(url, len(links)))
        points.append(drawn)
    return {
        "format": SITE_FORMAT,
        "origins": list(links),
        "changes": detected,
        "kernel": kernel,
        "title": series[0].kernel_title,
        "gpus": [{"slug": g, "name": n} for g, n in gpus.items()],
        "providers": [{"name": p, "role": r} for p, r in providers],
        "modes": modes,
        "metrics": list(METRICS),
        "versions": versions,
        "workloads": [
            {"case": by_key[k].case_key, "digest": by_key[k].digest, "category": by_key[k].category} for k in workloads
        ],
        "environments": environments,
        "sweeps": sweeps,
        "series": rows,
        "points": points,
    }


def _sweeps(series: list[Series], gpus: list[str], workloads: dict[tuple, int]) -> list[dict[str, Any]]:
    """The size sweeps of each GPU's workloads (an x axis to draw a series along), as the page's JSON."""
    sweeps = []
    for gi, slug in enumerate(gpus):
        on_gpu = {s.workload.key: s.workload for s in series if s.gpu_slug == slug}
        for sweep in find_sweeps(on_gpu.values()):
            sweeps.append(
                {
                    "gpu": gi,
                    "axis": sweep.x_axis or "workload",
                    "label": sweep.label(),
                    "categories": sweep.categories,
                    "members": [[workloads[w.key], sweep.x_of(w)] for w in sweep.workloads],
                }
            )
    return sweeps


def _points(
    s: Series,
    v_index: dict[str, int],
    efficiency: EfficiencyReport,
    sources: dict[tuple, tuple[str, str | None]],
    index: RecordIndex,
) -> list[list[Any]]:
    """One series' points as the page's JSON rows (layout in the module docstring)."""
    drawn = []
    caveat = "; ".join(pass_caveats(s.kernel, s.mode)) or None  # the same for every point of the series
    for p in s.points:
        source, ref = sources.get(
            (s.kernel, s.mode, s.provider, s.key.workload_digest, s.gpu_slug, s.metric, p.observed_at), (None, None)
        )
        if source is None:
            run = index.run(p.run_digest)
            source = run.source if run is not None else None
        facts = efficiency.runs.get(p.run_digest) if s.metric == "latency" else None
        pct = facts.pct_of_peak if facts is not None else None
        drawn.append(
            [
                v_index[p.version],
                p.median,
                p.p20,
                p.p80,
                p.observed_at,
                p.run_digest,
                source,
                ref,
                None if pct is None else round(pct, 3),
                p.runs_for_version,
                caveat,
                "; ".join(efficiency_caveats(facts)) or None,
            ]
        )
    return drawn


def _pivot(series: list[Series]) -> dict[str, dict[tuple[str, str], int]]:
    """kernel -> (gpu slug, version) -> runs drawn (one per series and version)."""
    cells: dict[str, dict[tuple[str, str], int]] = defaultdict(Counter)
    for s in series:
        for p in s.points:
            cells[s.kernel][(s.gpu_slug, p.version)] += 1
    return cells


# --------------------------------------------------------------------------- build


def _read_state(out_dir: Path) -> dict[str, Any]:
    """The previous build's fingerprints; an unreadable or foreign file counts as no previous build."""
    try:
        state = json.loads((out_dir / STATE_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):  # RecursionError: nested deeper than the decoder goes
        return {}
    return state if isinstance(state, dict) and state.get("format") == SITE_FORMAT else {}


@dataclass
class _Landing:
    """What the landing page says besides its charts' data."""

    title: str
    state: dict[str, Any]  # kernel -> its page's fingerprint, slug and counts
    changed: dict[str, str]  # kernel -> new | changed | removed
    counts: dict[str, int]
    regressions: RegressionReport
    previous_built: str | None


def _write_landing(
    out_dir: Path,
    landing: _Landing,
    every_series: list[Series],
    latency: list[Series],
    efficiency: EfficiencyReport,
    coverage: Iterable[CoverageCell] | None,
    pages: _Pages,
) -> None:
    """The landing page and its summary data, written last: it is what readers open."""
    pivot = _pivot(every_series)
    html = landing_page(
        landing.title,
        landing.state,
        landing.changed,
        pivot,
        landing.counts,
        landing.regressions,
        coverage=None if coverage is None else list(coverage),
        efficiency_html=efficiency_section(efficiency, rank_by_efficiency(latency, efficiency)),
        previous_built=landing.previous_built,
    )
    summary = write_text(out_dir / "data" / SUMMARY_DATA, js_payload(_summary_data(landing.state, pivot)))
    pages.add("index.html", write_text(out_dir / "index.html", html) or summary)


def build_site(
    manifests: Iterable[dict[str, Any]],
    out_dir: str | os.PathLike[str],
    *,
    title: str = "Liger-Kernel benchmarks in the KernelIndex catalogue",
    coverage: Iterable[CoverageCell] | None = None,
    regressions: RegressionReport | None = None,
    origins: Mapping[str, str] | None = None,
    efficiency: EfficiencyReport | None = None,
) -> SiteResult:
    """Write the site into `out_dir` (layout in the module docstring). Incremental: a kernel whose data has the
    previous build's fingerprint keeps its files untouched, and every other file is written only where its
    content changed; the result lists the pages rewritten and kept, the landing page says which kernels are new,
    changed or gone. `regressions`: the detection result to show (the asset's, or the CLI's with its settings);
    without it detection runs here with the default settings. `origins`: run digest -> the link to where it
    came from (`catalogue.origins.run_origins`), on each point. `efficiency`: the figures to show (the
    efficiency_table asset's); without them they are derived here with the default threshold."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if regressions is None:  # detection reads the manifests as the index takes them: one pass, none kept whole
        index = RecordIndex()
        regressions = detect_regressions(index.read(manifests))
    else:
        index = RecordIndex(manifests)
    latency, memory = build_series(index), build_series(index, PEAK_MEMORY_METRIC)
    if efficiency is None:
        efficiency = derive_efficiency(index)
    by_kernel: dict[str, list[Series]] = defaultdict(list)
    for s in [*latency, *memory]:
        by_kernel[s.kernel].append(s)
    before = _read_state(out_dir)
    previous = before.get("kernels", {})
    sources = _run_sources(regressions)
    changes = _series_changes(regressions)
    pages = _Pages()
    state = _write_kernels(
        out_dir,
        by_kernel,
        previous,
        title,
        pages,
        lambda kernel: kernel_data(kernel, by_kernel[kernel], efficiency, sources, index, origins, changes),
    )
    _remove_gone(out_dir, previous, state)
    changed = {k: "new" for k in state if k not in previous}
    changed |= {
        k: "changed" for k in state if k in previous and previous[k].get("fingerprint") != state[k]["fingerprint"]
    }
    changed |= {k: "removed" for k in previous if k not in state}
    copy_assets(out_dir)
    written = write_regressions(
        regressions, out_dir, efficiency=efficiency, source_origins=_source_origins(index, origins or {})
    )
    pages.add(REGRESSIONS_PAGE, bool(written.rewritten))
    write_sidecar(efficiency, out_dir)
    counts = {
        "kernels": len(state),
        "series": len(latency) + len(memory),
        "runs": latency.runs,
        "points": sum(v["points"] for v in state.values()),
        "slowdowns": len(regressions.slowdowns),
        "speedups": len(regressions.speedups),
        "pending": len(regressions.pending),
        "rewritten": sum(1 for k in state if f"kernels/{state[k]['slug']}.html" in pages.rewritten),
    }
    landing = _Landing(title, state, changed, counts, regressions, before.get("built"))
    _write_landing(out_dir, landing, [*latency, *memory], latency, efficiency, coverage, pages)
    counts |= {"pagesRewritten": len(pages.rewritten), "pagesKept": len(pages.kept)}
    built = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    write_text(
        out_dir / STATE_NAME, json.dumps({"format": SITE_FORMAT, "built": built, "kernels": state}, indent=1) + "\n"
    )
    rewritten = [k for k in sorted(state) if f"kernels/{state[k]['slug']}.html" in pages.rewritten]
    return SiteResult(
        path=out_dir / "index.html",
        counts=counts,
        changed=changed,
        rewritten=rewritten,
        regressions=regressions,
        pages_rewritten=pages.rewritten,
        pages_kept=pages.kept,
    )


@dataclass
class _Pages:
    """Which pages (an HTML page with its data) a build rewrote and which it left as they were."""

    rewritten: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)

    def add(self, page: str, written: bool) -> None:
        (self.rewritten if written else self.kept).append(page)


def _write_kernels(
    out_dir: Path,
    by_kernel: dict[str, list[Series]],
    previous: dict[str, Any],
    title: str,
    pages: _Pages,
    data_of: Callable[[str], dict[str, Any]],
) -> dict[str, Any]:
    """Each kernel's data and page; a kernel whose data has the previous build's fingerprint (and whose files are
    there) is not touched. Returns the new state's kernels."""
    state: dict[str, Any] = {}
    slugs = kernel_slugs(by_kernel)
    for kernel in sorted(by_kernel):
        payload = js_payload(data_of(kernel))
        fingerprint = "sha256:" + hashlib.sha256(payload.encode()).hexdigest()
        s = by_kernel[kernel]
        slug = slugs[kernel]
        state[kernel] = {
            "fingerprint": fingerprint,
            "slug": slug,
            "title": s[0].kernel_title,
            "series": len(s),
            "points": sum(len(x.points) for x in s),
            "versions": _version_order(p.version for x in s for p in x.points),
            "gpus": sorted({x.gpu_slug for x in s}),
        }
        data_file, page = out_dir / "data" / f"{slug}.js", out_dir / "kernels" / f"{slug}.html"
        unchanged = previous.get(kernel, {}).get("fingerprint") == fingerprint and previous[kernel].get("slug") == slug
        if unchanged and data_file.exists() and page.exists():
            pages.add(f"kernels/{slug}.html", False)
            continue
        data_written = write_text(data_file, payload)
        page_written = write_text(page, kernel_page(kernel, slug, s[0].kernel_title, title))
        pages.add(f"kernels/{slug}.html", data_written or page_written)
    return state


def _remove_gone(out_dir: Path, previous: dict[str, Any], state: dict[str, Any]) -> None:
    """The files of kernels the catalogue no longer has (unless a kernel now in it uses the same slug)."""
    kept = {f["slug"] for f in state.values()}
    for gone in set(previous) - set(state):
        slug = previous[gone].get("slug")
        if isinstance(slug, str) and slug and slug not in kept and "/" not in slug and not slug.startswith("."):
            (out_dir / "data" / f"{slug}.js").unlink(missing_ok=True)
            (out_dir / "kernels" / f"{slug}.html").unlink(missing_ok=True)


def _summary_data(state: dict[str, Any], pivot: dict[str, dict[tuple[str, str], int]]) -> dict[str, Any]:
    """The landing page's chart: points (one run per series and version) per GPU and Liger version."""
    totals: Counter = Counter()
    for cells in pivot.values():
        totals.update(cells)
    return {
        "format": SITE_FORMAT,
        "kernels": len(state),
        "cells": [{"gpu": g, "version": v, "runs": n} for (g, v), n in sorted(totals.items())],
        "versions": _version_order(v for _, v in totals),
    }


# --------------------------------------------------------------------------- pages


def _head(title: str, root: str) -> str:
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<title>{_e(title)}</title><link rel="stylesheet" href="{root}site.css"></head>'
    )


def kernel_page(kernel: str, slug: str, kernel_title: str, site_title: str) -> str:
    """The page of one kernel: filters, the chart grid and the compare view; site.js fills them from the data."""
    return "\n".join(
        [
            _head(f"{kernel_title} · {site_title}", "../"),
            f'<body class="kernel-page" data-kernel="{_e(kernel)}">',
            f'<nav class="crumbs"><a href="../index.html">{_e(site_title)}</a> · <a href="../{REGRESSIONS_PAGE}">regressions</a></nav>',
            f"<h1>{_e(kernel_title)} <small>({_e(kernel)})</small></h1>",
            '<p class="note" id="kernel-note">Loading this kernel\'s data…</p>',
            '<form id="filters" class="filters" onsubmit="return false">'
            + "".join(
                f'<label>{label} <select id="f-{key}" data-filter="{key}"></select></label>'
                for key, label in (
                    ("gpu", "GPU"),
                    ("provider", "provider"),
                    ("mode", "pass"),
                    ("version", "Liger version"),
                    ("workload", "workload"),
                )
            )
            + "</form>",
            '<section id="compare"><h2>Compare</h2><p class="note">One series (pass, provider, metric) at two Liger '
            "versions on one GPU, at two runs (commits) on one GPU, or on two GPUs at one version: the values side by "
            "side and B / A per workload.</p>"
            '<form id="compare-form" class="filters" onsubmit="return false">'
            + "".join(
                f'<label>{label} <select id="c-{key}"></select></label>'
                for key, label in (
                    ("by", "compare"),
                    ("mode", "pass"),
                    ("provider", "provider"),
                    ("metric", "metric"),
                    ("fixed", "on"),
                    ("a", "A"),
                    ("b", "B"),
                )
            )
            + '</form><div class="compare-charts"><div id="compare-values" class="vega"></div>'
            '<div id="compare-ratio" class="vega"></div></div><table id="compare-table"></table></section>',
            '<section id="charts"><h2>Charts</h2><div id="chart-grid"></div></section>',
            script_tags("../", f"{slug}.js"),
            "</body></html>",
        ]
    )


def _changed_section(changed: dict[str, str], state: dict[str, Any], previous_built: str | None) -> str:
    if previous_built is None:
        return (
            '<section id="changed"><h2>Data updated</h2><p class="note">First build in this folder: every kernel '
            "is new.</p></section>"
        )
    if not changed:
        return (
            f'<section id="changed"><h2>Data updated</h2><p class="ok">Nothing changed since the previous build '
            f"({_e(previous_built)}).</p></section>"
        )
    items = []
    for kernel, what in sorted(changed.items(), key=lambda kv: (kv[1], kv[0])):
        facts = state.get(kernel)
        link = f'<a href="kernels/{_e(facts["slug"])}.html">{_e(facts["title"])}</a>' if facts else _e(kernel)
        items.append(
            f'<li class="changed-kernel" data-kernel="{_e(kernel)}" data-change="{what}">{link} '
            f'<span class="note">({_e(kernel)}: {what})</span></li>'
        )
    return (
        f'<section id="changed"><h2>Data updated</h2><p class="note">Since the previous build ({_e(previous_built)}): '
        f"{len(changed)} kernels.</p><ul>{''.join(items)}</ul></section>"
    )


def coverage_pivot(
    state: dict[str, Any], pivot: dict[str, dict[tuple[str, str], int]], coverage: list[CoverageCell] | None
) -> str:
    """Kernel x GPU x Liger version: runs drawn per cell, each linking into the kernel's page with that GPU and
    version selected; with import coverage, a cell whose rows did not all become runs is marked and says why."""
    gpus = sorted({g for cells in pivot.values() for g, _ in cells})
    versions = {g: _version_order(v for cells in pivot.values() for gg, v in cells if gg == g) for g in gpus}
    lost: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for c in coverage or []:
        if c.rows > c.runs:  # import reports name the GPU as the CSV does; the pivot keys on its slug
            lost[(c.kernel, identity.gpu_slug(c.gpu), c.version)].append(
                f"{c.provider} {c.mode} {c.metric}: {c.rows - c.runs} of {c.rows} rows"
            )
    head1 = (
        '<tr><th rowspan="2">kernel</th>'
        + "".join(f'<th colspan="{len(versions[g])}" class="pivot-gpu">{_e(g)}</th>' for g in gpus)
        + "</tr>"
    )
    head2 = "<tr>" + "".join(f'<th class="pivot-version">{_e(v)}</th>' for g in gpus for v in versions[g]) + "</tr>"
    rows = []
    for kernel in sorted(pivot):
        facts = state[kernel]
        cells = []
        for g in gpus:
            for v in versions[g]:
                n = pivot[kernel].get((g, v), 0)
                why = lost.get((kernel, g, v))
                css = "pivot-cell" + (" incomplete" if why else "") + ("" if n else " empty")
                text = (
                    f'<a href="kernels/{_e(facts["slug"])}.html#gpu={_e(g)}&amp;version={_e(v)}">{n}</a>' if n else ""
                )
                title = f' title="{_e("; ".join(why))}"' if why else ""
                cells.append(
                    f'<td class="{css}" data-gpu="{_e(g)}" data-version="{_e(v)}" data-runs="{n}"{title}>{text}</td>'
                )
        rows.append(
            f'<tr class="pivot-row" data-kernel="{_e(kernel)}"><th><a href="kernels/{_e(facts["slug"])}.html">'
            f"{_e(facts['title'])}</a></th>{''.join(cells)}</tr>"
        )
    note = (
        "Runs drawn per kernel, GPU and Liger version (one per series and version); a cell links to the kernel's "
        "page with that GPU and version selected."
    )
    if coverage is not None:
        note += " Yellow: rows of that cell did not all become runs (hover for why)."
    return (
        f'<section id="coverage-pivot"><h2>Coverage</h2><p class="note">{note}</p>'
        f'<div class="scroll"><table id="pivot">{head1}{head2}{"".join(rows)}</table></div></section>'
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


HEADLINE_WORST = 3  # slowdowns named per GPU in the landing page's headline: the worst of each of that many groups


def _worst_of_each_group(slow: list[Any]) -> list[Any]:
    """The worst slowdown of each boundary and leading suspect (a commit that slowed twelve cases is one
    line, so the next culprit is on the first screen too), worst first."""
    seen: set[tuple] = set()
    picked = []
    for c in slow:
        lead = c.causes[0].commits[0].sha if c.causes and c.causes[0].commits else c.cause
        group = (c.trend.sources[c.split.index - 1], c.trend.sources[c.split.index], lead)
        if group not in seen:
            seen.add(group)
            picked.append(c)
    return picked


def headline(regressions: RegressionReport) -> str:
    """The landing page's first section: per GPU, its newest run and the slowdowns detection found, the
    worst first, each with the run after its boundary and its leading suspect commit (issue 30: the
    answer to "did Liger get slower, and which commit?" on the first screen)."""
    newest: dict[str, Any] = {}
    for run in regressions.sources:
        if run.gpu not in newest or run.observed_at > newest[run.gpu].observed_at:
            newest[run.gpu] = run
    if not newest:
        return '<section id="headline"><h2>Latest runs</h2><p class="caution">No runs yet.</p></section>'
    items: list[tuple[int, str, str]] = []
    for gpu in newest:
        run = newest[gpu]
        side = {"ligerVersion": ", ".join(sorted(run.versions)), "codeRef": run.code_ref, "observedAt": run.observed_at}
        on_gpu = [c for c in regressions.slowdowns if c.key.gpu == gpu]
        slow = sorted(acknowledgements.unacknowledged(regressions, on_gpu), key=lambda c: -c.magnitude)
        known = len(on_gpu) - len(slow)
        commits = {c.causes[0].commits[0].sha for c in slow if c.causes and c.causes[0].commits}
        if not regressions.trends:
            verdict = '<span class="caution">nothing judged yet (too few runs per series)</span>'
        elif not slow:
            verdict = '<span class="ok">no slowdowns</span>'
        else:  # without a Liger clone no commit is named: say so rather than "from 0 commits"
            named = f"{len(commits)} commit{'s' if len(commits) != 1 else ''}" if commits else ""
            verdict = (
                f'<span class="alert">{len(slow)} slowdown{"s" if len(slow) != 1 else ""}'
                + (f" from {named}" if named else ", no commit named")
                + "</span>"
            )
        worst = "".join(
            f'<li class="worst" data-kernel="{_e(c.key.kernel)}">{_e(c.key.kernel)} {_e(c.key.mode)} '
            f"{_e(c.key.provider)} <b>×{c.magnitude:.2f}</b> at {_e(run_name(c.side(c.split.index)))}"
            + (
                f' — <a href="{_e(c.causes[0].commits[0].url)}"><code>{_e(c.causes[0].commits[0].sha[:8])}</code></a> '
                f"{_e(short_subject(c.causes[0].commits[0].subject, 60))}"
                if c.causes and c.causes[0].commits
                else f" ({_e(c.cause)})"
            )
            + "</li>"
            for c in _worst_of_each_group(slow)[:HEADLINE_WORST]
        )
        if known:
            verdict += f' <span class="note">({known} acknowledged)</span>'
        items.append(
            (
                -len(slow),  # the GPUs with slowdowns first, the most first; then by name
                gpu,
                f'<li class="gpu-headline" data-gpu="{_e(gpu)}" data-slowdowns="{len(slow)}"><b>{_e(gpu)}</b>: '
                f"newest run {_e(run_name(side))}; {verdict}" + (f"<ol>{worst}</ol>" if worst else "") + "</li>",
            )
        )
    listed = "".join(item for _, _, item in sorted(items))
    return (
        f'<section id="headline"><h2>Latest runs</h2><ul>{listed}</ul><p class="note">Every change with '
        f'its evidence: the <a href="{REGRESSIONS_PAGE}">regressions page</a>.</p></section>'
    )


def _regressions_summary(regressions: RegressionReport) -> str:
    css = "alert" if regressions.slowdowns else "ok" if regressions.data_sufficient else "caution"
    return (
        f'<section id="regressions"><h2>Regressions</h2><p class="{css}">{_e(regressions.summary())}. '
        f"{len(regressions.slowdowns)} slowdowns, {len(regressions.speedups)} speed-ups, "
        f"{len(regressions.pending)} pending. Grouped by boundary and suspect commit on the "
        f'<a href="{REGRESSIONS_PAGE}">regressions page</a>.</p></section>'
    )


def landing_page(
    title: str,
    state: dict[str, Any],
    changed: dict[str, str],
    pivot: dict[str, dict[tuple[str, str], int]],
    counts: dict[str, int],
    regressions: RegressionReport,
    *,
    coverage: list[CoverageCell] | None,
    efficiency_html: str,
    previous_built: str | None,
) -> str:
    kernels = "".join(
        f'<li><a href="kernels/{_e(f["slug"])}.html">{_e(f["title"])}</a> <span class="note">({_e(k)} · '
        f"{_e(', '.join(f['gpus']))} · {f['series']} series)</span></li>"
        for k, f in sorted(state.items())
    )
    return "\n".join(
        [
            _head(title, ""),
            f'<body class="landing" data-kernel-count="{counts["kernels"]}" data-series-count="{counts["series"]}" '
            f'data-run-count="{counts["runs"]}">',
            f"<h1>{_e(title)}</h1>",
            f'<p class="note">{counts["runs"]} benchmark runs, {counts["series"]} series, {counts["kernels"]} kernels. '
            "Charts are drawn in your browser from each kernel's data; everything works offline. Latencies are medians "
            "of triton.testing.do_bench with the p20–p80 spread; peak memory is torch.cuda.max_memory_allocated.</p>",
            headline(regressions),
            _changed_section(changed, state, previous_built),
            '<section id="overview"><h2>Runs per Liger version</h2><div id="overview-chart" class="vega"></div></section>',
            _regressions_summary(regressions),
            coverage_pivot(state, pivot, coverage),
            efficiency_html,
            f'<nav id="kernels"><h2>Kernels</h2><ol>{kernels}</ol></nav>',
            script_tags("", SUMMARY_DATA),
            "</body></html>",
        ]
    )
