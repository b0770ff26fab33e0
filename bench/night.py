"""Benchmark of the night (issue 33): what one nightly sweep costs the catalogue-wide refresh.

Builds a synthetic SQLite catalogue (bench/efficiency.py's generator: `--series` series x `--sweeps` nightly
sweeps on one H100 environment, published in batches), refreshes every catalogue-wide stage into one output
folder (the first, full refresh), then plays three nights, each followed by the refresh into the same folder
(as the nightly automation does) and by a full rebuild into a fresh folder, whose files must be the same bytes:

- `sweep`: one new sweep partition of `--night-runs` runs on the GPU the catalogue has (the next day's runs
  of the first series);
- `new-gpu`: a partition of `--night-runs` runs on a GPU the catalogue had not seen (a new environment);
- `nothing`: no publication at all.

Each stage runs in a fresh process that reports its wall and CPU seconds and its peak RSS (VmHWM), as a
Dagster run's step would, in the order the assets depend on each other: `efficiency` (the efficiency_table
asset's: reporting/efficiency_parts.py, the publications since the last refresh derived, the sidecar merged
from the parts), `export` (the asset's export per publication, catalogue/parts.py: JSON Lines and Parquet parts
and their manifest, then the efficiency stage's sidecar placed beside them; not the KernelIndex files, which
need records the synthetic runs only name by a placeholder digest), `regressions` (detection with Liger's
adapter from the run table, catalogue/run_table.py, and the judgement store, both kept beside the folder
between nights, as the asset keeps them), `site` (the catalogue_report asset's: build_catalogue_site with the
regressions result and the efficiency stage's sidecar, on the previous build in its folder).

    .venv/bin/python bench/night.py --series 4000 --sweeps 250      # the issue's 1M runs (long on two cores)
    .venv/bin/python bench/night.py --series 1000 --sweeps 20       # 20k runs, a few minutes

Prints one JSON line per (night, stage) and whether the night's outputs equal the rebuild's; exits 1 if any
differs. Each stage's line says what it recomputed (parts derived or written, run-table rows read, series
judged again or the previous result kept whole, kernels rebuilt); where anything changed, detection still
estimates every GPU's host effects and reads every run's facts from the run table.
"""

from __future__ import annotations

import argparse
import copy
import filecmp
import itertools
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from efficiency import catalogue as synthetic_catalogue  # noqa: E402
from night_stages import STAGES  # noqa: E402

from kernelindex_pipeline.catalogue.store import CatalogueStore  # noqa: E402
from kernelindex_pipeline.records.canonical import digest_of  # noqa: E402
from kernelindex_pipeline.records.names import kebab  # noqa: E402

BATCH = 50_000
# files whose bytes carry the time they were written, compared without that field
STAMPED = {
    "kernelindex-catalogue.jsonl.manifest.json": "generatedAt",
    "kernelindex-catalogue.parts.json": "generatedAt",
    "site-state.json": "built",
}
# the landing page's "Data updated" section says what changed since the previous build in its folder (a rebuild
# into a fresh folder: "First build"); compared without it
CHANGED_SECTION = re.compile(r'<section id="changed">.*?</section>', re.S)


def build(url: str, series: int, sweeps: int) -> None:
    stream = synthetic_catalogue(series, sweeps)
    with CatalogueStore.open(url) as store:
        for number in itertools.count():
            batch = list(itertools.islice(stream, BATCH))
            if not batch:
                break
            store.publish(batch, partition=f"bench-{number}", source=None, report=None)


def night_records(url: str, runs: int, night: int, *, new_gpu: bool) -> list[dict]:
    """`runs` runs one day after the newest of the catalogue's first `runs` series (their newest runs moved a
    day on, values 1 % slower), on the catalogue's GPU or, with `new_gpu`, on a new environment."""
    with CatalogueStore.open(url, read_only=True) as store:
        environment = next(store.manifests(kinds=["ExecutionEnvironment"]))
        newest: dict[str, dict] = {}
        for run in store.manifests(kinds=["BenchmarkRun"]):
            series = run["metadata"]["name"].rsplit("-", 1)[0]
            if series not in newest or run["spec"]["observedAt"] > newest[series]["spec"]["observedAt"]:
                newest[series] = run
    records = []
    if new_gpu:
        environment = copy.deepcopy(environment)
        environment["metadata"]["name"] = f"liger-bench-b200-{night}"
        environment["spec"]["hardware"] = {"vendor": "nvidia", "product": "NVIDIA B200", "architecture": "sm_100"}
        records.append(environment)
    for name in sorted(newest)[:runs]:
        run = copy.deepcopy(newest[name])
        spec = run["spec"]
        day = time.strptime(spec["observedAt"][:19], "%Y-%m-%dT%H:%M:%S")
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(time.mktime(day) - time.timezone + 86400 * night))
        spec["observedAt"] = stamp
        spec["timing"]["latencyNs"]["median"] = int(spec["timing"]["latencyNs"]["median"] * 1.01)
        head = spec["sourceNative"]["externalId"].rsplit("/", 1)[0]  # kernel/mode/provider/gpu/case
        if new_gpu:
            head = head.replace("/nvidia-h100-80gb-hbm3/", "/nvidia-b200/")
        spec["sourceNative"]["externalId"] = head + "/" + kebab(stamp)
        spec["environmentDigest"] = digest_of(environment)
        run["metadata"]["name"] = f"{name}-night{night}{'-b200' if new_gpu else ''}"
        records.append(run)
    return records


