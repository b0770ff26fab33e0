"""A catalogue's site built on its previous build (`build_catalogue_site`, issue 33): after any sequence of
publications (random subsets of runs as random partitions, a partition published again, a new GPU), the
incremental build's files are the bytes a full build into a fresh folder writes (the landing page's "Data
updated" section and the state's time aside); a missing, damaged or foreign state means a full build with a
warning; an unchanged catalogue reads no run."""

from __future__ import annotations

import functools
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
from kernelindex_pipeline.records.canonical import digest_of
from kernelindex_pipeline.reporting.efficiency import derive_efficiency, write_sidecar
from kernelindex_pipeline.reporting.site import STATE_NAME, build_catalogue_site
from tests.support import FIXTURES
from tests.support.factories import SampleCatalogue

CHANGED_SECTION = re.compile(r'<section id="changed">.*?</section>', re.S)
B200 = "NVIDIA B200"


@functools.cache
def _pool() -> tuple[tuple[dict, ...], dict[str, dict]]:
    """(runs, the other records by digest): rms_norm on H100 (two passes, providers and sizes, two versions, a
    peak-memory series), softmax on H100 (with a percent of peak), a copy sentinel on H100 (its ceiling),
    swiglu on A100, and geglu and rms_norm on a B200."""
    catalogue = SampleCatalogue()
    runs = []
    for day in range(6):
        version = "0.8.0" if day < 3 else "0.8.1"
        stamp = f"2025-03-{day + 1:02d} 00:00:00"
        for mode in ("forward", "backward"):
            for provider, cost in (("liger", 1.0), ("torch", 2.0)):
                for seq in (1024, 2048):
                    slower = 1.3 if (provider, mode, version) == ("liger", "forward", "0.8.1") else 1.0
                    runs.append(
                        catalogue.run(
                            mode=mode,
                            provider=provider,
                            axes={"seq": seq, "hidden": 4096},
                            version=version,
                            median_ns=int(seq * 1000 * cost * slower * (1 + 0.01 * (day % 3))),
                            timestamp=stamp,
                        )
                    )
        for provider, cost in (("liger", 1.0), ("torch", 1.6)):  # bytes-bound: a percent of peak
            runs.append(
                catalogue.run(
                    kernel="softmax",
                    provider=provider,
                    axes={"rows": 4096, "hidden": 4096},
                    dtype="fp32",
                    tensors={"x": {"shape": [4096, 4096], "dtype": "fp32"}},
                    version=version,
                    median_ns=int(60_000 * cost * (1 + 0.02 * (day % 2))),
                    timestamp=stamp,
                )
            )
        if day < 2:
            runs.append(catalogue.memory_run(version=version, mib=100 + day, timestamp=stamp))
        if day in (0, 4):  # a sweep's copy sentinel: the H100 host's measured ceiling, moved by its second run
            runs.append(
                catalogue.run(
                    kernel="sentinel_copy_1gib",
                    mode="start",
                    provider="torch",
                    axes={"elements": 2**28},
                    dtype="fp32",
                    tensors={"source": {"shape": [2**28], "dtype": "fp32"}},
                    median_ns=800_000 - 100_000 * day,
                    timestamp=stamp,
                )
            )
        if day < 4:
            for provider in ("liger", "huggingface"):
                runs.append(
                    catalogue.run(
                        kernel="swiglu",
                        mode="full",
                        provider=provider,
                        gpu="NVIDIA A100-SXM4-80GB",
                        axes={"batch": 4, "seq": 2048},
                        version="0.8.1",
                        median_ns=3_000_000 + day,
                        timestamp=stamp,
                    )
                )
            for kernel in ("geglu", "rms_norm"):
                runs.append(
                    catalogue.run(kernel=kernel, gpu=B200, version="0.8.1", median_ns=500_000 + day, timestamp=stamp)
                )
    others = {digest_of(m): m for m in catalogue.manifests() if m["kind"] != "BenchmarkRun"}
    assert len({digest_of(r) for r in runs}) == len(runs)
    return tuple(runs), others


