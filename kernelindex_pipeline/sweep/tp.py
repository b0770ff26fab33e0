"""Script formats beyond `utils.run_benchmarks`: the tensor-parallel FSLCE script and the FLCE chunk sweep.

* `benchmark_fused_scaled_linear_cross_entropy_tp.py` (Liger 0.8.3+) needs `torchrun
  --nproc_per_node=8` and `--provider native|verl-fallback`, and writes no CSV: rank 0 prints one line
  `FSLCE_TP_FORWARD_BENCHMARK {json}` (median/min/max of its CUDA-event forward timings over
  `--iterations`, tokens, hidden, global vocabulary, world size, ...). On a host with at least the GPUs
  it names, it runs once per provider under `python -m torch.distributed.run --standalone`, and each
  line becomes a CSV row of kernel `fused_scaled_linear_cross_entropy_tp` (metric speed, mode
  forward, x = tokens; no p20/p80: the line has none), which liger/normalize.py publishes with a
  protocol of its own (liger.builders.tp_protocol). With fewer GPUs the script is not run: its outcome
  is `skipped` with "needs 8 GPUs", and coverage shows it so.
* 0.8.5's `benchmark_fused_linear_cross_entropy.py` has an opt-in chunk-memory sweep: with
  `LIGER_FLCE_BENCH_CHUNK_MEM_CONSTS=2,4,...` it adds providers `liger-chunk-c<N>` measured with
  do_bench warmup 100 ms / rep 400 ms. The sweep sets that variable when its `flce_chunk_mem_consts`
  setting asks for it.
"""

from __future__ import annotations

import csv
import json
import math
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelindex_pipeline.liger.measured_rows import TP_KERNEL

from .outcomes import ScriptOutcome, ScriptStatus
from .process import ScriptRun, run_script

TP_MARKER = "FSLCE_TP_FORWARD_BENCHMARK"
TP_PROVIDERS = ("native", "verl-fallback")
FLCE_CHUNK_VARIABLE = "LIGER_FLCE_BENCH_CHUNK_MEM_CONSTS"
FLCE_CHUNK_PROVIDER = "liger-chunk-c"  # the script's provider names: liger-chunk-c<N>
TP_LINE_MAX_CHARS = 64 * 1024
_NPROC = re.compile(r"--nproc_per_node[= ](\d+)")


@dataclass(frozen=True)
class TpPlan:
    gpus: int
    providers: tuple[str, ...] = TP_PROVIDERS


def plan_of(script: Path) -> TpPlan | None:
    """A TP plan for a script that prints the TP marker line (the GPUs its own usage text names)."""
    text = script.read_text(encoding="utf-8", errors="replace")
    if TP_MARKER not in text:
        return None
    found = _NPROC.search(text)
    return TpPlan(gpus=int(found.group(1)) if found else 8)


def skipped_outcome(script: Path, plan: TpPlan, gpus: int | None, round_number: int, variant: str) -> ScriptOutcome:
    return ScriptOutcome(
        script=script.name,
        status=ScriptStatus.SKIPPED,
        exit_code=None,
        error_line=f"needs {plan.gpus} GPUs",
        rows=0,
        problems=[
            {
                "kind": "skipped",
                "message": f"this host has {gpus or 0} GPU(s); the script needs {plan.gpus} (torchrun --nproc_per_node={plan.gpus})",
            }
        ],
        round=round_number,
        variant=variant,
    )


def chunk_budgets() -> set[int]:
    """The FLCE chunk budgets N whose provider `liger-chunk-c<N>` the full catalogue names."""
    from kernelindex_pipeline.liger.catalogue import load_catalogue

    names = load_catalogue(profile="full").providers
    return {
        int(name.removeprefix(FLCE_CHUNK_PROVIDER))
        for name in names
        if re.fullmatch(FLCE_CHUNK_PROVIDER + r"[0-9]+", name)
    }


class TpLineError(ValueError):
    """A TP marker line that is not one JSON object with the fields a run needs."""


