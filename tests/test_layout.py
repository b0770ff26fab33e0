"""The tests mirror the package (issue 16 item 4): the tests of kernelindex_pipeline/<package>/<module>.py are
in tests/<package>/test_<module>.py (or test_<module>_<aspect>.py where one module has several files), the
helpers are in tests/support/, and only the cross-cutting tests stay at the top of tests/; the architecture page
lists every module and no other; and no two modules import each other, directly or around a cycle
(docs/concepts/architecture.md, "Layers"; the packages' order is import-linter's, run by tests/test_lint.py)."""

from __future__ import annotations

import re
import sys

import grimp

from tests.support import ROOT, TESTS

PACKAGE = ROOT / "kernelindex_pipeline"
# Tests of no one module: they stay at the top of tests/.
CROSS_CUTTING = {
    "test_bench_night",  # bench/night.py's nights and its comparison with a rebuild
    "test_bench_regressions_audit",  # bench/regressions_audit.py's labelled audit and its scoring
    "test_docs",  # the docs against the code (the CLI synopses, the README links)
    "test_first_command_browser",  # the README's first command to the site in Chromium (issue 30)
    "test_gpu_check_script",  # scripts/gpu_check end to end
    "test_history_publication",  # the real 0.8.5 history into both catalogues
    "test_layout",
    "test_lint",
    "test_properties",  # whole files through the importer
    "test_published_schemas",  # against KernelIndex's schemas
    "test_refresh_incremental",  # the catalogue-wide refresh's stages against a full rebuild (issue 33)
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


# The other direction: every module has a test file of its name (tests/<package>/test_<module>[_<aspect>].py),
# except these, each with where it is tested instead or why it needs no file of its own. An entry for a module
# that is gone, or that has a test file of its name now, fails too, so the list stays true.
UNTESTED_BY_NAME = {
    "cli/__main__.py": "thin: `python -m kernelindex_pipeline.cli`, run by every test that starts the CLI in a process",
    "defs/checks.py": "the chains' blocking checks: tests/defs/test_history_chain.py, test_sweep_chain.py",
    "defs/environment_resources.py": "tests/test_definitions.py",
    "defs/import_summary.py": "tests/defs/test_import_plan.py, test_import_daemon.py",
    "defs/launch.py": "tests/defs/test_import_daemon.py, tests/cli/test_imports.py",
    "defs/partitions.py": "tests/defs/test_chain_sensors.py, test_ci_chain.py",
    "defs/partitions_registered.py": "tests/defs/test_chain_sensors.py",
    "defs/sources.py": "thin: the list of the three chains (tests/test_definitions.py)",
    "detection/changepoints.py": "tests/detection/test_detect.py (the property tests, the t distribution)",
    "detection/changes.py": "the result model: tests/detection/test_detect.py, tests/reporting/test_regressions_page.py",
    "detection/document.py": "regressions.json: tests/detection/test_detect.py, test_judgements.py",
    "detection/host_correction.py": "tests/detection/test_detect.py (launch-bound series, host effects reported)",
    "detection/host_changes.py": "tests/liger/test_attribution_windows.py (hostChanges)",
    "detection/run_facts.py": "tests/detection/test_detect.py (adapters), tests/liger/test_identity.py",
    "detection/settings.py": "tests/cli/test_records.py (the options), tests/defs/test_resources.py (resource, JSON)",
    "imports/archive.py": "tests/liger/test_release.py",
    "imports/coverage.py": "tests/liger/test_catalogue_coverage.py, tests/reporting/test_site.py",
    "imports/fetch.py": "tests/liger/test_ci.py, tests/cli/test_imports.py",
    "imports/output.py": "tests/cli/test_records.py",
    "imports/result.py": "thin: a dataclass of an import's result, made by every import",
    "home.py": "thin: the defaults of DAGSTER_HOME and its files, read by every CLI and Dagster test",
    "lazy_exports.py": "thin: PEP 562 re-exports, used by every package's __init__",
    "liger/builders.py": "tests/liger/test_normalize.py, test_catalogue_profiles.py (every record it builds)",
    "liger/harness.py": "tests/liger/test_attribution_windows.py",
    "liger/importer.py": "thin: the import path every importer test calls (tests/liger/test_normalize.py, ...)",
    "liger/kernel_sources.py": "tests/liger/test_attribution.py, test_source_history.py",
    "liger/report.py": "tests/liger/test_normalize.py",
    "liger/run_facts.py": "tests/detection/test_detect.py, tests/liger/test_identity.py",
    "liger/runs.py": "the importer's fast path: every import test's BenchmarkRuns (tests/liger/test_normalize.py)",
    "liger/sample_statistics.py": "tests/sweep/test_samples.py, test_rounds.py",
    "liger/sentinel.py": "tests/sweep/test_sentinel.py",
    "records/metrics.py": "thin: the memory-run contract's names, read by every detection and site test",
    "records/units.py": "tests/records/test_canonical.py, tests/catalogue/test_kernelindex.py",
    "redaction.py": "tests/catalogue/test_store_redaction.py",
    "reporting/site_files.py": "tests/reporting/test_site_catalogue.py, tests/cli/test_catalogue_report.py",
    "sweep/discovery.py": "tests/sweep/test_run.py, tests/liger/test_release.py",
    "sweep/gpu_state.py": "tests/sweep/test_rounds.py",
    "sweep/process.py": "tests/sweep/test_contain.py, test_run.py (every script a sweep runs)",
    "sweep/sample_hook/sitecustomize.py": "tests/sweep/test_samples.py (in the scripts' interpreter)",
    "sweep/sentinel_program.py": "tests/sweep/test_run.py (the sentinel every sweep runs)",
    "sweep/tp.py": "tests/sweep/test_rounds.py",
    "sweep/workdir.py": "tests/sweep/test_run.py, test_environment.py",
}


def _has_test_file(module: str) -> bool:
    """tests/<package>/test_<module>.py or test_<module>_<aspect>.py (top-level modules: tests/test_<module>...)."""
    parts = module.split("/")
    folder = TESTS / parts[0] if len(parts) > 1 else TESTS
    stem = parts[-1].removesuffix(".py")
    return any(folder.glob(f"test_{stem}.py")) or any(folder.glob(f"test_{stem}_*.py"))


def test_every_module_has_a_test_file_of_its_name_or_says_where_it_is_tested():
    modules = _package_modules()
    missing = sorted(m for m in modules if not _has_test_file(m) and m not in UNTESTED_BY_NAME)
    assert not missing, (
        "give each module tests/<package>/test_<module>.py, or an entry in UNTESTED_BY_NAME saying where it is "
        "tested: " + ", ".join(missing)
    )
    stale = sorted(m for m in UNTESTED_BY_NAME if m not in modules or _has_test_file(m))
    assert not stale, "UNTESTED_BY_NAME names modules that are gone or have a test file now: " + ", ".join(stale)


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


def _module_cycles(package: str) -> list[list[str]]:
    """The import cycles among `package`'s modules (strongly connected components of more than one module,
    each sorted), type-checking imports included: a cycle there is still two modules that need each other.
    grimp builds the graph; the components are Tarjan's (grimp offers no cycle listing of its own)."""
    graph = grimp.build_graph(package, cache_dir=None)
    imports = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in sorted(graph.modules)}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in imports[module]:
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in imports:
        if module not in index:
            visit(module)
    return cycles


def test_no_two_modules_of_the_package_import_each_other():
    cycles = _module_cycles("kernelindex_pipeline")
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_the_cycle_finder_finds_a_cycle_through_a_type_checking_import(tmp_path, monkeypatch):
    package = tmp_path / "cyclic"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from cyclic import b\n")
    (package / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from cyclic import c\n")
    (package / "c.py").write_text("import cyclic.a\n")
    (package / "d.py").write_text("import cyclic.a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert _module_cycles("cyclic") == [["cyclic.a", "cyclic.b", "cyclic.c"]]
    sys.modules.pop("cyclic", None)
