"""Readable builders: a row's config bound by a catalogue rule, and the shared objects it makes.

`bind` finds the first rule of a kernel that understands a row (x_name, x_value, config JSON) and
returns its Binding (axes, dtype, scalars, case key); the functions below turn catalogue facts and a
binding into the six shared kinds (OperationSpec, WorkloadCase, SoftwareProject, ImplementationRevision,
BenchmarkProtocol, ExecutionEnvironment) exactly as docs/reference/record-contract.md §4 says. BenchmarkRuns are
built by the fast path in `liger/runs.py`; `liger/normalize.py` decides which row makes what.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from kernelindex_pipeline.liger import identity
from kernelindex_pipeline.liger.catalogue import (
    CATEGORY_LABEL,
    DTYPE_TOKENS,
    REFERENCE_MODE_PHRASES,
    Catalogue,
    ExpressionUndefined,
    Kernel,
    Model,
    Provider,
    Rule,
)
from kernelindex_pipeline.records.canonical import API_VERSION, digest_of
from kernelindex_pipeline.records.jsnumber import (
    MAX_SAFE_INTEGER,
    JSParseError,
    is_positive_integer,
    js_json_parse,
    js_number,
    whole,
)
from kernelindex_pipeline.records.names import kebab

LIGER_REPOSITORY = "https://github.com/linkedin/Liger-Kernel"
LIGER_HARNESS_NAME = "Liger-Kernel benchmark scripts"  # both protocols' harness (speed and peak memory)
_FAST_NUMBER_EDGE = frozenset("0123456789.")


@dataclass(frozen=True)
class MeasuredContext:
    """Facts about rows the pipeline measured itself (not the upstream history).

    `software` / `settings` go into ExecutionEnvironment.spec (so the environment, and every run on it,
    gets a digest of its own; its name carries a short digest suffix): a sweep passes identity only
    (sweep/environment.py: GPU, driver major, CUDA, torch, triton) and the rest of its host as
    `labels`, so two hosts of one GPU type share one environment. And `logs_by_kernel[kernel]`
    (`{"uri", "digest"}`) becomes BenchmarkRun.spec.evidence.logs for that CSV kernel_name.
    `raw_samples[liger.sample_statistics.row_key(...)]` is the samples entry of that row's do_bench call; its run
    goes through liger.sample_statistics.with_raw_samples (timing statistics, rawSamples artifact). `sentinel`
    holds the sweep's reference measurements, which become runs of their own (liger/sentinel.py).
    """

    software: dict[str, Any]
    settings: dict[str, Any] | None = None
    logs_by_kernel: dict[str, dict[str, str]] = field(default_factory=dict)
    raw_samples: dict[str, dict[str, Any]] = field(default_factory=dict)
    sentinel: list[dict[str, Any]] = field(default_factory=list)  # sweep/sentinel.py measurements
    # ExecutionEnvironment.metadata.labels: host facts that are not identity (sweep/environment.py)
    labels: dict[str, str] = field(default_factory=dict)
    # project slug -> the exact revision measured: a release tag ("v0.8.5") or a 40-hex commit. It becomes
    # the ImplementationRevision's projectRevision (with the project's repository), so KernelIndex can
    # find the source (sourceAvailable) and the runs with raw samples are "Reproducible".
    project_versions: dict[str, str] = field(default_factory=dict)

    def project_revision(self, repository: str | None, project: str) -> dict[str, str] | None:
        """`spec.projectRevision` of an implementation of `project`, or None when the revision is unknown."""
        revision = self.project_versions.get(project)
        if not revision or not repository:
            return None
        field_name = "commit" if re.fullmatch(r"[0-9a-f]{40}", revision) else "version"
        return {"repository": repository, field_name: revision}

    # Labels of runs: per row key (sweep/rounds.py: `throttled`), and for every run of the sweep
    # (sweep/sentinel.py band_labels: `sentinel_band: outside` for an outlier sweep).
    row_labels: dict[str, dict[str, str]] = field(default_factory=dict)
    run_labels: dict[str, str] = field(default_factory=dict)

    def labels_of_run(self, row_key: str | None = None) -> dict[str, str]:
        """BenchmarkRun.metadata.labels of a run of this sweep: its host's facts (`labels`: two hosts of one
        GPU type share one ExecutionEnvironment, whose manifest a catalogue keeps once, from the first host
        that published it, so each run carries its own host's), then the sweep's and the row's labels."""
        return {**self.labels, **self.run_labels, **(self.row_labels.get(row_key, {}) if row_key else {})}


