"""Percent of peak: every latency run against its GPU's roofline.

A run's efficiency is derived beside its record, never written into it (no digest changes): its
kernel and pass's minimum work (`liger.costs`: HBM bytes or FLOPs, whichever bounds the kernel, from the
WorkloadCase's own tensors) divided by its median latency, against two ceilings:

- the **datasheet** peak of its GPU (`data/gpu-peaks.yaml`: HBM TB/s, dense bf16/fp16/fp32 TFLOP/s);
- the **measured** ceiling of its execution environment, where a sweep's sentinel ran on it (the copy's
  bytes per second for bytes-bound kernels, the bf16 matrix product's FLOP/s for bf16 FLOP-bound ones;
  the best sentinel run of that environment).

History, CI and sweep runs are computed by the same function (`derive_efficiency`). Flags:
`l2-resident` (what the kernel re-reads fits in L2: the sweep host's reported L2 where its environment
carries one, else the datasheet's), `above-measured-ceiling`, `above-datasheet-peak` (each makes a
reading implausible) and `low-efficiency` (a plausible reading below the operator's threshold, 30 % by
default, of the datasheet peak). A kernel or pass without a formula, or a GPU without a sourced peak,
is reported as such (`status`), never as 0 %.

The sidecar file (`efficiency.jsonl`, one JSON object per run) is written and read back here.
"""

from __future__ import annotations

import filecmp
import json
import os
import shutil
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from dataclasses import fields as dataclass_fields
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kernelindex_pipeline.liger import identity
from kernelindex_pipeline.liger.costs import BYTES, Cost, CostModels, NoCost, cost_of, default_cost_models
from kernelindex_pipeline.liger.measured_rows import L2_LABEL  # a sweep host's reported L2 size

from .series import LATENCY_METRIC, RecordIndex, RunRow, Series

DEFAULT_LOW_THRESHOLD = 0.30  # a plausible reading below 30 % of peak is "low efficiency"
SIDECAR_NAME = "efficiency.jsonl"
SIDECAR_KIND = "kernelindex-pipeline/efficiency"
SIDECAR_VERSION = 1
COPY_SENTINEL_PREFIX, MATMUL_SENTINEL_PREFIX = "sentinel_copy", "sentinel_matmul"
FLAG_L2, FLAG_ABOVE_MEASURED, FLAG_ABOVE_PEAK, FLAG_LOW = (
    "l2-resident",
    "above-measured-ceiling",
    "above-datasheet-peak",
    "low-efficiency",
)
IMPLAUSIBLE_FLAGS = (FLAG_L2, FLAG_ABOVE_MEASURED, FLAG_ABOVE_PEAK)
STATUS_OK, STATUS_NO_COST, STATUS_NO_PEAK, STATUS_NO_CASE = "ok", "no cost model", "no peak", "no workload"
TERA = 1e12


class PeaksError(ValueError):
    """The GPU peaks file is malformed; the message names the GPU and field."""


