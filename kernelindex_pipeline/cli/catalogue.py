"""Commands that read a catalogue (or records files): export, site (and `report`, its old name), regressions."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from pathlib import Path

from kernelindex_pipeline.cli.errors import Command, CommandError, UsageError
from kernelindex_pipeline.home import catalogue_url, liger_clone

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
        help="writes the whole catalogue as one JSON Lines file, its manifest, the YAML bundle, the four Parquet "
        "tables and efficiency.jsonl (with --parts: the export per publication, as the catalogue_export asset does)",
    )
    p.add_argument(
        "--parts",
        action="store_true",
        help="write the export per publication into DIR instead (catalogue/parts.py: jsonl/, tables/ and "
        "kernelindex-catalogue.parts.json): only the publications since DIR's last export, the rest checked and kept",
    )
    p.add_argument("--rebuild", action="store_true", help="with --parts: write every part afresh (the same bytes)")
    p.add_argument(
        "--verify",
        action="store_true",
        help="with --parts: check every kept part's files by sha256, not by size only",
    )
    p.add_argument(
        "--kernelindex",
        action="store_true",
        help="also write kernelindex-submission.yaml and kernelindex-import-bundle.json, the files KernelIndex's own "
        "publication code takes (docs/reference/exports.md); runs in time order, peak-memory runs left out",
    )
    p.add_argument(
        "--kernelindex-memory",
        action="store_true",
        help="with --kernelindex: include peak-memory runs (KernelIndex ranks them as latencies)",
    )
    p.add_argument(
        "--source-commit",
        metavar="REF",
        help="with --kernelindex: the Liger commit (or tag) the operations link their benchmark script at, as "
        "KernelIndex's importer does (default: v<version> of the newest history release in the catalogue)",
    )


def _export(args: argparse.Namespace) -> int:

    from kernelindex_pipeline.catalogue.export import export_bundle, export_jsonl
    from kernelindex_pipeline.catalogue.store import CatalogueStore
    from kernelindex_pipeline.catalogue.tables import export_tables
    from kernelindex_pipeline.reporting.efficiency import export_sidecar

    if args.kernelindex_memory and not args.kernelindex:
        raise UsageError("--kernelindex-memory goes with --kernelindex")
    for flag in ("rebuild", "verify"):
        if getattr(args, flag) and not args.parts:
            raise UsageError(f"--{flag} goes with --parts")
    if args.source_commit is not None:
        from kernelindex_pipeline.catalogue.kernelindex import check_source_ref

        if not args.kernelindex:
            raise UsageError("--source-commit goes with --kernelindex")
        try:
            check_source_ref(args.source_commit)
        except ValueError as error:
            raise UsageError(f"--source-commit: {error}") from None
    store = CatalogueStore.open(catalogue_url(args.catalogue), read_only=True)
    if args.parts:
        return _export_parts(store, args)
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
    _print_kernelindex(kernelindex)
    return 0


def _export_parts(store, args: argparse.Namespace) -> int:
    """`export --parts`: the export per publication (catalogue/parts.py), incremental in --out."""
    from kernelindex_pipeline.catalogue.parts import RUNS_DATASET, export_parts
    from kernelindex_pipeline.reporting.efficiency import export_sidecar

    try:
        parts = export_parts(
            store,
            args.out,
            rebuild=args.rebuild,
            verify="sha256" if args.verify else "size",
            log=lambda warning: print(f"warning: {warning}", file=sys.stderr),
        )
        sidecar = export_sidecar(store.manifests(), args.out)
        kernelindex = _kernelindex_export(store, args) if args.kernelindex else None
    finally:
        store.close()
    print(f"{parts.records} records from {store.safe_url} in {len(parts.parts)} parts: {parts.recomputed()}")
    print(f"{parts.manifest_path} (every part and file, with its sha256)")
    print(f"{args.out / RUNS_DATASET} (runs, a Parquet dataset partitioned by source / gpu / liger_version)")
    print(f"{sidecar} (derived efficiency figures, beside the records)")
    _print_kernelindex(kernelindex)
    return 0


def _print_kernelindex(kernelindex) -> None:
    if kernelindex is not None:
        print(
            f"{kernelindex.submission.path}: {kernelindex.submission.records_by_kind['BenchmarkRun']} runs for KernelIndex"
        )
        for bundle in kernelindex.bundles:
            print(f"{bundle.path}: {bundle.records_by_kind['BenchmarkRun']} runs")
        for note in kernelindex.notes:
            print(f"KernelIndex export: {note}")


def _kernelindex_export(store, args: argparse.Namespace):
    from kernelindex_pipeline.catalogue.export import export_kernelindex
    from kernelindex_pipeline.catalogue.kernelindex import (
        KernelIndexExportError,
        snapshots_of_publications,
        source_commit_of_publications,
    )

    publications = store.publications()
    try:
        return export_kernelindex(
            store.manifests(),
            args.out,
            snapshots=snapshots_of_publications(publications),
            include_memory=args.kernelindex_memory,
            order="time",
            source_commit=args.source_commit or source_commit_of_publications(publications),
        )
    except KernelIndexExportError as error:
        raise CommandError(f"KernelIndex export: {error}") from None


# -------------------------------------------------------------------------------------------- site


def _site_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--records",
        nargs="+",
        type=Path,
        metavar="FILE",
        help="records files (e.g. the records.jsonl of one or more transforms) instead of a catalogue; "
        "a report.json next to a file adds its coverage to the site's coverage pivot",
    )
    _catalogue_argument(p)
    p.add_argument(
        "--out",
        type=Path,
        required=True,
        metavar="DIR",
        help="writes DIR/index.html (the landing page), DIR/kernels/*.html, DIR/data/*.js, DIR/regressions.html and "
        "regressions.json; a rebuild rewrites only the pages whose content changed, and a catalogue's rebuilds only "
        "the kernels the publications since the previous build in DIR touched",
    )
    p.add_argument(
        "--rebuild",
        action="store_true",
        help="of a catalogue: build every kernel from every record instead of building on the previous build in "
        "DIR (the same files; what a build into a fresh folder does)",
    )
    _detection_arguments(p)


def _records_inputs(args: argparse.Namespace) -> tuple[list[dict], list | None, object]:
    """(manifests, coverage cells or None, regressions) of --records files."""
    from kernelindex_pipeline.imports.coverage import CoverageTable
    from kernelindex_pipeline.records.io import load_manifests

    settings = _detection_settings(args)
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


def _catalogue_site(args: argparse.Namespace):  # noqa: ANN202 - a SiteResult
    """The site of the catalogue, built on the previous build in --out (`build_catalogue_site`)."""
    from kernelindex_pipeline.catalogue.origins import publication_origins
    from kernelindex_pipeline.catalogue.store import CatalogueStore
    from kernelindex_pipeline.reporting.site import build_catalogue_site

    settings = _detection_settings(args)
    with CatalogueStore.open(catalogue_url(args.catalogue), read_only=True) as store:
        regressions = _detect_and_attribute(args, settings, manifests=store.manifests(), marks=store.acknowledgements())
        return build_catalogue_site(
            store,
            args.out,
            regressions=regressions,
            publication_origins=publication_origins(store),  # each point's link to where its run came from
            rebuild=args.rebuild,
        )


def _site(args: argparse.Namespace) -> int:
    from kernelindex_pipeline.reporting.site import build_site

    if args.records and args.catalogue:
        raise UsageError("give --records or --catalogue, not both")
    if args.records and args.rebuild:
        raise UsageError("--rebuild is for a catalogue's site: a site of --records files reads every record anyway")
    if args.records:
        manifests, coverage, regressions = _records_inputs(args)
        result = build_site(manifests, args.out, coverage=coverage, regressions=regressions)
    else:
        result = _catalogue_site(args)
    if result.changed and set(result.changed.values()) == {"new"} and not result.pages_kept:
        changed = f"first build in {args.out}: {len(result.changed)} kernels new"
    else:
        changed = ", ".join(f"{k} ({v})" for k, v in sorted(result.changed.items())) or "nothing"
    print(
        f"{result.counts['kernels']} kernels, {result.counts['series']} series, {result.counts['runs']} runs; "
        f"{result.counts['slowdowns']} slowdowns, {result.counts['pending']} pending"
    )
    shown = ", ".join(result.pages_rewritten[:8]) + (" ..." if len(result.pages_rewritten) > 8 else "")
    print(f"changed since the previous build: {changed}")
    if result.full_rebuild is None and not args.records:
        print(f"recomputed: {result.recomputed}")
    elif result.full_rebuild is not None:
        print(f"built every kernel: {result.full_rebuild}")
    print(
        f"pages rewritten: {len(result.pages_rewritten)} ({shown or 'none'}); kept unchanged: {len(result.pages_kept)}"
    )
    print(f"wrote {result.path}")
    return 0


def _serve_arguments(p: argparse.ArgumentParser) -> None:
    from kernelindex_pipeline.home import SITE_DIR, SITE_HOST, SITE_PORT

    p.add_argument(
        "--dir",
        type=Path,
        metavar="DIR",
        help=f"the site to serve (default: DAGSTER_HOME/{SITE_DIR}, where catalogue_report writes it)",
    )
    p.add_argument("--host", default=SITE_HOST, help=f"address to listen on (default {SITE_HOST}: this machine only)")
    p.add_argument("--port", type=int, default=SITE_PORT, help=f"port (default {SITE_PORT}; 0: any free one)")


def _serve(args: argparse.Namespace) -> int:
    from kernelindex_pipeline.home import SITE_DIR, SITE_URL_ENV, dagster_home, site_url
    from kernelindex_pipeline.reporting.site_server import SiteServerError, is_loopback, serve

    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port {args.port}: a port is 0-65535")
    directory = args.dir or dagster_home() / SITE_DIR
    if not is_loopback(args.host):
        print(f"note: --host {args.host} is not loopback: anyone who can reach it sees the site", file=sys.stderr)

    def ready(url: str) -> None:
        print(f"serving {directory} at {url} (Ctrl-C stops)", flush=True)
        if url != site_url():
            print(
                f"note: the Dagster UI links the site at {site_url()} (set {SITE_URL_ENV}={url} to match)", flush=True
            )

    try:
        serve(directory, args.host, args.port, ready)
    except SiteServerError as exc:
        raise CommandError(str(exc)) from None
    return 0


def _acknowledge_arguments(p: argparse.ArgumentParser) -> None:
    from kernelindex_pipeline.detection.acknowledgements import STATUSES
    from kernelindex_pipeline.home import SITE_DIR

    p.add_argument("id", nargs="?", help="a group (g-...) or change (chg-...) id of regressions.json / the page")
    _catalogue_argument(p)
    p.add_argument(
        "--regressions",
        type=Path,
        metavar="FILE",
        help=f"the regressions.json that names the id (default: DAGSTER_HOME/{SITE_DIR}/regressions.json)",
    )
    p.add_argument("--status", choices=STATUSES, default="acknowledged", help="default: acknowledged")
    p.add_argument("--fixed-in", default="", metavar="COMMIT", help="the commit that fixed it (--status fixed)")
    p.add_argument("--note", default="", help="why (shown on the page)")
    p.add_argument("--by", default="", help="who (default: the login name)")
    p.add_argument("--list", action="store_true", help="list the acknowledgements the catalogue keeps")


def _acknowledge(args: argparse.Namespace) -> int:
    import getpass
    from datetime import UTC, datetime

    from kernelindex_pipeline.catalogue.store import CatalogueStore
    from kernelindex_pipeline.detection.acknowledgements import Acknowledgement, from_rows
    from kernelindex_pipeline.home import SITE_DIR, dagster_home

    with CatalogueStore.open(catalogue_url(args.catalogue)) as store:
        if args.list:
            for mark in sorted(from_rows(store.acknowledgements()).values(), key=lambda m: m.at):
                print(f"{mark.change} {mark.text}")
            return 0
        if not args.id:
            raise UsageError("give the id of a group or change (regressions.json, or the page), or --list")
        path = args.regressions or dagster_home() / SITE_DIR / "regressions.json"
        try:
            report = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise CommandError(f"{path}: cannot read the regressions that name {args.id} ({exc})") from None
        changes = _changes_of(report, args.id)
        if not changes:
            raise CommandError(f"{args.id}: no group or change of that id in {path} (ids change when a group does)")
        stamp = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
        try:
            marks = [
                Acknowledgement(c, args.status, args.note, args.by or getpass.getuser(), stamp, args.fixed_in)
                for c in changes
            ]
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        store.acknowledge(marks)
    print(f"{args.id}: {len(marks)} changes {marks[0].text}")
    return 0


def _changes_of(report: dict, wanted: str) -> list[str]:
    """The change ids a group or change id of a regressions.json stands for."""
    if any(c.get("id") == wanted for c in report.get("changes") or ()):
        return [wanted]
    for group in report.get("groups") or ():
        if group.get("id") == wanted:
            return list(group.get("changeIds") or ())
    return []


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
    p.add_argument(
        "--bisection",
        type=Path,
        action="append",
        default=[],
        metavar="FILE",
        help="a verdict `bisect` wrote (repeatable): shown with its group on the page and in the JSON",
    )
    _detection_arguments(p)


def _detection_arguments(p: argparse.ArgumentParser) -> None:
    """The detection settings, the same for `regressions` and `site` (and
    `report`, its old name): one option per setting that
    detection.settings declares, with its help and default (the default applies where it is not given)."""
    from kernelindex_pipeline.detection.settings import SETTINGS

    for setting in SETTINGS:
        p.add_argument(setting.option, type=setting.type, help=setting.help_with_default.replace("%", "%%"))
    p.add_argument(
        "--liger-git",
        metavar="DIR",
        default=liger_clone(),
        help="a clone of Liger-Kernel (git clone --filter=blob:none --bare https://github.com/linkedin/Liger-Kernel "
        "DIR): changes name the commits between their runs, runs are ordered by their code "
        "(default: $KERNELINDEX_LIGER_GIT, else DAGSTER_HOME/liger-git that the import commands clone; without "
        "one, no commits are named)",
    )
    p.add_argument(
        "--judgement-store",
        type=Path,
        metavar="FILE",
        help="keep each series' judgement in FILE (created when missing) and reuse it next time where the "
        "series' inputs are unchanged: a repeated detection judges only what changed (default: none, every "
        "series is judged)",
    )


def _detect_and_attribute(
    args: argparse.Namespace,
    settings,
    *,
    records: list[Path] | None = None,
    manifests: Iterable[dict] | None = None,
    marks: list[dict] | None = None,
):
    """Detection (each records file one source run, or the runs of a catalogue) with Liger's attribution and
    the catalogue's acknowledgements (`liger.attribution.detect_and_attribute`); what the attribution could not
    use (the clone, a commit) is printed as a note, detection goes on. With --judgement-store, series whose
    inputs are unchanged since the stored detection are not judged again."""
    from kernelindex_pipeline.liger.attribution import detect_and_attribute

    report, notes = detect_and_attribute(
        records if records is not None else (manifests or []),
        settings,
        args.liger_git,
        from_files=records is not None,
        judgement_store=args.judgement_store,
        marks=marks,
    )
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    print(f"detection: {report.judgements.line()}")
    return report


def _detection_settings(args: argparse.Namespace):
    from kernelindex_pipeline.detection.settings import SETTINGS, DetectionSettings

    given = {s.name: getattr(args, s.name) for s in SETTINGS}
    try:
        return DetectionSettings(**{name: value for name, value in given.items() if value is not None})
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _bisections(files: list[Path]) -> dict[str, dict]:
    """Group id -> a bisection's JSON (the later file wins for one group)."""
    found = {}
    for path in files:
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise CommandError(f"--bisection {path}: {exc}") from None
        group = (document.get("plan") or {}).get("group") if isinstance(document, dict) else None
        if not group:
            raise CommandError(f"--bisection {path}: not a bisection of a regressions group (its plan names no group)")
        found[str(group)] = document
    return found


