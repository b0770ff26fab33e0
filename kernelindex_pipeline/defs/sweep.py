"""The sweep source's first step: the GPU sweep runs in its own process through Dagster Pipes.

Locally that process is a subprocess on this host; on a cluster a Kubernetes pod on a node with the
partition's GPU. Either way it reports progress as log lines and sends its reply as a Pipes message
(sweep/pipes_entry.py writes it, and sweep/protocol.py's codec rebuilds it here as a typed SweepReply): the CSV with the
SweepResult, or a SweepError whose `retryable` flag decides whether Dagster may try again. Dagster
metadata is made here, from the typed result; the domain objects never hold it.
"""

from __future__ import annotations

import sys

from dagster import AssetExecutionContext, Failure, MetadataValue

from kernelindex_pipeline.catalogue.origins import RUN_ID_KEY
from kernelindex_pipeline.defs.resources import BenchmarkRunnerResource, LigerGitResource, LigerReleaseResource
from kernelindex_pipeline.liger.normalize import MeasuredContext
from kernelindex_pipeline.liger.partition import PartitionCsv
from kernelindex_pipeline.liger.release import snapshot_of_bytes
from kernelindex_pipeline.sweep import sentinel
from kernelindex_pipeline.sweep.coverage import SweepCoverage
from kernelindex_pipeline.sweep.protocol import SweepResult, reply_from_messages


def _sweep_request(
    context: AssetExecutionContext,
    gpu: str,
    version: str,
    kernels: list[str],
    release_path: str | None,
    runner: BenchmarkRunnerResource,
) -> dict:
    request = {
        "gpu": gpu,
        "liger_version": version,
        "kernels": kernels or None,
        "script_timeout_s": runner.script_timeout_s,
        "wheel_dir": runner.wheel_dir or None,
        "rounds": runner.rounds,
        "backends": dict(runner.backends) or None,
        "flce_chunk_mem_consts": list(runner.flce_chunk_mem_consts) or None,
        "liger_extras": list(runner.liger_extras),
    }
    if runner.runner == "subprocess":
        request.update(
            release=release_path,
            work_dir=str(runner.work_dir_root() / f"{gpu}_{version}_{context.run.run_id[:8]}"),
            env_cache_dir=str(runner.env_cache()),
            extra_pythonpath=list(runner.extra_pythonpath),
            extra_env=dict(runner.extra_env),
        )
    return request


def _launch(context: AssetExecutionContext, gpu: str, request: dict, runner: BenchmarkRunnerResource):
    extras = {"sweep_request": request}
    if runner.runner == "k8s":
        from kernelindex_pipeline.sweep.k8s import sweep_pod

        pod = sweep_pod(
            gpu, image=runner.image, namespace=runner.namespace, cache_volume_claim=runner.cache_volume_claim or None
        )
        return runner.pipes_client().run(context=context, extras=extras, **pod)
    command = [sys.executable, "-m", "kernelindex_pipeline.sweep.pipes_entry"]
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
    return _sweep_reply(context, gpu, version, request, runner)


def run_commit_sweep_through_pipes(
    context: AssetExecutionContext,
    gpu: str,
    commit: str,
    kernels: list[str],
    harness: str,
    liger_git: LigerGitResource,
    runner: BenchmarkRunnerResource,
) -> PartitionCsv:
    """A sweep of Liger built at `commit` (a bisection step, docs/concepts/bisection.md): the wheel from the clone
    (cached by commit), the benchmark scripts of the `harness` commit (empty: the commit's own). Only the
    subprocess runner: the build and the harness are files of this host. A commit that does not build is a
    Failure that is not retried."""
    from kernelindex_pipeline.liger.commit_build import CommitBuildError, build_liger, harness_at
    from kernelindex_pipeline.liger.source_history import LigerSourceHistory, SourceHistoryError

    if runner.runner != "subprocess":
        raise Failure(
            description="a sweep of a commit (a bisection step) runs with runner: subprocess only", allow_retries=False
        )
    clone = liger_git.clone()
    if not clone:
        raise Failure(
            description="a sweep of a commit needs the liger_git resource (KERNELINDEX_LIGER_GIT)", allow_retries=False
        )
    try:
        history = LigerSourceHistory(clone)
        build = build_liger(history, commit, runner.build_cache())
        harness_commit = harness or build.commit
        tree = runner.work_dir_root() / f"harness-{harness_commit[:12]}-{context.run.run_id[:8]}"
        release_path = str(harness_at(history, harness_commit, tree))
    except (CommitBuildError, SourceHistoryError, ValueError) as error:
        raise Failure(description=f"Liger at {commit}: {error}", allow_retries=False) from None
    request = _sweep_request(context, gpu, build.version, kernels, release_path, runner)
    request.update(liger_wheel=str(build.wheel), liger_commit=build.commit)
    context.log.info(
        f"sweeping liger-kernel {build.version} at {build.commit[:12]} ({'cached' if build.reused else 'built'}) on {gpu}, "
        f"harness {harness_commit[:12]} (kernels: {kernels or 'all'})"
    )
    return _sweep_reply(context, gpu, build.version, request, runner)


