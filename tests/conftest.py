"""Shared pytest fixtures.

Catalogue: `sqlite_url` (a fresh SQLite file), `postgres_url` (a fresh schema on the PostgreSQL server
named by KERNELINDEX_TEST_POSTGRES_URL; on CI a missing server is a failure, never a skip),
`catalogue_records` (the 21 seed manifests) and `synthetic_runs` (more BenchmarkRuns derived from them).

Browser: `chromium_endpoint` (one Chromium for the session, started on first use) and `browser` (a
test's own Playwright connection to it; tests/support/browser.py says why not one for the session).

Dagster: every test of a module that uses Dagster must leave Dagster's current defs-state storage as it
found it, even after garbage collection (`_no_dagster_instance_context_leak`, see there).
"""

from __future__ import annotations

import functools
import gc
import os
import signal
import uuid
import warnings
from pathlib import Path

import pytest

from tests.support import factories

POSTGRES_URL_ENV = "KERNELINDEX_TEST_POSTGRES_URL"
# The modules that make Dagster instances in this process: the Dagster layer's, the definitions' and the
# home's, and the sweep's Pipes entry point under PipesSubprocessClient.
DAGSTER_MODULES = ("tests.defs.", "tests.test_definitions", "tests.test_home", "tests.sweep.test_pipes_entry")


@pytest.fixture(scope="session", autouse=True)
def no_liger_clone():
    """The import commands clone Liger from GitHub by default; tests make no clone unless they ask
    (tests/cli/test_imports_liger_clone.py gives a local repository's file URL)."""
    previous = os.environ.get("KERNELINDEX_LIGER_URL")
    os.environ["KERNELINDEX_LIGER_URL"] = "none"
    yield
    if previous is None:
        os.environ.pop("KERNELINDEX_LIGER_URL", None)
    else:
        os.environ["KERNELINDEX_LIGER_URL"] = previous


@pytest.fixture(scope="session", autouse=True)
def artifact_store(tmp_path_factory):
    """Sweeps in tests put their evidence into a store of the session, never into the user's cache
    (sweep/artifact_store.py; the variable reaches the sweep process through its allowlist)."""
    root = tmp_path_factory.mktemp("artifact-store")
    previous = os.environ.get("KERNELINDEX_ARTIFACT_STORE")
    os.environ["KERNELINDEX_ARTIFACT_STORE"] = str(root)
    yield root
    if previous is None:
        os.environ.pop("KERNELINDEX_ARTIFACT_STORE", None)
    else:
        os.environ["KERNELINDEX_ARTIFACT_STORE"] = previous


SIGNALS_KEPT = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


@pytest.fixture(autouse=True)
def _signal_dispositions_restored(request):
    """What a test does to this process's SIGTERM, SIGINT and SIGHUP is undone after it: an ignored signal is
    inherited by every process the suite starts later, so one test's ignored SIGTERM left `serve` deaf to the
    terminate() of three later tests (the CI run of 168b75d: the UI, first-command and site-server tests; the
    serve processes' SigIgn had bit 15). Ignored is read from the kernel (/proc/self/status), so a library that
    ignores a signal without Python's signal module is caught too; a test that leaves one ignored gets a warning
    naming it (that run's culprit is not yet known). A handler a test leaves (Dagster's in-process runs leave
    SIGTERM's as the KeyboardInterrupt one) is put back silently."""
    before = {signum: signal.getsignal(signum) for signum in SIGNALS_KEPT}
    ignored_before = _ignored_signals()
    yield
    ignored_now = _ignored_signals()
    for signum, disposition in before.items():
        newly_ignored = signum in ignored_now and signum not in ignored_before
        if newly_ignored:
            warnings.warn(f"{request.node.nodeid} left {signal.Signals(signum).name} ignored; put back", stacklevel=1)
        if newly_ignored or signal.getsignal(signum) != disposition:
            signal.signal(signum, disposition if disposition is not None else signal.SIG_DFL)


