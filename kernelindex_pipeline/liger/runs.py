"""The proven fast path: BenchmarkRuns from pre-cut canonical text (RFC 8785) and a row's numbers.

Everything a run shares with other rows of its key (digests, name head, title, the constant parts of
its canonical JSON) is a RunTemplate, made once per key by `liger/normalize.py`; a row that passed
every check becomes a RunItem (its numbers and timestamp), and `build_run` turns the two into the
run's dict, canonical line and digest. Variable parts are numbers and [a-z0-9-] text that need no
escaping; tests prove every line equal to `records.canonical.canonical_bytes` of its manifest.
`build_run` is pure, so worker processes (`liger/parallel.py`) run it too.

Two metrics: `latency` (speed rows: timing.latencyNs.median, p20/p80 in measurements) and
`peak_memory` (memory rows, full profile: no timing; measurements[0] is the median in bytes, exactly
MB x 2**20, with p20/p80 after it), as COMMON.md's memory-run contract says.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from kernelindex_pipeline.records.canonical import API_VERSION, canonical_bytes, digest_of
from kernelindex_pipeline.records.jsnumber import js_number_text, ms_to_ns, whole
from kernelindex_pipeline.records.metrics import LATENCY, PEAK_MEMORY
from kernelindex_pipeline.records.names import NAME_LIMIT
from kernelindex_pipeline.records.units import MAX_SAFE_INTEGER

RUN_SOURCE = "liger-kernel-bench"
MIB = 2**20  # Liger's MB is max_memory_allocated() / 2**20


@dataclass
class RunTemplate:
    """Everything a run shares with the other rows of its key, with its canonical text pre-cut.

    A latency run's canonical spec is `head + measurements + observed + <observedAt> + source + <ts slug>
    + metrics_key + <metrics> + timing + <median> + tail`, a peak-memory run's `head + measurements +
    observed + <observedAt> + source + <ts slug> + metrics_key + <metrics> + tail` (its tail holds the
    source, status and workload): keys in RFC 8785 order, constant parts escaped once (`make_template`),
    variable parts are numbers and [a-z0-9-] text that need no escaping.
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
    metric: str = LATENCY  # LATENCY or PEAK_MEMORY
    raw_samples: dict[str, Any] | None = None  # the row's samples entry (measured speed rows only)
    # metadata labels before liger_version (RFC 8785 order) and their canonical text: the code measured
    labels: tuple[tuple[str, str], ...] = ()
    labels_text: str = ""
    # labels of a measured run beyond those (throttled, sentinel_band): such a run takes the slow path
    extra_labels: dict[str, str] | None = None


class RunItem(NamedTuple):
    """A row that passed every check (see Normalizer._run), with its template: what `build_run` needs.

    A NamedTuple so worker processes receive it as a cheap tuple (the template travels by id).
    """

    template: Any  # RunTemplate (its id, inside worker batches)
    y50: float  # the row's numbers as parsed: ms (latency) or MB (peak memory)
    median: int | float  # latency: median in ns; peak memory: median in bytes
    y20: float
    y80: float
    observed_at: str
    ts_slug: str
    ts_name: str  # the timestamp's part of the run name
    external_id: str
    version: str
    version_json: str  # liger_version as canonical JSON text


_BODY_PREFIX = '{"apiVersion":"' + API_VERSION + '","kind":"BenchmarkRun",'
_META_PREFIX = _BODY_PREFIX + '"metadata":{"labels":{"liger_version":'
_LABELS_OPEN = _BODY_PREFIX + '"metadata":{"labels":{'
# The commit (or tag) of Liger that a run measured, where its source names it (a CI run directory
# benchmarks/<sha>[-vX.Y.Z]/): a metadata label, so no digest changes; regression attribution reads it
# (liger/run_facts.py).
CODE_REF_LABEL = "liger_code_ref"
_OBSERVED = ',"observedAt":"'
_METRICS = '","metrics":'
_TIMING = ',"source":"' + RUN_SOURCE + '"},"status":"passed","timing":{"latencyNs":{"median":'
_P20 = ',"measurements":[{"metric":"latency","statistic":"p20","unit":"ns","value":'
_P80 = '},{"metric":"latency","statistic":"p80","unit":"ns","value":'
_MEM_MEDIAN = ',"measurements":[{"metric":"peak_memory","statistic":"median","unit":"bytes","value":'
_MEM_P20 = '},{"metric":"peak_memory","statistic":"p20","unit":"bytes","value":'
_MEM_P80 = '},{"metric":"peak_memory","statistic":"p80","unit":"bytes","value":'
_MEM_TAIL = ',"source":"' + RUN_SOURCE + '"},"status":"passed","workloadDigest":'


def json_text(value: Any) -> str:
    return canonical_bytes(value).decode("utf-8")


def _number_text(value: float | int) -> str:
    """js_number_text with the common cases inline (plain floats, ints)."""
    if type(value) is int:
        return str(value) if -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER else js_number_text(value)
    if 1e-4 <= value < 1e16 or -1e16 < value <= -1e-4:
        r = repr(value)
        return r[:-2] if r.endswith(".0") else r
    return js_number_text(value)


def ns_of_ms(ms: float) -> int | float:
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


def make_template(
    template_id: int,
    *,
    name_head: str,
    title: str,
    benchmark: str,
    external_prefix: str,
    digests: dict[str, str],
    evidence_logs: dict[str, str] | None,
    metric: str = LATENCY,
    code_ref: str | None = None,
) -> RunTemplate:
    """A run template with its canonical text pre-cut (see RunTemplate for how the parts join)."""
    head = '{"environmentDigest":' + json_text(digests["environmentDigest"])
    if evidence_logs is not None:
        head += ',"evidence":{"logs":' + json_text(evidence_logs) + "}"
    head += ',"implementationDigest":' + json_text(digests["implementationDigest"])
    case = json_text(digests["workloadDigest"])
    tail = (
        _MEM_TAIL + case + "}"
        if metric == PEAK_MEMORY
        else '},"primaryStatistic":"median"},"workloadDigest":' + case + "}"
    )
    source = (
        '","protocolDigest":'
        + json_text(digests["protocolDigest"])
        + ',"sourceNative":{"benchmark":'
        + json_text(benchmark)
        + ',"externalId":'
        + json_text(external_prefix)[:-1]
    )
    return RunTemplate(
        id=template_id,
        name_head=name_head,
        title=title,
        title_json=json_text(title),
        benchmark=benchmark,
        external_prefix=external_prefix,
        digests=digests,
        evidence_logs=evidence_logs,
        head=head,
        source=source,
        tail=tail,
        metric=metric,
        labels=((CODE_REF_LABEL, code_ref),) if code_ref else (),
        labels_text=f'"{CODE_REF_LABEL}":{json_text(code_ref)},' if code_ref else "",
    )


def mib_to_bytes(mb: float) -> int | float:
    """Liger's MB (MiB) in bytes: exact, since multiplying by a power of two only moves the exponent."""
    value = mb * MIB
    return whole(value) if value.is_integer() and -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER else value


def build_run(item: RunItem, validate: Callable[[dict[str, Any]], None], with_line: bool = True) -> RunRecord:
    """One BenchmarkRun from a row that passed every check (see Normalizer._run): pure, so worker
    processes can run it."""
    if item.template.metric == PEAK_MEMORY:
        return _build_memory_run(item, validate, with_line)
    t, ms50, median, ms20, ms80, observed_at, ts_slug, ts_name, external_id, version, version_json = item
    if ms50.is_integer():
        ms50 = whole(ms50)
    if ms20 - ms20 == 0 and ms80 - ms80 == 0:  # both finite (inf - inf and NaN - NaN are NaN)
        p20, p80 = ns_of_ms(ms20), ns_of_ms(ms80)
        if ms20.is_integer():
            ms20 = whole(ms20)
        if ms80.is_integer():
            ms80 = whole(ms80)
        measurements = _P20 + _number_text(p20) + _P80 + _number_text(p80) + "}]"
        metrics_text = (
            '{"ms_20":' + _number_text(ms20) + ',"ms_50":' + _number_text(ms50) + ',"ms_80":' + _number_text(ms80) + "}"
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
    _add_source_facts(spec, t, external_id, metrics, observed_at)
    spec_text = _spec_text(t, measurements, observed_at, ts_slug, metrics_text, _TIMING + str(median))
    return _finish_run(
        t, spec, spec_text, ts_name, external_id, version, version_json, validate, with_line, raw_samples=t.raw_samples
    )


def _build_memory_run(item: RunItem, validate: Callable[[dict[str, Any]], None], with_line: bool) -> RunRecord:
    t, mb50, median, mb20, mb80, observed_at, ts_slug, ts_name, external_id, version, version_json = item
    if mb50.is_integer():
        mb50 = whole(mb50)
    measurements = [{"metric": PEAK_MEMORY, "unit": "bytes", "statistic": "median", "value": median}]
    measurements_text = _MEM_MEDIAN + _number_text(median)
    if mb20 - mb20 == 0 and mb80 - mb80 == 0:  # both finite
        p20, p80 = mib_to_bytes(mb20), mib_to_bytes(mb80)
        if mb20.is_integer():
            mb20 = whole(mb20)
        if mb80.is_integer():
            mb80 = whole(mb80)
        measurements.append({"metric": PEAK_MEMORY, "unit": "bytes", "statistic": "p20", "value": p20})
        measurements.append({"metric": PEAK_MEMORY, "unit": "bytes", "statistic": "p80", "value": p80})
        measurements_text += _MEM_P20 + _number_text(p20) + _MEM_P80 + _number_text(p80)
        metrics_text = (
            '{"mb_20":' + _number_text(mb20) + ',"mb_50":' + _number_text(mb50) + ',"mb_80":' + _number_text(mb80) + "}"
        )
        metrics = {"mb_50": mb50, "mb_20": mb20, "mb_80": mb80}
    else:
        metrics_text = '{"mb_50":' + _number_text(mb50) + "}"
        metrics = {"mb_50": mb50}
    spec: dict[str, Any] = {**t.digests, "status": "passed", "measurements": measurements}
    _add_source_facts(spec, t, external_id, metrics, observed_at)
    spec_text = _spec_text(t, measurements_text + "}]", observed_at, ts_slug, metrics_text)
    return _finish_run(t, spec, spec_text, ts_name, external_id, version, version_json, validate, with_line)


def _add_source_facts(
    spec: dict[str, Any], t: RunTemplate, external_id: str, metrics: dict[str, Any], observed_at: str
) -> None:
    """What every run's spec says of its source row, speed or peak memory alike: sourceNative (the
    benchmark, externalId and the row's own numbers), observedAt and the evidence logs."""
    spec["sourceNative"] = {
        "source": RUN_SOURCE,
        "benchmark": t.benchmark,
        "externalId": external_id,
        "metrics": metrics,
    }
    spec["observedAt"] = observed_at
    if t.evidence_logs is not None:
        spec["evidence"] = {"logs": t.evidence_logs}


def _spec_text(
    t: RunTemplate, measurements: str, observed_at: str, ts_slug: str, metrics_text: str, timing: str = ""
) -> str:
    """The run's canonical spec text from its template's pre-cut parts (the layout RunTemplate describes;
    `timing`: a latency run's timing key and median, nothing for a peak-memory run)."""
    return (
        t.head + measurements + _OBSERVED + observed_at + t.source + ts_slug + _METRICS + metrics_text + timing + t.tail
    )


def _finish_run(
    t: RunTemplate,
    spec: dict[str, Any],
    spec_text: str,
    ts_name: str,
    external_id: str,
    version: str,
    version_json: str,
    validate: Callable[[dict[str, Any]], None],
    with_line: bool,
    *,
    raw_samples: Any = None,
) -> RunRecord:
    """Digest, name and canonical line of a run whose spec and pre-cut canonical spec text are built."""
    digest = "sha256:" + hashlib.sha256((_BODY_PREFIX + '"spec":' + spec_text + "}").encode()).hexdigest()
    # kebab(name_prefix + timestamp) without redoing the prefix: the prefix ends in "-", so a
    # timestamp starting with a separator merges into it; then strip the end and cut at 100.
    name = (t.name_head + (ts_name[1:] if ts_name[:1] == "-" else ts_name)).rstrip("-")[:NAME_LIMIT]
    metadata = {
        "name": name,
        "title": t.title,
        "labels": {**dict(t.labels), **(t.extra_labels or {}), "liger_version": version},
    }
    manifest = {"apiVersion": API_VERSION, "kind": "BenchmarkRun", "metadata": metadata, "spec": spec}
    if raw_samples is not None or t.extra_labels:
        # Measured with raw samples or labels of its own: the enrichment step changes the spec (and the
        # labels the metadata), so the pre-cut canonical text no longer applies; digest and line come
        # from the manifest itself (few runs, slow path).
        if raw_samples is not None:
            from kernelindex_pipeline.liger.sample_statistics import with_raw_samples  # numpy: only where needed

            manifest["spec"] = with_raw_samples(spec, raw_samples)
        validate(manifest)
        line = canonical_bytes(manifest) if with_line else b""
        return RunRecord(name, digest_of(manifest), external_id, line, manifest)
    validate(manifest)
    line = b""
    if with_line:
        line = (
            (_LABELS_OPEN + t.labels_text + '"liger_version":' if t.labels_text else _META_PREFIX)
            + version_json
            + '},"name":"'
            + name
            + '","title":'
            + t.title_json
            + '},"spec":'
            + spec_text
            + "}"
        ).encode()
    return RunRecord(name, digest, external_id, line, manifest)
