"""End to end through the Dagster UI in a real browser: the way an operator imports Liger history partitions.

`dagster dev` runs on a free loopback port with a temporary DAGSTER_HOME; headless Chromium (Debian's, at
/usr/bin/chromium) opens the kernelindex_records asset, materializes one partition of the benchmark chain from
the lineage view and launches a backfill of two more from the same partition picker. Results are asserted
through the GraphQL API and the catalogue, never through the DOM. Screenshots of every step are written to
tests/artifacts/ui/ (kept on failure, with a last `failure` picture and the server log).

Needs the package index (the liger-kernel 0.8.5 sdist, cached in $KERNELINDEX_CACHE_DIR or
~/.cache/kernelindex-pipeline) and Chromium (`apt-get install -y chromium`). Run it alone with
`.venv/bin/pytest -s tests/test_ui_browser.py` (-s shows progress).
"""

from __future__ import annotations

import os
import re
import shutil
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml
from ui_support import (
    ARTIFACTS,
    BACKFILL_TERMINAL,
    CHROMIUM,
    CHROMIUM_ARGS,
    REPO_ROOT,
    RUN_TERMINAL,
    DagsterDevServer,
    Screenshots,
    ServerError,
    backfills,
    check_executions,
    free_port,
    materialized_partitions,
    progress,
    runs,
    wait_for,
)

pytestmark = [pytest.mark.browser, pytest.mark.network]

HISTORY_RELEASE = "0.8.5"
H100 = "nvidia-h100-80gb-hbm3"
B200 = "nvidia-b200"
# Small partitions of the 0.8.5 history. Registered: both GPUs x both versions (4 partitions); the test
# materializes one of them alone, backfills two more and leaves the fourth (b200 x 0.8.1, no rows) alone.
REGISTERED_GPUS = [H100, B200]
REGISTERED_VERSIONS = ["0.8.0", "0.8.1"]
SINGLE = (H100, "0.8.1")
BACKFILLED = [(H100, "0.8.0"), (B200, "0.8.0")]  # one version, two GPUs: a selection the picker can express

CHAIN = ["benchmark_csv", "benchmark_rows", "kernelindex_records", "catalogue_publication"]
RUNS_TIMEOUT_S = 360  # three runs of four step subprocesses each, on two cores


def partition_key(gpu: str, version: str) -> str:
    from kernelindex_pipeline.defs.partitions import benchmark_partition_key

    return str(benchmark_partition_key(gpu, version))


def _on_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


@pytest.fixture(scope="module")
def release_cache() -> Path:
    """The sdist cache shared with the rest of the session, so the 0.8.5 sdist is downloaded once."""
    from kernelindex_pipeline.liger.release import default_cache_dir, fetch_release

    cache = default_cache_dir()  # $KERNELINDEX_CACHE_DIR or ~/.cache/kernelindex-pipeline
    fetch_release(HISTORY_RELEASE, cache_dir=cache)  # before the runs, so three of them do not all download it
    return cache


@pytest.fixture(scope="module")
def expected_counts(release_cache) -> Counter:
    """Records by kind the three partitions must publish, computed without Dagster: each partition's slice of
    the history CSV imported on its own, objects shared between partitions counted once."""
    from kernelindex_pipeline.liger import import_csv
    from kernelindex_pipeline.liger.partition import slice_history
    from kernelindex_pipeline.liger.release import fetch_release, read_history_csv

    data, _snapshot = read_history_csv(fetch_release(HISTORY_RELEASE, cache_dir=release_cache))
    slices = slice_history(data)
    kinds: dict[str, str] = {}
    for gpu, version in [SINGLE, *BACKFILLED]:
        part = slices.partitions[(gpu, version)]
        result = import_csv(part.csv_bytes, gpu=gpu, liger_version=version)
        assert result.report.to_dict()["runs"] > 0, f"{gpu} x {version} has no runs in the {HISTORY_RELEASE} history"
        kinds.update((digest, manifest["kind"]) for digest, manifest in result.manifests.items())
    return Counter(kinds.values())


@pytest.fixture
def chromium() -> Path:
    if not CHROMIUM.exists():
        message = f"Chromium not found at {CHROMIUM}: apt-get install -y chromium (or set KERNELINDEX_CHROMIUM)"
        if _on_ci():
            pytest.fail(message + " (CI=true: the browser test must run on CI)")
        pytest.skip(message)
    return CHROMIUM


