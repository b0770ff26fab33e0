"""Lay the tests out as the package is laid out (issue 16 item 4), on whatever tests/ holds now.

    .venv/bin/python scripts/dev/mirror_tests.py            # move, rewrite, ruff; prints what it did
    .venv/bin/python scripts/dev/mirror_tests.py --check    # only say which test files have no place
    .venv/bin/python scripts/dev/mirror_tests.py --compare BEFORE AFTER   # `pytest --collect-only -q` outputs

--compare maps each test id of BEFORE (collected before the move) to its new file and says whether AFTER
(collected after) holds exactly those ids.

`tests/test_<package>_<module>.py` becomes `tests/<package>/test_<module>.py` (packages with __init__.py,
so tests/liger/test_coverage.py and tests/sweep/test_coverage.py can both exist); the helpers go to one
package, tests/support/, with the one FIXTURES / ROOT constant; the record factories (conftest's seed clones,
the detection test's hand-shaped run, reporting/example_records.py's SampleCatalogue) become one module,
tests/support/factories.py. Test functions and assertions are not touched: only imports, the few module
constants that found files relative to the test file, and the paths that documents name.

A one-off: it runs on a moving main (others land tests until the move), so every rewrite that expects a
text fails loudly when the text is not there, and a test file nobody placed stops it before anything moves.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"

# old tests/<name>.py -> new path under tests/ (a name not listed here stops the script).
MOVES = {
    # records/
    "test_canonical": "records/test_canonical",
    "test_io": "records/test_io",
    "test_names": "records/test_names",
    "test_records_jsnumber": "records/test_jsnumber",
    "test_schema": "records/test_schema",
    # catalogue/
    "test_catalogue_export": "catalogue/test_export",
    "test_catalogue_processes": "catalogue/test_store_processes",
    "test_catalogue_redaction": "catalogue/test_store_redaction",
    "test_catalogue_store": "catalogue/test_store",
    "test_catalogue_tables": "catalogue/test_tables",
    "test_kernelindex_export": "catalogue/test_kernelindex",
    # cli/ (one module per command group: records, imports, catalogue; errors)
    "test_cli": "cli/test_records",
    "test_cli_bad_input": "cli/test_errors",
    "test_cli_operations": "cli/test_imports",
    "test_reporting_cli": "cli/test_catalogue_report",
    # defs/
    "test_dagster_automation": "defs/test_chain_sensors",
    "test_dagster_catalogue_assets": "defs/test_catalogue_assets",
    "test_dagster_catalogue_refresh": "defs/test_catalogue_assets_refresh",
    "test_dagster_daemon": "defs/test_import_daemon",
    "test_dagster_history": "defs/test_history_chain",
    "test_dagster_import": "defs/test_run_control",
    "test_dagster_launch": "defs/test_import_plan",
    "test_dagster_secrets": "defs/test_resources",
    "test_dagster_sweep": "defs/test_sweep_chain",
    "test_pipes_messages": "defs/test_pipes_messages",
    # the package's own top-level modules
    "test_dagster_definitions": "test_definitions",
    "test_dagster_instance_init": "test_home",
    # liger/
    "test_efficiency_costs": "liger/test_costs",
    "test_liger_attribution": "liger/test_attribution",
    "test_liger_catalogue": "liger/test_catalogue",
    "test_liger_ci": "liger/test_ci",
    "test_liger_coverage": "liger/test_catalogue_coverage",
    "test_liger_csv": "liger/test_csv",
    "test_liger_identity": "liger/test_identity",
    "test_liger_normalize": "liger/test_normalize",
    "test_liger_parallel": "liger/test_parallel",
    "test_liger_partition": "liger/test_partition",
    "test_liger_profiles": "liger/test_catalogue_profiles",
    "test_liger_release": "liger/test_release",
    "test_liger_sweep_formats": "liger/test_measured_rows",
    # reporting/
    "test_efficiency": "reporting/test_efficiency",
    "test_efficiency_browser": "reporting/test_efficiency_browser",
    "test_regressions_browser": "reporting/test_regressions_page_browser",
    "test_reporting_browser": "reporting/test_site_history_browser",
    "test_reporting_ci_browser": "reporting/test_site_ci_browser",
    "test_reporting_memory": "reporting/test_site_memory",
    "test_reporting_regressions": "reporting/test_regressions",
    "test_reporting_series": "reporting/test_series",
    "test_site": "reporting/test_site",
    "test_site_catalogue": "reporting/test_site_catalogue",
    # sweep/
    "test_liger_0_8_5_dispatcher": "sweep/test_backends_liger_0_8_5",
    "test_sweep_artifact_store": "sweep/test_artifact_store",
    "test_sweep_backends": "sweep/test_backends",
    "test_sweep_containment": "sweep/test_contain",
    "test_sweep_coverage": "sweep/test_coverage",
    "test_sweep_data_csv": "sweep/test_data_csv",
    "test_sweep_environment": "sweep/test_environment",
    "test_sweep_host": "sweep/test_host",
    "test_sweep_k8s": "sweep/test_k8s",
    "test_sweep_outcomes": "sweep/test_outcomes",
    "test_sweep_pipes": "sweep/test_pipes_entry",
    "test_sweep_protocol": "sweep/test_protocol",
    "test_sweep_rounds": "sweep/test_rounds",
    "test_sweep_run": "sweep/test_run",
    "test_sweep_samples": "sweep/test_samples",
    "test_sweep_sentinel": "sweep/test_sentinel",
    # cross-cutting: they stay in tests/
    "test_history_publication": "test_history_publication",
    "test_lint": "test_lint",
    "test_properties": "test_properties",
    "test_published_schemas": "test_published_schemas",
    "test_seed_bundles": "test_seed_bundles",
    "test_sweep_gpu_check": "test_gpu_check_script",
    "test_ui_browser": "test_ui_browser",
    "test_ui_chain_never_imported": "test_ui_chain_never_imported",
}
# helpers: tests/<name>.py -> tests/support/<name>.py
HELPERS = ("dagster_support", "liger_rows", "standin_release", "kernelindex_scenarios", "liger_git", "ui_support")
EXAMPLE_RECORDS = "kernelindex_pipeline/reporting/example_records.py"
FACTORIES = "tests/support/factories.py"

# The conftest autouse check of Dagster's instance context ran for modules named *dagster* or *pipes*; after
# the move those modules are these (checked below: the same modules, no more, no fewer).
DAGSTER_MODULES = ("tests.defs.", "tests.test_definitions", "tests.test_home", "tests.sweep.test_pipes_entry")


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True, text=True).stdout


def replace_once(text: str, old: str, new: str, where: str) -> str:
    if text.count(old) != 1:
        sys.exit(f"mirror_tests: expected one {old[:70]!r} in {where}, found {text.count(old)}: update the script")
    return text.replace(old, new)


def unplaced() -> list[str]:
    names = {p.stem for p in TESTS.glob("*.py")} - {"conftest", "__init__"}
    return sorted(names - set(MOVES) - set(HELPERS))


def check_dagster_rule() -> None:
    old = {name for name in MOVES if "dagster" in name or "pipes" in name}
    new = {name for name, target in MOVES.items() if ("tests." + target.replace("/", ".")).startswith(DAGSTER_MODULES)}
    if old != new:
        sys.exit(f"mirror_tests: the Dagster context check would change its modules: {sorted(old ^ new)}")


def move_files() -> None:
    for package in {target.split("/")[0] for target in MOVES.values() if "/" in target} | {"support"}:
        (TESTS / package).mkdir(exist_ok=True)
        init = TESTS / package / "__init__.py"
        if not init.exists():
            init.write_text("")
    (TESTS / "__init__.py").write_text("")
    for old, new in MOVES.items():
        if old != new and (TESTS / f"{old}.py").exists():
            git("mv", f"tests/{old}.py", f"tests/{new}.py")
    for helper in HELPERS:
        git("mv", f"tests/{helper}.py", f"tests/support/{helper}.py")
    git("mv", EXAMPLE_RECORDS, FACTORIES)


SUPPORT_INIT = '''"""What the tests share, and where their files are.

