"""Group BenchmarkRun records into comparable series across Liger versions.

A *series* is everything that must stay fixed for two latencies to be comparable:
the same kernel, timed pass (mode), provider, workload case, and execution
environment (GPU and software). The key is the four digests a BenchmarkRun
references plus kernel, mode and provider from ``spec.sourceNative``: the
provider must be explicit because different providers can share one
ImplementationRevision digest (torch and torch_compile implementations have
identical specs; only their metadata differs, and metadata is not identity).
For the same reason a provider's role (baseline or not) is read from the
ImplementationRevision *named* for that kernel and provider when present, else
from the loaded catalogue's providers (the source of those labels), and only then
from whatever record holds the digest. Liger identities (externalIds, benchmarks,
titles, case keys) are parsed by `liger.identity`, the module that builds them.

A series holds one metric: latency (runs with ``spec.timing``) or peak memory (runs whose
``measurements[0]`` is ``peak_memory`` in bytes, the memory-run contract, `records/metrics.py`).
``build_series(..., metric=...)`` builds the series of one metric; runs of the other metric
are counted, not skipped. Memory runs share workload, implementation and environment with
the speed runs of their case, so both metrics' series meet on the same sweeps.

Within a series there is one point per Liger version (``metadata.labels.liger_version``),
ordered with ``packaging.version``. When several runs exist for one version (a
re-run, or the same row imported from two sources), the point is the run with the
latest ``observedAt`` -- the newest measurement is taken as the one that describes
that release; ties fall to the larger digest so the choice is deterministic. The
number of runs folded into a point is kept so nothing disappears silently.

`RecordIndex` holds the records a report reads: the few that are not runs whole, each BenchmarkRun as a
compact `RunRow` (made by `run_row` only), so a site of a million runs holds no run manifest; its `read`
passes each record on to regression detection in the same single pass over a stream.
"""

from __future__ import annotations

import copy
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from packaging.version import InvalidVersion, Version

from kernelindex_pipeline.liger import identity
from kernelindex_pipeline.liger.catalogue import Provider, default_catalogue
from kernelindex_pipeline.records.canonical import digest_of
from kernelindex_pipeline.records.metrics import LATENCY, METRIC_UNITS, PEAK_MEMORY, run_metric

MODE_ORDER = ("forward", "backward", "full")
LATENCY_METRIC, PEAK_MEMORY_METRIC = LATENCY, PEAK_MEMORY  # the memory-run contract's names (records.metrics)
CATEGORICAL_AXIS = "model"  # the x axis of categorical sweeps (model_config rows: the model names)
LIGER_PACKAGE = "liger-kernel"


@dataclass(frozen=True, order=True)
class SeriesKey:
    kernel: str
    mode: str
    provider: str
    implementation_digest: str
    workload_digest: str
    protocol_digest: str
    environment_digest: str
    metric: str = LATENCY_METRIC
    # a categorical x value (model_config rows): two models with the same sizes share a WorkloadCase
    # digest (the model name is metadata), yet are two places on the axis
    category: str | None = None


@dataclass(frozen=True)
class Point:
    """The value of one series at one Liger version, in `unit` (ns for latency, bytes for peak memory)."""

    version: str
    median: int | float
    p20: int | float | None
    p80: int | float | None
    observed_at: str
    run_digest: str
    run_name: str
    runs_for_version: int  # >1: several runs existed for this version; the latest observedAt was taken
    unit: str = "ns"

    @property
    def has_band(self) -> bool:
        return self.p20 is not None and self.p80 is not None


@dataclass(frozen=True)
class Workload:
    digest: str
    case_key: str
    axes: dict[str, int]
    dtype: str | None
    scalars: tuple[tuple[str, float], ...] = ()
    category: str | None = None  # a categorical x value (model_config rows: the model name, e.g. llama_3_8b)
    position: int = 0  # where its WorkloadCase came in the input (orders categories the catalogue does not know)

    @property
    def key(self) -> tuple[str, str | None]:
        """What tells two workloads apart: the case digest, and the category of a categorical row."""
        return (self.digest, self.category)

    def context_without(self, axis: str | None) -> tuple:
        """Everything that identifies this workload except the value of `axis`."""
        others = tuple(sorted((k, v) for k, v in self.axes.items() if k != axis))
        return (others, self.dtype, self.scalars)