class GpuPeaks(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    hbmTBps: float = Field(gt=0)
    bf16TFLOPS: float | None = Field(gt=0)
    fp16TFLOPS: float | None = Field(gt=0)
    fp32TFLOPS: float | None = Field(gt=0)
    l2MiB: float | None = Field(gt=0)
    source: str = Field(min_length=10)

    def peak(self, bound: str, dtype: str | None) -> float | None:
        """The datasheet ceiling in units per second: bytes/s, or FLOP/s of the case's dtype."""
        if bound == BYTES:
            return self.hbmTBps * TERA
        tflops = {"bf16": self.bf16TFLOPS, "fp16": self.fp16TFLOPS, "fp32": self.fp32TFLOPS}.get(dtype or "")
        return None if tflops is None else tflops * TERA


class _PeaksFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    gpus: dict[str, GpuPeaks]
    unsourced: dict[str, str] = {}


@dataclass(frozen=True)
class PeakTable:
    by_slug: dict[str, tuple[str, GpuPeaks]]  # GPU slug -> (the name CUDA reports, peaks)
    unsourced: dict[str, str]  # GPU name -> why there is no peak

    def get(self, gpu_slug: str) -> GpuPeaks | None:
        found = self.by_slug.get(gpu_slug)
        return found[1] if found else None


def load_peaks(path: Path | str | None = None) -> PeakTable:
    source = resources.files("kernelindex_pipeline") / "data" / "gpu-peaks.yaml" if path is None else Path(path)
    where = str(path or "data/gpu-peaks.yaml")
    try:
        parsed = _PeaksFile.model_validate(yaml.safe_load(source.read_bytes()[: 1 << 20]))
    except (yaml.YAMLError, ValidationError) as error:
        raise PeaksError(f"{where}: {error}") from error
    both = set(parsed.gpus) & set(parsed.unsourced)
    if both:
        raise PeaksError(f"{where}: {', '.join(sorted(both))} both have peaks and are listed as unsourced")
    return PeakTable(
        {identity.gpu_slug(name): (name, peaks) for name, peaks in parsed.gpus.items()}, dict(parsed.unsourced)
    )


@cache
def default_peaks() -> PeakTable:
    return load_peaks()


# ------------------------------------------------------------------------------------- per run


@dataclass
class RunEfficiency:
    """The derived efficiency facts of one latency run (the sidecar's line)."""

    run: str  # the BenchmarkRun's digest
    kernel: str
    mode: str
    provider: str
    gpu: str  # GPU slug
    environment: str  # ExecutionEnvironment digest
    workload: str  # WorkloadCase digest
    case_key: str
    liger_version: str | None
    observed_at: str
    latency_ns: float
    status: str  # ok | no cost model | no peak | no workload
    reason: str | None = None
    bound: str | None = None  # bytes | flops
    dtype: str | None = None  # the case's float dtype (a FLOP-bound run's peak is this dtype's)
    bytes: int | None = None
    flops: int | None = None
    l2_set_bytes: int | None = None
    l2_bytes: int | None = None  # the GPU's L2 the flag was judged against
    achieved: float | None = None  # bytes/s or FLOP/s
    peak: float | None = None  # datasheet ceiling, same unit
    pct_of_peak: float | None = None
    measured_ceiling: float | None = None  # the sweep sentinel's, same unit
    pct_of_measured: float | None = None
    flags: list[str] = field(default_factory=list)

    @property
    def plausible(self) -> bool:
        return self.status == STATUS_OK and not any(f in IMPLAUSIBLE_FLAGS for f in self.flags)

    @property
    def unit(self) -> str:
        return "TB/s" if self.bound == BYTES else "TFLOP/s"

    def to_dict(self) -> dict[str, Any]:
        # field by field, not dataclasses.asdict: its deep copy of every value was most of a 1M-run site build's
        # sidecar time (every field is a scalar but flags, copied here)
        found = {camel: getattr(self, name) for name, camel in _run_fields()}
        found["flags"] = list(self.flags)
        return found

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunEfficiency:
        fields = {_camel(k): k for k in cls.__dataclass_fields__}
        return cls(**{fields[k]: v for k, v in data.items() if k in fields})


@cache
def _run_fields() -> tuple[tuple[str, str], ...]:
    """(field, its camelCase key) of RunEfficiency, in field order."""
    return tuple((f.name, _camel(f.name)) for f in dataclass_fields(RunEfficiency))


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p.capitalize() for p in rest)


@dataclass
class _Group:
    """What every run of one run template (externalId head) on one workload and environment shares: its
    cost, ceilings and L2. A run adds only its latency, time and version (so 1M runs stay cheap)."""

    kernel: str
    mode: str
    provider: str
    gpu: str
    environment: str
    workload: str
    case_key: str
    status: str = STATUS_OK
    reason: str | None = None
    cost: Cost | None = None
    dtype: str | None = None
    peak: float | None = None
    l2_bytes: int | None = None
    measured: float | None = None  # the sweep sentinel's ceiling on this environment, same unit

    @property
    def l2_resident(self) -> bool:
        return (
            self.cost is not None
            and self.cost.l2_bytes is not None
            and self.l2_bytes is not None
            and self.cost.l2_bytes <= self.l2_bytes
        )


_Row = tuple[_Group, float, RunRow | None]  # (group, median latency ns, the run: its time and version read when asked)


