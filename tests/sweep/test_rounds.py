"""Rounds, throttling, the sentinel band and the TP script through the real orchestration on a CPU: a
stand-in release, real script subprocesses with the sample hook, a stand-in torch/triton whose clock runs
at another speed in each run of a script (so rounds disagree, as real runs do), a stand-in nvidia-smi
that can report a throttled GPU, and a stand-in torchrun."""

from __future__ import annotations

import csv
import json
import os
import statistics
import textwrap
from pathlib import Path

import pytest

from kernelindex_pipeline.liger import import_csv
from kernelindex_pipeline.liger.normalize import MeasuredContext
from kernelindex_pipeline.liger.sample_statistics import latency_statistics, row_key_of
from kernelindex_pipeline.records.jsnumber import ms_to_ns
from kernelindex_pipeline.records.schema import validate_manifest
from kernelindex_pipeline.sweep import sentinel
from kernelindex_pipeline.sweep.outcomes import ConfigurationError
from kernelindex_pipeline.sweep.protocol import SweepRequest
from kernelindex_pipeline.sweep.run import run_sweep
from kernelindex_pipeline.sweep.tp import TpLineError, parse_tp_line
from tests.support.standin_release import (
    SCRIPTS,
    UTILS,
    build_fake_nvidia_smi,
    build_fake_torch,
    build_liger_wheel,
    build_release_tarball,
)
from tests.support.stored_files import stored_file

H100 = "nvidia-h100-80gb-hbm3"
VERSION = "0.8.5"
FACTORS = (1.0, 1.3, 0.8)  # the stand-in clock's speed in a script's 1st, 2nd, 3rd run

