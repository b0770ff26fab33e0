"""Rows -> kernelindex.dev/v1alpha1 records, exactly as RECORDS.md section 4 says.

One `Normalizer` holds an import's state: the shared objects made so far (one per kernel, case,
implementation, protocol, environment, project), the run ids seen, and the report. Rows arrive in
chunks (`liger/csv.py`); each row is decided in the documented order:

  filter (--gpu / --liger-version) -> memory row -> uncurated kernel -> mode (folded into unknown
  config) -> unknown provider -> config binding (unknown config) -> unknown GPU -> duplicate run id
  -> median / timestamp issue -> BenchmarkRun.

Speed: everything a row shares with other rows (its binding, case, implementation, environment,
the constant text of its run's canonical JSON) is computed once per distinct
(metric, kernel, mode, provider, x_name, x_value, config, gpu) and cached, so a row costs a dict
lookup plus its own numbers. A run's canonical JSON is written from a template whose variable
parts are numbers and [a-z0-9-] text; tests prove it equal to `records.canonical.canonical_bytes`.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kernelindex_pipeline.liger.catalogue import (
    DTYPE_TOKENS,
    Catalogue,
    ExpressionUndefined,
    Kernel,
    Provider,
    Rule,
)
from kernelindex_pipeline.liger.jsnumber import (
    MAX_SAFE_INTEGER,
    JSParseError,
    is_positive_integer,
    js_json_parse,
    js_number,
    js_number_text,
    ms_to_ns,
    whole,
)
from kernelindex_pipeline.liger.report import ImportReport, Issue
from kernelindex_pipeline.liger.samples import row_key, with_raw_samples
from kernelindex_pipeline.records.canonical import API_VERSION, canonical_bytes, digest_of
from kernelindex_pipeline.records.names import NAME_LIMIT, kebab

if TYPE_CHECKING:  # csv.py imports pandas, which run-building worker processes do not need
    from kernelindex_pipeline.liger.csv import Chunk

_NAME_RUNS = re.compile(r"[^a-z0-9]+")  # kebab's substitution, applied in pieces for run names

LIGER_REPOSITORY = "https://github.com/linkedin/Liger-Kernel"
RUN_SOURCE = "liger-kernel-bench"
MODE_PHRASES = {
    "forward": "the module forward pass",
    "backward": "the backward pass of the module output given a random upstream gradient",
    "full": "the forward pass plus the backward pass",
}
_TIMESTAMP = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2}) ([0-9]{2}):([0-9]{2}):([0-9]{2})\Z")  # ASCII digits only
_DAYS = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


@dataclass(frozen=True)
class MeasuredContext:
    """Facts about rows the pipeline measured itself (not the upstream history).

    `software` / `settings` go into ExecutionEnvironment.spec (so the environment, and every run on it,
    gets a digest of its own; its name carries a short digest suffix), and `logs_by_kernel[kernel]`
    (`{"uri", "digest"}`) becomes BenchmarkRun.spec.evidence.logs for that CSV kernel_name.
    `raw_samples[liger.samples.row_key(...)]` is the samples entry of that row's do_bench call; its run
    goes through liger.samples.with_raw_samples (timing statistics, rawSamples artifact).
    """

    software: dict[str, Any]
    settings: dict[str, Any] | None = None
    logs_by_kernel: dict[str, dict[str, str]] = field(default_factory=dict)
    raw_samples: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class Binding:
    """A row's config understood by one rule of its kernel."""

    axes: tuple[tuple[str, int], ...]  # rule order
    values: dict[str, int]  # axes and derived axes, for shapes
    dtype: str
    scalars: tuple[tuple[str, int | float], ...]
    case_key: str


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


class RowProblem(Exception):
    """The row's values cannot make schema-valid records (an issue, not a skip)."""


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


# Per-import caches (row key -> fate, timestamp -> parsed) start over beyond this many entries, so
# an input of all-distinct rows cannot grow them without bound.
_CACHE_LIMIT = 200_000
_FAST_NUMBER_EDGE = frozenset("0123456789.")


def cell_number(text: str) -> float:
    """`Number(text)`, with a fast path for plain decimal text (where Python's float() agrees)."""
    if text and text[0] in _FAST_NUMBER_EDGE and text[-1] in _FAST_NUMBER_EDGE and text.isascii() and "_" not in text:
        try:
            return float(text)
        except ValueError:
            pass
    return js_number(text)


