"""Attribution from Liger's source history: a synthetic git repository built here (commits that touch an
op, an imported helper, a benchmark script and the workflow), the toolchain timeline, the hostile cases
(a missing clone, a commit the clone lacks, a shallow clone) and the real CI slice."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from kernelindex_pipeline.detection import attribution as attr
from kernelindex_pipeline.detection.changes import BENCHMARK_SCRIPT, ENVIRONMENT, HOST, LIGER_KERNEL, UNKNOWN
from kernelindex_pipeline.detection.detect import detect_in_record_files
from kernelindex_pipeline.liger.attribution import LigerAttributor
from kernelindex_pipeline.liger.identity import code_ref_of_label
from kernelindex_pipeline.liger.kernel_sources import KernelSources
from kernelindex_pipeline.liger.source_history import LigerSourceHistory, SourceHistoryError
from kernelindex_pipeline.liger.toolchain import ToolchainTimeline, packaged_timeline, unpinned_requirements
from tests.support import FIXTURES
from tests.support.ci_slice import unpack_ci_slice
from tests.support.liger_git import build, git

START = datetime(2025, 1, 6, tzinfo=UTC)


@pytest.fixture(scope="module")
def liger(tmp_path_factory):
    return build(tmp_path_factory.mktemp("git"))


@pytest.fixture(scope="module")
def ci_slice(tmp_path_factory) -> list[Path]:
    """The real CI slice as records files in folders named by their code, as `transform` writes them."""
    return unpack_ci_slice(tmp_path_factory.mktemp("slice"))


# ------------------------------------------------------------------------------- source facts


def test_kernel_files_come_from_the_scripts_imports_at_each_commit(liger):
    sources = KernelSources(LigerSourceHistory(liger.path))
    base = sources.paths(liger.shas["base"], "rms_norm")
    # the wrapper is re-exported by transformers/__init__ (followed to its module, the package itself is not
    # a kernel's source), the op it imports, the helper the op imports, and liger_kernel.utils
    assert base.kernel == {
        "src/liger_kernel/transformers/rms_norm.py",
        "src/liger_kernel/ops/rms_norm.py",
        "src/liger_kernel/ops/utils.py",
        "src/liger_kernel/utils.py",
    }
    assert base.script == {"benchmark/scripts/benchmark_rms_norm.py", "benchmark/scripts/utils.py"}
    assert base.distance("src/liger_kernel/transformers/rms_norm.py") < base.distance("src/liger_kernel/ops/utils.py")
    # ops/helper.py is imported only from the "import" commit on: computed from the source, not a list
    assert "src/liger_kernel/ops/helper.py" not in base.kernel
    assert "src/liger_kernel/ops/helper.py" in sources.paths(liger.shas["import"], "rms_norm").kernel
    # a kernel name written by an f-string (Liger's dyt_beta={beta}) finds its script by the fixed prefix
    softmax = sources.paths(liger.shas["base"], "softmax_beta=True")
    assert softmax.script == {"benchmark/scripts/benchmark_softmax.py", "benchmark/scripts/utils.py"}
    assert (
        "src/liger_kernel/ops/softmax.py" in softmax.kernel and "src/liger_kernel/ops/rms_norm.py" not in softmax.kernel
    )


def test_commits_between_two_runs_with_their_files(liger):
    history = LigerSourceHistory(liger.path)
    commits = history.commits_between(liger.shas["base"], liger.shas["workflow"])
    assert [c.subject for c in commits] == [
        "workflow (#104)",
        "bench rms_norm (#103)",
        "ops utils (#102)",
        "rms_norm: slower op (#101)",
    ]
    assert commits[-1].files == ("src/liger_kernel/ops/rms_norm.py",)
    assert commits[0].url == f"https://github.com/linkedin/Liger-Kernel/commit/{liger.shas['workflow']}"
    assert history.resolve(liger.shas["op"][:7]) == liger.shas["op"]
    assert history.resolve("0" * 40) is None and history.resolve("--all") is None  # never an option


def test_code_refs_of_run_labels():
    assert code_ref_of_label("2845fe8") == "2845fe8"
    assert code_ref_of_label("ci/7644a0f-v0.7.0") == "7644a0f"
    assert code_ref_of_label("d5648bf-v0.6.3.jsonl.gz") == "d5648bf"
    assert code_ref_of_label("v0.6.3") == "v0.6.3"
    assert code_ref_of_label("nvidia-h100-80gb-hbm3 2025-01-01T00:00:00.000Z") is None


# ---------------------------------------------------------------------------------- toolchain


def test_toolchain_timeline_difference_and_its_file():
    timeline = ToolchainTimeline(
        {
            "torch": [
                ("2.5.1", "2024-11-01T00:00:00Z"),
                ("2.6.0", "2025-01-29T00:00:00Z"),
                ("2.5.2", "2025-02-10T00:00:00Z"),
            ],
            "triton": [("3.2.0", "2025-01-29T00:00:00Z")],
        },
        refreshed="2025-03-01",
    )
    jan, feb = datetime(2025, 1, 20, tzinfo=UTC).timestamp(), datetime(2025, 2, 20, tzinfo=UTC).timestamp()
    # the highest release at each time (a later patch of an older line does not go back)
    assert [s.text() for s in timeline.difference(jan, feb)] == [
        "torch 2.5.1 → 2.6.0 (2025-01-29)",
        "triton — → 3.2.0 (2025-01-29)",
    ]
    assert timeline.difference(jan, feb, ("triton",))[0].package == "triton"
    assert timeline.difference(feb, feb) == []
    again = ToolchainTimeline.from_yaml(timeline.to_yaml())
    assert again.difference(jan, feb) == timeline.difference(jan, feb) and again.refreshed == "2025-03-01"
    shipped = packaged_timeline()
    assert set(shipped.packages) == {"torch", "transformers"}  # triton follows torch's exact pin
    assert shipped.newest_at("torch", datetime(2025, 8, 10, tzinfo=UTC).timestamp())[0] == "2.8.0"


def test_unpinned_requirements_read_from_setup_py():
    setup = (
        'def f():\n    return ["torch>=2.1.2", "triton==3.0.0"]\nextra = ["transformers>=4.4", "not a requirement!"]\n'
    )
    assert unpinned_requirements(setup) == {"torch", "transformers"}


# -------------------------------------------------------------------------------- attribution


def _record_files(tmp_path: Path, runs: list[tuple[str, dict[tuple[str, str, str], float]]]) -> list[Path]:
    """One records file per source run, in a folder named by its code (as `transform` output is named);
    runs are a week apart."""
    from tests.support.factories import detection_run as run

    paths = []
    for j, (label, values) in enumerate(runs):
        folder = tmp_path / label
        folder.mkdir()
        when = START + timedelta(days=7 * j)
        lines = [
            json.dumps(run(kernel, provider, case, when + timedelta(minutes=i), value))
            for i, ((kernel, provider, case), value) in enumerate(values.items())
        ]
        (folder / "records.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(folder / "records.jsonl")
    return paths


def _synthetic_runs(shas: dict[str, str]) -> list[tuple[str, dict]]:
    """Eight runs, two per commit (base, op, script, uses-import). rms_norm's Liger cases a/b step ×1.5 at
    the op commit (only Liger moved); cases c/d of both providers step ×1.4 at the script commit; Liger's
    case e steps ×1.3 where rms_norm's op starts importing a helper that then changes; softmax on torch
    (a baseline) steps ×1.25 at the last boundary, where torch had a release."""
    commits = ["base", "base", "op", "op", "script", "script", "uses-import", "uses-import"]
    out = []
    for j, name in enumerate(commits):
        wiggle = 1.01 if j % 2 else 0.99
        values = {}
        for case in "abcdefgh":
            for kernel, provider in (
                ("rms_norm", "liger"),
                ("rms_norm", "torch"),
                ("softmax", "liger"),
                ("softmax", "torch"),
            ):
                factor = 1.0
                if kernel == "rms_norm" and provider == "liger" and case in "ab" and j >= 2:
                    factor *= 1.5
                if kernel == "rms_norm" and case in "cd" and j >= 4:
                    factor *= 1.4
                if kernel == "rms_norm" and provider == "liger" and case == "e" and j >= 6:
                    factor *= 1.3
                if kernel == "softmax" and provider == "torch" and case in "ab" and j >= 6:
                    factor *= 1.25
                values[(kernel, provider, case)] = 100_000.0 * factor * wiggle
        out.append((shas[name] if j % 2 == 0 else f"{shas[name][:12]}-v0.1.{j}", values))
    return out


@dataclass(frozen=True)
class Attributed:
    """The synthetic history's changes (`_synthetic_runs`) after Liger's attribution, with a torch release."""

    report: Any
    notes: list[str]
    by_case: dict[tuple[str, str, str], Any]  # (kernel, provider, case) -> its change

    def subjects(self, kernel: str, provider: str, case: str) -> list[str]:
        """The subjects of the commits the change's first cause names."""
        return [commit.subject for commit in self.by_case[(kernel, provider, case)].causes[0].commits]


