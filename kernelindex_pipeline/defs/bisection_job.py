"""The bisection job: a user launches it (the UI's Launchpad, or `dagster job launch`) with a regressions
group's id as config; each step is a run of the sweep chain on the sweep partition of that commit
(`GPU|git-<sha>`, defs/sweep_chain.py), so the partition list shows what was swept at which commit and
each step's runs are published like any sweep's. The search is `liger/bisection.py`, the plan
`sweep/bisection.py`; the verdict is a materialization of `bisection_verdict` (one per bisection,
its metadata the verdict, the steps and the JSON), which the regressions page reads.

A step's run is made in this run's process (`materialize` on the same instance): the search needs each
measurement before it picks the next commit, and the steps share this run's GPU pool, so they never
queue behind each other or run beside another sweep of the pool.
"""

import json
from datetime import UTC, datetime
from pathlib import Path

from dagster import (
    AssetKey,
    AssetMaterialization,
    AssetSpec,
    Config,
    DefaultSensorStatus,
    Definitions,
    MetadataValue,
    OpExecutionContext,
    RunRequest,
    RunsFilter,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    job,
    materialize,
    op,
    sensor,
)
from pydantic import Field

from kernelindex_pipeline.defs.chain_values import IO_MANAGER_KEY
from kernelindex_pipeline.defs.partitions import source_partitions
from kernelindex_pipeline.defs.resources import BisectionTriggerResource
from kernelindex_pipeline.defs.sweep_chain import GPU_POOL_TAG, SWEEP, commit_partition_key
from kernelindex_pipeline.home import SITE_DIR, dagster_home

VERDICT_KEY = AssetKey("bisection_verdict")  # not under sweep/: the chain's four assets are its partitions' own
BISECTION_TAG = "kernelindex/bisection"
TRIGGER_TAG = "kernelindex/bisection_trigger"  # on the bisection runs the nightly trigger started: their group
MAX_REPORT_BYTES = 256 * 2**20  # the trigger reads regressions.json whole; ours are a few MB at 35 CI files
RESOURCES = ("catalogue", "releases", "runner", "liger_git", IO_MANAGER_KEY)

bisection_verdict = AssetSpec(
    VERDICT_KEY,
    group_name="bisection",
    description=(
        "The verdicts of bisections (bisection_job): which suspect commit of a regressions group moved its series, "
        "measured by sweeping the kernel's own benchmark at each commit tried. One materialization per bisection: "
        "its group, verdict, culprit, steps and JSON."
    ),
)


class BisectionConfig(Config):
    group: str = Field(
        description="The regressions group's id (g-..., on the regressions page) or its place (1, 2, ...)."
    )
    regressions_file: str = Field(
        default="",
        description="The regressions.json the group is in; empty: the one catalogue_report wrote (DAGSTER_HOME/report).",
    )
    budget_gpu_seconds: float = Field(default=0.0, ge=0, description="Stop cleanly before spending more; 0: no budget.")


def default_regressions_file() -> Path:
    return dagster_home() / SITE_DIR / "regressions.json"


def _failure_text(result) -> str:
    """Why a step's run failed: its first failed step's Failure description (a commit that does not build,
    a host without the GPU), else its error."""
    for event in result.all_events:
        if event.is_step_failure:
            data = event.step_failure_data
            if data.user_failure_data is not None and data.user_failure_data.description:
                return data.user_failure_data.description
            if data.error is not None:
                return data.error.message.strip()
    return "no step failed (the run itself did)"


def _steps_table(verdict) -> str:
    lines = [
        "| step | commit | role | outcome | value (ns) | interval | seconds | reason |",
        "|---:|---|---|---|---:|---|---:|---|",
    ]
    for s in verdict.steps:
        interval = "" if s.low is None else f"{s.low:.0f} – {s.high:.0f}"
        value = "" if s.value is None else f"{s.value:.0f}"
        reason = s.reason.replace("|", "\\|")
        lines.append(
            f"| {s.number} | {s.commit[:12]} | {s.role} | {s.outcome} | {value} | {interval} | {s.seconds:.1f} | {reason} |"
        )
    return "\n".join(lines)


