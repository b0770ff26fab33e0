"""Our KernelIndex exports of every acceptance scenario, one directory each (run.sh calls it).

    .venv/bin/python scripts/kernelindex_acceptance/make_exports.py OUT_DIR

Scenarios (tests/support/kernelindex_scenarios.py): the seeds, the CI slice (reference profile; full profile
without and with memory runs), slices of four CI files with their commits (49e6353 among them), and a stand-in sweep of Liger 0.8.5 on two hosts of one GPU type
(host-a, host-b) exported together (evidence in a local store, and under a public https base URL), and the CI slice with one host's sweep (two importer bundles, two
sources, one database); and the CLI route: `export --kernelindex` of a SQLite catalogue holding two CI files of
the shipped snapshot, imported from their local files, and the public sweep of both hosts
(catalogue-ci-snapshot-and-sweeps).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: tests.support

from kernelindex_pipeline.catalogue.export import export_kernelindex  # noqa: E402
from tests.support import kernelindex_scenarios as scenarios  # noqa: E402


def history_export(out: Path, csv: Path, commit: str) -> None:
    """Our importer bundle (reference profile) of Liger's committed history CSV at `commit`, with the
    snapshot KernelIndex's importer takes of it (the raw.githubusercontent.com URL at that commit)."""
    from kernelindex_pipeline.catalogue.kernelindex import snapshot_of_bytes
    from kernelindex_pipeline.liger import import_csv

    data = csv.read_bytes()
    locator = f"https://raw.githubusercontent.com/linkedin/Liger-Kernel/{commit}/benchmark/data/all_benchmark_data.csv"
    records = list(import_csv(data, profile="reference").manifests.values())
    snapshot = snapshot_of_bytes(locator, data, "2026-12-01T00:00:00.000Z")
    files = export_kernelindex(records, out / "history-reference", snapshots=[snapshot], source_commit=commit)
    print(f"history-reference: {files.submission.records_by_kind}", file=sys.stderr)
    # as a catalogue export would see them: runs listed by name, published in time order
    by_name = sorted(records, key=lambda m: (m["kind"] != "BenchmarkRun", m["metadata"]["name"]))
    export_kernelindex(
        by_name, out / "history-reference-time-order", snapshots=[snapshot], order="time", source_commit=commit
    )
    export_kernelindex(by_name, out / "history-reference-name-order", snapshots=[snapshot], source_commit=commit)


def wide_exports(out: Path, csv: Path, commit: str) -> None:
    """The widest sets, when ../shared has Liger's CI files: the eleven CI files and the history CSV under
    the full profile, memory runs included (scenario dirs wide-*)."""
    from kernelindex_pipeline.catalogue.kernelindex import snapshot_of_bytes
    from kernelindex_pipeline.liger import import_csv
    from kernelindex_pipeline.liger.identity import code_ref_of_locator

    shared = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "liger-ci"
    records, snapshots = [], []
    for path in sorted(shared.glob("*.csv")):
        data = path.read_bytes()
        # as import-ci reads it: the run directory names the commit (liger_code_ref), e.g. 49e6353
        locator = scenarios.CI_FILE_URL.format(run=path.stem)
        records += import_csv(data, profile="full", code_ref=code_ref_of_locator(locator)).manifests.values()
        snapshots.append(snapshot_of_bytes(locator, data, "2026-12-01T00:00:00.000Z"))
    if records:
        files = export_kernelindex(records, out / "wide-ci-files-full-memory", snapshots=snapshots, include_memory=True)
        print(f"wide-ci-files-full-memory: {files.submission.records_by_kind}", file=sys.stderr)
    data = csv.read_bytes()
    locator = f"https://raw.githubusercontent.com/linkedin/Liger-Kernel/{commit}/benchmark/data/all_benchmark_data.csv"
    records = list(import_csv(data, profile="full").manifests.values())
    files = export_kernelindex(
        records,
        out / "wide-history-full-memory",
        snapshots=[snapshot_of_bytes(locator, data, "2026-12-01T00:00:00.000Z")],
        include_memory=True,
        source_commit=commit,
    )
    print(f"wide-history-full-memory: {files.submission.records_by_kind}", file=sys.stderr)