def _figures(
    group: _Group, latency_ns: float, low: float
) -> tuple[float | None, float | None, float | None, list[str]]:
    """(achieved, % of peak, % of measured ceiling, flags) of one run."""
    if group.cost is None:
        return None, None, None, []
    achieved = group.cost.work / (latency_ns * 1e-9)
    pct = achieved / group.peak * 100 if group.peak else None
    pct_measured = achieved / group.measured * 100 if group.measured else None
    flags = [FLAG_L2] if group.l2_resident else []
    if pct_measured is not None and pct_measured > 100:
        flags.append(FLAG_ABOVE_MEASURED)
    if pct is not None and pct > 100:
        flags.append(FLAG_ABOVE_PEAK)
    if not flags and group.status == STATUS_OK and pct is not None and pct < low * 100:
        flags.append(FLAG_LOW)
    return achieved, pct, pct_measured, flags


class _LazyRuns(Mapping):
    """Run digest -> RunEfficiency, built when asked for (a report reads a few thousand of a million)."""

    def __init__(self, rows: dict[str, _Row], low: float):
        self._rows, self._low = rows, low

    def __getitem__(self, digest: str) -> RunEfficiency:
        group, latency, run = self._rows[digest]
        observed_at = run.observed_at if run is not None else ""
        version = run.version if run is not None else None
        achieved, pct, pct_measured, flags = _figures(group, latency, self._low)
        cost = group.cost
        return RunEfficiency(
            run=digest,
            kernel=group.kernel,
            mode=group.mode,
            provider=group.provider,
            gpu=group.gpu,
            environment=group.environment,
            workload=group.workload,
            case_key=group.case_key,
            liger_version=version,
            observed_at=observed_at,
            latency_ns=latency,
            status=group.status,
            reason=group.reason,
            bound=cost and cost.bound,
            dtype=group.dtype if cost else None,
            bytes=cost and cost.bytes,
            flops=cost and cost.flops,
            l2_set_bytes=cost and cost.l2_bytes,
            l2_bytes=group.l2_bytes if cost else None,
            achieved=achieved,
            peak=group.peak,
            pct_of_peak=pct,
            measured_ceiling=group.measured if cost else None,
            pct_of_measured=pct_measured,
            flags=flags,
        )

    def __iter__(self):
        return iter(self._rows)

    def __len__(self) -> int:
        return len(self._rows)


@dataclass
class EfficiencyReport:
    runs: Mapping[str, RunEfficiency]  # run digest -> facts
    low_threshold: float = DEFAULT_LOW_THRESHOLD
    measured: dict[tuple[str, str], float] = field(default_factory=dict)  # (environment, sentinel) -> ceiling
    _rows: dict[str, _Row] | None = field(default=None, repr=False, compare=False)
    _groups: list[_Group] = field(default_factory=list, repr=False, compare=False)
    _scales: dict[tuple[str, str, str, str, str], float] | None = field(default=None, repr=False, compare=False)
    totals: dict[int, int] | None = field(default=None, repr=False, compare=False)  # id(group) -> its runs

    def status_counts(self) -> dict[str, int]:
        """Runs by status (ok, no cost model, no peak, no workload): every run, also where the facts of
        only some were made (the report's series points)."""
        out: dict[str, int] = defaultdict(int)
        if self.totals is not None:
            for g in self._groups:
                out[g.status] += self.totals.get(id(g), 0)
            return dict(out)
        for r in self.runs.values() if self._rows is None else ():
            out[r.status] += 1
        for group, _, _ in (self._rows or {}).values():
            out[group.status] += 1
        return dict(out)

    def percent_scale(self, kernel: str, mode: str, provider: str, workload: str, gpu: str) -> float | None:
        """% of peak x latency in ns of a series (its work over its peak, x 1e11): a run's percent of peak
        is this over its latency. None where it has no figure."""
        if self._scales is None:
            self._scales = {}
            if self._rows is None:  # read back from a sidecar: from its runs
                for r in self.runs.values():
                    if r.pct_of_peak is not None:
                        self._scales[(r.kernel, r.mode, r.provider, r.workload, r.gpu)] = r.pct_of_peak * r.latency_ns
            for g in self._groups:
                if g.cost is not None and g.peak:
                    self._scales[(g.kernel, g.mode, g.provider, g.workload, g.gpu)] = g.cost.work / g.peak * 1e11
        return self._scales.get((kernel, mode, provider, workload, gpu))

    def run_templates(self) -> set[str]:
        """The run templates (externalId heads, `identity.external_id_head`) of the runs derived here."""
        return {run.external_head for _, _, run in (self._rows or {}).values() if run and run.external_head}

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = defaultdict(int)
        if self._rows is None:
            for r in self.runs.values():
                out[r.status] += 1
                for flag in r.flags:
                    out[flag] += 1
            return dict(out)
        for group, latency, _ in self._rows.values():
            out[group.status] += 1
            for flag in _figures(group, latency, self.low_threshold)[3]:
                out[flag] += 1
        return dict(out)


