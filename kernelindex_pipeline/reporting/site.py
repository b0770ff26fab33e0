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
  lists the pages rewritten and kept. It also holds each kernel's *part* (`_derive`: what the landing and
  regressions pages need of it, and what its data depended on), from which those two pages are always made, and
  for a catalogue's build the newest publication it read: `build_catalogue_site` then reads only what the
  publications since brought and rebuilds only the kernels they touched (its docstring says when it builds
  everything instead).

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

import functools
import hashlib
import heapq
import html
import json
import logging
import os
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from json.decoder import scanstring
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Protocol

from kernelindex_pipeline.detection import acknowledgements
from kernelindex_pipeline.detection.attribution import short_subject
from kernelindex_pipeline.detection.changes import RegressionReport, run_name
from kernelindex_pipeline.detection.detect import detect_regressions
from kernelindex_pipeline.imports.coverage import CoverageCell
from kernelindex_pipeline.liger import identity
from kernelindex_pipeline.records.names import kebab
from kernelindex_pipeline.records.schema import KINDS

from .efficiency import (
    COPY_SENTINEL_PREFIX,
    DEFAULT_LOW_THRESHOLD,
    FLAG_LOW,
    MATMUL_SENTINEL_PREFIX,
    SIDECAR_KIND,
    SIDECAR_NAME,
    SIDECAR_VERSION,
    TERA,
    EfficiencyReport,
    RunEfficiency,
    TableRow,
    derive_efficiency,
    efficiency_caveats,
    format_pct,
    pass_caveats,
    place_sidecar,
    rank_by_efficiency,
    ranking_order,
    write_sidecar,
)
from .regressions_page import DATA_NAME as REGRESSIONS_DATA
from .regressions_page import PAGE_NAME as REGRESSIONS_PAGE
from .regressions_page import write_regressions
from .series import (
    MODE_ORDER,
    PEAK_MEMORY_METRIC,
    Point,
    RecordIndex,
    RunRow,
    Series,
    SeriesKey,
    Workload,
    build_series,
    find_sweeps,
    parse_version,
    run_row,
)
from .site_files import copy_assets, js_payload, script_tags, write_text

log = logging.getLogger(__name__)
STATE_NAME = "site-state.json"
SITE_FORMAT = 3  # bump when the data layout changes: every kernel is then rewritten
STATE_FORMAT = 2  # bump when site-state.json's parts change: the next catalogue build is then a full one
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
    # what this build recomputed and why (the catalogue_report asset's `recomputed`), the kernels it derived
    # afresh, and why it built every kernel where it did (None: built on the previous build)
    recomputed: str = ""
    rebuilt: list[str] = field(default_factory=list)
    full_rebuild: str | None = None


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


# --------------------------------------------------------------------------- what a build keeps of each kernel
#
# A build derives, per kernel, its data file and page (`kernel_data`) and a *part*: everything the landing page,
# the regressions page and the next incremental build need of that kernel (its runs, pivot cells, efficiency
# ranking rows and status counts, percent-of-peak scales, the links of its source runs, and what its data
# depended on). The landing and regressions pages are always made from the parts of every kernel, so a build
# that rebuilt three kernels and kept the parts of six (`build_catalogue_site`) writes the bytes a full build
# writes.


def _detection_of(regressions: RegressionReport) -> tuple[dict, dict, dict[str, str]]:
    """Detection's per-point sources, per-series changes (`_run_sources`, `_series_changes`) and, per kernel, a
    fingerprint of everything of detection's result its data can show: a kernel whose fingerprint is the
    previous build's has, from detection, the data it had."""
    sources, changes = _run_sources(regressions), _series_changes(regressions)
    lines: dict[str, list[str]] = defaultdict(list)
    for t in regressions.trends:
        k = t.key
        lines[k.kernel].append(
            json.dumps([k.mode, k.provider, k.workload_digest, k.gpu, k.metric, t.observed_at, t.sources, t.code_refs])
        )
    for key, rows in changes.items():
        lines[key[0]].append(json.dumps([list(key), rows]))
    fingerprints = {
        kernel: "sha256:" + hashlib.sha256("\n".join(sorted(found)).encode()).hexdigest()
        for kernel, found in lines.items()
    }
    return sources, changes, fingerprints


def _run_kernel(run: RunRow, known: dict[tuple, tuple[str, bool]]) -> tuple[str, bool]:
    """(the kernel its externalId names, or "", whether the run is *regular*: a string source and an externalId
    whose kernel is the one its series take, so the catalogue finds it among that kernel's runs
    (`kernel_external_id_prefix`))."""
    memo = (run.external_head, run.benchmark)
    if memo not in known:
        ident = identity.parse_external_id(run.external_id or "") if run.external_head is not None else None
        benchmark = identity.parse_benchmark(run.benchmark) if isinstance(run.benchmark, str) else None
        regular = ident is not None and (benchmark is None or benchmark[0] == ident.kernel)
        known[memo] = (ident.kernel if ident is not None else "", regular)
    kernel, regular = known[memo]
    return kernel, regular and isinstance(run.source, str)


def _status_by_kernel(efficiency: EfficiencyReport) -> dict[str, Counter]:
    """Runs by efficiency status (`EfficiencyReport.status_counts`), per kernel."""
    if isinstance(efficiency.runs, _SidecarRuns):
        return efficiency.runs.statuses
    found: dict[str, Counter] = defaultdict(Counter)
    rows = efficiency._rows  # derived: every run's group; read from a sidecar: every run's facts
    if rows is not None:
        for group, _, _ in rows.values():
            found[group.kernel][group.status] += 1
    else:
        for facts in efficiency.runs.values():
            found[facts.kernel][facts.status] += 1
    return found


def _missing_references(index: RecordIndex, series: list[Series]) -> list[str]:
    """The records a kernel's series refer to that the input does not hold (a later publication that brings
    one changes that kernel's data)."""
    wanted: set[str] = set()
    for s in series:
        k = s.key
        wanted |= {k.implementation_digest, k.workload_digest, k.protocol_digest, k.environment_digest}
        case = index.get(k.workload_digest, "WorkloadCase")
        implementation = index.get(k.implementation_digest, "ImplementationRevision")
        for digest in (
            ((case or {}).get("spec") or {}).get("operationSpecDigest"),
            (((implementation or {}).get("spec") or {}).get("operation") or {}).get("specDigest"),
        ):
            if isinstance(digest, str):
                wanted.add(digest)
    return sorted(d for d in wanted if d not in index.by_digest)