# Each run of a script (counted per script in a file) times with the next factor: run-to-run noise.
CLOCK_PER_RUN = """
import os as _os
import sys as _sys


def _run_factor():
    path = _os.path.join(COUNTERS, _os.path.basename(_sys.argv[0] or "none") + ".runs")
    runs = int(open(path).read()) if _os.path.exists(path) else 0
    with open(path, "w") as handle:
        handle.write(str(runs + 1))
    return FACTORS[runs % len(FACTORS)]


_FACTOR = _run_factor()
_real_tick = _tick


def _tick():
    before = _state["clock"]
    _real_tick()
    _state["clock"] = before + (_state["clock"] - before) * _FACTOR
    return _state["clock"]
"""
LAYER_NORM_HANGS_IN_ITS_SECOND_RUN = """
import os
import time
from utils import run_benchmarks, speed_bench

if __name__ == "__main__":
    path = os.path.join(COUNTERS, "layer_norm.runs")
    runs = int(open(path).read()) if os.path.exists(path) else 0
    open(path, "w").write(str(runs + 1))
    if runs == 1:
        print("layer_norm: hanging in this run", flush=True)
        while True:
            time.sleep(1)
    config = {"N": 4096, "dtype": "torch.float32", "eps": 1e-06}
    run_benchmarks(speed_bench, "layer_norm", "speed", "ms", "N", "hidden size", [1024, 2048], ["liger", "huggingface"], ["forward"], [config])
"""
HOT_SCRIPT = """
from pathlib import Path
from utils import run_benchmarks, speed_bench

if __name__ == "__main__":
    Path(MARKER).write_text("hot")  # the stand-in nvidia-smi now reports a thermal slowdown
    config = {"bsz": 2, "hidden_size": 2048, "intermediate_size": 4096, "dtype": "torch.bfloat16", "hidden_act": "silu"}
    run_benchmarks(bench_test_fn=speed_bench, kernel_name="tiled_swiglu", metric_name="speed", metric_unit="ms", x_name="T",
                   x_label="sequence length", x_values=[1024, 2048], kernel_providers=["liger_tiled", "huggingface"],
                   kernel_operation_modes=["full"], extra_benchmark_configs=[config])
"""
TP_SCRIPT = '''
"""Stand-in of benchmark_fused_scaled_linear_cross_entropy_tp.py (0.8.3+): run it as

    torchrun --standalone --nproc_per_node=8 benchmark_fused_scaled_linear_cross_entropy_tp.py --provider native
"""
import argparse
import json
import os

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--provider", choices=("native", "verl-fallback"), required=True)
    args = parser.parse_args()
    world = int(os.environ["WORLD_SIZE"])  # set by torchrun
    if args.provider == "verl-fallback":
        print("FSLCE_TP_FORWARD_BENCHMARK {\\"provider\\": \\"verl-fallback\\", \\"tokens\\": 4096,", flush=True)  # cut short
    else:
        result = {"provider": args.provider, "world_size": world, "tokens": 4096, "hidden": 4096, "global_vocab": 131072,
                  "local_vocab": 131072 // world, "latency_median_ms": 1.75, "latency_min_ms": 1.7, "latency_max_ms": 1.9}
        print("FSLCE_TP_FORWARD_BENCHMARK " + json.dumps(result, sort_keys=True), flush=True)
'''
TORCHRUN = '''
"""Stand-in `python -m torch.distributed.run --standalone --nproc_per_node=N script args`: rank 0 only."""
import os
import runpy
import sys

args = sys.argv[1:]
nproc = 1
while args and args[0].startswith("--"):
    option = args.pop(0)
    if option.startswith("--nproc_per_node="):
        nproc = int(option.split("=", 1)[1])
os.environ.update(LOCAL_RANK="0", RANK="0", WORLD_SIZE=str(nproc))
sys.argv = args
runpy.run_path(args[0], run_name="__main__")
'''
FLCE_SCRIPT = '''
"""Stand-in of 0.8.5's benchmark_fused_linear_cross_entropy.py: its opt-in chunk-memory sweep."""
import os
import triton
from utils import QUANTILES, SingleBenchmarkRunOutput, run_benchmarks

if __name__ == "__main__":
    consts = [int(c) for c in os.environ.get("LIGER_FLCE_BENCH_CHUNK_MEM_CONSTS", "").split(",") if c.strip()]
    providers = ["torch", *[f"liger-chunk-c{c}" for c in consts]] if consts else ["torch", "liger"]
    warmup, rep = (100, 400) if consts else (25, 10)

    def bench(input):
        ms_50, ms_20, ms_80 = triton.testing.do_bench(lambda: None, quantiles=QUANTILES, warmup=warmup, rep=rep)
        return SingleBenchmarkRunOutput(y_20=ms_20, y_50=ms_50, y_80=ms_80)

    config = {"hidden_size": 4096, "vocab_size": 128256, "dtype": "torch.bfloat16", "eps": 1e-06, "bsz": 2, "seq_len": 4096}
    run_benchmarks(bench, "fused_linear_cross_entropy", "speed", "ms", "BT", "total tokens", [1024], providers, ["forward"], [config])
'''
THROTTLED_XML_REASON = "<clocks_event_reason_sw_thermal_slowdown>Active</clocks_event_reason_sw_thermal_slowdown>"