@pytest.fixture
def dagster_home(tmp_path) -> Path:
    """A fresh instance with the project's dagster.yaml and the test's dynamic partitions registered."""
    from dagster import DagsterInstance

    home = tmp_path / "dagster_home"
    home.mkdir()
    config = yaml.safe_load((REPO_ROOT / "kernelindex_pipeline" / "data" / "dagster.yaml").read_text("utf-8")) or {}
    # No first-visit newsletter prompt: it pops up at a moment of its own, over whatever dialog is open.
    config["nux"] = {"enabled": False}
    (home / "dagster.yaml").write_text(yaml.safe_dump(config, sort_keys=False), "utf-8")
    with DagsterInstance.from_config(str(home)) as instance:
        instance.add_dynamic_partitions("gpu", REGISTERED_GPUS)
        instance.add_dynamic_partitions("liger_version", REGISTERED_VERSIONS)
    return home


@pytest.fixture
def catalogue_url(tmp_path) -> str:
    return f"sqlite:///{tmp_path / 'catalogue.sqlite'}"


@pytest.fixture
def dagster_server(tmp_path, dagster_home, release_cache, catalogue_url):
    env = {
        **os.environ,
        "KERNELINDEX_CACHE_DIR": str(release_cache),
        "KERNELINDEX_HISTORY_RELEASE": HISTORY_RELEASE,  # pins the history: no listing of the index
        "KERNELINDEX_CATALOGUE_URL": catalogue_url,
    }
    server = DagsterDevServer(dagster_home, free_port(), env, tmp_path / "dagster-dev.log")
    try:
        server.start()
        server.wait_until_loaded()
        yield server
    finally:
        server.stop()
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        if server.log_path.exists():
            shutil.copy(server.log_path, ARTIFACTS / "dagster-dev.log")


# ---------------------------------------------------------------- what the person does in the UI


def settle(page) -> None:
    """Until the page's finite animations (a dialog fading and zooming in) are over: a picker opened during
    the zoom is placed where the dialog was, not where it is."""
    page.evaluate("""() => Promise.all(document.getAnimations()
        .filter(a => a.effect && a.effect.getComputedTiming().iterations !== Infinity)
        .map(a => a.finished.catch(() => null)))""")


def open_launch_dialog(page, expect, shots, step: str):
    """'Materialize all…' on the lineage view, through the notice that liger_release (a dependency the chain
    does not load) was never materialized, to the dialog that launches runs for the chain."""
    page.get_by_role("button", name="Materialize all…").click()
    notice = page.get_by_role("dialog").filter(has_text="Are you sure?")
    expect(notice).to_be_visible()
    expect(notice.get_by_text("liger_release")).to_be_visible()
    settle(page)
    shots.take(f"{step}-upstream-notice")
    notice.get_by_role("button", name="Confirm").click()
    dialog = page.get_by_role("dialog").filter(has_text=f"Launch runs to materialize {len(CHAIN)} assets")
    expect(dialog).to_be_visible()
    settle(page)
    return dialog