@dataclass
class _Derived:
    """What one pass over an index made: the data and page facts of each kernel with series, and the part of
    each kernel (also of a kernel whose runs made no series)."""

    payloads: dict[str, str] = field(default_factory=dict)
    facts: dict[str, dict[str, Any]] = field(default_factory=dict)
    parts: dict[str, dict[str, Any]] = field(default_factory=dict)
    regular: bool = True  # every run regular (`_run_kernel`)
    split: bool = False  # a kept series also got runs of a head read again (then the kernel is read whole)
    runs_read: int = 0


def _empty_part() -> dict[str, Any]:
    return {
        "runs": 0,
        "series": 0,
        "pivot": [],
        "ranking": [],
        "status": {},
        "scales": [],
        "labels": {},
        "environments": [],
        "missing": [],
        "implementations": [],
        "detection": None,
        "heads": {},  # externalId head -> its runs and source-run links (`_derive`)
        "cache": [],  # its series as `_series_entry` keeps them
    }


def _series_entry(s: Series, sources: Mapping[str, Any], origins: Mapping[str, str], missing: list[str]) -> dict:
    """A series as site-state.json keeps it (`_series_from` makes it again): what a later build that reads only
    some of its kernel's runs needs of it, with each point's run's source and origin."""
    w, k = s.workload, s.key
    return {
        "key": [k.kernel, k.mode, k.provider, k.implementation_digest, k.workload_digest, k.protocol_digest]
        + [k.environment_digest, k.metric, k.category],
        "title": s.kernel_title,
        "provider": [s.provider_title, s.role],
        "gpu": [s.gpu, s.gpu_slug],
        "workload": [w.digest, w.case_key, w.axes, w.dtype, [list(x) for x in w.scalars], w.category],
        "points": [
            [p.version, p.median, p.p20, p.p80, p.observed_at, p.run_digest, p.run_name, p.runs_for_version, p.unit]
            for p in s.points
        ],
        "heads": list(s.heads),
        "sources": [sources.get(p.run_digest) for p in s.points],
        "origins": [origins.get(p.run_digest) for p in s.points],
        "missing": missing,
    }


def _series_from(entry: dict, index: RecordIndex) -> Series:
    """A series `_series_entry` kept (its workload's position is the current index's, as `build_series` gives)."""
    key = SeriesKey(*entry["key"])
    digest, case_key, axes, dtype, scalars, category = entry["workload"]
    workload = Workload(
        digest=digest,
        case_key=case_key,
        axes=dict(axes),
        dtype=dtype,
        scalars=tuple(tuple(x) for x in scalars),
        category=category,
        position=index.position.get(digest, 0),
    )
    return Series(
        key=key,
        kernel=key.kernel,
        kernel_title=entry["title"],
        mode=key.mode,
        provider=key.provider,
        provider_title=entry["provider"][0],
        role=entry["provider"][1],
        gpu=entry["gpu"][0],
        gpu_slug=entry["gpu"][1],
        workload=workload,
        metric=key.metric,
        points=[Point(*p) for p in entry["points"]],
        heads=tuple(entry["heads"]),
    )


def _series_order(s: Series) -> tuple:
    """`build_series`'s order of series."""
    return (s.kernel, s.gpu, (MODE_ORDER.index(s.mode) if s.mode in MODE_ORDER else len(MODE_ORDER), s.mode), s.provider, s.case_key, s.key)  # fmt: skip


@dataclass
class _Reuse:
    """What a build keeps of a kernel from the previous one: its series none of whose runs' heads it reads
    again, and the run counts and source-run links of the heads it does not read."""

    series: list[dict[str, Any]]
    heads: dict[str, dict[str, Any]]


class _RunSources:
    """`kernel_data`'s `index.run(digest).source` of the points of kept series."""

    def __init__(self, index: RecordIndex, kept: Mapping[str, Any]):
        self.index, self.kept = index, kept

    def run(self, digest: str) -> Any:
        found = self.index.run(digest)
        if found is None and digest in self.kept:
            return SimpleNamespace(source=self.kept[digest])
        return found


