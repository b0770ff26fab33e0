"""A catalogue's site built on its previous build (`build_catalogue_site`, issue 33): after any sequence of
publications (random subsets of runs as random partitions, a partition published again, a new GPU), the
incremental build's files are the bytes a full build into a fresh folder writes (the landing page's "Data
updated" section and the state's time aside); a missing, damaged or foreign state means a full build with a
warning; an unchanged catalogue reads no run."""

from __future__ import annotations

import json
import logging
import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kernelindex_pipeline.catalogue.origins import publication_origins
from kernelindex_pipeline.catalogue.store import CatalogueStore
from kernelindex_pipeline.detection.detect import detect_regressions
from kernelindex_pipeline.liger import import_csv
from kernelindex_pipeline.reporting.efficiency import derive_efficiency, write_sidecar
from kernelindex_pipeline.reporting.site import STATE_NAME, build_catalogue_site
from tests.support import FIXTURES
from tests.support.run_pool import EVERYTHING_ON_B200, SECOND_SENTINEL, STEPS, pool, publish

CHANGED_SECTION = re.compile(r'<section id="changed">.*?</section>', re.S)


def _build(store: CatalogueStore, out: Path, sidecar: Path | None = None, **options):
    """The site as the catalogue_report asset builds it; with `sidecar`, efficiency from the efficiency_table
    asset's sidecar (written there first), else derived by the site."""
    regressions = detect_regressions(store.manifests())
    if sidecar is not None:
        sidecar.mkdir(exist_ok=True)
        options["efficiency_sidecar"] = write_sidecar(derive_efficiency(store.manifests()), sidecar)
    return build_catalogue_site(
        store, out, regressions=regressions, publication_origins=publication_origins(store), **options
    )


def _differences(one: Path, two: Path) -> list[str]:
    """Files missing on a side or differing (the state's build time and the landing page's changed section aside)."""
    found = []
    names = {p.relative_to(one) for p in one.rglob("*") if p.is_file()}
    names |= {p.relative_to(two) for p in two.rglob("*") if p.is_file()}
    for name in sorted(names):
        a, b = one / name, two / name
        if not (a.is_file() and b.is_file()):
            found.append(f"{name} (only in {'the incremental build' if a.is_file() else 'the full build'})")
        elif name == Path(STATE_NAME):
            if {**json.loads(a.read_text()), "built": None} != {**json.loads(b.read_text()), "built": None}:
                found.append(str(name))
        elif name == Path("index.html"):
            if CHANGED_SECTION.sub("", a.read_text()) != CHANGED_SECTION.sub("", b.read_text()):
                found.append(str(name))
        elif a.read_bytes() != b.read_bytes():
            found.append(str(name))
    return found


@pytest.mark.slow
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example(steps=[(set(range(0, 30)), "ci:a", False), (set(range(30, 45)), "ci:a", True), (EVERYTHING_ON_B200, "sweep:h100", False)], from_sidecar=False)  # fmt: skip
@example(steps=[(set(range(0, 20)), "ci:a", False), (set(), "ci:a", True), (set(range(20, 25)), "ci:b", False)], from_sidecar=True)  # fmt: skip
@example(steps=[(set(range(len(pool()[0]))) - SECOND_SENTINEL, "ci:a", False), (SECOND_SENTINEL, "sweep:h100", False)], from_sidecar=False)  # fmt: skip
@example(steps=[(set(range(len(pool()[0]))) - SECOND_SENTINEL, "ci:a", False), (SECOND_SENTINEL, "sweep:h100", False)], from_sidecar=True)  # fmt: skip
@given(steps=STEPS, from_sidecar=st.booleans())
def test_an_incremental_build_writes_what_a_full_build_writes(steps, from_sidecar):
    runs = pool()[0]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        with CatalogueStore.open(f"sqlite:///{root / 'catalogue.sqlite'}") as store:
            by_partition: dict[str, list[dict]] = {}
            nightly = root / "nightly"
            for number, (chosen, partition, republish) in enumerate(steps):
                earlier = by_partition.get(partition, []) if republish else []
                brought = [*earlier, *(runs[i] for i in sorted(chosen))]
                by_partition.setdefault(partition, []).extend(runs[i] for i in sorted(chosen))
                if brought:
                    publish(store, brought, partition, number)
                sidecar = root / "efficiency" if from_sidecar else None
                site = _build(store, nightly, sidecar)
                fresh = _build(store, root / f"fresh-{number}", sidecar)
                assert fresh.full_rebuild is not None and (site.full_rebuild is None) == (number > 0)
                assert _differences(nightly, root / f"fresh-{number}") == []
                assert site.counts == {**fresh.counts, **{k: site.counts[k] for k in ("rewritten", "pagesRewritten", "pagesKept")}}  # fmt: skip
            again = _build(store, nightly, root / "efficiency" if from_sidecar else None)  # nothing rebuilt
            assert again.rebuilt == [] and again.full_rebuild is None


