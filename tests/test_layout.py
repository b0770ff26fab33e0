"""The tests mirror the package (issue 16 item 4): the tests of kernelindex_pipeline/<package>/<module>.py are
in tests/<package>/test_<module>.py (or test_<module>_<aspect>.py where one module has several files), the
helpers are in tests/support/, and only the cross-cutting tests stay at the top of tests/."""

from __future__ import annotations

import re

from tests.support import ROOT, TESTS

PACKAGE = ROOT / "kernelindex_pipeline"
# Tests of no one module: they stay at the top of tests/.
CROSS_CUTTING = {
    "test_bench_night",  # bench/night.py's nights and its comparison with a rebuild
    "test_docs",  # the docs against the code (the CLI synopses, the README links)
    "test_first_command_browser",  # the README's first command to the site in Chromium (issue 30)
    "test_gpu_check_script",  # scripts/gpu_check end to end
    "test_history_publication",  # the real 0.8.5 history into both catalogues
    "test_layout",
    "test_lint",
    "test_properties",  # whole files through the importer
    "test_published_schemas",  # against KernelIndex's schemas
    "test_seed_bundles",  # reference parity
    "test_ui_browser",  # the three chains in the Dagster UI
    "test_ui_chain_never_imported",  # the same UI, before any import
}
NOT_TESTS = {"support", "fixtures", "artifacts", "__pycache__"}


def _modules(folder) -> set[str]:
    return {path.stem for path in folder.glob("*.py") if path.stem != "__init__"}


def _tested_module(name: str, modules: set[str]) -> bool:
    """test_<module> or test_<module>_<aspect>."""
    subject = name.removeprefix("test_")
    return any(subject == module or subject.startswith(module + "_") for module in modules)


def test_each_test_folder_is_a_package_of_the_code_and_each_file_names_its_module():
    misplaced = []
    for folder in sorted(p for p in TESTS.iterdir() if p.is_dir() and p.name not in NOT_TESTS):
        code = PACKAGE / folder.name
        if not (code / "__init__.py").is_file():
            misplaced.append(f"tests/{folder.name}/: kernelindex_pipeline has no package {folder.name}")
            continue
        if not (folder / "__init__.py").is_file():
            misplaced.append(f"tests/{folder.name}/__init__.py is missing (test modules are packages)")
        modules = _modules(code)
        for test in sorted(folder.glob("test_*.py")):
            if not _tested_module(test.stem, modules):
                misplaced.append(
                    f"tests/{folder.name}/{test.name}: no module kernelindex_pipeline/{folder.name}/ of that name"
                )
    assert not misplaced, "name test files after the module they test:\n" + "\n".join(misplaced)


def test_the_top_of_tests_holds_only_cross_cutting_tests_and_the_package_own_modules():
    top_modules = _modules(PACKAGE)
    misplaced = [
        f"tests/{path.name}"
        for path in sorted(TESTS.glob("*.py"))
        if path.stem not in {"__init__", "conftest"}
        and path.stem not in CROSS_CUTTING
        and not (path.stem.startswith("test_") and _tested_module(path.stem, top_modules))
    ]
    assert not misplaced, (
        "a test of kernelindex_pipeline/<package>/<module>.py goes to tests/<package>/test_<module>.py, a helper "
        "to tests/support/, a cross-cutting test into CROSS_CUTTING here: " + ", ".join(misplaced)
    )


ARCHITECTURE = ROOT / "docs" / "concepts" / "architecture.md"


def _architecture_page_modules() -> set[str]:
    """The modules docs/concepts/architecture.md lists under "## The packages": each `### `pkg/`` heading
    (or "### Top level") opens a package, and each list item names its modules in backticks before the colon."""
    text = ARCHITECTURE.read_text("utf-8")
    section = text.split("\n## The packages\n", 1)[1].split("\n## ", 1)[0]
    listed, package = set(), None
    for line in section.splitlines():
        heading = re.fullmatch(r"### (?:Top level|`([a-z_]+)/`)", line)
        if heading:
            package = heading[1] or ""
        elif line.startswith("### "):
            package = None  # a subsection that lists no modules (data files)
        elif line.startswith("- `") and package is not None:
            names = line[2:].split(":", 1)[0]
            for name in re.findall(r"`([a-z0-9_/]+\.py)`", names):
                listed.add(f"{package}/{name}" if package else name)
    return listed


def _package_modules() -> set[str]:
    return {
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*.py")
        if path.name != "__init__.py" and "data" not in path.relative_to(PACKAGE).parts
    }


def test_the_architecture_page_lists_every_module_of_the_package():
    unlisted = sorted(_package_modules() - _architecture_page_modules())
    assert not unlisted, "docs/concepts/architecture.md does not list: " + ", ".join(unlisted)


def test_every_module_the_architecture_page_lists_exists():
    missing = sorted(_architecture_page_modules() - _package_modules())
    assert not missing, "docs/concepts/architecture.md lists modules that are not in the package: " + ", ".join(missing)