@pytest.fixture(scope="module")
def attributed(liger, tmp_path_factory) -> Attributed:
    report = detect_in_record_files(_record_files(tmp_path_factory.mktemp("runs"), _synthetic_runs(liger.shas)))
    torch_release = ToolchainTimeline({"torch": [("2.5.1", "2024-10-01T00:00:00Z"), ("2.6.0", "2025-02-14T00:00:00Z")]})
    attributor = LigerAttributor(LigerSourceHistory(liger.path), torch_release)
    attributor.attribute(report)
    by_case = {(c.key.kernel, c.key.provider, c.trend.case_key): c for c in report.changes}
    return Attributed(report, list(attributor.notes), by_case)


def test_every_step_of_the_synthetic_history_is_a_change_and_nothing_else_is(attributed):
    assert set(attributed.by_case) == {("rms_norm", "liger", case) for case in "abcde"} | {
        ("rms_norm", "torch", case) for case in "cd"
    } | {("softmax", "torch", case) for case in "ab"}
    assert attributed.notes == []


def test_a_step_only_liger_took_at_a_commit_to_the_kernels_op_is_that_commit(attributed):
    op = attributed.by_case[("rms_norm", "liger", "a")]
    assert op.cause == LIGER_KERNEL and attributed.subjects("rms_norm", "liger", "a") == ["rms_norm: slower op (#101)"]
    assert op.causes[0].commits[0].files == ("src/liger_kernel/ops/rms_norm.py",)


