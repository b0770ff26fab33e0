"""Benchmark: regression detection over a catalogue of 1M runs (issue 9: under a minute).

A synthetic catalogue shaped like Liger's CI: S series (kernels x providers x cases on one H100) over R
nightly sweeps (S x R = runs), each sweep's rows minutes apart, log-normal noise that is larger for
short kernels, one slow host run, a Liger release every 30 sweeps that speeds up 5 % of the series by
30 %, and a torch upgrade halfway. Only BenchmarkRun manifests (detection reads nothing else), built in
memory before the clock starts; the time is `detect_regressions(manifests)`, the same call the Dagster
asset makes over `store.manifests()`.

    .venv/bin/python bench/regressions.py                      # 1M runs: 4,000 series x 250 sweeps
    .venv/bin/python bench/regressions.py --series 100000 --sweeps 10
    .venv/bin/python bench/regressions.py --series 2000 --sweeps 50   # quick
    .venv/bin/python bench/regressions.py --judgement-store /tmp/j.json  # then again, reusing the judgements

With --judgement-store FILE (emptied first) the detection runs a second time over the same runs, as a refresh
whose series are unchanged does: every judgement comes from the store (detection/judgements.py).
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import sys
import time
from datetime import UTC, datetime, timedelta

import numpy as np

from kernelindex_pipeline.detection.detect import detect_regressions
from kernelindex_pipeline.detection.document import regressions_json
from kernelindex_pipeline.liger.attribution import LigerAttribution

DIGEST = "sha256:" + "0" * 64


def catalogue(series: int, sweeps: int, seed: int = 7) -> tuple[list[dict], dict]:
    rng = np.random.default_rng(seed)
    kernels = [f"kernel{k:03d}" for k in range(max(1, series // 40))]
    level = np.exp(rng.uniform(math.log(5e3), math.log(5e7), size=series))  # 5 us .. 50 ms
    noise = np.where(level < 1e5, 0.08, 0.02)
    values = level[:, None] * np.exp(rng.normal(0.0, noise[:, None], size=(series, sweeps)))
    slow = sweeps // 3
    values[:, slow] *= np.where(level < 1e5, 1.8, 1.05)  # one slow host: short kernels 1.8x
    versions = [f"0.{9 + j // 30}.0" for j in range(sweeps)]
    changed = rng.random(series) < 0.05
    for j in range(30, sweeps, 30):
        values[changed & (rng.random(series) < 0.5), j:] *= 0.7
    software = ["sha256:" + ("a" if j < sweeps // 2 else "b") * 64 for j in range(sweeps)]
    start = datetime(2025, 1, 1, tzinfo=UTC)
    names = [(kernels[i % len(kernels)], "liger" if i % 2 else "torch", f"case{i}") for i in range(series)]
    workload = [f"sha256:{i:064x}" for i in range(series)]
    runs = []
    for j in range(sweeps):
        t0 = start + timedelta(days=j)
        for i in range(series):
            stamp = (t0 + timedelta(seconds=i % 3000)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
            kernel, provider, case = names[i]
            runs.append(
                {
                    "kind": "BenchmarkRun",
                    "metadata": {"labels": {"liger_version": versions[j]}},
                    "spec": {
                        "implementationDigest": DIGEST,
                        "workloadDigest": workload[i],
                        "protocolDigest": DIGEST,
                        "environmentDigest": software[j],
                        "status": "passed",
                        "observedAt": stamp,
                        "timing": {"latencyNs": {"median": int(values[i, j])}},
                        "sourceNative": {
                            "source": "liger-kernel-bench",
                            "externalId": f"{kernel}/forward/{provider}/nvidia-h100-80gb-hbm3/{case}/{stamp}",
                        },
                    },
                }
            )
    return runs, {"slow sweep": slow, "changed series": int(changed.sum())}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", type=int, default=4000)
    parser.add_argument("--sweeps", type=int, default=250)
    parser.add_argument("--judgement-store", metavar="FILE", help="detect twice, the second time reusing FILE")
    args = parser.parse_args()
    if args.judgement_store and os.path.exists(args.judgement_store):
        os.remove(args.judgement_store)
    t = time.perf_counter()
    runs, facts = catalogue(args.series, args.sweeps)
    print(
        f"built {len(runs):,} runs ({args.series:,} series x {args.sweeps} sweeps) in {time.perf_counter() - t:.1f} s; {facts}"
    )
    t, cpu = time.perf_counter(), time.process_time()
    # as the CLI and the asset: Liger's adapter, then attribution (no clone here: the runs of a catalogue
    # name no commit; causes come from the footprint and the toolchain timeline)
    liger = LigerAttribution(None)
    report = detect_regressions(runs, adapters=liger.adapters, judgement_store=args.judgement_store)
    detected = time.perf_counter() - t
    liger.attribute(report)
    elapsed, cpu = time.perf_counter() - t, time.process_time() - cpu
    print(report.summary())
    by_cause = report.counts()["byCause"]
    # CPU time beside the wall time: on a shared machine the wall time also counts other processes' turns
    print(
        f"detect_regressions + attribution: {elapsed:.1f} s wall, {cpu:.1f} s CPU (attribution {elapsed - detected:.1f} s) for "
        f"{len(runs):,} runs ({len(runs) / elapsed:,.0f} runs/s); "
        f"changes by cause {by_cause}; peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB"
    )
    if args.judgement_store:
        _again(runs, args.judgement_store, regressions_json(report))
    return 0 if elapsed < 60 else 1


def _again(runs: list[dict], store: str, first: dict) -> None:
    """The refresh of an unchanged catalogue: detection again with the store the first one wrote."""
    t, cpu = time.perf_counter(), time.process_time()
    liger = LigerAttribution(None)
    again = detect_regressions(runs, adapters=liger.adapters, judgement_store=store)
    liger.attribute(again)
    elapsed, cpu = time.perf_counter() - t, time.process_time() - cpu
    same = "the same report" if regressions_json(again) == first else "A DIFFERENT REPORT"
    print(
        f"again with the store: {elapsed:.1f} s wall, {cpu:.1f} s CPU; {again.judgements.line()}; {same}; "
        f"store {os.path.getsize(store) / 2**20:.1f} MiB"
    )


if __name__ == "__main__":
    sys.exit(main())
