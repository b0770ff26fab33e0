"""The `kernelindex-pipeline` command line: the same functions the Dagster assets call.

Exit codes: 0 ok, 1 invalid input or records, 2 usage. Errors are one line on stderr, never a
traceback (set KERNELINDEX_DEBUG=1 to see the traceback of an unexpected error). Subcommands are registered in COMMANDS (name -> (add_arguments, run)); adding one is adding
an entry.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

from kernelindex_pipeline.home import CATALOGUE_URL_ENV, catalogue_url, dagster_home

PROG = "kernelindex-pipeline"


class CommandError(Exception):
    """A failure the user can fix; printed as one line, exit code 1."""


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
    from kernelindex_pipeline.liger import import_csv
    from kernelindex_pipeline.liger.csv import read_header
    from kernelindex_pipeline.liger.output import SortedRunSpool, write_json, write_records_jsonl
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
        from kernelindex_pipeline.liger.ci import code_ref_of_locator

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


# ------------------------------------------------------------------------------------------ main


# ------------------------------------------------------------------------------- import-history, import-ci


def _verbose_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "-v", "--verbose", action="store_true", help="also print Dagster's event log and the daemon's output"
    )


def _import_history_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--partition",
        action="append",
        default=[],
        metavar="GPU|VERSION",
        help="only this partition, e.g. 'nvidia-h100-80gb-hbm3|0.8.0' (repeatable; default: every history partition)",
    )
    _verbose_argument(p)


def _import_ci_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "locators",
        nargs="+",
        metavar="LOCATOR",
        help="Liger CI results CSVs: https URLs (e.g. https://raw.githubusercontent.com/linkedin/Liger-Kernel/"
        "gh-pages/benchmarks/<dir>/benchmark.csv) or local paths",
    )
    _verbose_argument(p)


def _checked_partitions(keys: list[str]) -> list[tuple[str, str]]:
    """(gpu, version) of each `--partition GPU|VERSION`; a UsageError naming every bad one."""
    from kernelindex_pipeline.liger.partition import PARTITION_VALUE

    partitions, bad = [], []
    for key in keys:
        gpu, sep, version = key.partition("|")
        if sep and PARTITION_VALUE.fullmatch(gpu) and PARTITION_VALUE.fullmatch(version):
            partitions.append((gpu, version))
        else:
            bad.append(key)
    if bad:
        raise UsageError(
            f"--partition {', '.join(map(repr, bad))}: write GPU|VERSION, each of lowercase ASCII letters, digits, "
            "'.', '_' and '-', e.g. 'nvidia-h100-80gb-hbm3|0.8.0'"
        )
    return partitions


def _dagster_home() -> Path:
    """DAGSTER_HOME (default ./.dagster_home), created when new (see _local_instance)."""
    home = dagster_home().resolve()
    home.mkdir(parents=True, exist_ok=True)
    os.environ["DAGSTER_HOME"] = str(home)
    return home


def _local_instance(home: Path):
    """DAGSTER_HOME's instance (home given a copy of the project's dagster.yaml when new).

    Dagster creates and migrates its SQLite storage when an instance is first made; two processes
    doing that at once on a fresh home break it ("table runs already exists", "more than one head
    present"), sometimes for good. So that step is serialised across processes with a file lock in
    DAGSTER_HOME (filelock: released when the holder dies), and ends only once every storage database
    exists (some are created on first use)."""
    import shutil
    import tempfile

    from dagster import DagsterInstance
    from filelock import FileLock

    with FileLock(home / ".kernelindex-instance.lock"):
        config = home / "dagster.yaml"
        if not config.exists():  # written whole, never seen half-copied by another process
            with tempfile.NamedTemporaryFile("wb", dir=home, prefix=".dagster.yaml.", delete=False) as tmp:
                with open(Path(__file__).resolve().parent / "data" / "dagster.yaml", "rb") as source:
                    shutil.copyfileobj(source, tmp)
            os.replace(tmp.name, config)
        instance = DagsterInstance.get()
        instance.get_runs_count()
        instance.get_dynamic_partitions("kernelindex-instance-check")
        instance.all_instigator_state()
    return instance


def _run_import(args: argparse.Namespace, run) -> int:
    """Run one import command against the instance under DAGSTER_HOME and print its summary."""
    import logging
    import warnings

    from dagster import BetaWarning, PreviewWarning

    home = _dagster_home()
    if not args.verbose:
        # Dagster's own notices are for the code's author; the operator's output is the summary.
        warnings.filterwarnings("ignore", category=BetaWarning)
        warnings.filterwarnings("ignore", category=PreviewWarning)
        logging.getLogger("dagster").setLevel(logging.WARNING)
    from kernelindex_pipeline.defs.import_daemon import clean_up_after_dead_command
    from kernelindex_pipeline.defs.launch import LaunchError, UnknownPartitions, ui_hint

    print(f"DAGSTER_HOME={home}", file=sys.stderr)
    try:
        with _local_instance(home) as instance:
            # Runs a dead import command's daemon left STARTED hold run slots forever: reported and failed first.
            clean_up_after_dead_command(instance, home, lambda line: print(line, file=sys.stderr, flush=True))
            # The summary is printed as soon as the import's runs are done, before the catalogue refresh.
            summary = run(
                instance,
                home,
                lambda line: print(line, file=sys.stderr, flush=True),
                lambda done: print("\n".join(done.lines()), flush=True),
            )
    except UnknownPartitions as error:  # checked against the history before any partition runs
        raise UsageError(str(error)) from None
    except LaunchError as error:
        raise CommandError(str(error)) from None
    except subprocess.TimeoutExpired as error:  # a deadline the import module did not turn into its own message
        command = " ".join(Path(str(part)).name for part in (error.cmd or [])[:3])
        raise CommandError(
            f"{command} did not finish within {error.timeout:g}s (the machine may be overloaded); run the command again"
        ) from None
    print(f"open the UI on it: {ui_hint(home)}", file=sys.stderr)
    return 0 if summary.ok else 1


def _import_history(args: argparse.Namespace) -> int:
    """Every partition of the newest history through Dagster, into the instance under DAGSTER_HOME."""
    partitions = _checked_partitions(args.partition)  # all of them, before anything is read or created
    from kernelindex_pipeline.defs.launch import import_history

    return _run_import(
        args,
        lambda instance, home, log, report: import_history(
            instance, home, partitions=partitions or None, verbose=args.verbose, log=log, report=report
        ),
    )


def _import_ci(args: argparse.Namespace) -> int:
    """Liger CI result files through Dagster: partitions whose files changed are imported, others not."""
    from kernelindex_pipeline.defs.launch import import_ci
    from kernelindex_pipeline.liger.ci import CiSourceError, check_locator_syntax

    for locator in args.locators:  # a malformed locator is a usage error, before anything is created
        try:
            check_locator_syntax(locator)
        except CiSourceError as error:
            raise UsageError(str(error)) from None
    return _run_import(
        args,
        lambda instance, home, log, report: import_ci(
            instance, home, args.locators, verbose=args.verbose, log=log, report=report
        ),
    )


# ------------------------------------------------------------------------------------------ export


def _catalogue_argument(p) -> None:
    """`--catalogue URL` on a parser or an argument group: the same for every command that reads a catalogue."""
    p.add_argument(
        "--catalogue",
        metavar="URL",
        help="SQLAlchemy URL (default: $KERNELINDEX_CATALOGUE_URL, else the embedded catalogue under DAGSTER_HOME)",
    )


def _export_arguments(p: argparse.ArgumentParser) -> None:
    _catalogue_argument(p)
    p.add_argument(
        "--out",
        type=Path,
        required=True,
        metavar="DIR",
        help="writes the JSON Lines export, its manifest, the YAML bundle and efficiency.jsonl",
    )
    p.add_argument(
        "--kernelindex",
        action="store_true",
        help="also write kernelindex-submission.yaml and kernelindex-import-bundle.json, the files KernelIndex's own "
        "publication code takes (README: Publishing in KernelIndex); runs in time order, peak-memory runs left out",
    )
    p.add_argument(
        "--kernelindex-memory",
        action="store_true",
        help="with --kernelindex: include peak-memory runs (KernelIndex ranks them as latencies)",
    )


def _export(args: argparse.Namespace) -> int:

    from kernelindex_pipeline.catalogue.export import export_bundle, export_jsonl
    from kernelindex_pipeline.catalogue.store import CatalogueStore
    from kernelindex_pipeline.catalogue.tables import export_tables
    from kernelindex_pipeline.reporting.efficiency import export_sidecar

    if args.kernelindex_memory and not args.kernelindex:
        raise UsageError("--kernelindex-memory goes with --kernelindex")
    store = CatalogueStore.open(catalogue_url(args.catalogue), read_only=True)
    try:
        jsonl = export_jsonl(store, args.out)  # checks the catalogue's integrity first
        bundle = export_bundle(store, args.out)
        tables = export_tables(store, args.out)
        sidecar = export_sidecar(store.manifests(), args.out)
        kernelindex = _kernelindex_export(store, args) if args.kernelindex else None
    finally:
        store.close()
    print(f"{jsonl.records} records from {store.safe_url}")
    print(f"{jsonl.path} (sha256 {jsonl.sha256}), manifest {jsonl.manifest_path}")
    print(f"{bundle.path}")
    print(
        "tables (Parquet, keyed on digests): "
        + ", ".join(f"{p} ({tables.rows[n]} rows)" for n, p in tables.paths.items())
    )
    collisions = json.loads(jsonl.manifest_path.read_text(encoding="utf-8"))["nameCollisions"]
    if collisions["records"]:
        print(
            f"{collisions['records']} records share their metadata.name with another ({collisions['names']} names, "
            "KernelIndex's 100-character cut): key on digests"
        )
    print(f"{sidecar} (derived efficiency figures, beside the records)")
    if kernelindex is not None:
        print(
            f"{kernelindex.submission.path}: {kernelindex.submission.records_by_kind['BenchmarkRun']} runs for KernelIndex"
        )
        for bundle in kernelindex.bundles:
            print(f"{bundle.path}: {bundle.records_by_kind['BenchmarkRun']} runs")
    return 0


def _kernelindex_export(store, args: argparse.Namespace):
    from kernelindex_pipeline.catalogue.export import export_kernelindex
    from kernelindex_pipeline.catalogue.kernelindex import KernelIndexExportError, snapshots_of_publications

    try:
        return export_kernelindex(
            store.manifests(),
            args.out,
            snapshots=snapshots_of_publications(store.publications()),
            include_memory=args.kernelindex_memory,
            order="time",
        )
    except KernelIndexExportError as error:
        raise CommandError(f"KernelIndex export: {error}") from None


# ------------------------------------------------------------------------------------------ report


def _report_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--records",
        nargs="+",
        type=Path,
        metavar="FILE",
        help="records files (e.g. the records.jsonl of one or more transforms) instead of a catalogue; "
        "a report.json next to a file adds its coverage to the report's coverage table",
    )
    _catalogue_argument(p)
    p.add_argument(
        "--out",
        type=Path,
        required=True,
        metavar="DIR",
        help="writes DIR/index.html, DIR/charts/*.svg, regressions.json, summary.md",
    )
    _detection_arguments(p)


def _report_inputs(args: argparse.Namespace):
    """(manifests, coverage cells or None, regressions) of --records files or the catalogue, the same for
    `report` and `site`."""

    settings = _detection_settings(args)
    if args.records and args.catalogue:
        raise UsageError("give --records or --catalogue, not both")
    if args.records:
        from kernelindex_pipeline.liger.report import CoverageTable
        from kernelindex_pipeline.records.io import load_manifests

        manifests, import_reports = [], []
        for path in args.records:
            if not path.is_file():
                raise CommandError(f"{path}: no such file")
            try:
                manifests += [manifest for _, manifest in load_manifests(path)]
            except (OSError, ValueError) as exc:
                raise CommandError(f"{path}: {exc}") from None
            report_path = path.with_name("report.json")  # transform writes it next to records.jsonl
            if report_path.is_file():
                try:
                    import_reports.append(json.loads(report_path.read_text(encoding="utf-8")))
                except (OSError, ValueError) as exc:
                    raise CommandError(f"{report_path}: {exc}") from None
        coverage = CoverageTable.of(import_reports).cells if import_reports else None
        # each file one source run, as `regressions --records` judges them
        return manifests, coverage, _detect_and_attribute(args, settings, records=args.records)
    from kernelindex_pipeline.catalogue.store import CatalogueStore

    store = CatalogueStore.open(catalogue_url(args.catalogue), read_only=True)
    try:
        manifests = list(store.manifests())
        return manifests, None, _detect_and_attribute(args, settings, manifests=manifests)
    finally:
        store.close()


def _report(args: argparse.Namespace) -> int:
    from kernelindex_pipeline.reporting import build_report

    manifests, coverage, regressions = _report_inputs(args)
    result = build_report(manifests, args.out, coverage=coverage, regressions=regressions)
    print(result.summary_markdown)
    print(f"wrote {result.path}")
    return 0


def _site(args: argparse.Namespace) -> int:
    from kernelindex_pipeline.reporting.site import build_site

    manifests, coverage, regressions = _report_inputs(args)
    result = build_site(manifests, args.out, coverage=coverage, regressions=regressions)
    changed = ", ".join(f"{k} ({v})" for k, v in sorted(result.changed.items())) or "nothing"
    print(
        f"{result.counts['kernels']} kernels, {result.counts['series']} series, {result.counts['runs']} runs; "
        f"{result.counts['slowdowns']} slowdowns, {result.counts['pending']} pending"
    )
    print(f"changed since the previous build: {changed}; kernel pages rewritten: {len(result.rewritten)}")
    print(f"wrote {result.path}")
    return 0


# ------------------------------------------------------------------------------------- regressions


def _regressions_arguments(p: argparse.ArgumentParser) -> None:
    source = p.add_mutually_exclusive_group()
    _catalogue_argument(source)
    source.add_argument(
        "--records",
        nargs="+",
        type=Path,
        metavar="FILE",
        help="records.jsonl files that `transform` wrote, each one source run",
    )
    p.add_argument(
        "--out",
        type=Path,
        required=True,
        metavar="DIR",
        help="writes DIR/regressions.json and the page DIR/regressions.html",
    )
    _detection_arguments(p)


def _detection_arguments(p: argparse.ArgumentParser) -> None:
    """The detection settings, the same for `regressions` and `report` (reporting.changepoints.DetectionSettings,
    whose defaults apply where an option is not given; not imported here: `--help` stays light, and
    tests/test_cli.py checks these texts against DetectionSettings)."""
    p.add_argument("--alpha", type=float, help="significance level per series (default 0.001)")
    p.add_argument("--min-effect", type=float, help="smallest change reported, as a fraction (default 0.05 = 5%%)")
    p.add_argument(
        "--liger-git",
        metavar="DIR",
        default=os.environ.get("KERNELINDEX_LIGER_GIT") or None,
        help="a clone of Liger-Kernel (git clone --filter=blob:none --bare https://github.com/linkedin/Liger-Kernel "
        "DIR): changes name the commits between their runs, runs are ordered by their code "
        "(default: $KERNELINDEX_LIGER_GIT; without it, no commits are named)",
    )


def _detect_and_attribute(
    args: argparse.Namespace, settings, *, records: list[Path] | None = None, manifests: Iterable[dict] | None = None
):
    """Detection (each records file one source run, or the runs of a catalogue) with Liger's attribution;
    what the attribution could not use (the clone, a commit) is printed as a note, detection goes on."""
    from kernelindex_pipeline.liger.attribution import LigerAttribution
    from kernelindex_pipeline.reporting.regressions import detect_in_record_files, detect_regressions

    liger = LigerAttribution(args.liger_git)
    if records is not None:
        report = detect_in_record_files(records, settings, liger.adapters)
    else:
        report = detect_regressions(manifests or [], settings, liger.adapters)
    for note in liger.attribute(report):
        print(f"note: {note}", file=sys.stderr)
    return report


def _detection_settings(args: argparse.Namespace):
    from kernelindex_pipeline.reporting.changepoints import DetectionSettings

    given = {"alpha": args.alpha, "min_effect": args.min_effect}
    try:
        return DetectionSettings(**{name: value for name, value in given.items() if value is not None})
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _regressions(args: argparse.Namespace) -> int:
    from kernelindex_pipeline.reporting.regressions import RegressionInputError
    from kernelindex_pipeline.reporting.regressions_page import write_regressions

    settings = _detection_settings(args)
    try:
        if args.records:
            report = _detect_and_attribute(args, settings, records=args.records)
        else:
            from kernelindex_pipeline.catalogue.store import CatalogueStore

            with CatalogueStore.open(catalogue_url(args.catalogue)) as store:
                report = _detect_and_attribute(args, settings, manifests=store.manifests())
    except (RegressionInputError, ValueError) as exc:
        raise CommandError(str(exc)) from None
    paths = write_regressions(report, args.out)
    print(report.summary())
    print(f"wrote {paths.json} and {paths.page}")
    return 0


class UsageError(Exception):
    """Wrong arguments: exit code 2."""


Command = tuple[str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]
COMMANDS: dict[str, Command] = {
    "transform": ("Liger benchmark CSV -> records.jsonl + report.json", _transform_arguments, _transform),
    "validate": ("validate manifests against the kernelindex.dev/v1alpha1 schemas", _validate_arguments, _validate),
    "schema": ("print the JSON Schema of one kind or all seven", _schema_arguments, _schema),
    "import-history": (
        "the main job: every history partition through Dagster into the catalogue",
        _import_history_arguments,
        _import_history,
    ),
    "import-ci": (
        "Liger CI result CSVs (URLs or paths) through Dagster into the catalogue",
        _import_ci_arguments,
        _import_ci,
    ),
    "export": (
        "export the catalogue: JSON Lines + manifest file, and a YAML submission bundle",
        _export_arguments,
        _export,
    ),
    "report": (
        "the static HTML report (charts, coverage, regressions) of records files or a catalogue",
        _report_arguments,
        _report,
    ),
    "site": (
        "the interactive static site (landing page, a page per kernel, regressions) of records files or a catalogue",
        _report_arguments,
        _site,
    ),
    "regressions": (
        "change points over every run, host effects taken out: regressions.json + a page",
        _regressions_arguments,
        _regressions,
    ),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description="Liger-Kernel benchmarks -> kernelindex.dev records")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (help_text, add_arguments, _) in COMMANDS.items():
        add_arguments(sub.add_parser(name, help=help_text, description=help_text))
    return parser


def _expected_errors() -> tuple[type[BaseException], ...]:
    """Exceptions that mean bad input (exit 1), imported lazily so `--help` stays fast."""
    from kernelindex_pipeline.catalogue.store import CatalogueError as StoreError
    from kernelindex_pipeline.liger import CsvFormatError, InvalidRecord, LigerCatalogueError
    from kernelindex_pipeline.liger.ci import CiSourceError
    from kernelindex_pipeline.liger.release import ReleaseError

    errors: list[type[BaseException]] = [
        CommandError,
        LigerCatalogueError,
        CsvFormatError,
        InvalidRecord,
        ReleaseError,
        StoreError,
        OSError,
        CiSourceError,
    ]
    try:
        from kernelindex_pipeline.records.schema import InvalidRecords

        errors.append(InvalidRecords)
    except ImportError:
        pass
    return tuple(errors)


def _scrubbed(text: str, args: argparse.Namespace) -> str:
    """`text` without the secrets of any catalogue URL this command was given: a last line of
    defence for messages not built by the catalogue module (which redacts its own)."""
    from kernelindex_pipeline.redaction import scrub, url_secrets

    urls = [getattr(args, "catalogue", None), os.environ.get(CATALOGUE_URL_ENV)]
    return scrub(text, [secret for url in urls if url for secret in url_secrets(url)])


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)  # exits 2 on usage errors
    _, _, run = COMMANDS[args.command]
    try:
        return run(args)
    except UsageError as exc:
        parser.print_usage(sys.stderr)
        print(f"{PROG} {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - sorted below: expected errors are one line, others too
        if os.environ.get("KERNELINDEX_DEBUG"):
            raise
        expected = _expected_errors()
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        first_line = _scrubbed(first_line, args)
        if isinstance(exc, expected):
            print(f"{PROG} {args.command}: error: {first_line}", file=sys.stderr)
        else:
            print(f"{PROG} {args.command}: internal error ({type(exc).__name__}): {first_line}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