def _smi_with_marker(bin_dir: Path, marker: Path) -> None:
    """The stand-in nvidia-smi, reporting a thermal slowdown while `marker` exists."""
    build_fake_nvidia_smi(bin_dir)
    normal = (bin_dir / "nvidia-smi.xml").read_text()
    hot = normal.replace("<clocks_event_reasons>", "<clocks_event_reasons>" + THROTTLED_XML_REASON, 1)
    (bin_dir / "nvidia-smi-hot.xml").write_text(hot)
    (bin_dir / "nvidia-smi").write_text(
        "#!/bin/sh\n"
        f'if [ -e "{marker}" ]; then cat "$(dirname "$0")/nvidia-smi-hot.xml"; else cat "$(dirname "$0")/nvidia-smi.xml"; fi\n'
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("rounds")
    counters, marker = root / "counters", root / "gpu-is-hot"
    counters.mkdir()
    _smi_with_marker(root / "bin", marker)
    torch_dir = build_fake_torch(root / "torch", "NVIDIA H100 80GB HBM3")
    testing = torch_dir / "triton" / "testing.py"
    testing.write_text(testing.read_text() + f"\nCOUNTERS = {str(counters)!r}\nFACTORS = {FACTORS!r}\n" + CLOCK_PER_RUN)
    eight = build_fake_torch(root / "torch-8", "NVIDIA H100 80GB HBM3")
    cuda = eight / "torch" / "cuda.py"
    cuda.write_text(cuda.read_text().replace("def device_count():\n    return 1", "def device_count():\n    return 8"))
    (eight / "torch" / "distributed").mkdir()
    (eight / "torch" / "distributed" / "__init__.py").write_text("")
    (eight / "torch" / "distributed" / "run.py").write_text(TORCHRUN)
    scripts = {
        "benchmark_model_configs.py": SCRIPTS["benchmark_model_configs.py"],
        "benchmark_rms_norm.py": SCRIPTS["benchmark_rms_norm.py"],
        "benchmark_layer_norm.py": f"COUNTERS = {str(counters)!r}\n"
        + textwrap.dedent(LAYER_NORM_HANGS_IN_ITS_SECOND_RUN),
        "benchmark_tiled_mlp.py": f"MARKER = {str(marker)!r}\n" + textwrap.dedent(HOT_SCRIPT),
        "benchmark_fused_scaled_linear_cross_entropy_tp.py": TP_SCRIPT,
        "benchmark_fused_linear_cross_entropy.py": FLCE_SCRIPT,
    }
    assert "run_benchmarks" in UTILS  # the stand-in utils these scripts use
    return {
        "root": root,
        "counters": counters,
        "marker": marker,
        "torch": torch_dir,
        "torch8": eight,
        "tarball": build_release_tarball(root / "release", VERSION, scripts),
        "wheels": build_liger_wheel(root / "wheels", VERSION).parent,
        "path": f"{root / 'bin'}{os.pathsep}{os.environ['PATH']}",
    }


def request(site, name, **fields):
    base = dict(
        gpu=H100,
        liger_version=VERSION,
        release=str(site["tarball"]),
        work_dir=str(site["root"] / name),
        env_cache_dir=str(site["root"] / "envs"),
        wheel_dir=str(site["wheels"]),
        extra_pythonpath=[str(site["torch"])],
        extra_env={"PATH": site["path"]},
        script_timeout_s=15,
    )
    return SweepRequest(**{**base, **fields})


def fresh_counters(site):
    for path in site["counters"].iterdir():
        path.unlink()
    site["marker"].unlink(missing_ok=True)


def read_csv(path):
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="module")
def three_rounds(site):
    fresh_counters(site)
    events = []
    result = run_sweep(
        request(site, "three-rounds", scripts=["benchmark_layer_norm.py", "benchmark_rms_norm.py"]),
        progress=events.append,
    )
    imported = import_csv(
        result.csv_path, gpu=H100, liger_version=VERSION, measured=MeasuredContext(**result.measured_context())
    )
    return {"result": result, "events": events, "imported": imported}


@pytest.mark.slow
def test_rounds_interleave_the_scripts(three_rounds):
    result = three_rounds["result"]
    assert result.rounds == 3  # the default
    order = [(e["round"], e["script"]) for e in three_rounds["events"]]
    assert order == [
        (r, s) for r in (1, 2, 3) for s in ("benchmark_layer_norm.py", "benchmark_rms_norm.py")
    ]  # AB AB AB
    logs = Path(result.work_dir) / "logs"
    assert all((logs / f"round-{r}" / "all_benchmark_data.csv").is_file() for r in (1, 2, 3))