def _catalogue(root: Path, runs: list[dict], partition: str = "ci:a") -> CatalogueStore:
    store = CatalogueStore.open(f"sqlite:///{root / 'catalogue.sqlite'}")
    publish(store, runs, partition, 0)
    return store


def test_a_night_rebuilds_only_the_kernels_it_touched_and_says_so(tmp_path):
    runs = list(pool()[0])
    swiglu = [r for r in runs if r["spec"]["sourceNative"]["benchmark"].startswith("swiglu/")]
    with _catalogue(tmp_path, [r for r in runs if r not in swiglu[-2:]]) as store:
        first = _build(store, tmp_path / "site")
        assert first.full_rebuild == f"no {STATE_NAME} of a previous build in {tmp_path / 'site'}"
        assert first.recomputed.startswith(f"all {len(first.rebuilt)} kernels rebuilt from every record")
        publish(store, swiglu[-2:], "ci:b", 1)
        night = _build(store, tmp_path / "site")
    assert night.full_rebuild is None and night.rebuilt == ["swiglu"]
    assert night.changed == {"swiglu": "changed"} and night.rewritten == ["swiglu"]
    kernels = len(first.rebuilt)
    assert night.recomputed.startswith(f"1 of {kernels} kernels rebuilt (1 with runs from publications 2), ")
    assert f", {kernels - 1} kept from the previous build (publication 1); landing and regressions" in night.recomputed


class _Counting:
    """A catalogue that counts the run manifests it streams."""

    def __init__(self, store: CatalogueStore):
        self.store, self.runs = store, 0

    def __getattr__(self, name):
        return getattr(self.store, name)

    def records(self, kinds=None, **options):
        for digest, manifest in self.store.records(kinds, **options):
            self.runs += manifest["kind"] == "BenchmarkRun"
            yield digest, manifest

    def runs_by_external_id(self, prefixes):
        for row in self.store.runs_by_external_id(prefixes):
            self.runs += 1
            yield row


def test_an_unchanged_catalogue_reads_no_run(tmp_path):
    with _catalogue(tmp_path, list(pool()[0])) as store:
        regressions = detect_regressions(store.manifests())
        counting = _Counting(store)
        first = build_catalogue_site(counting, tmp_path / "site", regressions=regressions)
        assert counting.runs == len(pool()[0]) and first.full_rebuild is not None
        counting.runs = 0
        again = build_catalogue_site(counting, tmp_path / "site", regressions=regressions)
    assert counting.runs == 0
    assert again.rebuilt == [] and again.rewritten == [] and again.full_rebuild is None
    assert again.recomputed.startswith("0 of ")


