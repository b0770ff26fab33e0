"""The `kernelindex-pipeline` command line: the same functions the Dagster assets call.

Exit codes: 0 ok, 1 invalid input or records, 2 usage. Errors are one line on stderr, never a
traceback (set KERNELINDEX_DEBUG=1 to see the traceback of an unexpected error).

One module per command group, each with its COMMANDS (name -> (help, add_arguments, run)): `records`
(transform, validate, schema), `imports` (import-history, import-ci), `catalogue` (export, report, site,
regressions), `bisect` (bisect). Adding a command is adding an entry there. Every heavy import (pandas, Dagster, the schema
validator) is made inside the command that needs it, so `--help` stays light (tests/cli/test_records.py).
"""

from __future__ import annotations

import argparse
import os
import sys

from kernelindex_pipeline.cli import bisect, catalogue, imports, records
from kernelindex_pipeline.cli.errors import Command, CommandError, UsageError
from kernelindex_pipeline.home import CATALOGUE_URL_ENV

__all__ = ["COMMANDS", "PROG", "CommandError", "UsageError", "build_parser", "main"]

PROG = "kernelindex-pipeline"
COMMANDS: dict[str, Command] = {**records.COMMANDS, **imports.COMMANDS, **catalogue.COMMANDS, **bisect.COMMANDS}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description="Liger-Kernel benchmarks -> kernelindex.dev records")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (help_text, add_arguments, _) in COMMANDS.items():
        add_arguments(sub.add_parser(name, help=help_text, description=help_text))
    return parser


def _expected_errors() -> tuple[type[BaseException], ...]:
    """Exceptions that mean bad input (exit 1), imported lazily so `--help` stays fast."""
    from kernelindex_pipeline.catalogue.store import CatalogueError as StoreError
    from kernelindex_pipeline.imports.archive import ArchiveError
    from kernelindex_pipeline.imports.fetch import FetchError
    from kernelindex_pipeline.liger import CsvFormatError, InvalidRecord, LigerCatalogueError
    from kernelindex_pipeline.liger.toolchain import ToolchainTimelineError

    errors: list[type[BaseException]] = [
        CommandError,
        LigerCatalogueError,
        CsvFormatError,
        InvalidRecord,
        ArchiveError,  # liger.release.ReleaseError is one
        StoreError,
        OSError,
        FetchError,  # liger.ci.CiSourceError is one
        ToolchainTimelineError,  # the packaged data file every detection reads
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
