"""The catalogue-wide refresh's stages as bench/night.py runs them (each in a process of its own there), as the
assets do them: importable without the bench's generator, so tests/test_refresh_incremental.py drives the same
code in-process. `STAGES` is their order (the export and the site read the efficiency stage's sidecar, the site
the regressions stage's result)."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

STAGES = ("efficiency", "export", "regressions", "site")


def run_stage(stage: str, store: Any, out: Path, state: Path) -> dict[str, Any]:
    """Run one stage on `store` (a CatalogueStore) into `out`, keeping what the next refresh reuses in `state`
    (the run table, judgement store and last result the asset keeps beside the catalogue and DAGSTER_HOME);
    what it recomputed, for the bench's line."""
    out.mkdir(parents=True, exist_ok=True)
    state.mkdir(parents=True, exist_ok=True)
    if stage == "efficiency":
        from kernelindex_pipeline.reporting.efficiency_parts import update_efficiency  # the efficiency_table asset's

        done = update_efficiency(store, out / "efficiency", low_threshold=0.3)
        return {
            "partsDerived": len(done.written),
            "partsKept": len(done.kept),
            "templatesRanked": len(done.templates_ranked),
            "warnings": done.warnings,
        }
    if stage == "export":
        from kernelindex_pipeline.catalogue.parts import export_parts
        from kernelindex_pipeline.reporting.efficiency import place_sidecar

        parts = export_parts(store, out / "exports")  # the asset's export: the parts since the last one
        place_sidecar(out / "efficiency" / "efficiency.jsonl", out / "exports")  # the efficiency stage's, as the asset
        return {"partsWritten": len(parts.written) + len(parts.repaired), "partsKept": len(parts.kept)}
    if stage == "regressions":
        from kernelindex_pipeline.catalogue.run_table import RunTable
        from kernelindex_pipeline.detection.settings import DetectionSettings
        from kernelindex_pipeline.liger.attribution import detect_and_attribute

        table = RunTable(state / "run-table")  # the asset's is beside the catalogue; each folder its own here
        update = table.update(store, made_before=(state / "last-result.pickle").exists())
        result, _ = detect_and_attribute(
            table.facts(store),
            DetectionSettings(),
            None,
            judgement_store=state / "judgements",
            marks=store.acknowledgements(),
            previous=state / "last-result.pickle",
        )
        (state / "regressions.pickle").write_bytes(pickle.dumps(result))
        (out / "regressions.md").write_text(result.markdown())
        return {
            "runTableRowsRead": update.rows_written,
            "runTableWarnings": update.warnings,
            "keptWhole": result.judgements.kept_whole,
            "seriesRejudged": result.judgements.rejudged,
            "seriesReused": result.judgements.reused,
        }
    if stage == "site":  # as the catalogue_report asset: on the previous build in its folder
        from kernelindex_pipeline.reporting.site import build_catalogue_site

        result = pickle.loads((state / "regressions.pickle").read_bytes())  # the regressions stage's, just written
        site = build_catalogue_site(
            store,
            out / "report",
            coverage=[],
            regressions=result,
            efficiency_sidecar=out / "efficiency" / "efficiency.jsonl",
        )
        return {
            "kernels": site.counts["kernels"],
            "kernelPagesRewritten": site.counts["rewritten"],
            "kernelsRebuilt": len(site.rebuilt),
            "recomputed": site.recomputed,
        }
    raise ValueError(f"no stage {stage!r}; stages: {', '.join(STAGES)}")
