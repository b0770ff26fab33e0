"""Every BenchmarkRun the tests build: the seed manifests and their clones (`seed_manifests`, `cloned_runs`;
conftest's `catalogue_records` and `synthetic_runs`), runs shaped for regression detection
(`detection_run`), constructed manifests of the report and detection (`SampleCatalogue`), and the facts a
sweep host reports that its ExecutionEnvironment is made from (`sample_host_capture`).

`SampleCatalogue.run(...)` adds one BenchmarkRun (and the records it references,
shaped as the Liger import writes them) for given kernel, mode, provider, GPU,
workload axes, Liger version and latencies. Not for publication: the specs are
only as complete as reporting needs.
"""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta
from typing import Any

from kernelindex_pipeline.liger import identity
from kernelindex_pipeline.records.canonical import API_VERSION, digest_of
from kernelindex_pipeline.records.names import kebab
from kernelindex_pipeline.reporting.series import provider_table
from tests.support import FIXTURES

_GPUS = {
    "NVIDIA H100 80GB HBM3": {
        "vendor": "nvidia",
        "product": "NVIDIA H100",
        "architecture": "sm_90",
        "formFactor": "80GB HBM3",
    },
    "NVIDIA A100-SXM4-80GB": {
        "vendor": "nvidia",
        "product": "NVIDIA A100",
        "architecture": "sm_80",
        "formFactor": "SXM4-80GB",
    },
}


# The run a test or demo gets unless it says otherwise (speed and peak-memory runs alike).
SAMPLE_KERNEL = "rms_norm"
SAMPLE_PROVIDER = "liger"
SAMPLE_GPU = "NVIDIA H100 80GB HBM3"
SAMPLE_DTYPE = "bf16"
SAMPLE_VERSION = "0.8.0"
SAMPLE_TIMESTAMP = "2025-08-05 00:08:54"


