"""Every alert a change (issue 26), on synthetic git histories: (a) a harness commit that lands between an
older commit and its later measurement is the suspect of that run's script change; (b) a commit that
changes the GPU request moves unrelated scripts and is one host entry, no change; (c) a package release
between two runs is a suspect only of the series whose code imports it; (d) history rows and CI runs are
series of their own: never compared, and a history row between two CI runs does not cut the CI series."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from kernelindex_pipeline.detection.changes import BENCHMARK_SCRIPT, ENVIRONMENT, LIGER_KERNEL, UNKNOWN
from kernelindex_pipeline.detection.detect import detect_in_record_files
from kernelindex_pipeline.detection.document import regressions_json
from kernelindex_pipeline.liger.attribution import LigerAttribution, LigerAttributor
from kernelindex_pipeline.liger.harness import replaced_paths
from kernelindex_pipeline.liger.source_history import LigerSourceHistory
from kernelindex_pipeline.liger.toolchain import ToolchainTimeline
from tests.support.factories import detection_run
from tests.support.liger_git import BASE_FILES, git

# Liger's workflow since #791, as far as the checkout goes: a manual run of an older commit takes the
# default branch's benchmark folder
WORKFLOW_791 = """name: Benchmarks
on:
  workflow_dispatch:
    inputs:
      commit_hash: {default: main}
jobs:
  benchmarks:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v3
      - name: Replace benchmark folder from main (manual only, commit != main)
        if: ${{ github.event.inputs.commit_hash != 'main' }}
        run: |
          git fetch origin main
          git checkout origin/main -- benchmark/
          cp -r benchmark /tmp/benchmark_main
          git checkout "$ORIG_COMMIT"
      - run: modal run dev.modal.benchmarks