@dataclass
class Series:
    key: SeriesKey
    kernel: str  # the upstream kernel name, e.g. "rms_norm"
    kernel_title: str
    mode: str
    provider: str
    provider_title: str
    role: str  # "liger", "baseline" or "other"
    gpu: str  # display name, e.g. "NVIDIA A100 SXM4-80GB"
    gpu_slug: str
    workload: Workload
    metric: str = LATENCY_METRIC
    points: list[Point] = field(default_factory=list)  # ascending Liger version
    unversioned_runs: list[str] = field(default_factory=list)  # run digests without a usable liger_version
    # the externalId heads (`identity.external_id_head`) of its runs: the run templates a reader of only some
    # of a catalogue's runs reads to make this series again (`CatalogueStore.runs_by_external_id`)
    heads: tuple[str, ...] = ()

    @property
    def versions(self) -> list[str]:
        return [p.version for p in self.points]

    @property
    def latest(self) -> Point | None:
        return self.points[-1] if self.points else None

    @property
    def case_key(self) -> str:
        return self.workload.case_key

    def label(self) -> str:
        return f"{self.kernel}/{self.mode} · {self.provider} · {self.gpu} · {self.case_key}"


@dataclass
class SeriesSet:
    """All series of a set of manifests, plus what could not be placed in one."""

    series: list[Series]
    runs: int  # BenchmarkRun manifests seen
    skipped_runs: list[tuple[str, str]]  # (run name, why) for runs no series could hold
    metric: str = LATENCY_METRIC  # what every series of this set measures
    other_metric_runs: int = 0  # runs of the other metric (not skipped: build that metric's set for them)

    def by_kernel(self) -> dict[str, list[Series]]:
        grouped: dict[str, list[Series]] = defaultdict(list)
        for s in self.series:
            grouped[s.kernel].append(s)
        return dict(sorted(grouped.items()))

    def __iter__(self) -> Iterator[Series]:
        return iter(self.series)

    def __len__(self) -> int:
        return len(self.series)


class RunRow:
    """What reporting reads of one BenchmarkRun (series, efficiency, the site's tooltips), made by `run_row`.

    A million runs are held as these instead of their manifests (~1.7 KiB each, seven nested dicts): the
    strings many runs repeat (referenced digests, versions, titles, an externalId's run-template head) are
    shared, not copied. Values are as the manifest has them (nothing validated here: readers judge them).
    """

    __slots__ = (
        "digest",
        "name",  # metadata.name (the digest where it has none)
        "title",  # metadata.title, or ""
        "version",  # metadata.labels.liger_version as given (None where absent)
        "implementation",
        "workload",
        "protocol",
        "environment",  # the four referenced digests as given (None where absent)
        "metric",  # records.metrics.run_metric: latency, peak_memory or None
        "value",  # the primary value of `metric` as given (None without a metric)
        "p20",
        "p80",  # the band of `metric` from spec.measurements
        "observed_at",  # spec.observedAt, or ""
        "external_head",  # sourceNative.externalId up to its last "/" (None: no string externalId)
        "external_tail",  # the rest: its timestamp slug (the raw value where it is not a string)
        "benchmark",  # sourceNative.benchmark, or ""
        "source",  # sourceNative.source (None where absent)
    )

    @property
    def external_id(self) -> Any:
        """sourceNative.externalId as given."""
        return self.external_tail if self.external_head is None else self.external_head + self.external_tail


def _share(seen: dict[str, str], value: Any) -> Any:
    """The first copy of an equal string (other values as they are: 1 and True are equal, yet not the same)."""
    return seen.setdefault(value, value) if isinstance(value, str) else value