@pytest.mark.slow
def test_a_script_that_hangs_in_one_round_keeps_its_other_rounds(three_rounds):
    result = three_rounds["result"]
    runs = [o for o in result.outcomes if o.script == "benchmark_layer_norm.py"]
    assert [(o.round, o.status.value) for o in runs] == [(1, "ok"), (2, "timed_out"), (3, "ok")]
    rows = [r for r in read_csv(result.csv_path) if r["kernel_name"] == "layer_norm"]
    assert len(rows) == 4
    [coverage] = [s for s in result.coverage["scripts"] if s["script"] == "benchmark_layer_norm.py"]
    assert coverage["status"] == "ok" and coverage["rounds"] == {"ok": 2, "timed_out": 1}
    logs = Path(result.work_dir) / "logs"
    for row in rows:  # the median of the two rounds that measured it
        values = [
            float(r["y_value_50"])
            for n in (1, 3)
            for r in read_csv(logs / f"round-{n}" / "all_benchmark_data.csv")
            if row_key_of(r) == row_key_of(row)
        ]
        assert len(values) == 2 and float(row["y_value_50"]) == pytest.approx(statistics.median(values))
    assert any("round 2" in line and "timed_out" in line for line in result.summary_lines())


@pytest.mark.slow
def test_confidence95_covers_the_spread_of_the_rounds(three_rounds):
    result, imported = three_rounds["result"], three_rounds["imported"]
    logs = Path(result.work_dir) / "logs"
    per_round = [
        {row_key_of(r): r for r in read_csv(logs / f"round-{n}" / "all_benchmark_data.csv")} for n in (1, 2, 3)
    ]
    for row in read_csv(result.csv_path):  # every merged row: the median of its rounds
        if row["kernel_name"] == "rms_norm" and row["metric_name"] == "speed":  # (memory rows are the same every round)
            values = [float(rows[row_key_of(row)]["y_value_50"]) for rows in per_round]
            assert float(row["y_value_50"]) == statistics.median(values) and len(set(values)) == 3
    speed = [
        r
        for r in imported.runs()
        if r["spec"]["sourceNative"]["benchmark"].startswith("rms_norm/") and "timing" in r["spec"]
    ]
    assert len(speed) == 18
    widths = []
    for run in speed:
        assert validate_manifest(run) == []
        artifact = json.loads(stored_file(run["spec"]["timing"]["rawSamples"]).read_text())
        assert artifact["format"] == "kernelindex-sweep-rounds/v1" and [r["round"] for r in artifact["rounds"]] == [
            1,
            2,
            3,
        ]
        rounds_ms = [r["returned"][0] for r in artifact["rounds"]]  # each round's call: its median
        latency = run["spec"]["timing"]["latencyNs"]
        assert latency["median"] == ms_to_ns(statistics.median(rounds_ms))
        low, high = latency["confidence95"]
        assert low <= ms_to_ns(min(rounds_ms)) and high >= ms_to_ns(max(rounds_ms))  # covers every round
        # ...where one process's bootstrap (what a single round would have claimed) covers a sliver
        assert set(artifact["rounds"][0]["artifact"]) == {"digest"}  # named by digest: no host path in evidence
        first = json.loads(
            stored_file(artifact["rounds"][0]["artifact"]).read_text()
        )  # the store holds every round's call
        one_low, one_high = latency_statistics(first["samples"])["latencyNs"]["confidence95"]
        widths.append((high - low) / max(one_high - one_low, 1))
    assert min(widths) > 2  # the stand-in clock scatters +-50 % within a process; real GPUs far less
    protocols = [m for m in imported.iter_kind("BenchmarkProtocol") if "sweep" in m["metadata"]["name"]]
    assert {p["metadata"]["name"] for p in protocols} == {
        "liger-bench-do-bench-forward-sweep-w25-r100-x3",
        "liger-bench-do-bench-backward-sweep-w25-r100-x3",
        "liger-bench-do-bench-full-sweep-w5-r10-x3",
    }
    full = next(p for p in protocols if p["metadata"]["name"].endswith("full-sweep-w5-r10-x3"))
    assert full["spec"]["measurement"]["warmupDuration"] == "5 ms"
    assert "do_bench warmup 5 ms, rep 10 ms" in full["spec"]["comparability"]["notes"]
    assert "resampling unit: the round" in full["spec"]["comparability"]["notes"]