"""
MODAL = "import modal\n\nimage = modal.Image.debian_slim()\n\n\n@app.function(gpu={gpu}, image=image)\ndef run():\n    pass\n"
SIZES = {"a": 100_000.0, "b": 400_000.0, "c": 1_600_000.0}  # distinct sizes: GPU-bound, not launch-bound
KERNELS = ("rms_norm", "softmax_beta=True")


def _repo(root: Path, steps: list[tuple[str, dict[str, str], str, str]]) -> dict[str, str]:
    """A Liger-shaped repository: the base files with the #791 workflow and a Modal image, then `steps`
    (name, files, subject, ISO date). Returns name -> sha."""
    repo = root / "liger"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    base = {
        **BASE_FILES,
        ".github/workflows/benchmark.yml": WORKFLOW_791,
        "dev/modal/benchmarks.py": MODAL.format(gpu='["H100"]'),
    }
    shas = {}
    for name, files, subject, date in [("base", base, "base", "2025-01-01T12:00:00+00:00"), *steps]:
        for path, text in files.items():
            (repo / path).parent.mkdir(parents=True, exist_ok=True)
            (repo / path).write_text(text, encoding="utf-8")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", subject, date=date)
        shas[name] = git(repo, "rev-parse", "HEAD").strip()
    shas["path"] = str(repo)
    return shas


def _runs(folder: Path, runs: list[tuple[str, datetime, dict[tuple[str, str, str], float]]]) -> list[Path]:
    """One records file per source run, in a folder named by its label (a commit: a CI run)."""
    paths = []
    for label, when, values in runs:
        target = folder / label / "records.jsonl"
        target.parent.mkdir(parents=True)
        lines = [
            json.dumps(detection_run(kernel, provider, case, when + timedelta(minutes=i), value))
            for i, ((kernel, provider, case), value) in enumerate(values.items())
        ]
        target.write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(target)
    return paths


def _values(j: int, moved: set[str], factor: float) -> dict[tuple[str, str, str], float]:
    """Every kernel x provider x case at run j (a 1 % wiggle); the kernels in `moved` times `factor`."""
    wiggle = 1.01 if j % 2 else 0.99
    return {
        (kernel, provider, case): size * wiggle * (factor if kernel in moved else 1.0)
        for kernel in KERNELS
        for provider in ("liger", "torch")
        for case, size in SIZES.items()
    }


def _day(n: int) -> datetime:
    return datetime(2025, 1, 1, 14, tzinfo=UTC) + timedelta(days=n)


def _script_change_repo(tmp_path: Path) -> dict[str, str]:
    """base; `op` (an rms_norm helper, day 2); `bench` (softmax's script, day 20)."""
    slower = BASE_FILES["benchmark/scripts/benchmark_softmax.py"].replace("def run(beta):", "def run(beta, n=2):")
    return _repo(
        tmp_path,
        [
            ("op", {"src/liger_kernel/ops/helper.py": "SCALE = 3\n"}, "helper (#200)", "2025-01-02T12:00:00+00:00"),
            (
                "bench",
                {"benchmark/scripts/benchmark_softmax.py": slower},
                "bench softmax (#201)",
                "2025-01-20T12:00:00+00:00",
            ),
        ],
    )


def test_the_workflow_says_which_paths_come_from_the_default_branch():
    assert replaced_paths(WORKFLOW_791, "main") == ("benchmark/",)
    assert replaced_paths(WORKFLOW_791, "master") == ()
    assert replaced_paths("name: Benchmarks\njobs: {}\n", "main") == ()
    assert replaced_paths("{not yaml", "main") == ()


def test_a_harness_commit_between_an_older_commit_and_its_later_measurement_is_the_scripts_suspect(tmp_path):
    """(a) Four runs of `base` measured at once; then four manual runs of `op` (an rms_norm commit) measured
    after `bench` (softmax's script) landed: the workflow of that time took benchmark/ from main, so softmax's
    step is its script, named with `bench`, though `bench` is not between the two runs' commits."""
    shas = _script_change_repo(tmp_path)
    runs = [(f"{shas['base'][:12]}-v0.1.{j}", _day(j), _values(j, set(), 1.0)) for j in range(4)]
    runs += [(f"{shas['op'][:12]}-v0.2.{j}", _day(20 + j), _values(j, {"softmax_beta=True"}, 1.4)) for j in range(4)]
    liger = LigerAttribution(shas["path"])
    report = detect_in_record_files(_runs(tmp_path / "runs", runs), adapters=liger.adapters)
    liger.attribute(report)
    assert report.changes and {c.key.kernel for c in report.changes} == {"softmax_beta=True"}
    for change in report.changes:
        assert change.cause == BENCHMARK_SCRIPT, change.causes
        assert [c.subject for c in change.causes[0].commits] == ["bench softmax (#201)"]
        assert all(e.cause != LIGER_KERNEL for e in change.causes)
    assert report.host_changes == []


def test_without_the_harness_window_the_same_step_has_no_suspect(tmp_path):
    """The control of (a): the same runs, all measured right after their commits (the default branch's tip
    is the run's commit, so the harness is the code): nothing between the commits touches softmax."""
    shas = _script_change_repo(tmp_path)
    runs = [(f"{shas['base'][:12]}-v0.1.{j}", _day(0) + timedelta(hours=j), _values(j, set(), 1.0)) for j in range(4)]
    runs += [
        (f"{shas['op'][:12]}-v0.2.{j}", _day(1) + timedelta(hours=j), _values(j, {"softmax_beta=True"}, 1.4))
        for j in range(4)
    ]
    liger = LigerAttribution(shas["path"])
    report = detect_in_record_files(_runs(tmp_path / "runs", runs), adapters=liger.adapters)
    liger.attribute(report)
    assert report.changes and {c.cause for c in report.changes} == {UNKNOWN}


def test_a_gpu_request_change_that_moves_unrelated_scripts_is_one_host_entry(tmp_path):
    """(b) The Modal GPU request changes ["H100"] -> "H100!" (another host pool) and every script moves
    x1.3 there, with no commit to their code or scripts: one host entry with that commit, no change."""
    shas = _repo(
        tmp_path,
        [
            (
                "pool",
                {"dev/modal/benchmarks.py": MODAL.format(gpu='"H100!"')},
                "Make H100 a strict requirement (#791)",
                "2025-01-10T12:00:00+00:00",
            )
        ],
    )
    runs = [(f"{shas['base'][:12]}-v0.1.{j}", _day(j), _values(j, set(), 1.0)) for j in range(4)]
    runs += [(f"{shas['pool'][:12]}-v0.2.{j}", _day(10 + j), _values(j, set(KERNELS), 1.3)) for j in range(4)]
    liger = LigerAttribution(shas["path"])
    report = detect_in_record_files(_runs(tmp_path / "runs", runs), adapters=liger.adapters)
    liger.attribute(report)
    assert report.changes == []
    [host] = report.host_changes
    assert len(host.changes) == len(KERNELS) * 2 * len(SIZES)  # every series it moved, none a change
    assert [c.subject for c in host.evidence.commits] == ["Make H100 a strict requirement (#791)"]
    assert host.direction == "slowdown" and host.after["codeRef"] == shas["pool"][:12]
    for factor in host.factors:
        low, high = factor.to_dict()["ci95"]
        assert low <= factor.to_dict()["factor"] <= high and abs(factor.to_dict()["factor"] - 1.3) < 0.02
    saved = regressions_json(report)
    assert saved["counts"]["hostChanges"] == 1 and saved["counts"]["changes"] == 0
    assert saved["hostChanges"][0]["commits"][0]["subject"] == "Make H100 a strict requirement (#791)"


def test_many_unrelated_scripts_moving_one_way_with_nothing_reaching_them_is_a_host_entry(tmp_path):
    """(b) without a commit: four scripts move x1.3 at a boundary where only a README changed."""
    extra = {
        f"benchmark/scripts/benchmark_k{n}.py": (
            f'from utils import QUANTILES\n\ndef run():\n    return {{"kernel_name": "k{n}", "q": QUANTILES}}\n'
        )
        for n in (3, 4)
    }
    shas = _repo(tmp_path, [("extra", extra, "more kernels", "2025-01-01T13:00:00+00:00")])
    git(Path(shas["path"]), "commit", "-q", "--allow-empty", "-m", "README (#300)", date="2025-01-10T12:00:00+00:00")
    readme = git(Path(shas["path"]), "rev-parse", "HEAD").strip()
    kernels = (*KERNELS, "k3", "k4")

    def values(j: int, factor: float) -> dict:
        wiggle = 1.01 if j % 2 else 0.99
        return {
            (k, p, case): size * wiggle * factor
            for k in kernels
            for p in ("liger", "torch")
            for case, size in SIZES.items()
        }

    runs = [(f"{shas['extra'][:12]}-v0.1.{j}", _day(j), values(j, 1.0)) for j in range(4)]
    runs += [(f"{readme[:12]}-v0.2.{j}", _day(10 + j), values(j, 1.3)) for j in range(4)]
    liger = LigerAttribution(shas["path"])
    report = detect_in_record_files(_runs(tmp_path / "runs", runs), adapters=liger.adapters)
    liger.attribute(report)
    assert report.changes == []
    [host] = report.host_changes
    assert host.evidence.commits == () and "another host" in host.evidence.note
    assert {c.key.kernel for c in host.changes} == set(kernels)


def test_a_package_release_is_a_suspect_only_of_series_whose_code_imports_it(tmp_path):
    """(c) transformers has a release between two runs; rms_norm's script imports transformers, softmax's
    does not; both step x1.3 there with no commit touching them: rms_norm's cause is that release, softmax's
    is unknown (no transformers named for it)."""
    rms_norm = "from transformers import AutoConfig\n" + BASE_FILES["benchmark/scripts/benchmark_rms_norm.py"]
    shas = _repo(
        tmp_path,
        [
            ("hf", {"benchmark/scripts/benchmark_rms_norm.py": rms_norm}, "hf", "2025-01-01T13:00:00+00:00"),
        ],
    )
    git(Path(shas["path"]), "commit", "-q", "--allow-empty", "-m", "docs (#400)", date="2025-01-10T12:00:00+00:00")
    later = git(Path(shas["path"]), "rev-parse", "HEAD").strip()
    runs = [(f"{shas['hf'][:12]}-v0.1.{j}", _day(j), _values(j, set(), 1.0)) for j in range(4)]
    runs += [(f"{later[:12]}-v0.2.{j}", _day(10 + j), _values(j, set(KERNELS), 1.3)) for j in range(4)]
    report = detect_in_record_files(_runs(tmp_path / "runs", runs))
    timeline = ToolchainTimeline(
        {"transformers": [("4.50.0", "2024-12-01T00:00:00Z"), ("4.50.1", "2025-01-08T00:00:00Z")]}
    )
    LigerAttributor(LigerSourceHistory(shas["path"]), timeline).attribute(report)
    causes = {(c.key.kernel, c.key.provider, c.trend.case_key): c for c in report.changes}
    assert {k for k, _, _ in causes} == set(KERNELS)
    for (kernel, _, _), change in causes.items():
        named = [t.get("package") for e in change.causes for t in e.toolchain]
        if kernel == "rms_norm":
            assert change.cause == ENVIRONMENT and named == ["transformers"]
        else:
            assert change.cause == UNKNOWN and "transformers" not in named
            assert "no release of a package it imports" in change.causes[0].note


def test_history_rows_and_ci_runs_are_series_of_their_own_never_compared(tmp_path):
    """(d) Four history files (no commit: rows from developers' machines) and then four CI runs 1.5x slower:
    two series per case, one per origin, and no change between them."""
    shas = _repo(tmp_path, [])
    runs = [(f"history-{j}", _day(j - 30), _values(j, set(), 1.0)) for j in range(4)]
    runs += [(f"{shas['base'][:12]}-v0.1.{j}", _day(j), _values(j, set(KERNELS), 1.5)) for j in range(4)]
    liger = LigerAttribution(shas["path"])
    report = detect_in_record_files(_runs(tmp_path / "runs", runs), adapters=liger.adapters)
    liger.attribute(report)
    assert [s.origin for s in report.sources] == ["history"] * 4 + ["ci"] * 4
    assert report.changes == [] and report.pending == [] and report.host_changes == []
    by_origin = Counter(t.key.origin for t in report.trends)
    assert set(by_origin) == {"history", "ci"} and by_origin["history"] == by_origin["ci"]
    for trend in report.trends:  # each series holds the runs of its own origin only
        assert {report.sources[int(r)].origin for r in trend.run_index} == {trend.key.origin}


def test_a_history_row_between_ci_runs_does_not_hide_the_ci_step(tmp_path):
    """Three CI runs, a step of 2x at the fourth, and a history file measured between the fourth and fifth at
    the old level: the CI series still has its change at the fourth run (the history row is a series of its
    own), as in the eleven CI files with the history beside them (FLCE x2.59 at 2845fe8)."""
    shas = _repo(tmp_path, [])
    slow = {KERNELS[0]}  # one kernel: all of them moving at once would be the host
    ci = [(f"{shas['base'][:12]}-v0.1.{j}", _day(j), _values(j, slow if j >= 3 else set(), 2.0)) for j in range(6)]
    history = [("history-0", _day(3) + timedelta(hours=12), _values(9, set(), 1.0))]
    liger = LigerAttribution(shas["path"])
    report = detect_in_record_files(_runs(tmp_path / "runs", ci + history), adapters=liger.adapters)
    steps = {(c.key.kernel, c.trend.sources[c.split.index]) for c in report.changes if c.key.provider == "liger"}
    assert {kernel for kernel, _ in steps} == slow
    assert {source for _, source in steps} == {f"{shas['base'][:12]}-v0.1.3"}
    assert all(c.key.origin == "ci" for c in report.changes)


@pytest.mark.parametrize("same", [True, False])
def test_a_change_the_host_move_does_not_explain_stays_a_change(tmp_path, same):
    """At a GPU-request boundary (every script x1.3), rms_norm's Liger cases also get their own commit: when
    their step is the host's (x1.3) they join the host entry; when it goes beyond (x2.0) they stay changes,
    named with their commit."""
    shas = _repo(
        tmp_path,
        [
            (
                "pool",
                {
                    "dev/modal/benchmarks.py": MODAL.format(gpu='"H100!"'),
                    "src/liger_kernel/ops/rms_norm.py": BASE_FILES["src/liger_kernel/ops/rms_norm.py"].replace(
                        "return x", "return x * 1.0"
                    ),
                },
                "pool and rms_norm (#500)",
                "2025-01-10T12:00:00+00:00",
            )
        ],
    )

    def values(j: int, after: bool) -> dict:
        out = _values(j, set(KERNELS) if after else set(), 1.3)
        if after and not same:
            for case in SIZES:
                out[("rms_norm", "liger", case)] *= 2.0 / 1.3
        return out

    runs = [(f"{shas['base'][:12]}-v0.1.{j}", _day(j), values(j, False)) for j in range(4)]
    runs += [(f"{shas['pool'][:12]}-v0.2.{j}", _day(10 + j), values(j, True)) for j in range(4)]
    liger = LigerAttribution(shas["path"])
    report = detect_in_record_files(_runs(tmp_path / "runs", runs), adapters=liger.adapters)
    liger.attribute(report)
    [host] = report.host_changes
    if same:
        assert report.changes == []
        assert ("rms_norm", "liger") in {(c.key.kernel, c.key.provider) for c in host.changes}
    else:
        assert {(c.key.kernel, c.key.provider) for c in report.changes} == {("rms_norm", "liger")}
        assert {c.cause for c in report.changes} == {LIGER_KERNEL}