def _case_dtype(case_spec: dict[str, Any]) -> str | None:
    """The case's float dtype (the one a FLOP-bound kernel's peak is taken at)."""
    for tensor in (case_spec.get("tensors") or {}).values():
        if tensor.get("dtype") in ("bf16", "fp16", "fp32"):
            return tensor["dtype"]
    return None


def _environment_l2(index: RecordIndex, environment_digest: str) -> int | None:
    environment = index.get(environment_digest, "ExecutionEnvironment") or {}
    text = ((environment.get("metadata") or {}).get("labels") or {}).get(L2_LABEL)
    return int(text) if isinstance(text, str) and text.isdigit() and int(text) > 0 else None


class _Deriver:
    """Makes one _Group per run template, workload and environment, with everything its runs share."""

    def __init__(self, index: RecordIndex, models: CostModels, peaks: PeakTable):
        self.index, self.models, self.peaks = index, models, peaks
        self.groups: dict[tuple[str, str, str], _Group | None] = {}
        self.l2: dict[str, int | None] = {}
        self.costs: dict[tuple[str, str, str], tuple[Cost | NoCost, str | None] | None] = {}

    def cost(self, kernel: str, mode: str, workload: str) -> tuple[Cost | NoCost, str | None] | None:
        """(cost, float dtype) of a pass on a WorkloadCase, once per case (many environments share it)."""
        key = (kernel, mode, workload)
        if key not in self.costs:
            case = self.index.get(workload, "WorkloadCase")
            spec = (case or {}).get("spec") or {}
            self.costs[key] = None if case is None else (cost_of(self.models, kernel, mode, spec), _case_dtype(spec))
        return self.costs[key]

    def group(self, key: tuple[str, str, str], external_id: str) -> _Group | None:
        """The group of (externalId head, workload, environment), made from the first run's externalId."""
        if key not in self.groups:
            ident = identity.parse_external_id(external_id)
            self.groups[key] = None if ident is None else self._make(ident, key[1], key[2])
        return self.groups[key]

    def series_group(self, series: Series) -> _Group:
        """The group of a latency series (its kernel, pass, provider, GPU, workload and environment)."""
        key = (
            series.kernel,
            series.mode,
            series.provider,
            series.gpu_slug,
            series.workload.case_key,
            series.key.workload_digest,
            series.key.environment_digest,
        )
        if key not in self.groups:
            ident = identity.RunIdentity(
                series.kernel, series.mode, series.provider, series.gpu_slug, series.workload.case_key, ""
            )
            self.groups[key] = self._make(ident, series.key.workload_digest, series.key.environment_digest)
        return self.groups[key]

    def _make(self, ident: identity.RunIdentity, workload: str, environment: str) -> _Group:
        group = _Group(ident.kernel, ident.mode, ident.provider, ident.gpu_slug, environment, workload, ident.case_key)
        found = self.cost(ident.kernel, ident.mode, workload)
        if found is None:
            group.status, group.reason = STATUS_NO_CASE, "the run's WorkloadCase is not in the input"
            return group
        cost, dtype = found
        if isinstance(cost, NoCost):
            group.status, group.reason = STATUS_NO_COST, cost.reason
            return group
        group.cost, group.dtype = cost, dtype
        peaks = self.peaks.get(ident.gpu_slug)
        group.peak = peaks.peak(cost.bound, group.dtype) if peaks else None
        if group.peak is None:
            group.status = STATUS_NO_PEAK
            group.reason = (
                f"no datasheet {cost.bound if cost.bound == BYTES else (group.dtype or '?') + ' FLOP/s'} "
                f"peak for GPU {ident.gpu_slug} in data/gpu-peaks.yaml"
            )
        if environment not in self.l2:
            datasheet = peaks.l2MiB if peaks else None
            self.l2[environment] = _environment_l2(self.index, environment) or (
                int(datasheet * 2**20) if datasheet else None
            )
        group.l2_bytes = self.l2[environment]
        return group