@op(required_resource_keys=set(RESOURCES), tags={"kernelindex/source": "sweep"})
def bisect_group(context: OpExecutionContext, config: BisectionConfig) -> None:
    """Bisect the group: plan it, sweep a commit per step through the sweep chain, record the verdict."""
    from dagster import Failure

    from kernelindex_pipeline.liger import MeasuredContext, import_csv
    from kernelindex_pipeline.liger.bisection import Measurement, Skipped
    from kernelindex_pipeline.liger.source_history import LigerSourceHistory, SourceHistoryError
    from kernelindex_pipeline.sweep.bisection import (
        BisectionInputError,
        bisection_document,
        plan_of_group,
        run_bisection,
        series_value,
    )

    path = Path(config.regressions_file) if config.regressions_file else default_regressions_file()
    if context.resources.runner.rounds < 2:
        raise Failure(
            description=f"a bisection step needs 2 rounds or more for its interval; the runner resource has rounds "
            f"{context.resources.runner.rounds}",
            allow_retries=False,
        )
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
        history = LigerSourceHistory(context.resources.liger_git.clone())
        plan = plan_of_group(history, report, config.group)
    except (OSError, ValueError, SourceHistoryError, BisectionInputError) as error:
        raise Failure(
            description=f"cannot bisect group {config.group!r} of {path}: {error}", allow_retries=False
        ) from None
    context.log.info(
        f"bisecting {plan.series.label()} on {plan.gpu}: {plan.good[:12]}..{plan.bad[:12]}, {len(plan.candidates)} "
        f"candidate(s), harness {plan.harness[:12]}"
    )
    resources = {key: getattr(context.resources, key) for key in RESOURCES}
    partitions = source_partitions["sweep"].name
    step_runs: dict[str, str] = {}

    def measure(commit: str) -> "Measurement | Skipped":
        key = commit_partition_key(plan.gpu, commit)
        if key not in context.instance.get_dynamic_partitions(partitions):
            context.instance.add_dynamic_partitions(partitions, [key])
        result = materialize(
            SWEEP.assets,
            partition_key=key,
            instance=context.instance,
            resources=resources,
            run_config={
                "ops": {"sweep__benchmark_csv": {"config": {"kernels": [plan.series.kernel], "harness": plan.harness}}}
            },
            tags={
                BISECTION_TAG: plan.group or config.group,
                GPU_POOL_TAG: plan.gpu,
                "kernelindex/parent_run": context.run.run_id,
            },
            raise_on_error=False,
        )
        step_runs[commit] = result.run_id
        if not result.success:
            return Skipped(f"its sweep run {result.run_id[:8]} failed: {_failure_text(result)[:500]}")
        (part,) = result.output_for_node("sweep__benchmark_csv")[key]
        sweep = part.sweep
        seconds = float(sweep.timings.get("total_s", 0.0))
        detail = {"run": result.run_id, "partition": key}
        if sweep.failed and not sweep.rows:
            first = sweep.failed[0]
            return Skipped(
                f"{first.script} {first.status.value}: {first.error_line or 'no error line'}", seconds, detail
            )
        imported = import_csv(
            part.csv_bytes,
            gpu=plan.gpu,
            liger_version=part.liger_version,
            measured=MeasuredContext(**sweep.measured_context()),
        )
        found = series_value(imported, plan.series)
        if isinstance(found, str):
            return Skipped(found, seconds, detail)
        value, low, high = found
        return Measurement(value, min(low, value), max(high, value), seconds, detail)

    verdict = run_bisection(plan, measure, budget_seconds=config.budget_gpu_seconds or None)
    for line in verdict.summary_lines():
        context.log.info(line)
    document = bisection_document(plan, verdict)
    context.log_event(
        AssetMaterialization(
            asset_key=VERDICT_KEY,
            description=f"group {plan.group}: {verdict.label}",
            metadata={
                "group": plan.group or config.group,
                "verdict": verdict.kind,
                "label": verdict.label,
                "culprit": verdict.culprit or "",
                "measurements": verdict.measurements,
                "max_measurements": verdict.max_measurements,
                "gpu_seconds": round(verdict.gpu_seconds, 3),
                "steps": MetadataValue.md(_steps_table(verdict)),
                "step_runs": MetadataValue.json(step_runs),
                "bisection": MetadataValue.json(document),
            },
        )
    )


