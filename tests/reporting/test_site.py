"""The interactive static site (reporting/site.py): its data against the runs, its incremental rebuild, and the
site itself in headless Chromium (filters, compare, tooltips, no console errors, offline from file://).

Input: real Liger CI rows (fixtures/liger-ci: three files, two Liger versions, two GPUs; and
fixtures/liger-ci-report: one whole file at two x values per sweep). Needs Debian's Chromium at /usr/bin/chromium
for the browser tests. KERNELINDEX_SITE_SCREENSHOTS=<dir> keeps screenshots there (docs/images/site-*.png are made so).
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from pathlib import Path

import pytest

from tests.support import FIXTURES, ROOT
from tests.support.browser import Watched
from tests.support.run_series import run_series

CSVS = sorted((FIXTURES / "liger-ci").glob("*.csv")) + sorted((FIXTURES / "liger-ci-report").glob("*.csv"))


def _import(paths):
    from kernelindex_pipeline.liger import import_csv

    manifests: dict[str, dict] = {}
    for path in paths:
        manifests.update(import_csv(path).manifests)
    return list(manifests.values())


def relabelled(source: Path, out: Path, *, version: str, gpu: str | None = None, scale: float = 1.0) -> Path:
    """A copy of a real CI file's rows as if measured again at `version` (on `gpu`), latencies times `scale`: gives
    one GPU two versions and one version two GPUs, which the three real slices do not have."""
    import csv

    with source.open(newline="") as f:
        rows = list(csv.DictReader(f))
    for row in rows:
        row["liger_version"] = version
        row["timestamp"] = row["timestamp"].replace("2025-06-20", "2025-07-01")
        if gpu:
            row["gpu_name"] = gpu
        if row["metric_name"] == "speed":
            for column in ("y_value_50", "y_value_20", "y_value_80"):
                row[column] = repr(float(row[column]) * scale)
    with out.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return out


@pytest.fixture(scope="module")
def manifests(tmp_path_factory):
    folder = tmp_path_factory.mktemp("relabelled")
    h200 = FIXTURES / "liger-ci" / "0701bab.csv"  # NVIDIA H200, Liger 0.5.10
    extra = [
        relabelled(h200, folder / "h200-0.6.0.csv", version="0.6.0", scale=1.25),
        relabelled(h200, folder / "h100-0.5.10.csv", version="0.5.10", gpu="NVIDIA H100 80GB HBM3", scale=0.8),
    ]
    return _import([*CSVS, *extra])


@pytest.fixture(scope="module")
def site(manifests, tmp_path_factory):
    from kernelindex_pipeline.reporting.site import build_site

    out = tmp_path_factory.mktemp("site")
    return build_site(manifests, out)


def read_data(path: Path) -> dict:
    text = path.read_text(encoding="utf-8")
    assert text.startswith("KI.load(") and text.rstrip().endswith(");"), path
    return json.loads(text[len("KI.load(") : text.rstrip().rindex(")")])


def expected_cells(manifests) -> Counter:
    """(kernel, gpu, version) -> series measured there, straight from the runs' externalIds and labels."""
    seen = set()
    for m in manifests:
        series = run_series(m)
        if series is not None:
            seen.add((series.kernel, series.gpu, m["metadata"]["labels"]["liger_version"], series))
    return Counter(key[:3] for key in seen)


def test_data_and_pivot_account_for_every_series_and_version(site, manifests):
    out = site.path.parent
    expected = expected_cells(manifests)
    state = json.loads((out / "site-state.json").read_text())["kernels"]
    assert set(state) == {k for k, _, _ in expected}
    drawn: Counter = Counter()
    for kernel, facts in state.items():
        data = read_data(out / "data" / f"{facts['slug']}.js")
        assert data["kernel"] == kernel
        assert len(data["series"]) == len(data["points"]) == facts["series"]
        for row, points in zip(data["series"], data["points"], strict=True):
            for point in points:
                drawn[(kernel, data["gpus"][row[0]]["slug"], data["versions"][point[0]])] += 1
                assert point[1] > 0 and re.fullmatch(r"sha256:[0-9a-f]{64}", point[5])
    assert drawn == expected
    page = (out / "index.html").read_text()
    cells: Counter = Counter()
    rows = re.findall(r'<tr class="pivot-row" data-kernel="([^"]+)">(.*?)</tr>', page)
    for kernel, body in rows:
        for gpu, version, n in re.findall(r'data-gpu="([^"]+)" data-version="([^"]+)" data-runs="(\d+)"', body):
            if int(n):
                cells[(kernel.replace("&#x27;", "'"), gpu, version)] = int(n)
    assert cells == expected