def bind(kernel: Kernel, x_name: str, x_value: str, config_text: str) -> Binding | None:
    """The first rule of `kernel` that understands the row, or None (unknown config).

    Raises RowProblem when a rule matches but its values cannot be valid records (beyond 2**53,
    non-finite scalars, a derived division by zero).
    """
    x = cell_number(x_value)
    if not is_positive_integer(x):
        return None
    x = whole(x)
    try:
        config = js_json_parse(config_text)
    except JSParseError:
        return None
    if config is None:
        return None  # a literal `null` config: the reference's binder throws; the catalogue calls it unknown
    if not isinstance(config, dict):
        config = {}  # a config that is not an object has no keys, so no rule can match
    for rule in kernel.rules:
        if not rule.accepts_x_name(x_name):
            continue
        if not all(check.passes(config) for check in rule.checks):
            continue
        binding = _apply_rule(kernel, rule, x, config)
        if binding is not None:
            return binding
    return None


def _apply_rule(kernel: Kernel, rule: Rule, x: int | float, config: dict[str, Any]) -> Binding | None:
    env: dict[str, Any] = {"x": x}
    for key in rule.int_keys:
        env[key] = whole(config[key])
    try:
        axes = [(name, whole(expr.evaluate(env))) for name, expr in rule.axes]
        where_env = dict(axes)
        where_env["x"] = x
        if not all(cond.holds(where_env) for cond in rule.where):
            return None
    except ExpressionUndefined:
        return None
    for name, value in axes:
        if type(value) is not int or not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
            raise RowProblem(f"axis {name} = {value!r} is not an integer within 2^53 - 1")
    values = dict(axes)
    for name, expr in kernel.derived:
        try:
            value = expr.evaluate(values)
        except ExpressionUndefined as exc:
            raise RowProblem(f"derived axis {name}: {exc}") from None
        values[name] = value
    for tensor in kernel.inputs:
        for dim in tensor.shape:
            v = dim if isinstance(dim, int) else values[dim]
            if type(v) is not int or not 0 <= v <= MAX_SAFE_INTEGER:
                raise RowProblem(f"tensor {tensor.name} dimension {dim} = {v!r} is not an integer in 0..2^53 - 1")
    dtype = rule.dtype_fixed or DTYPE_TOKENS[config[rule.dtype_key]]
    scalars = []
    for name, source in rule.scalars:
        value = whole(config[source]) if isinstance(source, str) else source
        if not math.isfinite(value):
            raise RowProblem(f"scalar {name} = {value!r} is not a finite number")
        scalars.append((name, value))
    case_key = "-".join(f"{name}{value}" for name, value in sorted(axes)) + "-" + dtype
    if len(case_title(kernel, tuple(axes), dtype)) > 200:
        raise RowProblem("the workload case title would exceed 200 characters (axis values too long)")
    return Binding(tuple(axes), values, dtype, tuple(scalars), case_key)


# --------------------------------------------------------------------------------- shared objects