def _derive(
    index: RecordIndex,
    *,
    kernels: set[str] | None,
    efficiency: EfficiencyReport | Callable[[set[str]], EfficiencyReport],
    detection: tuple[dict, dict, dict[str, str]],
    origins: Mapping[str, str] | None,
    reuse: Mapping[str, _Reuse] | None = None,
) -> _Derived:
    """The data, page facts and parts of `kernels` (every kernel where None) from `index`, which holds at least
    every run of those kernels, or, for a kernel `reuse` names, every run of the heads it does not keep.
    `efficiency`: the report, or what makes it given the run digests of the series' points."""
    sources, changes, fingerprints = detection
    reuse = reuse or {}
    made_later = callable(efficiency)
    latency, memory = build_series(index), build_series(index, PEAK_MEMORY_METRIC)
    by_kernel: dict[str, list[Series]] = defaultdict(list)
    for s in [*latency, *memory]:
        if kernels is None or s.kernel in kernels:
            by_kernel[s.kernel].append(s)
    kept_sources: dict[str, Any] = {}
    kept_origins: dict[str, str] = {}
    kept_missing: dict[SeriesKey, list[str]] = {}
    out = _Derived()
    for kernel, kept in reuse.items():
        made = {s.key for s in by_kernel[kernel]}
        for entry in kept.series:
            s = _series_from(entry, index)
            out.split |= s.key in made  # a run of another head joined a kept series: it is not the whole series
            by_kernel[kernel].append(s)
            kept_missing[s.key] = entry["missing"]
            for p, source, url in zip(s.points, entry["sources"], entry["origins"], strict=True):
                kept_sources[p.run_digest] = source
                if url is not None:
                    kept_origins[p.run_digest] = url
        by_kernel[kernel].sort(key=_series_order)
    if made_later:  # the facts of these series' points only
        efficiency = efficiency({p.run_digest for found in by_kernel.values() for x in found for p in x.points})

    def part(kernel: str) -> dict[str, Any]:
        if kernel not in out.parts:
            out.parts[kernel] = _empty_part() | {"detection": fingerprints.get(kernel)}
        return out.parts[kernel]

    known: dict[tuple, tuple[str, bool]] = {}
    heads: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)  # kernel -> head -> runs, labels
    for kernel, kept in reuse.items():
        heads[kernel] = {h: {"runs": f["runs"], "labels": dict(f["labels"])} for h, f in kept.heads.items()}
    for run in index.runs:
        kernel, regular = _run_kernel(run, known)
        if kernels is not None and kernel not in kernels:
            continue
        out.regular &= regular
        out.runs_read += 1
        found = heads[kernel].setdefault(run.external_head or "", {"runs": 0, "labels": {}})
        found["runs"] += 1
        url = (origins or {}).get(run.digest)
        if url is not None:
            ident = identity.parse_external_id(run.external_id or "")
            if ident is not None and ident.gpu_slug:
                label, candidate = f"{ident.gpu_slug} {run.observed_at}", [run.name, run.digest, url]
                if label not in found["labels"] or candidate < found["labels"][label]:
                    found["labels"][label] = candidate
    for kernel, found in heads.items():
        labels: dict[str, list[str]] = {}
        for facts in found.values():
            for label, candidate in facts["labels"].items():
                if label not in labels or candidate < labels[label]:
                    labels[label] = candidate
        part(kernel).update(
            runs=sum(f["runs"] for f in found.values()),
            labels=dict(sorted(labels.items())),
            heads=dict(sorted(found.items())),
        )
    for kernel, counts in _status_by_kernel(efficiency).items():
        if kernels is None or kernel in kernels:
            part(kernel)["status"] = dict(sorted(counts.items()))
    every_origin = {**kept_origins, **(origins or {})}
    run_sources = _RunSources(index, kept_sources)
    for kernel in sorted(by_kernel):
        s = by_kernel[kernel]
        data = kernel_data(kernel, s, efficiency, sources, run_sources, every_origin, changes)
        out.payloads[kernel] = js_payload(data)
        out.facts[kernel] = {
            "fingerprint": "sha256:" + hashlib.sha256(out.payloads[kernel].encode()).hexdigest(),
            "title": s[0].kernel_title,
            "series": len(s),
            "points": sum(len(x.points) for x in s),
            "versions": _version_order(p.version for x in s for p in x.points),
            "gpus": sorted({x.gpu_slug for x in s}),
        }
        on_latency = [x for x in s if x.metric != PEAK_MEMORY_METRIC]
        scales = []
        for x in on_latency:
            scale = _percent_scale(efficiency, x)
            if scale is not None:
                scales.append([x.mode, x.provider, x.key.workload_digest, x.gpu_slug, scale])
        missing = {x.key: kept_missing.get(x.key) or _missing_references(index, [x]) for x in s}
        point_sources = {
            p.run_digest: getattr(run_sources.run(p.run_digest), "source", None) for x in s for p in x.points
        }
        part(kernel).update(
            series=len(s),
            pivot=sorted([g, v, n] for (g, v), n in _pivot(s).get(kernel, {}).items()),
            ranking=[[row.gpu, row.facts.to_dict()] for row in rank_by_efficiency(on_latency, efficiency)],
            scales=sorted(scales, key=lambda row: row[:4]),
            environments=sorted({x.key.environment_digest for x in s}),
            missing=sorted({d for found in missing.values() for d in found}),
            implementations=sorted({identity.implementation_name(kernel, x.provider) for x in s}),
            cache=[_series_entry(x, point_sources, every_origin, missing[x.key]) for x in s],
        )
    return out


def _percent_scale(efficiency: EfficiencyReport, series: Series) -> float | None:
    """`EfficiencyReport.percent_scale` of a latency series; of a sidecar's facts, from its points' facts (the
    point with the largest run digest that has a figure), so no other line of the sidecar is parsed."""
    if not isinstance(efficiency.runs, _SidecarRuns):
        k = series.key
        return efficiency.percent_scale(series.kernel, series.mode, series.provider, k.workload_digest, series.gpu_slug)
    with_figure = [f for p in series.points if (f := efficiency.runs.get(p.run_digest)) and f.pct_of_peak is not None]
    if not with_figure:
        return None
    facts = max(with_figure, key=lambda f: f.run)
    return facts.pct_of_peak * facts.latency_ns


def _scales_report(parts: Mapping[str, dict[str, Any]], low_threshold: float) -> EfficiencyReport:
    """The percent-of-peak scales of every kernel's latency series, as the report the regressions page asks
    (`change_efficiency`)."""
    scales = {
        (kernel, mode, provider, workload, gpu): scale
        for kernel, part in sorted(parts.items())
        for mode, provider, workload, gpu, scale in part["scales"]
    }
    return EfficiencyReport(runs={}, low_threshold=low_threshold, _scales=scales)


def _source_origins_of(parts: Mapping[str, dict[str, Any]]) -> dict[str, str]:
    """Detection's label of a source run (``"<gpu> <observedAt>"``) -> the link to where its first run (by name,
    then digest: the catalogue's order) came from, for the regressions page's points."""
    best: dict[str, list[str]] = {}
    for part in parts.values():
        for label, candidate in part["labels"].items():
            if label not in best or candidate < best[label]:
                best[label] = candidate
    return {label: found[2] for label, found in sorted(best.items())}


def _ranking(parts: Mapping[str, dict[str, Any]]) -> list[TableRow]:
    """`rank_by_efficiency` over every kernel's series, from each kernel's rows."""
    rows = [
        TableRow(gpu, RunEfficiency.from_dict(facts))
        for _, part in sorted(parts.items())
        for gpu, facts in part["ranking"]
    ]
    return sorted(rows, key=ranking_order)


# --------------------------------------------------------------------------- build