def _sweep_reply(
    context: AssetExecutionContext, gpu: str, version: str, request: dict, runner: BenchmarkRunnerResource
) -> PartitionCsv:
    invocation = _launch(context, gpu, request, runner)
    try:
        reply = reply_from_messages(invocation.get_custom_messages())
    except ValueError as error:
        raise Failure(description=f"the sweep for {gpu} x {version}: {error}") from None
    if reply.error is not None:
        raise Failure(
            description=(
                f"sweep of {gpu} x {version} failed ({reply.error.type}): {reply.error.message}"
                + ("" if reply.error.retryable else " [not retried: another try cannot help]")
            ),
            allow_retries=reply.error.retryable,
        )
    result = reply.result
    snapshot = {
        **snapshot_of_bytes(
            reply.csv_bytes, locator=f"sweep:{result.work_dir}/benchmark/data/all_benchmark_data.csv"
        ).to_dict(),
        "resolvedVersion": version,
        "rows": result.rows,
        "partition": {"gpu": gpu, "liger_version": version},
        RUN_ID_KEY: context.run.run_id,  # the site links the sweep's points to this run in the UI
    }
    measured = MeasuredContext(**result.measured_context())
    return PartitionCsv(gpu, version, "sweep", reply.csv_bytes, snapshot, measured=measured, sweep=result)


def sweep_metadata(result: SweepResult) -> dict:
    """The benchmark_csv metadata of one sweep, made from its typed result."""
    return {
        "scripts": len(result.outcomes),  # script runs: every round and backend variant
        "scripts_failed": len(result.failed),
        "rounds": result.rounds,
        "script_outcomes": MetadataValue.md(outcomes_table(result)),
        "orchestration_overhead_s": round(result.timings["overhead_s"], 3),
        "scripts_s": round(result.timings["scripts_s"], 3),
        "environment_reused": bool(result.environment.get("reused")),
        "gpu_device": result.host.get("device_name") or "",
        **coverage_metadata(result),
    }


def outcomes_table(result: SweepResult) -> str:
    """One line per script run (every round and backend variant), as a Markdown table."""
    lines = [
        "| script | status | rows | seconds | exit | error | round | variant | throttled |",
        "|---|---|---:|---:|---:|---|---:|---|---|",
    ]
    for o in result.outcomes:
        error = (o.error_line or "").replace("|", "\\|")
        throttled = ", ".join(o.gpu_state.get("throttle_reasons") or []) or "-"
        lines.append(
            f"| {o.script} | {o.status.value} | {o.rows} | {o.seconds:.1f} | {'' if o.exit_code is None else o.exit_code} | {error} "
            f"| {o.round} | {o.variant} | {throttled} |"
        )
    return "\n".join(lines)


def coverage_metadata(result: SweepResult) -> dict:
    """The sweep's coverage (per script: expected, measured, missing by reason) and its sentinel."""
    metadata = {}
    if result.coverage:
        coverage = SweepCoverage.from_dict(result.coverage)
        metadata["sweep_coverage"] = MetadataValue.md(coverage.markdown())
        metadata["sweep_coverage_totals"] = MetadataValue.json(coverage.totals())
    if result.sentinel:
        metadata["sentinel"] = MetadataValue.md("\n".join(sentinel.summary_lines(result.sentinel)))
    return metadata
