"""The sweep sentinel's plan and records: each reference operation of PLAN (timed by sweep/sentinel.py)
is an OperationSpec of its own with one WorkloadCase and a PyTorch ImplementationRevision, timed under
its own BenchmarkProtocol on the sweep's own ExecutionEnvironment (the same digest as the Liger runs of that
sweep), one BenchmarkRun per position (start, end) with the full sample statistics.

The runs follow the project's run identity layout so that series and the regression detector read them
like any other: sourceNative.benchmark = "sentinel_<operation>/<position>", externalId =
"sentinel_<operation>/<position>/torch/<gpu slug>/<case key>/<observed at>", labels liger_version (the
release the sweep measured) and sentinel (the position).
"""

from __future__ import annotations

from typing import Any

from kernelindex_pipeline.liger.builders import MeasuredContext, execution_environment
from kernelindex_pipeline.liger.catalogue import Catalogue
from kernelindex_pipeline.liger.identity import revision_label
from kernelindex_pipeline.liger.sample_statistics import with_raw_samples
from kernelindex_pipeline.records.canonical import API_VERSION, digest_of
from kernelindex_pipeline.records.jsnumber import ms_to_ns
from kernelindex_pipeline.records.names import kebab
from kernelindex_pipeline.records.units import duration_ns

SOURCE = "kernelindex-sentinel"
PROVIDER = "torch"
PROJECT = "pytorch"  # the SoftwareProject of PROVIDER in the provider catalogue
TITLES = {"matmul": "bf16 matrix product", "copy": "device memory copy"}
DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}
# What the sweep times at its start and end (sweep/sentinel.py runs it; sentinel_program.py gets it as
# JSON). The one place the operations, their sizes and the do_bench arguments are written.
PLAN: dict[str, Any] = {
    "warmup": 25,
    "rep": 100,
    "quantiles": [0.5, 0.2, 0.8],
    "operations": [
        # 2 * 4096^3 = 137 GFLOP per product: ~0.2 ms on an H100/H200, well past launch overhead.
        {"name": "matmul_bf16", "kind": "matmul", "dtype": "bfloat16", "m": 4096, "n": 4096, "k": 4096},
        # 1 GiB read + 1 GiB written, far beyond any L2.
        {"name": "copy_1gib", "kind": "copy", "dtype": "float32", "elements": 2**28},
    ],
}


def operation(name: str) -> dict[str, Any]:
    return next(o for o in PLAN["operations"] if o["name"] == name)


