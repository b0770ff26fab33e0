"""The command line: transform / validate / schema, exit codes and one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kernelindex_pipeline.cli import main
from kernelindex_pipeline.records.canonical import canonical_bytes, digest_of
from kernelindex_pipeline.records.schema import KINDS
from tests.support.liger_rows import BASE_ROW, csv_bytes, row


@pytest.fixture
def small_csv(tmp_path):
    rows = [
        BASE_ROW,
        row(timestamp="2025-01-02 03:04:06", kernel_provider="torch"),
        row(kernel_operation_mode="backward"),
        row(metric_name="memory"),
        row(kernel_name="uncurated"),
        row(y_value_50="nan", timestamp="2025-01-03 00:00:00"),
    ]
    path = tmp_path / "bench.csv"
    path.write_bytes(csv_bytes(rows))
    return path


def test_transform_writes_sorted_canonical_records_and_report(small_csv, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["transform", str(small_csv), "--out", str(out), "--profile", "reference"]) == 0
    lines = (out / "records.jsonl").read_bytes().splitlines()
    manifests = [json.loads(line) for line in lines]
    assert all(canonical_bytes(m) == line for m, line in zip(manifests, lines, strict=False))
    keys = [(KINDS.index(m["kind"]), m["metadata"]["name"], digest_of(m)) for m in manifests]
    assert keys == sorted(keys)
    assert sum(m["kind"] == "BenchmarkRun" for m in manifests) == 3
    report = json.loads((out / "report.json").read_text())
    assert report["rowsRead"] == 6 and report["runs"] == 3 and report["conserved"] is True
    assert report["skipped"]["memoryRows"] == 1 and report["skipped"]["uncuratedKernels"] == {"uncurated": 1}
    assert report["issues"] == [{"row": 6, "problem": "median y_value_50 'nan' is not a finite number > 0"}]
    assert report["source"]["sha256"] and report["source"]["locator"].startswith("file://")
    assert "3 runs" in capsys.readouterr().out
    assert not list(out.glob(".runs-*")) and not list(out.glob("*.tmp"))


def test_transform_full_profile_turns_the_memory_row_into_a_run(small_csv, tmp_path):
    out = tmp_path / "out"
    assert main(["transform", str(small_csv), "--out", str(out)]) == 0  # full is the default
    report = json.loads((out / "report.json").read_text())
    assert report["profile"] == "full" and report["runs"] == 4 and report["memoryRuns"] == 1
    assert report["skipped"]["memoryRows"] == 0 and report["conserved"] is True
    assert report["coverage"]["byMetric"]["memory"] == {
        "rows": 1,
        "runs": 1,
        "issues": 0,
        "skipped": {},
        "percent": 100.0,
    }


def test_transform_filters(small_csv, tmp_path):
    out = tmp_path / "out"
    assert main(["transform", str(small_csv), "--out", str(tmp_path / "all")]) == 0
    unfiltered = json.loads((tmp_path / "all" / "report.json").read_text())
    assert (
        main(
            [
                "transform",
                str(small_csv),
                "--liger-version",
                "0.5.0",
                "--gpu",
                "nvidia-h100-80gb-hbm3",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    report = json.loads((out / "report.json").read_text())
    assert report["runs"] == unfiltered["runs"] > 0 and report["skipped"]["filteredOut"] == 0
    (tmp_path / "other.csv").write_bytes(csv_bytes([BASE_ROW, row(gpu_name="NVIDIA B200", kernel_provider="torch")]))
    assert main(["transform", str(tmp_path / "other.csv"), "--gpu", "nvidia-b200", "--out", str(tmp_path / "o2")]) == 0
    report = json.loads((tmp_path / "o2" / "report.json").read_text())
    assert report["runs"] == 1 and report["skipped"]["filteredOut"] == 1


def test_transform_sorts_runs_by_name_then_digest(tmp_path):
    # Timestamps and sizes interleave so that arrival order and (name, digest) order differ.
    rows = [row(timestamp=f"2025-01-0{d} 00:00:0{s}", x_value=str(2 ** (8 - d))) for s in range(3) for d in range(1, 4)]
    path = tmp_path / "b.csv"
    path.write_bytes(csv_bytes(rows))
    assert main(["transform", str(path), "--out", str(tmp_path / "o")]) == 0
    runs = [json.loads(line) for line in (tmp_path / "o" / "records.jsonl").read_bytes().splitlines()]
    runs = [m for m in runs if m["kind"] == "BenchmarkRun"]
    assert len(runs) == 9
    names = [(m["metadata"]["name"], digest_of(m)) for m in runs]
    assert names == sorted(names) and [m["spec"]["observedAt"] for m in runs] != sorted(
        m["spec"]["observedAt"] for m in runs
    )


def test_run_spool_orders_equal_names_by_digest(tmp_path):
    from kernelindex_pipeline.imports.output import SortedRunSpool
    from kernelindex_pipeline.liger.normalize import RunRecord

    spool = SortedRunSpool(tmp_dir=tmp_path)
    for name, digest in [("b", "sha256:2"), ("a", "sha256:9"), ("b", "sha256:1"), ("a-", "sha256:0")]:
        spool.add(RunRecord(name, digest, "x", f"{name}|{digest}".encode()))
    assert list(spool.lines()) == [b"a|sha256:9", b"a-|sha256:0", b"b|sha256:1", b"b|sha256:2"]
    assert list(tmp_path.iterdir()) == []  # the spool file has no name and is gone


def test_missing_column_is_one_line_exit_1(tmp_path, capsys):
    path = tmp_path / "bad.csv"
    path.write_text("kernel_name,kernel_provider\nrms_norm,liger\n")
    assert main(["transform", str(path), "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "missing columns 'kernel_operation_mode'" in err
    assert not (tmp_path / "o" / "records.jsonl").exists()


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["transform"],
        ["transform", "--out", "x"],
        ["transform", "a.csv", "--liger-release", "0.8.5", "--out", "x"],
        ["nope"],
    ],
)
def test_usage_errors_exit_2(argv, capsys):
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own usage errors
        code = exc.code
    assert code == 2
    assert "Traceback" not in capsys.readouterr().err


def test_bad_release_version_is_a_usage_error(tmp_path, capsys):
    assert main(["transform", "--liger-release", "not a version", "--out", str(tmp_path)]) == 2
    assert "not a release version" in capsys.readouterr().err


def test_validate_good_and_bad(small_csv, tmp_path, capsys):
    out = tmp_path / "out"
    main(["transform", str(small_csv), "--out", str(out)])
    capsys.readouterr()
    assert main(["validate", str(out / "records.jsonl")]) == 0
    assert "manifests valid" in capsys.readouterr().out
    first = json.loads((out / "records.jsonl").read_text().splitlines()[-1])
    first["spec"]["timing"]["latencyNs"]["median"] = -5
    first["spec"]["status"] = "fine"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([first]))
    assert main(["validate", str(out / "records.jsonl"), str(bad)]) == 1
    text = capsys.readouterr()
    name = first["metadata"]["name"]
    assert f"BenchmarkRun/{name}: spec.status" in text.out
    assert "spec.timing.latencyNs.median" in text.out
    assert "1 of" in text.err


def test_validate_unreadable_file(tmp_path, capsys):
    bad = tmp_path / "x.json"
    bad.write_text("{not json")
    assert main(["validate", str(bad)]) == 1
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert main(["validate", str(tmp_path / "missing.json")]) == 1


def test_schema(capsys):
    assert main(["schema", "BenchmarkRun"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert "spec" in schema["properties"]
    assert main(["schema"]) == 0
    assert set(json.loads(capsys.readouterr().out)) == set(KINDS)
    assert main(["schema", "Nope"]) == 2


def test_entry_point_runs_as_a_program(small_csv, tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "kernelindex_pipeline.cli", "transform", str(small_csv), "--out", str(tmp_path / "o")],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "o" / "records.jsonl").is_file()


def test_help_imports_no_heavy_library():
    """`--help` (the argument parser) imports neither pandas, numpy, the schema validator nor Dagster: every
    CLI start paid seconds for them before (issue 21). Checked in a fresh interpreter, by module, not by time."""
    code = (
        "import sys\n"
        "from kernelindex_pipeline import cli\n"
        "cli.build_parser().format_help()\n"
        "heavy = [m for m in ('pandas', 'numpy', 'dagster', 'matplotlib', 'kernelindex_pipeline.records.schema') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "", f"the argument parser imported {out}"


def test_detection_options_are_the_declared_settings_with_their_defaults():
    """`regressions` and `site` take one option per declared detection setting (detection.settings), of its
    type, with its help and default, and a setting not given is the declared default."""
    from kernelindex_pipeline.cli import build_parser
    from kernelindex_pipeline.detection.settings import SETTINGS, DetectionSettings

    parser = build_parser()
    for command in ("regressions", "site"):
        sub = parser._subparsers._group_actions[0].choices[command]
        options = {a.option_strings[0]: a for a in sub._actions if a.dest in {s.name for s in SETTINGS}}
        assert sorted(options) == sorted(s.option for s in SETTINGS), command
        for setting in SETTINGS:
            action = options[setting.option]
            assert action.type is setting.type and action.default is None, (command, setting.name)
            assert action.help.replace("%%", "%") == f"{setting.help} (default {setting.default:g})"
        help_text = " ".join(sub.format_help().split())
        assert all(f"(default {s.default:g})" in help_text for s in SETTINGS), help_text
    args = parser.parse_args(["regressions", "--out", "out", "--min-segment", "3"])
    from kernelindex_pipeline.cli.catalogue import _detection_settings

    assert _detection_settings(args) == DetectionSettings(min_segment=3)
    assert {s.name: s.default for s in SETTINGS} == {
        name: getattr(DetectionSettings(), name) for name in ("alpha", "min_effect", "min_segment")
    }