def _manifest(kind: str, metadata: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": kind, "metadata": metadata, "spec": spec}


def operation_spec(kernel: Kernel) -> dict[str, Any]:
    derived_names = {name for name, _ in kernel.derived}
    axes: dict[str, Any] = {}
    for tensor in kernel.inputs + kernel.outputs:
        for dim in tensor.shape:
            if isinstance(dim, str) and dim not in derived_names and dim not in axes:
                axes[dim] = {"role": "variable", "type": "integer"}
    for name, expr in kernel.derived:
        axes[name] = {"role": "derived", "type": "integer", "expression": expr.text}

    def tensors(items):
        return [{"name": t.name, "tensor": {"shape": list(t.shape), "dtype": t.dtype}} for t in items]

    spec = {
        "family": kernel.family,
        "axes": axes,
        "inputs": tensors(kernel.inputs),
        "outputs": tensors(kernel.outputs),
        "semantics": {"mutation": "none", "determinism": "unspecified"},
    }
    return _manifest("OperationSpec", {"name": kernel.slug, "title": kernel.title}, spec)


def workload_case(kernel: Kernel, binding: Binding, operation_digest: str) -> dict[str, Any]:
    tensors = {}
    for tensor in kernel.inputs:
        tensors[tensor.name] = {
            "shape": [dim if isinstance(dim, int) else binding.values[dim] for dim in tensor.shape],
            "dtype": binding.dtype if tensor.dtype == "float" else tensor.dtype,
        }
    spec: dict[str, Any] = {"operationSpecDigest": operation_digest, "axes": dict(binding.axes), "tensors": tensors}
    if binding.scalars:
        spec["scalars"] = {name: {"dtype": "fp32", "value": value} for name, value in binding.scalars}
    spec["correctness"] = {"comparator": "not_asserted"}
    title = case_title(kernel, binding.axes, binding.dtype)
    return _manifest("WorkloadCase", {"name": kebab(f"{kernel.slug}-{binding.case_key}"), "title": title}, spec)


def case_title(kernel: Kernel, axes: tuple[tuple[str, int], ...], dtype: str) -> str:
    return f"{kernel.title} · {', '.join(f'{a}={v}' for a, v in axes)} · {dtype}"


def software_project(catalogue: Catalogue, slug: str) -> dict[str, Any]:
    p = catalogue.projects[slug]
    spec = {"name": p.name, "kind": p.kind, "repository": p.repository, "host": {"kind": p.host_kind, "id": p.host_id}}
    return _manifest("SoftwareProject", {"name": slug}, spec)


def implementation_revision(kernel: Kernel, provider: Provider, operation_digest: str) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": kebab(f"liger-bench-{kernel.kernel}-{provider.name}"),
        "title": f"{kernel.title} · {provider.title}",
    }
    if provider.baseline:
        metadata["labels"] = {"role": "baseline"}
    metadata["sourceRefs"] = [{"url": LIGER_REPOSITORY}]
    spec: dict[str, Any] = {
        "projectRevision": {},
        "operation": {"specDigest": operation_digest},
        "callable": {"language": provider.language},
        "support": {"hardwareArchitectures": [], "dtypes": []},
    }
    if provider.pip:
        spec["buildVariants"] = [{"name": "pip", "install": {"kind": "pip", "package": provider.pip}}]
    licensing = {"declared": provider.license_declared}
    if provider.license_concluded:
        licensing["concluded"] = provider.license_concluded
    spec["licensing"] = licensing
    return _manifest("ImplementationRevision", metadata, spec)


def benchmark_protocol(mode: str) -> dict[str, Any]:
    notes = (
        f"Timed: {MODE_PHRASES[mode]}, via triton.testing.do_bench with quantiles 0.5/0.2/0.8 "
        "(median with p20/p80 spread). The upstream CSV records no CUDA, driver, or torch version; "
        "the Liger release rides each run's labels. Comparable only within one kernel, workload, "
        "timed pass, and GPU."
    )
    spec = {
        "harness": {"name": "Liger-Kernel benchmark scripts", "repository": LIGER_REPOSITORY},
        "measurement": {"timer": "cuda_events", "primaryStatistic": "median"},
        "comparability": {"family": "liger_kernel_bench", "notes": notes},
    }
    return _manifest(
        "BenchmarkProtocol",
        {"name": f"liger-bench-do-bench-{mode}", "title": f"Liger benchmark harness · {mode} pass"},
        spec,
    )


def execution_environment(gpu_name: str, hardware: dict[str, str], measured: MeasuredContext | None) -> dict[str, Any]:
    hw = {"vendor": hardware["vendor"], "product": hardware["product"], "architecture": hardware["architecture"]}
    if hardware.get("formFactor"):
        hw["formFactor"] = hardware["formFactor"]
    spec: dict[str, Any] = {"hardware": hw, "software": dict(measured.software) if measured else {}}
    if measured and measured.settings is not None:
        spec["settings"] = dict(measured.settings)
    short = gpu_name[len("NVIDIA "):] if gpu_name.startswith("NVIDIA ") else gpu_name
    name = kebab(f"liger-bench-{gpu_name}")
    manifest = _manifest("ExecutionEnvironment", {"name": name, "title": f"Liger benchmark host · {short}"}, spec)
    if measured:
        # Our own runs know their software: a different environment from the upstream history's,
        # so it gets a name of its own (the digest tells two measured hosts apart).
        suffix = digest_of(manifest)[len("sha256:"):][:12]
        manifest["metadata"]["name"] = f"{name[:100 - 13]}-{suffix}"
    return manifest


# ------------------------------------------------------------------------------------------ runs


