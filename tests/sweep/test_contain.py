"""Hostile benchmark scripts against the sweep runner, through real subprocesses on a CPU: a script that
prints its (and its ancestors') environment, daemons that double-fork and setsid(), a sweep process
killed under a running script, scripts that replace the data CSV (or its .tmp) by a directory or
rewrite earlier scripts' rows, and one that prints 50 MB."""

import csv
import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from kernelindex_pipeline.sweep import contain
from kernelindex_pipeline.sweep.environment import SCRIPT_ENV_ALLOWLIST, script_environment
from kernelindex_pipeline.sweep.protocol import SweepRequest
from kernelindex_pipeline.sweep.run import run_sweep
from kernelindex_pipeline.sweep.samples import verify_artifact
from tests.support.standin_release import (
    SCRIPTS,
    build_fake_nvidia_smi,
    build_fake_torch,
    build_liger_wheel,
    build_release_tarball,
)
from tests.support.stored_files import stored_file

VERSION = "0.0.2"
H100 = "nvidia-h100-80gb-hbm3"
SECRET = "s3cr3t-Pa55w0rd-4c7f"
# The longest any test waits for a stand-in process to reach a point or to end (never a measurement): generous,
# since a loaded machine (load 10-70 seen) starves these processes for minutes; its expiry names what was awaited.
WAIT_S = 600