def test_a_missing_damaged_or_foreign_state_means_a_full_build_with_a_warning(tmp_path, caplog):
    runs = list(pool()[0])
    with _catalogue(tmp_path, runs[:40]) as store:
        site = tmp_path / "site"
        _build(store, site)
        state = site / STATE_NAME
        for damage, why in (
            (lambda: state.unlink(), f"no {STATE_NAME} of a previous build"),
            (lambda: state.write_text('{"format": 3, "kernels": {'), f"{STATE_NAME} is damaged or of another format"),
            (
                lambda: state.write_text(json.dumps({**json.loads(state.read_text()), "stateFormat": 0})),
                "not a catalogue build's of this format",
            ),  # fmt: skip
        ):
            _build(store, site)
            damage()
            caplog.clear()
            with caplog.at_level(logging.WARNING, logger="kernelindex_pipeline.reporting.site"):
                result = _build(store, site)
            assert why in result.full_rebuild and why in caplog.text
            assert _differences(site, _build(store, tmp_path / f"fresh-{len(why)}").path.parent) == []
        rebuilt = _build(store, site, rebuild=True)
        assert rebuilt.full_rebuild == "a full rebuild was asked for" and rebuilt.rebuilt
    # another catalogue's build in the folder: its newest publication is not this catalogue's
    other = tmp_path / "other"
    other.mkdir()
    with _catalogue(other, runs[40:]) as store:
        publish(store, runs[:5], "ci:b", 1)
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="kernelindex_pipeline.reporting.site"):
            result = _build(store, site)
        assert "another catalogue" in result.full_rebuild and "another catalogue" in caplog.text
        assert _differences(site, _build(store, other / "fresh").path.parent) == []


def test_liger_ci_rows_published_in_two_nights_build_what_a_full_build_builds(tmp_path):
    """Real Liger CI rows (speed and peak-memory runs of some 40 kernels, profile full), the newest quarter of
    the runs published a night later: the kernels they touch are rebuilt, the others kept, the files a full
    build's."""
    manifests = list(import_csv(FIXTURES / "liger-ci-slice.csv", profile="full").manifests.values())
    runs = sorted((m for m in manifests if m["kind"] == "BenchmarkRun"), key=lambda m: m["spec"]["observedAt"])
    others = [m for m in manifests if m["kind"] != "BenchmarkRun"]
    cut = len(runs) * 3 // 4
    snapshot = {"locator": str(tmp_path / "a.csv"), "sha256": "0" * 64}
    with CatalogueStore.open(f"sqlite:///{tmp_path / 'catalogue.sqlite'}") as store:
        store.publish([*others, *runs[:cut]], partition="ci:a", source=snapshot, report=None)
        first = _build(store, tmp_path / "site")
        store.publish(
            runs[cut:], partition="ci:b", source={**snapshot, "locator": str(tmp_path / "b.csv")}, report=None
        )
        night = _build(store, tmp_path / "site")
        fresh = _build(store, tmp_path / "fresh")
    kernels = {m["spec"]["sourceNative"]["externalId"].split("/")[0] for m in runs[cut:]}
    assert night.full_rebuild is None and set(night.rebuilt) >= kernels
    assert 0 < len(night.rebuilt) < len(fresh.rebuilt) and len(first.rebuilt) < len(fresh.rebuilt)
    assert _differences(tmp_path / "site", tmp_path / "fresh") == []


def test_a_detection_result_the_previous_build_derived_from_is_not_derived_again(tmp_path, monkeypatch):
    """The result's digest (`made_from`, what detect_and_attribute was given) is the previous build's: no
    kernel's detection changed, and the per-point sources and fingerprints are not made again (a million points
    at 1M runs); another digest makes them again."""
    from kernelindex_pipeline.reporting import site

    with _catalogue(tmp_path, list(pool()[0])) as store:
        regressions = detect_regressions(store.manifests())
        regressions.made_from = "sha256:one"
        build_catalogue_site(store, tmp_path / "site", regressions=regressions)
        before = {p.relative_to(tmp_path): p.read_bytes() for p in (tmp_path / "site").rglob("*") if p.is_file()}
        derive = site._detection_of
        calls = []
        monkeypatch.setattr(site, "_detection_of", lambda report: calls.append(report) or derive(report))
        again = build_catalogue_site(store, tmp_path / "site", regressions=regressions)
        assert calls == [] and again.rebuilt == [] and again.rewritten == []
        after = {p.relative_to(tmp_path): p.read_bytes() for p in (tmp_path / "site").rglob("*") if p.is_file()}
        assert {k for k in before if before[k] != after.get(k)} <= {Path("site") / STATE_NAME, Path("site/index.html")}
        regressions.made_from = "sha256:another"
        build_catalogue_site(store, tmp_path / "site", regressions=regressions)
        assert calls == [regressions]