def _sentinel_of(group: _Group) -> str | None:
    """Which sentinel calibrates a group: the copy (bytes), the bf16 matrix product (bf16 FLOPs)."""
    if group.cost is None:
        return None
    if group.cost.bound == BYTES:
        return COPY_SENTINEL_PREFIX
    return MATMUL_SENTINEL_PREFIX if group.dtype == "bf16" else None


def _check_threshold(low_threshold: float) -> None:
    if not 0 < low_threshold <= 1:
        raise ValueError(f"low-efficiency threshold {low_threshold!r} must be a fraction in (0, 1], e.g. 0.3")


def derive_efficiency(
    manifests: Iterable[dict[str, Any]] | RecordIndex,
    *,
    low_threshold: float = DEFAULT_LOW_THRESHOLD,
    models: CostModels | None = None,
    peaks: PeakTable | None = None,
) -> EfficiencyReport:
    """The efficiency of every latency run of `manifests` (history, CI and sweep runs alike): the
    efficiency_table asset's, which the export and the site of a refresh read (`place_sidecar`,
    `read_sidecar`); the `export` and `site` commands' (`export_sidecar`, `build_site`)."""
    _check_threshold(low_threshold)
    index = manifests if isinstance(manifests, RecordIndex) else RecordIndex(manifests)
    deriver = _Deriver(index, models or default_cost_models(), peaks or default_peaks())
    rows: dict[str, _Row] = {}
    groups_seen, unseen = deriver.groups, object()
    for run in index.runs:  # the hot loop of 1M runs: plain lookups, everything shared is in the group
        if run.metric != LATENCY_METRIC:  # latency runs have spec.timing (the memory-run contract, series.run_metric)
            continue
        latency, head = run.value, run.external_head  # head: the externalId's, identity.external_id_head's cut
        if type(latency) not in (int, float) or latency <= 0 or head is None:
            continue
        key = (head, run.workload or "", run.environment or "")
        group = groups_seen.get(key, unseen)
        if group is unseen:
            group = deriver.group(key, run.external_id)
        if group is not None:
            rows[run.digest] = (group, latency, run)
    return _finish(rows, [g for g in deriver.groups.values() if g is not None], low_threshold)


def derive_series_efficiency(
    index: RecordIndex,
    series: Iterable[Series],
    *,
    low_threshold: float = DEFAULT_LOW_THRESHOLD,
    models: CostModels | None = None,
    peaks: PeakTable | None = None,
) -> EfficiencyReport:
    """The same groups and figures as `derive_efficiency`, made from latency series already built (every
    run of a series shares its group), with facts for each series' point per Liger version only. No
    production code calls it (the site derives per run); bench/efficiency.py measures it. Its sentinel
    ceilings are the best of the sentinel series' points."""
    _check_threshold(low_threshold)
    deriver = _Deriver(index, models or default_cost_models(), peaks or default_peaks())
    rows: dict[str, _Row] = {}
    totals: dict[int, int] = defaultdict(int)  # id(group) -> every run of its series, points or not
    for s in series:
        if not s.points:
            continue
        group = deriver.series_group(s)
        totals[id(group)] += sum(p.runs_for_version for p in s.points) + len(s.unversioned_runs)
        for p in s.points:
            rows[p.run_digest] = (group, p.median, index.run(p.run_digest))
    return _finish(rows, list(deriver.groups.values()), low_threshold, totals)