@pytest.mark.slow
def test_a_throttled_script_is_flagged_in_its_runs_and_in_coverage(site):
    fresh_counters(site)
    result = run_sweep(
        request(site, "throttled", scripts=["benchmark_rms_norm.py", "benchmark_tiled_mlp.py"], rounds=1)
    )
    outcomes = {o.script: o for o in result.outcomes}
    assert outcomes["benchmark_rms_norm.py"].gpu_state["throttle_reasons"] == []
    assert outcomes["benchmark_rms_norm.py"].gpu_state["before"]["sm_clock_mhz"] == 345.0
    assert outcomes["benchmark_tiled_mlp.py"].gpu_state["throttle_reasons"] == ["sw_thermal_slowdown"]
    coverage = {s["script"]: s for s in result.coverage["scripts"]}
    assert (
        coverage["benchmark_tiled_mlp.py"]["throttled"] == ["sw_thermal_slowdown"]
        and coverage["benchmark_rms_norm.py"]["throttled"] == []
    )
    imported = import_csv(
        result.csv_path, gpu=H100, liger_version=VERSION, measured=MeasuredContext(**result.measured_context())
    )
    labels = {r["spec"]["sourceNative"]["benchmark"].split("/")[0]: r["metadata"]["labels"] for r in imported.runs()}
    assert labels["tiled_swiglu"]["throttled"] == "sw_thermal_slowdown"
    assert "throttled" not in labels["rms_norm"]


@pytest.mark.slow
def test_gpu_state_without_nvidia_smi_is_unavailable_not_guessed(site):
    fresh_counters(site)
    result = run_sweep(
        request(site, "no-smi", scripts=["benchmark_rms_norm.py"], rounds=1, extra_env={"PATH": os.environ["PATH"]})
    )
    state = result.outcomes[0].gpu_state
    assert (
        state["before"] == {"available": False, "error": "nvidia-smi not found on PATH"}
        and state["throttle_reasons"] == []
    )


@pytest.mark.slow
def test_the_sentinel_band_marks_an_outlier_sweep(site):
    fresh_counters(site)
    # (earlier sweeps of this module measured ~1 ms into the host's history file too; these outnumber them)
    history = [
        {"operation": op["name"], "median_ms": 0.5 + (i % 3) * 0.001}
        for i in range(30)
        for op in sentinel.PLAN["operations"]
    ]
    result = run_sweep(request(site, "outlier", scripts=["benchmark_rms_norm.py"], rounds=1, sentinel_history=history))
    assert result.sentinel_band["status"] == "outside"  # the stand-in sentinel times ~1 ms, its history 0.5 ms
    assert any("OUTLIER SWEEP" in line for line in result.summary_lines())
    imported = import_csv(
        result.csv_path, gpu=H100, liger_version=VERSION, measured=MeasuredContext(**result.measured_context())
    )
    runs = list(imported.runs())
    assert runs and all(r["metadata"]["labels"].get("sentinel_band") == "outside" for r in runs)


def test_the_host_s_sentinel_history_is_kept_per_gpu(tmp_path):
    path = sentinel.history_path(tmp_path, "GPU-5a3c1e2b-0000-4000-8000-000000000001", "NVIDIA H100 80GB HBM3")
    assert path == tmp_path / "sentinel-history" / "gpu-5a3c1e2b-0000-4000-8000-000000000001.jsonl"
    ok = [{"position": p, "operation": op["name"], "status": "ok", "returned": [1.0, 0.9, 1.1], "observed_at": "2026-12-01T00:00:00Z"}
          for p in ("start", "end") for op in sentinel.PLAN["operations"]]  # fmt: skip
    failed = {**ok[0], "status": "failed"}
    for _ in range(3):
        sentinel.append_history(path, [*ok, failed], "0.8.5")
    with open(path, "a") as handle:
        handle.write('{"cut short\n[1, 2]\n{"operation": "copy_1gib", "median_ms": -1}\n')
    history = sentinel.read_history(path)
    assert len(history) == 12 and {h["liger_version"] for h in history} == {"0.8.5"}  # bad lines skipped
    assert sentinel.sentinel_band(history, ok)["status"] == "inside"
    assert sentinel.read_history(tmp_path / "none.jsonl") == []


