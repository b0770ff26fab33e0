"""`kernelindex-pipeline bisect` as a real process: a regressions.json group bisected on the synthetic
Liger repository (sweeps in real subprocesses with the stand-in torch/triton), and what bad input gets."""

from __future__ import annotations

import json

import pytest

from tests.support.cli_process import run_cli
from tests.support.liger_bisection import H100, build_host, build_repository, report_of


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli-bisect")
    repo = build_repository(root, commits=8, slow_from=6, broken=frozenset({4}))
    host = build_host(root / "host")
    (root / "wheels").mkdir()
    report = root / "regressions.json"
    report.write_text(
        json.dumps(report_of(repo.commits, before_ref=repo.commits[0][:7], after_ref=repo.commits[8][:7]))
    )
    options = [
        "--liger-git", str(repo.path), "--pythonpath", str(host["torch"]), "--rounds", "2",
        "--env-cache", str(root / "envs"), "--build-cache", str(root / "builds"), "--wheel-dir", str(root / "wheels"),
    ]  # fmt: skip
    return {"root": root, "repo": repo, "report": report, "options": options, "env": {"PATH": host["path"]}}


@pytest.mark.slow  # four sweeps, each building a commit's wheel and environment: about 12 s
def test_a_group_is_bisected_printed_and_written(bench):
    out = bench["root"] / "verdict.json"
    done = run_cli(
        "bisect", "--regressions", str(bench["report"]), "--group", "g-0123456789ab", "--out", str(out),
        *bench["options"], env=bench["env"],
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    commits = bench["repo"].commits
    assert f"verdict: confirmed {commits[6]}" in done.stdout
    assert "2 candidate(s)" in done.stdout and "group g-0123456789ab" in done.stdout
    document = json.loads(out.read_text())
    assert document["verdict"] == "confirmed" and document["culprit"] == commits[6] and document["parent"] == commits[3]
    assert document["plan"]["group"] == "g-0123456789ab" and document["plan"]["candidates"] == [commits[3], commits[6]]
    assert [s["commit"] for s in document["steps"]] == [commits[0], commits[8], commits[3], commits[6]]
    assert document["measurements"] == 4 <= document["maxMeasurements"]
    assert document["expectedStep"] == {"ratio": 1.3, "ci95": [1.25, 1.35]}


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--kernel", "rms_norm", "--gpu", H100, "--good", "a"], "all of --kernel --gpu --good --bad --mode"),
        (["--group", "1"], "--regressions and --group go together"),
        (["--regressions", "r.json", "--group", "1", "--kernel", "x"], "not both"),
        (["--kernel", "k", "--gpu", "NVIDIA H100", "--good", "a", "--bad", "b", "--mode", "forward"], "not a GPU slug"),
        (["--regressions", "r.json", "--group", "1", "--rounds", "1"], "2 rounds or more"),
    ],
)
def test_usage_errors_exit_2_before_anything_is_read(tmp_path, arguments, message):
    done = run_cli("bisect", *arguments, "--liger-git", str(tmp_path), "--out", str(tmp_path / "v.json"))
    assert done.returncode == 2 and message in done.stderr
    assert not (tmp_path / "v.json").exists()


def test_a_missing_clone_or_group_is_one_line_exit_1(bench, tmp_path):
    done = run_cli(
        "bisect", "--regressions", str(bench["report"]), "--group", "1", "--liger-git", str(tmp_path / "nowhere"),
        "--out", str(tmp_path / "v.json"),
    )  # fmt: skip
    assert done.returncode == 1 and "no such directory" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    done = run_cli(
        "bisect",
        "--regressions",
        str(bench["report"]),
        "--group",
        "g-nope",
        *bench["options"],
        "--out",
        str(tmp_path / "v.json"),
    )
    assert done.returncode == 1 and "no group 'g-nope' in the report" in done.stderr
    assert not (tmp_path / "v.json").exists()
