"""The sweep's own process: `python -m kernelindex_pipeline.sweep.pipes_entry`.

Under Dagster Pipes (PipesSubprocessClient locally, PipesK8sClient on a cluster) it reads the sweep
request from the extras, logs one line per script (status, rows so far), and reports back:
- a custom message {"type": "sweep_result", "result": SweepResult.to_dict(), "result_path", "csv_text"}
  (the CSV travels inline, so a pod's files need not be reachable from the orchestrator);
- unless extras say `report_materialization: false`, an asset materialization whose metadata carries
  the rows, the per-script outcomes and the orchestration overhead;
- on a SweepError, a custom message {"type": "sweep_error", "error": {type, message, retryable}}, and the
  process then ends normally: the message, not an exit code or a Dagster exception's text, is how the
  orchestrator learns what went wrong and whether another try can help (`reply_from_messages`).
  Any other exception fails the process as usual (Dagster then may retry it).

Extras: {"sweep_request": {...SweepRequest fields...}, "result_path": optional path,
"report_materialization": optional bool}; the request fields may also sit at the top level.

Plain mode, without Dagster (gpu_check, tests):
    python -m kernelindex_pipeline.sweep.pipes_entry --request request.json --result result.json
Exit codes: 0 sweep ran (script failures are in the result), 2 bad request, 3 host check failed
(never retry), 1 any other error; the result file then holds {"error": {...}}. Under Pipes the exit
code is 0 after a SweepError (the sweep_error message carries it) and 1 after any other error.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import traceback
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from . import sentinel
from .coverage import SweepCoverage
from .environment import restart_with_sweep_environment
from .outcomes import ConfigurationError, HostCheckError, SweepError
from .runner import SweepRequest, SweepResult, run_sweep

CSV_INLINE_LIMIT_BYTES = 32 * 2**20
EXIT_OK, EXIT_ERROR, EXIT_BAD_REQUEST, EXIT_HOST_CHECK = 0, 1, 2, 3


def progress_line(event: dict) -> str:
    variant = event.get("variant", "resolved")
    where = (
        f" (round {event.get('round', 1)}{'' if variant == 'resolved' else ', ' + variant})"
        if event.get("round", 1) > 1 or variant != "resolved"
        else ""
    )
    line = f"[{event['index']}/{event['total']}] {event['script']}{where}: {event['status']}, {event['rows']} rows ({event['rows_so_far']} so far), {event['seconds']:.1f} s"
    if event.get("error_line"):
        line += f" - {event['error_line']}"
    return line


def error_dict(error: BaseException) -> dict:
    return {
        "type": type(error).__name__,
        "message": str(error),
        "retryable": getattr(error, "retryable", True),
    }


@dataclass(frozen=True)
class SweepErrorReport:
    """A SweepError as the sweep process reported it: its class name, message and whether to retry."""

    type: str
    message: str
    retryable: bool


@dataclass(frozen=True)
class SweepReply:
    """What the sweep process sent back, rebuilt on the orchestrator's side: a result with its CSV, or an error."""

    result: SweepResult | None = None
    csv_bytes: bytes | None = None
    error: SweepErrorReport | None = None


def result_message(result: SweepResult, result_path: Path, csv_bytes: bytes) -> dict:
    return {
        "type": "sweep_result",
        "result": result.to_dict(),
        "result_path": str(result_path),
        "csv_text": csv_bytes.decode("utf-8") if len(csv_bytes) <= CSV_INLINE_LIMIT_BYTES else None,
    }


def error_message(error: SweepError) -> dict:
    return {"type": "sweep_error", "error": error_dict(error)}


def reply_from_messages(messages: Iterable[object]) -> SweepReply:
    """The typed reply among a Pipes session's custom messages (the last sweep message wins).

    Raises ValueError naming what arrived when no usable message did."""
    seen = []
    for message in messages:
        kind = message.get("type") if isinstance(message, dict) else None
        seen.append(kind)
        if kind == "sweep_error":
            error = message["error"]
            return SweepReply(
                error=SweepErrorReport(str(error["type"]), str(error["message"]), bool(error["retryable"]))
            )
        if kind == "sweep_result" and message.get("csv_text") is not None:
            return SweepReply(
                result=SweepResult.from_dict(message["result"]), csv_bytes=message["csv_text"].encode("utf-8")
            )
    raise ValueError(f"the sweep process sent no result with its CSV (messages: {seen})")


def exit_code_for(error: BaseException) -> int:
    if isinstance(error, HostCheckError):
        return EXIT_HOST_CHECK
    if isinstance(error, ConfigurationError):
        return EXIT_BAD_REQUEST
    return EXIT_ERROR


def outcomes_table(result: SweepResult) -> str:
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


