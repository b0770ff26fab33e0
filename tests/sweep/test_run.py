"""The execute path end to end on a CPU: a stand-in release, a real venv built offline from a wheel
directory, real script subprocesses (one crashes, one runs out of GPU memory, one hangs while it has
the data CSV truncated), and the rows read back."""

import csv
import hashlib
import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from kernelindex_pipeline.records.names import kebab
from kernelindex_pipeline.sweep.data_csv import UPSTREAM_COLUMNS
from kernelindex_pipeline.sweep.discovery import select_scripts
from kernelindex_pipeline.sweep.host import HostCapture
from kernelindex_pipeline.sweep.outcomes import ConfigurationError, HostCheckError
from kernelindex_pipeline.sweep.protocol import SweepRequest
from kernelindex_pipeline.sweep.run import run_sweep
from kernelindex_pipeline.sweep.workdir import prepare_workdir
from tests.support.standin_release import (
    GOOD_ROWS,
    build_fake_torch,
    build_site,
)
from tests.support.stored_files import stored_file

H100_NAME = "NVIDIA H100 80GB HBM3"
H100 = "nvidia-h100-80gb-hbm3"
VERSION = "0.0.1"
# The stand-in scripts that finish take 0.2-0.4 s here; the hung one waits the timeout out. A 3 s
# timeout left too little margin for a loaded machine, where a finishing script must not time out.
TIMEOUT_S = 10


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("sweep")
    return {
        **build_site(root, VERSION),
        "torch": build_fake_torch(root / "torch-h100", H100_NAME),
        "no_cuda": build_fake_torch(root / "torch-none", None),
        "env_cache": root / "envs",
    }


def request(site, name, **overrides):
    fields = dict(
        gpu=H100,
        liger_version=VERSION,
        release=str(site["tarball"]),
        work_dir=str(site["root"] / name),
        env_cache_dir=str(site["env_cache"]),
        wheel_dir=str(site["wheels"]),
        extra_pythonpath=[str(site["torch"])],
        extra_env={"PATH": site["path"]},
        script_timeout_s=TIMEOUT_S,
        rounds=1,  # one run per script here; rounds have tests of their own (tests/sweep/test_rounds.py)
    )
    fields.update(overrides)
    return SweepRequest(**fields)


@pytest.fixture(scope="module")
def sweep(site):
    # A timezone far from UTC: the scripts' timestamps are UTC only because the runner sets TZ=UTC.
    saved = os.environ.get("TZ")
    os.environ["TZ"] = "Asia/Kathmandu"
    events = []
    try:
        before = datetime.now(UTC).replace(microsecond=0)
        result = run_sweep(request(site, "full"), progress=events.append)
        after = datetime.now(UTC)
    finally:
        if saved is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = saved
    return {"result": result, "events": events, "before": before, "after": after}


def liger_runs(imported):
    return [r for r in imported.runs() if r["spec"]["sourceNative"]["source"] == "liger-kernel-bench"]


def read_csv(path):
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.slow  # the first test pays for the module's sweep: about 12 s, 10 of them the hung script
def test_every_script_is_classified(sweep):
    outcomes = {o.script: o for o in sweep["result"].outcomes}
    assert sorted(outcomes) == [
        "benchmark_cross_entropy.py",
        "benchmark_layer_norm.py",
        "benchmark_rms_norm.py",
        "benchmark_softmax.py",
        "benchmark_tiled_mlp.py",
    ]  # benchmark_model_configs.py is a helper module, not run
    assert outcomes["benchmark_rms_norm.py"].status.value == "ok"
    assert outcomes["benchmark_tiled_mlp.py"].status.value == "ok"

    crashed = outcomes["benchmark_layer_norm.py"]
    assert (crashed.status.value, crashed.exit_code) == ("failed", 1)
    assert crashed.error_line == "RuntimeError: Triton compilation failed: layer_norm_fwd (stand-in crash)"

    oom = outcomes["benchmark_cross_entropy.py"]
    assert (oom.status.value, oom.exit_code) == ("out_of_memory", 1)
    assert "CUDA out of memory" in oom.error_line

    hung = outcomes["benchmark_softmax.py"]
    assert (hung.status.value, hung.exit_code) == ("timed_out", None)
    assert hung.seconds >= TIMEOUT_S
    assert hung.csv_repaired is True and hung.rows == 0


