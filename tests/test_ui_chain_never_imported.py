"""A chain never imported shows as such in the UI (issue 21 item 4), evaluated by the real daemon.

`dagster dev` runs on a free loopback port with a fresh DAGSTER_HOME where no chain has a partition. Its
daemon ticks `chain_partitions_sensor` (on by default: nobody turns it on here), which reports each chain's
`partitions_registered` check without a run: a failed WARN, naming the command that imports the chain.
Once the CI chain has partitions (registered as `import-ci` registers them), the next tick turns the CI
chain's check to passed and leaves the others as they were. Read back through the GraphQL API the UI reads.
With Chromium at hand (and KERNELINDEX_UI_SCREENSHOTS=1), the CI chain's lineage is photographed
before and after, into tests/artifacts/ui/ (docs/images/ui-chain-never-imported.png, on the UI page of the docs, is the first).
"""

from __future__ import annotations

import os
import shutil

import pytest

from tests.support.ui_support import (
    ARTIFACTS,
    CHROMIUM,
    CHROMIUM_ARGS,
    REPO_ROOT,
    DagsterDevServer,
    free_port,
    progress,
    wait_for,
)

SENSOR_TICK_TIMEOUT_S = 300  # the sensor ticks every 30 s; generous for a loaded two-core machine

CHECK_QUERY = """
query Check($assetKey: AssetKeyInput!) {
  assetCheckExecutions(assetKey: $assetKey, checkName: "partitions_registered", limit: 10) {
    status runId evaluation { severity description }
  }
}
"""


def _latest(server: DagsterDevServer, source: str) -> dict | None:
    executions = server.graphql(CHECK_QUERY, {"assetKey": {"path": [source, "benchmark_csv"]}})
    executions = executions["assetCheckExecutions"]
    return executions[0] if executions else None  # newest first


def _photograph(server: DagsterDevServer, name: str) -> None:
    """The CI chain's lineage as the operator sees it (kept for the README; asserts nothing about the DOM)."""
    if os.environ.get("KERNELINDEX_UI_SCREENSHOTS") != "1" or not CHROMIUM.exists():
        return
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1500, "height": 950})
            page.set_default_timeout(120_000)
            page.goto(f"{server.url}/locations/kernelindex_pipeline/asset-groups/ci")
            page.get_by_text("benchmark_csv", exact=True).first.wait_for()
            page.wait_for_load_state("networkidle")
            page.screenshot(path=str(ARTIFACTS / name), animations="disabled")
            progress(f"screenshot {ARTIFACTS / name}")
        finally:
            browser.close()


@pytest.fixture
def server(tmp_path):
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(REPO_ROOT / "kernelindex_pipeline" / "data" / "dagster.yaml", home / "dagster.yaml")
    env = {**os.environ, "KERNELINDEX_CATALOGUE_URL": f"sqlite:///{tmp_path / 'catalogue.sqlite'}"}
    server = DagsterDevServer(home, free_port(), env, tmp_path / "dagster-dev.log")
    try:
        server.start()
        server.wait_until_loaded()
        yield server
    finally:
        server.stop()


@pytest.mark.timeout(900)
@pytest.mark.slow  # a real `dagster dev` and two sensor ticks
def test_a_chain_never_imported_shows_a_warning_naming_its_import_command(server):
    from dagster import DagsterInstance

    from kernelindex_pipeline.defs.partitions import register_partitions

    def all_reported():
        latest = {source: _latest(server, source) for source in ("history", "ci", "sweep")}
        return latest if all(latest.values()) else None

    progress("waiting for the daemon's first tick of chain_partitions_sensor")
    before = wait_for(
        "chain_partitions_sensor to report partitions_registered on the three chains",
        all_reported,
        SENSOR_TICK_TIMEOUT_S,
        on_timeout=server.log_tail,
    )
    for source, execution in before.items():
        # FAILED with WARN severity: the node's check badge warns, the chain is not painted red "failed"
        assert (execution["status"], execution["evaluation"]["severity"]) == ("FAILED", "WARN"), (source, execution)
        assert f"the {source} chain was never imported" in execution["evaluation"]["description"]
    assert "kernelindex-pipeline import-ci LOCATOR" in before["ci"]["evaluation"]["description"]
    assert "kernelindex-pipeline import-history" in before["history"]["evaluation"]["description"]
    _photograph(server, "chain-never-imported.png")

    with DagsterInstance.from_config(str(server.home)) as instance:  # as import-ci registers a file's pairs
        register_partitions(instance, "ci", [("nvidia-h100-80gb-hbm3", "0.7.0"), ("nvidia-a100-sxm4-80gb", "0.7.0")])

    def ci_passed():
        execution = _latest(server, "ci")
        return execution if execution["status"] == "SUCCEEDED" else None

    progress("waiting for the next tick to see the CI chain's two partitions")
    after = wait_for(
        "the CI chain's partitions_registered to pass", ci_passed, SENSOR_TICK_TIMEOUT_S, on_timeout=server.log_tail
    )
    assert after["evaluation"]["description"] == "2 partitions registered in the ci chain"
    for source in ("history", "sweep"):  # unchanged: still the first, failed evaluation
        assert _latest(server, source) == before[source]
    _photograph(server, "chain-imported.png")
