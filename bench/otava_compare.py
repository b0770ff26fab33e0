"""Apache Otava (E-Divisive, the Hunter split/merge) against this project's detector, on the same series.

Otava pins numpy==2.2.* and scipy<1.17 and pulls BigQuery, Slack, PostgreSQL and gRPC clients, so it
lives in a virtual environment of its own; this script runs there for the Otava half (``--otava``,
which imports nothing of this project) and in the project's environment for the rest:

    python3 -m venv /tmp/otava-venv && /tmp/otava-venv/bin/pip install apache-otava
    for f in ../shared/data/liger-ci/*.csv; do
        .venv/bin/kernelindex-pipeline transform "$f" --out /tmp/liger-ci/$(basename "$f" .csv)
    done
    .venv/bin/python bench/otava_compare.py --otava-python /tmp/otava-venv/bin/python /tmp/liger-ci/*/records.jsonl

Every series this detector judges is given to Otava twice: as measured (what Otava sees on its own) and
with this detector's host effects taken out (Otava's change points on the same cleaned input). Otava
runs with its defaults (window 50, max p-value 0.001) and the same minimum effect (5 %). Reported per
detector: changes, changes between the same-code pair (7644a0f-v0.7.0 -> 7644a0f), the layer_norm #945
backward speed-up between 0.6.3 and 0.6.4, the cpo/simpo forward drop at 0.6.1, and the time.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PAIR = ("7644a0f-v0.7.0", "7644a0f")


def run_otava(series_file: Path, out_file: Path, min_effect: float) -> None:
    """(In Otava's environment.) Change points of every series, raw and host-corrected."""
    from otava.analysis import compute_change_points

    data = json.loads(series_file.read_text())
    results = {}
    for variant in ("raw", "corrected"):
        start = time.perf_counter()
        found = []
        for values in data[variant]:
            points, _ = compute_change_points(values, window_len=50, max_pvalue=0.001, min_magnitude=min_effect)
            found.append([[int(p.index), float(p.stats.mean_2 / p.stats.mean_1)] for p in points])
        results[variant] = {"changes": found, "seconds": time.perf_counter() - start}
    out_file.write_text(json.dumps(results))


def figures(trends, changes_of) -> dict:
    """The comparison figures for one detector: changes_of(i) = [(index, ratio)] for trend i."""
    total = pair = ln = cpo = host = 0
    cpo_kernels = set()
    for i, t in enumerate(trends):
        for index, ratio in changes_of(i):
            total += 1
            before, after = t.sources[index - 1], t.sources[index]
            if (before, after) == PAIR:
                pair += 1
            if before in PAIR or after in PAIR and before not in PAIR:  # into or out of the slow-host pair
                host += 1
            versions = (t.versions[index - 1], t.versions[index])
            if (
                (t.key.kernel, t.key.mode, t.key.provider) == ("layer_norm", "backward", "liger")
                and versions == ("0.6.3", "0.6.4")
                and ratio < 1
            ):
                ln += 1
            if (
                t.key.kernel in ("fused_linear_cpo_loss", "fused_linear_simpo_loss")
                and t.key.mode == "forward"
                and versions == ("0.6.0", "0.6.1")
                and ratio < 0.1
            ):
                cpo += 1
                cpo_kernels.add(t.key.kernel)
    return {
        "changes": total,
        "atSlowHostPairEdges": host,
        "samePairChanges": pair,
        "samePairShare": round(pair / max(1, len(trends)), 4),
        "layerNorm945": ln,
        "cpoSimpoAt061": cpo,
        "cpoSimpoKernels": sorted(cpo_kernels),
    }


def synthetic(seed: int = 11):
    """Known answers: 200 series of 10 runs, 3 % noise, a 20 % step at run 5 (in panels of 24 series, the
    step in one); and 200 panels of 24 series, 10 % noise, one run of all of them 1.8x slower."""
    import numpy as np

    rng = np.random.default_rng(seed)
    steps = []
    for _ in range(200):
        panel = 2e5 * np.exp(rng.normal(0, 0.03, size=(24, 10)))
        panel[0, 5:] *= 1.2
        steps.append(panel)
    slow = []
    for _ in range(200):
        panel = 2e5 * np.exp(rng.normal(0, 0.10, size=(24, 10)))
        panel[:, int(rng.integers(1, 9))] *= 1.8
        slow.append(panel)
    return steps, slow


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("records", nargs="*", type=Path)
    parser.add_argument("--otava-python", help="the python of a virtual environment with apache-otava installed")
    parser.add_argument("--otava", nargs=2, type=Path, metavar=("SERIES", "OUT"), help=argparse.SUPPRESS)
    parser.add_argument("--min-effect", type=float, default=0.05)
    parser.add_argument("--synthetic-otava", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.otava:
        run_otava(*args.otava, args.min_effect)
        return 0
    if args.synthetic_otava:
        from otava.analysis import compute_change_points

        steps, slow = synthetic()
        hits = sum(
            1
            for p in steps
            if [int(c.index) for c in compute_change_points(list(p[0]), 50, 0.001, args.min_effect)[0]] == [5]
        )
        false = sum(len(compute_change_points(list(row), 50, 0.001, args.min_effect)[0]) for p in slow for row in p)
        print(
            json.dumps(
                {
                    "stepFoundAtRun5": hits,
                    "of": len(steps),
                    "changesInNoiseWithSlowRun": false,
                    "series": 24 * len(slow),
                }
            )
        )
        return 0

    from kernelindex_pipeline.detection.detect import detect_in_record_files
    from kernelindex_pipeline.detection.settings import DetectionSettings

    start = time.perf_counter()
    report = detect_in_record_files(args.records, DetectionSettings(min_effect=args.min_effect))
    ours_seconds = time.perf_counter() - start
    trends = report.trends
    ours = figures(trends, lambda i: [(s.index, math.exp(s.log_ratio)) for s in trends[i].splits])
    print(
        f"this detector: {json.dumps(ours)}; {ours_seconds:.2f} s for {report.runs:,} runs and {len(trends)} judged series "
        "(loading the files included)"
    )
    with tempfile.TemporaryDirectory() as tmp:
        series_file, out_file = Path(tmp) / "series.json", Path(tmp) / "otava.json"
        series_file.write_text(
            json.dumps(
                {"raw": [t.values.tolist() for t in trends], "corrected": [t.corrected.tolist() for t in trends]}
            )
        )
        subprocess.run(
            [
                args.otava_python,
                __file__,
                "--otava",
                str(series_file),
                str(out_file),
                "--min-effect",
                str(args.min_effect),
            ],
            check=True,
        )
        otava = json.loads(out_file.read_text())
    for variant in ("raw", "corrected"):
        found = otava[variant]["changes"]
        result = figures(trends, lambda i, found=found: [(index, ratio) for index, ratio in found[i]])
        print(
            f"Otava ({'as measured' if variant == 'raw' else 'host effects taken out by this detector'}): "
            f"{json.dumps(result)}; {otava[variant]['seconds']:.2f} s for the change points alone"
        )

    _synthetic_comparison(args)
    return 0


def _synthetic_comparison(args: argparse.Namespace) -> None:
    """Synthetic series with known answers, through detect_regressions (panels as catalogues) and Otava."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository: tests.reporting
    from kernelindex_pipeline.detection.detect import detect_regressions
    from tests.detection.test_detect import panel as as_runs

    steps, slow = synthetic()
    hits = 0
    for p in steps:
        found = [
            c.split.index
            for c in detect_regressions(as_runs(p)).changes
            if c.key.kernel == "kernel0" and c.trend.case_key == "case0"
        ]
        hits += found == [5]
    false = sum(len(detect_regressions(as_runs(p)).changes) for p in slow)
    print(
        f"synthetic, this detector: {json.dumps({'stepFoundAtRun5': hits, 'of': len(steps), 'changesInNoiseWithSlowRun': false, 'series': 24 * len(slow)})}"
    )
    otava_synthetic = subprocess.run(
        [args.otava_python, __file__, "--synthetic-otava", "--min-effect", str(args.min_effect)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    print(f"synthetic, Otava: {otava_synthetic}")


if __name__ == "__main__":
    sys.exit(main())