@dataclass(frozen=True)
class Binding:
    """A row's config understood by one rule of its kernel."""

    axes: tuple[tuple[str, int], ...]  # rule order
    values: dict[str, int]  # axes and derived axes, for shapes
    dtype: str
    scalars: tuple[tuple[str, int | float], ...]
    case_key: str
    category: str | None = None  # a categorical x value (model_config rows: the model name)
    category_axis: str | None = None  # its CSV x_name
    rule_index: int = 0  # which rule of the kernel bound it


class RowProblem(Exception):
    """The row's values cannot make schema-valid records (an issue, not a skip)."""


def cell_number(text: str) -> float:
    """`Number(text)`, with a fast path for plain decimal text (where Python's float() agrees)."""
    if text and text[0] in _FAST_NUMBER_EDGE and text[-1] in _FAST_NUMBER_EDGE and text.isascii() and "_" not in text:
        try:
            return float(text)
        except ValueError:
            pass
    return js_number(text)


def bind(
    kernel: Kernel, x_name: str, x_value: str, config_text: str, models: dict[str, Model] | None = None
) -> Binding | None:
    """The first rule of `kernel` that understands the row, or None (unknown config).

    A rule without `category` needs x_value to be a positive integer (`x`); a `category: model` rule
    needs it to name a model of `models` (its dimensions become `model_<field>`), a `category: label`
    rule only a plain name. Raises RowProblem when a rule matches but its values cannot be valid
    records (beyond 2**53, non-finite scalars, a derived division by zero).
    """
    categorical = kernel.categorical
    x = cell_number(x_value)
    if is_positive_integer(x):
        x = whole(x)
    elif not categorical:
        return None
    else:
        x = None
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
        model = None
        if rule.category is None:
            if x is None:
                continue
        elif rule.category == "model":
            model = (models or {}).get(x_value)
            if model is None:
                continue
        elif not CATEGORY_LABEL.match(x_value):
            continue
        if not all(check.passes(config) for check in rule.checks):
            continue
        binding = _apply_rule(kernel, rule, x, config, model, x_name, x_value)
        if binding is not None:
            return binding
    return None


def _apply_rule(
    kernel: Kernel, rule: Rule, x: int | None, config: dict[str, Any], model: Model | None, x_name: str, x_value: str
) -> Binding | None:
    env: dict[str, Any] = {"x": x} if rule.category is None else dict(model.dims) if model is not None else {}
    for key in rule.int_keys:
        env[key] = whole(config[key])
    try:
        axes = [(name, whole(expr.evaluate(env))) for name, expr in rule.axes]
        where_env = dict(axes)
        if rule.category is None:
            where_env["x"] = x
        if not all(cond.holds(where_env) for cond in rule.where):
            return None
    except ExpressionUndefined:
        return None
    except KeyError:  # a model without a field the rule reads (e.g. num_experts of a dense model)
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
    dtype = model.dtype if rule.dtype_model else rule.dtype_fixed or DTYPE_TOKENS[config[rule.dtype_key]]
    scalars = []
    for name, source in rule.scalars:
        value = whole(config[source]) if isinstance(source, str) else source
        if not math.isfinite(value):
            raise RowProblem(f"scalar {name} = {value!r} is not a finite number")
        scalars.append((name, value))
    category = None if rule.category is None else x_value
    case_key = identity.case_key(axes, dtype, category)
    if len(identity.case_title(kernel.title, tuple(axes), dtype, category)) > 200:
        raise RowProblem("the workload case title would exceed 200 characters (axis values too long)")
    return Binding(
        tuple(axes), values, dtype, tuple(scalars), case_key, category, None if category is None else x_name, rule.index
    )


# --------------------------------------------------------------------------------- shared objects


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
    title = identity.case_title(kernel.title, binding.axes, binding.dtype, binding.category)
    metadata: dict[str, Any] = {"name": identity.case_name(kernel.slug, binding.case_key), "title": title}
    if binding.category is not None:
        metadata["labels"] = {identity.category_label(binding.category_axis): binding.category}
    return _manifest("WorkloadCase", metadata, spec)


def software_project(catalogue: Catalogue, slug: str) -> dict[str, Any]:
    p = catalogue.projects[slug]
    spec = {"name": p.name, "kind": p.kind, "repository": p.repository, "host": {"kind": p.host_kind, "id": p.host_id}}
    return _manifest("SoftwareProject", {"name": slug}, spec)