DAY_B = "2026-12-02"  # host-b timed its sweep a day later: its runs have source names of their own


def main(out: Path) -> None:
    host_a, snaps_a = scenarios.standin_sweep("host-a")
    host_b, snaps_b = scenarios.standin_sweep("host-b", kernel="5.15.0-122-generic", driver="550.90.07", day=DAY_B)
    public = {"public_base_url": scenarios.PUBLIC_EVIDENCE}  # evidence KernelIndex can fetch: Reproducible runs
    public_a, _ = scenarios.standin_sweep("host-a", **public)
    public_b, _ = scenarios.standin_sweep(
        "host-b", kernel="5.15.0-122-generic", driver="550.90.07", day=DAY_B, **public
    )
    made = {
        "seeds": (*scenarios.seeds(), False),
        "ci-reference": (*scenarios.ci_slice("reference"), False),
        "ci-full": (*scenarios.ci_slice("full"), False),
        "ci-full-memory": (*scenarios.ci_slice("full"), True),
        "ci-files": (*scenarios.ci_files("full"), False),
        "sweep-two-hosts": (host_a + host_b, snaps_a + snaps_b, False),
        "sweep-two-hosts-public": (public_a + public_b, snaps_a + snaps_b, False),
        "ci-and-sweep": (
            scenarios.ci_slice("reference")[0] + host_a,
            scenarios.ci_slice("reference")[1] + snaps_a,
            False,
        ),
    }
    for name, (records, snapshots, memory) in made.items():
        files = export_kernelindex(records, out / name, snapshots=snapshots, include_memory=memory)
        print(f"{name}: {files.submission.records_by_kind}", file=sys.stderr)
    catalogue_route(out / "catalogue-ci-snapshot-and-sweeps", out.parent / "catalogue")


def catalogue_route(out: Path, work: Path) -> None:
    """The CLI route: two CI files of the snapshot shipped with the package, imported from the local files as
    `import-ci --snapshot` reads them (one publication per partition part, the file's snapshot with it), and a
    sweep on each of two hosts, into a SQLite catalogue; then `export --kernelindex` of that catalogue."""
    import shutil

    from kernelindex_pipeline.catalogue.store import CatalogueStore
    from kernelindex_pipeline.cli import main as cli
    from kernelindex_pipeline.imports.fetch import fetch
    from kernelindex_pipeline.liger import ci, identity, import_csv
    from kernelindex_pipeline.liger.ci_snapshot import extract_snapshot

    shutil.rmtree(work, ignore_errors=True)
    files = [p for p in extract_snapshot(work / "home") if p.name in ("49e6353.csv", "7644a0f-v0.7.0.csv")]
    url = f"sqlite:///{work / 'catalogue.sqlite'}"
    with CatalogueStore.open(url) as store:
        for path in files:
            for (gpu, version), parts in ci.gather([fetch(str(path))]).parts.items():
                for part in parts:
                    result = import_csv(
                        part.csv_bytes, profile="reference", code_ref=identity.code_ref_of_locator(str(path))
                    )
                    store.publish(result.manifests, partition=f"ci:{gpu}|{version}", source=part.snapshot)
        for host, extra in (("host-a", {}), ("host-b", {"kernel": "5.15.0-122-generic", "day": DAY_B})):
            records, _ = scenarios.standin_sweep(host, public_base_url=scenarios.PUBLIC_EVIDENCE, **extra)
            store.publish(records, partition=f"sweep:{host}", source={"locator": f"sweep:/{host}/data.csv"})
    assert cli(["export", "--catalogue", url, "--out", str(out), "--kernelindex"]) == 0


if __name__ == "__main__":
    if "--wide" in sys.argv:
        wide_exports(
            Path(sys.argv[1]), Path(sys.argv[sys.argv.index("--csv") + 1]), sys.argv[sys.argv.index("--commit") + 1]
        )
    elif "--csv" in sys.argv:
        history_export(
            Path(sys.argv[1]), Path(sys.argv[sys.argv.index("--csv") + 1]), sys.argv[sys.argv.index("--commit") + 1]
        )
    else:
        main(Path(sys.argv[1]))
