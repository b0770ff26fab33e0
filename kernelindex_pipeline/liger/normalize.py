"""Rows -> kernelindex.dev/v1alpha1 records: which row makes what, in the documented order.

One `Normalizer` holds an import's state: the shared objects made so far (one per kernel, case,
implementation, protocol, environment, project), the run ids seen, and the report. Rows arrive in
chunks (`liger/csv.py`); each row is decided in this order:

  filter (--gpu / --liger-version) -> metric -> uncurated kernel -> mode -> unknown provider
  -> config binding (unknown config) -> unknown GPU -> median / timestamp / band issue
  -> duplicate run id -> BenchmarkRun.

Profile `reference` (docs/reference/record-contract.md): a `memory` row skips as a memory row, and an
unknown mode is folded into unknown config. Profile `full`: the catalogue's memory metric makes peak-memory runs, and
an unknown mode is its own reason (`SkipReason`). In both, only exactly `speed` (and `memory`) are
known metrics: any other (`speed ` with a space, ``) skips as an unknown metric, counted by its
name, and a repeated header line or a row of nothing but empty cells is an issue.

Bad data (docs/reference/bad-input.md): run identity is decided on valid rows only, so an invalid
copy of a row (bad timestamp, NaN median) is an issue and never makes the valid copy a duplicate.
A median must round to a value > 0 (ns or bytes); a finite p20/p80 band must be ordered as published,
0 < p20 <= median <= p80, or the run is published without it and listed under `droppedBands`.

Full profile and parity: a row the reference binds too (its kernel, rule, provider, mode and GPU are
the reference's) is a reference row; its shared objects and their names win over those an extension
row made first with the same digest (`Normalizer._add`), so the reference objects are byte-identical.

Speed: everything a row shares with other rows (its binding, case, implementation, environment,
the constant text of its run's canonical JSON) is computed once per distinct `RowKey` and cached, so
a row costs a dict lookup plus its own numbers; the run itself is built by the fast path in
`liger/runs.py`, the shared objects by `liger/builders.py`, every name and id by `liger/identity.py`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from kernelindex_pipeline.imports.coverage import ISSUE_FATE, RUN_FATE
from kernelindex_pipeline.imports.result import Issue
from kernelindex_pipeline.liger import identity
from kernelindex_pipeline.liger.builders import (
    MeasuredContext,
    RowProblem,
    benchmark_protocol,
    bind,
    cell_number,
    execution_environment,
    implementation_revision,
    memory_protocol,
    operation_spec,
    software_project,
    sweep_protocol,
    tp_protocol,
    workload_case,
)
from kernelindex_pipeline.liger.catalogue import Catalogue, Kernel, Provider
from kernelindex_pipeline.liger.measured_rows import TP_KERNEL, split_provider
from kernelindex_pipeline.liger.report import ImportReport, SkipReason
from kernelindex_pipeline.liger.runs import (
    LATENCY,
    PEAK_MEMORY,
    RunItem,
    RunRecord,
    RunTemplate,
    build_run,
    json_text,
    make_template,
    mib_to_bytes,
    ns_of_ms,
)
from kernelindex_pipeline.records.canonical import digest_of
from kernelindex_pipeline.records.jsnumber import JSParseError, js_json_parse
from kernelindex_pipeline.records.names import kebab

if TYPE_CHECKING:  # csv.py imports pandas, which run-building worker processes do not need
    from kernelindex_pipeline.liger.csv import Chunk

__all__ = ["InvalidRecord", "MeasuredContext", "Normalizer", "RowKey", "RunRecord", "SkipReason", "schema_validator"]

_TIMESTAMP = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2}) ([0-9]{2}):([0-9]{2}):([0-9]{2})\Z")  # ASCII digits only
_DAYS = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
# Per-import caches (row key -> fate, timestamp -> parsed) start over beyond this many entries, so
# an input of all-distinct rows cannot grow them without bound.
_CACHE_LIMIT = 200_000

# The record contract's step 1 (docs/reference/record-contract.md §4) counts every non-speed row as a memory
# row; only Liger's memory metric is one here, anything else is an unknown metric (the records are the same, the report says what the rows were).
REFERENCE_MEMORY_METRIC = "memory"

# Upstream column positions (liger/csv.py UPSTREAM_COLUMNS) of the cells a row decision reads.
COL_KERNEL, COL_PROVIDER, COL_MODE, COL_METRIC, COL_UNIT, COL_X_NAME, COL_X_LABEL, COL_X_VALUE = range(8)
COL_Y50, COL_Y20, COL_Y80, COL_CONFIG, COL_GPU, COL_TIMESTAMP, COL_VERSION = range(8, 15)


class RowKey(NamedTuple):
    """The cells every row of one run template shares (the cache key of a row's fate)."""

    metric: str
    kernel: str
    mode: str
    provider: str
    x_name: str
    x_value: str
    config: str
    gpu: str


class Skip(NamedTuple):
    reason: SkipReason
    detail: str  # the name the report counts it under (kernel, provider, metric, mode, GPU)


class RowIssue(NamedTuple):
    problem: str


class InvalidRecord(ValueError):
    """A manifest the library built does not validate: a bug or a catalogue fact the schema refuses."""


def schema_validator() -> Callable[[dict[str, Any]], None]:
    """A function that raises InvalidRecord naming record and field(s) when a manifest is invalid."""
    from kernelindex_pipeline.records.schema import validate_manifest

    def validate(manifest: dict[str, Any]) -> None:
        problems = validate_manifest(manifest)
        if problems:
            raise InvalidRecord("; ".join(str(p) for p in problems))

    return validate


def _no_validation(manifest: dict[str, Any]) -> None:
    return None


def _structural_problem(kernel: str, metric: str, cells: tuple[str, ...]) -> str | None:
    """A row that is no measurement at all: the header line again, or nothing but empty cells."""
    if kernel == "kernel_name" and metric == "metric_name":
        return "a repeated header line, not a data row"
    if not any(cells):
        return "an empty row (every cell is empty)"
    return None


def parse_timestamp(text: str) -> str | None:
    """`YYYY-MM-DD HH:MM:SS` (UTC) -> `YYYY-MM-DDTHH:MM:SS.000Z`; None when it is not a real instant."""
    m = _TIMESTAMP.match(text)
    if not m:
        return None
    year, month, day, hour, minute, second = (int(g) for g in m.groups())
    if not (1 <= month <= 12 and 1 <= day <= _DAYS[month - 1] and hour < 24 and minute < 60 and second < 60):
        return None
    if month == 2 and day == 29 and not (year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)):
        return None
    return f"{text[:10]}T{text[11:]}.000Z"