def _read_state(out_dir: Path) -> dict[str, Any]:
    """The previous build's fingerprints; an unreadable or foreign file counts as no previous build."""
    try:
        state = json.loads((out_dir / STATE_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):  # RecursionError: nested deeper than the decoder goes
        return {}
    if not isinstance(state, dict) or state.get("format") != SITE_FORMAT or not isinstance(state.get("kernels"), dict):
        return {}
    return state


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
    parts: Mapping[str, dict[str, Any]],
    low_threshold: float,
    coverage: Iterable[CoverageCell] | None,
    pages: _Pages,
) -> None:
    """The landing page and its summary data, written last: it is what readers open."""
    pivot: dict[str, dict[tuple[str, str], int]] = {
        kernel: {(g, v): n for g, v, n in part["pivot"]} for kernel, part in sorted(parts.items()) if part["pivot"]
    }
    status: Counter = Counter()
    for part in parts.values():
        status.update(part["status"])
    html = landing_page(
        landing.title,
        landing.state,
        landing.changed,
        pivot,
        landing.counts,
        landing.regressions,
        coverage=None if coverage is None else list(coverage),
        efficiency_html=_efficiency_section(dict(status), low_threshold, _ranking(parts)),
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
    """Write the site of `manifests` into `out_dir` (layout in the module docstring). A kernel whose data has
    the previous build's fingerprint keeps its files untouched, and every other file is written only where its
    content changed; the result lists the pages rewritten and kept, the landing page says which kernels are new,
    changed or gone. Every manifest is read (a catalogue's site that reads only what the publications since its
    previous build brought: `build_catalogue_site`). `regressions`: the detection result to show (the asset's,
    or the CLI's with its settings); without it detection runs here with the default settings. `origins`: run
    digest -> the link to where it came from (`catalogue.origins.run_origins`), on each point. `efficiency`:
    the figures to show (the efficiency_table asset's); without them they are derived here with the default
    threshold."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if regressions is None:  # detection reads the manifests as the index takes them: one pass, none kept whole
        index = RecordIndex()
        regressions = detect_regressions(index.read(manifests))
    else:
        index = RecordIndex(manifests)
    if efficiency is None:
        efficiency = derive_efficiency(index)
    derived = _derive(index, kernels=None, efficiency=efficiency, detection=_detection_of(regressions), origins=origins)
    before = _read_state(out_dir)
    site = _assemble(
        out_dir,
        title,
        derived,
        kept={},
        before=before,
        regressions=regressions,
        coverage=coverage,
        low_threshold=efficiency.low_threshold,
    )
    write_sidecar(efficiency, out_dir)
    site.result.recomputed = f"all {len(site.parts)} kernels rebuilt from every record given"
    site.result.rebuilt = sorted(site.parts)
    _write_state(out_dir, site, None)
    return site.result


@dataclass
class _Assembled:
    result: SiteResult
    state: dict[str, Any]  # kernel -> page facts (with slug)
    parts: dict[str, dict[str, Any]]


def _assemble(
    out_dir: Path,
    title: str,
    derived: _Derived,
    *,
    kept: Mapping[str, str],
    before: dict[str, Any],
    regressions: RegressionReport,
    coverage: Iterable[CoverageCell] | None,
    low_threshold: float,
    kept_parts: Mapping[str, dict[str, Any]] | None = None,
) -> _Assembled:
    """Write the kernels `derived` made (and move the files of `kept` kernels, kept from the previous build,
    whose slug changed), then the regressions and landing pages from every kernel's part."""
    previous = before.get("kernels", {})
    parts = {**(kept_parts or {}), **derived.parts}
    facts = {k: previous[k] for k in kept} | derived.facts
    slugs = kernel_slugs(facts)
    pages = _Pages()
    state: dict[str, Any] = {}
    for kernel in sorted(facts):
        slug = slugs[kernel]
        entry = {"fingerprint": facts[kernel]["fingerprint"], "slug": slug} | {
            k: v for k, v in facts[kernel].items() if k not in ("fingerprint", "slug")
        }
        state[kernel] = entry
        data_file, page = out_dir / "data" / f"{slug}.js", out_dir / "kernels" / f"{slug}.html"
        old = previous.get(kernel, {})
        unchanged = old.get("fingerprint") == entry["fingerprint"] and old.get("slug") == slug
        if unchanged and data_file.exists() and page.exists():
            pages.add(f"kernels/{slug}.html", False)
            continue
        payload = derived.payloads.get(kernel)
        if payload is None:  # kept, with another slug now: its data moves (`build_catalogue_site` checked it)
            payload = (out_dir / "data" / f"{kept[kernel]}.js").read_text(encoding="utf-8")
        data_written = write_text(data_file, payload)
        page_written = write_text(page, kernel_page(kernel, slug, entry["title"], title))
        pages.add(f"kernels/{slug}.html", data_written or page_written)
    _remove_gone(out_dir, previous, state)
    changed = {k: "new" for k in state if k not in previous}
    changed |= {
        k: "changed" for k in state if k in previous and previous[k].get("fingerprint") != state[k]["fingerprint"]
    }
    changed |= {k: "removed" for k in previous if k not in state}
    copy_assets(out_dir)
    written = write_regressions(
        regressions,
        out_dir,
        efficiency=_scales_report(parts, low_threshold),
        source_origins=_source_origins_of(parts),
    )
    pages.add(REGRESSIONS_PAGE, bool(written.rewritten))
    counts = {
        "kernels": len(state),
        "series": sum(p["series"] for p in parts.values()),
        "runs": sum(p["runs"] for p in parts.values()),
        "points": sum(v["points"] for v in state.values()),
        "slowdowns": len(regressions.slowdowns),
        "speedups": len(regressions.speedups),
        "pending": len(regressions.pending),
        "rewritten": sum(1 for k in state if f"kernels/{state[k]['slug']}.html" in pages.rewritten),
    }
    landing = _Landing(title, state, changed, counts, regressions, before.get("built"))
    _write_landing(out_dir, landing, parts, low_threshold, coverage, pages)
    counts |= {"pagesRewritten": len(pages.rewritten), "pagesKept": len(pages.kept)}
    rewritten = [k for k in sorted(state) if f"kernels/{state[k]['slug']}.html" in pages.rewritten]
    result = SiteResult(
        path=out_dir / "index.html",
        counts=counts,
        changed=changed,
        rewritten=rewritten,
        regressions=regressions,
        pages_rewritten=pages.rewritten,
        pages_kept=pages.kept,
    )
    return _Assembled(result, state, parts)


def _write_state(out_dir: Path, site: _Assembled, catalogue: dict[str, Any] | None) -> None:
    """site-state.json: each kernel's page facts and part, and, for a catalogue's build, where in the catalogue it
    stands (`build_catalogue_site`); written last, so a build that failed halfway leaves the previous state."""
    built = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    state = {"format": SITE_FORMAT, "stateFormat": STATE_FORMAT, "built": built, "kernels": site.state}
    state |= {"parts": dict(sorted(site.parts.items()))}
    if catalogue is not None:
        state["catalogue"] = catalogue
    write_text(out_dir / STATE_NAME, json.dumps(state, sort_keys=True, separators=(",", ":")) + "\n")  # C encoder


@dataclass
class _Pages:
    """Which pages (an HTML page with its data) a build rewrote and which it left as they were."""

    rewritten: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)

    def add(self, page: str, written: bool) -> None:
        (self.rewritten if written else self.kept).append(page)