def _referenced(manifest: dict, others: dict[str, dict], found: dict[str, dict]) -> None:
    """The records `manifest` refers to, and theirs (every digest among its values)."""
    stack = [manifest]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, str) and value in others and value not in found:
            found[value] = others[value]
            stack.append(others[value])


def _publish(store: CatalogueStore, runs: list[dict], partition: str, number: int) -> None:
    """`runs` with the records they refer to (new ones only the first time), as one publication."""
    others = _pool()[1]
    found: dict[str, dict] = {}
    for run in runs:
        _referenced(run, others, found)
    snapshot = {"locator": f"sweep:/work/{partition}.csv", "dagsterRunId": f"run-{number}"}
    store.publish([*found.values(), *runs], partition=partition, source=snapshot, report=None)


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


STEPS = st.lists(
    st.tuples(
        st.sets(st.integers(0, len(_pool()[0]) - 1), max_size=40),  # the runs it brings (some may be published)
        st.sampled_from(["ci:a", "ci:b", "sweep:h100"]),
        st.booleans(),  # republish: the partition's earlier runs again with the new ones
    ),
    min_size=1,
    max_size=4,
)
SECOND_SENTINEL = {max(i for i, r in enumerate(_pool()[0]) if r["spec"]["sourceNative"]["benchmark"].startswith("sentinel_"))}  # fmt: skip
EVERYTHING_ON_B200 = {i for i, r in enumerate(_pool()[0]) if "nvidia-b200" in r["spec"]["sourceNative"]["externalId"]}


@pytest.mark.slow
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example(steps=[(set(range(0, 30)), "ci:a", False), (set(range(30, 45)), "ci:a", True), (EVERYTHING_ON_B200, "sweep:h100", False)], from_sidecar=False)  # fmt: skip
@example(steps=[(set(range(0, 20)), "ci:a", False), (set(), "ci:a", True), (set(range(20, 25)), "ci:b", False)], from_sidecar=True)  # fmt: skip
@example(steps=[(set(range(len(_pool()[0]))) - SECOND_SENTINEL, "ci:a", False), (SECOND_SENTINEL, "sweep:h100", False)], from_sidecar=False)  # fmt: skip
@example(steps=[(set(range(len(_pool()[0]))) - SECOND_SENTINEL, "ci:a", False), (SECOND_SENTINEL, "sweep:h100", False)], from_sidecar=True)  # fmt: skip
@given(steps=STEPS, from_sidecar=st.booleans())
def test_an_incremental_build_writes_what_a_full_build_writes(steps, from_sidecar):
    runs = _pool()[0]
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
                    _publish(store, brought, partition, number)
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
    _publish(store, runs, partition, 0)
    return store


def test_a_night_rebuilds_only_the_kernels_it_touched_and_says_so(tmp_path):
    runs = list(_pool()[0])
    swiglu = [r for r in runs if r["spec"]["sourceNative"]["benchmark"].startswith("swiglu/")]
    with _catalogue(tmp_path, [r for r in runs if r not in swiglu[-2:]]) as store:
        first = _build(store, tmp_path / "site")
        assert first.full_rebuild == f"no {STATE_NAME} of a previous build in {tmp_path / 'site'}"
        assert first.recomputed.startswith(f"all {len(first.rebuilt)} kernels rebuilt from every record")
        _publish(store, swiglu[-2:], "ci:b", 1)
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
    with _catalogue(tmp_path, list(_pool()[0])) as store:
        regressions = detect_regressions(store.manifests())
        counting = _Counting(store)
        first = build_catalogue_site(counting, tmp_path / "site", regressions=regressions)
        assert counting.runs == len(_pool()[0]) and first.full_rebuild is not None
        counting.runs = 0
        again = build_catalogue_site(counting, tmp_path / "site", regressions=regressions)
    assert counting.runs == 0
    assert again.rebuilt == [] and again.rewritten == [] and again.full_rebuild is None
    assert again.recomputed.startswith("0 of ")


def test_a_missing_damaged_or_foreign_state_means_a_full_build_with_a_warning(tmp_path, caplog):
    runs = list(_pool()[0])
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
        _publish(store, runs[:5], "ci:b", 1)
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