def parse_tp_line(line: str) -> dict[str, Any]:
    """The JSON of one `FSLCE_TP_FORWARD_BENCHMARK {json}` line, checked."""
    text = line.split(TP_MARKER, 1)[1].strip()
    if len(text) > TP_LINE_MAX_CHARS:
        raise TpLineError(f"the {TP_MARKER} line is longer than {TP_LINE_MAX_CHARS} characters")
    try:
        data = json.loads(text)
    except ValueError as error:
        raise TpLineError(f"the {TP_MARKER} line is not JSON ({error})") from None
    if not isinstance(data, dict):
        raise TpLineError(f"the {TP_MARKER} line holds {type(data).__name__}, not an object")
    for name in ("provider", "tokens", "hidden", "global_vocab", "world_size"):
        if name not in data:
            raise TpLineError(f"the {TP_MARKER} line has no {name!r}")
    for name in ("tokens", "hidden", "global_vocab", "world_size"):
        if type(data[name]) is not int or data[name] <= 0:
            raise TpLineError(f"the {TP_MARKER} line's {name} = {data[name]!r} is not a positive whole number")
    median = data.get("latency_median_ms")
    if not isinstance(median, (int, float)) or not math.isfinite(median) or median <= 0:
        raise TpLineError(f"the {TP_MARKER} line's latency_median_ms = {median!r} is not a finite number > 0")
    return data


def tp_row(data: dict[str, Any], gpu_name: str, liger_version: str) -> dict[str, str]:
    """The CSV row of one TP line (upstream columns; no p20/p80)."""
    config = {"hidden_size": data["hidden"], "vocab_size": data["global_vocab"], "dtype": "torch.bfloat16",
              "world_size": data["world_size"]}  # fmt: skip
    if isinstance(data.get("temperature"), (int, float)):
        config["temperature"] = data["temperature"]
    return {
        "kernel_name": TP_KERNEL,
        "kernel_provider": str(data["provider"]),
        "kernel_operation_mode": "forward",
        "metric_name": "speed",
        "metric_unit": "ms",
        "x_name": "T",
        "x_label": "tokens",
        "x_value": str(data["tokens"]),
        "y_value_50": repr(float(data["latency_median_ms"])),
        "y_value_20": "",
        "y_value_80": "",
        "extra_benchmark_config_str": json.dumps(config),
        "gpu_name": gpu_name,
        "timestamp": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
        "liger_version": liger_version,
    }


def run_tp(
    script: Path,
    plan: TpPlan,
    python: Path,
    env: dict[str, str],
    log_path: Path,
    timeout_s: float,
    control: Path,
    pass_fds: tuple[int, ...] = (),
) -> tuple[ScriptRun | None, tuple[list[dict[str, Any]], list[dict]]]:
    """Run the TP script once per provider under torchrun; (the last ScriptRun, rows or problems).

    The rows come back as (rows, problems): a malformed line is a problem naming it, never a crash;
    the providers' logs go to `<log>.<provider>.log` (the first provider's run is the script's log)."""
    rows, problems, run = [], [], None
    launcher = ["-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={plan.gpus}"]
    for provider in plan.providers:
        provider_log = log_path if provider == plan.providers[0] else log_path.with_suffix(f".{provider}.log")
        run = run_script(
            script,
            python,
            env,
            provider_log,
            timeout_s,
            ["--provider", provider],
            control,
            pass_fds=pass_fds,
            launcher_args=launcher,
        )
        lines = [line for line in _read_text(provider_log).splitlines() if TP_MARKER in line]
        if not lines:
            problems.append(
                {"kind": "tp_line_missing", "message": f"provider {provider}: no {TP_MARKER} line in its log"}
            )
            continue
        try:
            rows.append(parse_tp_line(lines[-1]))
        except TpLineError as error:
            problems.append({"kind": "tp_line_malformed", "message": f"provider {provider}: {error}"})
    return run, (rows, problems)


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def append_rows(
    data_csv: Path, parsed: tuple[list[dict[str, Any]], list[dict]], gpu_name: str, liger_version: str
) -> list[dict]:
    """Add the TP lines' rows to the data CSV (as the scripts' own utils would); returns the problems."""
    rows, problems = parsed
    if rows:
        with data_csv.open("a", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(tp_row(rows[0], gpu_name, liger_version)))
            for data in rows:
                writer.writerow(tp_row(data, gpu_name, liger_version))
    return problems