def _manifest(kind: str, metadata: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": kind, "metadata": metadata, "spec": spec}


class SampleCatalogue:
    def __init__(self) -> None:
        self.by_digest: dict[str, dict[str, Any]] = {}

    def _add(self, manifest: dict[str, Any]) -> str:
        digest = digest_of(manifest)
        self.by_digest.setdefault(digest, manifest)
        return digest

    def manifests(self) -> list[dict[str, Any]]:
        return list(self.by_digest.values())

    def run(
        self,
        *,
        kernel: str = SAMPLE_KERNEL,
        mode: str = "forward",
        provider: str = SAMPLE_PROVIDER,
        gpu: str = SAMPLE_GPU,
        axes: dict[str, int] | None = None,
        dtype: str = SAMPLE_DTYPE,
        version: str | None = SAMPLE_VERSION,
        median_ns: int = 1_000_000,
        p20_ns: int | None = None,
        p80_ns: int | None = None,
        band: float | None = 0.02,
        timestamp: str = SAMPLE_TIMESTAMP,
        model: str | None = None,
        tensors: dict[str, Any] | None = None,
        environment_labels: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """Add one speed run; p20/p80 default to median -/+ `band` (None: no band at all). `model`: the
        model name of a model_config row (its WorkloadCase gets the categorical x label). `tensors`: the
        WorkloadCase's input tensors (default: one `x` of the axes' shape); `environment_labels`: the
        ExecutionEnvironment's metadata labels (e.g. a sweep host's reported L2 size)."""
        if band is not None:
            p20_ns = p20_ns if p20_ns is not None else round(median_ns * (1 - band))
            p80_ns = p80_ns if p80_ns is not None else round(median_ns * (1 + band))
        spec: dict[str, Any] = {"timing": {"primaryStatistic": "median", "latencyNs": {"median": median_ns}}}
        metrics: dict[str, float] = {"ms_50": median_ns / 1e6}
        if p20_ns is not None and p80_ns is not None:
            spec["measurements"] = [
                {"metric": "latency", "unit": "ns", "statistic": "p20", "value": p20_ns},
                {"metric": "latency", "unit": "ns", "statistic": "p80", "value": p80_ns},
            ]
            metrics.update(ms_20=p20_ns / 1e6, ms_80=p80_ns / 1e6)
        return self._run(
            kernel=kernel,
            mode=mode,
            provider=provider,
            gpu=gpu,
            axes=axes,
            dtype=dtype,
            version=version,
            timestamp=timestamp,
            measured=spec,
            metrics=metrics,
            memory=False,
            model=model,
            tensors=tensors,
            environment_labels=environment_labels,
        )

    def memory_run(
        self,
        *,
        kernel: str = SAMPLE_KERNEL,
        mode: str = "full",
        provider: str = SAMPLE_PROVIDER,
        gpu: str = SAMPLE_GPU,
        axes: dict[str, int] | None = None,
        dtype: str = SAMPLE_DTYPE,
        version: str | None = SAMPLE_VERSION,
        mib: float = 100.0,
        timestamp: str = SAMPLE_TIMESTAMP,
        model: str | None = None,
    ) -> dict[str, Any]:
        """Add one peak-memory run as the memory-run contract shapes it: passed, no timing,
        measurements[0] = peak_memory in bytes (Liger's MB are MiB: value = mib * 2**20)."""
        value = mib * 2**20
        value = int(value) if float(value).is_integer() else value
        measurements = [
            {"metric": "peak_memory", "unit": "bytes", "statistic": statistic, "value": value}
            for statistic in ("median", "p20", "p80")
        ]  # Liger's memory rows have p20 = p50 = p80
        return self._run(
            kernel=kernel,
            mode=mode,
            provider=provider,
            gpu=gpu,
            axes=axes,
            dtype=dtype,
            version=version,
            timestamp=timestamp,
            measured={"measurements": measurements},
            metrics={"mb_20": mib, "mb_50": mib, "mb_80": mib},
            memory=True,
            model=model,
        )

    def _run(
        self,
        *,
        kernel: str,
        mode: str,
        provider: str,
        gpu: str,
        axes: dict[str, int] | None,
        dtype: str,
        version: str | None,
        timestamp: str,
        measured: dict[str, Any],
        metrics: dict[str, float],
        memory: bool,
        model: str | None,
        tensors: dict[str, Any] | None = None,
        environment_labels: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        axes = dict(axes or {"batch": 8, "hidden": 4096})
        slug = "liger-" + kebab(kernel)
        operation = self._add(_operation(kernel, slug, axes))
        case_key = identity.case_key(axes, dtype, model)
        workload = self._add(_workload(kernel, slug, operation, axes, dtype, case_key, model, tensors))
        benchmark = identity.benchmark(kernel, mode, memory)
        spec: dict[str, Any] = {
            "implementationDigest": self._add(_implementation(kernel, provider, operation)),
            "workloadDigest": workload,
            "protocolDigest": self._add(_protocol(mode, memory)),
            "environmentDigest": self._add(_environment(gpu, environment_labels)),
            "status": "passed",
            **measured,
        }
        spec["sourceNative"] = {
            "source": "liger-kernel-bench",
            "benchmark": benchmark,
            "externalId": identity.external_id_prefix(kernel, mode, provider, identity.gpu_slug(gpu), case_key, memory)
            + kebab(timestamp),
            "metrics": metrics,
        }
        spec["observedAt"] = timestamp.replace(" ", "T") + ".000Z"
        run = _manifest(
            "BenchmarkRun",
            {
                "name": kebab(f"liger-{benchmark}-{provider}-{gpu}-{case_key}-{timestamp}"),
                "title": identity.run_title(kernel, provider, mode, memory),
                "labels": {"liger_version": version} if version is not None else {},
            },
            spec,
        )
        self._add(run)
        return run


def _operation(kernel: str, slug: str, axes: dict[str, int]) -> dict[str, Any]:
    """The kernel's OperationSpec: one input x and one output y of the axes' shape."""
    return _manifest(
        "OperationSpec",
        {"name": slug, "title": kernel.replace("_", " ").title()},
        {
            "family": kernel.split("_")[0],
            "axes": {a: {"role": "variable", "type": "integer"} for a in axes},
            "inputs": [{"name": "x", "tensor": {"shape": list(axes), "dtype": "float"}}],
            "outputs": [{"name": "y", "tensor": {"shape": list(axes), "dtype": "float"}}],
            "semantics": {"mutation": "none", "determinism": "unspecified"},
        },
    )


def _workload(
    kernel: str,
    slug: str,
    operation: str,
    axes: dict[str, int],
    dtype: str,
    case_key: str,
    model: str | None,
    tensors: dict[str, Any] | None,
) -> dict[str, Any]:
    """The WorkloadCase of the axes and dtype (labelled with its model, for a model_config row)."""
    case_metadata: dict[str, Any] = {
        "name": identity.case_name(slug, case_key),
        "title": f"{kernel} · " + ", ".join(f"{a}={v}" for a, v in axes.items()) + f" · {dtype}",
    }
    if model is not None:
        case_metadata["labels"] = {identity.category_label("model_config"): model}
    return _manifest(
        "WorkloadCase",
        case_metadata,
        {
            "operationSpecDigest": operation,
            "axes": axes,
            "tensors": tensors or {"x": {"shape": list(axes.values()), "dtype": dtype}},
            "correctness": {"comparator": "not_asserted"},
        },
    )


def _implementation(kernel: str, provider: str, operation: str) -> dict[str, Any]:
    """The provider's ImplementationRevision (a baseline provider labelled as one; Liger's pip-installed)."""
    facts = provider_table().get(provider)
    labels = {"role": "baseline"} if facts is not None and facts.baseline else {}
    implementation_spec: dict[str, Any] = {
        "projectRevision": {},
        "operation": {"specDigest": operation},
        "callable": {"language": "python"},
        "support": {"hardwareArchitectures": [], "dtypes": []},
        "licensing": {"declared": "BSD-3-Clause"},
    }
    if provider.startswith("liger"):
        implementation_spec["buildVariants"] = [{"name": "pip", "install": {"kind": "pip", "package": "liger-kernel"}}]
    return _manifest(
        "ImplementationRevision",
        {
            "name": identity.implementation_name(kernel, provider),
            "title": f"{kernel} · {provider.title()}",
            **({"labels": labels} if labels else {}),
        },
        implementation_spec,
    )


def _protocol(mode: str, memory: bool) -> dict[str, Any]:
    """The BenchmarkProtocol of the mode: do_bench's CUDA-event timing, or peak memory."""
    if memory:
        measurement = {"primaryStatistic": "median"}
    else:
        measurement = {"timer": "cuda_events", "primaryStatistic": "median"}
    return _manifest(
        "BenchmarkProtocol",
        {"name": identity.protocol_name(mode, memory)},
        {
            "harness": {"name": "Liger-Kernel benchmark scripts"},
            "measurement": measurement,
            "comparability": {"family": "liger_kernel_bench", "notes": f"Measured: {mode}"},
        },
    )


def _environment(gpu: str, labels: dict[str, str] | None) -> dict[str, Any]:
    """The GPU's ExecutionEnvironment (its hardware facts where _GPUS knows them)."""
    metadata: dict[str, Any] = {"name": identity.environment_name(gpu)}
    if labels:
        metadata["labels"] = dict(labels)
    return _manifest(
        "ExecutionEnvironment",
        metadata,
        {"hardware": _GPUS.get(gpu, {"vendor": "nvidia", "product": gpu}), "software": {}},
    )


# ----------------------------------------------------------------- the seed manifests and their clones


def seed_manifests() -> dict[str, dict]:
    """The seed bundles' manifests, digest -> manifest (3 CSV rows x 7 kinds; shared objects once)."""
    bundles = json.loads((FIXTURES / "seed-bundles.json").read_text(encoding="utf-8"))
    records: dict[str, dict] = {}
    for bundle in bundles:
        for entry in bundle["manifests"]:
            records.setdefault(entry["digest"], entry["manifest"])
    return records


def cloned_runs(seed_records: dict[str, dict], count: int, start: int = 0) -> dict[str, dict]:
    """`count` BenchmarkRuns (digest -> manifest) cloned from the seed runs, each observed one second later
    than the previous one (so a new externalId and a new digest), numbered from `start` so that disjoint
    ranges give disjoint runs."""
    seeds = [m for m in seed_records.values() if m["kind"] == "BenchmarkRun"]
    epoch = datetime(2025, 1, 1, tzinfo=UTC)
    runs: dict[str, dict] = {}
    for number in range(start, start + count):
        run = copy.deepcopy(seeds[number % len(seeds)])
        observed = epoch + timedelta(seconds=number)
        stamp = observed.strftime("%Y-%m-%d-%H-%M-%S")
        native = run["spec"]["sourceNative"]
        native["externalId"] = native["externalId"].rsplit("/", 1)[0] + "/" + stamp
        run["spec"]["observedAt"] = observed.strftime("%Y-%m-%dT%H:%M:%S.000Z")
        run["metadata"]["name"] = (run["metadata"]["name"][:80] + "-" + stamp)[:100]
        runs[digest_of(run)] = run
    assert len(runs) == count
    return runs


# ----------------------------------------------------------------- runs shaped for regression detection


def detection_run(
    kernel: str,
    provider: str,
    case: str,
    when: datetime,
    value: float,
    *,
    version: str = "0.8.0",
    mode: str = "forward",
    environment: str = "sha256:" + "e" * 64,
    memory: bool = False,
) -> dict:
    """A BenchmarkRun shaped like the Liger import's (only what detection reads); digests stand in."""
    stamp = when.strftime("%Y-%m-%dT%H:%M:%S.000Z")
    digest = "sha256:" + format(abs(hash((kernel, provider, case))) % 16**64, "064x")
    spec = {
        "implementationDigest": digest,
        "workloadDigest": digest,
        "protocolDigest": "sha256:" + "p" * 64,
        "environmentDigest": environment,
        "status": "passed",
        "observedAt": stamp,
        "sourceNative": {
            "source": "liger-kernel-bench",
            "benchmark": f"{kernel}/{mode}" + ("/memory" if memory else ""),
            "externalId": f"{kernel}/{mode}/"
            + ("memory/" if memory else "")
            + f"{provider}/nvidia-h100-80gb-hbm3/{case}/{stamp}",
        },
    }
    if memory:
        spec["measurements"] = [{"metric": "peak_memory", "unit": "bytes", "statistic": "median", "value": value}]
    else:
        spec["timing"] = {"primaryStatistic": "median", "latencyNs": {"median": round(value)}}
    return {
        "apiVersion": "kernelindex.dev/v1alpha1",
        "kind": "BenchmarkRun",
        "metadata": {"name": f"{kernel}-{provider}-{case}-{stamp}", "labels": {"liger_version": version}},
        "spec": spec,
    }


def sample_host_capture(**changes: Any):
    """A sweep host's captured facts (sweep.host.HostCapture): an H100 with CUDA 12.4, torch 2.5.1 and
    triton 3.1.0; `changes` replace any of them."""
    from kernelindex_pipeline.sweep.host import HostCapture

    facts = dict(
        cuda_available=True,
        device_name=SAMPLE_GPU,
        driver="550.54.15",
        cuda_runtime="12.4",
        torch="2.5.1+cu124",
        triton="3.1.0",
        python="3.11.9",
        transformers="4.46.3",
        operating_system="Ubuntu 22.04.4 LTS",
        kernel="5.15.0-119-generic",
    )
    return HostCapture(**{**facts, **changes})