factories.py: every BenchmarkRun a test builds (seed manifests and their clones, the hand-shaped runs of
the detection tests, SampleCatalogue's runs with the records they reference); liger_rows.py: Liger CSV
rows; standin_release.py: a stand-in Liger release, torch and nvidia-smi; dagster_support.py: the history
chain's local releases; kernelindex_scenarios.py: the KernelIndex export's scenarios; liger_git.py: a
synthetic Liger git history; ui_support.py: Chromium for the browser tests; stored_files.py: the
session's artifact store.
"""

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent  # the repository
FIXTURES = TESTS / "fixtures"  # small slices of real data, committed
'''

STORED_FILES = '''"""The artifact store's files of this test session (conftest's `artifact_store` fixture points the store at it)."""

from __future__ import annotations

from pathlib import Path

'''

CONFTEST_FACTORIES = '''@pytest.fixture(scope="session")
def catalogue_records() -> dict[str, dict]:
    """The seed bundles' manifests, digest -> manifest (3 CSV rows x 7 kinds; shared objects once)."""
    bundles = json.loads((FIXTURES / "seed-bundles.json").read_text(encoding="utf-8"))
    records: dict[str, dict] = {}
    for bundle in bundles:
        for entry in bundle["manifests"]:
            records.setdefault(entry["digest"], entry["manifest"])
    return records