def run_row(digest: str, manifest: dict[str, Any], shared: dict[Any, Any] | None = None) -> RunRow:
    """The one place a BenchmarkRun becomes its RunRow. `shared`: strings seen before (their first copy is
    kept), so a catalogue's repeated digests, versions and heads are held once."""
    seen = shared if shared is not None else {}
    spec = manifest.get("spec") or {}
    metadata = manifest.get("metadata") or {}
    native = spec.get("sourceNative") or {}
    row = RunRow()
    row.digest = digest
    row.name = metadata.get("name", digest)
    row.title = _share(seen, metadata.get("title") or "")
    row.version = _share(seen, (metadata.get("labels") or {}).get("liger_version"))
    row.implementation = _share(seen, spec.get("implementationDigest"))
    row.workload = _share(seen, spec.get("workloadDigest"))
    row.protocol = _share(seen, spec.get("protocolDigest"))
    row.environment = _share(seen, spec.get("environmentDigest"))
    row.metric = run_metric(spec)
    row.value = _primary(spec, row.metric) if row.metric else None
    row.p20, row.p80 = _band(spec, row.metric) if row.metric else (None, None)
    row.observed_at = spec.get("observedAt") or ""
    external_id = native.get("externalId")
    if isinstance(external_id, str):
        head = identity.external_id_head(external_id)  # one per run template: shared
        row.external_head, row.external_tail = _share(seen, head), external_id[len(head) :]
    else:
        row.external_head, row.external_tail = None, external_id
    row.benchmark = _share(seen, native.get("benchmark") or "")
    row.source = _share(seen, native.get("source"))
    return row