def _remove_gone(out_dir: Path, previous: dict[str, Any], state: dict[str, Any]) -> None:
    """The files of kernels the catalogue no longer has, or now under another slug (unless a kernel now uses
    that slug)."""
    kept = {f["slug"] for f in state.values()}
    for kernel, facts in previous.items():
        slug = facts.get("slug") if isinstance(facts, dict) else None
        if kernel in state and state[kernel]["slug"] == slug:
            continue
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


# --------------------------------------------------------------------------- a catalogue's site, incrementally


class SiteCatalogue(Protocol):
    """What `build_catalogue_site` reads of a catalogue: `catalogue.store.CatalogueStore`'s methods."""

    def records(
        self, kinds: Iterable[str] | None = None, *, publications: Iterable[int] | None = None
    ) -> Iterator[tuple[str, dict[str, Any]]]: ...

    def runs_by_external_id(self, prefixes: Iterable[str]) -> Iterator[tuple[str, dict[str, Any], int]]: ...

    def run_publications(self) -> dict[str, int]: ...

    def publications_with_records(self, after: int = 0) -> dict[int, str]: ...

    def publications(self) -> list[dict[str, Any]]: ...

    def counts_by_kind(self) -> dict[str, int]: ...


NON_RUN_KINDS = tuple(kind for kind in KINDS if kind != "BenchmarkRun")
SENTINEL_KERNELS = (COPY_SENTINEL_PREFIX, MATMUL_SENTINEL_PREFIX)  # their runs set other kernels' measured ceilings
# what shapes a kernel's data besides the catalogue: a change of these rebuilds every kernel
_CODE = (("reporting", "*.py"), ("liger", "*.py"), ("records", "*.py"), ("data", "*.yaml"))


class _FullBuild(Exception):
    """Why a catalogue's site is built whole this time."""


@functools.cache
def _code_fingerprint() -> str:
    package = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for folder, pattern in _CODE:
        for path in sorted((package / folder).glob(pattern)):
            digest.update(f"{folder}/{path.name}\0".encode() + path.read_bytes() + b"\0")
    return "sha256:" + digest.hexdigest()


def _origins_fingerprint(publication_origins: Mapping[int, str] | None, upto: int) -> str:
    links = sorted((int(i), u) for i, u in (publication_origins or {}).items() if int(i) <= upto)
    return "sha256:" + hashlib.sha256(json.dumps(links).encode()).hexdigest()


def _sidecar_threshold(path: Path) -> float:
    with open(path, encoding="utf-8") as handle:
        header = json.loads(handle.readline() or "null")
    if not isinstance(header, dict) or header.get("kind") != SIDECAR_KIND:
        raise ValueError(f"{path}: line 1 is not an efficiency sidecar header (kind {SIDECAR_KIND!r})")
    return float(header.get("lowThreshold", DEFAULT_LOW_THRESHOLD))


def _field(line: str, key: str, last: bool = False) -> str | None:
    """The string value of `key` in a sidecar line (one flat JSON object), without parsing the rest: a value
    never holds an unescaped quote, so `"<key>": "` is only ever the key. `last`: looked for from the line's end
    (its keys are sorted: `run` and `status` are near it)."""
    start = line.rfind(f'"{key}": "') if last else line.find(f'"{key}": "')
    if start < 0:
        return None
    try:
        return scanstring(line, start + len(key) + 5)[0]
    except ValueError:
        return None


@functools.cache
def _fact_fields() -> dict[str, str]:
    """A sidecar line's camelCase keys -> RunEfficiency's fields (`RunEfficiency.to_dict`)."""
    return {head + "".join(p.capitalize() for p in rest): name for name in RunEfficiency.__dataclass_fields__ for head, *rest in [name.split("_")]}  # fmt: skip


class _SidecarRuns(Mapping):
    """Run digest -> RunEfficiency of an efficiency sidecar's lines, each parsed when first asked for (a site
    reads the facts of its points, a few of a million), with each kernel's runs by status counted from the
    lines as they were read."""

    def __init__(self) -> None:
        self.lines: dict[str, str] = {}
        self.statuses: dict[str, Counter] = defaultdict(Counter)
        self._parsed: dict[str, RunEfficiency] = {}

    def __getitem__(self, digest: str) -> RunEfficiency:
        found = self._parsed.get(digest)
        if found is None:
            fields = _fact_fields()
            data = json.loads(self.lines[digest])
            found = self._parsed[digest] = RunEfficiency(**{fields[k]: v for k, v in data.items() if k in fields})
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self.lines)

    def __len__(self) -> int:
        return len(self.lines)


