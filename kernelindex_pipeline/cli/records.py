"""Commands over records files, no catalogue and no Dagster: transform, validate, schema."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from kernelindex_pipeline.cli.errors import Command, CommandError, UsageError

# ------------------------------------------------------------------------------------- transform


def _transform_arguments(p: argparse.ArgumentParser) -> None:
    from kernelindex_pipeline.liger.catalogue import DEFAULT_PROFILE, PROFILES

    p.add_argument("csv", nargs="?", type=Path, help="a Liger benchmark CSV (all_benchmark_data.csv)")
    p.add_argument("--liger-release", metavar="V", help="fetch the liger-kernel==V sdist and read its history CSV")
    p.add_argument(
        "--gpu", metavar="SLUG", help="keep only rows whose kebab(gpu_name) is SLUG, e.g. nvidia-h100-80gb-hbm3"
    )
    p.add_argument("--liger-version", metavar="V", help="keep only rows whose liger_version is exactly V")
    p.add_argument(
        "--out", required=True, type=Path, metavar="DIR", help="writes DIR/records.jsonl and DIR/report.json"
    )
    p.add_argument(
        "--cache-dir", type=Path, help="sdist cache (default $KERNELINDEX_CACHE_DIR or ~/.cache/kernelindex-pipeline)"
    )
    p.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="run-building worker processes (default: 2 for large inputs on 2+ CPUs, else 0)",
    )
    p.add_argument(
        "--profile",
        choices=PROFILES,
        default=DEFAULT_PROFILE,
        help="catalogue profile: full (default; reference plus extensions: memory runs, more kernels, "
        "providers, modes and GPUs) or reference (exactly KernelIndex's importer)",
    )


def _transform(args: argparse.Namespace) -> int:
    from kernelindex_pipeline.imports.output import SortedRunSpool, write_json, write_records_jsonl
    from kernelindex_pipeline.liger import import_csv
    from kernelindex_pipeline.liger.csv import read_header
    from kernelindex_pipeline.liger.release import ReleaseError, check_version, fetch_release, read_history_csv
    from kernelindex_pipeline.records.names import kebab

    if (args.csv is None) == (args.liger_release is None):
        raise UsageError("give exactly one input: a CSV path or --liger-release V")
    if args.workers is not None and args.workers < 0:
        raise UsageError("--workers must be 0 or more")
    if args.liger_release is not None:
        try:
            check_version(args.liger_release)
        except ReleaseError as exc:
            raise UsageError(f"--liger-release: {exc}") from None
    if args.gpu is not None and (not args.gpu or kebab(args.gpu) != args.gpu):
        hint = f" (did you mean {kebab(args.gpu)!r}?)" if kebab(args.gpu) else ""
        raise UsageError(
            f"--gpu {args.gpu!r} can never match: it is compared with kebab(gpu_name), e.g. nvidia-h100-80gb-hbm3{hint}"
        )
    if args.liger_version is not None and (not args.liger_version or args.liger_version != args.liger_version.strip()):
        raise UsageError(
            f"--liger-version {args.liger_version!r} can never match: liger_version is compared exactly, e.g. 0.8.5"
        )
    code_ref = None
    if args.csv is not None:
        from kernelindex_pipeline.liger.identity import code_ref_of_locator

        source, snapshot, label = args.csv, None, str(args.csv)
        code_ref = code_ref_of_locator(str(args.csv))  # a CI file named by its run directory: 2845fe8.csv
    else:
        source, snapshot = read_history_csv(fetch_release(args.liger_release, args.cache_dir))
        label = snapshot.locator
    if read_header(source) is None:  # a header-only file is a valid input of 0 rows; nothing at all is not
        raise CommandError(f"{label}: the file is empty (no header, no rows): not a Liger benchmark CSV")
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".runs-", dir=args.out) as tmp:
        spool = SortedRunSpool(tmp_dir=tmp)
        result = import_csv(
            source,
            gpu=args.gpu,
            liger_version=args.liger_version,
            snapshot=snapshot,
            on_run=spool.add,
            workers=args.workers,
            profile=args.profile,
            code_ref=code_ref,
        )
        rows = result.report.rows_read
        if rows and result.report.filtered_out == rows:  # the filters left nothing: say so, write nothing
            wanted = " and ".join(
                f"{flag} {value}"
                for flag, value in (("--gpu", args.gpu), ("--liger-version", args.liger_version))
                if value
            )
            raise CommandError(f"{label}: none of its {rows} rows has {wanted}; nothing written")
        lines = write_records_jsonl(args.out / "records.jsonl", result.manifests.items(), spool)
    report = result.report.to_dict()
    write_json(args.out / "report.json", {"source": result.snapshot.to_dict() if result.snapshot else None, **report})
    print(f"{result.report.summary()}")
    for metric, totals in report["coverage"]["byMetric"].items():
        lost = ", ".join(f"{reason} {rows}" for reason, rows in totals["skipped"].items())
        print(
            f"coverage {metric}: {totals['runs']} of {totals['rows']} rows became runs ({totals['percent']} %)"
            + (f"; skipped: {lost}" if lost else "")
            + (f"; issues: {totals['issues']}" if totals["issues"] else "")
        )
    print(f"wrote {lines} records to {args.out / 'records.jsonl'} and the report to {args.out / 'report.json'}")
    return 0


# -------------------------------------------------------------------------------------- validate


def _validate_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "files", nargs="+", type=Path, metavar="FILE", help="JSON, JSON Lines or (multi-document) YAML manifests"
    )


def _validate(args: argparse.Namespace) -> int:
    from kernelindex_pipeline.records.io import ManifestFileError, load_manifests
    from kernelindex_pipeline.records.schema import validate_manifest

    total = bad = 0
    for path in args.files:
        try:
            items = load_manifests(path)  # its errors name the file (and the line, document or item)
        except ManifestFileError as exc:
            raise CommandError(str(exc)) from None
        except OSError as exc:
            raise CommandError(f"{path}: cannot read: {exc.strerror or exc}") from None
        for location, manifest in items:
            total += 1
            problems = validate_manifest(manifest)
            if problems:
                bad += 1
                for problem in problems:
                    print(f"{location}: {problem}")
    if bad:
        print(f"{bad} of {total} manifests are invalid", file=sys.stderr)
        return 1
    print(f"{total} manifests valid")
    return 0


# ---------------------------------------------------------------------------------------- schema


def _schema_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("kind", nargs="?", help="one kind (e.g. BenchmarkRun); all seven when omitted")


def _schema(args: argparse.Namespace) -> int:
    from kernelindex_pipeline.records.schema import KINDS, json_schema, json_schemas

    if args.kind is None:
        print(json.dumps(json_schemas(), indent=2, ensure_ascii=False))
        return 0
    if args.kind not in KINDS:
        raise UsageError(f"unknown kind {args.kind!r}; kinds: {', '.join(KINDS)}")
    print(json.dumps(json_schema(args.kind), indent=2, ensure_ascii=False))
    return 0


COMMANDS: dict[str, Command] = {
    "transform": ("Liger benchmark CSV -> records.jsonl + report.json", _transform_arguments, _transform),
    "validate": ("validate manifests against the kernelindex.dev/v1alpha1 schemas", _validate_arguments, _validate),
    "schema": ("print the JSON Schema of one kind or all seven", _schema_arguments, _schema),
}