def _regressions(args: argparse.Namespace) -> int:
    from kernelindex_pipeline.detection.changes import RegressionInputError
    from kernelindex_pipeline.reporting.regressions_page import write_regressions

    settings = _detection_settings(args)
    try:
        if args.records:
            report = _detect_and_attribute(args, settings, records=args.records)
        else:
            from kernelindex_pipeline.catalogue.store import CatalogueStore

            with CatalogueStore.open(catalogue_url(args.catalogue), read_only=True) as store:
                report = _detect_and_attribute(
                    args, settings, manifests=store.manifests(), marks=store.acknowledgements()
                )
    except (RegressionInputError, ValueError) as exc:
        raise CommandError(str(exc)) from None
    report.bisections = _bisections(args.bisection)
    paths = write_regressions(report, args.out)
    print(report.summary())
    print(f"wrote {paths.json} and {paths.page}")
    return 0


COMMANDS: dict[str, Command] = {
    "export": (
        "export the catalogue: JSON Lines + manifest file, and a YAML submission bundle",
        _export_arguments,
        _export,
    ),
    "site": (
        "the interactive static site (landing page, a page per kernel, regressions) of records files or a catalogue",
        _site_arguments,
        _site,
    ),
    # the matplotlib report became the site (docs/changelog.md): the old name builds the site, so scripts keep working
    "report": (
        "the same as `site` (the static report became the interactive site): builds the site in DIR",
        _site_arguments,
        _site,
    ),
    "serve": (
        "serve the catalogue's site over HTTP on this machine (what the Dagster UI links to)",
        _serve_arguments,
        _serve,
    ),
    "acknowledge": (
        "mark a regression group (or change) as acknowledged, expected or fixed in a commit",
        _acknowledge_arguments,
        _acknowledge,
    ),
    "regressions": (
        "change points over every run, host effects taken out: regressions.json + a page",
        _regressions_arguments,
        _regressions,
    ),
}
