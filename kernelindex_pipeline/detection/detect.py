"""Regression detection over every run: the one domain API. `detect_regressions(manifests, settings)` (a
catalogue: source runs are found from the runs' own times), `detect_in_run_table(table, settings)` (the same
catalogue's runs as a run table keeps them, `run_facts.RunFactsTable`) and `detect_in_record_files(paths,
settings)` (each file one source run, as `transform` wrote it) collect the runs through their source's adapter (`run_facts.py`:
this module knows no source's identity formats), form the series, take the host effects out
(`host_correction.py`, `host_effects.py`), judge each series (`changepoints.py`, reusing `judgements.py`'s
store) and return a `changes.RegressionReport`. The model (series, source runs, host correction, noise,
causes) is explained once, in docs/concepts/detection.md.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from . import host_correction, host_effects
from .changepoints import (
    MAD_EFFICIENCY,
    DetectionSettings,
    Split,
    find_changes,
    newest_step,
    prior_df,
    shrunk_noise,
    within_noise,
)
from .changes import (
    CAUSES,
    Change,
    GpuSeriesKey,
    Insufficient,
    RegressionInputError,
    RegressionReport,
    SourceRun,
    Trend,
)
from .judgements import JudgementStore
from .run_facts import PEAK_MEMORY, AdapterRegistry, FactsAdapter, RunColumns, RunFacts, RunFactsTable, facts_of

SESSION_GAP_S = 30 * 60  # a sweep's rows are at most minutes apart (160 s on Liger's CI); runs are hours apart


# ------------------------------------------------------------------------------------ collection


class _Observations:
    """Column lists of every usable run (one pass over the manifests, each read by its source's adapter)."""

    def __init__(self, adapters: Mapping[str, FactsAdapter] | None = None) -> None:
        self.registry = AdapterRegistry(adapters)
        self.series: dict[tuple, int] = {}  # GpuSeriesKey fields -> series id
        self.keys: list[GpuSeriesKey] = []  # by series id
        self.case_keys: list[str] = []
        self.scripts: list[str] = []  # benchmark script of each series
        self.sid: list[int] = []
        self.value: list[float] = []
        self.observed: list[str] = []
        self.order: list[float] = []  # the adapter's position on the run timeline (NaN: measurement time)
        self.version: list[str] = []
        self.code_ref: list[str | None] = []
        self.environment: list[str] = []
        self.origin: list[str | None] = []
        self.source: list[str | None] = []
        self.skipped: Counter = Counter()

    def add(self, manifests: Iterable[dict[str, Any]], source: str | None = None) -> None:
        self.registry.enter(source)
        registry = self.registry

        def facts() -> Iterable[RunFacts | str]:
            for manifest in manifests:
                if not isinstance(manifest, dict):
                    continue
                if manifest.get("kind") != "BenchmarkRun":
                    registry.see(manifest)
                    continue
                yield facts_of(manifest, registry)

        self._take(facts(), source)

    def add_table(self, table: RunFactsTable) -> None:
        """A catalogue's runs from its run table: the other records seen first, then each run's own facts
        completed by its source's adapter (the same facts as `add` of the catalogue's manifests); from the
        table's columns where it has them and every adapter says what its completion reads
        (`_take_columns`), else run by run."""
        registry = self.registry
        registry.enter(None)
        for manifest in table.records:
            registry.see(manifest)
        if table.columns is not None and not self.sid:
            columns = table.columns()
            source = columns.codes("source")
            if all(
                registry.completion(s) is None or registry.completes_from(s) is not None for s in [None, *source[1]]
            ):
                self._take_columns(columns, source)
                return
        completions: dict[str | None, Any] = {}

        def facts() -> Iterable[RunFacts | str]:
            for source, own in table.runs:
                if source not in completions:
                    completions[source] = registry.completion(source)
                complete = completions[source]
                if complete is None or own is None:
                    yield registry.no_adapter
                else:
                    yield own if isinstance(own, str) else complete(own)

        self._take(facts(), None)

    def _take(self, every: Iterable[RunFacts | str], source: str | None) -> None:
        skipped, series, keys = self.skipped, self.series, self.keys
        sid_of, value, observed, order = self.sid.append, self.value.append, self.observed.append, self.order.append
        version, code_ref, environment, sources = (
            self.version.append,
            self.code_ref.append,
            self.environment.append,
            self.source.append,
        )
        for facts in every:
            if isinstance(facts, str):
                skipped[facts] += 1
                continue
            identity = (
                facts.kernel,
                facts.mode,
                facts.provider,
                facts.implementation_digest,
                facts.workload_digest,
                facts.protocol_digest,
                facts.gpu,
                facts.metric,
                facts.origin,
            )
            sid = series.get(identity)
            if sid is None:
                sid = series[identity] = len(keys)
                keys.append(GpuSeriesKey(*identity))
                self.case_keys.append(facts.case_key)
                self.scripts.append(facts.script)
            sid_of(sid)
            value(facts.value)
            observed(facts.observed_at)
            order(math.nan if facts.order is None else facts.order)
            version(facts.version)
            code_ref(facts.code_ref)
            environment(facts.environment_digest)
            self.origin.append(facts.origin)
            sources(source)

    def _take_columns(self, columns: RunColumns, source_codes: tuple[np.ndarray, list[Any]]) -> None:
        """`_take` of a run table's columns, each adapter's `complete` called once per distinct combination
        of its `completes_from` fields (and source), the series numbered in order of their first run, the
        skipped counted in order of their first row: the columns `_take` makes of the same runs, run by run."""
        registry = self.registry
        source, sources = source_codes  # the column `add_table` read to choose this path
        adapter, adapter_values = columns.codes("adapter")
        reason, reasons = columns.codes("reason")
        complete = [registry.completion(s) for s in sources]
        # as `add_table` run by run: no adapter (for the source, or the row's), then the row's reason, else facts
        adapted = np.isin(adapter, [i for i, v in enumerate(adapter_values) if v]) & np.isin(
            source, [i for i, c in enumerate(complete) if c is not None]
        )
        has_facts = adapted & (reason < 0)
        encoded: dict[str, tuple[np.ndarray, list[Any]]] = {}
        floats: dict[str, np.ndarray] = {}
        for name in RunFacts._fields:
            if name in ("value", "order"):
                floats[name] = columns.floats(name)
            elif name != "observed_at":
                encoded[name] = columns.codes(name)
        # why each row that is no run is skipped: its reason, or no adapter (a code into `why`)
        why: list[str] = [registry.no_adapter, *reasons]
        skip = np.where(adapted & (reason >= 0), reason + 1, 0)
        skip[has_facts] = -1
        # one completion per distinct (source, the fields it reads and sets) among the runs with facts
        rows = np.flatnonzero(has_facts)
        touched = sorted({f for s in set(source[rows].tolist()) for f in registry.completes_from(sources[s])})
        key = {"source": source[rows]} | {f: floats[f][rows] if f in floats else encoded[f][0][rows] for f in touched}
        group = (
            pd.DataFrame(key).groupby(list(key), sort=False, dropna=False).ngroup().to_numpy()
            if len(rows)
            else np.zeros(0, dtype=np.int64)
        )
        first_of_group = np.unique(group, return_index=True)[1] if len(rows) else np.zeros(0, dtype=np.int64)

        def value_of(name: str, row: int) -> Any:
            if name in floats:
                v = float(floats[name][row])
                return None if name == "order" and math.isnan(v) else v
            code, values = encoded[name]
            return None if code[row] < 0 else values[code[row]]

        completed: dict[str, list[Any]] = {f: [] for f in touched}
        group_skip = np.full(len(first_of_group), -1, dtype=np.int64)
        for g, at in enumerate(first_of_group):
            row = int(rows[at])
            own = RunFacts(*(value_of(f, row) if f != "observed_at" else "" for f in RunFacts._fields))
            done = complete[source[row]](own)
            if isinstance(done, str):
                why.append(done)
                group_skip[g] = len(why) - 1
                done = own
            fields = registry.completes_from(sources[source[row]])
            changed = [f for f in RunFacts._fields if getattr(done, f) != getattr(own, f) and f not in fields]
            if changed:
                raise TypeError(
                    f"the run-facts adapter of {sources[source[row]]!r} completes {changed}, not in its completes_from"
                )
            for f in touched:
                completed[f].append(getattr(done, f) if f in fields else getattr(own, f))
        skip[rows] = group_skip[group]
        kept = rows[group_skip[group] < 0]
        kept_group = group[group_skip[group] < 0]

        def final(name: str) -> list[Any]:
            """Each kept run's value of `name` once completed."""
            if name in completed:
                return np.array(completed[name], dtype=object)[kept_group].tolist()
            if name in floats:
                return floats[name][kept].tolist()
            code, values = encoded[name]
            return np.array([*values, None], dtype=object)[code[kept]].tolist()

        def final_codes(name: str) -> np.ndarray:
            """Each kept run's value of `name` once completed, as a code (equal codes, equal values)."""
            if name in completed:
                distinct: dict[Any, int] = {}
                return np.array([distinct.setdefault(v, len(distinct)) for v in completed[name]])[kept_group]
            return encoded[name][0][kept]

        identity_fields = [f.name for f in dataclasses.fields(GpuSeriesKey)]  # what makes a series
        if len(kept):
            codes = pd.DataFrame({f: final_codes(f) for f in identity_fields})
            sid = codes.groupby(list(identity_fields), sort=False).ngroup().to_numpy()
            first_run = kept[np.unique(sid, return_index=True)[1]]
        else:
            sid, first_run = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        for row, g in zip(first_run.tolist(), group[np.searchsorted(rows, first_run)].tolist(), strict=True):
            identity = tuple(completed[f][g] if f in completed else value_of(f, row) for f in identity_fields)
            self.series[identity] = len(self.keys)  # by series id: the order `_take` numbers them in
            self.keys.append(GpuSeriesKey(*identity))
            self.case_keys.append(value_of("case_key", row))
            self.scripts.append(value_of("script", row))
        values = {f: final(f) for f in ("value", "order", "version", "code_ref", "environment_digest", "origin")}
        self.sid += sid.tolist()
        self.value += values["value"]
        observed = columns.strings("observed_at")
        self.observed += [observed[i] for i in kept.tolist()]
        self.order += [math.nan if o is None else o for o in values["order"]]
        self.version += values["version"]
        self.code_ref += values["code_ref"]
        self.environment += values["environment_digest"]
        self.origin += values["origin"]
        self.source += [None] * len(kept)
        skipped = skip[skip >= 0]
        if len(skipped):
            codes, first = np.unique(skipped, return_index=True)
            counts = np.bincount(skipped)
            for code in codes[np.argsort(first)]:  # in the order of their first row, as `_take` counts them
                self.skipped[why[code]] += int(counts[code])


def _epoch_seconds(stamps: list[str]) -> np.ndarray:
    try:
        return np.array([s.rstrip("Z") for s in stamps], dtype="datetime64[ms]").astype(np.int64) / 1000.0
    except ValueError:  # unusual but valid ISO forms (offsets): the slow path names the bad one
        out = []
        for s in stamps:
            try:
                out.append(datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp())
            except ValueError:
                raise RegressionInputError(f"observedAt {s!r} is not an ISO 8601 time") from None
        return np.array(out)


def _source_runs(obs: _Observations, keys: list[GpuSeriesKey], t: np.ndarray) -> tuple[np.ndarray, list[SourceRun]]:
    """Source run index of every observation, runs ordered by GPU then on the run timeline (the adapters'
    order key; a run without one keeps its measured place among the others). Source runs are cut by
    measurement time."""
    timeline = np.array(obs.order, dtype=float)
    gpu_of = [k.gpu for k in keys]
    sid = np.array(obs.sid)
    order = np.lexsort((t, np.array([gpu_of[s] for s in obs.sid])))
    labels: list[tuple[str, str]] = []
    run_of = np.empty(len(sid), dtype=np.int64)
    origin, origins = pd.factorize(np.array(obs.origin, dtype=object))  # None: -1
    if any(s is None for s in obs.source):
        # in (GPU, time) order a run starts at a new GPU, after a gap, or where the environment or origin changes
        gpu_code = pd.factorize(np.array(gpu_of, dtype=object)[sid])[0][order]
        environment = pd.factorize(np.array(obs.environment, dtype=object))[0]
        env_code = (environment * (len(origins) + 1) + origin + 1)[order]
        starts = np.r_[True, (np.diff(gpu_code) != 0) | (np.diff(t[order]) > SESSION_GAP_S) | (np.diff(env_code) != 0)]
        run_of[order] = np.cumsum(starts) - 1
        labels = [(gpu_of[obs.sid[i]], "") for i in order[starts].tolist()]
    else:
        index: dict[tuple[str, str], int] = {}
        for i in order:
            k = (gpu_of[obs.sid[i]], obs.source[i])
            if k not in index:
                index[k] = len(labels)
                labels.append(k)
            run_of[i] = index[k]
    first_time = np.full(len(labels), np.inf)
    np.minimum.at(first_time, run_of, t)
    # the run timeline: the adapter's order where it gives one (e.g. the code's commit time); a run without
    # one keeps its measured place among those that have one: right after the latest-placed run of its GPU
    # measured before it (its first measurement decides among equals), so a run the adapter cannot place
    # never moves the runs it can, nor is moved past them (orders and measurement times are not one scale)
    placed = np.full(len(labels), np.inf)
    known = ~np.isnan(timeline)
    np.minimum.at(placed, run_of[known], timeline[known])
    if not np.isfinite(placed).all():
        latest: dict[str, float] = {}
        for r in sorted(range(len(labels)), key=lambda r: first_time[r]):
            gpu = labels[r][0]
            if np.isfinite(placed[r]):
                latest[gpu] = max(latest.get(gpu, -np.inf), placed[r])
            else:
                placed[r] = latest.get(gpu, -np.inf)
    first_obs = order[np.unique(run_of[order], return_index=True)[1]]  # each run's first, in (GPU, time) order
    runs = []
    for r, (gpu, label) in enumerate(labels):
        stamp = obs.observed[first_obs[r]]
        runs.append(SourceRun(label=label or f"{gpu} {stamp}", gpu=gpu, observed_at=stamp))
    # renumber by (gpu, place on the timeline) so neighbouring runs are neighbours on it
    ranked = sorted(range(len(runs)), key=lambda r: (runs[r].gpu, placed[r], first_time[r], runs[r].label))
    new_index = np.empty(len(runs), dtype=np.int64)
    new_index[ranked] = np.arange(len(runs))
    runs = [runs[r] for r in ranked]
    run_of = new_index[run_of]
    _tally(runs, "versions", run_of, obs.version)
    _tally(runs, "code_refs", run_of, obs.code_ref)
    known = np.flatnonzero(origin >= 0)[::-1]
    last_runs, at = np.unique(run_of[known], return_index=True)  # each run's last observation with an origin
    for r, i in zip(last_runs.tolist(), known[at].tolist(), strict=True):
        runs[r].origin = origins[origin[i]]
    return run_of, runs


def _tally(runs: list[SourceRun], counter: str, run_of: np.ndarray, values: list[Any]) -> None:
    """Count each observation's value (None: not counted) in its run's Counter `counter`, each run's values
    in the order the observations first bring them (a Counter's ties are ranked in that order)."""
    codes, distinct = pd.factorize(np.array(values, dtype=object))
    width = max(1, len(distinct))
    counted = np.flatnonzero(codes >= 0)
    pairs, first, counts = np.unique(run_of[counted] * width + codes[counted], return_index=True, return_counts=True)
    for p in np.lexsort((first, pairs // width)).tolist():
        getattr(runs[int(pairs[p] // width)], counter)[distinct[pairs[p] % width]] = int(counts[p])


# -------------------------------------------------------------------------------------- detection


def detect_regressions(
    manifests: Iterable[dict[str, Any]],
    settings: DetectionSettings | None = None,
    adapters: Mapping[str, FactsAdapter] | None = None,
    judgement_store: str | os.PathLike[str] | None = None,
) -> RegressionReport:
    """Every BenchmarkRun of a catalogue (any kinds may be mixed in); source runs from the runs' times.
    `adapters`: run-facts adapters by source name, before `run_facts.SOURCE_ADAPTERS`. `judgement_store`: a
    file of per-series judgements (`judgements.py`) that this detection reuses where a series' inputs are
    unchanged and then rewrites; None: every series is judged afresh."""
    obs = _Observations(adapters)
    obs.add(manifests)
    return _detect(obs, settings or DetectionSettings(), judgement_store)


def detect_in_run_table(
    table: RunFactsTable,
    settings: DetectionSettings | None = None,
    adapters: Mapping[str, FactsAdapter] | None = None,
    judgement_store: str | os.PathLike[str] | None = None,
) -> RegressionReport:
    """`detect_regressions` of a catalogue, its runs read from a run table (`run_facts.RunFactsTable`, e.g.
    catalogue/run_table.py's): the same report as from its manifests, without parsing every run."""
    obs = _Observations(adapters)
    obs.add_table(table)
    return _detect(obs, settings or DetectionSettings(), judgement_store)


def detect_in_record_files(
    paths: Sequence[str | os.PathLike[str]],
    settings: DetectionSettings | None = None,
    adapters: Mapping[str, FactsAdapter] | None = None,
    judgement_store: str | os.PathLike[str] | None = None,
) -> RegressionReport:
    """Each file one source run (a records.jsonl that `transform` wrote), labelled by its folder name
    when the file is called records.jsonl, else by the file name."""
    from kernelindex_pipeline.records.io import load_manifests

    obs = _Observations(adapters)
    seen: dict[str, Path] = {}
    for raw in paths:
        path = Path(raw)
        if not path.is_file():
            raise RegressionInputError(f"{path}: no such file (give records.jsonl files that `transform` wrote)")
        label = path.parent.name if path.name == "records.jsonl" and path.parent.name else path.name
        if label in seen:
            label = str(path)
        seen[label] = path
        before = len(obs.sid)
        obs.add((manifest for _, manifest in load_manifests(path)), source=label)
        if len(obs.sid) == before:
            raise RegressionInputError(f"{path}: no BenchmarkRun with a latency or peak memory value in it")
    return _detect(obs, settings or DetectionSettings(), judgement_store)


def _detect(
    obs: _Observations, settings: DetectionSettings, judgement_store: str | os.PathLike[str] | None = None
) -> RegressionReport:
    n = len(obs.sid)
    if n == 0:
        return RegressionReport(settings, 0, [], [], [], [], [], [], obs.skipped)
    run_of, sources = _source_runs(obs, obs.keys, _epoch_seconds(obs.observed))
    panel = _panel(obs, run_of, len(sources))
    fit, corrected = _host_corrected(panel, obs.keys, sources, settings)
    priors, own_noise, own_used = _noise_priors(panel, obs.keys, corrected, settings)
    unsettled = np.zeros(len(sources), dtype=bool)  # runs with a host effect taken out (`_held_where_settled`)
    unsettled[
        [*host_correction.significant_class_effects(fit, settings), *(int(run) for run, _ in fit.scripts.index)]
    ] = True
    store = JudgementStore(judgement_store, _judge_series)
    trends: list[Trend] = []
    insufficient: list[Insufficient] = []
    found: list[tuple[Trend, Split]] = []
    newest: list[tuple[Trend, Split]] = []
    for i, s in enumerate(panel.series_ids):
        if panel.lengths[i] < settings.min_runs:
            insufficient.append(Insufficient(obs.keys[s], int(panel.lengths[i])))
            continue
        a, b = panel.bounds[i], panel.bounds[i + 1]
        prior, weight = priors[i]
        sigma = shrunk_noise(own_noise[i], MAD_EFFICIENCY * own_used[i], prior, weight)
        settled = ~unsettled[panel.run[a:b]]
        splits, pending_step, sigma = store.judged(
            corrected[a:b], fit.extra[a:b], sigma, prior, weight, settings, settled
        )
        trend = _trend(obs, panel, i, sources, corrected, sigma, splits)
        trends.append(trend)
        found += [(trend, split) for split in splits]
        if pending_step is not None:
            newest.append((trend, pending_step))
    changes = _with_causes(found, trends)
    pending = _with_causes(newest, trends)
    reported, every = host_correction.host_effect_entries(fit, sources, settings, panel.scripts)
    store.save()
    return RegressionReport(
        settings=settings,
        runs=n,
        sources=sources,
        trends=trends,
        insufficient=insufficient,
        host_effects=reported,
        all_host_effects=every,
        changes=changes,
        skipped=obs.skipped,
        pending=pending,
        judgements=store.reuse,
    )


@dataclass
class _Panel:
    """One value per (series, source run), sorted by series then run time, and what each series is."""

    x: np.ndarray  # log value: the median of a case's repeats within one source run
    first: np.ndarray  # the first observation of each (series, run), for labels
    run: np.ndarray  # source run of each value
    series: np.ndarray  # series id of each value
    bounds: np.ndarray  # series i's values are [bounds[i], bounds[i + 1])
    series_ids: np.ndarray
    typical: np.ndarray  # per series: its median log value
    series_class: np.ndarray  # per series: latency class (memory a class of its own), sparse ones merged
    series_group: np.ndarray  # per series: its kernel group (kernel, provider, metric)
    series_script: np.ndarray  # per series: its benchmark script, as an index into `scripts`
    scripts: list[str]

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.bounds)

    def per_value(self, per_series: np.ndarray) -> np.ndarray:
        return np.repeat(per_series, self.lengths)


def _panel(obs: _Observations, run_of: np.ndarray, n_sources: int) -> _Panel:
    keys = obs.keys
    n = len(obs.sid)
    sid = np.array(obs.sid, dtype=np.int64)
    logv = np.log(np.array(obs.value))
    # one value per (series, source run): the median of repeats, then sorted by series and run time
    pair = sid * n_sources + run_of
    uniq, inverse = np.unique(pair, return_inverse=True)
    order = np.argsort(inverse, kind="stable")
    cuts = np.flatnonzero(np.diff(inverse[order])) + 1
    x = _group_medians(logv, inverse, np.r_[0, cuts]) if len(uniq) < n else logv[order]
    p_sid = uniq // n_sources
    p_run = uniq % n_sources  # uniq is sorted by series then run index, i.e. time within the GPU
    # latency class of each series by its typical (median) value; memory is a class of its own
    starts = np.flatnonzero(np.r_[True, p_sid[1:] != p_sid[:-1]])
    bounds = np.r_[starts, len(p_sid)]
    typical = _group_medians(x, p_sid, starts)
    series_ids = p_sid[starts]
    is_memory = np.array([keys[s].metric == PEAK_MEMORY for s in series_ids])
    series_class = np.where(is_memory, host_effects.MEMORY_CLASS, host_effects.latency_class(typical))
    group_ids: dict[tuple, int] = {}
    series_group = np.array(
        [group_ids.setdefault((keys[s].kernel, keys[s].provider, keys[s].metric), len(group_ids)) for s in series_ids]
    )
    series_class = host_correction.merge_sparse_classes(
        series_class, series_group, np.array([keys[s].gpu for s in series_ids])
    )
    script_ids: dict[str, int] = {}
    series_script = np.array([script_ids.setdefault(obs.scripts[s], len(script_ids)) for s in series_ids])
    return _Panel(
        x=x,
        first=order[np.r_[0, cuts]],
        run=p_run,
        series=p_sid,
        bounds=bounds,
        series_ids=series_ids,
        typical=typical,
        series_class=series_class,
        series_group=series_group,
        series_script=series_script,
        scripts=list(script_ids),
    )


def _group_medians(values: np.ndarray, group: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """np.median of each group's values (`group`: each value's group, in any order; `starts`: where each group
    begins once the values are sorted by group): the same numbers as one np.median per group (the middle value,
    or the mean of the two middle ones), in one sort; a call per group was a third of detection at 100k runs."""
    if not np.isfinite(values).all():  # np.median's NaN rules, kept by the slow path
        ordered = values[np.argsort(group, kind="stable")]
        return np.array([np.median(g) for g in np.split(ordered, starts[1:])])
    ordered = values[np.lexsort((values, group))]
    sizes = np.diff(np.r_[starts, len(values)])
    return (ordered[starts + (sizes - 1) // 2] + ordered[starts + sizes // 2]) / 2


def _host_corrected(
    panel: _Panel, keys: list[GpuSeriesKey], sources: list[SourceRun], settings: DetectionSettings
) -> tuple[host_effects.HostFit, np.ndarray]:
    """The run-level host effects (`host_effects.estimate`) and the values with them taken out
    (launch-bound series against the host's speed, `host_correction.against_host_speed`)."""
    run_gpu = np.unique([r.gpu for r in sources], return_inverse=True)[1] if sources else np.empty(0, dtype=np.int64)
    cls, group = panel.per_value(panel.series_class), panel.per_value(panel.series_group)
    fit = host_effects.estimate(
        panel.series,
        panel.run,
        cls,
        group,
        panel.per_value(panel.series_script),
        panel.x,
        settings.min_log_effect,
        host_correction.z_for(settings.alpha),
        run_gpu,
    )
    launch_bound = host_correction.launch_bound(keys, panel.series_ids, panel.typical, settings.min_log_effect)
    taken_out = host_correction.against_host_speed(
        fit.correction, panel.per_value(launch_bound), panel.series, panel.run, cls, group, panel.x, run_gpu
    )
    return fit, panel.x - taken_out


def _noise_priors(
    panel: _Panel, keys: list[GpuSeriesKey], corrected: np.ndarray, settings: DetectionSettings
) -> tuple[list[tuple[float, float]], np.ndarray, np.ndarray]:
    """(per series: the pooled noise and its weight, each series' own noise, the values that told it).

    A series' own noise: the MAD of its successive differences. Pooled per (GPU, class): the median of
    its series' noise (a class without series enough borrows the GPU's, else everything's), with a
    weight (prior degrees of freedom) estimated from how much the series' noise differs beyond what
    estimating it from few runs explains (`changepoints.prior_df`)."""
    bounds, lengths = panel.bounds, panel.lengths
    own = [within_noise(corrected[a:b], [], None, 0.0) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    own_noise = np.array([noise for noise, _ in own])
    own_used = np.array([used for _, used in own])
    pool_key = [(keys[s].gpu, int(c)) for s, c in zip(panel.series_ids, panel.series_class, strict=True)]
    members: dict[tuple, list[int]] = defaultdict(list)
    for i, k in enumerate(pool_key):
        if lengths[i] >= settings.min_runs and own_noise[i] > 0:
            members[k].append(i)
            members[(k[0], None)].append(i)
            members[(None, None)].append(i)
    # how much the noise of series differs is estimated over the GPU's series (a class alone is often a
    # handful of series), the level per class
    weight = {k[0]: prior_df(own_noise[v], MAD_EFFICIENCY * own_used[v]) for k, v in members.items() if k[1] is None}
    pools = {k: (float(np.median(own_noise[v])), weight[k[0]]) for k, v in members.items() if v}
    priors = [pools.get(k) or pools.get((k[0], None)) or pools.get((None, None)) or (0.0, 0.0) for k in pool_key]
    return priors, own_noise, own_used


def _judge_series(
    values: np.ndarray,
    extra: np.ndarray,
    sigma: float,
    prior: float,
    weight: float,
    settings: DetectionSettings,
    settled: np.ndarray,
) -> tuple[list[Split], Split | None, float]:
    """(changes, the pending step at the newest run or None, the noise they were judged with) of one
    series' corrected values. A pure function of its arguments: `judgements.JudgementStore` reuses its
    result where they are unchanged (giving it another input, or changing what it returns, means bumping
    judgements.JUDGEMENT_VERSION)."""
    refined: list[float] = []

    def refine(cuts: list[int]) -> float:
        own, used = within_noise(values, cuts, None, 0.0)  # the noise inside the proposed segments
        refined.append(shrunk_noise(own, MAD_EFFICIENCY * used, prior, weight) if used else sigma)
        return refined[-1]

    splits = find_changes(values, sigma, settings, extra, refine, settled)
    sigma = refined[-1] if refined else sigma
    splits, pending_step = newest_step(values, sigma, settings, splits, extra)
    return splits, pending_step, sigma


def _trend(
    obs: _Observations,
    panel: _Panel,
    i: int,
    sources: list[SourceRun],
    corrected: np.ndarray,
    sigma: float,
    splits: list[Split],
) -> Trend:
    a, b = panel.bounds[i], panel.bounds[i + 1]
    s = panel.series_ids[i]
    idx = panel.first[a:b]
    runs = panel.run[a:b]
    return Trend(
        key=obs.keys[s],
        case_key=obs.case_keys[s],
        observed_at=[obs.observed[j] for j in idx],
        versions=[obs.version[j] for j in idx],
        sources=[sources[r].label for r in runs],
        environments=[obs.environment[j] for j in idx],
        values=np.exp(panel.x[a:b]),
        corrected=np.exp(corrected[a:b]),
        noise=sigma,
        splits=splits,
        run_index=runs,
        cls=int(panel.series_class[i]),
        group=int(panel.series_group[i]),
        code_refs=[sources[r].code_ref for r in runs],
    )


def _with_causes(found: list[tuple[Trend, Split]], trends: list[Trend]) -> list[Change]:
    """Changes with their cause, sorted by cause, then magnitude, then p-value."""
    changes: list[Change] = []
    undecided: list[tuple[Trend, Split]] = []  # without an environment difference
    for trend, split in found:
        if trend.environments[split.index - 1] != trend.environments[split.index]:
            changes.append(Change(trend, split, "environment"))
        else:
            undecided.append((trend, split))
    changes += host_correction.host_or_unknown(undecided, trends)
    changes.sort(key=lambda c: (CAUSES.index(c.cause), -abs(c.split.log_ratio), c.split.p_value))
    return changes