def test_a_step_both_providers_took_at_a_script_commit_is_the_script_first_with_its_diff_stat(attributed):
    # the measurement changed, so the script comes first; the helper commit in the same range only as a
    # lower-ranked kernel suspect
    script = attributed.by_case[("rms_norm", "liger", "c")]
    assert script.cause == BENCHMARK_SCRIPT and attributed.subjects("rms_norm", "liger", "c") == [
        "bench rms_norm (#103)"
    ]
    assert "benchmark_rms_norm.py" in script.causes[0].diffstat
    assert [e.cause for e in script.causes] == [BENCHMARK_SCRIPT, LIGER_KERNEL]
    assert attributed.by_case[("rms_norm", "torch", "c")].causes[0].cause == BENCHMARK_SCRIPT


def test_a_commit_to_code_the_kernel_imports_only_at_the_later_end_is_still_a_suspect(attributed):
    # ops/helper.py is rms_norm's only at the later end; softmax's commit never is a suspect; a commit to
    # ops/utils.py that changes only a function rms_norm never calls is not (#108), nor one that only
    # documents the op (#109: a docstring and a comment)
    late = attributed.subjects("rms_norm", "liger", "e")
    assert set(late) == {"rms_norm uses helper (#106)", "helper scale (#107)"}


def test_a_baseline_step_where_torch_had_a_release_is_the_environment_named_by_torch_not_the_workflow(attributed):
    # the workflow commit beside it is no suspect (the workflow runs on GitHub's runner: what it decides for
    # the GPU host is the checkout)
    baseline = attributed.by_case[("softmax", "torch", "a")]
    assert baseline.cause == ENVIRONMENT
    assert baseline.causes[0].toolchain == (
        {"package": "torch", "before": "2.5.1", "after": "2.6.0", "released": "2025-02-14T00:00:00Z"},
    )
    assert baseline.causes[0].commits == ()