@pytest.fixture(scope="session")
def synthetic_runs(catalogue_records):
    """`synthetic_runs(count, start=0) -> dict[digest, manifest]`: BenchmarkRuns cloned from the seed
    runs, each observed one second later than the previous one (so a new externalId and a new
    digest), numbered from `start` so that disjoint ranges give disjoint runs."""
    from kernelindex_pipeline.records.canonical import digest_of

    seeds = [m for m in catalogue_records.values() if m["kind"] == "BenchmarkRun"]
    epoch = datetime(2025, 1, 1, tzinfo=UTC)

    def make(count: int, start: int = 0) -> dict[str, dict]:
        runs: dict[str, dict] = {}
        for number in range(start, start + count):
            run = copy.deepcopy(seeds[number % len(seeds)])
            observed = epoch + timedelta(seconds=number)
            stamp = observed.strftime("%Y-%m-%d-%H-%M-%S")
            native = run["spec"]["sourceNative"]
            native["externalId"] = native["externalId"].rsplit("/", 1)[0] + "/" + stamp
            run["spec"]["observedAt"] = observed.strftime("%Y-%m-%dT%H:%M:%S.000Z")
            run["metadata"]["name"] = (run["metadata"]["name"][:80] + "-" + stamp)[:100]
            runs[digest_of(run)] = run
        assert len(runs) == count
        return runs

    return make
'''

CONFTEST_FIXTURES_NOW = '''@pytest.fixture(scope="session")
def catalogue_records() -> dict[str, dict]:
    """The seed bundles' manifests, digest -> manifest (3 CSV rows x 7 kinds; shared objects once)."""
    return factories.seed_manifests()


@pytest.fixture(scope="session")
def synthetic_runs(catalogue_records):
    """`synthetic_runs(count, start=0) -> dict[digest, manifest]`: BenchmarkRuns cloned from the seed
    runs (factories.cloned_runs)."""
    return functools.partial(factories.cloned_runs, catalogue_records)
'''

FACTORIES_SEEDS = '''

# ----------------------------------------------------------------- the seed manifests and their clones


def seed_manifests() -> dict[str, dict]:
    """The seed bundles' manifests, digest -> manifest (3 CSV rows x 7 kinds; shared objects once)."""
    bundles = json.loads((FIXTURES / "seed-bundles.json").read_text(encoding="utf-8"))
    records: dict[str, dict] = {}
    for bundle in bundles:
        for entry in bundle["manifests"]:
            records.setdefault(entry["digest"], entry["manifest"])
    return records


def cloned_runs(seed_records: dict[str, dict], count: int, start: int = 0) -> dict[str, dict]:
    """`count` BenchmarkRuns (digest -> manifest) cloned from the seed runs, each observed one second later
    than the previous one (so a new externalId and a new digest), numbered from `start` so that disjoint
    ranges give disjoint runs."""
    seeds = [m for m in seed_records.values() if m["kind"] == "BenchmarkRun"]
    epoch = datetime(2025, 1, 1, tzinfo=UTC)
    runs: dict[str, dict] = {}
    for number in range(start, start + count):
        run = copy.deepcopy(seeds[number % len(seeds)])
        observed = epoch + timedelta(seconds=number)
        stamp = observed.strftime("%Y-%m-%d-%H-%M-%S")
        native = run["spec"]["sourceNative"]
        native["externalId"] = native["externalId"].rsplit("/", 1)[0] + "/" + stamp
        run["spec"]["observedAt"] = observed.strftime("%Y-%m-%dT%H:%M:%S.000Z")
        run["metadata"]["name"] = (run["metadata"]["name"][:80] + "-" + stamp)[:100]
        runs[digest_of(run)] = run
    assert len(runs) == count
    return runs