# ------------------------------------------------------------------------------------------ one stage, one process

STAGE = """
import json, sys, time
from pathlib import Path
stage, url, out, state, bench = sys.argv[1:6]
wall, cpu = time.perf_counter(), time.process_time()
sys.path.insert(0, bench)
from night_stages import run_stage
from kernelindex_pipeline.catalogue.store import CatalogueStore
with CatalogueStore.open(url, read_only=True) as store:
    note = run_stage(stage, store, Path(out), Path(state))
peak = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM"))
print(json.dumps({"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu, "peakMiB": peak / 1024,
                  **note}))
"""


def refresh(url: str, out: Path, state: Path) -> dict[str, dict]:
    state.mkdir(parents=True, exist_ok=True)
    stages = {}
    for stage in STAGES:
        done = subprocess.run(
            [sys.executable, "-c", STAGE, stage, url, str(out), str(state), str(Path(__file__).parent)],
            capture_output=True,
            text=True,
        )
        if done.returncode:
            raise SystemExit(f"stage {stage} exited {done.returncode}: {done.stderr[-3000:]}")
        stages[stage] = json.loads(done.stdout.strip().splitlines()[-1])
    return stages


def differences(one: Path, two: Path) -> list[str]:
    """Files of `one` and `two` (recursively) that are missing on a side or differ (STAMPED fields aside)."""
    found = []
    names = {p.relative_to(one) for p in one.rglob("*") if p.is_file()} | {
        p.relative_to(two) for p in two.rglob("*") if p.is_file()
    }
    for name in sorted(names):
        a, b = one / name, two / name
        if not (a.is_file() and b.is_file()):
            found.append(f"{name} (only in {'the night' if a.is_file() else 'the rebuild'})")
        elif name.name in STAMPED:
            field = STAMPED[name.name]
            if {**json.loads(a.read_text()), field: None} != {**json.loads(b.read_text()), field: None}:
                found.append(str(name))
        elif name == Path("report/index.html"):
            if CHANGED_SECTION.sub("", a.read_text()) != CHANGED_SECTION.sub("", b.read_text()):
                found.append(str(name))
        elif not filecmp.cmp(a, b, shallow=False):
            found.append(str(name))
    return found


def _load() -> str:
    return f"{os.getloadavg()[0]:.2f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--series", type=int, default=1000)
    parser.add_argument("--sweeps", type=int, default=20)
    parser.add_argument("--night-runs", type=int, default=300)
    parser.add_argument("--keep", help="work in this folder and keep it (default: a temporary one)")
    args = parser.parse_args()
    tmp = Path(args.keep or tempfile.mkdtemp(prefix="night-"))
    url = f"sqlite:///{tmp}/catalogue.sqlite"
    start = time.perf_counter()
    build(url, args.series, args.sweeps)
    print(json.dumps({"built": args.series * args.sweeps, "seconds": round(time.perf_counter() - start, 1)}))
    failed = False
    for number, night in enumerate(("full", "sweep", "new-gpu", "nothing")):
        if night in ("sweep", "new-gpu"):
            records = night_records(url, args.night_runs, number, new_gpu=night == "new-gpu")
            with CatalogueStore.open(url) as store:
                store.publish(records, partition=f"night-{number}-{night}", source=None, report=None)
        load = _load()
        stages = refresh(url, tmp / "nightly", tmp / "nightly-state")
        total = {k: round(sum(s[k] for s in stages.values()), 1) for k in ("wall", "cpu")}
        for stage, row in stages.items():
            row = {k: round(v, 1) if isinstance(v, float) else v for k, v in row.items()}
            print(json.dumps({"night": night, "stage": stage, **row}))
        line = {"night": night, "refresh": total, "peakMiB": round(max(s["peakMiB"] for s in stages.values()))}
        if night != "full":
            rebuild = tmp / f"rebuild-{number}"
            refresh(url, rebuild, tmp / f"rebuild-{number}-state")
            found = differences(tmp / "nightly", rebuild)
            line["sameAsRebuild"] = not found
            if found:
                line["differs"] = found[:10]
                failed = True
        print(json.dumps({**line, "load": [load, _load()]}), flush=True)
    if not args.keep:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