@dataclass
class RunTemplate:
    """Everything a run shares with the other rows of its key, with its canonical text pre-cut.

    The run's canonical spec is `head + measurements + observed + <observedAt> + source + <ts slug>
    + metrics_key + <metrics> + timing + <median> + tail`: keys in RFC 8785 order, constant parts
    escaped once here, variable parts are numbers and [a-z0-9-] text that need no escaping.
    """

    id: int  # sequential within one import (worker processes keep templates by id)
    name_head: str  # kebab's substitution applied to liger-<kernel>-<mode>-<provider>-<gpu>-<caseKey>-
    title: str
    title_json: str
    benchmark: str
    external_prefix: str
    digests: dict[str, str]
    evidence_logs: dict[str, str] | None
    head: str
    source: str
    tail: str
    raw_samples: dict[str, Any] | None = None  # the row's samples entry (measured rows only)


_BODY_PREFIX = '{"apiVersion":"' + API_VERSION + '","kind":"BenchmarkRun",'
_META_PREFIX = _BODY_PREFIX + '"metadata":{"labels":{"liger_version":'
_OBSERVED = ',"observedAt":"'
_METRICS = '","metrics":'
_TIMING = ',"source":"' + RUN_SOURCE + '"},"status":"passed","timing":{"latencyNs":{"median":'
_P20 = ',"measurements":[{"metric":"latency","statistic":"p20","unit":"ns","value":'
_P80 = '},{"metric":"latency","statistic":"p80","unit":"ns","value":'


def _json_text(value: Any) -> str:
    return canonical_bytes(value).decode("utf-8")


def _number_text(value: float | int) -> str:
    """js_number_text with the common cases inline (plain floats, ints)."""
    if type(value) is int:
        return str(value) if -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER else js_number_text(value)
    if 1e-4 <= value < 1e16 or -1e16 < value <= -1e-4:
        r = repr(value)
        return r[:-2] if r.endswith(".0") else r
    return js_number_text(value)


def _ns(ms: float) -> int | float:
    """ms_to_ns (Math.round(ms * 1e6)) with the exact integer path inline."""
    y = ms * 1e6
    if -9e15 < y < 9e15:
        f = math.floor(y)  # an int; y - f is exact below 2**53
        return f + 1 if y - f >= 0.5 else f
    return ms_to_ns(ms)


class RunRecord:
    """A BenchmarkRun as the normalizer emits it: name, digest, external id and its canonical line.

    `line` is the RFC 8785 canonical JSON of the whole manifest (metadata included); `manifest` is
    the dict, parsed from the line on first use when the run was built in a worker process.
    """

    __slots__ = ("name", "digest", "external_id", "line", "_manifest")

    def __init__(self, name: str, digest: str, external_id: str, line: bytes, manifest: dict[str, Any] | None = None):
        self.name = name
        self.digest = digest
        self.external_id = external_id
        self.line = line
        self._manifest = manifest

    @property
    def manifest(self) -> dict[str, Any]:
        if self._manifest is None:
            self._manifest = json.loads(self.line)
        return self._manifest