# ----------------------------------------------------------------- runs shaped for regression detection

'''

FACTORIES_IMPORTS = """import copy
import json
from datetime import UTC, datetime, timedelta

from tests.support import FIXTURES
"""


def dotted(target: str) -> str:
    return "tests." + target.replace("/", ".")


def make_support() -> None:
    (TESTS / "support" / "__init__.py").write_text(SUPPORT_INIT)
    conftest_path = TESTS / "conftest.py"
    conftest = conftest_path.read_text()
    stored = re.search(r"\ndef stored_file\(.*?\n(?=\n\n)", conftest, re.S)
    if not stored:
        sys.exit("mirror_tests: conftest.py has no stored_file(): update the script")
    (TESTS / "support" / "stored_files.py").write_text(STORED_FILES + stored.group(0).lstrip("\n") + "\n")
    conftest = conftest.replace(stored.group(0) + "\n\n", "")
    conftest = replace_once(conftest, CONFTEST_FACTORIES, CONFTEST_FIXTURES_NOW, "conftest.py")
    conftest = replace_once(conftest, 'FIXTURES = Path(__file__).parent / "fixtures"\n', "", "conftest.py")
    conftest = replace_once(
        conftest,
        '    if "dagster" not in request.module.__name__ and "pipes" not in request.module.__name__:\n',
        "    if not request.module.__name__.startswith(DAGSTER_MODULES):\n",
        "conftest.py",
    )
    conftest = replace_once(
        conftest,
        'POSTGRES_URL_ENV = "KERNELINDEX_TEST_POSTGRES_URL"\n',
        'POSTGRES_URL_ENV = "KERNELINDEX_TEST_POSTGRES_URL"\n'
        "# The modules that make Dagster instances in this process: the Dagster layer's, the definitions' and the\n"
        "# home's, and the sweep's Pipes entry point under PipesSubprocessClient.\n"
        f"DAGSTER_MODULES = {DAGSTER_MODULES!r}\n",
        "conftest.py",
    )
    conftest = replace_once(conftest, "import copy\n", "import functools\n", "conftest.py")
    conftest = replace_once(
        conftest, "import pytest\n", "import pytest\n\nfrom tests.support import factories\n", "conftest.py"
    )
    conftest = conftest.replace("from datetime import UTC, datetime, timedelta\n", "")
    conftest_path.write_text(conftest)

    regressions_path = TESTS / f"{MOVES['test_reporting_regressions']}.py"
    regressions = regressions_path.read_text()
    detection = re.search(r"\n\n\ndef run\(\n.*?\n(?=\n\ndef )", regressions, re.S)
    if not detection:
        sys.exit("mirror_tests: the detection tests have no run(): update the script")
    regressions = regressions.replace(detection.group(0), "")
    regressions = add_import(regressions, "from tests.support.factories import detection_run as run")
    regressions_path.write_text(regressions)

    factories_path = ROOT / FACTORIES
    factories = factories_path.read_text()
    factories = replace_once(
        factories,
        '"""Constructed benchmark manifests for tests and demos of the report and regression detection.\n',
        '"""Every BenchmarkRun the tests build: the seed manifests and their clones (`seed_manifests`, `cloned_runs`;\n'
        "conftest's `catalogue_records` and `synthetic_runs`), runs shaped for regression detection\n"
        "(`detection_run`), and constructed manifests of the report and detection (`SampleCatalogue`).\n",
        FACTORIES,
    )
    factories = replace_once(
        factories,
        "from .series import provider_table\n",
        "from kernelindex_pipeline.reporting.series import provider_table\n",
        FACTORIES,
    )
    factories = add_import(factories, FACTORIES_IMPORTS.rstrip("\n"))
    body = detection.group(0).replace("\ndef run(\n", "\ndef detection_run(\n", 1).lstrip("\n")
    factories = factories.rstrip("\n") + "\n" + FACTORIES_SEEDS + body + "\n"
    factories_path.write_text(factories)


def add_import(text: str, line: str) -> str:
    """`line` in the module's top import block (ruff's isort puts it in order afterwards)."""
    future = "from __future__ import annotations\n"
    if future in text:
        return text.replace(future, future + line + "\n", 1)
    first = re.search(r"^(import|from) ", text, re.M)
    return text[: first.start()] + line + "\n" + text[first.start() :]


HELPER_IMPORT = re.compile(r"^(\s*)from (" + "|".join(HELPERS) + r") import ", re.M)
TEST_IMPORT = re.compile(r"^(\s*)from (test_\w+) import ", re.M)
FILE_PATHS = {  # how a module found a file next to it -> the support constant (no depth counting)
    'Path(__file__).parent / "fixtures"': "FIXTURES",
    "Path(__file__).resolve().parents[1]": "ROOT",
    "Path(__file__).resolve().parent.parent": "ROOT",
    'Path(__file__).resolve().parent / "artifacts"': 'TESTS / "artifacts"',
}


def rewrite_test_module(path: Path) -> None:
    text = original = path.read_text()
    text = re.sub(
        r"^(\s*)from test_reporting_regressions import run$",
        r"\1from tests.support.factories import detection_run as run",
        text,
        flags=re.M,
    )
    text = TEST_IMPORT.sub(lambda m: f"{m.group(1)}from {dotted(MOVES[m.group(2)])} import ", text)
    text = re.sub(
        r"^(\s*)from kernelindex_scenarios import FIXTURES$", r"\1from tests.support import FIXTURES", text, flags=re.M
    )
    text = HELPER_IMPORT.sub(r"\1from tests.support.\2 import ", text)
    text = re.sub(
        r"^(\s*)import kernelindex_scenarios as scenarios$",
        r"\1from tests.support import kernelindex_scenarios as scenarios",
        text,
        flags=re.M,
    )
    text = re.sub(r"^(\s*)from conftest import stored_file$", r"\1from tests.support.stored_files import stored_file",
                  text, flags=re.M)  # fmt: skip
    text = text.replace(
        "from kernelindex_pipeline.reporting.example_records import", "from tests.support.factories import"
    )
    needed: set[str] = set()
    qualified = False
    for old, new in FILE_PATHS.items():
        name = new.split()[0]
        if old not in text:
            continue
        if re.search(rf"^{name} = {re.escape(old)}$", text, re.M):
            text = re.sub(rf"^{name} = {re.escape(old)}\n", "", text, flags=re.M)
        if re.search(rf"^{name} = {re.escape(old)}", text, re.M):  # the name means a folder below it here
            text = text.replace(old, "support." + new)
            qualified = True
        else:
            text = text.replace(old, new)
            needed.add(name)
    if qualified:
        text = add_import(text, "from tests import support")
    if needed:
        text = add_import(text, f"from tests.support import {', '.join(sorted(needed))}")
    if text != original:
        path.write_text(text)


DOCUMENTS = ("README.md", "docs", "scripts", "bench", "deploy", "kernelindex_pipeline", "tests", "pyproject.toml")
DOCUMENT_SUFFIXES = {".md", ".py", ".sh", ".ts", ".toml", ".yaml", ".yml", ".txt", ""}


def documents() -> list[Path]:
    files = []
    for entry in DOCUMENTS:
        path = ROOT / entry
        candidates = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        for candidate in candidates:
            relative = candidate.relative_to(ROOT).as_posix()
            if relative.startswith(("tests/artifacts/", "scripts/dev/mirror_tests.py")):
                continue
            if relative.startswith("tests/fixtures/") and candidate.suffix != ".md":
                continue  # the data, and Liger's own files, verbatim; the fixtures' own notes are ours
            if candidate.suffix in DOCUMENT_SUFFIXES and "__pycache__" not in relative:
                files.append(candidate)
    return files


def rewrite_documents() -> list[str]:
    """Every path a document names of a moved file, renamed."""
    renames = {f"tests/{old}.py": f"tests/{new}.py" for old, new in MOVES.items() if old != new}
    renames |= {f"tests/{helper}.py": f"tests/support/{helper}.py" for helper in HELPERS}
    renames |= {EXAMPLE_RECORDS: FACTORIES, "reporting/example_records.py": FACTORIES}
    renames |= {"reporting.example_records": "tests.support.factories"}
    pattern = re.compile("|".join(re.escape(old) for old in sorted(renames, key=len, reverse=True)))
    bare = {f"{old}.py": f"tests/{new}.py" for old, new in MOVES.items() if old != new}
    bare_pattern = re.compile(r"(?<![\w/.])(" + "|".join(re.escape(b) for b in bare) + r")")
    changed = []
    for path in documents():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        new = pattern.sub(lambda m: renames[m.group(0)], text)
        new = bare_pattern.sub(lambda m: bare[m.group(1)], new)
        if new != text:
            path.write_text(new, encoding="utf-8")
            changed.append(path.relative_to(ROOT).as_posix())
    return changed


README_TESTS = """tests/          mirrors the package: tests/<package>/test_<module>.py tests kernelindex_pipeline/<package>/
                <module>.py (several files for one module: test_<module>_<aspect>.py); the cross-cutting
                tests (lint and format, properties, seed bundles, published schemas, the history
                publication, scripts/gpu_check, the UI) at the top; support/ the shared helpers, with one
                FIXTURES constant and factories.py, the one place a test gets a BenchmarkRun from
"""


def rewrite_special_cases() -> None:
    readme_path = ROOT / "README.md"
    readme = readme_path.read_text(encoding="utf-8")
    readme = replace_once(
        readme,
        ";\n                example_records.py (constructed manifests for tests and demos)\n",
        "\n",
        "README.md",
    )
    architecture = readme.index("## Architecture")
    opening = readme.index("```\n", architecture)
    closing = readme.index("```\n", opening + 4)
    readme = readme[:closing] + README_TESTS + readme[closing:]
    readme_path.write_text(readme, encoding="utf-8")

    exports_path = ROOT / "scripts/kernelindex_acceptance/make_exports.py"
    exports = exports_path.read_text()
    exports = replace_once(
        exports,
        'sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))\n',
        "sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: tests.support\n",
        "make_exports.py",
    )
    exports = replace_once(
        exports,
        "import kernelindex_scenarios as scenarios  # noqa: E402\n",
        "from tests.support import kernelindex_scenarios as scenarios  # noqa: E402\n",
        "make_exports.py",
    )
    exports_path.write_text(exports)

    site_path = TESTS / f"{MOVES['test_site']}.py"
    site = site_path.read_text()
    site = replace_once(
        site,
        '        "import kernelindex_pipeline.definitions\\n"\n',
        '        f"sys.path.insert(0, {str(ROOT)!r})  # tests.support\\n"\n'
        '        "import kernelindex_pipeline.definitions\\n"\n',
        "the site test's fresh interpreter",
    )
    site_path.write_text(add_import(site, "from tests.support import ROOT"))


def ruff(*args: str) -> None:
    ruff_bin = ROOT / ".venv" / "bin" / "ruff"
    subprocess.run([str(ruff_bin), *args], cwd=ROOT, check=False)


def compare_collections(before: Path, after: Path) -> None:
    def ids(path: Path) -> set[str]:
        return {line.strip() for line in path.read_text().splitlines() if "::" in line}

    moved = set()
    for test_id in ids(before):
        file, rest = test_id.split("::", 1)
        moved.add(f"tests/{MOVES[file.removeprefix('tests/').removesuffix('.py')]}.py::{rest}")
    now = ids(after)
    print(f"mirror_tests: {len(ids(before))} tests before, {len(now)} after; moved ids missing after: "
          f"{sorted(moved - now)[:20]}; ids after that were not there: {sorted(now - moved)[:20]}")  # fmt: skip
    if moved != now:
        sys.exit(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="only list the test files that have no place")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    args = parser.parse_args()
    if args.compare:
        compare_collections(*args.compare)
        return
    missing = unplaced()
    if missing:
        sys.exit("mirror_tests: no place for " + ", ".join(f"tests/{m}.py" for m in missing) + ": add them to MOVES")
    check_dagster_rule()
    if args.check:
        print("mirror_tests: every test file has a place")
        return
    if (TESTS / "support").exists():
        sys.exit("mirror_tests: tests/support/ exists already: the move was made")
    move_files()
    make_support()
    for path in sorted(TESTS.rglob("*.py")):
        relative = path.relative_to(TESTS).as_posix()
        if not relative.startswith(("fixtures/", "artifacts/")) and relative != "support/__init__.py":
            rewrite_test_module(path)
    changed = rewrite_documents()
    rewrite_special_cases()
    ruff("check", "--fix", "--select", "I,F401", "tests", "scripts")
    ruff("format", "tests", "scripts")
    git("add", "-A", "tests", "scripts", "README.md", *changed)
    print("mirror_tests: moved", sum(1 for old, new in MOVES.items() if old != new), "test files and", len(HELPERS),
          "helpers; documents renamed in:", ", ".join(changed))  # fmt: skip


if __name__ == "__main__":
    main()
