"""What regression detection needs to know about one run, and how a source's records provide it.

Detection (`detect.py`, `host_effects.py`, `changepoints.py`) reads runs only through `RunFacts`,
a plain record of run facts; it never parses a source's identities itself. Each source of runs has an
*adapter* (`RunFactsAdapter`), kept on the source's side (Liger's: `liger/run_facts.py`, which parses the
externalIds `liger/identity.py` builds): `facts(run)` gives a run's RunFacts or why it cannot be used,
and `see(record)` is shown every other record first (catalogues and records files list the records a run
refers to before the runs), for a source whose run facts depend on them. The generic part every adapter
needs (status, observedAt, the four digests, the measured value by the records' contract) is
`measured_run` here, so adapters differ only in what is source-specific.

A run names its source in ``spec.sourceNative.source``; `SOURCE_ADAPTERS` maps that name to the adapter's
class by import path, made once per detection, so this module (and detection) imports nothing of any
source; a second source plugs in with one line here and its own module. (Not a Python entry point: that
would need every installed environment re-installed before a new source is seen.)
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple, Protocol

from kernelindex_pipeline.records.metrics import LATENCY, PEAK_MEMORY, run_metric
from kernelindex_pipeline.records.units import MAX_SAFE_INTEGER

UNLABELLED = "unlabelled"

# spec.sourceNative.source -> "module:class" of its adapter (one adapter object per class and detection)
SOURCE_ADAPTERS: dict[str, str] = {
    "liger-kernel-bench": "kernelindex_pipeline.liger.run_facts:LigerRunFacts",
    # the sweep's host-speed sentinel (liger/sentinel.py) writes Liger's identity formats
    "kernelindex-sentinel": "kernelindex_pipeline.liger.run_facts:LigerRunFacts",
}


class RunFacts(NamedTuple):
    """One usable run, as detection sees it. A series is (kernel, mode, provider, the three digests,
    gpu, metric); `script` is the benchmark script the run came from (a host hiccup can hit one script
    of a sweep); `version` the source's version label of the code measured. (A NamedTuple: detection
    makes one per run, a million in a large catalogue, and a tuple is the cheapest plain record.)"""

    kernel: str
    mode: str
    provider: str
    gpu: str  # the hardware's slug: part of the series, so two GPUs are never compared
    case_key: str
    metric: str  # LATENCY (ns) or PEAK_MEMORY (bytes)
    value: float
    observed_at: str  # ISO 8601 measurement time
    version: str  # version label of the measured code (UNLABELLED when the record has none)
    implementation_digest: str
    workload_digest: str
    protocol_digest: str
    environment_digest: str  # the software environment (torch, triton, ...): a cause, not a series
    script: str
    # The code measured, when the source knows it: a commit sha or a release tag (attribution fills it).
    code_ref: str | None = None
    # Where the run sits on the run timeline, in seconds; runs are ordered by it. None: its measurement
    # time. A source that knows the code's commit can give the commit's time, so a manual run of an
    # older commit, measured later, is placed where its code belongs.
    order: float | None = None
    # Where the measurement was made, when the source tells its kinds apart (Liger: committed history
    # rows, Liger's CI runs, our sweeps): machine, toolchain and code differ at once across two origins, so
    # each origin's runs are series of their own (`detect.py`). None: one origin.
    origin: str | None = None


class RunFactsAdapter(Protocol):
    def see(self, manifest: dict[str, Any]) -> None:
        """A record that is not a BenchmarkRun (seen before the runs that refer to it)."""

    def facts(self, manifest: dict[str, Any]) -> RunFacts | str:
        """The run facts of one BenchmarkRun, or why it cannot be used."""

    # Optional: `enter_source(label: str | None)`, told before the records of one source run given as a
    # whole (a records file, e.g. `2845fe8/records.jsonl`: its label may name the code measured).
    # Optional, for a run table (`RunFactsTable`): `own_facts(run)`, a staticmethod, what the run says by
    # itself (no other record seen: what a table keeps per run), and `complete(facts)`, what `facts` adds to
    # it once the other records are seen; `facts(run)` is then `complete(own_facts(run))`. With it, optionally,
    # `completes_from`: the RunFacts fields `complete` reads or changes (it changes no other, and its result in
    # them depends only on them and on the records seen), so a run table's columns are completed once per
    # distinct combination of them (`RunColumns`) instead of once per run.


FactsFunction = Callable[[dict[str, Any]], "RunFacts | str"]
FactsAdapter = RunFactsAdapter | FactsFunction  # a plain function: an adapter that needs no other record


class MeasuredRun(NamedTuple):
    """The source-independent part of a BenchmarkRun (the records' contract)."""

    metric: str
    value: float
    observed_at: str
    implementation_digest: str
    workload_digest: str
    protocol_digest: str
    environment_digest: str
    labels: Mapping[str, Any]


def measured_run(spec: dict[str, Any], metadata: dict[str, Any]) -> MeasuredRun | str:
    """The measured value, time and digests of a passed run, or why there are none."""
    if spec.get("status", "passed") != "passed":
        return "not passed"
    measured = metric_value(spec)
    if measured is None:
        return "no positive latency median or peak memory"
    observed = spec.get("observedAt")
    implementation, workload = spec.get("implementationDigest"), spec.get("workloadDigest")
    protocol, environment = spec.get("protocolDigest"), spec.get("environmentDigest")
    if not (
        isinstance(observed, str)
        and implementation
        and workload
        and protocol
        and environment
        and isinstance(implementation, str)
        and isinstance(workload, str)
        and isinstance(protocol, str)
        and isinstance(environment, str)
    ):
        return "no observedAt or a missing referenced digest"
    return MeasuredRun(
        measured[0],
        measured[1],
        observed,
        implementation,
        workload,
        protocol,
        environment,
        (metadata or {}).get("labels") or {},
    )


def metric_value(spec: dict[str, Any]) -> tuple[str, float] | None:
    """("latency", median ns) when the run has timing, ("peak_memory", bytes) for a memory run (the
    memory-run contract, read by records.metrics.run_metric)."""
    metric = run_metric(spec)
    if metric == LATENCY:
        timing = spec["timing"]
        value = (timing.get("latencyNs") or {}).get("median") if isinstance(timing, dict) else None
    elif metric == PEAK_MEMORY:
        value = spec["measurements"][0].get("value")
    else:
        return None
    return (metric, float(value)) if _positive(value) else None


def _positive(value: Any) -> bool:
    # Whole ns or bytes, 1 to 2^53 - 1: a 5e-324 or 1e308 is no measurement (and its log overflows ratios).
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 1 <= value <= MAX_SAFE_INTEGER


class _Function:
    def __init__(self, function: FactsFunction) -> None:
        self.facts = function

    def see(self, manifest: dict[str, Any]) -> None:
        pass


class AdapterRegistry:
    """The adapters of one detection by source name: the given ones, else SOURCE_ADAPTERS' (each class
    imported and made once, up front, so that each sees every record before the runs)."""

    def __init__(self, given: Mapping[str, FactsAdapter] | None = None) -> None:
        made: dict[str, RunFactsAdapter] = {}
        self._adapters: dict[str, RunFactsAdapter] = {}
        for source, path in SOURCE_ADAPTERS.items():
            if path not in made:
                module, _, name = path.partition(":")
                made[path] = getattr(importlib.import_module(module), name)()
            self._adapters[source] = made[path]
        for source, adapter in (given or {}).items():
            self._adapters[source] = adapter if hasattr(adapter, "facts") else _Function(adapter)
        self._distinct = list({id(a): a for a in self._adapters.values()}.values())
        self._functions = {source: adapter.facts for source, adapter in self._adapters.items()}
        self.no_adapter = (
            "no run-facts adapter for its source (spec.sourceNative.source; known: " + ", ".join(self.known()) + ")"
        )

    def see(self, manifest: dict[str, Any]) -> None:
        for adapter in self._distinct:
            adapter.see(manifest)

    def enter(self, label: str | None) -> None:
        """The records that follow are one source run named `label` (None: runs of a catalogue)."""
        for adapter in self._distinct:
            enter = getattr(adapter, "enter_source", None)
            if enter is not None:
                enter(label)

    def completion(self, source: str | None) -> Callable[[RunFacts], RunFacts | str] | None:
        """The adapter's `complete` for a run table's runs of `source`; None without an adapter for it.
        TypeError for an adapter that reads only manifests (a plain function): it cannot use a run table."""
        adapter = self._adapters.get(source) if isinstance(source, str) else None
        if adapter is None:
            return None
        complete = getattr(adapter, "complete", None)
        if complete is None:
            raise TypeError(f"the run-facts adapter of {source!r} reads manifests only (no complete()): no run table")
        return complete

    def completes_from(self, source: str | None) -> tuple[str, ...] | None:
        """The fields the `completion` of `source` reads and sets (the adapter's `completes_from`); None where
        the adapter does not say (its runs are completed one by one)."""
        adapter = self._adapters.get(source) if isinstance(source, str) else None
        fields = getattr(adapter, "completes_from", None)
        return tuple(fields) if fields is not None else None

    def get(self, source: str) -> RunFactsAdapter | None:
        return self._adapters.get(source)

    def facts_function(self, source: Any) -> FactsFunction | None:
        return self._functions.get(source) if isinstance(source, str) else None

    def known(self) -> list[str]:
        return sorted(self._adapters)


class RunColumns(Protocol):
    """A run table's rows as columns, in the catalogue's order (what `RunFactsTable.runs` gives row by row):
    ``source``, ``adapter`` (an adapter class read the run), ``reason`` (why it cannot be used) and every
    RunFacts field, null where the row has no facts."""

    rows: int

    def codes(self, name: str) -> tuple[Any, list[Any]]:
        """(an integer array: each row's index into the list, -1 for null; the column's distinct values)."""

    def floats(self, name: str) -> Any:
        """A float array, NaN for null."""

    def strings(self, name: str) -> list[str | None]:
        """Each row's value."""


class RunFactsTable(NamedTuple):
    """A catalogue's runs as a run table keeps them, for detection without reading every run's manifest:
    `records`, every record that is not a BenchmarkRun (in the catalogue's order, seen first), and `runs`,
    (source, `own_facts_of` of the run) per run in the catalogue's order; `columns`, when the table has them,
    the same rows as `RunColumns` (detection reads those: a Python object per run was most of its time)."""

    records: Iterable[dict[str, Any]]
    runs: Iterable[tuple[str | None, RunFacts | str | None]]
    fingerprint: str | None = None  # the table's content (what its runs and records are), when it knows it
    columns: Callable[[], RunColumns] | None = None


def own_facts_of(manifest: dict[str, Any]) -> tuple[str | None, RunFacts | str | None]:
    """(the run's source, what the run says by itself through its source's adapter class in SOURCE_ADAPTERS:
    its facts, why it cannot be used, or None when no adapter class reads its source) for a run table."""
    native = (manifest.get("spec") or {}).get("sourceNative")
    source = native.get("source") if isinstance(native, dict) else None
    own = _own_facts_function(source) if isinstance(source, str) else None
    return (source if isinstance(source, str) else None), None if own is None else own(manifest)


@functools.cache
def _own_facts_function(source: str) -> Callable[[dict[str, Any]], RunFacts | str] | None:
    path = SOURCE_ADAPTERS.get(source)
    if path is None:
        return None
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name).own_facts


def facts_of(manifest: dict[str, Any], registry: AdapterRegistry) -> RunFacts | str:
    """The run facts of one BenchmarkRun by its source's adapter, or why there are none."""
    native = (manifest.get("spec") or {}).get("sourceNative")
    source = native.get("source") if isinstance(native, dict) else None
    facts = registry.facts_function(source)
    return facts(manifest) if facts is not None else registry.no_adapter