class RecordIndex:
    """The records by kind and digest, so runs can resolve the records they reference: every record that is
    not a BenchmarkRun whole (they are few), each BenchmarkRun as its RunRow (a catalogue has millions)."""

    def __init__(self, manifests: Iterable[dict[str, Any]] = ()):
        self.by_digest: dict[str, dict[str, Any]] = {}  # the records that are not runs, by digest
        self.position: dict[str, int] = {}  # digest of a record that is not a run -> first position in the input
        self.implementations_by_name: dict[str, tuple[str, dict[str, Any]]] = {}
        self.runs: list[RunRow] = []  # every run as given (one given twice is here twice)
        self.run_by_digest: dict[str, RunRow] = {}  # the last given of each digest
        self._distinct = 0  # distinct digests read (runs too): the next record's position
        self._shared: dict[Any, Any] = {}
        for _ in self.read(manifests):
            pass

    def read(self, manifests: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        """Index `manifests`, yielding each the first time its digest is read: a second reader (regression
        detection) takes them in the same single pass, without the index keeping the runs' manifests."""
        for manifest in manifests:
            try:
                kind = manifest["kind"]
                digest = digest_of(manifest)
            except (KeyError, TypeError) as exc:
                raise ValueError(
                    f"not a kernelindex.dev manifest (needs apiVersion, kind, spec): {str(manifest)[:120]!r}"
                ) from exc
            if self._add(kind, digest, manifest):
                yield manifest

    def read_records(self, records: Iterable[tuple[str, dict[str, Any]]]) -> None:
        """Index (digest, manifest) pairs whose digests a catalogue stored (`CatalogueStore.records`): the same
        index as `read` makes, without computing each digest again."""
        for digest, manifest in records:
            self._add(manifest["kind"], digest, manifest)

    def _add(self, kind: str, digest: str, manifest: dict[str, Any]) -> bool:
        """Index one record; whether its digest is read for the first time."""
        if kind == "BenchmarkRun":
            row = run_row(digest, manifest, self._shared)
            first = digest not in self.run_by_digest
            self.run_by_digest[digest] = row
            self.runs.append(row)
        else:
            first = digest not in self.by_digest
            self.by_digest[digest] = manifest
            if first:
                self.position[digest] = self._distinct
            if kind == "ImplementationRevision":
                name = (manifest.get("metadata") or {}).get("name", "")
                self.implementations_by_name[name] = (digest, manifest)
        if first:
            self._distinct += 1
        return first

    def with_runs(self, runs: Iterable[tuple[str, dict[str, Any]]]) -> RecordIndex:
        """An index of this one's records that are not runs (shared, not copied) and of `runs`, (digest,
        manifest) pairs with their digests known (a catalogue's `records`), instead of this one's runs: the
        runs of one publication or one kernel against every other record, read once."""
        index = copy.copy(self)
        index.runs, index.run_by_digest = [], {}
        for digest, manifest in runs:
            row = run_row(digest, manifest, self._shared)
            index.run_by_digest[digest] = row
            index.runs.append(row)
        return index

    def get(self, digest: str | None, kind: str) -> dict[str, Any] | None:
        """The record of `digest` if it is of `kind` (not a BenchmarkRun: see `run`)."""
        manifest = self.by_digest.get(digest or "")
        if manifest is not None and manifest.get("kind") == kind:
            return manifest
        return None

    def run(self, digest: str) -> RunRow | None:
        return self.run_by_digest.get(digest)


def parse_version(text: Any) -> Version | None:
    try:
        return Version(str(text)) if text not in (None, "") else None
    except InvalidVersion:
        return None


def parse_case_key(case_key: str) -> tuple[dict[str, int], str | None]:
    """Axes and dtype of a case key like ``batch8-seq1024-vocab128256-bf16`` (liger.identity's format);
    no axes and no dtype for text that is not one."""
    parsed = identity.parse_case_key(case_key)
    return parsed if parsed is not None else ({}, None)


def _provider_title(implementation: dict[str, Any] | None) -> str | None:
    """The provider title of an implementation's title (`<kernel title> · <provider title>`)."""
    parsed = identity.parse_implementation_title(((implementation or {}).get("metadata") or {}).get("title") or "")
    return parsed[1] if parsed else None


def _primary(spec: dict[str, Any], metric: str) -> Any:
    """The run's primary value: the timing median (latency) or the first measurement (peak memory)."""
    if metric == LATENCY_METRIC:
        return ((spec.get("timing") or {}).get("latencyNs") or {}).get("median")
    return spec["measurements"][0].get("value")


def _band(spec: dict[str, Any], metric: str = LATENCY_METRIC) -> tuple[int | None, int | None]:
    found: dict[str, int] = {}
    for m in spec.get("measurements") or []:
        if m.get("metric") == metric and m.get("unit") == METRIC_UNITS[metric] and m.get("statistic") in ("p20", "p80"):
            found[m["statistic"]] = m["value"]
    return found.get("p20"), found.get("p80")


def provider_table() -> dict[str, Provider]:
    """The providers of the loaded catalogue (full profile: every provider either profile knows), by CSV name."""
    return default_catalogue().providers


def _role(implementation: dict[str, Any] | None, provider: str) -> str:
    """`baseline`, `liger` or `other`, from the implementation named for this provider or the provider table."""
    facts = provider_table().get(provider)
    if implementation is not None:
        labels = (implementation.get("metadata") or {}).get("labels") or {}
        baseline = labels.get("role") == "baseline"
    elif facts is not None:
        baseline = facts.baseline
    else:
        baseline = False
    if baseline:
        return "baseline"
    if facts is not None:
        return "liger" if facts.project == LIGER_PACKAGE else "other"
    packages = {
        (variant.get("install") or {}).get("package")
        for variant in ((implementation or {}).get("spec") or {}).get("buildVariants") or []
    }
    return "liger" if LIGER_PACKAGE in packages or provider.startswith("liger") else "other"


def _gpu_name(environment: dict[str, Any] | None, fallback: str) -> str:
    hardware = ((environment or {}).get("spec") or {}).get("hardware") or {}
    if hardware.get("product"):
        return " ".join(x for x in (hardware["product"], hardware.get("formFactor")) if x)
    return fallback


def _workload(index: RecordIndex, digest: str, case_key: str, category: str | None) -> Workload:
    case = index.get(digest, "WorkloadCase")
    key_axes, dtype = parse_case_key(case_key)
    if case is None:
        return Workload(
            digest=digest,
            case_key=case_key,
            axes=key_axes,
            dtype=dtype,
            category=category,
            position=index.position.get(digest, 0),
        )
    spec = case["spec"]
    axes = {k: int(v) for k, v in (spec.get("axes") or {}).items()}
    scalars = tuple(sorted((k, v.get("value")) for k, v in (spec.get("scalars") or {}).items()))
    return Workload(
        digest=digest,
        case_key=case_key or case["metadata"].get("name", ""),
        axes=axes,
        dtype=dtype,
        scalars=scalars,
        category=category,
        position=index.position.get(digest, 0),
    )


def build_series(manifests: Iterable[dict[str, Any]] | RecordIndex, metric: str = LATENCY_METRIC) -> SeriesSet:
    """Group every BenchmarkRun of `metric` into its series (see the module docstring for the rules)."""
    if metric not in METRIC_UNITS:
        raise ValueError(f"unknown metric {metric!r}; known: {', '.join(METRIC_UNITS)}")
    index = manifests if isinstance(manifests, RecordIndex) else RecordIndex(manifests)
    runs_by_key: dict[SeriesKey, list[RunRow]] = defaultdict(list)
    skipped: list[tuple[str, str]] = []
    other = 0
    keys: dict[tuple, SeriesKey] = {}  # the runs of one template share their key: worked out once
    for run in index.runs:
        name = run.name
        measured = run.metric
        if measured is not None and measured != metric:
            other += 1
            continue
        digests = [run.implementation, run.workload, run.protocol, run.environment]
        value = run.value
        if not all(digests):
            skipped.append((name, "missing one of the four referenced digests"))
        elif measured is None:
            skipped.append((name, "neither spec.timing nor a peak_memory first measurement"))
        elif not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
            skipped.append(
                (
                    name,
                    "no positive spec.timing.latencyNs.median"
                    if metric == LATENCY_METRIC
                    else "no positive peak_memory value in measurements[0]",
                )
            )
        else:
            runs_by_key[_series_key(index, run, digests, metric, keys)].append(run)

    series = [_make_series(index, key, runs) for key, runs in runs_by_key.items()]
    series.sort(key=lambda s: (s.kernel, s.gpu, _mode_rank(s.mode), s.provider, s.case_key, s.key))
    return SeriesSet(series=series, runs=len(index.runs), skipped_runs=skipped, metric=metric, other_metric_runs=other)


def _series_key(
    index: RecordIndex, run: RunRow, digests: list, metric: str, known: dict[tuple, SeriesKey]
) -> SeriesKey:
    """The run's SeriesKey. It depends on the run's externalId only up to its timestamp slug (the head: kernel,
    mode, provider, GPU and case), so runs of one template and digests share one key, kept in `known`."""
    shared = run.external_head is not None and isinstance(run.benchmark, str)  # else: judged alone, as given
    memo = (run.external_head, run.benchmark, *digests) if shared else None
    key = known.get(memo) if shared else None
    if key is None:
        kernel, mode, provider = _run_identity(index, run)
        ident = _external_id(run)
        category = identity.case_category(ident.case_key) if ident else None
        key = SeriesKey(kernel, mode, provider, *digests, metric, category)
        if shared:
            known[memo] = key
    return key


def _mode_rank(mode: str) -> tuple[int, str]:
    return (MODE_ORDER.index(mode) if mode in MODE_ORDER else len(MODE_ORDER), mode)


def _external_id(run: RunRow) -> identity.RunIdentity | None:
    return identity.parse_external_id(run.external_id or "")


def _run_identity(index: RecordIndex, run: RunRow) -> tuple[str, str, str]:
    """(kernel, mode, provider) of a run: sourceNative first, the referenced records as a fallback."""
    ident = _external_id(run)
    benchmark = identity.parse_benchmark(run.benchmark)
    kernel, mode = benchmark[:2] if benchmark else (ident.kernel, ident.mode) if ident else ("", "")
    provider = ident.provider if ident else ""
    if not kernel:
        case = index.get(run.workload, "WorkloadCase")
        operation = index.get(((case or {}).get("spec") or {}).get("operationSpecDigest"), "OperationSpec")
        kernel = ((operation or {}).get("metadata") or {}).get("name") or "unknown-kernel"
    if not mode:
        protocol = index.get(run.protocol, "BenchmarkProtocol")
        parsed = identity.parse_protocol_name(((protocol or {}).get("metadata") or {}).get("name") or "")
        mode = parsed[0] if parsed else "unknown"
    if not provider:
        implementation = index.get(run.implementation, "ImplementationRevision")
        provider = ((implementation or {}).get("metadata") or {}).get("name") or "unknown-provider"
    return kernel, mode, provider


def _implementation_for(index: RecordIndex, key: SeriesKey) -> dict[str, Any] | None:
    """The ImplementationRevision named for this kernel and provider, if it has the run's digest."""
    digest, named = index.implementations_by_name.get(
        identity.implementation_name(key.kernel, key.provider), (None, None)
    )
    return named if digest == key.implementation_digest else None


def _kernel_title(run: RunRow, operation: dict[str, Any] | None, kernel: str) -> str:
    """The run's own title is "<kernel title> · <provider> · <mode>[ · peak memory]"; it is preferred over the
    OperationSpec found by digest because kernels with identical specs (GRPO sequence/token) share one
    OperationSpec digest."""
    parsed = identity.parse_run_title(run.title)
    if parsed is not None:
        return parsed[0]
    return ((operation or {}).get("metadata") or {}).get("title") or kernel


def _make_series(index: RecordIndex, key: SeriesKey, runs: list[RunRow]) -> Series:
    ident = _external_id(runs[0])
    by_digest = index.get(key.implementation_digest, "ImplementationRevision")
    implementation = _implementation_for(index, key)
    workload = _workload(index, key.workload_digest, ident.case_key if ident else "", key.category)
    case = index.get(key.workload_digest, "WorkloadCase")
    operation = index.get(((case or {}).get("spec") or {}).get("operationSpecDigest"), "OperationSpec")
    if operation is None and by_digest is not None:
        operation = index.get(by_digest["spec"].get("operation", {}).get("specDigest"), "OperationSpec")
    environment = index.get(key.environment_digest, "ExecutionEnvironment")
    provider_facts = provider_table().get(key.provider)
    gpu_slug = (ident.gpu_slug if ident else "") or key.environment_digest[7:19]

    series = Series(
        key=key,
        kernel=key.kernel,
        kernel_title=_kernel_title(runs[0], operation, key.kernel),
        mode=key.mode,
        provider=key.provider,
        provider_title=_provider_title(implementation) or (provider_facts.title if provider_facts else key.provider),
        role=_role(implementation, key.provider),
        gpu=_gpu_name(environment, gpu_slug),
        gpu_slug=gpu_slug,
        workload=workload,
        metric=key.metric,
        heads=tuple(sorted({run.external_head for run in runs if run.external_head is not None})),
    )

    by_version: dict[Version, list[RunRow]] = defaultdict(list)
    for run in runs:
        version = parse_version(run.version)
        if version is None:
            series.unversioned_runs.append(run.digest)
        else:
            by_version[version].append(run)
    for version in sorted(by_version):
        candidates = by_version[version]
        run = max(candidates, key=lambda r: (r.observed_at, r.digest))
        series.points.append(
            Point(
                version=str(run.version),
                median=run.value,
                p20=run.p20,
                p80=run.p80,
                observed_at=run.observed_at,
                run_digest=run.digest,
                run_name=run.name,
                runs_for_version=len(candidates),
                unit=METRIC_UNITS[key.metric],
            )
        )
    return series


# --------------------------------------------------------------------------- sweeps


@dataclass
class Sweep:
    """Workloads of one kernel on one environment that differ only in `x_axis`.

    `fixed` are the other axes (held constant), with the dtype and scalars; a
    workload no other workload varies from forms a sweep of one point.
    """

    x_axis: str | None
    fixed: dict[str, int]
    dtype: str | None
    scalars: tuple[tuple[str, float], ...]
    workloads: list[Workload]  # every workload on this line, ordered by x
    owned: set[tuple] = field(default_factory=set)  # Workload.keys first placed here: each is owned by one sweep
    categories: list[str] | None = None  # a categorical x axis: its values in the data's order

    def x_of(self, workload: Workload) -> int:
        """Where `workload` sits on x: its axis value, or its category's position on a categorical axis."""
        if self.categories is not None:
            return self.categories.index(workload.category)
        return workload.axes.get(self.x_axis, 0) if self.x_axis else 0

    def label(self) -> str:
        parts = [f"{k}={v}" for k, v in self.fixed.items()]
        parts += [f"{k}={v:g}" for k, v in self.scalars]
        text = ", ".join(parts)
        if self.dtype:
            text = f"{text} · {self.dtype}" if text else self.dtype
        return text or "single workload"


def find_sweeps(workloads: Iterable[Workload]) -> list[Sweep]:
    """Split workloads into sweeps along one varying axis each.

    Greedy: repeatedly take the largest group of not yet placed workloads that
    agree on everything but one axis (ties: axis name, then context, for
    determinism), until no group of two or more different values remains; the
    rest are single-point sweeps. Upstream scripts sweep one `x_name` per
    config, so this recovers the swept axis from the case axes alone.

    A workload where two sweeps cross (the default config of both) is *owned*
    by the first sweep that took it but drawn on every line it belongs to.

    Workloads with a category (model_config rows) form categorical sweeps instead, see
    `_categorical_sweeps`.
    """
    everything = [w for w in workloads if w.category is None]
    categorical = _categorical_sweeps([w for w in workloads if w.category is not None])
    remaining = {w.key: w for w in everything}
    axis_names = sorted({a for w in remaining.values() for a in w.axes})
    sweeps: list[Sweep] = []
    while True:
        best: tuple | None = None
        for axis in axis_names:
            groups: dict[tuple, list[Workload]] = defaultdict(list)
            for w in remaining.values():
                if axis in w.axes:
                    groups[w.context_without(axis)].append(w)
            for context, members in groups.items():
                distinct = len({w.axes[axis] for w in members})
                if distinct < 2:
                    continue
                rank = (-distinct, -len(members), axis, repr(context))
                if best is None or rank < best[0]:
                    best = (rank, axis, context, members)
        if best is None:
            break
        _, axis, context, members = best
        others, dtype, scalars = context
        on_line = [w for w in everything if axis in w.axes and w.context_without(axis) == context]
        sweeps.append(
            Sweep(
                x_axis=axis,
                fixed=dict(others),
                dtype=dtype,
                scalars=scalars,
                workloads=sorted(on_line, key=lambda w: (w.axes[axis], w.digest)),
                owned={w.key for w in members},
            )
        )
        for w in members:
            del remaining[w.key]
    for w in sorted(remaining.values(), key=lambda w: (w.case_key, w.digest)):
        x_axis = next(iter(sorted(w.axes)), None)
        others, dtype, scalars = w.context_without(x_axis)
        sweeps.append(
            Sweep(x_axis=x_axis, fixed=dict(others), dtype=dtype, scalars=scalars, workloads=[w], owned={w.key})
        )
    sweeps += categorical
    sweeps.sort(key=lambda s: (s.dtype or "", s.x_axis or "", -len(s.workloads), repr(sorted(s.fixed.items()))))
    return sweeps


def _categorical_sweeps(workloads: list[Workload]) -> list[Sweep]:
    """One line per group of categorical workloads with the same dtype, scalars and axis names.

    The categories' own dimensions (a model's hidden size, vocabulary, ...) vary along the line; an
    axis that also varies *within* one category (two batch sizes measured for the same model) splits
    the group into one line per value. Categories are in the order of the catalogue's model table (the
    scripts' MODEL_REGISTRY order, which is the order they sweep and write the rows), then categories the
    catalogue does not know in the order their workloads came in the input.
    """
    known = {name: rank for rank, name in enumerate(default_catalogue().models)}
    groups: dict[tuple, list[Workload]] = defaultdict(list)
    for w in workloads:
        groups[(w.dtype or "", w.scalars, tuple(sorted(w.axes)))].append(w)
    sweeps = []
    for (dtype, scalars, names), members in sorted(groups.items(), key=lambda kv: repr(kv[0])):
        by_category: dict[str | None, list[Workload]] = defaultdict(list)
        for w in members:
            by_category[w.category].append(w)
        splitting = [a for a in names if any(len({w.axes[a] for w in ws}) > 1 for ws in by_category.values())]
        lines: dict[tuple, list[Workload]] = defaultdict(list)
        for w in members:
            lines[tuple(w.axes[a] for a in splitting)].append(w)
        for _, line in sorted(lines.items()):
            line.sort(key=lambda w: (known.get(w.category, len(known)), w.position, w.digest, w.category))
            fixed = {a: line[0].axes[a] for a in names if len({w.axes[a] for w in line}) == 1}
            sweeps.append(
                Sweep(
                    x_axis=CATEGORICAL_AXIS,
                    fixed=fixed,
                    dtype=dtype or None,
                    scalars=scalars,
                    workloads=line,
                    owned={w.key for w in line},
                    categories=list(dict.fromkeys(w.category for w in line)),
                )
            )
    return sweeps