@job(
    name="bisection_job",
    description="Bisect a regressions group (config: its id) across its suspect commits, a sweep of the kernel's "
    "benchmark per commit tried; the verdict is a materialization of bisection_verdict.",
    tags={"kernelindex/source": "sweep"},
)
def bisection_job():
    bisect_group()


MAX_VERDICTS_READ = 1000  # the newest verdict materializations the report reads (one per bisection)


def latest_verdicts(instance) -> dict[str, dict]:
    """Group id -> the JSON of its newest bisection, from the materializations of bisection_verdict (what
    catalogue_report shows with each group)."""
    found: dict[str, dict] = {}
    for record in instance.fetch_materializations(VERDICT_KEY, limit=MAX_VERDICTS_READ).records:
        materialization = record.asset_materialization
        if materialization is None:
            continue
        group = materialization.metadata.get("group")
        document = materialization.metadata.get("bisection")
        if group is not None and document is not None and str(group.value) not in found:
            found[str(group.value)] = dict(document.value)
    return found


def _today_so_far(cursor: str | None, today: str) -> tuple[float, list[str]]:
    """The GPU-seconds the trigger's bisections started `today` may spend (their budgets) and their groups,
    from its cursor (a run it requested may not exist yet when it next looks)."""
    try:
        state = json.loads(cursor) if cursor else {}
    except ValueError:
        state = {}
    if not isinstance(state, dict) or state.get("day") != today:
        return 0.0, []
    return float(state.get("started", 0.0)), [str(g) for g in state.get("groups") or []]


@sensor(
    name="bisection_trigger_sensor",
    job_name="bisection_job",  # by name: a JobDefinition target is copied by Definitions with a beta warning
    minimum_interval_seconds=3600,
    default_status=DefaultSensorStatus.STOPPED,  # off by default: each bisection spends GPU time
    description=(
        "Bisects new slowdown groups of catalogue_report's regressions.json that have more than one suspect commit, "
        "the worst first, each within its own GPU budget and all within a daily one (resource bisection_trigger). "
        "Each group is bisected once."
    ),
)
def bisection_trigger_sensor(context: SensorEvaluationContext, bisection_trigger: BisectionTriggerResource):
    from kernelindex_pipeline.sweep.bisection import groups_worth_bisecting

    path = default_regressions_file()
    try:
        if path.stat().st_size > MAX_REPORT_BYTES:
            return SkipReason(f"{path} is over {MAX_REPORT_BYTES >> 20} MiB; not read")
        report = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return SkipReason(f"no {path} yet: catalogue_report writes it")
    except (OSError, ValueError) as error:
        return SkipReason(f"cannot read {path}: {error}")
    today = datetime.now(UTC).date().isoformat()
    spent, started = _today_so_far(context.cursor, today)
    done = set(latest_verdicts(context.instance)) | set(started)
    each = bisection_trigger.per_group_gpu_seconds
    requests, waiting = [], []
    for group, gpu in groups_worth_bisecting(report, min_suspects=bisection_trigger.min_suspects):
        if group in done or context.instance.get_runs(RunsFilter(tags={TRIGGER_TAG: group}), limit=1):
            continue
        if spent + each > bisection_trigger.daily_gpu_seconds:
            waiting.append(group)
            continue
        spent += each
        started.append(group)
        requests.append(
            RunRequest(
                run_key=f"bisect-{group}",
                run_config={
                    "ops": {
                        "bisect_group": {
                            "config": {"group": group, "regressions_file": str(path), "budget_gpu_seconds": each}
                        }
                    }
                },
                tags={TRIGGER_TAG: group, GPU_POOL_TAG: gpu},  # queued behind that GPU's sweeps, as they are
            )
        )
    if waiting:
        context.log.info(f"{len(waiting)} group(s) wait for tomorrow's budget: {', '.join(waiting[:5])}")
    return SensorResult(
        run_requests=requests,
        cursor=json.dumps({"day": today, "started": spent, "groups": started}),
        skip_reason=None if requests else f"no new group to bisect ({len(waiting)} waiting for budget)",
    )


def defs() -> Definitions:
    """The bisection job, the asset its verdicts materialize and the nightly trigger (off by default)."""
    return Definitions(assets=[bisection_verdict], jobs=[bisection_job], sensors=[bisection_trigger_sensor])