def _ignored_signals() -> set[int]:
    """The signals this process ignores, as the kernel has it (empty where /proc is not there)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            mask = next(int(line.split()[1], 16) for line in status if line.startswith("SigIgn:"))
    except (OSError, StopIteration, ValueError):
        return set()
    return {signum for signum in SIGNALS_KEPT if mask >> (signum - 1) & 1}


@pytest.fixture(autouse=True)
def _no_dagster_instance_context_leak(request):
    """Entering a DagsterInstance sets a context variable (the current defs-state storage) that its
    exit resets to the value it had before. An evaluation context that opens an instance (e.g.
    `build_schedule_context(instance=...)`, whose `context.instance` is a fresh instance from the
    ref) and is not used as `with ...:` closes it only when garbage collection reaches it: after the
    test's instance is gone, putting that dead instance's storage back as the current one. The next
    definitions load then fails with "Attempted to resolve undefined DagsterInstance weakref", at
    whatever moment the collector runs (the flaky `test_all_history_partitions` of issue 11).
    gc.collect() here makes such a leak fail the test that caused it, every time."""
    if not request.module.__name__.startswith(DAGSTER_MODULES):
        yield
        return
    from dagster import UPathDefsStateStorage  # get() is the base class's: the current storage

    before = UPathDefsStateStorage.get()
    yield
    gc.collect()
    after = UPathDefsStateStorage.get()
    assert after is before, (
        "this test left a Dagster instance context open (the current defs-state storage changed "
        "after garbage collection): use evaluation contexts as `with build_..._context(...) as context:`"
    )


def _on_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    """A SQLite catalogue file of its own for each test."""
    return f"sqlite:///{tmp_path / 'catalogue.sqlite'}"


@pytest.fixture
def postgres_url():
    """A PostgreSQL catalogue URL (password included) whose search_path is a fresh schema, dropped
    after the test. Start a server with `url=$(bash scripts/start_postgres DIR)` and export it as
    KERNELINDEX_TEST_POSTGRES_URL."""
    base = os.environ.get(POSTGRES_URL_ENV, "").strip()
    if not base:
        message = (
            f"{POSTGRES_URL_ENV} is unset: start a server with "
            f"`export {POSTGRES_URL_ENV}=$(bash scripts/start_postgres /tmp/kernelindex-pg)`"
        )
        if _on_ci():
            pytest.fail(message + " (CI=true: PostgreSQL tests must run on CI)")
        pytest.skip(message)

    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    url = make_url(base)
    if url.drivername in ("postgresql", "postgres"):
        url = url.set(drivername="postgresql+psycopg")
    schema = f"test_{uuid.uuid4().hex[:16]}"
    admin = create_engine(url)
    try:
        with admin.begin() as conn:
            conn.execute(text(f'CREATE SCHEMA "{schema}"'))
        yield url.update_query_dict({"options": f"-csearch_path={schema}"}).render_as_string(hide_password=False)
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
    finally:
        admin.dispose()


@pytest.fixture(scope="session")
def catalogue_records() -> dict[str, dict]:
    """The seed bundles' manifests, digest -> manifest (3 CSV rows x 7 kinds; shared objects once)."""
    return factories.seed_manifests()


@pytest.fixture(scope="session")
def synthetic_runs(catalogue_records):
    """`synthetic_runs(count, start=0) -> dict[digest, manifest]`: BenchmarkRuns cloned from the seed
    runs (factories.cloned_runs)."""
    return functools.partial(factories.cloned_runs, catalogue_records)


@pytest.fixture(scope="session")
def chromium_endpoint(tmp_path_factory):
    """The DevTools address of the session's one Chromium (tests/support/browser.py)."""
    from tests.support.browser import chromium_process

    with chromium_process(tmp_path_factory.mktemp("chromium-profile")) as endpoint:
        yield endpoint


@pytest.fixture
def browser(chromium_endpoint):
    """A Playwright `Browser` connected to the session's Chromium for this test."""
    from tests.support.browser import connected

    with connected(chromium_endpoint) as connection:
        yield connection