def choose(page, expect, dialog, dimension: str, values: list[str]) -> None:
    """Tick `values` in the picker of one partition dimension, then close the picker with its chevron.

    The picker sometimes closes right after a click (the dialog re-renders while live data arrives), and a
    click can land while it closes; so each value is ticked in rounds: open the picker if it is closed, read
    the value's checkbox, click it if unticked, until a round reads it ticked."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    section = (dialog.locator("div")
               .filter(has=page.get_by_text(dimension, exact=True))
               .filter(has=page.get_by_role("button", name="All"))
               .last)  # the innermost block holding this dimension's label and its picker
    chevron = section.get_by_role("img", name=re.compile(r"^expand_(more|less)$"))  # down when closed, up when open
    picker_filter = page.get_by_placeholder("Filter partitions")
    for value in values:
        item = page.get_by_role("menuitem").filter(has=page.get_by_text(value, exact=True))
        checkbox = item.get_by_role("checkbox")
        for attempt in range(1, 8):
            try:
                if not picker_filter.is_visible():
                    chevron.click(timeout=10_000)
                    expect(picker_filter).to_be_visible(timeout=10_000)
                if checkbox.is_checked(timeout=5_000):
                    break
                item.click(timeout=5_000)
            except (PlaywrightTimeout, AssertionError) as error:
                progress(f"{dimension} picker closed while ticking {value} (round {attempt}): {str(error).splitlines()[0]}")
        else:
            raise AssertionError(f"could not tick {dimension} = {value} in the partition picker")
    for _ in range(5):
        if not picker_filter.is_visible():
            break
        chevron.click(timeout=10_000)  # the chevron toggles the picker; the dialog stays open
        page.wait_for_timeout(500)
    expect(picker_filter).to_be_hidden()


def ui_flow(page, expect, shots, server: DagsterDevServer) -> tuple[str, str]:
    """Clicks through the scenario; returns (short id of the launched run, short id of the backfill)."""
    page.goto(f"{server.url}/assets")
    records_link = page.get_by_role("link", name="kernelindex_records")
    expect(records_link.first).to_be_visible()
    expect(page.get_by_text("Loading…").or_(page.get_by_text("Loading...")).first).to_be_hidden()
    shots.take("catalog")
    records_link.first.click()
    expect(page).to_have_url(re.compile(r"/assets/kernelindex_records"))
    expect(page.get_by_text("Upstream assets")).to_be_visible()
    shots.take("records-asset")

    page.get_by_role("tab", name="Lineage").click()
    for asset in CHAIN:
        expect(page.get_by_text(asset, exact=True).first).to_be_visible()
    shots.take("records-lineage")

    progress(f"materializing {SINGLE} from the lineage view")
    dialog = open_launch_dialog(page, expect, shots, "one-partition")
    choose(page, expect, dialog, "gpu", [SINGLE[0]])
    choose(page, expect, dialog, "liger_version", [SINGLE[1]])
    expect(dialog.get_by_text("1 partition", exact=True)).to_be_visible()
    launch = dialog.get_by_role("button", name="Launch 1 run")
    expect(launch).to_be_enabled()
    shots.take("one-partition-chosen")
    launch.click()
    launched = page.get_by_text(re.compile(r"Launched run \w+"))
    expect(launched).to_be_visible()
    run_id = re.search(r"Launched run (\w+)", launched.inner_text()).group(1)
    shots.take("one-partition-launched")

    progress(f"backfilling {BACKFILLED} from the partition picker")
    dialog = open_launch_dialog(page, expect, shots, "backfill")
    choose(page, expect, dialog, "gpu", sorted({gpu for gpu, _ in BACKFILLED}))
    choose(page, expect, dialog, "liger_version", sorted({version for _, version in BACKFILLED}))
    expect(dialog.get_by_text(f"{len(BACKFILLED)} partitions", exact=True)).to_be_visible()
    launch = dialog.get_by_role("button", name="Launch backfill")
    expect(launch).to_be_enabled()
    shots.take("backfill-chosen")
    launch.click()
    created = page.get_by_text(re.compile(r"Created backfill \w+"))
    expect(created).to_be_visible()
    backfill_id = re.search(r"Created backfill (\w+)", created.inner_text()).group(1)
    shots.take("backfill-launched")

    page.get_by_role("link").filter(has_text=re.compile(r"^\s*Runs\s*$")).click()  # the navigation's Runs
    expect(page).to_have_url(re.compile(r"/runs"))
    page.wait_for_load_state("networkidle")
    shots.take("runs-in-progress")
    return run_id, backfill_id


def wait_for_runs(server: DagsterDevServer, expected_partitions: set[str]) -> list[dict]:
    """Until each expected partition has a finished run and every backfill is finished; a failed run ends
    the wait at once with its id and the server's log."""
    last_seen: dict[str, str] = {}

    def probe():
        current = runs(server)
        for run in current:
            label = f"{run['tags'].get('dagster/partition')} ({run['runId'][:8]})"
            if last_seen.get(label) != run["status"]:
                progress(f"run {label}: {run['status']}")
                last_seen[label] = run["status"]
            if run["status"] in ("FAILURE", "CANCELED"):
                raise ServerError(f"run {run['runId']} of {label} ended {run['status']}\n"
                                  f"--- server log ---\n{server.log_tail(80)}")
        finished = {run["tags"].get("dagster/partition") for run in current if run["status"] in RUN_TERMINAL}
        open_backfills = [b for b in backfills(server) if b["status"] not in BACKFILL_TERMINAL]
        if expected_partitions <= finished and not open_backfills:
            return current
        return None

    started = time.monotonic()
    finished_runs = wait_for(f"runs of {sorted(expected_partitions)}", probe, RUNS_TIMEOUT_S, interval_s=3,
                             on_timeout=lambda: f"Runs: {last_seen}\n--- server log ---\n{server.log_tail(80)}")
    progress(f"all runs finished {time.monotonic() - started:.0f}s after the backfill was launched")
    return finished_runs


