"""The sweep's own process: `python -m kernelindex_pipeline.sweep.pipes_entry`.

Under Dagster Pipes (PipesSubprocessClient locally, PipesK8sClient on a cluster) it reads the sweep
request from the extras, logs one line per script (status, rows so far), and reports back:
- a custom message {"type": "sweep_result", "result": SweepResult.to_dict(), "result_path", "csv_text"}
  (the CSV travels inline, so a pod's files need not be reachable from the orchestrator), from which
  the orchestrator's asset (defs/sweep.py) makes its own materialization;
- on a SweepError, a custom message {"type": "sweep_error", "error": {type, message, retryable}}, and the
  process then ends normally: the message, not an exit code or a Dagster exception's text, is how the
  orchestrator learns what went wrong and whether another try can help (protocol.reply_from_messages).
  Any other exception fails the process as usual (Dagster then may retry it).

Extras: {"sweep_request": {...SweepRequest fields...}, "result_path": optional path}; the request
fields may also sit at the top level. The messages' codec is protocol.py's, shared with the orchestrator.

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
from pathlib import Path

from .environment import restart_with_sweep_environment
from .outcomes import ConfigurationError, HostCheckError, SweepError
from .protocol import SweepRequest, error_dict, error_message, result_message
from .run import run_sweep

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


def exit_code_for(error: BaseException) -> int:
    if isinstance(error, HostCheckError):
        return EXIT_HOST_CHECK
    if isinstance(error, ConfigurationError):
        return EXIT_BAD_REQUEST
    return EXIT_ERROR


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
