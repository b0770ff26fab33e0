"""Benchmark: the site at scale (issue 21: full build at 1M synthetic runs <= 120 s and <= 2 GiB; landing page
and any kernel page <= 2 s to first chart in headless Chromium).

The catalogue is bench/efficiency.py's synthetic one (S series x R sweeps of latency runs on one H100, real
WorkloadCases of curated kernels). Measured in this process (peak RSS from ru_maxrss, so run one size per call):

- `build`: `build_site` streaming the synthetic catalogue (made as it is read, as a catalogue's
  `store.manifests()` is: the peak RSS is the build's, not a list of the manifests'; the stages every build
  runs: series, detection, efficiency, then the pages and data), wall and CPU seconds; a second build of the
  same catalogue from a fresh stream (nothing changed: no kernel rewritten);
- `first chart`: headless Chromium (Debian's, through Playwright) opens the landing page, then each kernel page,
  from file://; the time from navigation to the first drawn chart (`[data-rendered='1'] svg`).

    .venv/bin/python bench/site_scale.py --series 4000 --sweeps 25     # 100k runs
    .venv/bin/python bench/site_scale.py --series 4000 --sweeps 250    # 1M runs (long on two cores)
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from efficiency import catalogue as synthetic_catalogue  # noqa: E402

from kernelindex_pipeline.reporting.site import build_site  # noqa: E402

CHROMIUM = "/usr/bin/chromium"


def first_charts(site: Path) -> dict[str, float]:
    from playwright.sync_api import sync_playwright

    pages = [site / "index.html", *sorted((site / "kernels").glob("*.html"))]
    timings = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"]
        )
        page = browser.new_page(viewport={"width": 1300, "height": 1000})
        for path in pages:
            start = time.perf_counter()
            page.goto(path.resolve().as_uri())
            page.wait_for_selector("[data-rendered='1'] svg", timeout=120_000)
            timings[path.name] = round(time.perf_counter() - start, 2)
        browser.close()
    return timings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--series", type=int, default=4000)
    parser.add_argument("--sweeps", type=int, default=25)
    parser.add_argument("--no-browser", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="site-scale-") as tmp:
        cpu, start = time.process_time(), time.perf_counter()
        result = build_site(synthetic_catalogue(args.series, args.sweeps), tmp)
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
        again = time.perf_counter()
        second = build_site(synthetic_catalogue(args.series, args.sweeps), tmp)
        row = {
            "runs": result.counts["runs"],
            "series": result.counts["series"],
            "kernels": result.counts["kernels"],
            "buildSeconds": round(wall, 1),
            "buildCpuSeconds": round(cpu, 1),
            "rebuildSeconds": round(time.perf_counter() - again, 1),
            "rebuildRewritten": len(second.rewritten),
            "peakRssMiB": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
            "siteBytes": sum(p.stat().st_size for p in Path(tmp).rglob("*") if p.is_file()),
            "largestKernelDataBytes": max(p.stat().st_size for p in (Path(tmp) / "data").glob("*.js")),
        }
        if not args.no_browser:
            timings = first_charts(Path(tmp))
            row |= {
                "landingFirstChartSeconds": timings["index.html"],
                "slowestKernelFirstChartSeconds": max(v for k, v in timings.items() if k != "index.html"),
            }
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