# ---------------------------------------------------------------- the test


def test_materialize_and_backfill_from_the_ui(chromium, dagster_server, catalogue_url, expected_counts):
    from playwright.sync_api import expect, sync_playwright

    from kernelindex_pipeline.catalogue.store import CatalogueStore
    from kernelindex_pipeline.defs.checks import RECORD_CHECK_SPECS

    server = dagster_server
    single_key = partition_key(*SINGLE)
    backfilled_keys = {partition_key(gpu, version) for gpu, version in BACKFILLED}
    all_keys = {single_key, *backfilled_keys}
    expect.set_options(timeout=60_000)  # a busy two-core machine renders slowly (reset below: it is global)

    started = time.monotonic()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.set_default_timeout(60_000)
            shots = Screenshots(page)
            try:
                run_short_id, backfill_id = ui_flow(page, expect, shots, server)
                finished_runs = wait_for_runs(server, all_keys)
                page.reload()
                page.wait_for_load_state("networkidle")
                shots.take("runs-finished")
                page.goto(f"{server.url}/assets/kernelindex_records?view=partitions")
                expect(page.get_by_text(H100, exact=True).first).to_be_visible()
                page.wait_for_load_state("networkidle")
                shots.take("records-partitions")
            except BaseException:
                shots.take("failure")
                try:  # and the page as it is now, not as its last poll left it
                    page.reload(timeout=15_000)
                    page.wait_for_load_state("networkidle", timeout=15_000)
                    shots.take("failure-reloaded")
                except Exception as error:
                    progress(f"could not reload the page after the failure: {error}")
                raise
        finally:
            browser.close()
            expect.set_options(timeout=5_000)  # Playwright's default, for other tests in the session
    progress(f"UI part took {time.monotonic() - started:.0f}s")

    # Runs: the one launched from the dialog, and one per backfilled partition, all successful.
    assert sorted(run["tags"].get("dagster/partition") for run in finished_runs) == sorted(all_keys)
    assert {run["status"] for run in finished_runs} == {"SUCCESS"}, finished_runs
    by_partition = {run["tags"]["dagster/partition"]: run for run in finished_runs}
    single_run = by_partition[single_key]
    assert single_run["runId"].startswith(run_short_id)
    assert "dagster/backfill" not in single_run["tags"]
    assert {by_partition[key]["tags"].get("dagster/backfill") for key in backfilled_keys} == {backfill_id}

    [backfill] = backfills(server)
    assert backfill["id"] == backfill_id
    assert backfill["status"] == "COMPLETED_SUCCESS"
    assert backfill["numPartitions"] == len(BACKFILLED)
    assert set(backfill["partitionNames"]) == backfilled_keys

    # Every asset of the chain materialized exactly the three partitions, once each.
    for asset in CHAIN:
        assert sorted(materialized_partitions(server, asset)) == sorted(all_keys), asset
    # The records' four blocking checks passed in each partition's run (the execution records no partition
    # of its own here, so it is matched through its run).
    partition_of_run = {run["runId"]: key for key, run in by_partition.items()}
    for spec in RECORD_CHECK_SPECS:
        executions = check_executions(server, "kernelindex_records", spec.name)
        seen = sorted((partition_of_run.get(e["runId"]), e["status"]) for e in executions)
        assert seen == sorted((key, "SUCCEEDED") for key in all_keys), spec.name

    # The catalogue holds what the three partition slices make when imported without Dagster.
    store = CatalogueStore.open(catalogue_url)
    try:
        counts = store.counts_by_kind()
    finally:
        store.close()
    progress(f"catalogue: {dict(counts)}; expected {dict(expected_counts)}")
    assert counts["BenchmarkRun"] == expected_counts["BenchmarkRun"]
    assert {kind: n for kind, n in counts.items() if n} == dict(expected_counts)