def test_changes_are_grouped_one_entry_per_commit_with_its_series(attributed):
    groups = attr.group_changes(attributed.report.changes)
    heads = {(g.cause, tuple(c.subject for c in g.evidence.commits)): len(g.changes) for g in groups}
    assert heads[(LIGER_KERNEL, ("rms_norm: slower op (#101)",))] == 2  # one entry, its two series
    assert heads[(BENCHMARK_SCRIPT, ("bench rms_norm (#103)",))] == 4


def test_the_check_message_names_the_commits_and_the_toolchain_of_the_rest(attributed):
    message = attr.check_message(attr.group_changes(attributed.report.changes))
    # the environment's two are named by their toolchain, not by the workflow commit beside it
    assert message.startswith("7 slowdowns from 3 commits: ")
    assert "rms_norm: slower op (#101)" in message
    assert message.endswith("Without a commit: 2 environment (toolchain: torch 2.5.1 → 2.6.0)")


def test_a_groups_json_links_its_commits_and_its_id_is_stable_and_its_own(attributed, liger):
    groups = attr.group_changes(attributed.report.changes)
    as_json = groups[0].to_dict()
    assert as_json["suspects"]["commits"][0]["url"].startswith("https://github.com/linkedin/Liger-Kernel/commit/")
    assert {"id", "gpu", "before", "after", "cause", "suspects", "otherCauses", "changes", "series"} <= set(as_json)
    assert as_json["gpu"] == attributed.report.changes[0].key.gpu
    assert liger.shas["op"][:8] in attr.check_message(groups)
    # a group's id (what a bisection is launched with): stable, and another for every group
    ids = [g.to_dict()["id"] for g in groups]
    assert ids == [g.to_dict()["id"] for g in attr.group_changes(attributed.report.changes)]
    assert len(set(ids)) == len(ids) and all(i.startswith("g-") and len(i) == 14 for i in ids)


# ------------------------------------------------------------------------------------- hostile


def test_a_missing_directory_or_not_a_repository_is_named(tmp_path):
    with pytest.raises(SourceHistoryError, match="no such directory.*git clone --filter=blob:none"):
        LigerSourceHistory(tmp_path / "nowhere")
    with pytest.raises(SourceHistoryError, match="not a git repository"):
        LigerSourceHistory(tmp_path)


def test_a_shallow_clone_is_refused_with_the_fix(liger, tmp_path):
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{liger.path}", str(shallow))
    with pytest.raises(SourceHistoryError, match="shallow clone.*git fetch --unshallow"):
        LigerSourceHistory(shallow)


def test_commits_the_clone_lacks_leave_the_cause_unknown_with_a_note(liger, ci_slice):
    """The real CI slice (Liger's own shas) against a clone that has none of them: detection runs, every
    change is `unknown` or a toolchain/host cause, and the note says which commit to fetch."""
    report = detect_in_record_files(ci_slice)
    assert report.changes
    attributor = LigerAttributor(LigerSourceHistory(liger.path), None)
    attributor.attribute(report)
    assert {c.cause for c in report.changes} <= {UNKNOWN, HOST}
    assert any("commit 2845fe8 is not in the clone" in n and "fetch" in n for n in attributor.notes)


def test_without_a_clone_the_code_is_an_unexamined_cause_ranked_before_the_toolchain(ci_slice):
    """No clone: where the code differs, `unknown` (the code was not looked at) takes the place of the kernel
    and script causes; the toolchain difference from the timeline is still listed after it."""
    report = detect_in_record_files(ci_slice)
    attributor = LigerAttributor(None, packaged_timeline())
    attributor.attribute(report)
    assert {c.cause for c in report.changes} <= {ENVIRONMENT, HOST, UNKNOWN}
    flce = [
        c
        for c in report.changes
        if c.key.kernel == "fused_linear_cross_entropy"
        and c.key.provider == "liger"
        and c.trend.sources[c.split.index] == "2845fe8"
    ]
    assert flce and all(c.cause == UNKNOWN and "no Liger clone" in c.causes[0].note for c in flce)
    # transformers 4.54.x was released between 5e8f12b (2025-07-18) and 2845fe8 (2025-08-01), torch 2.8.0 after
    for change in flce:
        [environment] = [e for e in change.causes[1:] if e.cause == ENVIRONMENT]
        assert {t["package"] for t in environment.toolchain} == {"transformers"}
    assert attributor.notes == ["no Liger clone given (--liger-git DIR): changes name no commits"]


