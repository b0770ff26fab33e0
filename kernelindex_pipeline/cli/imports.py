"""The import commands, import-history and import-ci: real runs through Dagster into the catalogue."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from kernelindex_pipeline.cli.errors import Command, CommandError, UsageError
from kernelindex_pipeline.home import (
    LIGER_CLONE_DIR,
    LIGER_GIT_ENV,
    LIGER_URL_ENV,
    SITE_DIR,
    liger_clone,
    prepared_dagster_home,
)


def _import_options(p: argparse.ArgumentParser) -> None:
    """The options both import commands take."""
    p.add_argument(
        "--wait",
        action="store_true",
        help="when the import added records, also wait for the catalogue automation's refresh of export, "
        "regressions, coverage and report, with a progress line (default: return when the import's own runs end; "
        "the refresh runs on its own on the dagster-daemon and shows in the UI)",
    )
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
    _import_options(p)


def _import_ci_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "locators",
        nargs="*",
        metavar="LOCATOR",
        help="Liger CI results CSVs: https URLs (e.g. https://raw.githubusercontent.com/linkedin/Liger-Kernel/"
        "gh-pages/benchmarks/<dir>/benchmark.csv) or local paths. None: every run Liger's gh-pages lists "
        "(benchmarks/commits.txt), or, where that cannot be read, the snapshot shipped with the package",
    )
    p.add_argument(
        "--snapshot",
        action="store_true",
        help="import the snapshot of Liger's CI results shipped with the package (eleven runs, offline)",
    )
    _import_options(p)


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


def _liger_clone_line(home: Path) -> str:
    """Make or refresh DAGSTER_HOME/liger-git, the blob-less Liger clone attribution reads (unless the
    operator gives their own, or says none), before the import's runs: its refresh names commits then.
    Returns the one line that says what happened; a clone that cannot be made is that line, never an error."""
    from kernelindex_pipeline.liger.source_history import LIGER_URL, SourceHistoryError, clone_blobless

    if os.environ.get(LIGER_GIT_ENV):
        return f"Liger clone: {os.environ[LIGER_GIT_ENV]} ({LIGER_GIT_ENV})"
    url = os.environ.get(LIGER_URL_ENV) or LIGER_URL
    if url == "none":
        return f"Liger clone: none ({LIGER_URL_ENV}=none): changes name no commits"
    try:
        return f"Liger clone: {clone_blobless(home / LIGER_CLONE_DIR, url)}"
    except SourceHistoryError as error:
        kept = " (the one made before is used)" if liger_clone(home) else "; changes name no commits"
        return f"Liger clone: cannot clone or refresh it: {error}{kept}"


def _run_import(args: argparse.Namespace, run) -> int:
    """Run one import command against the instance under DAGSTER_HOME and print its summary."""
    import logging
    import warnings

    from dagster import BetaWarning, PreviewWarning

    home = prepared_dagster_home()
    if not args.verbose:
        # Dagster's own notices are for the code's author; the operator's output is the summary.
        warnings.filterwarnings("ignore", category=BetaWarning)
        warnings.filterwarnings("ignore", category=PreviewWarning)
        logging.getLogger("dagster").setLevel(logging.WARNING)
    from kernelindex_pipeline.defs.import_daemon import clean_up_after_dead_command
    from kernelindex_pipeline.defs.import_plan import UnknownPartitions
    from kernelindex_pipeline.defs.instance import local_instance
    from kernelindex_pipeline.defs.run_control import LaunchError, ui_hint

    print(f"DAGSTER_HOME={home}", file=sys.stderr)
    print(_liger_clone_line(home), file=sys.stderr, flush=True)
    try:
        with local_instance(home) as instance:
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
    site = home / SITE_DIR
    if args.wait:
        from kernelindex_pipeline.reporting.regressions_page import JSON_NAME, answer_lines

        lines = answer_lines(site / JSON_NAME)
        for line in lines:
            print(line, flush=True)
        if lines and liger_clone(home) is None:
            print(
                "  (no Liger clone: changes name no commits; give one: git clone --filter=blob:none --bare "
                f"https://github.com/linkedin/Liger-Kernel DIR, then {LIGER_GIT_ENV}=DIR)",
                flush=True,
            )
    if (site / "index.html").is_file():
        print(
            f"the site: {site / 'index.html'} (over HTTP: DAGSTER_HOME={home} kernelindex-pipeline serve)",
            file=sys.stderr,
        )
    else:  # the refresh that writes it runs on the daemon; without --wait it may come later
        print(
            f"the site will be in {site} once the catalogue refresh ran (then: kernelindex-pipeline serve)",
            file=sys.stderr,
        )
    return 0 if summary.ok else 1


def _import_history(args: argparse.Namespace) -> int:
    """Every partition of the newest history through Dagster, into the instance under DAGSTER_HOME."""
    partitions = _checked_partitions(args.partition)  # all of them, before anything is read or created
    from kernelindex_pipeline.defs.launch import import_history

    return _run_import(
        args,
        lambda instance, home, log, report: import_history(
            instance, home, partitions=partitions or None, verbose=args.verbose, wait=args.wait, log=log, report=report
        ),
    )


def _import_ci(args: argparse.Namespace) -> int:
    """Liger CI result files through Dagster: partitions whose files changed are imported, others not."""
    from kernelindex_pipeline.defs.launch import import_ci
    from kernelindex_pipeline.imports.fetch import FetchError, check_locator_syntax
    from kernelindex_pipeline.liger.ci_snapshot import SnapshotError, resolve_locators

    if args.locators and args.snapshot:
        raise UsageError("give LOCATORs or --snapshot, not both")
    for locator in args.locators:  # a malformed locator is a usage error, before anything is created
        try:
            check_locator_syntax(locator)
        except FetchError as error:
            raise UsageError(str(error)) from None

    def run(instance, home, log, report):
        try:
            locators = args.locators or resolve_locators(home, log, snapshot=args.snapshot)
        except SnapshotError as error:
            raise CommandError(str(error)) from None
        return import_ci(instance, home, locators, verbose=args.verbose, wait=args.wait, log=log, report=report)

    return _run_import(args, run)


COMMANDS: dict[str, Command] = {
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
}