def _sidecar_of(path: Path, kernels: set[str] | None, runs_wanted: set[str] | None = None) -> EfficiencyReport:
    """The facts of the runs of `kernels` (every kernel where None) in an efficiency sidecar, as `read_sidecar`
    reads them, each line parsed when asked for; of `runs_wanted` only (a site's points), where given, with
    every run of `kernels` counted by status."""
    low = _sidecar_threshold(path)
    wanted = None if kernels is None else set(kernels)
    runs = _SidecarRuns()
    with open(path, encoding="utf-8") as handle:
        handle.readline()
        for number, line in enumerate(handle, start=2):
            kernel, run, status = _field(line, "kernel"), _field(line, "run", True), _field(line, "status", True)
            if kernel is None or run is None or status is None:
                raise ValueError(f"{path}: line {number} lacks a run's kernel, digest or status")
            if wanted is None or kernel in wanted:
                if runs_wanted is None or run in runs_wanted:
                    runs.lines[run] = line
                runs.statuses[kernel][status] += 1
    return EfficiencyReport(runs, low)


def _merge_sidecar(out_dir: Path, report: EfficiencyReport, kernels: set[str]) -> None:
    """efficiency.jsonl as `write_sidecar` writes the whole catalogue's: the previous build's lines of every
    kernel but `kernels`, and `report`'s lines of `kernels`, in run-digest order."""
    path = out_dir / SIDECAR_NAME
    kept: list[tuple[str, str]] = []
    with open(path, encoding="utf-8") as handle:
        handle.readline()
        for line in handle:
            found, run = _field(line, "kernel"), _field(line, "run", True)
            if found is None or run is None:
                raise _FullBuild(f"{SIDECAR_NAME} of the previous build has a line without its kernel or run")
            if found not in kernels:
                kept.append((run, line))
    fresh = sorted(
        (digest, json.dumps(facts.to_dict(), sort_keys=True) + "\n")
        for digest, facts in report.runs.items()
        if facts.kernel in kernels
    )
    header = {
        "kind": SIDECAR_KIND,
        "version": SIDECAR_VERSION,
        "lowThreshold": report.low_threshold,
        "runs": len(kept) + len(fresh),
        "units": {"achieved": "bytes/s or FLOP/s (see bound)", "latencyNs": "ns"},
    }
    text = json.dumps(header, sort_keys=True) + "\n" + "".join(line for _, line in heapq.merge(kept, fresh))
    write_text(path, text)


