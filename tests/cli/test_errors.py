"""What bad input gets from the command line (README "What bad input gets"): arguments checked before
anything is read, usage errors exit 2, bad input exits 1 with one line naming it, and empty results
are said, not written (issue 11, items 16, 17 and 22)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

from kernelindex_pipeline.catalogue.store import CatalogueStore
from kernelindex_pipeline.cli import main
from kernelindex_pipeline.liger import release
from kernelindex_pipeline.liger.csv import UPSTREAM_COLUMNS
from tests.support import FIXTURES
from tests.support.cli_process import CLI, run_cli
from tests.support.dagster_support import build_history_sdist
from tests.support.liger_rows import BASE_ROW, csv_bytes


def _run(argv, capsys):
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, captured.out, captured.err.strip()


@pytest.fixture
def small_csv(tmp_path):
    path = tmp_path / "bench.csv"
    path.write_bytes(csv_bytes([BASE_ROW]))
    return path


# ---------------------------------------------------------------- transform (item 22)


def test_an_empty_file_is_said_and_exit_1_but_a_header_only_file_is_a_valid_empty_input(tmp_path, capsys):
    empty = tmp_path / "empty.csv"
    empty.write_bytes(b"")
    code, _, err = _run(["transform", str(empty), "--out", str(tmp_path / "o")], capsys)
    assert code == 1 and f"{empty}: the file is empty" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "o" / "records.jsonl").exists()
    header_only = tmp_path / "header.csv"
    header_only.write_text(",".join(UPSTREAM_COLUMNS) + "\n")
    code, out, _ = _run(["transform", str(header_only), "--out", str(tmp_path / "h")], capsys)
    assert code == 0 and "0 rows read" in out


@pytest.mark.parametrize("gpu", ["nvidia|h100", "NVIDIA H100", "nvidia-h100-80gb-hbm3 ", "", "ｎｖｉｄｉａ"])
def test_a_gpu_that_can_never_match_is_a_usage_error_before_the_file_is_read(tmp_path, capsys, gpu):
    code, _, err = _run(
        ["transform", str(tmp_path / "does-not-exist.csv"), "--gpu", gpu, "--out", str(tmp_path / "o")], capsys
    )
    assert code == 2 and "--gpu" in err and "can never match" in err and "no such file" not in err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(("flag", "value"), [("--liger-version", "9.9.9"), ("--gpu", "nvidia-b200")])
def test_filters_that_match_no_row_are_said_and_exit_1(small_csv, tmp_path, capsys, flag, value):
    code, _, err = _run(["transform", str(small_csv), flag, value, "--out", str(tmp_path / "o")], capsys)
    assert code == 1 and f"none of its 1 rows has {flag} {value}" in err and str(small_csv) in err
    assert not (tmp_path / "o" / "records.jsonl").exists()


def test_a_directory_is_not_reported_as_missing(tmp_path, capsys):
    code, _, err = _run(["transform", str(tmp_path), "--out", str(tmp_path / "o")], capsys)
    assert code == 1 and "is a directory" in err and "no such file" not in err


def test_column_errors_name_the_file(tmp_path, capsys):
    path = tmp_path / "cols.csv"
    path.write_text("kernel_name,kernel_provider\nrms_norm,liger\n")
    code, _, err = _run(["transform", str(path), "--out", str(tmp_path / "o")], capsys)
    assert code == 1 and err.startswith(f"kernelindex-pipeline transform: error: {path}: missing columns")


def test_a_missing_release_is_one_sentence_with_pips_last_error(tmp_path, monkeypatch, capsys):
    noise = "\n".join(f"  Looking at link https://files.example/simple/liger-kernel/ candidate {i}" for i in range(12))
    stderr = (
        noise
        + "\nERROR: Could not find a version that satisfies the requirement liger-kernel==9.9.9 (from versions: 0.1.0)\n"
        "ERROR: No matching distribution found for liger-kernel==9.9.9\n"
    )
    assert len(stderr) > 755
    monkeypatch.setattr(
        release.subprocess, "run", lambda cmd, **kw: subprocess.CompletedProcess(cmd, 1, stdout="", stderr=stderr)
    )
    code, _, err = _run(
        ["transform", "--liger-release", "9.9.9", "--cache-dir", str(tmp_path), "--out", str(tmp_path / "o")], capsys
    )
    assert code == 1 and len(err.splitlines()) == 1 and len(err) < 400
    assert "No matching distribution found for liger-kernel==9.9.9" in err and "Looking at link" not in err


# ---------------------------------------------------------------- validate (item 22)


def test_validate_names_the_file_once(tmp_path, capsys):
    path = tmp_path / "broken.json"
    path.write_text("{")
    code, _, err = _run(["validate", str(path)], capsys)
    assert code == 1 and err.count(str(path)) == 1
    code, _, err = _run(["validate", str(tmp_path / "missing.json")], capsys)
    assert code == 1 and err.count("missing.json") == 1 and "no such file" in err


# ---------------------------------------------------------------- import-history (item 17)


@pytest.mark.parametrize(
    "bad", ["x", "a;rm -rf /tmp/x|0.8.5", "|", "nvidia-h100\n|0.8.5", "ｎｖｉｄｉａ|0.8.5", "NVIDIA H100|0.8.5", "gpu|"]
)
def test_bad_partitions_are_usage_errors_before_anything_happens(tmp_path, bad):
    home = tmp_path / "home"
    completed = run_cli(
        "import-history",
        "--partition",
        "nvidia-h100-80gb-hbm3|0.6.0",
        "--partition",
        bad,
        env={"DAGSTER_HOME": str(home), "KERNELINDEX_HISTORY_RELEASE": "0.0.0-not-fetched"},
    )
    assert completed.returncode == 2, completed.stderr
    assert "GPU|VERSION" in completed.stderr and "internal error" not in completed.stderr
    assert not home.exists()  # nothing created, nothing read, nothing published


def _cached_release(cache: Path, sdist: Path, version: str) -> None:
    """Put `sdist` into the content-addressed cache as `version`, as fetch_release would have."""
    sha = hashlib.sha256(sdist.read_bytes()).hexdigest()
    target = cache / "liger-kernel" / "sha256" / sha / sdist.name
    target.parent.mkdir(parents=True)
    shutil.copy(sdist, target)
    index = cache / "liger-kernel" / "versions" / f"{version}.json"
    index.parent.mkdir(parents=True)
    index.write_text(
        json.dumps(
            {
                "version": version,
                "sha256": sha,
                "filename": sdist.name,
                "size": sdist.stat().st_size,
                "fetchedAt": "2026-01-01T00:00:00.000Z",
                "locator": sdist.as_uri(),
            }
        )
    )


def test_a_partition_the_history_lacks_stops_before_any_partition_runs(tmp_path):
    cache = tmp_path / "cache"
    _cached_release(cache, build_history_sdist(tmp_path), "0.6.0")
    home = tmp_path / "home"
    completed = run_cli(
        "import-history",
        "--partition",
        "nvidia-h100-80gb-hbm3|0.6.0",
        "--partition",
        "x|y",
        env={"DAGSTER_HOME": str(home), "KERNELINDEX_HISTORY_RELEASE": "0.6.0", "KERNELINDEX_CACHE_DIR": str(cache)},
    )
    assert completed.returncode == 2, completed.stderr
    assert "'x|y': not in the history of liger-kernel 0.6.0" in completed.stderr
    with CatalogueStore.open(home=home) as store:
        assert store.publications() == []  # the good partition was not published either


# ---------------------------------------------------------------- export (item 16)


@pytest.fixture
def published_catalogue(tmp_path, catalogue_records):
    path = tmp_path / "catalogue.sqlite"
    with CatalogueStore.open(f"sqlite:///{path}") as store:
        store.publish(catalogue_records, partition="p")
    return path


def test_export_of_a_page_corrupted_catalogue_fails(published_catalogue, tmp_path, capsys):
    with sqlite3.connect(published_catalogue) as conn:
        (root,) = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'ix_objects_kind'").fetchone()
        (page_size,) = conn.execute("PRAGMA page_size").fetchone()
    conn.close()
    data = bytearray(published_catalogue.read_bytes())
    # An index page the export's table scan never reads: only an integrity check notices it.
    data[(root - 1) * page_size + 16 : root * page_size - 16] = b"\xa5" * (page_size - 32)
    published_catalogue.write_bytes(bytes(data))
    code, _, err = _run(
        ["export", "--catalogue", f"sqlite:///{published_catalogue}", "--out", str(tmp_path / "out")], capsys
    )
    assert code == 1 and "is damaged (SQLite integrity check" in err
    assert not (tmp_path / "out" / "kernelindex-catalogue.jsonl").exists()


def test_export_of_a_missing_catalogue_creates_nothing(tmp_path, capsys):
    path = tmp_path / "nothing-here.sqlite"
    code, _, err = _run(["export", "--catalogue", f"sqlite:///{path}", "--out", str(tmp_path / "out")], capsys)
    assert code == 1 and "no catalogue at" in err and not path.exists()


@pytest.mark.parametrize("command", ["export", "regressions"])
def test_a_reader_runs_on_a_catalogue_in_a_read_only_directory(command, published_catalogue, catalogue_records):
    """The catalogue (WAL mode) in a directory the reading user cannot write to: `export` and `regressions`
    open it read-only. As root, the command runs as `nobody` (root ignores permissions); otherwise the
    directory is made read-only."""
    shared = Path(tempfile.mkdtemp(prefix="kernelindex-ro-"))
    try:
        ro_dir, out = shared / "ro", shared / "out"
        ro_dir.mkdir()
        shutil.copy(published_catalogue, ro_dir / "catalogue.sqlite")
        out.mkdir()
        for path, mode in ((shared, 0o755), (out, 0o777), (ro_dir / "catalogue.sqlite", 0o444), (ro_dir, 0o555)):
            path.chmod(mode)
        argv = [*CLI, command, "--catalogue", f"sqlite:///{ro_dir / 'catalogue.sqlite'}", "--out", str(out)]
        if os.geteuid() == 0:
            if not shutil.which("setpriv"):
                pytest.fail("running as root needs setpriv (util-linux) to drop to an unprivileged user")
            argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *argv]
        completed = subprocess.run(
            argv, capture_output=True, text=True, timeout=300, env={**os.environ, "HOME": str(out)}, cwd=out
        )
        assert completed.returncode == 0, completed.stderr
        if command == "export":
            lines = (out / "kernelindex-catalogue.jsonl").read_bytes().splitlines()
            assert len(lines) == len(catalogue_records)
        else:
            assert json.loads((out / "regressions.json").read_text("utf-8"))["counts"]["runs"] > 0
        assert sorted(p.name for p in ro_dir.iterdir()) == ["catalogue.sqlite"]  # no -wal, no -shm
    finally:
        for path in (shared, *shared.rglob("*")):
            if path.is_dir():
                path.chmod(path.stat().st_mode | stat.S_IWUSR)
        shutil.rmtree(shared, ignore_errors=True)


def test_export_never_prints_a_query_string_password(tmp_path):
    secret = "Qs3cret-Pw9"
    for url in (
        f"postgresql+psycopg://user@127.0.0.1:1/db?connect_timeout=5&password={secret}",
        f"postgresql://user:{secret}@bad@127.0.0.1:1/db",
    ):
        completed = run_cli("export", "--catalogue", url, "--out", str(tmp_path / "out"))
        assert completed.returncode == 1 and len(completed.stderr.strip().splitlines()) == 1
        assert secret not in completed.stderr + completed.stdout and "Traceback" not in completed.stderr


# ---------------------------------------------------------------- issue 22 item 14: one line naming the input


@pytest.mark.parametrize("suffix", [".json", ".jsonl", ".yaml"])
def test_validate_of_a_five_thousand_digit_integer_names_the_file(tmp_path, capsys, suffix):
    path = tmp_path / f"huge{suffix}"
    number = "9" * 5000
    if suffix == ".yaml":
        path.write_text(f"apiVersion: kernelindex.dev/v1alpha1\nkind: BenchmarkRun\nx: {number}\n")
    else:
        path.write_text(f'{{"apiVersion": "kernelindex.dev/v1alpha1", "kind": "BenchmarkRun", "x": {number}}}\n')
    code, _, err = _run(["validate", str(path)], capsys)
    assert code == 1 and len(err.splitlines()) == 1, err
    assert err.startswith(f"kernelindex-pipeline validate: error: {path}") and "an integer of 5000 digits" in err


@pytest.mark.parametrize(
    "locator, message",
    [
        (
            "http://127.0.0.1:99999/x.csv",
            "http://127.0.0.1:99999/x.csv: not a well-formed URL (Port out of range 0-65535)",
        ),
        ("http://[::1", "http://[::1: not a well-formed URL (Invalid IPv6 URL)"),
        ("http://10.255.255.1\\@127.0.0.1/x.csv", "a URL may not hold a backslash"),
        ("https://example.com/a.csv\nhttp://10.0.0.1/b.csv", "a locator may not hold a control character"),
    ],
)
def test_import_ci_of_a_malformed_locator_is_a_usage_error_before_anything_is_made(
    tmp_path, capsys, monkeypatch, locator, message
):
    home = tmp_path / "home"
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    code, _, err = _run(["import-ci", locator], capsys)
    assert code == 2, err
    (line,) = [line for line in err.splitlines() if not line.startswith("usage:")]
    assert line.startswith("kernelindex-pipeline import-ci: error: ") and message in line
    assert not home.exists()


@pytest.mark.slow  # a CLI process that opens a Dagster instance: 9-17 s on two shared cores
def test_import_ci_of_a_proc_file_is_one_line_naming_it(tmp_path):
    completed = run_cli("import-ci", "/proc/self/pagemap", env={"DAGSTER_HOME": str(tmp_path / "home")})
    assert completed.returncode == 1
    assert completed.stderr.strip().splitlines()[-1] == (  # after the DAGSTER_HOME it uses
        "kernelindex-pipeline import-ci: error: /proc/self/pagemap: holds more than the 0 bytes its size says "
        "(a /proc or /sys file?); copy it to a file first"
    )


def test_regressions_of_records_with_a_subnormal_median_skip_those_runs(tmp_path, capsys):
    import gzip

    slice_dir = FIXTURES / "liger-ci-slice"
    sources = ["5e8f12b", "2845fe8", "33924d2", "49e6353"]  # in time order: the first two runs are made 5e-324
    for index, source in enumerate(sources):
        lines = gzip.decompress((slice_dir / f"{source}.jsonl.gz").read_bytes()).decode().splitlines()
        if index < 2:
            manifests = [json.loads(line) for line in lines]
            for manifest in manifests:
                if manifest["kind"] == "BenchmarkRun" and "timing" in manifest["spec"]:
                    manifest["spec"]["timing"]["latencyNs"]["median"] = 5e-324
            lines = [json.dumps(manifest) for manifest in manifests]
        (tmp_path / source).mkdir()
        (tmp_path / source / "records.jsonl").write_text("\n".join(lines) + "\n")
    code, out, err = _run(
        [
            "regressions",
            "--records",
            *(str(tmp_path / s / "records.jsonl") for s in sources),
            "--out",
            str(tmp_path / "out"),
        ],
        capsys,
    )
    assert code == 0, err
    report = json.loads((tmp_path / "out" / "regressions.json").read_text())
    assert report["skippedRuns"] == {"no positive latency median or peak memory": 2066}
    assert all(change["magnitude"] < 1e6 for change in report["changes"])


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://user:p@ss@127.0.0.1:1/db",
        "postgresql://user:p@ss:w@127.0.0.1:1/db",
        "postgresql://host:s3cr@t@x/db",
    ],
)
def test_a_catalogue_url_with_a_raw_at_gets_a_readable_hint_and_no_secret(url, capsys, tmp_path):
    """Issue 30: every piece of a malformed URL counts as secret, and a user called `user` (or `host`) turned
    the hint itself into 'the *** name' and 'postgresql+psycopg://***:password@...'."""
    code, _, err = _run(["export", "--catalogue", url, "--out", str(tmp_path)], capsys)
    assert code == 1
    assert "postgresql+psycopg://user:password@host:port/database" in err
    if "well-formed" in err:
        assert "in the user name and password (@ %40" in err
    for secret in ("p@ss", "s3cr", "127.0.0.1", "ss:w"):
        assert secret not in err


@pytest.mark.parametrize("command", ["regressions", "site"])  # each runs a detection, which reads the timeline
def test_a_detection_with_a_damaged_toolchain_timeline_is_one_line_naming_it(command, tmp_path, capsys, monkeypatch):
    import gzip
    import types
    from importlib import resources

    from kernelindex_pipeline.liger import toolchain

    shipped = resources.files("kernelindex_pipeline.data").joinpath(toolchain.TIMELINE_FILE).read_text("utf-8")
    damaged = tmp_path / toolchain.TIMELINE_FILE
    damaged.write_text(shipped.replace("    released: '2019-02-05T00:38:13Z'\n", "", 1))  # torch 1.0.1's date
    monkeypatch.setattr(toolchain, "resources", types.SimpleNamespace(files=lambda package: tmp_path))
    records = []
    for source in ["5e8f12b", "2845fe8"]:
        (tmp_path / source).mkdir()
        records.append(tmp_path / source / "records.jsonl")
        records[-1].write_bytes(gzip.decompress((FIXTURES / "liger-ci-slice" / f"{source}.jsonl.gz").read_bytes()))
    code, _, err = _run([command, "--records", *map(str, records), "--out", str(tmp_path / "out")], capsys)
    assert (code, err.splitlines()[-1]) == (
        1,
        f"kernelindex-pipeline {command}: error: {damaged}: packages.torch[1] (torch 1.0.1): no `released`; "
        "rebuild it: bash scripts/refresh_toolchain_timeline",
    )
    assert not (tmp_path / "out" / "regressions.json").exists()