def test_rows_of_good_scripts_survive_the_failures(sweep):
    result = sweep["result"]
    rows = read_csv(result.csv_path)
    assert list(rows[0].keys()) == list(UPSTREAM_COLUMNS)
    per_script = {o.script: o.rows for o in result.outcomes if o.rows}
    assert per_script == GOOD_ROWS
    assert result.rows == len(rows) == sum(GOOD_ROWS.values())
    # Only rows measured here: the release's history row (an A100 from 2024) is gone.
    assert {row["gpu_name"] for row in rows} == {H100_NAME}
    assert {row["kernel_name"] for row in rows} == {"rms_norm", "tiled_swiglu", "tiled_geglu"}
    assert {row["liger_version"] for row in rows} == {VERSION}


def test_timestamps_are_utc(sweep):
    rows = read_csv(sweep["result"].csv_path)
    for row in rows:
        stamp = datetime.strptime(row["timestamp"], "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)
        # Kathmandu is UTC+05:45: a local-time stamp would fall far outside the run's UTC interval.
        assert sweep["before"] - timedelta(seconds=1) <= stamp <= sweep["after"]


def test_one_progress_event_per_script_with_running_row_count(sweep):
    events = sweep["events"]
    result = sweep["result"]
    assert [e["script"] for e in events] == [o.script for o in result.outcomes]
    assert [e["index"] for e in events] == list(range(1, len(events) + 1))
    running = 0
    for event in events:
        running += event["rows"]
        assert event["rows_so_far"] == running
    assert running == result.rows


def test_logs_are_evidence_per_kernel(sweep):
    result = sweep["result"]
    assert set(result.logs_by_kernel) == {"rms_norm", "tiled_swiglu", "tiled_geglu"}
    tiled = result.logs_by_kernel["tiled_geglu"]
    assert tiled == result.logs_by_kernel["tiled_swiglu"]
    assert tiled["uri"].startswith("ni:///sha-256;")  # the artifact store's content name, no host path
    path = stored_file(tiled)
    assert Path(result.work_dir, "logs", "round-1", "benchmark_tiled_mlp.log").read_bytes() == path.read_bytes()
    assert tiled["digest"] == "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
    assert "wrote 6 rows of tiled_geglu" in path.read_text()


def test_host_capture_and_timings(sweep):
    result = sweep["result"]
    assert result.host["device_name"] == H100_NAME
    assert result.software["framework"] == {"name": "torch", "version": "2.5.1+standin"}
    assert result.host["liger_kernel"] == VERSION  # read in the scripts' own environment
    # ...and kept out of the ExecutionEnvironment: another release swept on this host shares it.
    assert "liger_kernel" not in result.software["libraries"]
    other = HostCapture.from_dict({**result.host, "liger_kernel": "9.9.9"})
    assert other.software() == result.software and other.settings() == result.settings
    assert result.settings["powerLimitWatts"] == 700.0
    assert result.environment["reused"] is False
    assert result.environment["installed"] == [f"liger-kernel=={VERSION}"]
    timings = result.timings
    assert timings["scripts_s"] == pytest.approx(sum(o.seconds for o in result.outcomes), abs=0.01)
    assert timings["overhead_s"] == pytest.approx(timings["total_s"] - timings["scripts_s"], abs=0.01)
    work = Path(result.work_dir)
    assert (work / "logs" / "host.json").is_file() and (work / "logs" / "nvidia-smi.xml").is_file()


def test_second_sweep_reuses_the_environment_and_runs_only_named_kernels(site, sweep):
    result = run_sweep(request(site, "tiled-only", kernels=["tiled_geglu"]))
    assert result.environment["reused"] is True
    assert result.environment["path"] == sweep["result"].environment["path"]
    assert [o.script for o in result.outcomes] == ["benchmark_tiled_mlp.py"]
    assert result.rows == GOOD_ROWS["benchmark_tiled_mlp.py"]


def test_measured_rows_become_valid_records(sweep):
    from kernelindex_pipeline.liger import import_csv
    from kernelindex_pipeline.liger.normalize import MeasuredContext
    from kernelindex_pipeline.records.schema import validate_manifest

    result = sweep["result"]
    imported = import_csv(
        result.csv_path, gpu=H100, liger_version=VERSION, measured=MeasuredContext(**result.measured_context())
    )
    runs = liger_runs(imported)
    # rms_norm: 2 providers x 3 modes x 3 sizes; tiled: 2 kernels x 2 providers x 3 lengths; and (full
    # profile) rms_norm's memory rows: 2 providers x 3 sizes of the full pass.
    assert len(runs) == 18 + 12 + 6
    assert sum("timing" not in run["spec"] for run in runs) == 6
    for manifest in imported.manifests.values():
        assert validate_manifest(manifest) == []
    environments = [m for m in imported.manifests.values() if m["kind"] == "ExecutionEnvironment"]
    assert len(environments) == 1  # the sentinel's runs share it
    assert environments[0]["spec"]["software"] == result.software
    # evidence is referenced in the artifact store: no record names a path of the sweep host
    text = json.dumps(list(imported.manifests.values()))
    assert "file://" not in text and str(Path(result.work_dir).resolve()) not in text
    # the GPU's nvidia-smi state and the rest of the host are labels (not identity): no spec.settings
    assert "settings" not in environments[0]["spec"]
    assert environments[0]["metadata"]["labels"] == result.labels
    assert result.labels["power_limit_watts"] == "700" and result.labels["driver"] == result.host["driver"]
    # the sweep's implementations name the exact release measured, so KernelIndex finds their source; their
    # names say it too (liger-bench-<kernel>-liger-v0-8-5), so no history revision shares their slug
    liger = [
        m
        for m in imported.manifests.values()
        if m["kind"] == "ImplementationRevision" and m["metadata"]["name"].endswith("-liger-" + kebab(f"v{VERSION}"))
    ]
    assert liger and all(
        m["spec"]["projectRevision"]
        == {"repository": "https://github.com/linkedin/Liger-Kernel", "version": f"v{VERSION}"}
        for m in liger
    )
    logs = {run["spec"]["evidence"]["logs"]["uri"] for run in runs}
    assert logs == {entry["uri"] for entry in result.logs_by_kernel.values()}


def test_host_without_cuda_fails_before_any_script(site):
    with pytest.raises(HostCheckError) as raised:
        run_sweep(
            request(
                site, "no-cuda", extra_pythonpath=[str(site["no_cuda"])], env_cache_dir=str(site["root"] / "envs-cold")
            )
        )
    assert "NVIDIA H100 80GB HBM3 (nvidia-h100-80gb-hbm3)" in str(raised.value)
    assert raised.value.retryable is False
    # Refused before the (minutes-long) environment build and before any script ran.
    assert not any((site["root"] / "envs-cold").glob("liger-*/bin"))
    assert not list((site["root"] / "no-cuda" / "logs").glob("benchmark_*.log"))


def test_wrong_gpu_fails_with_a_warm_environment_too(site, sweep):
    other = build_fake_torch(site["root"] / "torch-b200", "NVIDIA B200")
    with pytest.raises(HostCheckError, match=r"NVIDIA H100 80GB HBM3.*NVIDIA B200 \(nvidia-b200\)"):
        run_sweep(request(site, "wrong-gpu", extra_pythonpath=[str(other)]))


def test_kernel_names_map_to_scripts(tmp_path, site):
    import tarfile

    with tarfile.open(site["tarball"]) as archive:
        archive.extractall(tmp_path / "x", filter="data")
    workdir = prepare_workdir(tmp_path / "x" / f"liger_kernel-{VERSION}", tmp_path / "w")
    names = lambda paths: [p.name for p in paths]  # noqa: E731
    assert names(select_scripts(workdir.scripts_dir, ["tiled_swiglu", "rms_norm"])) == [
        "benchmark_rms_norm.py",
        "benchmark_tiled_mlp.py",
    ]
    assert names(select_scripts(workdir.scripts_dir, scripts=["benchmark_softmax.py"])) == ["benchmark_softmax.py"]
    with pytest.raises(ConfigurationError, match="no benchmark script of this release writes kernel 'dyt'"):
        select_scripts(workdir.scripts_dir, ["dyt"])
    # The work copy starts empty (header only) and links the release's test/ only when it has one.
    assert workdir.data_csv.read_text().strip() == ",".join(UPSTREAM_COLUMNS)


def test_bad_release_path_is_a_configuration_error(site):
    with pytest.raises(ConfigurationError, match="does not exist"):
        run_sweep(request(site, "missing", release=str(site["root"] / "nope.tar.gz")))


def test_a_retry_into_the_same_work_dir_gets_a_fresh_sibling(site, sweep):
    again = run_sweep(request(site, "full", scripts=["benchmark_rms_norm.py"], kernels=None))
    assert again.work_dir == str((site["root"] / "full-2").resolve())
    assert again.rows == GOOD_ROWS["benchmark_rms_norm.py"]
    # The first sweep's CSV and logs are untouched.
    assert len(read_csv(sweep["result"].csv_path)) == sum(GOOD_ROWS.values())


def test_measured_speed_runs_carry_their_raw_samples(sweep):
    """Every speed row's do_bench call is an artifact next to the logs; its run's statistics follow from it."""
    import json

    from kernelindex_pipeline.liger import import_csv
    from kernelindex_pipeline.liger.normalize import MeasuredContext
    from kernelindex_pipeline.liger.sample_statistics import latency_statistics
    from kernelindex_pipeline.records.jsnumber import ms_to_ns
    from kernelindex_pipeline.records.schema import validate_manifest

    result = sweep["result"]
    outcomes = {o.script: o for o in result.outcomes}
    assert outcomes["benchmark_rms_norm.py"].samples["calls"] == 18  # speed rows only: memory has no do_bench
    assert outcomes["benchmark_rms_norm.py"].samples["rows_without_samples"] == {"memory": 6}
    assert outcomes["benchmark_tiled_mlp.py"].samples["rows_with_samples"] == 12
    assert outcomes["benchmark_layer_norm.py"].samples["calls"] == 0
    assert outcomes["benchmark_rms_norm.py"].summary().startswith("benchmark_rms_norm.py: ok, 24 rows in ")
    assert ", 18 with raw samples (18 do_bench calls)" in outcomes["benchmark_rms_norm.py"].summary()

    imported = import_csv(
        result.csv_path, gpu=H100, liger_version=VERSION, measured=MeasuredContext(**result.measured_context())
    )
    runs = [run for run in liger_runs(imported) if "timing" in run["spec"]]  # memory runs have no samples
    assert len(runs) == 30 and len(liger_runs(imported)) == 36
    artifacts = set()
    for run in runs:
        assert validate_manifest(run) == []
        timing = run["spec"]["timing"]
        assert timing["rawSamples"] == run["spec"]["evidence"]["rawSamples"]
        path = stored_file(timing["rawSamples"])
        assert (
            Path(result.work_dir).resolve() / "logs" / "samples" / f"{path.name}.json"
        ).is_file()  # copied from the sweep
        data = path.read_bytes()
        assert timing["rawSamples"]["digest"] == "sha256:" + hashlib.sha256(data).hexdigest() == "sha256:" + path.name
        artifact = json.loads(data)
        statistics = latency_statistics(artifact["samples"])
        assert timing["samples"] == statistics["samples"] == len(artifact["samples"])
        # A single-round sweep publishes no confidence95: one process's samples say nothing of run-to-run noise.
        assert "confidence95" not in timing["latencyNs"]
        statistics["latencyNs"].pop("confidence95")
        assert {k: timing["latencyNs"][k] for k in statistics["latencyNs"]} == statistics["latencyNs"]
        # The median is the CSV's, which is the call's own return value.
        assert timing["latencyNs"]["median"] == ms_to_ns(artifact["returned"][0])
        case = artifact["case"]  # the row the call measured
        assert run["metadata"]["title"].endswith(f" · {case['kernel_provider']} · {case['kernel_operation_mode']}")
        artifacts.add(path)
    assert len(artifacts) == 30  # one call per run


def test_the_sentinel_brackets_the_sweep_and_is_published(sweep):
    import json

    from kernelindex_pipeline.liger import import_csv
    from kernelindex_pipeline.liger.normalize import MeasuredContext
    from kernelindex_pipeline.liger.sample_statistics import latency_statistics
    from kernelindex_pipeline.liger.sentinel import PLAN
    from kernelindex_pipeline.records.schema import validate_manifest

    result = sweep["result"]
    names = [o["name"] for o in PLAN["operations"]]
    assert [(m["position"], m["operation"], m["status"]) for m in result.sentinel] == [
        (position, name, "ok") for position in ("start", "end") for name in names
    ]
    assert [line.split(":")[0] for line in result.summary_lines() if line.startswith("sentinel ")] == [
        *(f"sentinel {n}" for n in names),
        "sentinel band",
    ]
    assert result.sentinel_band["status"] == "insufficient_history"  # no earlier sweeps of this host given

    imported = import_csv(
        result.csv_path, gpu=H100, liger_version=VERSION, measured=MeasuredContext(**result.measured_context())
    )
    sentinel_runs = [r for r in imported.runs() if r["spec"]["sourceNative"]["source"] == "kernelindex-sentinel"]
    assert sorted(
        (r["metadata"]["labels"]["sentinel"], r["spec"]["sourceNative"]["benchmark"]) for r in sentinel_runs
    ) == sorted((position, f"sentinel_{name}/{position}") for position in ("start", "end") for name in names)
    assert imported.report.sentinel_runs == 4 and imported.report.sentinel_problems == []
    by_digest = imported.manifests
    (liger_environment,) = {r["spec"]["environmentDigest"] for r in liger_runs(imported)}
    operations = set()
    for run in sentinel_runs:
        assert validate_manifest(run) == []
        assert run["spec"]["environmentDigest"] == liger_environment  # the same host, the same software
        assert run["metadata"]["labels"]["liger_version"] == VERSION
        case = by_digest[run["spec"]["workloadDigest"]]
        operations.add(case["spec"]["operationSpecDigest"])
        artifact = json.loads(stored_file(run["spec"]["timing"]["rawSamples"]).read_bytes())
        assert artifact["case"] == {
            "sentinel": run["spec"]["sourceNative"]["benchmark"].split("/")[0].removeprefix("sentinel_")
        }
        statistics = latency_statistics(artifact["samples"])
        assert {k: run["spec"]["timing"]["latencyNs"][k] for k in statistics["latencyNs"]} == statistics["latencyNs"]
    assert {by_digest[d]["metadata"]["name"] for d in operations} == {
        f"kernelindex-sentinel-{n.replace('_', '-')}" for n in names
    }
    # The import report counts the sentinel's records with the rest.
    for kind in ("OperationSpec", "WorkloadCase", "BenchmarkRun"):
        assert imported.report.records[kind] == sum(1 for m in by_digest.values() if m["kind"] == kind)