def build_catalogue_site(
    store: SiteCatalogue,
    out_dir: str | os.PathLike[str],
    *,
    regressions: RegressionReport,
    title: str = "Liger-Kernel benchmarks in the KernelIndex catalogue",
    coverage: Iterable[CoverageCell] | None = None,
    publication_origins: Mapping[int, str] | None = None,
    efficiency_sidecar: str | os.PathLike[str] | None = None,
    low_threshold: float = DEFAULT_LOW_THRESHOLD,
    rebuild: bool = False,
) -> SiteResult:
    """The site of a catalogue (`build_site`'s files), rebuilding only the kernels the publications since the
    previous build in `out_dir` touched: site-state.json remembers the newest publication it was built from and
    each kernel's part (what the landing and regressions pages need of it), so a build reads the records those
    publications brought, finds the kernels of their runs (a Liger run's externalId starts with its kernel),
    reads only those kernels' runs (`runs_by_external_id`) and the catalogue's few other records, and writes
    their data, then the landing and regressions pages from every kernel's part: the files a full build writes,
    byte for byte (the landing page's "Data updated" section and the state's time aside). A kernel is also
    rebuilt when detection's result for it changed, when a record its series referred to arrived, when a
    sweep sentinel's new runs share its GPU host (its measured ceilings), or when its files are missing.

    Built whole (every kernel's runs read, a warning saying why) with `rebuild`, or when the state is missing,
    damaged, of another format, of another catalogue (its newest publication is not this catalogue's), of
    other settings or code, or when a run cannot be placed by its externalId. `publication_origins`:
    publication id -> the link to where its runs came from (`catalogue.origins.publication_origins`).
    `efficiency_sidecar`: the efficiency_table asset's efficiency.jsonl, placed beside the site and read for
    the rebuilt kernels only; without it efficiency is derived here with `low_threshold`."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    sidecar = Path(efficiency_sidecar) if efficiency_sidecar is not None else None
    low = _sidecar_threshold(sidecar) if sidecar is not None else low_threshold
    publications = store.publications()
    newest = max((p["id"] for p in publications), default=0)
    inputs = (
        "sha256:"
        + hashlib.sha256(
            json.dumps([SITE_FORMAT, STATE_FORMAT, title, low, sidecar is not None, _code_fingerprint()]).encode()
        ).hexdigest()
    )
    before = _read_state(out_dir)
    made_from = regressions.made_from
    # detection's result is the one the previous build derived from (its digest): each kernel's fingerprint is
    # the one the state keeps, and the rest of what `_detection_of` gives is needed only by a kernel rebuilt
    kept_detection = (
        made_from is not None and not rebuild and (before.get("catalogue") or {}).get("detection") == made_from
    )
    detection = None if kept_detection else _detection_of(regressions)
    fingerprints = (
        detection[2]
        if detection is not None
        else {
            k: p["detection"]
            for k, p in (before.get("parts") or {}).items()
            if isinstance(p, dict) and p.get("detection")
        }
    )

    def whole(reason: str) -> SiteResult:
        if not rebuild:
            log.warning("site %s: building every kernel: %s", out_dir, reason)
        return _build_whole(
            store,
            out_dir,
            before,
            title,
            coverage,
            regressions,
            detection or _detection_of(regressions),
            publication_origins,
            sidecar,
            low,
            catalogue={"publication": newest, "inputs": inputs, "detection": made_from},
            publications=publications,
            reason=reason,
        )

    try:
        if rebuild:
            raise _FullBuild("a full rebuild was asked for")
        plan = _plan(store, out_dir, before, inputs, publications, publication_origins, fingerprints, sidecar)
    except _FullBuild as why:
        return whole(str(why))
    touched = plan.touched
    reuse: dict[str, _Reuse] = {}
    if plan.touched:
        read = set(touched)
        if sidecar is None:  # derived here: the sentinels' runs set every kernel's measured ceilings
            read |= {k for k in {*before["parts"], *touched} if k.startswith(SENTINEL_KERNELS)}
            prefixes = [identity.kernel_external_id_prefix(k) for k in sorted(read) if k]
        else:  # from the sidecar: a kernel's series whose runs' heads no new run has are kept as they were
            reuse, prefixes = _series_to_read(before["parts"], plan)
        index, origins = RecordIndex(), {}
        index.read_records(store.records(kinds=NON_RUN_KINDS))

        def runs() -> Iterator[tuple[str, dict[str, Any]]]:
            for digest, manifest, publication in store.runs_by_external_id(prefixes):
                url = (publication_origins or {}).get(publication)
                if url:
                    origins[digest] = url
                yield digest, manifest

        index.read_records(runs())
        if sidecar is not None:
            efficiency = functools.partial(_sidecar_of, sidecar, set(touched))
        else:
            efficiency = derive_efficiency(index, low_threshold=low)
        detection = detection or _detection_of(regressions)
        derived = _derive(
            index, kernels=set(touched), efficiency=efficiency, detection=detection, origins=origins, reuse=reuse
        )
        if not derived.regular:
            return whole("a run of a rebuilt kernel cannot be placed by its externalId")
        if derived.split:
            return whole("a new run joined a series of another run template (externalId head)")
    else:
        derived, efficiency = _Derived(), None
    kept_parts = {k: p for k, p in before["parts"].items() if k not in touched}
    held = store.counts_by_kind().get("BenchmarkRun", 0)
    counted = sum(p["runs"] for p in kept_parts.values()) + sum(p["runs"] for p in derived.parts.values())
    if held != counted:  # the runs the state and this build account for are every run of the catalogue
        return whole(
            f"the catalogue holds {held} runs, the previous build's kept kernels and the rebuilt ones {counted}"
        )
    kept = {k: f["slug"] for k, f in before["kernels"].items() if k not in touched}
    site = _assemble(
        out_dir,
        title,
        derived,
        kept=kept,
        before=before,
        regressions=regressions,
        coverage=coverage,
        low_threshold=low,
        kept_parts=kept_parts,
    )
    if sidecar is not None:
        place_sidecar(sidecar, out_dir)
    elif touched:
        _merge_sidecar(out_dir, efficiency, set(touched))
    total = len(site.parts)
    site.result.recomputed = (
        f"{len(touched)} of {total} kernels rebuilt{_why_touched(touched)}, {total - len(touched)} kept from the "
        f"previous build (publication {before['catalogue']['publication']}); landing and regressions pages "
        "made again from every kernel's part"
    )
    site.result.rebuilt = sorted(touched)
    _write_state(
        out_dir, site, _catalogue_state(newest, inputs, publications, publication_origins, plan.regular, made_from)
    )
    return site.result


def _why_touched(touched: Mapping[str, str]) -> str:
    if not touched:
        return " (no publication brought records since, and detection's result of every kernel is the same)"
    reasons = Counter(touched.values())
    return " (" + "; ".join(f"{n} {why}" for why, n in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))) + ")"


def _series_to_read(parts: Mapping[str, dict[str, Any]], plan: _Plan) -> tuple[dict[str, _Reuse], list[str]]:
    """What to keep of each rebuilt kernel and the externalId prefixes to read: the heads of the new runs and
    every head of a kept series that shares one with them (until no series is split between read and kept),
    or, for a kernel `plan.whole` names or the previous build lacks, all of its runs."""
    reuse: dict[str, _Reuse] = {}
    prefixes: list[str] = []
    for kernel in sorted(plan.touched):
        part = parts.get(kernel)
        if part is None or kernel in plan.whole or not kernel:
            prefixes.append(identity.kernel_external_id_prefix(kernel))
            continue
        read = set(plan.heads.get(kernel, ()))
        while True:
            more = {h for entry in part["cache"] if read & set(entry["heads"]) for h in entry["heads"]} - read
            if not more:
                break
            read |= more
        reuse[kernel] = _Reuse(
            series=[entry for entry in part["cache"] if not read & set(entry["heads"])],
            heads={h: f for h, f in part["heads"].items() if h not in read},
        )
        prefixes += sorted(read)
    return reuse, prefixes


def _catalogue_state(
    newest: int,
    inputs: str,
    publications: list[dict[str, Any]],
    publication_origins: Mapping[int, str] | None,
    regular: bool,
    detection: str | None,
) -> dict[str, Any]:
    started = {p["id"]: p["startedAt"] for p in publications}
    return {
        "publication": newest,
        "startedAt": started.get(newest),
        "inputs": inputs,
        "origins": _origins_fingerprint(publication_origins, newest),
        "regular": regular,
        "detection": detection,  # the digest of detection's result the build derived from (`made_from`)
    }


@dataclass
class _Plan:
    touched: dict[str, str]  # kernel -> why it is rebuilt
    regular: bool = True
    heads: dict[str, set[str]] = field(default_factory=dict)  # kernel -> the externalId heads of its new runs
    whole: set[str] = field(default_factory=set)  # kernels whose every run is read again (a record they lacked came)


def _plan(
    store: SiteCatalogue,
    out_dir: Path,
    before: dict[str, Any],
    inputs: str,
    publications: list[dict[str, Any]],
    publication_origins: Mapping[int, str] | None,
    detection: Mapping[str, str],
    sidecar: Path | None,
) -> _Plan:
    """Which kernels to rebuild and why; _FullBuild where the previous build cannot be built on."""
    if not (out_dir / STATE_NAME).exists():
        raise _FullBuild(f"no {STATE_NAME} of a previous build in {out_dir}")
    if not before:
        raise _FullBuild(f"{STATE_NAME} is damaged or of another format")
    catalogue, parts = before.get("catalogue"), before.get("parts")
    if (
        before.get("stateFormat") != STATE_FORMAT
        or not isinstance(catalogue, dict)
        or not isinstance(parts, dict)
        or not isinstance(catalogue.get("publication"), int)
        or not all(isinstance(p, dict) and set(_empty_part()) <= set(p) for p in parts.values())
        or not all(isinstance(f, dict) and isinstance(f.get("slug"), str) for f in before["kernels"].values())
    ):
        raise _FullBuild(f"{STATE_NAME} is not a catalogue build's of this format")
    if catalogue.get("inputs") != inputs:
        raise _FullBuild("the title, the efficiency settings or the site's code changed since the previous build")
    if not catalogue.get("regular"):
        raise _FullBuild("the catalogue has runs the site cannot place by their externalId")
    since = catalogue["publication"]
    started = {p["id"]: p["startedAt"] for p in publications}
    if since > max(started, default=0) or (since and started.get(since) != catalogue.get("startedAt")):
        raise _FullBuild(f"the previous build is of another catalogue (its publication {since} is not this one's)")
    if catalogue.get("origins") != _origins_fingerprint(publication_origins, since):
        raise _FullBuild("the links to where runs came from changed")
    if sidecar is None and not (out_dir / SIDECAR_NAME).is_file():
        raise _FullBuild(f"the previous build's {SIDECAR_NAME} is missing")
    touched: dict[str, str] = {}
    heads: dict[str, set[str]] = defaultdict(set)
    whole: set[str] = set()
    new = store.publications_with_records(after=since)
    span = _span(list(new))
    runs = 0
    if new:
        known: dict[tuple, tuple[str, bool]] = {}
        ceilings: set[str] = set()  # environments of new sentinel runs
        for digest, manifest in store.records(kinds=["BenchmarkRun"], publications=list(new)):
            row = run_row(digest, manifest)
            kernel, regular = _run_kernel(row, known)
            if not regular:
                raise _FullBuild(f"publications {span} brought a run the site cannot place by its externalId")
            touched.setdefault(kernel, f"with runs from publications {span}")
            heads[kernel].add(row.external_head)
            if kernel.startswith(SENTINEL_KERNELS) and isinstance(row.environment, str):
                ceilings.add(row.environment)
            runs += 1
        by_missing: dict[str, list[str]] = defaultdict(list)
        by_name: dict[str, list[str]] = defaultdict(list)
        for kernel, part in parts.items():
            for digest in part["missing"]:
                by_missing[digest].append(kernel)
            for name in part["implementations"]:
                by_name[name].append(kernel)
        for digest, manifest in store.records(kinds=NON_RUN_KINDS, publications=list(new)):
            name = (manifest.get("metadata") or {}).get("name")
            hit = by_missing.get(digest, []) + (
                by_name.get(name, []) if manifest["kind"] == "ImplementationRevision" else []
            )
            for kernel in hit:
                touched.setdefault(kernel, f"referring to records publications {span} brought")
                whole.add(kernel)
        for kernel, part in parts.items():
            if ceilings & set(part["environments"]):
                touched.setdefault(kernel, "on a host whose sweep sentinel ran again (its measured ceiling)")
    for kernel in sorted({*parts, *detection}):
        if (parts.get(kernel) or {}).get("detection") != detection.get(kernel):
            touched.setdefault(kernel, "whose detection result changed")
    for kernel, facts in before["kernels"].items():
        if kernel not in parts:
            raise _FullBuild(f"{STATE_NAME} has kernel {kernel!r} without its part")
        slug = facts["slug"]
        if not ((out_dir / "data" / f"{slug}.js").is_file() and (out_dir / "kernels" / f"{slug}.html").is_file()):
            touched.setdefault(kernel, "whose files were missing")
    return _Plan(touched, heads=dict(heads), whole=whole)


def _span(ids: list[int]) -> str:
    if not ids:
        return ""
    return str(ids[0]) if len(ids) == 1 else f"{min(ids)}-{max(ids)}"


def _build_whole(
    store: SiteCatalogue,
    out_dir: Path,
    before: dict[str, Any],
    title: str,
    coverage: Iterable[CoverageCell] | None,
    regressions: RegressionReport,
    detection: tuple[dict, dict, dict[str, str]],
    publication_origins: Mapping[int, str] | None,
    sidecar: Path | None,
    low: float,
    *,
    catalogue: dict[str, Any],
    publications: list[dict[str, Any]],
    reason: str,
) -> SiteResult:
    """Every kernel of the catalogue, from every record (`build_site`'s way, with the state to build on)."""
    index = RecordIndex()
    index.read_records(store.records())
    origins = None
    if publication_origins:
        origins = {d: publication_origins[p] for d, p in store.run_publications().items() if publication_origins.get(p)}
    efficiency = (
        functools.partial(_sidecar_of, sidecar, None)
        if sidecar is not None
        else derive_efficiency(index, low_threshold=low)
    )
    derived = _derive(index, kernels=None, efficiency=efficiency, detection=detection, origins=origins)
    del index
    site = _assemble(
        out_dir,
        title,
        derived,
        kept={},
        before=before,
        regressions=regressions,
        coverage=coverage,
        low_threshold=low,
    )
    if sidecar is not None:
        place_sidecar(sidecar, out_dir)
    else:
        write_sidecar(efficiency, out_dir)
    site.result.recomputed = f"all {len(site.parts)} kernels rebuilt from every record ({reason})"
    site.result.rebuilt = sorted(site.parts)
    site.result.full_rebuild = reason
    newest = catalogue["publication"]
    _write_state(
        out_dir,
        site,
        _catalogue_state(
            newest, catalogue["inputs"], publications, publication_origins, derived.regular, catalogue["detection"]
        ),
    )
    return site.result


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
    return _efficiency_section(report.status_counts(), report.low_threshold, rows, per_gpu)


def _efficiency_section(
    counts: Mapping[str, int], low_threshold: float, rows: list[TableRow], per_gpu: int = 15
) -> str:
    out = [
        '<section id="efficiency-section"><h2>Efficiency: percent of peak</h2>',
        '<p class="note">Each latency run against its GPU\'s roofline: the minimum HBM bytes or FLOPs of its '
        "workload (data/liger-cost-models.yaml) per second, as a percent of the datasheet peak (data/gpu-peaks.yaml) "
        "and, where a sweep's copy sentinel ran on the same host, of that measured ceiling. Per GPU, kernel, pass "
        f"and Liger provider, its largest workload at the newest version; below {low_threshold:.0%} is "
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