def _finish(
    rows: dict[str, _Row], groups: list[_Group], low_threshold: float, totals: dict[int, int] | None = None
) -> EfficiencyReport:
    """The measured ceilings (the fastest sentinel run of each environment) into every group, and the report."""
    sentinels = (COPY_SENTINEL_PREFIX, MATMUL_SENTINEL_PREFIX)
    fastest: dict[int, float] = {}  # id(sentinel group) -> its shortest latency
    for group, latency, _ in rows.values():
        if group.cost is not None and group.kernel.startswith(sentinels):
            fastest[id(group)] = min(fastest.get(id(group), latency), latency)
    measured: dict[tuple[str, str], float] = {}
    for g in groups:
        if id(g) in fastest:
            key = (
                g.environment,
                COPY_SENTINEL_PREFIX if g.kernel.startswith(COPY_SENTINEL_PREFIX) else MATMUL_SENTINEL_PREFIX,
            )
            measured[key] = max(measured.get(key, 0.0), g.cost.work / (fastest[id(g)] * 1e-9))
    for g in groups:
        sentinel = _sentinel_of(g)
        g.measured = measured.get((g.environment, sentinel)) if sentinel else None
    return EfficiencyReport(_LazyRuns(rows, low_threshold), low_threshold, measured, rows, groups, totals=totals)


def split_efficiency(report: EfficiencyReport, part_of: Mapping[str, int]) -> dict[int, EfficiencyReport]:
    """A derivation of a whole catalogue split by part (run digest -> its part: its publication), each part as
    `derive_efficiency` of its runs alone gives it (its own measured ceilings): a full derivation of the parts
    (efficiency_parts.py) reads every run once."""
    if report._rows is None:
        raise ValueError("a sidecar read back has no groups to split")
    rows: dict[int, dict[str, _Row]] = defaultdict(dict)
    for digest, row in report._rows.items():
        rows[part_of[digest]][digest] = row
    return {part: _finish(own, report._groups, report.low_threshold) for part, own in rows.items()}


def with_measured_ceilings(report: EfficiencyReport, measured: dict[tuple[str, str], float]) -> EfficiencyReport:
    """`report` (derived) with `measured` as its ceilings, (environment, sentinel) -> the fastest sentinel
    reading: a derivation of some of a catalogue's runs (efficiency_parts.py, one publication's) takes the
    ceilings its whole catalogue measured. The report's own `measured` (its runs' sentinels) is left as it was."""
    if report._rows is None:
        raise ValueError("a sidecar read back has no groups to take other ceilings")
    for g in report._groups:
        sentinel = _sentinel_of(g)
        g.measured = measured.get((g.environment, sentinel)) if sentinel else None
    return EfficiencyReport(
        _LazyRuns(report._rows, report.low_threshold),
        report.low_threshold,
        dict(measured),
        report._rows,
        report._groups,
        totals=report.totals,
    )


# -------------------------------------------------------------------------------------- sidecar


def write_sidecar(report: EfficiencyReport, out_dir: str | os.PathLike[str]) -> Path:
    """`efficiency.jsonl`: a header line, then one line per run in run-digest order (byte-stable)."""
    path = Path(out_dir) / SIDECAR_NAME
    header = {
        "kind": SIDECAR_KIND,
        "version": SIDECAR_VERSION,
        "lowThreshold": report.low_threshold,
        "runs": len(report.runs),
        "units": {"achieved": "bytes/s or FLOP/s (see bound)", "latencyNs": "ns"},
    }
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(header, sort_keys=True) + "\n")
        for digest in sorted(report.runs):
            handle.write(json.dumps(report.runs[digest].to_dict(), sort_keys=True) + "\n")
    if path.exists() and filecmp.cmp(tmp, path, shallow=False):  # unchanged: a site rebuild keeps the file
        tmp.unlink()
    else:
        os.replace(tmp, path)
    return path