def test_the_sentinel_band_needs_history_and_takes_the_host_s_spread():
    ok = [
        {"position": p, "operation": op["name"], "status": "ok", "returned": [1.0, 0.9, 1.1]}
        for p in ("start", "end")
        for op in sentinel.PLAN["operations"]
    ]
    steady = [
        {"operation": op["name"], "median_ms": 1.0 + 0.002 * (i % 3)}
        for i in range(8)
        for op in sentinel.PLAN["operations"]
    ]
    assert sentinel.sentinel_band(steady, ok)["status"] == "inside"
    assert sentinel.sentinel_band(steady[:8], ok)["status"] == "insufficient_history"  # 4 sweeps per operation
    slow = [{**m, "returned": [1.2, 1.1, 1.3]} for m in ok]
    band = sentinel.sentinel_band(steady, slow)
    assert band["status"] == "outside" and sentinel.band_labels(band) == {"sentinel_band": "outside"}
    assert sentinel.sentinel_band(steady, [{**m, "status": "failed"} for m in ok])["status"] == "not_measured"
    noisy = [
        {"operation": op["name"], "median_ms": v}
        for v in (0.8, 1.0, 1.2, 0.9, 1.1, 1.25)
        for op in sentinel.PLAN["operations"]
    ]
    assert sentinel.sentinel_band(noisy, slow)["status"] == "inside"  # a noisy host has a wide band


@pytest.mark.slow
def test_the_tp_script_on_a_one_gpu_host_is_skipped_needing_8_gpus(site):
    result = run_sweep(
        request(site, "tp-one-gpu", scripts=["benchmark_fused_scaled_linear_cross_entropy_tp.py"], rounds=1)
    )
    [outcome] = result.outcomes
    assert (outcome.status.value, outcome.error_line) == ("skipped", "needs 8 GPUs")
    [coverage] = [s for s in result.coverage["scripts"] if s["script"] == outcome.script]
    assert coverage["status"] == "skipped: needs 8 GPUs" and coverage["rounds"] == {"skipped": 1}
    assert not (
        Path(result.work_dir) / "logs" / "round-1" / "benchmark_fused_scaled_linear_cross_entropy_tp.log"
    ).exists()


@pytest.mark.slow
def test_a_tp_json_line_becomes_runs_with_a_protocol_of_their_own(site):
    result = run_sweep(
        request(
            site,
            "tp-eight-gpus",
            scripts=["benchmark_fused_scaled_linear_cross_entropy_tp.py"],
            rounds=1,
            extra_pythonpath=[str(site["torch8"])],
        )
    )
    [outcome] = result.outcomes
    assert outcome.ok and outcome.rows == 1
    # the verl-fallback line was cut short: named, and the native row kept
    [problem] = [p for p in outcome.problems if p["kind"] == "tp_line_malformed"]
    assert problem["message"].startswith("provider verl-fallback: the FSLCE_TP_FORWARD_BENCHMARK line is not JSON")
    imported = import_csv(
        result.csv_path, gpu=H100, liger_version=VERSION, measured=MeasuredContext(**result.measured_context())
    )
    [run] = [
        r
        for r in imported.runs()
        if r["spec"]["sourceNative"]["benchmark"].startswith("fused_scaled_linear_cross_entropy_tp/")
    ]
    assert validate_manifest(run) == []
    assert run["spec"]["timing"]["latencyNs"]["median"] == 1_750_000
    protocol = next(
        m for m in imported.iter_kind("BenchmarkProtocol") if m["metadata"]["name"] == "liger-bench-tp-forward"
    )
    assert run["spec"]["protocolDigest"] in {d for d, m in imported.manifests.items() if m is protocol}
    case = next(m for m in imported.iter_kind("WorkloadCase") if "tensor parallel" in m["metadata"]["title"].lower())
    assert case["spec"]["axes"] == {"tokens": 4096, "hidden": 4096, "vocab": 131072}


