"""The docs say what the code does where a test can tell: every command's synopsis in docs/reference/cli.md
names exactly the options its parser takes, and every link of the README resolves (mkdocs checks the
site's own links: tests/test_lint.py)."""

from __future__ import annotations

import argparse
import re

import pytest

from kernelindex_pipeline.cli import PROG, build_parser
from tests.support import ROOT

CLI_PAGE = ROOT / "docs" / "reference" / "cli.md"


def _parsers() -> dict[str, argparse.ArgumentParser]:
    (sub,) = (a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _synopses() -> dict[str, str]:
    """Command -> its synopsis on the page: the line `kernelindex-pipeline CMD ...` of the page's first code
    block and the lines after it that continue it (they start with `[`, `(` or `|`); the text after two spaces
    on a one-line synopsis is its description."""
    block = CLI_PAGE.read_text("utf-8").split("```", 2)[1]
    synopses: dict[str, str] = {}
    current = None
    for line in block.splitlines():
        if line.startswith(PROG + " "):
            head = re.split(r"\s{2,}", line[len(PROG) + 1 :])[0]
            current = head.split()[0]
            assert current not in synopses, f"{current} has two synopses on the page"
            synopses[current] = head
        elif current and line.strip()[:1] in "[(|" and line.strip():
            synopses[current] += " " + line.strip()
        else:
            current = None
    return synopses


def _options(parser: argparse.ArgumentParser) -> list[tuple[str, ...]]:
    """Each option the command takes, as its option strings (`-v`, `--verbose`), help and hidden ones left out."""
    return [
        tuple(action.option_strings)
        for action in parser._actions
        if action.option_strings and action.help != argparse.SUPPRESS and "--help" not in action.option_strings
    ]


def test_the_cli_page_has_a_synopsis_of_every_command_and_of_no_other():
    assert set(_synopses()) == set(_parsers()) - {"report"}  # `report` is `site`'s old name, said under site


@pytest.mark.parametrize("command", sorted(set(_parsers()) - {"report"}))
def test_a_command_synopsis_names_exactly_the_options_its_parser_takes(command):
    synopsis, parser = _synopses()[command], _parsers()[command]
    written = set(re.findall(r"(?<![\w-])(--?[a-z][a-z-]*)", synopsis))
    taken = _options(parser)
    assert [o for o in taken if not written & set(o)] == [], f"{command}: options missing from docs/reference/cli.md"
    assert written - {s for o in taken for s in o} == set(), f"{command}: docs/reference/cli.md names options it lacks"


def test_every_link_of_the_readme_resolves():
    text = (ROOT / "README.md").read_text("utf-8")
    targets = [t for t in re.findall(r"\]\(([^)]+)\)", text) if not re.match(r"[a-z]+:", t)]
    assert targets, "the README links its docs pages"
    missing = [t for t in targets if not (ROOT / t.split("#")[0]).exists()]
    assert missing == []