def test_a_build_streams_its_input_once_and_detects_what_detection_alone_finds(site, manifests, tmp_path):
    """build_site reads a one-shot stream once (detection takes each record as the index reads it), and its
    regressions are detection's own over the same records, a record given twice counted once."""
    from kernelindex_pipeline.detection.detect import detect_regressions
    from kernelindex_pipeline.detection.document import regressions_json
    from kernelindex_pipeline.reporting.site import build_site

    alone = regressions_json(detect_regressions(manifests))
    assert regressions_json(site.regressions) == alone
    assert alone["sources"] and alone["insufficientSeries"], "detection should have read runs to compare"
    twice = build_site((m for m in [*manifests, *manifests[: len(manifests) // 2]]), tmp_path)
    assert regressions_json(twice.regressions) == alone


def test_rebuild_rewrites_only_what_changed(manifests, tmp_path):
    from kernelindex_pipeline.reporting.site import build_site

    first = build_site(manifests, tmp_path)
    assert set(first.changed.values()) == {"new"} and len(first.rewritten) == first.counts["kernels"]
    again = build_site(manifests, tmp_path)
    assert again.changed == {} and again.rewritten == []
    assert "Nothing changed since the previous build" in again.path.read_text()
    # without the two files of one CI run directory's commit 7644a0f: rms_norm and fused_linear_cpo_loss lose runs
    fewer = [m for m in manifests if "2026-02-1" not in str((m.get("spec") or {}).get("observedAt"))]
    third = build_site(fewer, tmp_path)
    assert third.changed == {"rms_norm": "changed", "fused_linear_cpo_loss": "changed"}
    assert sorted(third.rewritten) == ["fused_linear_cpo_loss", "rms_norm"]
    assert 'data-change="changed"' in third.path.read_text()


def _files(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file of a site with what changes when it is written (inode: written by rename; mtime)."""
    return {
        str(p.relative_to(folder)): (p.stat().st_ino, p.stat().st_mtime_ns) for p in folder.rglob("*") if p.is_file()
    }


def test_rebuild_after_new_runs_of_one_kernel_rewrites_its_page_and_the_landing_page_only(manifests, tmp_path):
    from kernelindex_pipeline.reporting.site import build_site

    def kernel_of(m):
        return m["spec"]["sourceNative"]["externalId"].split("/")[0] if m["kind"] == "BenchmarkRun" else None

    # the runs of one CI run directory's commit (7644a0f, 2026-02-1x) left out, then rms_norm's of them added back
    later = [m for m in manifests if "2026-02-1" in str((m.get("spec") or {}).get("observedAt"))]
    assert {kernel_of(m) for m in later} >= {"rms_norm", "fused_linear_cpo_loss"}
    earlier = [m for m in manifests if m not in later]
    first = build_site(earlier, tmp_path)
    assert sorted(first.pages_rewritten) == sorted(
        ["index.html", "regressions.html", *(f"kernels/{p.stem}.html" for p in (tmp_path / "kernels").iterdir())]
    )
    before = _files(tmp_path)
    again = build_site([*earlier, *(m for m in later if kernel_of(m) == "rms_norm")], tmp_path)
    after = _files(tmp_path)
    assert again.changed == {"rms_norm": "changed"} and again.rewritten == ["rms_norm"]
    # of the pages: rms_norm's and the landing page, and the regressions page, whose result has the new runs
    assert again.pages_rewritten == ["kernels/rms-norm.html", "regressions.html", "index.html"]
    assert len(again.pages_kept) == first.counts["kernels"] - 1 == again.counts["pagesKept"]
    touched = {f for f in after if before.get(f) != after[f]}
    assert touched == {
        "data/rms-norm.js",  # rms_norm's page is its data (the HTML is the same: written only if it differs)
        "data/summary.js",
        "index.html",
        "regressions.html",
        "regressions.json",  # not data/regressions.js: no series of the new runs has a change to chart
        "efficiency.jsonl",  # the new runs' percent of peak
        "site-state.json",
    }
    # the same input once more: no kernel page, no data file, no asset is written again
    third = build_site([*earlier, *(m for m in later if kernel_of(m) == "rms_norm")], tmp_path)
    assert third.rewritten == [] and set(third.pages_rewritten) <= {"index.html"}  # its "previous build" time
    assert {f for f, v in _files(tmp_path).items() if after.get(f) != v} <= {"index.html", "site-state.json"}


def test_pivot_marks_cells_whose_rows_did_not_all_become_runs(site):
    from kernelindex_pipeline.imports.coverage import CoverageCell
    from kernelindex_pipeline.reporting.site import coverage_pivot

    state = {"rms_norm": {"slug": "rms-norm", "title": "RMSNorm"}}
    pivot = {"rms_norm": {("nvidia-h200", "0.5.10"): 12, ("nvidia-h200", "0.6.0"): 4}}
    lost = CoverageCell(
        kernel="rms_norm",
        provider="huggingface",
        mode="forward",
        gpu="NVIDIA H200",
        version="0.6.0",
        metric="speed",
        rows=12,
        runs=4,
        skipped={"uncuratedKernels": 8},
        issues=0,
    )
    page = coverage_pivot(state, pivot, [lost])
    cells = re.findall(
        r'<td class="([^"]+)" data-gpu="([^"]+)" data-version="([^"]+)" data-runs="(\d+)"( title="[^"]*")?', page
    )
    assert cells == [
        ("pivot-cell", "nvidia-h200", "0.5.10", "12", ""),
        ("pivot-cell incomplete", "nvidia-h200", "0.6.0", "4", ' title="huggingface forward speed: 8 of 12 rows"'),
    ]
    assert 'href="kernels/rms-norm.html#gpu=nvidia-h200&amp;version=0.6.0"' in page


def test_kernel_file_names_never_collide():
    from kernelindex_pipeline.reporting.site import kernel_slugs

    slugs = kernel_slugs(["dyt_beta=True", "dyt-beta-true", "rms_norm"])
    assert slugs["rms_norm"] == "rms-norm"
    assert len(set(slugs.values())) == 3
    # data/summary.js and data/regressions.js are the landing and regressions pages' data, never a kernel's
    reserved = kernel_slugs(["summary", "Regressions"])
    assert reserved["summary"].startswith("summary-") and reserved["Regressions"].startswith("regressions-")


# --------------------------------------------------------------------------- in Chromium


def _shot(page, name: str) -> None:
    folder = os.environ.get("KERNELINDEX_SITE_SCREENSHOTS")
    if folder:
        page.screenshot(path=str(Path(folder) / name))


@pytest.mark.browser
def test_landing_page_draws_its_chart_and_loads_no_kernel_data(site, browser):
    w = Watched(browser)
    try:
        w.page.goto(site.path.resolve().as_uri())
        w.page.wait_for_selector("#overview-chart[data-rendered='1'] svg", timeout=30_000)
        bars = w.page.locator("#overview-chart .mark-rect path").count()
        assert bars == len(read_data(site.path.parent / "data" / "summary.js")["cells"])
        _shot(w.page, "site-landing.png")
        assert w.errors == []
        assert all(u.startswith("file://") for u in w.requests), w.requests
        loaded = [u.rsplit("/", 1)[1] for u in w.requests if "/data/" in u]
        assert loaded == ["summary.js"]  # opening the landing page never loads a kernel's data
        # a pivot cell opens the kernel's page with its GPU and version selected
        w.page.locator('tr.pivot-row[data-kernel="rms_norm"] td.pivot-cell a').first.click()
        w.page.wait_for_selector("figure.chart .vega[data-rendered='1']", timeout=30_000)
        cell = w.page.evaluate("location.hash")
        gpu, version = re.fullmatch(r"#gpu=([^&]+)&version=(.+)", cell).groups()
        assert w.page.locator("#f-gpu").input_value() == gpu
        assert w.page.locator("#f-version").input_value() == version
        assert {f for f in w.page.eval_on_selector_all("figure.chart", "fs => fs.map(f => f.dataset.gpu)")} == {gpu}
        assert w.errors == []
    finally:
        w.close()


@pytest.mark.browser
def test_kernel_page_filters_tooltips_and_compare(site, browser, manifests):
    w = Watched(browser)
    try:
        page = w.page
        page.goto((site.path.parent / "kernels" / "rms-norm.html").resolve().as_uri())
        page.wait_for_selector("figure.chart .vega[data-rendered='1'] svg", timeout=30_000)
        data = read_data(site.path.parent / "data" / "rms-norm.js")
        loaded = [u.rsplit("/", 1)[1] for u in w.requests if "/data/" in u]
        assert loaded == ["rms-norm.js"]  # its own kernel's data, nothing else

        def figures():
            return page.eval_on_selector_all(
                "figure.chart", "fs => fs.map(f => [f.dataset.chartKind, f.dataset.gpu, f.dataset.mode])"
            )

        everything = figures()
        assert {k for k, _, _ in everything} >= {"latency", "memory", "versions", "speedup"}
        assert {m for _, _, m in everything} == set(data["modes"])
        page.select_option("#f-mode", "forward")
        assert {m for _, _, m in figures()} == {"forward"} and len(figures()) < len(everything)
        page.select_option("#f-gpu", data["gpus"][1]["slug"])
        assert {g for _, g, _ in figures()} == {data["gpus"][1]["slug"]}
        assert "mode=forward" in page.evaluate("location.hash")
        page.select_option("#f-provider", "huggingface")
        page.wait_for_selector("figure.chart[data-chart-kind='latency'] .vega[data-rendered='1'] svg", timeout=30_000)
        assert "speedup" not in {k for k, _, _ in figures()}  # one provider: nothing to compare it with

        # tooltip: hover a point of the latency chart; it names the run
        point = page.locator("figure.chart[data-chart-kind='latency'] .mark-symbol path").first
        point.hover(force=True)
        tip = page.wait_for_selector("#vg-tooltip-element.visible", timeout=10_000)
        text = tip.inner_text()
        for field in ("huggingface", "date", "source", "commit", "run digest", "median (raw)", "p20–p80 (raw)"):
            assert field in text, (field, text)
        assert re.search(r"sha256:[0-9a-f]{64}", text) and "liger-kernel-bench" in text
        assert re.search(r"median \(raw\)\s*\d+ ns", text), text  # every value with its unit (issue 30)
        _shot(page, "site-kernel-tooltip.png")

        # compare, checked against the runs themselves: two versions on one GPU (the default where a GPU has two),
        # then two GPUs at one version
        page.wait_for_selector("#compare-ratio[data-rendered='1'] svg", timeout=30_000)
        assert page.locator("#c-by").input_value() == "version"
        page.select_option("#c-mode", "forward")
        page.select_option("#c-provider", "liger")
        page.select_option("#c-fixed", "nvidia-h200")
        page.select_option("#c-a", "0.5.10")
        page.select_option("#c-b", "0.6.0")
        ratios = page.eval_on_selector_all(
            "#compare-table tr.compare-row", "rs => rs.map(r => Number(r.dataset.ratio))"
        )
        assert len(ratios) == 6 and all(abs(r - 1.25) < 0.01 for r in ratios)  # the relabelled copy: 1.25x slower
        # two runs on one GPU (issue 30): the sides are runs, named by version (and commit) and date
        page.select_option("#c-by", "run")
        page.select_option("#c-fixed", "nvidia-h200")
        page.wait_for_selector("#compare-ratio[data-rendered='1'] svg", timeout=30_000)
        labels = page.eval_on_selector_all("#c-a option", "os => os.map(o => o.textContent)")
        assert len(labels) == 2 and labels[0].startswith("0.5.10 ") and labels[1].startswith("0.6.0 "), labels
        ratios = page.eval_on_selector_all(
            "#compare-table tr.compare-row", "rs => rs.map(r => Number(r.dataset.ratio))"
        )
        assert len(ratios) == 6 and all(abs(r - 1.25) < 0.01 for r in ratios)  # the same two runs
        page.select_option("#c-by", "gpu")
        page.select_option("#c-fixed", "0.5.10")
        page.wait_for_selector("#compare-ratio[data-rendered='1'] svg", timeout=30_000)
        a, b = page.locator("#c-a").input_value(), page.locator("#c-b").input_value()
        assert {a, b} == {"nvidia-h200", "nvidia-h100-80gb-hbm3"}
        rows = page.eval_on_selector_all(
            "#compare-table tr.compare-row", "rs => rs.map(r => [r.dataset.workload, Number(r.dataset.ratio)])"
        )
        newest: dict = {}
        for m in manifests:
            if (
                m["kind"] == "BenchmarkRun"
                and m["spec"].get("timing")
                and m["metadata"]["labels"]["liger_version"] == "0.5.10"
            ):
                kernel, mode, provider, gpu, case_key, _ = m["spec"]["sourceNative"]["externalId"].split("/")
                if (kernel, mode, provider) == ("rms_norm", "forward", "liger"):
                    newest[(gpu, case_key)] = max(
                        newest.get((gpu, case_key), ("", 0)),
                        (m["spec"]["observedAt"], m["spec"]["timing"]["latencyNs"]["median"]),
                    )
        expected = {
            case: newest[(b, case)][1] / newest[(a, case)][1] for g, case in newest if g == a and (b, case) in newest
        }
        assert len(rows) == 6 and dict(rows) == pytest.approx(expected)
        page.locator("#compare").scroll_into_view_if_needed()
        _shot(page, "site-compare.png")
        assert w.errors == []
        assert all(u.startswith("file://") for u in w.requests), w.requests
    finally:
        w.close()


@pytest.mark.browser
def test_regressions_page_is_linked_and_opens(site, browser):
    w = Watched(browser)
    try:
        w.page.goto(site.path.resolve().as_uri())
        w.page.click("#regressions a")
        w.page.wait_for_load_state("load")
        assert w.page.url.endswith("/regressions.html")
        assert w.page.locator("body[data-change-count]").count() == 1
        assert w.errors == []
    finally:
        w.close()


def test_the_package_needs_no_matplotlib(tmp_path):
    """matplotlib left the dependencies (issue 21): the site's charts, the regressions page's too, are drawn in the
    browser. In a fresh interpreter where importing matplotlib fails, the Dagster definitions load, and a site and
    the `regressions` page are built."""
    import subprocess
    import sys

    code = (
        "import sys\nsys.modules['matplotlib'] = None  # any import of it raises ImportError\n"
        f"sys.path.insert(0, {str(ROOT)!r})  # tests.support\n"
        "import kernelindex_pipeline.definitions\n"
        "from tests.support.factories import SampleCatalogue\n"
        "from kernelindex_pipeline.detection.detect import detect_regressions\n"
        "from kernelindex_pipeline.reporting.regressions_page import write_regressions\n"
        "from kernelindex_pipeline.reporting.site import build_site\n"
        "catalogue = SampleCatalogue()\n"
        "for v, month in (('0.8.0', 1), ('0.8.0', 2), ('0.8.0', 3), ('0.8.1', 4), ('0.8.1', 5), ('0.8.1', 6)):\n"
        "    catalogue.run(kernel='rms_norm', version=v, median_ns=1000 * (13 if v == '0.8.1' else 10) + month,\n"
        "                  timestamp=f'2025-0{month}-01 00:00:00')\n"
        "site = build_site(catalogue.manifests(), sys.argv[1] + '/site')\n"
        "write_regressions(detect_regressions(catalogue.manifests()), sys.argv[1] + '/regressions')\n"
        "print(site.counts['kernels'], site.counts['slowdowns'])\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1", "1"]  # one kernel, its 30 % slowdown found and charted
    assert 'class="trend"' in (tmp_path / "regressions" / "regressions.html").read_text(encoding="utf-8")


def test_the_site_links_the_regressions_page_by_its_own_name():
    from kernelindex_pipeline.reporting import regressions_page, site

    assert site.REGRESSIONS_PAGE == regressions_page.PAGE_NAME


@pytest.mark.parametrize("content", [b"[" * 200_000, b'{"format": ' * 200_000], ids=["arrays", "objects"])
def test_a_site_state_nested_200k_levels_counts_as_no_previous_build(tmp_path, content):
    """Issue 31 item 12: a `site-state.json` nested 200,000 levels was a RecursionError."""
    from kernelindex_pipeline.reporting import site

    (tmp_path / site.STATE_NAME).write_bytes(content)
    assert site._read_state(tmp_path) == {}


def test_the_landing_page_opens_with_the_latest_runs_and_their_worst_slowdowns(tmp_path):
    """Issue 30: the headline first (per GPU its newest run and the slowdowns, worst first), then the rest."""
    import numpy as np

    from kernelindex_pipeline.detection.detect import detect_regressions
    from kernelindex_pipeline.reporting.site import build_site
    from tests.detection.test_detect import panel

    rng = np.random.default_rng(5)
    base = 200_000 * np.exp(np.clip(rng.normal(0, 0.01, size=(24, 8)), -0.025, 0.025))
    base[0, 4:] *= 1.5  # kernel0 case0: x1.5 from the fifth run on
    base[1, 4:] *= 1.4  # kernel0 case1 at the same run: the same group, not a line of its own
    base[5, 5:] *= 1.2  # kernel1 case1: x1.2 from the sixth run on
    regressions = detect_regressions(panel(base))
    html = build_site([], tmp_path / "site", regressions=regressions).path.read_text()
    assert html.index('id="headline"') < html.index('id="changed"') < html.index('id="regressions"')
    section = html[html.index('id="headline"') : html.index("</section>", html.index('id="headline"'))]
    assert 'data-slowdowns="3"' in section and "3 slowdowns, no commit named" in section  # no clone
    worst = [part.split('"')[0] for part in section.split('class="worst" data-kernel="')[1:]]
    assert worst == ["kernel0", "kernel1"]  # the worst of each group, the worst first
    assert "×1.5" in section and "at 0.8.0 " in section


def test_a_forward_that_computes_gradients_and_an_implausible_efficiency_carry_their_caveats(site):
    """Issue 30: Transformers' FLCE forward drew at 186 % of peak and 0.05-0.2x with no caveat. Each point says
    why (the pass's caveat on every chart, the efficiency's on the percent-of-peak chart); others say nothing."""
    from kernelindex_pipeline.reporting.efficiency import GRADIENT_IN_FORWARD

    data = {
        name: read_data(site.path.parent / "data" / f"{name}.js") for name in ("fused-linear-cross-entropy", "rms-norm")
    }
    flce = data["fused-linear-cross-entropy"]
    implausible = 0
    for row, points in zip(flce["series"], flce["points"], strict=True):
        mode = flce["modes"][row[2]]
        for p in points:
            assert p[10] == (GRADIENT_IN_FORWARD if mode == "forward" else None), (mode, p)
            if p[8] is not None and p[8] > 100:
                assert p[11].startswith(f"implausible: {round(p[8])} % of the datasheet peak, above 100 %"), p
                implausible += 1
            else:
                assert p[11] is None, p
    assert implausible == 2  # the huggingface forward at the two largest x values of the slice
    rms = data["rms-norm"]
    assert all(p[10] is None for points in rms["points"] for p in points)  # its forward computes no gradients


@pytest.mark.browser
def test_a_caveat_rings_its_point_and_says_why_in_the_tooltip(site, browser):
    w = Watched(browser)
    try:
        page = w.page
        page.goto(
            (site.path.parent / "kernels" / "fused-linear-cross-entropy.html").resolve().as_uri() + "#mode=forward"
        )
        figure = page.locator("figure.chart[data-chart-kind='efficiency'][data-mode='forward']").first
        figure.scroll_into_view_if_needed()
        figure.locator(".vega[data-rendered='1'] svg").wait_for(timeout=30_000)
        rows = figure.locator(".vega").evaluate("el => el.chartRows")
        ringed = [r for r in rows if r["ringed"]]
        assert ringed and all("Liger computes the gradients" in r["caveat"] for r in ringed)
        assert any(r["caveat"].startswith("implausible: ") and r["pct"] > 100 for r in rows)
        rings = figure.locator(".caveat_marks path")
        assert rings.count() == len(ringed)  # one ring per point with a caveat
        best = max(range(len(ringed)), key=lambda i: ringed[i]["pct"])
        rings.nth(best).hover(force=True)
        tip = page.wait_for_selector("#vg-tooltip-element.visible", timeout=10_000).inner_text()
        assert "implausible" in tip and "above 100 %" in tip and "compare providers on full" in tip, tip
        # the latency chart of the same pass rings its points too, with the pass's caveat only
        latency = page.locator("figure.chart[data-chart-kind='latency'][data-mode='forward']").first
        latency.scroll_into_view_if_needed()
        latency.locator(".vega[data-rendered='1'] svg").wait_for(timeout=30_000)
        lrows = latency.locator(".vega").evaluate("el => el.chartRows")
        assert lrows and all(r["ringed"] and not r["caveat"].startswith("implausible") for r in lrows)
        assert latency.locator(".caveat_marks path").count() == len(lrows)
        assert w.errors == []
    finally:
        w.close()