@pytest.mark.slow
def test_the_flce_chunk_sweep_is_opt_in_and_its_providers_bind(site):
    result = run_sweep(
        request(
            site,
            "flce-chunks",
            scripts=["benchmark_fused_linear_cross_entropy.py"],
            rounds=1,
            flce_chunk_mem_consts=[2, 8],
        )
    )
    providers = sorted(row["kernel_provider"] for row in read_csv(result.csv_path))
    assert providers == ["liger-chunk-c2", "liger-chunk-c8", "torch"]
    imported = import_csv(
        result.csv_path, gpu=H100, liger_version=VERSION, measured=MeasuredContext(**result.measured_context())
    )
    assert imported.report.runs == 3 and imported.report.issues == []  # every provider binds
    impls = {m["metadata"]["name"] for m in imported.iter_kind("ImplementationRevision")}
    assert {
        "liger-bench-fused-linear-cross-entropy-liger-chunk-c2-v0-8-5",
        "liger-bench-fused-linear-cross-entropy-liger-chunk-c8-v0-8-5",
    } <= impls
    # the chunk sweep's longer do_bench windows, as the hook saw them, are in its protocol
    assert {
        m["metadata"]["name"] for m in imported.iter_kind("BenchmarkProtocol") if "sweep" in m["metadata"]["name"]
    } == {"liger-bench-do-bench-forward-sweep-w100-r400-x1"}
    plain = run_sweep(request(site, "flce-plain", scripts=["benchmark_fused_linear_cross_entropy.py"], rounds=1))
    assert sorted(row["kernel_provider"] for row in read_csv(plain.csv_path)) == ["liger", "torch"]  # off by default


def test_malformed_tp_lines_get_clear_errors():
    good = {
        "provider": "native",
        "tokens": 4096,
        "hidden": 4096,
        "global_vocab": 131072,
        "world_size": 8,
        "latency_median_ms": 1.5,
    }
    assert parse_tp_line("FSLCE_TP_FORWARD_BENCHMARK " + json.dumps(good)) == good
    for text, message in (
        ("{", "is not JSON"),
        ("[1, 2]", "holds list, not an object"),
        (json.dumps({**good, "tokens": -1}), "tokens = -1"),
        (json.dumps({k: v for k, v in good.items() if k != "hidden"}), "has no 'hidden'"),
        (json.dumps({**good, "latency_median_ms": float("nan")}).replace("NaN", "NaN"), "latency_median_ms = nan"),
        ("x" * 70_000, "longer than"),
    ):
        with pytest.raises(TpLineError, match=message):
            parse_tp_line("rank0: FSLCE_TP_FORWARD_BENCHMARK " + text)


def test_sweep_settings_are_checked_before_anything_runs():
    for fields, message in (
        ({"rounds": 0}, "rounds must be a whole number from 1 to 20"),
        ({"rounds": 2.5}, "rounds"),
        ({"flce_chunk_mem_consts": [3]}, "chunk budgets the catalogue names"),
        ({"flce_chunk_mem_consts": []}, "chunk budgets"),
        ({"backends": {"swiglu": []}}, "backends"),
    ):
        with pytest.raises(ConfigurationError, match=message):
            SweepRequest.from_dict({"gpu": H100, "liger_version": VERSION, **fields})
    assert (
        SweepRequest.from_dict({"gpu": H100, "liger_version": VERSION, "flce_chunk_mem_consts": [1, 4, 16]}).rounds == 3
    )
