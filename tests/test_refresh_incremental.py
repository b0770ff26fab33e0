"""The catalogue-wide refresh as a whole (issue 33): after any sequence of nights (a sweep on the catalogue's GPU,
a new GPU, a partition published again, nothing), the incremental refresh's outputs (efficiency, export,
regressions, site: bench/night_stages.py, the assets' code) are those of a full rebuild into a fresh folder, also
when the run table or the efficiency parts kept between refreshes were damaged or lost (read again, warned)."""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kernelindex_pipeline.catalogue.store import CatalogueStore
from tests.support import ROOT

sys.path.insert(0, str(ROOT / "bench"))
import night  # noqa: E402
from night_stages import STAGES, run_stage  # noqa: E402

NIGHTS = st.lists(
    st.sampled_from(["sweep", "new-gpu", "republish", "nothing", "lose the run table", "damage the efficiency parts"]),
    min_size=1,
    max_size=4,
)


def _refresh(url: str, out: Path, state: Path) -> dict[str, dict]:
    with CatalogueStore.open(url, read_only=True) as store:
        return {stage: run_stage(stage, store, out, state) for stage in STAGES}


@pytest.mark.slow
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example(nights=["sweep", "new-gpu", "republish", "nothing"])
@example(nights=["lose the run table", "damage the efficiency parts"])
@given(nights=NIGHTS)
def test_after_any_nights_the_incremental_refresh_writes_what_a_full_rebuild_writes(nights):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        url = f"sqlite:///{root}/catalogue.sqlite"
        night.build(url, series=40, sweeps=6)
        nightly, state = root / "nightly", root / "nightly-state"
        _refresh(url, nightly, state)
        published: list[tuple[str, list[dict]]] = []
        for number, what in enumerate(nights, start=1):
            if what in ("sweep", "new-gpu"):
                records = night.night_records(url, 12, number, new_gpu=what == "new-gpu")
                published.append((f"night-{number}-{what}", records))
            elif what == "republish" and published:
                partition, records = published[-1]
                published.append((partition, records[: len(records) // 2]))  # part of it again: nothing new
            if what in ("sweep", "new-gpu", "republish") and published:
                with CatalogueStore.open(url) as store:
                    store.publish(published[-1][1], partition=published[-1][0], source=None, report=None)
            if what == "lose the run table":
                shutil.rmtree(state / "run-table")
            elif what == "damage the efficiency parts":
                part = sorted((nightly / "efficiency" / "parts").iterdir())[0]
                part.write_bytes(part.read_bytes()[:-10])
            said = _refresh(url, nightly, state)
            if what == "lose the run table":
                assert said["regressions"]["runTableRowsRead"] > 0  # every publication read again, saying why
                assert "gone (its caller made it before)" in said["regressions"]["runTableWarnings"][0]
            elif what == "damage the efficiency parts":
                assert "its file is damaged (sha256 differs); derived again" in said["efficiency"]["warnings"][0]
            else:
                assert said["regressions"]["runTableWarnings"] == said["efficiency"]["warnings"] == []
            rebuild = root / f"rebuild-{number}"
            _refresh(url, rebuild, root / f"rebuild-{number}-state")
            assert night.differences(nightly, rebuild) == [], f"after {nights[:number]}"
