"""Liger's CI results: where they are upstream, and the snapshot of them shipped with the package.

Each run of Liger's benchmark workflow publishes ``benchmarks/<dir>/benchmark.csv`` on the gh-pages branch
(``<dir>`` the short commit measured, ``-vX.Y.Z`` for a release run), and ``benchmarks/commits.txt`` lists
the directories in order. `upstream_locators` reads that list. Where it cannot be read (no network, as
on a CI machine or behind a firewall), `extract_snapshot` gives the eleven runs shipped with the package
(`data/liger-ci-snapshot.tar.xz`: gh-pages at SNAPSHOT_COMMIT, taken SNAPSHOT_DATE), unpacked into a folder
whose name says it is a snapshot, so every locator, log and summary that shows a file says so too.
"""

from __future__ import annotations

import hashlib
import os
import re
import tarfile
from collections.abc import Callable
from importlib import resources
from pathlib import Path

GH_PAGES = "https://raw.githubusercontent.com/linkedin/Liger-Kernel/gh-pages/benchmarks"
COMMITS_LIST = f"{GH_PAGES}/commits.txt"
LIST_ENV = "KERNELINDEX_LIGER_CI_LIST"  # another commits.txt (a mirror); its directories are read from GH_PAGES
SNAPSHOT_COMMIT = "a4809939"  # the gh-pages commit the shipped files are from
SNAPSHOT_DATE = "2026-06-10"
SNAPSHOT_FOLDER = f"liger-ci-snapshot-{SNAPSHOT_COMMIT}"  # under DAGSTER_HOME
# sha256 of each shipped file, as published on gh-pages (checked on every unpack: a file we read back is input)
SNAPSHOT_FILES = {
    "0701bab.csv": "39595d0c3472be5adb923bb867c94d62d9688a018b04a021400b41fe2f84009c",
    "2845fe8.csv": "21d3af7d71c0ddb8c3898a433ebf12d20e45baed4e0ae6ba76bf0747015054b4",
    "33924d2.csv": "b1f16e59289c4f42e16147d676860abdb258a7d3fb877e82202b69a2ee97b5ec",
    "49e6353.csv": "c3da37a7bd09ee5b31525302086ae7f1b9db4e92dbc9a9674921c33d966b2e95",
    "5e8f12b.csv": "6e8ef9f0cf14c7d3467c8145d8c9242de14d885984d22dd3ae052ae79edbff9c",
    "7644a0f-v0.7.0.csv": "1672ae2d876291b430e1786dac33b540b2ebe91bf690801f232ac605e2ccf43e",
    "7644a0f.csv": "ed6bd9648cb6ad33b0dc30c2a643a155b2691c7ce7c2a0775a17d9f3a243fb5a",
    "81f932a-v0.6.5.csv": "80066b4b5493ea53a8c8f6f5487b0d207d24e8fbf99f0a6c9bbd247d6f196d5b",
    "ab7fe2a.csv": "66fa5b4ae456aec6cade2573b92331523d71cdbc7a53d24f7c9d2ac8972b42cd",
    "c1bdc24.csv": "c9ac966d6758f43a9cc33abde83c3fd95b20eaa544cc62e644901e8987ccc839",
    "d5648bf-v0.6.3.csv": "12674dcb24f40c478455b643a0832bef43136cf1733486366d8eb473619248af",
}
MAX_LISTED = 2000  # run directories read from commits.txt (Liger has tens)
MAX_MEMBER_BYTES = 32 * 1024 * 1024  # a shipped CSV is under 1 MB; a bigger member is not ours
_RUN_DIR = re.compile(r"^[0-9a-f]{7,40}(?:-v\d+(?:\.\d+)*)?$")


class SnapshotError(ValueError):
    """The shipped snapshot cannot be read (a damaged installation)."""


def upstream_locators(listing: bytes) -> list[str]:
    """The benchmark.csv URL of every run directory `commits.txt` lists (oldest first, as listed); lines
    that are not a run directory are ignored."""
    names = [line.strip() for line in listing.decode("utf-8", "replace").splitlines()]
    runs = [name for name in names if _RUN_DIR.match(name)][:MAX_LISTED]
    return [f"{GH_PAGES}/{name}/benchmark.csv" for name in dict.fromkeys(runs)]


def describe() -> str:
    return f"the snapshot shipped with the package (Liger's gh-pages at {SNAPSHOT_COMMIT}, {SNAPSHOT_DATE})"


def extract_snapshot(home: Path) -> list[Path]:
    """The shipped CI files unpacked under `home`/SNAPSHOT_FOLDER (written once; kept), in name order."""
    target = home / SNAPSHOT_FOLDER
    archive = resources.files("kernelindex_pipeline") / "data" / "liger-ci-snapshot.tar.xz"
    try:
        with archive.open("rb") as raw, tarfile.open(fileobj=raw, mode="r:xz") as tar:
            members = [m for m in tar.getmembers() if m.isfile() and m.name.endswith((".csv", ".md"))]
            if any("/" in m.name or m.size > MAX_MEMBER_BYTES for m in members):
                raise SnapshotError(f"{archive}: a member outside the snapshot's layout")
            target.mkdir(parents=True, exist_ok=True)
            for member in members:
                path = target / member.name
                if not path.is_file() or path.stat().st_size != member.size:
                    data = tar.extractfile(member).read()
                    partial = path.with_name(path.name + ".partial")
                    partial.write_bytes(data)
                    partial.replace(path)
    except (OSError, tarfile.TarError) as exc:
        raise SnapshotError(f"{archive}: cannot read the shipped CI snapshot ({exc}); reinstall the package") from None
    files = sorted(p for p in target.glob("*.csv"))
    found = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in files}
    if found != SNAPSHOT_FILES:
        wrong = sorted(set(found) ^ set(SNAPSHOT_FILES) | {n for n in found if found[n] != SNAPSHOT_FILES.get(n)})
        raise SnapshotError(
            f"{target}: the unpacked snapshot is not the shipped one ({', '.join(wrong)}); delete the folder to unpack "
            "it again, or reinstall the package"
        )
    return files


def upstream_locator(path: Path, sha256: str) -> str | None:
    """The gh-pages URL a file of the shipped snapshot was published at (`benchmarks/<run>/benchmark.csv`) when
    `path` is one, unpacked, with the bytes published there (its sha256 in SNAPSHOT_FILES); else None."""
    if path.parent.name != SNAPSHOT_FOLDER or SNAPSHOT_FILES.get(path.name) != sha256:
        return None
    return f"{GH_PAGES}/{path.stem}/benchmark.csv"


def resolve_locators(home: Path, log: Callable[[str], None], *, snapshot: bool = False) -> list[str]:
    """What `import-ci` without locators imports: every run Liger's gh-pages lists, or, when that list
    cannot be read (said in one line) or `snapshot` is asked for, the shipped snapshot's files."""
    from kernelindex_pipeline.imports.fetch import FetchError, fetch

    if not snapshot:
        listing = os.environ.get(LIST_ENV) or COMMITS_LIST
        try:
            locators = upstream_locators(fetch(listing, max_bytes=1024 * 1024).data)
        except FetchError as exc:
            log(f"note: Liger's CI results cannot be listed ({exc}); importing {describe()} instead")
        else:
            if locators:
                log(f"Liger's CI results: {len(locators)} runs listed in {listing}")
                return locators
            log(f"note: {listing} lists no run; importing {describe()} instead")
    files = extract_snapshot(home)
    log(f"importing {describe()}: {len(files)} runs, unpacked in {home / SNAPSHOT_FOLDER}")
    return [str(path) for path in files]