class _RowProblem(Exception):
    """A row that is no valid measurement: the message is its issue in the report."""


def _checked_observation(y50: str, y50_value: float, ts: str, observed_at: str | None, memory: bool) -> int | float:
    """The row's median in the record's unit (ns of a latency, bytes of a peak memory), once the median
    is a finite number > 0 and the timestamp a real instant; _RowProblem naming the first that is not."""
    if not (y50_value > 0 and y50_value != math.inf):  # NaN fails the comparison too
        raise _RowProblem(f"median y_value_50 {y50!r} is not a finite number > 0")
    if observed_at is None:
        raise _RowProblem(f"timestamp {ts!r} is not a UTC instant 'YYYY-MM-DD HH:MM:SS'")
    if memory:
        median = mib_to_bytes(y50_value)
        if type(median) is not int and math.isinf(median):
            raise _RowProblem(f"median y_value_50 {y50!r} MB overflows a number in bytes")
        return median
    median = ns_of_ms(y50_value)
    if type(median) is not int:
        raise _RowProblem(f"median y_value_50 {y50!r} ms is beyond 2^53 - 1 ns")
    if median == 0:
        raise _RowProblem(f"median y_value_50 {y50!r} ms rounds to 0 ns (it must be > 0)")
    return median


class Normalizer:
    """One import's state. Feed chunks with `add_chunk`, then call `finish` and read `objects`, `report`."""

    def __init__(
        self,
        catalogue: Catalogue,
        *,
        gpu: str | None = None,
        liger_version: str | None = None,
        measured: MeasuredContext | None = None,
        on_run: Callable[[RunRecord], None] | None = None,
        validate: Callable[[dict[str, Any]], None] | None = None,
        builder: Any = None,
        code_ref: str | None = None,
    ):
        self.catalogue = catalogue
        self.code_ref = code_ref  # the Liger commit the rows measured, when the source names it (a label)
        self.gpu_filter = gpu
        self.version_filter = liger_version
        self.measured = measured
        self.on_run = on_run
        self.validate = validate or _no_validation
        self.builder = builder  # builds runs elsewhere (worker processes) when set
        self.report = ImportReport(profile=catalogue.profile)
        self.objects: dict[str, dict[str, Any]] = {}  # digest -> manifest (shared kinds, first name wins)
        self.names_by_digest: dict[str, list[str]] = {}
        self.runs: dict[str, dict[str, Any]] = {}  # digest -> run manifest, when on_run is None
        self._created_by_kind: dict[str, int] = {}
        # shared objects made so far: key -> (digest, made by a reference row)
        self._operation: dict[str, tuple[str, bool]] = {}  # kernel -> OperationSpec
        self._case: dict[tuple[str, str], tuple[str, bool]] = {}
        self._implementation: dict[tuple[str, str, str | None], tuple[str, bool]] = {}
        self._protocol: dict[tuple[str, bool], tuple[str, bool]] = {}
        self._environment: dict[str, tuple[str, bool]] = {}
        self._project: dict[str, tuple[str, bool]] = {}
        self._primary_names: dict[str, int] = {}  # digest -> how many of its names reference rows gave
        self._outcomes: dict[RowKey, RunTemplate | Skip | RowIssue] = {}
        self._timestamps: dict[str, tuple[str | None, str, str]] = {}
        self._seen_runs: set[str] = set()
        self._gpu_slugs: dict[str, str] = {}
        self._versions: dict[str, str] = {}  # liger_version -> its JSON text
        self._template_count = 0

    # -- shared objects ----------------------------------------------------------------------------

    def _add(self, manifest: dict[str, Any], primary: bool = True) -> str:
        """Keep a shared object; `primary`: made by a row the reference profile binds too.

        Objects are kept by digest and named by the first row that makes them, with one rule for the
        full profile: a reference row's object and name win over those of any extension row (which may
        come first in the file), so every reference object is exactly the reference profile's. The
        names of a digest list the reference rows' names first.
        """
        self.validate(manifest)
        digest = digest_of(manifest)
        name = manifest["metadata"]["name"]
        names = self.names_by_digest.setdefault(digest, [])
        primaries = self._primary_names.get(digest, 0)
        if not names or (primary and primaries == 0):
            self.objects[digest] = manifest
        if name not in names:
            names.insert(primaries, name) if primary else names.append(name)
            if primary:
                self._primary_names[digest] = primaries + 1
        elif primary and names.index(name) >= primaries:  # named first by an extension row
            names.remove(name)
            names.insert(primaries, name)
            self._primary_names[digest] = primaries + 1
        return digest

    def _shared(self, cache: dict, key: Any, primary: bool, make: Callable[[], dict[str, Any]]) -> str:
        """The digest of the shared object for `key`, made once (again for the first reference row)."""
        hit = cache.get(key)
        if hit is not None and (hit[1] or not primary):
            return hit[0]
        manifest = make()
        if hit is None:  # objects the importer created, by kind (a remake for a reference row is not one)
            self._created_by_kind[manifest["kind"]] = self._created_by_kind.get(manifest["kind"], 0) + 1
        digest = self._add(manifest, primary)
        cache[key] = (digest, primary)
        return digest

    def _operation_digest(self, kernel: Kernel, primary: bool) -> str:
        if kernel.kernel not in self._operation:
            fam = self.report.operations_by_family
            fam[kernel.family] = fam.get(kernel.family, 0) + 1
        return self._shared(self._operation, kernel.kernel, primary, lambda: operation_spec(kernel))

    # -- rows ----------------------------------------------------------------------------------------

    def add_chunk(self, chunk: Chunk) -> None:
        report = self.report
        coverage = report.coverage
        outcomes = self._outcomes
        gpu_filter, version_filter = self.gpu_filter, self.version_filter
        speed_metric, memory_metric = self.catalogue.metric_name, self.catalogue.memory_metric
        c = chunk.columns
        bad = chunk.bad
        start = chunk.start
        for j, (kernel, provider, mode, metric, x_name, x_value, y50, y20, y80, config, gpu, ts, version) in enumerate(
            zip(
                c[COL_KERNEL],
                c[COL_PROVIDER],
                c[COL_MODE],
                c[COL_METRIC],
                c[COL_X_NAME],
                c[COL_X_VALUE],
                c[COL_Y50],
                c[COL_Y20],
                c[COL_Y80],
                c[COL_CONFIG],
                c[COL_GPU],
                c[COL_TIMESTAMP],
                c[COL_VERSION],
                strict=False,
            )
        ):
            report.rows_read += 1
            if bad and j in bad:
                report.issues.append(Issue(start + j, bad[j]))
                continue
            if metric != speed_metric and metric != memory_metric:  # the rare path: no cost for data rows
                problem = _structural_problem(
                    kernel,
                    metric,
                    (kernel, provider, mode, metric, x_name, x_value, y50, y20, y80, config, gpu, ts, version),
                )
                if problem:
                    report.issues.append(Issue(start + j, problem))
                    continue
            if gpu_filter is not None and self._gpu_slug(gpu) != gpu_filter:
                report.filtered_out += 1
                continue
            if version_filter is not None and version != version_filter:
                report.filtered_out += 1
                continue
            key = RowKey(metric, kernel, mode, provider, x_name, x_value, config, gpu)
            outcome = outcomes.get(key)
            if outcome is None:
                if len(outcomes) >= _CACHE_LIMIT:
                    outcomes.clear()  # decisions are deterministic: clearing costs time, never changes results
                outcome = outcomes[key] = self._decide(key)
            if metric == speed_metric:
                report.speed_rows += 1
            elif metric == memory_metric:
                report.memory_rows_seen += 1
            if type(outcome) is RunTemplate:
                fate = self._run(start + j, outcome, y50, y20, y80, ts, version)
            elif type(outcome) is Skip:
                fate = outcome.reason
                report.count_skip(outcome.reason, outcome.detail)
            else:
                fate = ISSUE_FATE
                report.issues.append(Issue(start + j, outcome.problem))
            cell = (kernel, provider, mode, gpu, version, metric, fate)
            coverage[cell] = coverage.get(cell, 0) + 1

    def _gpu_slug(self, gpu: str) -> str:
        slug = self._gpu_slugs.get(gpu)
        if slug is None:
            slug = self._gpu_slugs[gpu] = identity.gpu_slug(gpu)
        return slug

    def _decide(self, key: RowKey) -> RunTemplate | Skip | RowIssue:
        """The fate shared by every row with this key."""
        cat = self.catalogue
        memory = cat.memory_metric is not None and key.metric == cat.memory_metric
        if key.metric != cat.metric_name and not memory:
            if cat.memory_metric is None and key.metric == REFERENCE_MEMORY_METRIC:
                return Skip(SkipReason.MEMORY_ROW, key.metric)
            return Skip(SkipReason.UNKNOWN_METRIC, key.metric)
        kernel = cat.kernels.get(key.kernel)
        if kernel is None:
            return Skip(SkipReason.UNCURATED_KERNEL, key.kernel)
        if key.mode not in (cat.memory_modes if memory else cat.modes):
            if cat.profile == "reference":
                return Skip(SkipReason.UNKNOWN_CONFIG, key.kernel)  # no mode counter (CATALOGUE.md step 3)
            return Skip(SkipReason.UNKNOWN_MODE, key.mode)
        provider, ab, backend = self._provider(key)
        if provider is None:
            return Skip(SkipReason.UNKNOWN_PROVIDER, key.provider)
        try:
            binding = bind(kernel, key.x_name, key.x_value, key.config, cat.models)
        except RowProblem as exc:
            return RowIssue(str(exc))
        if binding is None:
            return Skip(SkipReason.UNKNOWN_CONFIG, key.kernel)
        ref = cat.reference
        primary = ref is None or (
            not memory
            and ab is None
            and backend is None
            and ref.binds(kernel.kernel, binding.rule_index, provider.name, key.mode)
        )
        operation_digest = self._operation_digest(kernel, primary)
        hardware = cat.hardware.get(key.gpu)
        if hardware is None:
            return Skip(SkipReason.UNKNOWN_GPU, key.gpu)
        primary = primary and (ref is None or key.gpu in ref.hardware)
        raw_samples, labels = None, None
        if self.measured is not None:
            from kernelindex_pipeline.liger.sample_statistics import row_key

            text_key = row_key(
                key.kernel, key.provider, key.mode, key.metric, key.x_name, key.x_value, key.config, key.gpu
            )
            raw_samples = None if memory else self.measured.raw_samples.get(text_key)
            labels = self.measured.labels_of_run(text_key) or None
        template = self._template(
            kernel,
            provider,
            (ab, backend),
            key.mode,
            key.gpu,
            hardware,
            binding,
            operation_digest,
            memory,
            primary,
            raw_samples,
        )
        template.raw_samples, template.extra_labels = raw_samples, labels
        return template

    def _provider(self, key: RowKey) -> tuple[Provider | None, tuple[str, str] | None, str | None]:
        """The row's provider, and (row provider, commit) when it is one side of an A/B comparison.

        An A/B row (full profile) has the catalogue's A/B keys in its config and a provider named
        `<provider>-base` or `<provider>-pr` (benchmark_fused_scaled_cross_entropy_sm90.py); its
        commit is the config's base_sha or pr_sha.

        A measured row whose Liger ops the dispatcher resolved (Liger >= 0.8.3) has the provider cell
        `<provider>@<backend>` (sweep/rounds.py): the provider with that backend, an
        implementation of its own (never the reference's). Third item: the backend, or None.
        """
        cat = self.catalogue
        provider = cat.providers.get(key.provider)
        if provider is not None:
            return provider, None, None
        if self.measured is not None:
            stem, backend = split_provider(key.provider)
            if backend is not None and stem in cat.providers and not cat.providers[stem].baseline:
                return cat.providers[stem], None, backend
        if not cat.ab_config_keys:
            return None, None, None
        stem, sep, side = key.provider.rpartition("-")
        if not sep or side not in ("base", "pr") or stem not in cat.providers:
            return None, None, None
        try:
            config = js_json_parse(key.config)
        except JSParseError:
            return None, None, None
        commit = config.get(f"{side}_sha") if isinstance(config, dict) else None
        if (
            f"{side}_sha" not in cat.ab_config_keys
            or not isinstance(commit, str)
            or not re.fullmatch(r"[0-9a-f]{7,40}", commit)
        ):
            return None, None, None
        return cat.providers[stem], (key.provider, commit), None

    def _revision_of(self, provider, ab) -> dict[str, str] | None:
        """The exact revision a sweep measured of this provider's project (None for history rows and A/B rows)."""
        if self.measured is None or ab:
            return None
        return self.measured.project_revision(self.catalogue.projects[provider.project].repository, provider.project)

    def _template(
        self,
        kernel,
        provider,
        variant,
        mode,
        gpu,
        hardware,
        binding,
        operation_digest,
        memory,
        primary,
        raw_samples=None,
    ) -> RunTemplate:
        cat = self.catalogue
        ab, backend = variant
        self._shared(self._project, provider.project, primary, lambda: software_project(cat, provider.project))
        provider_name = ab[0] if ab else provider.name + (f"@{backend}" if backend else "")
        impl = self._shared(
            self._implementation,
            (kernel.kernel, provider_name, ab[1] if ab else None),
            primary,
            lambda: implementation_revision(
                kernel, provider, operation_digest, ab, self._revision_of(provider, ab), backend
            ),
        )
        # one case per kernel x caseKey: the first row's scalars decide it (the first reference row's)
        case = self._shared(
            self._case,
            (kernel.kernel, binding.case_key),
            primary,
            lambda: workload_case(kernel, binding, operation_digest),
        )
        protocol = self._protocol_digest(kernel, mode, memory, primary, raw_samples)
        environment = self._shared(
            self._environment, gpu, primary, lambda: execution_environment(gpu, hardware, self.measured)
        )
        logs = None
        if self.measured is not None:
            logs = self.measured.logs_by_kernel.get(kernel.kernel)
            logs = {"uri": logs["uri"], "digest": logs["digest"]} if logs else None
        self._template_count += 1
        return make_template(
            self._template_count,
            name_head=identity.run_name_head(kernel.kernel, mode, provider_name, gpu, binding.case_key, memory),
            title=identity.run_title(kernel.title, provider_name, mode, memory),
            benchmark=identity.benchmark(kernel.kernel, mode, memory),
            external_prefix=identity.external_id_prefix(
                kernel.kernel, mode, provider_name, self._gpu_slug(gpu), binding.case_key, memory
            ),
            digests={
                "implementationDigest": impl,
                "workloadDigest": case,
                "protocolDigest": protocol,
                "environmentDigest": environment,
            },
            evidence_logs=logs,
            metric=PEAK_MEMORY if memory else LATENCY,
            code_ref=self.code_ref,
        )

    def _protocol_digest(
        self, kernel: Kernel, mode: str, memory: bool, primary: bool, raw_samples: dict[str, Any] | None
    ) -> str:
        """The run's protocol: Liger's do_bench pass (history), or for measured runs with samples the
        sweep's (do_bench warmup/rep, rounds), or the TP script's own (sweep/tp.py)."""
        phrases = self.catalogue.mode_phrases
        if self.measured is not None and kernel.kernel == TP_KERNEL:
            return self._shared(self._protocol, ("tp", False), primary, tp_protocol)
        if raw_samples is not None and "rounds" in raw_samples:
            warmup, rep = (
                (raw_samples.get("doBench") or {}).get("warmup"),
                (raw_samples.get("doBench") or {}).get("rep"),
            )
            key = (mode, memory, warmup, rep, raw_samples["rounds"])
            return self._shared(
                self._protocol, key, primary, lambda: sweep_protocol(mode, phrases, warmup, rep, raw_samples["rounds"])
            )
        return self._shared(
            self._protocol,
            (mode, memory),
            primary,
            lambda: memory_protocol(mode, phrases) if memory else benchmark_protocol(mode, phrases),
        )

    def _run(self, row: int, t: RunTemplate, y50: str, y20: str, y80: str, ts: str, version: str) -> str | SkipReason:
        """Make the row's run (or count why not); returns its fate for the coverage table."""
        report = self.report
        observed_at, ts_slug, ts_name = self._timestamp_parts(ts)
        external_id = t.external_prefix + ts_slug
        # Every validity check comes before the run id is taken: an invalid copy of a row never makes
        # the valid one a duplicate, whichever comes first.
        memory = t.metric == PEAK_MEMORY
        y50_value = cell_number(y50)
        try:
            median = _checked_observation(y50, y50_value, ts, observed_at, memory)
            version_json = self._version_json(version)
            y20_value, y80_value = self._band(row, y20, y50, y80, median, memory)
        except _RowProblem as problem:
            report.issues.append(Issue(row, str(problem)))
            return ISSUE_FATE
        if external_id in self._seen_runs:
            report.duplicate_rows += 1
            return SkipReason.DUPLICATE
        self._seen_runs.add(external_id)
        report.runs += 1
        if memory:
            report.memory_runs += 1
        self._keep(
            RunItem(
                t,
                y50_value,
                median,
                y20_value,
                y80_value,
                observed_at,
                ts_slug,
                ts_name,
                external_id,
                version,
                version_json,
            )
        )
        return RUN_FATE

    def _timestamp_parts(self, ts: str) -> tuple[str | None, str, str]:
        """The timestamp cell as (observedAt or None when invalid, its slug, its run-name part), cached."""
        parsed = self._timestamps.get(ts)
        if parsed is None:
            if len(self._timestamps) >= _CACHE_LIMIT:
                self._timestamps.clear()
            parsed = self._timestamps[ts] = (parse_timestamp(ts), kebab(ts), identity.timestamp_name_part(ts))
        return parsed

    def _version_json(self, version: str) -> str:
        """The liger_version cell as a JSON string (cached); _RowProblem when it is over the label limit."""
        version_json = self._versions.get(version)
        if version_json is None:
            if len(version) > 200:
                raise _RowProblem("liger_version is longer than 200 characters (label limit)")
            version_json = self._versions[version] = json_text(version)
        return version_json

    def _band(self, row: int, y20: str, y50: str, y80: str, median: float, memory: bool) -> tuple[float, float]:
        """The p20/p80 band as published (NaN, NaN: none): _RowProblem when a bound overflows the record's
        unit; a band not ordered around the median is dropped with a warning."""
        y20_value, y80_value = cell_number(y20), cell_number(y80)
        if not (y20_value - y20_value == 0 and y80_value - y80_value == 0):  # not both finite: no band
            return y20_value, y80_value
        if memory:
            low, high = mib_to_bytes(y20_value), mib_to_bytes(y80_value)
            overflow = math.isinf(low) or math.isinf(high)
        else:
            low, high = ns_of_ms(y20_value), ns_of_ms(y80_value)
            overflow = type(low) is not int or type(high) is not int
        if overflow:
            unit = "MB overflow a number in bytes" if memory else "ms overflow a number in ns (beyond 2^53 - 1)"
            raise _RowProblem(f"y_value_20 {y20!r} / y_value_80 {y80!r} {unit}")
        if not 0 < low <= median <= high:  # as published (rounded); the median itself is fine
            self.report.dropped_bands.append(
                Issue(
                    row,
                    (
                        f"p20 {y20!r} / median {y50!r} / p80 {y80!r} are not ordered 0 < p20 <= median <= p80: "
                        "published without the band"
                    ),
                )
            )
            return math.nan, math.nan  # a band that is absent, as for non-finite quantiles
        return y20_value, y80_value

    def _keep(self, item: RunItem) -> None:
        """Hand the run to the builder, or build its record and pass it on (on_run) or keep it."""
        if self.builder is not None:
            self.builder.add(item)
            return
        record = build_run(item, self.validate, with_line=self.on_run is not None)
        if self.on_run is not None:
            self.on_run(record)
        else:
            self.runs[record.digest] = record.manifest

    # -- results -----------------------------------------------------------------------------------

    def finish(self) -> None:
        """Fill the report's record counts once all rows are in."""
        records: dict[str, int] = {}
        for manifest in self.objects.values():
            records[manifest["kind"]] = records.get(manifest["kind"], 0) + 1
        records["BenchmarkRun"] = self.report.runs
        self.report.records = records
        by_name = dict(self._created_by_kind)
        by_name["BenchmarkRun"] = self.report.runs
        self.report.objects_by_name = by_name
        self.report.shared_digests = {d: names for d, names in self.names_by_digest.items() if len(names) > 1}