def build_run(item: tuple, validate: Callable[[dict[str, Any]], None], with_line: bool = True) -> RunRecord:
    """One BenchmarkRun from a row that passed every check (see Normalizer._run): pure, so worker
    processes can run it. `item` = (template, ms50, median_ns, ms20, ms80, observedAt, ts slug,
    ts name part, externalId, liger_version, liger_version as JSON text)."""
    t, ms50, median, ms20, ms80, observed_at, ts_slug, ts_name, external_id, version, version_json = item
    if ms50.is_integer():
        ms50 = whole(ms50)
    if ms20 - ms20 == 0 and ms80 - ms80 == 0:  # both finite (inf - inf and NaN - NaN are NaN)
        p20, p80 = _ns(ms20), _ns(ms80)
        if ms20.is_integer():
            ms20 = whole(ms20)
        if ms80.is_integer():
            ms80 = whole(ms80)
        measurements = _P20 + _number_text(p20) + _P80 + _number_text(p80) + "}]"
        metrics_text = (
            '{"ms_20":' + _number_text(ms20) + ',"ms_50":' + _number_text(ms50)
            + ',"ms_80":' + _number_text(ms80) + "}"
        )
        metrics = {"ms_50": ms50, "ms_20": ms20, "ms_80": ms80}
        spec = {
            **t.digests,
            "status": "passed",
            "timing": {"primaryStatistic": "median", "latencyNs": {"median": median}},
            "measurements": [
                {"metric": "latency", "unit": "ns", "statistic": "p20", "value": p20},
                {"metric": "latency", "unit": "ns", "statistic": "p80", "value": p80},
            ],
        }
    else:
        measurements = ""
        metrics_text = '{"ms_50":' + _number_text(ms50) + "}"
        metrics = {"ms_50": ms50}
        spec = {
            **t.digests,
            "status": "passed",
            "timing": {"primaryStatistic": "median", "latencyNs": {"median": median}},
        }
    spec["sourceNative"] = {"source": RUN_SOURCE, "benchmark": t.benchmark, "externalId": external_id, "metrics": metrics}
    spec["observedAt"] = observed_at
    if t.evidence_logs is not None:
        spec["evidence"] = {"logs": t.evidence_logs}
    spec_text = (
        t.head + measurements + _OBSERVED + observed_at + t.source + ts_slug + _METRICS + metrics_text
        + _TIMING + str(median) + t.tail
    )
    digest = "sha256:" + hashlib.sha256((_BODY_PREFIX + '"spec":' + spec_text + "}").encode()).hexdigest()
    # kebab(name_prefix + timestamp) without redoing the prefix: the prefix ends in "-", so a
    # timestamp starting with a separator merges into it; then strip the end and cut at 100.
    name = (t.name_head + (ts_name[1:] if ts_name[:1] == "-" else ts_name)).rstrip("-")[:NAME_LIMIT]
    metadata = {"name": name, "title": t.title, "labels": {"liger_version": version}}
    manifest = {"apiVersion": API_VERSION, "kind": "BenchmarkRun", "metadata": metadata, "spec": spec}
    if t.raw_samples is not None:
        # Measured with raw samples: the enrichment step changes the spec, so the pre-cut canonical
        # text no longer applies; digest and line come from the manifest itself (few runs, slow path).
        manifest["spec"] = with_raw_samples(spec, t.raw_samples)
        validate(manifest)
        line = canonical_bytes(manifest) if with_line else b""
        return RunRecord(name, digest_of(manifest), external_id, line, manifest)
    validate(manifest)
    line = b""
    if with_line:
        line = (
            _META_PREFIX + version_json + '},"name":"' + name + '","title":' + t.title_json
            + '},"spec":' + spec_text + "}"
        ).encode()
    return RunRecord(name, digest, external_id, line, manifest)



