"""Execute mode of `benchmark_csv`: the GPU sweep runs in its own process through Dagster Pipes.

Locally that process is a subprocess on this host; on a cluster a Kubernetes pod on a node with the
partition's GPU. Either way it reports progress as log lines and sends the CSV and the sweep result
back as a Pipes message, so nothing depends on sharing a file system with the pod.
"""

from __future__ import annotations

import re
import sys

from dagster import AssetExecutionContext, Failure, MetadataValue
from dagster._core.errors import (
    DagsterPipesExecutionError,  # what Pipes clients raise on a failed process; not re-exported
)

from kernelindex_pipeline.defs.resources import BenchmarkRunnerResource, LigerReleaseResource
from kernelindex_pipeline.execution.runner import SweepResult
from kernelindex_pipeline.liger.normalize import MeasuredContext
from kernelindex_pipeline.liger.partition import PartitionCsv
from kernelindex_pipeline.liger.release import snapshot_of_bytes

EXIT_HOST_CHECK = 3  # execution/pipes_entry.py: the host has no CUDA device or another GPU


def _sweep_request(context: AssetExecutionContext, gpu: str, version: str, kernels: list[str], release_path: str | None, runner: BenchmarkRunnerResource) -> dict:
    request = {
        "gpu": gpu,
        "liger_version": version,
        "kernels": kernels or None,
        "script_timeout_s": runner.script_timeout_s,
        "wheel_dir": runner.wheel_dir or None,
    }
    if runner.runner == "subprocess":
        request.update(
            release=release_path,
            work_dir=str(runner.work_dir_root() / f"{gpu}_{version}_{context.run_id[:8]}"),
            env_cache_dir=str(runner.env_cache()),
            extra_pythonpath=list(runner.extra_pythonpath),
            extra_env=dict(runner.extra_env),
        )
    return request


def _launch(context: AssetExecutionContext, gpu: str, request: dict, runner: BenchmarkRunnerResource):
    extras = {"sweep_request": request, "report_materialization": False}
    if runner.runner == "k8s":
        from kernelindex_pipeline.execution.k8s import sweep_pod

        pod = sweep_pod(
            gpu, image=runner.image, namespace=runner.namespace, cache_volume_claim=runner.cache_volume_claim or None
        )
        return runner.pipes_client().run(context=context, extras=extras, **pod)
    command = [sys.executable, "-m", "kernelindex_pipeline.execution.pipes_entry"]
    return runner.pipes_client().run(context=context, command=command, extras=extras, env={"TZ": "UTC"})


def run_sweep_through_pipes(
    context: AssetExecutionContext,
    gpu: str,
    version: str,
    kernels: list[str],
    releases: LigerReleaseResource,
    runner: BenchmarkRunnerResource,
) -> PartitionCsv:
    release_path = str(releases.fetch(version).path) if runner.runner == "subprocess" else None
    request = _sweep_request(context, gpu, version, kernels, release_path, runner)
    context.log.info(f"sweeping liger-kernel {version} on {gpu} via {runner.runner} (kernels: {kernels or 'all'})")
    try:
        invocation = _launch(context, gpu, request, runner)
    except DagsterPipesExecutionError as error:
        code = re.search(r"code (\d+)", str(error))
        if code and int(code.group(1)) == EXIT_HOST_CHECK:
            # Another try on the same host cannot find a different GPU: fail at once, no retry.
            raise Failure(
                description=(
                    f"host check failed: partition GPU {gpu} needs a CUDA device named like it on this host "
                    f"(the sweep's log above says what was found). Run this partition where that GPU is."
                ),
                allow_retries=False,
            ) from None
        raise
    messages = [m for m in invocation.get_custom_messages() if isinstance(m, dict)]
    result_message = next((m for m in messages if m.get("type") == "sweep_result"), None)
    if result_message is None or result_message.get("csv_text") is None:
        raise Failure(description=f"the sweep for {gpu} x {version} sent no CSV back (messages: {[m.get('type') for m in messages]})")
    result = result_message["result"]
    csv_bytes = result_message["csv_text"].encode("utf-8")
    snapshot = {
        **snapshot_of_bytes(csv_bytes, locator=f"sweep:{result['work_dir']}/benchmark/data/all_benchmark_data.csv").to_dict(),
        "resolvedVersion": version,
        "rows": result["rows"],
        "partition": {"gpu": gpu, "liger_version": version},
    }
    measured = MeasuredContext(**SweepResult.from_dict(result).measured_context())
    outcomes = result["outcomes"]
    failed = [o for o in outcomes if o["status"] != "ok"]
    sweep = {
        "outcomes": outcomes,
        "host": result["host"],
        "timings": result["timings"],
        "metadata": {
            "scripts": len(outcomes),
            "scripts_failed": len(failed),
            "script_outcomes": MetadataValue.md(_outcomes_table(outcomes)),
            "orchestration_overhead_s": round(result["timings"]["overhead_s"], 3),
            "scripts_s": round(result["timings"]["scripts_s"], 3),
            "environment_reused": bool(result["environment"].get("reused")),
            "gpu_device": result["host"].get("device_name") or "",
        },
    }
    return PartitionCsv(gpu, version, "execute", csv_bytes, snapshot, measured=measured, sweep=sweep)


def _outcomes_table(outcomes: list[dict]) -> str:
    lines = ["| script | status | rows | seconds | error |", "| --- | --- | ---: | ---: | --- |"]
    for o in outcomes:
        error = (o.get("error_line") or "").replace("|", "\\|")
        lines.append(f"| {o['script']} | {o['status']} | {o['rows']} | {o['seconds']:.1f} | {error} |")
    return "\n".join(lines)