# Every hostile script finds its coordination directory in STANDIN_DIR (the request's extra_env).
HOSTILE = {
    "benchmark_env_dump.py": """
        import os

        if __name__ == "__main__":
            print("ENVIRONMENT", dict(os.environ))
            pid = os.getpid()
            while pid > 1:  # every ancestor's initial environment that this user can read
                try:
                    with open(f"/proc/{pid}/environ", "rb") as handle:
                        print("PROC", pid, handle.read().replace(b"\\0", b" ").decode(errors="replace"))
                    with open(f"/proc/{pid}/stat") as handle:
                        pid = int(handle.read().rsplit(")", 1)[1].split()[1])
                except OSError:
                    break
        """,
    "benchmark_daemon.py": """
        import os
        import sys
        import time

        from utils import data_csv_path

        if __name__ == "__main__":
            if os.fork() == 0:
                os.setsid()  # out of the script's process group and session
                if os.fork() == 0:
                    with open(os.path.join(os.environ["STANDIN_DIR"], "daemon.pid"), "w") as handle:
                        handle.write(str(os.getpid()))
                    while True:  # keeps appending rows, to be credited to whichever script runs next
                        with open(data_csv_path(), "a") as handle:
                            handle.write("daemon_kernel,liger,full,speed,ms,N,n,1,1.0,1.0,1.0,{},NVIDIA H100 80GB HBM3,2026-01-01 00:00:00,0.0.2\\n")
                        time.sleep(0.05)
                os._exit(0)
            os.wait()
            while not os.path.exists(os.path.join(os.environ["STANDIN_DIR"], "daemon.pid")):
                time.sleep(0.05)
            print("daemon started")
            sys.exit(0)
        """,
    "benchmark_hang_with_daemon.py": """
        import os
        import time

        if __name__ == "__main__":
            if os.fork() == 0:
                os.setsid()
                if os.fork() == 0:
                    with open(os.path.join(os.environ["STANDIN_DIR"], "hang-daemon.pid"), "w") as handle:
                        handle.write(str(os.getpid()))
                    while True:
                        time.sleep(1)
                os._exit(0)
            os.wait()
            with open(os.path.join(os.environ["STANDIN_DIR"], "hang-script.pid"), "w") as handle:
                handle.write(str(os.getpid()))
            print("holding the GPU", flush=True)
            while True:
                time.sleep(1)
        """,
    "benchmark_kill_launcher.py": """
        import os
        import signal
        import time

        if __name__ == "__main__":
            if os.fork() == 0:
                os.setsid()
                if os.fork() == 0:
                    with open(os.path.join(os.environ["STANDIN_DIR"], "orphan.pid"), "w") as handle:
                        handle.write(str(os.getpid()))
                    while True:
                        time.sleep(1)
                os._exit(0)
            os.wait()
            while not os.path.exists(os.path.join(os.environ["STANDIN_DIR"], "orphan.pid")):
                time.sleep(0.05)
            os.kill(os.getppid(), signal.SIGKILL)  # the launcher, which would have killed the daemon
            while True:
                time.sleep(1)
        """,
    "benchmark_sabotage_csv_dir.py": """
        import os

        from utils import data_csv_path

        if __name__ == "__main__":
            os.remove(data_csv_path())
            os.mkdir(data_csv_path())
            open(os.path.join(data_csv_path(), "inside.txt"), "w").write("not a CSV")
        """,
    "benchmark_sabotage_csv_link.py": """
        import os
        import shutil

        from utils import data_csv_path

        if __name__ == "__main__":
            outside = os.path.join(os.environ["STANDIN_DIR"], "outside.csv")
            shutil.copyfile(data_csv_path(), outside)  # a good-looking CSV, but elsewhere
            os.remove(data_csv_path())
            os.symlink(outside, data_csv_path())  # the next script would write through it
        """,
    "benchmark_sabotage_rewrite.py": """
        import csv
        import os
        import shutil

        from utils import FIELDS, data_csv_path

        if __name__ == "__main__":
            shutil.copyfile(data_csv_path(), os.path.join(os.environ["STANDIN_DIR"], "before-rewrite.csv"))
            with open(data_csv_path(), newline="") as handle:
                rows = list(csv.DictReader(handle))
            for row in rows:
                if row["kernel_name"] == "rms_norm":
                    row["y_value_50"] = str(float(row["y_value_50"]) * 2)  # same key, another median
            with open(data_csv_path(), "w", newline="") as handle:
                writer = csv.DictWriter(handle, fieldnames=FIELDS)
                writer.writeheader()
                writer.writerows(rows)
        """,
    "benchmark_sabotage_tmp_dir.py": """
        import os

        from utils import data_csv_path

        if __name__ == "__main__":
            os.mkdir(data_csv_path() + ".tmp")  # where the runner writes its repaired copy
            with open(data_csv_path(), "w") as handle:
                handle.write("kernel_name,kernel_pro")  # and a CSV that needs repairing
        """,
    "benchmark_hostile_plant.py": """
        import os

        if __name__ == "__main__":
            logs = os.path.join(os.getcwd(), "..", "..", "..", "logs")
            # The next scripts' spools, where they used to be: one to /dev/null, one made a directory.
            os.symlink("/dev/null", os.path.join(logs, "benchmark_rms_norm.samples.jsonl"))
            os.mkdir(os.path.join(logs, "benchmark_tiled_mlp.samples.jsonl"))
            # The samples directory becomes a link to a directory outside the sweep.
            outside = os.path.join(os.environ["STANDIN_DIR"], "outside-samples")
            os.mkdir(outside)
            os.rename(os.path.join(logs, "samples"), os.path.join(logs, "samples-old"))
            os.symlink(outside, os.path.join(logs, "samples"))
        """,
    "benchmark_sabotage_artifact.py": """
        import os

        if __name__ == "__main__":
            samples = os.path.join(os.getcwd(), "..", "..", "..", "logs", "samples")
            os.chmod(samples, 0o700)  # the same user may: the re-check before publication catches it
            victim = os.path.join(samples, sorted(n for n in os.listdir(samples) if n.endswith(".json"))[0])
            os.chmod(victim, 0o600)
            with open(victim, "w") as handle:
                handle.write('{"samples": [0.001]}')
        """,
    "benchmark_verbose.py": """
        import sys

        if __name__ == "__main__":
            print("FIRST LINE OF THE LOG")
            line = "x" * 1023 + "\\n"
            for _ in range(int(sys.argv[-1]) * 1024):
                sys.stdout.write(line)
            print("Traceback (most recent call last):", file=sys.stderr)
            print("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (stand-in)", file=sys.stderr)
            sys.exit(1)
        """,
}


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    build_fake_nvidia_smi(root / "bin")
    scripts = {
        **{
            name: SCRIPTS[name]
            for name in ("benchmark_model_configs.py", "benchmark_rms_norm.py", "benchmark_tiled_mlp.py")
        },
        **{name: textwrap.dedent(text) for name, text in HOSTILE.items()},
    }
    coordination = root / "standin"
    coordination.mkdir()
    return {
        "root": root,
        "dir": coordination,
        "tarball": build_release_tarball(root / "release", VERSION, scripts),
        "wheels": build_liger_wheel(root / "wheels", VERSION).parent,
        "torch": build_fake_torch(root / "torch", "NVIDIA H100 80GB HBM3"),
        "path": f"{root / 'bin'}{os.pathsep}{os.environ['PATH']}",
    }