def materialization_metadata(result: SweepResult, result_path: Path) -> dict:
    """Dagster Pipes metadata (plain values are inferred; md/json/path are tagged)."""
    counts = result.outcome_counts()
    return {
        "mode": "execute",
        "rows": result.rows,
        "scripts": len(result.outcomes),
        "scripts_ok": counts["ok"],
        "scripts_not_ok": len(result.outcomes) - counts["ok"],
        "outcome_counts": {"raw_value": counts, "type": "json"},
        "outcomes": {"raw_value": outcomes_table(result), "type": "md"},
        # Per-row sample statistics stay in the result file, not in the metadata.
        "script_outcomes": {
            "raw_value": [{**o.to_dict(), "raw_samples": len(o.raw_samples)} for o in result.outcomes],
            "type": "json",
        },
        "orchestration_overhead_s": round(result.timings["overhead_s"], 3),
        "scripts_s": round(result.timings["scripts_s"], 3),
        "total_s": round(result.timings["total_s"], 3),
        "environment_reused": bool(result.environment.get("reused")),
        "environment_s": round(result.environment.get("seconds", 0.0), 3),
        "gpu_device": result.host.get("device_name") or "",
        "software": {"raw_value": result.software, "type": "json"},
        "settings": {"raw_value": result.settings or {}, "type": "json"},
        "csv_path": {"raw_value": result.csv_path, "type": "path"},
        "result_path": {"raw_value": str(result_path), "type": "path"},
        **coverage_metadata(result),
    }


def coverage_metadata(result: SweepResult) -> dict:
    """The sweep's coverage and sentinel, as Pipes metadata (defs/sweep.py makes the same for benchmark_csv)."""
    metadata = {}
    if result.coverage:
        coverage = SweepCoverage.from_dict(result.coverage)
        metadata["sweep_coverage"] = {"raw_value": coverage.markdown(), "type": "md"}
        metadata["sweep_coverage_totals"] = {"raw_value": coverage.totals(), "type": "json"}
    if result.sentinel:
        metadata["sentinel"] = {"raw_value": "\n".join(sentinel.summary_lines(result.sentinel)), "type": "md"}
    return metadata


def _write_json(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, sort_keys=True))


def _terminate_on_sigterm() -> None:
    # A cancelled run (Dagster terminate, pod deletion) sends SIGTERM; raising lets the runner kill the
    # running script's process group on the way out.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))


def run_plain(request_path: Path, result_path: Path) -> int:
    try:
        request = SweepRequest.from_dict(json.loads(Path(request_path).read_text()))
        result = run_sweep(request, progress=lambda event: print(progress_line(event), file=sys.stderr, flush=True))
    except Exception as error:  # reported in the result file, then as the exit code
        _write_json(result_path, {"error": error_dict(error)})
        print(f"sweep failed: {error}", file=sys.stderr)
        if not isinstance(error, SweepError):
            traceback.print_exc()
        return exit_code_for(error)
    _write_json(result_path, result.to_dict())
    print("\n".join(result.summary_lines()), file=sys.stderr)
    return EXIT_OK


def run_with_pipes() -> int:
    from dagster_pipes import open_dagster_pipes

    with open_dagster_pipes() as pipes:
        extras = dict(pipes.extras or {})
        request_data = extras.get("sweep_request") or {
            k: v for k, v in extras.items() if k in SweepRequest.__dataclass_fields__
        }
        try:
            request = SweepRequest.from_dict(request_data)
            result = run_sweep(request, progress=lambda event: pipes.log.info(progress_line(event)))
        except SweepError as error:
            # The orchestrator decides from this message (reply_from_messages), so the process ends cleanly.
            pipes.report_custom_message(error_message(error))
            pipes.log.error(f"sweep failed: {error}")
            print(f"sweep failed: {error}", file=sys.stderr)
            return EXIT_OK
        result_path = Path(extras.get("result_path") or Path(result.work_dir) / "result.json")
        _write_json(result_path, result.to_dict())
        pipes.report_custom_message(result_message(result, result_path, Path(result.csv_path).read_bytes()))
        for line in result.summary_lines():
            pipes.log.info(line)
        if extras.get("report_materialization", True):
            pipes.report_asset_materialization(metadata=materialization_metadata(result, result_path))
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--request", type=Path, help="plain mode: sweep request JSON (SweepRequest fields)")
    parser.add_argument("--result", type=Path, help="plain mode: where to write the result JSON")
    args = parser.parse_args(argv)
    _terminate_on_sigterm()
    if args.request:
        if not args.result:
            parser.error("--request needs --result")
        return run_plain(args.request, args.result)
    return run_with_pipes()


if __name__ == "__main__":
    restart_with_sweep_environment("kernelindex_pipeline.sweep.pipes_entry", sys.argv[1:])  # secrets out
    sys.exit(main())
