"""Print, as markdown, each kernel's efficiency at its largest workload on one GPU (the README's table).

Per kernel (every kernel the records have on that GPU, with or without a cost model): the largest workload
(most bytes or FLOPs; without a cost model, the last case key) measured by its Liger provider at the newest
Liger version, its percent of the datasheet peak per pass for Liger and for the baseline providers, and where
it sits on the roofline (bound, arithmetic intensity where the cost model counts both FLOPs and bytes, the
GPU's ridge point for the case's dtype).

    .venv/bin/python scripts/efficiency_table.py ci/*/records.jsonl --gpu nvidia-h100-80gb-hbm3
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

from kernelindex_pipeline.records.canonical import digest_of
from kernelindex_pipeline.records.io import load_manifests
from kernelindex_pipeline.reporting.efficiency import (
    BYTES,
    IMPLAUSIBLE_FLAGS,
    TERA,
    default_peaks,
    derive_efficiency,
    format_pct,
)
from kernelindex_pipeline.reporting.series import MODE_ORDER, RecordIndex, build_series, parse_version


def _cell(facts) -> str:
    if facts is None:
        return "–"
    if facts.pct_of_peak is None:
        return "no cost model" if facts.status == "no cost model" else facts.status
    mark = " (implausible)" if any(f in IMPLAUSIBLE_FLAGS for f in facts.flags) else ""
    return f"{format_pct(facts.pct_of_peak)}{mark}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("records", nargs="+", type=Path)
    parser.add_argument("--gpu", default="nvidia-h100-80gb-hbm3")
    args = parser.parse_args(argv)
    manifests = {digest_of(m): m for path in args.records for _, m in load_manifests(path)}
    index = RecordIndex(manifests.values())
    report = derive_efficiency(index)
    peaks = default_peaks().get(args.gpu)
    # kernel -> mode -> role -> provider -> [(work, version, facts)]
    found: dict[str, dict[str, dict[str, list]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for s in build_series(index):
        if s.gpu_slug != args.gpu or s.latest is None or s.role not in ("liger", "baseline"):
            continue
        facts = report.runs.get(s.latest.run_digest)
        if facts is None:
            continue
        work = (facts.bytes if facts.bound == BYTES else facts.flops) or 0
        size = (work, facts.l2_set_bytes or 0, sum(s.workload.axes.values()), parse_version(s.latest.version))
        found[s.kernel][s.mode][s.role].append((size, s.provider, facts))
    print("| kernel | largest workload | bound by | pass | Liger | baseline | roofline |")
    print("| --- | --- | --- | --- | ---: | ---: | --- |")
    without = []
    for kernel in sorted(found):
        if all(
            f.status == "no cost model" for role in found[kernel].values() for xs in role.values() for _, _, f in xs
        ):
            without.append(kernel)
            continue
        for mode in sorted(found[kernel], key=lambda m: MODE_ORDER.index(m) if m in MODE_ORDER else 9):
            by_role = found[kernel][mode]
            liger = [x for x in by_role["liger"] if x[1] == "liger"] or by_role["liger"]
            if not liger:
                continue
            _, _, facts = max(liger, key=lambda x: x[0])
            case = facts.case_key
            baselines = [x for x in by_role["baseline"] if x[2].case_key == case]
            base = max(baselines, key=lambda x: x[0])[2] if baselines else None
            base_text = f"{_cell(base)} ({base.provider})" if base else "–"
            print(
                f"| {kernel} | {case} | {facts.bound or '–'} | {mode} | {_cell(facts)} | {base_text} | "
                f"{_roofline(facts, peaks)} |"
            )
    if without:
        print(f"\nNo cost model (reported as such, never 0 %): {', '.join(without)}.")
    return 0


def _roofline(facts, peaks) -> str:
    if facts.bound is None or peaks is None:
        return "–"
    ridge = (facts.peak or 0) / (peaks.hbmTBps * TERA) if facts.bound != BYTES else None
    if facts.bytes and facts.flops:
        intensity = facts.flops / facts.bytes
        dtype_peak = peaks.peak("flops", facts.dtype)
        ridge = dtype_peak / (peaks.hbmTBps * TERA) if dtype_peak else None
        side = "right of" if ridge and intensity > ridge else "left of"
        where = f"{intensity:,.0f} FLOP/B, {side} the {facts.dtype} ridge ({ridge:,.0f} FLOP/B)" if ridge else ""
    else:
        where = "memory-bound (bandwidth roof)" if facts.bound == BYTES else ""
    achieved = f"{facts.achieved / TERA:.3g} {facts.unit}"
    return f"{achieved}; {where}" if where else achieved


if __name__ == "__main__":
    sys.exit(main())
