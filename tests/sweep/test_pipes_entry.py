"""The sweep's own process: plain mode and under Dagster Pipes (PipesSubprocessClient), end to end."""

import json
import subprocess
import sys

import pytest

from tests.support.standin_release import build_fake_torch, build_site

VERSION = "0.0.1"
SCRIPTS = ["benchmark_rms_norm.py", "benchmark_layer_norm.py"]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("pipes")
    return {
        **build_site(root, VERSION),
        "torch": build_fake_torch(root / "torch", "NVIDIA H100 80GB HBM3"),
    }


def sweep_request(site, name, **overrides):
    request = {
        "gpu": "nvidia-h100-80gb-hbm3",
        "liger_version": VERSION,
        "release": str(site["tarball"]),
        "scripts": SCRIPTS,
        "work_dir": str(site["root"] / name),
        "env_cache_dir": str(site["root"] / "envs"),
        "wheel_dir": str(site["wheels"]),
        "extra_pythonpath": [str(site["torch"])],
        "extra_env": {"PATH": site["path"]},
        "script_timeout_s": 60,
        "rounds": 1,  # Pipes plumbing here; rounds have tests of their own
    }
    request.update(overrides)
    return request


def run_plain(site, name, request):
    request_path = site["root"] / f"{name}-request.json"
    result_path = site["root"] / f"{name}-result.json"
    request_path.write_text(json.dumps(request))
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "kernelindex_pipeline.sweep.pipes_entry",
            "--request",
            str(request_path),
            "--result",
            str(result_path),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    return completed, json.loads(result_path.read_text())


def test_plain_mode_end_to_end(site):
    completed, result = run_plain(site, "plain", sweep_request(site, "plain"))
    assert completed.returncode == 0, completed.stderr
    statuses = {o["script"]: (o["status"], o["rows"]) for o in result["outcomes"]}
    assert statuses == {"benchmark_layer_norm.py": ("failed", 0), "benchmark_rms_norm.py": ("ok", 24)}
    assert result["rows"] == 24
    assert "[2/2] benchmark_rms_norm.py: ok, 24 rows (24 so far)" in completed.stderr
    assert "orchestration overhead" in completed.stderr


def test_plain_mode_host_check_failure_is_exit_3_and_not_retryable(site, tmp_path):
    no_cuda = build_fake_torch(tmp_path / "torch", None)
    completed, result = run_plain(
        site, "plain-no-cuda", sweep_request(site, "plain-no-cuda", extra_pythonpath=[str(no_cuda)])
    )
    assert completed.returncode == 3
    assert result["error"]["type"] == "HostCheckError"
    assert result["error"]["retryable"] is False
    assert "NVIDIA H100 80GB HBM3 (nvidia-h100-80gb-hbm3)" in result["error"]["message"]


def test_plain_mode_bad_request_is_exit_2(site):
    completed, result = run_plain(
        site, "plain-bad", {"gpu": "nvidia-b200", "liger_version": VERSION, "kernel": ["typo"]}
    )
    assert completed.returncode == 2
    assert "unknown sweep request field(s) ['kernel']" in result["error"]["message"]


def test_under_dagster_pipes(site):
    """The sweep process's reply, rebuilt on the orchestrator's side by the protocol's codec, and the
    orchestrator's metadata made from it (as defs/sweep.py does; the process reports no materialization)."""
    from dagster import (
        AssetExecutionContext,
        DagsterInstance,
        MaterializeResult,
        PipesSubprocessClient,
        asset,
        materialize,
    )

    from kernelindex_pipeline.defs.sweep import sweep_metadata
    from kernelindex_pipeline.sweep.protocol import reply_from_messages

    captured = {}

    @asset
    def sweep(context: AssetExecutionContext, pipes_subprocess_client: PipesSubprocessClient):
        invocation = pipes_subprocess_client.run(
            context=context,
            command=[sys.executable, "-m", "kernelindex_pipeline.sweep.pipes_entry"],
            extras={"sweep_request": sweep_request(site, "pipes")},
        )
        captured["messages"] = invocation.get_custom_messages()
        captured["reply"] = reply_from_messages(captured["messages"])
        return MaterializeResult(metadata=sweep_metadata(captured["reply"].result))

    # Entered, so that Dagster's context-wide state points at this instance (not one an earlier test left).
    with DagsterInstance.ephemeral() as instance:
        result = materialize([sweep], resources={"pipes_subprocess_client": PipesSubprocessClient()}, instance=instance)
        lines = [entry.user_message for entry in instance.all_logs(result.run_id)]
    assert result.success
    reply = captured["reply"]
    assert reply.error is None and reply.result.rows == 24
    counts = reply.result.outcome_counts()
    assert (counts["ok"], len(reply.result.outcomes) - counts["ok"]) == (1, 1)
    (materialization,) = result.asset_materializations_for_node("sweep")
    metadata = {key: value.value for key, value in materialization.metadata.items()}
    assert (metadata["scripts"], metadata["scripts_failed"]) == (2, 1)
    assert metadata["orchestration_overhead_s"] >= 0
    assert "| benchmark_layer_norm.py | failed | 0 |" in metadata["script_outcomes"]
    (message,) = [m for m in captured["messages"] if m.get("type") == "sweep_result"]
    assert message["result"]["rows"] == 24
    assert message["csv_text"].count("\n") == 25  # header + 24 rows, inline for a pod whose files are out of reach
    assert reply.csv_bytes == message["csv_text"].encode("utf-8")
    assert any("[1/2] benchmark_layer_norm.py: failed, 0 rows (0 so far)" in line for line in lines)
    assert any("[2/2] benchmark_rms_norm.py: ok, 24 rows (24 so far)" in line for line in lines)


def test_cancelling_the_sweep_process_kills_the_running_script(site):
    """SIGTERM (Dagster terminating the run, a pod deleted) must not leave a benchmark running on the GPU."""
    import signal
    import time

    import psutil

    request = sweep_request(site, "cancelled", scripts=["benchmark_softmax.py"], script_timeout_s=300)
    request_path = site["root"] / "cancelled-request.json"
    request_path.write_text(json.dumps(request))
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kernelindex_pipeline.sweep.pipes_entry",
            "--request",
            str(request_path),
            "--result",
            str(site["root"] / "cancelled-result.json"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    log = (
        site["root"] / "cancelled" / "logs" / "round-1" / "benchmark_softmax.log"
    )  # each round logs in a folder of its own
    deadline = time.monotonic() + 240
    while not (log.is_file() and "waiting forever" in log.read_text()):
        assert process.poll() is None and time.monotonic() < deadline, "the stand-in script never started"
        time.sleep(0.2)
    script_processes = [
        p
        for p in psutil.Process(process.pid).children(recursive=True)
        if "benchmark_softmax.py" in " ".join(p.cmdline())
    ]
    assert script_processes
    process.send_signal(signal.SIGTERM)
    # Generous deadlines (a loaded machine starves these processes), each naming what it waited for.
    try:
        code = process.wait(timeout=600)
    except subprocess.TimeoutExpired:
        process.kill()
        pytest.fail("the sweep process did not end within 600 s of its SIGTERM")
    assert code == 128 + signal.SIGTERM
    gone, alive = psutil.wait_procs(script_processes, timeout=600)
    assert alive == [], f"the cancelled sweep's script processes outlived it by 600 s: {alive}"