def request_fields(site, name, scripts, **overrides):
    fields = dict(
        gpu=H100,
        liger_version=VERSION,
        release=str(site["tarball"]),
        scripts=scripts,
        work_dir=str(site["root"] / name),
        env_cache_dir=str(site["root"] / "envs"),
        wheel_dir=str(site["wheels"]),
        extra_pythonpath=[str(site["torch"])],
        extra_env={"PATH": site["path"], "STANDIN_DIR": str(site["dir"])},
        script_timeout_s=300,
        rounds=1,  # containment of one run per script
    )
    fields.update(overrides)
    return fields


def sweep(site, name, scripts, **overrides):
    return run_sweep(SweepRequest(**request_fields(site, name, scripts, **overrides)))


def read_rows(path):
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def wait_for(condition, what, process=None):
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert process is None or process.poll() is None, f"the sweep process ended before {what}"
        assert time.monotonic() < deadline, f"{what} did not happen within {WAIT_S} s"
        time.sleep(0.05)


def finished(process: subprocess.Popen, what: str) -> str:
    """The output of `process` once it has ended; past WAIT_S it is killed and the test fails naming `what`."""
    try:
        return process.communicate(timeout=WAIT_S)[0]
    except subprocess.TimeoutExpired:
        process.kill()
        output = process.communicate()[0]
        pytest.fail(f"{what} did not end within {WAIT_S} s; its output:\n{output[-4000:]}")