def _manifest(kind: str, metadata: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": kind, "metadata": metadata, "spec": spec}


def kernel_name(name: str) -> str:
    return f"sentinel_{name}"


def _shapes(planned: dict[str, Any]) -> tuple[dict[str, int], dict[str, list], dict[str, list], str]:
    """(axes, input shapes, output shapes, dtype) of one planned operation."""
    dtype = DTYPES[planned["dtype"]]
    if planned["kind"] == "matmul":
        axes = {"m": planned["m"], "n": planned["n"], "k": planned["k"]}
        return axes, {"a": ["m", "k"], "b": ["k", "n"]}, {"c": ["m", "n"]}, dtype
    return {"elements": planned["elements"]}, {"source": ["elements"]}, {"target": ["elements"]}, dtype


def operation_spec(planned: dict[str, Any]) -> dict[str, Any]:
    axes, inputs, outputs, dtype = _shapes(planned)
    spec = {
        "family": "kernelindex-sentinel",
        "axes": {a: {"role": "constant", "type": "integer", "value": v} for a, v in axes.items()},
        "inputs": [{"name": n, "tensor": {"shape": s, "dtype": dtype}} for n, s in inputs.items()],
        "outputs": [{"name": n, "tensor": {"shape": s, "dtype": dtype}} for n, s in outputs.items()],
        "semantics": {"mutation": "destination" if planned["kind"] == "copy" else "none", "determinism": "unspecified"},
    }
    name = kebab(f"kernelindex-sentinel-{planned['name']}")
    return _manifest("OperationSpec", {"name": name, "title": f"Sentinel · {TITLES[planned['kind']]}"}, spec)


def case_key(planned: dict[str, Any]) -> str:
    axes, _, _, dtype = _shapes(planned)
    return "-".join(f"{a}{v}" for a, v in axes.items()) + f"-{dtype}"


def workload_case(planned: dict[str, Any], operation_digest: str) -> dict[str, Any]:
    axes, inputs, _, dtype = _shapes(planned)
    tensors = {n: {"shape": [axes[d] for d in s], "dtype": dtype} for n, s in inputs.items()}
    spec = {
        "operationSpecDigest": operation_digest,
        "axes": axes,
        "tensors": tensors,
        "correctness": {"comparator": "not_asserted"},
    }
    title = f"Sentinel · {TITLES[planned['kind']]} · " + ", ".join(f"{a}={v}" for a, v in axes.items())
    return _manifest(
        "WorkloadCase",
        {"name": kebab(f"kernelindex-sentinel-{planned['name']}-{case_key(planned)}"), "title": title},
        spec,
    )


def implementation_revision(
    planned: dict[str, Any], operation_digest: str, revision: dict[str, str] | None = None
) -> dict[str, Any]:
    """`revision`: the torch release the sweep ran (MeasuredContext.project_revision), else none."""
    symbol = "torch.matmul" if planned["kind"] == "matmul" else "torch.Tensor.copy_"
    spec = {
        "projectRevision": dict(revision or {}),
        "operation": {"specDigest": operation_digest},
        "callable": {"language": "python", "symbol": symbol},
        "support": {"hardwareArchitectures": [], "dtypes": []},
        "licensing": {"declared": "BSD-3-Clause"},
    }
    pinned = revision_label(revision)  # the torch release: two releases, two names
    name = kebab(f"kernelindex-sentinel-{planned['name']}-{PROVIDER}" + (f"-{pinned}" if pinned else ""))
    title = f"Sentinel · {TITLES[planned['kind']]} · PyTorch" + (f" @ {pinned}" if pinned else "")
    return _manifest("ImplementationRevision", {"name": name, "title": title}, spec)


def benchmark_protocol() -> dict[str, Any]:
    quantiles = "/".join(str(q) for q in PLAN["quantiles"])
    notes = (
        f"The sweep's reference operations, timed at its start and end via triton.testing.do_bench "
        f"(warmup {PLAN['warmup']} ms, rep {PLAN['rep']} ms, quantiles {quantiles}) in the benchmark scripts' "
        "interpreter: a measure of the host's speed during the sweep, comparable on one GPU and software."
    )
    spec = {
        "harness": {"name": "kernelindex-pipeline sweep sentinel"},
        "measurement": {
            "timer": "cuda_events",
            "primaryStatistic": "median",
            "warmupDuration": duration_ns(f"{PLAN['warmup']} ms"),
        },
        "comparability": {"family": "kernelindex_sentinel", "notes": notes},
    }
    return _manifest(
        "BenchmarkProtocol", {"name": "kernelindex-sentinel-do-bench", "title": "Sweep sentinel · do_bench"}, spec
    )


def benchmark_run(entry: dict[str, Any], digests: dict[str, str], gpu_slug: str, version: str | None) -> dict[str, Any]:
    planned = operation(entry["operation"])
    ms50, ms20, ms80 = entry["returned"]
    observed = entry["observed_at"]
    benchmark = f"{kernel_name(planned['name'])}/{entry['position']}"
    spec: dict[str, Any] = {
        **digests,
        "status": "passed",
        "timing": {"primaryStatistic": "median", "latencyNs": {"median": ms_to_ns(ms50)}},
        "measurements": [
            {"metric": "latency", "unit": "ns", "statistic": "p20", "value": ms_to_ns(ms20)},
            {"metric": "latency", "unit": "ns", "statistic": "p80", "value": ms_to_ns(ms80)},
        ],
        "sourceNative": {
            "source": SOURCE,
            "benchmark": benchmark,
            "externalId": f"{benchmark}/{PROVIDER}/{gpu_slug}/{case_key(planned)}/{kebab(observed)}",
            "metrics": {"ms_50": ms50, "ms_20": ms20, "ms_80": ms80},
        },
        "observedAt": observed,
    }
    if entry.get("log"):
        spec["evidence"] = {"logs": {"uri": entry["log"]["uri"], "digest": entry["log"]["digest"]}}
    labels = {"sentinel": entry["position"]}
    if version is not None:
        labels["liger_version"] = version
    title = f"Sentinel · {TITLES[planned['kind']]} · {PROVIDER} · {entry['position']}"
    metadata = {
        "name": kebab(f"kernelindex-sentinel-{planned['name']}-{entry['position']}-{gpu_slug}-{observed}")[:100].rstrip(
            "-"
        ),
        "title": title,
        "labels": labels,
    }
    return _manifest("BenchmarkRun", metadata, with_raw_samples(spec, entry))


def sentinel_manifests(measured: MeasuredContext, catalogue: Catalogue) -> tuple[list[dict[str, Any]], list[str]]:
    """(manifests, problems): the records of every sentinel measurement that ran; a measurement that
    failed, or whose GPU the catalogue does not know, is a problem line instead."""
    manifests: list[dict[str, Any]] = []
    problems: list[str] = []
    protocol = benchmark_protocol()
    for entry in measured.sentinel:
        if entry.get("status") != "ok":
            problems.append(f"sentinel {entry['operation']} ({entry['position']}) did not run: {entry.get('error')}")
            continue
        gpu = entry.get("gpu_name") or ""
        hardware = catalogue.hardware.get(gpu)
        if hardware is None:
            problems.append(f"sentinel {entry['operation']} ({entry['position']}): GPU {gpu!r} is not in the catalogue")
            continue
        planned = operation(entry["operation"])
        operation_manifest = operation_spec(planned)
        op_digest = digest_of(operation_manifest)
        revision = measured.project_revision(catalogue.projects[PROJECT].repository, PROJECT)
        case, implementation = workload_case(planned, op_digest), implementation_revision(planned, op_digest, revision)
        environment = execution_environment(gpu, hardware, measured)
        digests = {
            "implementationDigest": digest_of(implementation),
            "workloadDigest": digest_of(case),
            "protocolDigest": digest_of(protocol),
            "environmentDigest": digest_of(environment),
        }
        run = benchmark_run(entry, digests, kebab(gpu), entry.get("liger_version"))
        run["metadata"]["labels"] = {
            **measured.labels_of_run(),
            **run["metadata"]["labels"],
        }  # its host, an outlier mark
        manifests += [operation_manifest, case, implementation, protocol, environment, run]
    return manifests, problems