def implementation_revision(
    kernel: Kernel,
    provider: Provider,
    operation_digest: str,
    ab: tuple[str, str] | None = None,
    revision: dict[str, str] | None = None,
    backend: str | None = None,
) -> dict[str, Any]:
    """`ab`: (row provider name, commit) of an A/B comparison row (full profile): an implementation of
    its own, named and labelled for that commit, so it never joins a release's series. `revision`: the
    exact projectRevision a sweep measured (MeasuredContext.project_revision); history rows have none.
    `backend`: the implementation Liger's dispatcher resolved for a measured row (Liger >= 0.8.3,
    sweep/backends.py), e.g. `nvidia-cutedsl`: part of the revision (spec.callable.symbol), so
    two backends of one op are two implementations, two series."""
    provider_name = ab[0] if ab else provider.name + (f"-{backend}" if backend else "")
    pinned = ab[1] if ab else identity.revision_label(revision)  # a sweep's release: its name says it
    metadata: dict[str, Any] = {
        "name": identity.implementation_name(kernel.kernel, provider_name, pinned),
        "title": identity.implementation_title(
            kernel.title, provider.title + (f" @ {pinned}" if pinned else "") + (f" ({backend})" if backend else "")
        ),
    }
    labels = {"role": "baseline"} if provider.baseline else {}
    if ab:
        labels["ab_revision"] = ab[1]
    if backend:
        labels["liger_backend"] = backend
    if labels:
        metadata["labels"] = labels
    metadata["sourceRefs"] = [{"url": LIGER_REPOSITORY}]
    spec: dict[str, Any] = {
        # An A/B row's revision is the commit it measured; Liger writes short commits, and the schema's
        # `commit` takes 40 hex digits, so it is the revision's version (and a label).
        "projectRevision": {"repository": LIGER_REPOSITORY, "version": ab[1]} if ab else dict(revision or {}),
        "operation": {"specDigest": operation_digest},
        "callable": {"language": provider.language, **_symbol(provider, backend)},
        "support": {"hardwareArchitectures": [], "dtypes": []},
    }
    if provider.pip:
        spec["buildVariants"] = [{"name": "pip", "install": {"kind": "pip", "package": provider.pip}}]
    licensing = {"declared": provider.license_declared}
    if provider.license_concluded:
        licensing["concluded"] = provider.license_concluded
    spec["licensing"] = licensing
    return _manifest("ImplementationRevision", metadata, spec)


def _symbol(provider: Provider, backend: str | None) -> dict[str, str]:
    """spec.callable.symbol: the backend Liger's dispatcher resolved, else the provider's own (catalogue), else none."""
    if backend:
        return {"symbol": f"liger_kernel.backends.dispatch:{backend}"}
    return {"symbol": provider.symbol} if provider.symbol else {}


def series_implementation_digest(manifest: dict[str, Any]) -> str:
    """The implementation a regression series follows: a sweep's revision pinned to the release it measured
    (projectRevision {repository, version: "v0.8.5"}) is, across releases, the same implementation as its
    unpinned form (the release is a labelled stretch of the series); an A/B revision (label ab_revision)
    stays a series of its own."""
    spec = manifest.get("spec") or {}
    labels = (manifest.get("metadata") or {}).get("labels") or {}
    if not spec.get("projectRevision") or "ab_revision" in labels:
        return digest_of(manifest)
    return digest_of({**manifest, "spec": {**spec, "projectRevision": {}}})


def benchmark_protocol(mode: str, phrases: dict[str, str] | None = None) -> dict[str, Any]:
    """The speed protocol of one timed pass (`phrases`: the catalogue's mode phrases)."""
    phrase = (phrases or REFERENCE_MODE_PHRASES)[mode]
    notes = (
        f"Timed: {phrase}, via triton.testing.do_bench with quantiles 0.5/0.2/0.8 "
        "(median with p20/p80 spread). The upstream CSV records no CUDA, driver, or torch version; "
        "the Liger release rides each run's labels. Comparable only within one kernel, workload, "
        "timed pass, and GPU."
    )
    spec = {
        "harness": {"name": LIGER_HARNESS_NAME, "repository": LIGER_REPOSITORY},
        "measurement": {"timer": "cuda_events", "primaryStatistic": "median"},
        "comparability": {"family": "liger_kernel_bench", "notes": notes},
    }
    return _manifest(
        "BenchmarkProtocol",
        {"name": identity.protocol_name(mode), "title": identity.protocol_title(mode)},
        spec,
    )