def catches(pid: int, signum: int) -> bool:
    """Whether process `pid` has a handler for `signum` (SigCgt in /proc); an ignored one fails at once, named."""
    fields = dict(
        line.split(":\t", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":\t" in line
    )
    bit = 1 << (signum - 1)
    assert not int(fields["SigIgn"], 16) & bit, (
        f"process {pid} ignores {signal.Signals(signum).name} (SigIgn {fields['SigIgn']})"
    )
    return bool(int(fields["SigCgt"], 16) & bit)


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def pid_from(path: Path) -> int:
    wait_for(lambda: path.is_file() and path.read_text().strip(), f"{path.name} written")
    return int(path.read_text())


def start_sweep_process(site, name, scripts, env):
    request_path = site["root"] / f"{name}-request.json"
    request_path.write_text(json.dumps(request_fields(site, name, scripts)))
    return subprocess.Popen(
        [sys.executable, "-m", "kernelindex_pipeline.sweep.pipes_entry", "--request", str(request_path),
         "--result", str(site["root"] / f"{name}-result.json")],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip


# --- item 6: no secret reaches a script ------------------------------------------------------------------
def test_the_scripts_environment_is_allowlisted():
    base = {"PATH": "/usr/bin", "HOME": "/home/u", "LC_ALL": "C.UTF-8", "KERNELINDEX_CATALOGUE_URL": f"postgresql://u:{SECRET}@h/db",
            "AWS_SECRET_ACCESS_KEY": SECRET, "PIP_INDEX_URL": f"https://u:{SECRET}@index/simple", "DAGSTER_PIPES_CONTEXT": "x",
            "LIGER_BENCH_TARGET": "/elsewhere", "PYTHONHOME": "/x"}  # fmt: skip
    env = script_environment(base, extra_pythonpath=["/opt/torch"], extra_env={"STANDIN": "1"})
    assert env == {"PATH": "/usr/bin", "HOME": "/home/u", "LC_ALL": "C.UTF-8", "STANDIN": "1", "TZ": "UTC", "PYTHONUNBUFFERED": "1",
                   "PYTHONPATH": "/opt/torch"}  # fmt: skip
    assert "KERNELINDEX_CATALOGUE_URL" not in SCRIPT_ENV_ALLOWLIST


def test_no_secret_reaches_the_scripts_logs_or_evidence(site):
    """The sweep process is started the way Dagster starts it: with the whole environment of the
    orchestrator, catalogue URL and cloud keys included."""
    env = {**os.environ, "KERNELINDEX_CATALOGUE_URL": f"postgresql+psycopg://kernelindex:{SECRET}@db.internal/catalogue",
           "AWS_SECRET_ACCESS_KEY": SECRET, "HF_TOKEN": SECRET}  # fmt: skip
    process = start_sweep_process(site, "env-dump", ["benchmark_env_dump.py", "benchmark_rms_norm.py"], env)
    output = finished(process, "the sweep process of two scripts")
    assert process.returncode == 0, output
    result = json.loads((site["root"] / "env-dump-result.json").read_text())
    log = Path(result["outcomes"][0]["log_path"])
    text = log.read_text()
    # The script saw its environment and read /proc of its ancestors (the launcher, the sweep process).
    assert "ENVIRONMENT" in text and text.count("PROC ") >= 3
    assert "STANDIN_DIR" in text and "TZ" in text
    files = [p for p in Path(result["work_dir"]).rglob("*") if p.is_file()]
    assert log in files and len(files) > 10
    leaked = [str(p) for p in files if SECRET.encode() in p.read_bytes()]
    assert leaked == [] and SECRET not in output and SECRET not in json.dumps(result)
    assert "KERNELINDEX_CATALOGUE_URL" not in text


# --- item 10: every descendant is contained --------------------------------------------------------------
def test_a_double_forked_daemon_dies_with_its_script_and_credits_no_rows(site):
    (site["dir"] / "daemon.pid").unlink(missing_ok=True)
    result = sweep(site, "daemon", ["benchmark_daemon.py", "benchmark_rms_norm.py"])
    daemon_pid = int((site["dir"] / "daemon.pid").read_text())
    assert gone(daemon_pid), "the setsid() daemon outlived its script"
    daemon, rms = result.outcomes
    assert daemon.status.value == "ok"
    (problem,) = [p for p in daemon.problems if p["kind"] == "leftover_processes"]
    assert f"{daemon_pid} python" in problem["message"]
    # Rows the daemon wrote while its script lived are its own; none come after it.
    assert set(daemon.kernels) <= {"daemon_kernel"}
    assert (rms.kernels, rms.rows, rms.problems) == (["rms_norm"], 24, [])
    rows = read_rows(result.csv_path)
    assert len(rows) == result.rows == daemon.rows + 24


def test_a_script_that_kills_its_launcher_still_leaves_nothing_behind(site):
    (site["dir"] / "orphan.pid").unlink(missing_ok=True)
    result = sweep(site, "kill-launcher", ["benchmark_kill_launcher.py", "benchmark_rms_norm.py"])
    orphan_pid = int((site["dir"] / "orphan.pid").read_text())
    assert gone(orphan_pid), "the daemon of a script that killed its launcher outlived it"
    killer, rms = result.outcomes
    assert (killer.status.value, killer.exit_code) == ("failed", None)
    kinds = {p["kind"]: p["message"] for p in killer.problems}
    assert "launcher_failed" in kinds and f"{orphan_pid} python" in kinds["leftover_processes"]
    assert (rms.status.value, rms.rows, rms.problems) == ("ok", 24, [])


# --- item 11: the scripts die with the sweep -------------------------------------------------------------
@pytest.mark.parametrize("how", ["sigkill-sweep-process", "sigterm-run-sweep"])
def test_a_killed_sweep_takes_its_script_and_the_scripts_daemon_along(site, how):
    for name in ("hang-daemon.pid", "hang-script.pid"):
        (site["dir"] / name).unlink(missing_ok=True)
    if how == "sigkill-sweep-process":
        process = start_sweep_process(site, how, ["benchmark_hang_with_daemon.py"], dict(os.environ))
        kill = signal.SIGKILL
    else:  # run_sweep called directly by a program that is then terminated
        call = "import json, sys; from kernelindex_pipeline.sweep import SweepRequest, run_sweep; run_sweep(SweepRequest(**json.loads(sys.argv[1])))"
        fields = json.dumps(request_fields(site, how, ["benchmark_hang_with_daemon.py"]))
        # A program whose SIGTERM has its default action (an ignored SIGTERM is inherited through exec, and
        # run_sweep rightly keeps a disposition its caller chose): that is the program this case is about.
        process = subprocess.Popen([sys.executable, "-c", call, fields], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                   preexec_fn=lambda: signal.signal(signal.SIGTERM, signal.SIG_DFL))  # fmt: skip
        kill = signal.SIGTERM
    script_pid = pid_from(site["dir"] / "hang-script.pid")
    daemon_pid = pid_from(site["dir"] / "hang-daemon.pid")
    assert not gone(script_pid) and not gone(daemon_pid)
    if kill == signal.SIGTERM:  # run_sweep's teardown handler is in place: the signal cannot be lost
        wait_for(lambda: catches(process.pid, signal.SIGTERM), "the sweep process catching SIGTERM", process)
    process.send_signal(kill)
    output = finished(process, f"the sweep process after {kill.name}")
    assert process.returncode == (-signal.SIGKILL if kill == signal.SIGKILL else 128 + signal.SIGTERM), output
    wait_for(lambda: gone(script_pid) and gone(daemon_pid), "the script and its daemon ending")


# --- item 12: a data CSV (or its .tmp) replaced by a directory --------------------------------------------
def test_a_csv_replaced_by_a_directory_or_a_link_keeps_earlier_rows_and_later_scripts_run(site):
    scripts = ["benchmark_rms_norm.py", "benchmark_sabotage_csv_dir.py", "benchmark_sabotage_csv_link.py",
               "benchmark_sabotage_tmp_dir.py", "benchmark_tiled_mlp.py"]  # fmt: skip
    result = sweep(site, "csv-dir", scripts)
    outcomes = {o.script: o for o in result.outcomes}
    assert [o.script for o in result.outcomes] == scripts
    assert (outcomes["benchmark_rms_norm.py"].rows, outcomes["benchmark_tiled_mlp.py"].rows) == (24, 12)
    rows = read_rows(result.csv_path)
    assert len(rows) == result.rows == 36
    assert {r["kernel_name"] for r in rows} == {"rms_norm", "tiled_swiglu", "tiled_geglu"}

    def problem_of(script):
        outcome = outcomes[script]
        assert outcome.csv_repaired and outcome.rows == 0
        (problem,) = outcome.problems
        assert problem["kind"] == "data_csv"
        return problem["message"]

    message = problem_of("benchmark_sabotage_csv_dir.py")
    assert "the data CSV was replaced by a directory" in message and "moved the directory" in message
    assert "the data CSV was replaced by a symbolic link" in problem_of("benchmark_sabotage_csv_link.py")
    message = problem_of("benchmark_sabotage_tmp_dir.py")
    assert "lost its header" in message and "all_benchmark_data.csv.tmp" in message
    # The link was replaced, not written through: its target still holds what the script copied there.
    assert len(read_rows(site["dir"] / "outside.csv")) == 24
    assert not os.path.islink(result.csv_path)
    # The directories are kept aside for inspection, out of the evidence logs.
    quarantined = sorted(p.name for p in (Path(result.work_dir) / "runner" / "quarantine").iterdir())
    assert quarantined == ["all_benchmark_data.csv.1", "all_benchmark_data.csv.tmp.2"]


# --- issue 22 items 10, 12, 13: samples spools and artifacts ------------------------------------------------
def test_scripts_cannot_reach_other_spools_nor_redirect_or_rewrite_artifacts(site):
    scripts = [
        "benchmark_hostile_plant.py",
        "benchmark_rms_norm.py",
        "benchmark_sabotage_artifact.py",
        "benchmark_tiled_mlp.py",
    ]
    result = sweep(site, "samples-hostile", scripts)
    plant, rms, sabotage, tiled = result.outcomes
    assert [o.status.value for o in result.outcomes] == ["ok"] * 4
    # item 12: the planted spool paths reach no script: both keep every sample.
    assert (rms.rows, tiled.rows) == (24, 12)
    assert tiled.samples["rows_with_samples"] == 12
    # item 10: nothing was written through the link; the replacement is named where it happened.
    assert os.listdir(site["dir"] / "outside-samples") == []
    assert any("samples directory" in p["message"] and "replaced" in p["message"] for p in plant.problems), (
        plant.problems
    )
    samples_dir = Path(result.work_dir).resolve() / "logs" / "samples"
    assert samples_dir.is_dir() and not samples_dir.is_symlink()
    # item 13: the artifact rewritten after its digest was taken is caught before the result leaves.
    assert rms.samples["rows_with_samples"] == 17 and rms.samples["rows_without_samples"]["artifact_changed"] == 1
    (changed,) = [p for p in rms.problems if "lost their raw samples" in p["message"]]
    assert "was changed after it was written" in changed["message"]
    assert sabotage.problems == []
    # Every artifact a run points at is a regular file in the sweep's samples directory with its digest,
    # and its copy in the artifact store (the URI the records carry) too.
    entries = list(result.raw_samples().values())
    assert len(entries) == 17 + 12
    for entry in entries:
        local = samples_dir / (entry["artifact"]["digest"].removeprefix("sha256:") + ".json")
        assert (
            not local.is_symlink()
            and verify_artifact({"uri": local.as_uri(), "digest": entry["artifact"]["digest"]}) is None
        )
        assert (
            entry["artifact"]["digest"]
            == "sha256:" + hashlib.sha256(stored_file(entry["artifact"]).read_bytes()).hexdigest()
        )
    # The sentinel's artifacts (the start's were moved away with the old directory; the stand-in's end
    # measurement is byte-identical, so it wrote them again) are checked the same way.
    for measurement in result.sentinel:
        local = samples_dir / (measurement["artifact"]["digest"].removeprefix("sha256:") + ".json")
        assert (
            measurement["status"] == "ok"
            and verify_artifact({"uri": local.as_uri(), "digest": measurement["artifact"]["digest"]}) is None
        )


# --- item 13: bounded logs -----------------------------------------------------------------------------------
def peak_rss_kib_of_sweep(site, name, megabytes):
    """Peak RSS of the sweep process tree (sweep process, launchers, scripts) for one benchmark_verbose.py run."""
    request_path = site["root"] / f"{name}-request.json"
    request_path.write_text(
        json.dumps(request_fields(site, name, ["benchmark_verbose.py"], script_args=[str(megabytes)]))
    )
    measure = (
        "import resource, subprocess, sys; "
        "code = subprocess.call([sys.executable, '-m', 'kernelindex_pipeline.sweep.pipes_entry', '--request', sys.argv[1], '--result', sys.argv[2]]); "
        "print(code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    out = subprocess.run([sys.executable, "-c", measure, str(request_path), str(site["root"] / f"{name}-result.json")],
                         capture_output=True, text=True, timeout=WAIT_S, check=True).stdout.split()  # fmt: skip
    assert out[0] == "0"
    return int(out[1]), json.loads((site["root"] / f"{name}-result.json").read_text())


def test_fifty_megabytes_of_output_make_a_capped_log_and_the_right_outcome(site):
    sweep(site, "warm-env", ["benchmark_rms_norm.py"])  # the environment is built before measuring anything
    quiet_kib, _ = peak_rss_kib_of_sweep(site, "quiet", 0)
    loud_kib, result = peak_rss_kib_of_sweep(site, "loud", 50)
    (outcome,) = result["outcomes"]
    log = Path(outcome["log_path"])
    size = log.stat().st_size
    assert size <= contain.LOG_HEAD_BYTES + contain.LOG_TAIL_BYTES + 200
    text = log.read_text()
    assert text.startswith("FIRST LINE OF THE LOG")
    assert "bytes of output omitted here" in text
    assert text.rstrip().endswith("CUDA out of memory. Tried to allocate 2.00 GiB (stand-in)")
    # Classified from the bounded tail: the out-of-memory line is the last thing the script printed.
    assert (outcome["status"], outcome["exit_code"]) == ("out_of_memory", 1)
    (problem,) = outcome["problems"]
    assert problem["kind"] == "log_truncated"
    printed = len("FIRST LINE OF THE LOG\n") + 50 * 2**20 + len("Traceback (most recent call last):\n") + 82
    assert f"it printed {printed} bytes" in problem["message"]
    # 50 MB went through the sweep; no process of it held more than a fraction of that.
    assert loud_kib - quiet_kib < 25 * 1024


def test_capped_log_keeps_head_and_tail_exactly(tmp_path):
    with open(tmp_path / "log", "wb") as handle:
        log = contain.CappedLog(handle, head=10, tail=6)
        for chunk in (b"0123", b"456789AB", b"CDEFGHIJ", b"K", b"LMNOPQ"):
            log.write(chunk)
        log.finish()
    data = (tmp_path / "log").read_bytes()
    assert data.startswith(b"0123456789\n[kernelindex: 11 bytes of output omitted here")
    assert data.endswith(b"]\nLMNOPQ")
    assert log.seen == 27 and log.omitted == 11


# --- item 14: earlier rows rewritten -----------------------------------------------------------------------
def test_rows_an_earlier_script_wrote_are_restored_when_a_later_one_rewrites_them(site):
    result = sweep(
        site, "rewrite", ["benchmark_rms_norm.py", "benchmark_sabotage_rewrite.py", "benchmark_tiled_mlp.py"]
    )
    rms, rewrite, tiled = result.outcomes
    assert (rms.rows, rewrite.rows, tiled.rows) == (24, 0, 12)
    assert rewrite.status.value == "ok" and rewrite.csv_repaired
    (problem,) = rewrite.problems
    assert problem["kind"] == "rows_rewritten"
    assert (
        problem["message"]
        == "it changed 24 row(s) that earlier scripts wrote (benchmark_rms_norm.py: 24); the runner restored them"
    )
    before = read_rows(site["dir"] / "before-rewrite.csv")  # what the rewriting script found
    assert len(before) == 24
    assert [r for r in read_rows(result.csv_path) if r["kernel_name"] == "rms_norm"] == before
    assert tiled.problems == []


def test_a_host_without_prctl_refuses_the_sweep_clearly(site, monkeypatch):
    from kernelindex_pipeline.sweep.outcomes import HostCheckError

    monkeypatch.setattr(contain.sys, "platform", "darwin")
    with pytest.raises(
        HostCheckError, match="cannot contain benchmark scripts: benchmark scripts are contained with Linux prctl"
    ):
        sweep(site, "not-linux", ["benchmark_rms_norm.py"])
    assert not (site["root"] / "not-linux").exists()  # refused before anything was made