def place_sidecar(sidecar: str | os.PathLike[str], out_dir: str | os.PathLike[str]) -> Path:
    """A sidecar `write_sidecar` wrote, put beside an export's files as it is, so every output shows one
    derivation: a hard link to it where the file system allows (every writer of a sidecar replaces the file,
    never writes into it, so a link is a copy that costs nothing: at 1M runs the sidecar is 800 MB, compared
    and copied twice a night), else a copy (kept where its bytes are already the same)."""
    path = Path(out_dir) / SIDECAR_NAME
    if path.exists() and os.path.samefile(sidecar, path):
        return path
    tmp = path.with_name(path.name + ".tmp")
    tmp.unlink(missing_ok=True)
    try:
        os.link(sidecar, tmp)
    except OSError:  # another file system, or one without links
        if path.exists() and filecmp.cmp(sidecar, path, shallow=False):
            return path
        shutil.copyfile(sidecar, tmp)
    os.replace(tmp, path)
    return path


def export_sidecar(
    manifests: Iterable[dict[str, Any]],
    out_dir: str | os.PathLike[str],
    *,
    low_threshold: float = DEFAULT_LOW_THRESHOLD,
) -> Path:
    """The derived figures of an export (`export`, the catalogue_export asset): `efficiency.jsonl` beside
    the export's files, so the records themselves stay exactly as published."""
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    return write_sidecar(derive_efficiency(manifests, low_threshold=low_threshold), out_dir)


def read_sidecar(path: str | os.PathLike[str]) -> EfficiencyReport:
    """Parse what `write_sidecar` wrote; ValueError naming the file and line otherwise."""
    runs: dict[str, RunEfficiency] = {}
    with open(path, encoding="utf-8") as handle:
        header = json.loads(handle.readline() or "null")
        if not isinstance(header, dict) or header.get("kind") != SIDECAR_KIND:
            raise ValueError(f"{path}: line 1 is not an efficiency sidecar header (kind {SIDECAR_KIND!r})")
        for number, line in enumerate(handle, start=2):
            try:
                facts = RunEfficiency.from_dict(json.loads(line))
            except (ValueError, TypeError) as error:
                raise ValueError(f"{path}: line {number}: {error}") from error
            runs[facts.run] = facts
    return EfficiencyReport(runs, float(header.get("lowThreshold", DEFAULT_LOW_THRESHOLD)))


# ----------------------------------------------------------------------------- the ranking table