class Normalizer:
    """One import's state. Feed chunks with `add_chunk`, then read `objects`, `report`."""

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
    ):
        self.catalogue = catalogue
        self.gpu_filter = gpu
        self.version_filter = liger_version
        self.measured = measured
        self.on_run = on_run
        self.validate = validate or _no_validation
        self.builder = builder  # builds runs elsewhere (worker processes) when set
        self.report = ImportReport()
        self.objects: dict[str, dict[str, Any]] = {}  # digest -> manifest (shared kinds, first name wins)
        self.names_by_digest: dict[str, list[str]] = {}
        self.runs: dict[str, dict[str, Any]] = {}  # digest -> run manifest, when on_run is None
        self._created_by_kind: dict[str, int] = {}
        self._operation: dict[str, str] = {}  # kernel -> OperationSpec digest
        self._case: dict[tuple[str, str], str] = {}
        self._implementation: dict[tuple[str, str], str] = {}
        self._protocol: dict[str, str] = {}
        self._environment: dict[str, str] = {}
        self._project: dict[str, str] = {}
        self._outcomes: dict[tuple[str, ...], Any] = {}
        self._timestamps: dict[str, tuple[str | None, str]] = {}
        self._seen_runs: set[str] = set()
        self._gpu_slugs: dict[str, str] = {}
        self._versions: dict[str, str] = {}  # liger_version -> its JSON text
        self._template_count = 0

    # -- shared objects ----------------------------------------------------------------------------

    def _add(self, manifest: dict[str, Any]) -> str:
        self.validate(manifest)
        digest = digest_of(manifest)
        kind = manifest["kind"]
        self._created_by_kind[kind] = self._created_by_kind.get(kind, 0) + 1
        names = self.names_by_digest.setdefault(digest, [])
        if not names:
            self.objects[digest] = manifest
        if manifest["metadata"]["name"] not in names:
            names.append(manifest["metadata"]["name"])
        return digest

    def _operation_digest(self, kernel: Kernel) -> str:
        digest = self._operation.get(kernel.kernel)
        if digest is None:
            digest = self._operation[kernel.kernel] = self._add(operation_spec(kernel))
            fam = self.report.operations_by_family
            fam[kernel.family] = fam.get(kernel.family, 0) + 1
        return digest

    # -- rows ----------------------------------------------------------------------------------------

    def add_chunk(self, chunk: Chunk) -> None:
        report = self.report
        outcomes = self._outcomes
        gpu_filter, version_filter = self.gpu_filter, self.version_filter
        c = chunk.columns
        bad = chunk.bad
        start = chunk.start
        # kernel, provider, mode, metric, x_name, x_value, y50, y20, y80, config, gpu, timestamp, version
        for j, (kernel, provider, mode, metric, x_name, x_value, y50, y20, y80, config, gpu, ts, version) in enumerate(
            zip(c[0], c[1], c[2], c[3], c[5], c[7], c[8], c[9], c[10], c[11], c[12], c[13], c[14], strict=False)
        ):
            report.rows_read += 1
            if bad and j in bad:
                report.issues.append(Issue(start + j, bad[j]))
                continue
            if gpu_filter is not None and self._gpu_slug(gpu) != gpu_filter:
                report.filtered_out += 1
                continue
            if version_filter is not None and version != version_filter:
                report.filtered_out += 1
                continue
            key = (metric, kernel, mode, provider, x_name, x_value, config, gpu)
            outcome = outcomes.get(key)
            if outcome is None:
                if len(outcomes) >= _CACHE_LIMIT:
                    outcomes.clear()  # decisions are deterministic: clearing costs time, never changes results
                outcome = outcomes[key] = self._decide(key)
            if type(outcome) is RunTemplate:
                report.speed_rows += 1
                self._run(start + j, outcome, y50, y20, y80, ts, version)
                continue
            reason, detail = outcome
            if reason != "memory":
                report.speed_rows += 1
            if reason == "memory":
                report.memory_rows += 1
            elif reason == "kernel":
                report.uncurated_kernels[detail] += 1
            elif reason == "config":
                report.unknown_config[detail] += 1
            elif reason == "provider":
                report.unknown_provider[detail] += 1
            elif reason == "gpu":
                report.unknown_gpu[detail] += 1
            else:
                report.issues.append(Issue(start + j, detail))

    def _gpu_slug(self, gpu: str) -> str:
        slug = self._gpu_slugs.get(gpu)
        if slug is None:
            slug = self._gpu_slugs[gpu] = kebab(gpu)
        return slug

    def _decide(self, key: tuple[str, ...]) -> Any:
        """The fate shared by every row with this key: a RunTemplate or (reason, detail)."""
        metric, kernel_name, mode, provider_name, x_name, x_value, config, gpu = key
        cat = self.catalogue
        if metric != cat.metric_name:
            return ("memory", None)
        kernel = cat.kernels.get(kernel_name)
        if kernel is None:
            return ("kernel", kernel_name)
        if mode not in cat.modes:
            return ("config", kernel_name)  # the reference has no mode counter (CATALOGUE.md step 3)
        provider = cat.providers.get(provider_name)
        if provider is None:
            return ("provider", provider_name)
        try:
            binding = bind(kernel, x_name, x_value, config)
        except RowProblem as exc:
            return ("issue", str(exc))
        if binding is None:
            return ("config", kernel_name)
        operation_digest = self._operation_digest(kernel)
        hardware = cat.hardware.get(gpu)
        if hardware is None:
            return ("gpu", gpu)
        template = self._template(kernel, provider, mode, gpu, hardware, binding, operation_digest)
        if self.measured is not None and self.measured.raw_samples:
            template.raw_samples = self.measured.raw_samples.get(
                row_key(kernel_name, provider_name, mode, metric, x_name, x_value, config, gpu)
            )
        return template

    def _template(self, kernel, provider, mode, gpu, hardware, binding, operation_digest) -> RunTemplate:
        project = self._project.get(provider.project)
        if project is None:
            project = self._project[provider.project] = self._add(software_project(self.catalogue, provider.project))
        impl_key = (kernel.kernel, provider.name)
        impl = self._implementation.get(impl_key)
        if impl is None:
            impl = self._implementation[impl_key] = self._add(implementation_revision(kernel, provider, operation_digest))
        case_key = (kernel.kernel, binding.case_key)
        case = self._case.get(case_key)
        if case is None:  # one case per kernel x caseKey: the first row's scalars decide it
            case = self._case[case_key] = self._add(workload_case(kernel, binding, operation_digest))
        protocol = self._protocol.get(mode)
        if protocol is None:
            protocol = self._protocol[mode] = self._add(benchmark_protocol(mode))
        environment = self._environment.get(gpu)
        if environment is None:
            environment = self._environment[gpu] = self._add(execution_environment(gpu, hardware, self.measured))
        logs = None
        if self.measured is not None:
            logs = self.measured.logs_by_kernel.get(kernel.kernel)
            logs = {"uri": logs["uri"], "digest": logs["digest"]} if logs else None
        benchmark = f"{kernel.kernel}/{mode}"
        external_prefix = f"{benchmark}/{provider.name}/{self._gpu_slug(gpu)}/{binding.case_key}/"
        head = '{"environmentDigest":' + _json_text(environment)
        if logs is not None:
            head += ',"evidence":{"logs":' + _json_text(logs) + "}"
        head += ',"implementationDigest":' + _json_text(impl)
        title = f"{kernel.title} · {provider.name} · {mode}"
        name_head = _NAME_RUNS.sub("-", f"liger-{kernel.kernel}-{mode}-{provider.name}-{gpu}-{binding.case_key}-".lower()).lstrip("-")
        self._template_count += 1
        return RunTemplate(
            id=self._template_count,
            name_head=name_head,
            title=title,
            title_json=_json_text(title),
            benchmark=benchmark,
            external_prefix=external_prefix,
            digests={
                "implementationDigest": impl,
                "workloadDigest": case,
                "protocolDigest": protocol,
                "environmentDigest": environment,
            },
            evidence_logs=logs,
            head=head,
            source='","protocolDigest":' + _json_text(protocol) + ',"sourceNative":{"benchmark":' + _json_text(benchmark)
            + ',"externalId":' + _json_text(external_prefix)[:-1],
            tail='},"primaryStatistic":"median"},"workloadDigest":' + _json_text(case) + "}",
        )

    def _run(self, row: int, t: RunTemplate, y50: str, y20: str, y80: str, ts: str, version: str) -> None:
        report = self.report
        parsed = self._timestamps.get(ts)
        if parsed is None:
            if len(self._timestamps) >= _CACHE_LIMIT:
                self._timestamps.clear()
            parsed = self._timestamps[ts] = (parse_timestamp(ts), kebab(ts), _NAME_RUNS.sub("-", ts.lower()))
        observed_at, ts_slug, ts_name = parsed
        external_id = t.external_prefix + ts_slug
        seen = self._seen_runs
        if external_id in seen:
            report.duplicate_rows += 1
            return
        seen.add(external_id)
        ms50 = cell_number(y50)
        if not (ms50 > 0 and ms50 != math.inf):  # NaN fails the comparison too
            report.issues.append(Issue(row, f"median y_value_50 {y50!r} is not a finite number > 0"))
            return
        if observed_at is None:
            report.issues.append(Issue(row, f"timestamp {ts!r} is not a UTC instant 'YYYY-MM-DD HH:MM:SS'"))
            return
        median = _ns(ms50)
        if type(median) is not int:
            report.issues.append(Issue(row, f"median y_value_50 {y50!r} ms is beyond 2^53 - 1 ns"))
            return
        version_json = self._versions.get(version)
        if version_json is None:
            if len(version) > 200:
                report.issues.append(Issue(row, "liger_version is longer than 200 characters (label limit)"))
                return
            version_json = self._versions[version] = _json_text(version)
        ms20, ms80 = cell_number(y20), cell_number(y80)
        if ms20 - ms20 == 0 and ms80 - ms80 == 0 and (math.isinf(ms20 * 1e6) or math.isinf(ms80 * 1e6)):
            report.issues.append(Issue(row, f"y_value_20 {y20!r} / y_value_80 {y80!r} ms overflow a number in ns"))
            return
        report.runs += 1
        item = (t, ms50, median, ms20, ms80, observed_at, ts_slug, ts_name, external_id, version, version_json)
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