def sweep_protocol(mode: str, phrases: dict[str, str], warmup: Any, rep: Any, rounds: int) -> dict[str, Any]:
    """The speed protocol of a pass this pipeline measured: do_bench's warmup/rep as the sample hook saw
    them, and how many rounds the median and confidence95 come from (history protocols stay as they are)."""
    from kernelindex_pipeline.liger.sample_statistics import ROUNDS_INTERVAL_METHOD

    manifest = benchmark_protocol(mode, phrases)
    spec = manifest["spec"]
    if isinstance(warmup, (int, float)) and warmup >= 0:
        spec["measurement"]["warmupDuration"] = f"{warmup:g} ms"
    spec["measurement"]["outlierPolicy"] = "none: every timed sample counts"
    timing = (
        f"do_bench warmup {warmup} ms, rep {rep} ms" if warmup is not None or rep is not None else "do_bench defaults"
    )
    spec["comparability"]["notes"] = (
        f"Measured by kernelindex-pipeline: {timing} per call, {rounds} round(s) interleaved across the sweep's "
        f"scripts; median = median of the rounds' medians. {ROUNDS_INTERVAL_METHOD}. Timed: {(phrases or REFERENCE_MODE_PHRASES)[mode]}."
    )[:1000]
    name = identity.protocol_name(mode) + f"-sweep-w{warmup}-r{rep}-x{rounds}"
    manifest["metadata"] = {
        "name": kebab(name)[:100].rstrip("-"),
        "title": identity.protocol_title(mode) + f" · sweep, {rounds} round(s)",
    }
    return manifest


def tp_protocol() -> dict[str, Any]:
    """The protocol of the TP script's runs (sweep/tp.py): its own timing loop, not do_bench."""
    notes = (
        "benchmark_fused_scaled_linear_cross_entropy_tp.py under torchrun: after --warmups forward passes, "
        "--iterations forward passes each between torch.cuda.Event records behind a barrier; per iteration the "
        "maximum over ranks (all_reduce MAX); the median of the iterations, from rank 0's "
        "FSLCE_TP_FORWARD_BENCHMARK line. No p20/p80, no raw samples. Comparable only within one world size and GPU."
    )
    spec = {
        "harness": {"name": "Liger-Kernel FSLCE TP benchmark", "repository": LIGER_REPOSITORY},
        "measurement": {
            "timer": "cuda_events",
            "synchronization": "barrier_per_iteration",
            "primaryStatistic": "median",
        },
        "comparability": {"family": "liger_kernel_tp_forward", "notes": notes},
    }
    return _manifest(
        "BenchmarkProtocol", {"name": "liger-bench-tp-forward", "title": "Liger TP forward · cuda events"}, spec
    )


def memory_protocol(mode: str, phrases: dict[str, str]) -> dict[str, Any]:
    """The peak-memory protocol of one pass (full profile): what utils._test_memory measures."""
    notes = (
        f"Measured: peak GPU memory of {phrases[mode]}, as torch.cuda.max_memory_allocated() after "
        "torch.cuda.reset_peak_memory_stats(), over 10 repetitions (quantiles 0.5/0.2/0.8). Liger writes "
        "it in MB = bytes / 2**20 (MiB); the run's peak_memory is in bytes, converted exactly. "
        "Comparable only within one kernel, workload, pass, and GPU."
    )
    spec = {
        "harness": {"name": LIGER_HARNESS_NAME, "repository": LIGER_REPOSITORY},
        "measurement": {"timer": "torch_cuda_max_memory_allocated", "primaryStatistic": "median"},
        "comparability": {"family": "liger_kernel_bench_memory", "notes": notes},
    }
    return _manifest(
        "BenchmarkProtocol",
        {"name": identity.protocol_name(mode, memory=True), "title": identity.protocol_title(mode, memory=True)},
        spec,
    )


def execution_environment(gpu_name: str, hardware: dict[str, str], measured: MeasuredContext | None) -> dict[str, Any]:
    hw = {"vendor": hardware["vendor"], "product": hardware["product"], "architecture": hardware["architecture"]}
    if hardware.get("formFactor"):
        hw["formFactor"] = hardware["formFactor"]
    spec: dict[str, Any] = {"hardware": hw, "software": dict(measured.software) if measured else {}}
    if measured and measured.settings is not None:
        spec["settings"] = dict(measured.settings)
    name = identity.environment_name(gpu_name)
    metadata: dict[str, Any] = {"name": name, "title": identity.environment_title(gpu_name)}
    if measured and measured.labels:
        metadata["labels"] = dict(measured.labels)
    manifest = _manifest("ExecutionEnvironment", metadata, spec)
    if measured:
        # Our own runs know their software: a different environment from the upstream history's,
        # so it gets a name of its own (the digest tells two measured hosts apart).
        suffix = digest_of(manifest)[len("sha256:") :][:12]
        manifest["metadata"]["name"] = f"{name[: 100 - 13]}-{suffix}"
    return manifest