@dataclass(frozen=True)
class TableRow:
    """One (GPU, kernel, pass, provider): its largest workload's newest run."""

    gpu: str  # display name
    facts: RunEfficiency

    def to_dict(self) -> dict[str, Any]:
        return {"gpuName": self.gpu, **self.facts.to_dict()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TableRow:
        rest = dict(data)
        return cls(rest.pop("gpuName"), RunEfficiency.from_dict(rest))


def rank_by_efficiency(
    series: Iterable[Series], report: EfficiencyReport, *, roles: tuple[str, ...] = ("liger",)
) -> list[TableRow]:
    """Per GPU, kernel, pass and provider (of `roles`), the efficiency of its largest workload (most work)
    at its newest Liger version; ordered by GPU, then plausible readings from the least efficient up,
    then implausible ones. Runs without a figure (no cost model, no peak) are left out."""
    return best_candidates(ranking_candidates(series, report, roles=roles))


@dataclass(frozen=True)
class Candidate:
    """One series' bid for its (GPU, kernel, pass, provider) row of the ranking: its newest point's figures,
    ranked by (work, observed at, run). The best of each key is the row (`best_candidates`), so candidates kept
    per run template (efficiency_parts.py) give the ranking without the series of other templates."""

    key: tuple[str, str, str, str]  # GPU slug, kernel, pass, provider
    rank: tuple[Any, str, str]
    row: TableRow

    def to_dict(self) -> dict[str, Any]:
        return {"key": list(self.key), "rank": list(self.rank), "row": self.row.to_dict()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Candidate:
        return cls(tuple(data["key"]), tuple(data["rank"]), TableRow.from_dict(data["row"]))  # type: ignore[arg-type]


def ranking_candidates(
    series: Iterable[Series], report: EfficiencyReport, *, roles: tuple[str, ...] = ("liger",)
) -> list[Candidate]:
    """Each series' candidate (of `roles`, with a percent of peak at its newest point)."""
    found = []
    for s in series:
        facts = report.runs.get(s.latest.run_digest) if s.latest and s.role in roles else None
        if facts is None or facts.pct_of_peak is None:
            continue
        work = facts.bytes if facts.bound == BYTES else facts.flops
        found.append(
            Candidate(
                (s.gpu_slug, s.kernel, s.mode, s.provider),
                (work or 0, facts.observed_at, facts.run),
                TableRow(s.gpu, facts),
            )
        )
    return found


def best_candidates(candidates: Iterable[Candidate]) -> list[TableRow]:
    """The best candidate of each key, in the ranking's order (`rank_by_efficiency`)."""
    best: dict[tuple[str, str, str, str], Candidate] = {}
    for c in candidates:
        if c.key not in best or c.rank > best[c.key].rank:
            best[c.key] = c
    return sorted((c.row for c in best.values()), key=ranking_order)


def ranking_order(row: TableRow) -> tuple:
    """The ranking's order: by GPU, plausible readings from the least efficient up, then implausible ones."""
    facts = row.facts
    return (row.gpu, not facts.plausible, facts.pct_of_peak, facts.kernel, facts.mode, facts.provider)


def table_markdown(rows: list[TableRow], limit: int = 30) -> str:
    lines = [
        "| GPU | kernel | pass | provider | workload | achieved | % of peak | flags |",
        "| --- | --- | --- | --- | --- | ---: | ---: | --- |",
    ]
    for row in rows[:limit]:
        f = row.facts
        lines.append(
            f"| {row.gpu} | {f.kernel} | {f.mode} | {f.provider} | {f.case_key} | "
            f"{f.achieved / TERA:.3g} {f.unit} | {f.pct_of_peak:.0f} % | {', '.join(f.flags)} |"
        )
    return "\n".join(lines)


# ------------------------------------------------------------------------- a change's efficiency


def format_pct(value: float) -> str:
    """A percent of peak as the page shows it: one decimal under 10 % (0.4 %, 8.2 %), else whole."""
    return f"{value:.1f} %" if value < 10 else f"{value:.0f} %"


def change_efficiency(
    report: EfficiencyReport,
    kernel: str,
    mode: str,
    provider: str,
    workload: str,
    gpu: str,
    before_ns: float,
    after_ns: float,
) -> tuple[float, float] | None:
    """(% of peak before, after) of a latency change of one series, from its levels on either side; None
    where the series has no figure (every run of a series shares its work and its peak)."""
    scale = report.percent_scale(kernel, mode, provider, workload, gpu)
    return None if scale is None else (scale / before_ns, scale / after_ns)


CAVEAT_OF_FLAG = {
    FLAG_ABOVE_PEAK: "implausible: {pct} of the datasheet peak, above 100 % (the run did less work than its cost "
    "model charges, or a cache served it)",
    FLAG_ABOVE_MEASURED: "implausible: above the ceiling a sweep measured on this host",
    FLAG_L2: "implausible: its re-read set fits in the GPU's L2, so HBM traffic did not bound it",
}
GRADIENT_IN_FORWARD = (
    "Liger computes the gradients in this kernel's forward (its backward only scales them): a forward "
    "without them is not like for like; compare providers on full"
)


def efficiency_caveats(facts: RunEfficiency | None) -> list[str]:
    """What an efficiency chart's point must say beside its percent of peak (issue 30): why its reading is
    implausible (above a ceiling, or L2-resident); nothing for a plausible one."""
    if facts is None or facts.pct_of_peak is None:
        return []
    return [CAVEAT_OF_FLAG[f].format(pct=format_pct(facts.pct_of_peak)) for f in facts.flags if f in CAVEAT_OF_FLAG]


def pass_caveats(kernel: str, mode: str, models: CostModels | None = None) -> list[str]:
    """What every chart's point of this kernel and pass must say (issue 30): a forward of a kernel whose Liger
    forward computes the gradients is not comparable with a forward that does not."""
    model = (models or default_cost_models()).kernels.get(kernel)
    return [GRADIENT_IN_FORWARD] if mode == "forward" and model is not None and model.gradient_in_forward else []
