"""Constructed benchmark manifests for tests and demos of the report and regression detection.

`SampleCatalogue.run(...)` adds one BenchmarkRun (and the records it references,
shaped as the Liger import writes them) for given kernel, mode, provider, GPU,
workload axes, Liger version and latencies. Not for publication: the specs are
only as complete as reporting needs.
"""

from __future__ import annotations

from typing import Any

from kernelindex_pipeline.liger import identity
from kernelindex_pipeline.records.canonical import API_VERSION, digest_of
from kernelindex_pipeline.records.names import kebab

from .series import provider_table

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
        kernel: str = "rms_norm",
        mode: str = "forward",
        provider: str = "liger",
        gpu: str = "NVIDIA H100 80GB HBM3",
        axes: dict[str, int] | None = None,
        dtype: str = "bf16",
        version: str | None = "0.8.0",
        median_ns: int = 1_000_000,
        p20_ns: int | None = None,
        p80_ns: int | None = None,
        band: float | None = 0.02,
        timestamp: str = "2025-08-05 00:08:54",
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
            metric=None,
            model=model,
            tensors=tensors,
            environment_labels=environment_labels,
        )

    def memory_run(
        self,
        *,
        kernel: str = "rms_norm",
        mode: str = "full",
        provider: str = "liger",
        gpu: str = "NVIDIA H100 80GB HBM3",
        axes: dict[str, int] | None = None,
        dtype: str = "bf16",
        version: str | None = "0.8.0",
        mib: float = 100.0,
        timestamp: str = "2025-08-05 00:08:54",
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
            metric="memory",
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
        metric: str | None,
        model: str | None,
        tensors: dict[str, Any] | None = None,
        environment_labels: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        axes = dict(axes or {"batch": 8, "hidden": 4096})
        slug = "liger-" + kebab(kernel)
        operation = self._add(
            _manifest(
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
        )
        case_key = identity.case_key(axes, dtype, model)
        case_metadata: dict[str, Any] = {
            "name": kebab(f"{slug}-{case_key}"),
            "title": f"{kernel} · " + ", ".join(f"{a}={v}" for a, v in axes.items()) + f" · {dtype}",
        }
        if model is not None:
            case_metadata["labels"] = {identity.category_label("model_config"): model}
        workload = self._add(
            _manifest(
                "WorkloadCase",
                case_metadata,
                {
                    "operationSpecDigest": operation,
                    "axes": axes,
                    "tensors": tensors or {"x": {"shape": list(axes.values()), "dtype": dtype}},
                    "correctness": {"comparator": "not_asserted"},
                },
            )
        )
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
            implementation_spec["buildVariants"] = [
                {"name": "pip", "install": {"kind": "pip", "package": "liger-kernel"}}
            ]
        implementation = self._add(
            _manifest(
                "ImplementationRevision",
                {
                    "name": kebab(f"liger-bench-{kernel}-{provider}"),
                    "title": f"{kernel} · {provider.title()}",
                    **({"labels": labels} if labels else {}),
                },
                implementation_spec,
            )
        )
        if metric is None:
            protocol_name, measurement = (
                f"liger-bench-do-bench-{mode}",
                {"timer": "cuda_events", "primaryStatistic": "median"},
            )
        else:
            protocol_name, measurement = f"liger-bench-peak-memory-{mode}", {"primaryStatistic": "median"}
        protocol = self._add(
            _manifest(
                "BenchmarkProtocol",
                {"name": protocol_name},
                {
                    "harness": {"name": "Liger-Kernel benchmark scripts"},
                    "measurement": measurement,
                    "comparability": {"family": "liger_kernel_bench", "notes": f"Measured: {mode}"},
                },
            )
        )
        environment_metadata: dict[str, Any] = {"name": kebab(f"liger-bench-{gpu}")}
        if environment_labels:
            environment_metadata["labels"] = dict(environment_labels)
        environment = self._add(
            _manifest(
                "ExecutionEnvironment",
                environment_metadata,
                {
                    "hardware": _GPUS.get(gpu, {"vendor": "nvidia", "product": gpu}),
                    "software": {},
                },
            )
        )
        benchmark = f"{kernel}/{mode}" if metric is None else f"{kernel}/{mode}/{metric}"
        external_id = f"{benchmark}/{provider}/{kebab(gpu)}/{case_key}/{kebab(timestamp)}"
        spec: dict[str, Any] = {
            "implementationDigest": implementation,
            "workloadDigest": workload,
            "protocolDigest": protocol,
            "environmentDigest": environment,
            "status": "passed",
            **measured,
        }
        spec["sourceNative"] = {
            "source": "liger-kernel-bench",
            "benchmark": benchmark,
            "externalId": external_id,
            "metrics": metrics,
        }
        spec["observedAt"] = timestamp.replace(" ", "T") + ".000Z"
        title = f"{kernel} · {provider} · {mode}"
        run = _manifest(
            "BenchmarkRun",
            {
                "name": kebab(f"liger-{benchmark}-{provider}-{gpu}-{case_key}-{timestamp}"),
                "title": title if metric is None else f"{title} · peak memory",
                "labels": {"liger_version": version} if version is not None else {},
            },
            spec,
        )
        self._add(run)
        return run