# --------------------------------------------------------------------------------- command line


def test_runs_are_ordered_by_their_code_where_the_clone_knows_it(liger, tmp_path):
    """A manual CI run of an older commit, measured last, belongs where its commit is."""
    from kernelindex_pipeline.liger.attribution import LigerAttribution

    flat = {("rms_norm", "liger", case): 100_000.0 for case in "abcd"}
    labels = [liger.shas["base"], liger.shas["op"], liger.shas["script"], f"{liger.shas['base'][:10]}-v0.0.9"]
    files = _record_files(tmp_path, [(label, flat) for label in labels])
    by_time = detect_in_record_files(files)
    assert [s.label for s in by_time.sources] == labels
    by_code = detect_in_record_files(files, adapters=LigerAttribution(liger.path).adapters)
    assert [s.label for s in by_code.sources] == [labels[0], labels[3], labels[1], labels[2]]
    assert [s.code_ref for s in by_code.sources] == [
        liger.shas["base"],
        liger.shas["base"][:10],
        liger.shas["op"],
        liger.shas["script"],
    ]


def test_cli_names_the_commits_and_a_missing_clone_is_a_note(liger, tmp_path, capsys):
    from kernelindex_pipeline.cli import main

    (tmp_path / "runs").mkdir()
    files = [str(p) for p in _record_files(tmp_path / "runs", _synthetic_runs(liger.shas))]
    out = tmp_path / "with-git"
    assert main(["regressions", "--records", *files, "--liger-git", str(liger.path), "--out", str(out)]) == 0
    saved = json.loads((out / "regressions.json").read_text())
    # softmax's torch baseline moved at the workflow commit, where no torch was released (the packaged
    # timeline): the workflow is no environment suspect, so nothing reaches it: unknown, never a guess
    assert saved["counts"]["byCause"] == {
        "liger_kernel": 3,
        "benchmark_script": 4,
        "environment": 0,
        "host": 0,
        "unknown": 2,
    }
    [op] = [
        g
        for g in saved["groups"]
        if g["suspects"]["commits"] and g["suspects"]["commits"][0]["subject"] == "rms_norm: slower op (#101)"
    ]
    assert (op["cause"], op["changes"], op["before"]["codeRef"], op["after"]["codeRef"]) == (
        "liger_kernel",
        2,
        f"{liger.shas['base'][:12]}",
        liger.shas["op"],
    )
    page = (out / "regressions.html").read_text()
    assert f'href="https://github.com/linkedin/Liger-Kernel/commit/{liger.shas["op"]}"' in page
    assert "7 slowdowns from 3 commits" in page

    capsys.readouterr()
    out = tmp_path / "missing-clone"
    assert main(["regressions", "--records", *files, "--liger-git", str(tmp_path / "nowhere"), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "note: --liger-git" in err and "no such directory" in err and "detection goes on without commits" in err
    saved = json.loads((out / "regressions.json").read_text())
    assert saved["counts"]["changes"] == 9 and saved["counts"]["byCause"]["liger_kernel"] == 0
    assert saved["attributionNotes"] and "no such directory" in saved["attributionNotes"][0]


def test_a_sweep_names_its_release_and_its_changes_name_the_commits_between_tags(liger, tmp_path):
    """Sweeps in a catalogue: each run's implementation is pinned to the release it measured
    (projectRevision.version), which is the run's code; the commits between two tags are the suspects."""
    from kernelindex_pipeline.detection.detect import detect_regressions
    from kernelindex_pipeline.liger.attribution import LigerAttribution
    from kernelindex_pipeline.liger.builders import LIGER_REPOSITORY
    from kernelindex_pipeline.records.canonical import digest_of
    from tests.support.factories import detection_run as run

    git(liger.path, "tag", "-f", "v0.1.0", liger.shas["base"])
    git(liger.path, "tag", "-f", "v0.2.0", liger.shas["op"])
    manifests = []
    for j in range(8):
        tag = "v0.1.0" if j < 4 else "v0.2.0"
        for kernel, provider, case in [("rms_norm", p, c) for p in ("liger", "torch") for c in "abcd"] + [
            ("softmax_beta=True", p, c) for p in ("liger", "torch") for c in "ab"
        ]:
            revision = {
                "apiVersion": "kernelindex.dev/v1alpha1",
                "kind": "ImplementationRevision",
                "metadata": {"name": f"{kernel}-{provider}-{tag}"},
                "spec": {
                    "projectRevision": {"repository": LIGER_REPOSITORY, "version": tag},
                    "callable": {"name": f"{kernel}/{provider}"},
                },
            }
            value = (
                100_000.0
                * (1.01 if j % 2 else 0.99)
                * (1.5 if (kernel, provider) == ("rms_norm", "liger") and case in "ab" and j >= 4 else 1.0)
            )
            measured = run(
                kernel,
                provider,
                case,
                START + timedelta(days=7 * j, minutes=len(manifests) % 50),
                value,
                version=tag[1:],
            )
            measured["spec"]["implementationDigest"] = digest_of(revision)
            manifests += [revision, measured]
    liger_attribution = LigerAttribution(liger.path)
    report = detect_regressions(manifests, adapters=liger_attribution.adapters)
    assert [s.code_ref for s in report.sources] == ["v0.1.0"] * 4 + ["v0.2.0"] * 4
    liger_attribution.attribute(report)
    assert {(c.key.kernel, c.key.provider, c.trend.case_key) for c in report.changes} == {
        ("rms_norm", "liger", "a"),
        ("rms_norm", "liger", "b"),
    }
    assert all(
        c.cause == LIGER_KERNEL and [s.subject for s in c.causes[0].commits] == ["rms_norm: slower op (#101)"]
        for c in report.changes
    )


# ------------------------------------------------------------------------- the code in the records


def test_a_ci_file_names_its_commit():
    from kernelindex_pipeline.liger.identity import code_ref_of_locator

    gh_pages = "https://raw.githubusercontent.com/linkedin/Liger-Kernel/gh-pages/benchmarks/{}/benchmark.csv"
    assert code_ref_of_locator(gh_pages.format("7644a0f-v0.7.0")) == "7644a0f"
    assert code_ref_of_locator(gh_pages.format("2845fe8") + "?token=***") == "2845fe8"
    assert code_ref_of_locator("/data/liger-ci/d5648bf-v0.6.3.csv") == "d5648bf"
    assert code_ref_of_locator("/data/ci/ab7fe2a/benchmark.csv") == "ab7fe2a"
    assert code_ref_of_locator("/data/benchmark.csv") is None and code_ref_of_locator("/data/v0.6.3.csv") is None


def test_transform_labels_each_run_with_the_commit_its_ci_file_names(tmp_path):
    """The label is metadata (no digest changes) and the fast path's canonical line stays the manifest's
    canonical JSON; a catalogue of such runs gives detection each run's code."""
    from kernelindex_pipeline.cli import main
    from kernelindex_pipeline.detection.detect import detect_regressions
    from kernelindex_pipeline.liger.attribution import LigerAttribution
    from kernelindex_pipeline.liger.runs import CODE_REF_LABEL
    from kernelindex_pipeline.records.canonical import canonical_bytes, digest_of

    fixture = FIXTURES / "liger-ci" / "7644a0f.csv"
    csv = tmp_path / "7644a0f.csv"
    csv.write_bytes(fixture.read_bytes())
    assert main(["transform", str(csv), "--out", str(tmp_path / "labelled")]) == 0
    plain = tmp_path / "plain.csv"
    plain.write_bytes(fixture.read_bytes())
    assert main(["transform", str(plain), "--out", str(tmp_path / "plain")]) == 0
    labelled_lines = (tmp_path / "labelled" / "records.jsonl").read_bytes().splitlines()
    plain_lines = (tmp_path / "plain" / "records.jsonl").read_bytes().splitlines()
    runs = [json.loads(line) for line in labelled_lines if b'"kind":"BenchmarkRun"' in line]
    assert runs and all(
        r["metadata"]["labels"]
        == {CODE_REF_LABEL: "7644a0f", "liger_version": r["metadata"]["labels"]["liger_version"]}
        for r in runs
    )
    assert all(canonical_bytes(json.loads(line)) == line for line in labelled_lines)
    assert sorted(digest_of(json.loads(line)) for line in labelled_lines) == sorted(
        digest_of(json.loads(line)) for line in plain_lines
    )
    assert not any(CODE_REF_LABEL.encode() in line for line in plain_lines)
    report = detect_regressions((json.loads(line) for line in labelled_lines), adapters=LigerAttribution(None).adapters)
    assert {s.code_ref for s in report.sources} == {"7644a0f"}


def test_the_ci_chain_labels_the_runs_of_a_part_with_its_files_commit():
    from kernelindex_pipeline.imports.fetch import FetchedFile
    from kernelindex_pipeline.liger.ci import gather
    from kernelindex_pipeline.liger.partition import build_records, parse_partition_csv
    from kernelindex_pipeline.liger.runs import CODE_REF_LABEL

    data = (FIXTURES / "liger-ci" / "7644a0f.csv").read_bytes()
    url = "https://raw.githubusercontent.com/linkedin/Liger-Kernel/gh-pages/benchmarks/7644a0f-v0.7.0/benchmark.csv"
    parts = gather([FetchedFile(url, data, "2026-02-13T00:00:00Z")])
    [part] = [p for pair in parts.parts.values() for p in pair]
    result = build_records(parse_partition_csv(part), part)
    runs = [m for m in result.manifests.values() if m["kind"] == "BenchmarkRun"]
    assert runs and {m["metadata"]["labels"][CODE_REF_LABEL] for m in runs} == {"7644a0f"}


def test_ranking_follows_the_footprint_of_a_boundary(liger):
    """Detection's result stood in for: at one boundary (base -> op, where the op commit changes rms_norm
    and torch had a release), (a) when most scripts moved the same way the shared toolchain ranks first
    even for rms_norm's Liger series; (b) when only rms_norm's Liger series moved, its commit does."""
    from types import SimpleNamespace

    import numpy as np

    from kernelindex_pipeline.detection.changepoints import Split
    from kernelindex_pipeline.detection.changes import Change

    sources = [
        SimpleNamespace(label=liger.shas["base"], observed_at="2025-01-06T00:00:00.000Z", versions={"0.1": 1}),
        SimpleNamespace(label=liger.shas["op"], observed_at="2025-01-20T00:00:00.000Z", versions={"0.1": 1}),
    ]
    timeline = ToolchainTimeline({"torch": [("2.5.1", "2024-10-01T00:00:00Z"), ("2.6.0", "2025-01-10T00:00:00Z")]})

    def change(kernel: str, provider: str) -> Change:
        key = SimpleNamespace(
            kernel=kernel, mode="forward", provider=provider, gpu="nvidia-h100-80gb-hbm3", metric="latency"
        )
        trend = SimpleNamespace(
            key=key,
            run_index=np.array([0, 0, 1, 1]),
            environments=["e"] * 4,
            sources=[s.label for s in sources for _ in (0, 1)],
            code_refs=[],
        )
        split = Split(index=2, start=0, stop=4, log_ratio=0.3, half_width=0.05, p_value=1e-6)
        return Change(trend, split, "unknown")

    kernels = ["rms_norm", "softmax_beta=True", "k3", "k4"]
    wide = SimpleNamespace(
        sources=sources,
        changes=[change(k, "liger") for k in kernels],
        trends=[c.trend for c in [change(k, p) for k in kernels for p in ("liger", "torch")]],
    )
    LigerAttributor(LigerSourceHistory(liger.path), timeline).attribute(wide)
    [rms] = [c for c in wide.changes if c.key.kernel == "rms_norm"]
    assert [e.cause for e in rms.causes] == [ENVIRONMENT, LIGER_KERNEL]

    alone = SimpleNamespace(sources=sources, changes=[change("rms_norm", "liger")], trends=wide.trends)
    LigerAttributor(LigerSourceHistory(liger.path), timeline).attribute(alone)
    [rms] = alone.changes
    assert [e.cause for e in rms.causes] == [LIGER_KERNEL, ENVIRONMENT]
    assert [c.subject for c in rms.causes[0].commits] == ["rms_norm: slower op (#101)"]


# ----------------------------------------------------------------------------- hostile clones (issue 31)


def test_runs_the_clone_lacks_keep_their_measured_place_and_no_change_is_lost(liger, tmp_path):
    """Every other run names a commit the clone lacks: those keep their measured place among the runs
    placed by commit time, so the series is the one without a clone and its changes are the same."""
    from kernelindex_pipeline.liger.attribution import LigerAttribution

    known = ["base", "op", "script", "uses-import"]
    runs = []
    for j in range(8):
        values = {
            ("rms_norm", "liger", c): 100_000.0 * (1.5 if j >= 4 else 1.0) * (1.01 if j % 2 else 0.99) for c in "abcd"
        }
        runs.append((liger.shas[known[j // 2]] if j % 2 == 0 else f"{j:07d}abcdef", values))
    files = _record_files(tmp_path, runs)
    plain = detect_in_record_files(files)
    attribution = LigerAttribution(liger.path)
    placed = detect_in_record_files(files, adapters=attribution.adapters)
    assert [s.label for s in placed.sources] == [s.label for s in plain.sources] == [label for label, _ in runs]
    key = lambda r: sorted((c.key.kernel, c.trend.case_key, c.split.index) for c in r.changes)  # noqa: E731
    assert key(placed) == key(plain) and len(plain.changes) == 4
    notes = attribution.attribute(placed)
    assert any("lack" in n and "keep their measured place" in n for n in notes)


def test_over_max_commits_the_culprit_of_a_long_range_is_still_named(liger, tmp_path, monkeypatch):
    from kernelindex_pipeline.liger import source_history

    monkeypatch.setattr(source_history, "MAX_COMMITS", 8)
    runs = [
        (
            liger.shas["base" if j < 4 else "uses-import"],
            {("rms_norm", "liger", c): 100_000.0 * (1.5 if j >= 4 else 1.0) * (1.01 if j % 2 else 0.99) for c in "ab"},
        )
        for j in range(8)
    ]
    runs = [(label if j in (0, 4) else f"{label[: 8 + j]}-v0.1.{j}", v) for j, (label, v) in enumerate(runs)]
    report = detect_in_record_files(_record_files(tmp_path, runs))
    attributor = LigerAttributor(LigerSourceHistory(liger.path), None)
    attributor.attribute(report)
    assert report.changes
    for change in report.changes:
        assert "rms_norm: slower op (#101)" in [s.subject for s in change.causes[0].commits]
    assert any("over 8 commits" in n for n in attributor.notes)


def test_cli_with_a_hostile_blobless_clone_names_the_commits_and_runs_nothing(liger, tmp_path, monkeypatch):
    """`regressions` through KERNELINDEX_LIGER_GIT on a blob-less bare clone whose uploadpack would run a
    command: the commits are named (blobs fetched through our path), the marker never appears."""
    from kernelindex_pipeline.cli import main
    from tests.support.liger_git import blobless_clone

    marker = tmp_path / "M"
    clone = blobless_clone(liger, tmp_path)
    git(clone, "config", "remote.origin.uploadpack", f"touch {marker}; git-upload-pack")
    (tmp_path / "runs").mkdir()
    files = [str(p) for p in _record_files(tmp_path / "runs", _synthetic_runs(liger.shas))]
    monkeypatch.setenv("KERNELINDEX_LIGER_GIT", str(clone))
    assert main(["regressions", "--records", *files, "--out", str(tmp_path / "out")]) == 0
    saved = json.loads((tmp_path / "out" / "regressions.json").read_text())
    assert saved["counts"]["byCause"]["liger_kernel"] == 3 and not marker.exists()
