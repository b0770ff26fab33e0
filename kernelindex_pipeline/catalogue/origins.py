"""Where each run of a catalogue came from, as a link the site puts on its points.

A run's origin is the source snapshot of the publication that first published it (`CatalogueStore.run_publications`):

- Liger's CI: the run's file on Liger's gh-pages (``.../gh-pages/benchmarks/<run>/benchmark.csv``), also for a
  file of the snapshot shipped with the package (`kernelindex.kernelindex_locator` maps it back by its bytes);
  a CI file given as a local path: its ``file://`` URI;
- the history: the release's sdist the history CSV was read from (the locator before ``#<member>``; a locator
  ``pypi:<package>==<version>/<file>`` becomes the release's PyPI page);
- a sweep: its run in the Dagster UI, ``$KERNELINDEX_DAGSTER_UI_URL/runs/<run id>`` (default
  ``http://127.0.0.1:3000``, `dagster dev`'s), from the run id the sweep's snapshot keeps (``dagsterRunId``).

None where nothing says (a sweep published before its snapshot kept the run id, a locator of another scheme).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

UI_URL_ENV = "KERNELINDEX_DAGSTER_UI_URL"
DEFAULT_UI_URL = "http://127.0.0.1:3000"  # `dagster dev`'s default address
RUN_ID_KEY = "dagsterRunId"  # the Dagster run id a sweep's source snapshot keeps


def dagster_ui_url() -> str:
    """The Dagster UI's base URL the site links sweeps' runs at: $KERNELINDEX_DAGSTER_UI_URL, else `dagster dev`'s."""
    return (os.environ.get(UI_URL_ENV) or DEFAULT_UI_URL).rstrip("/")


def origin_of_snapshot(snapshot: Mapping[str, Any] | None, ui_url: str | None = None) -> str | None:
    """The link to where the runs of a publication with this source snapshot came from (module docstring)."""
    from urllib.parse import quote

    from .kernelindex import kernelindex_locator

    if not snapshot:
        return None
    locator = str(snapshot.get("locator") or "")
    if isinstance(snapshot.get(RUN_ID_KEY), str) and snapshot[RUN_ID_KEY]:
        return f"{(ui_url or dagster_ui_url()).rstrip('/')}/runs/{quote(snapshot[RUN_ID_KEY])}"
    archive, member = locator.partition("#")[::2]
    if member:  # the history: a member of the release's sdist
        if archive.startswith(("https://", "http://")):
            return archive
        if archive.startswith("pypi:"):  # pypi:<package>==<version>/<file>
            package, _, version = archive.removeprefix("pypi:").partition("/")[0].partition("==")
            return f"https://pypi.org/project/{quote(package)}/{quote(version)}/#files" if version else None
        return kernelindex_locator(archive, "") if archive.startswith(("/", "file:")) else None
    sha256 = snapshot.get("sha256")
    return kernelindex_locator(locator, sha256) if isinstance(sha256, str) else None


def publication_origins(store: Any, ui_url: str | None = None) -> dict[int, str]:
    """Each publication's id -> the link to where the runs it first published came from (publications without
    one left out): what the site of a catalogue reads (`reporting.site.build_catalogue_site`), which knows the
    publication of each run it reads."""
    links = {p["id"]: origin_of_snapshot(p.get("snapshot"), ui_url) for p in store.publications()}
    return {pid: url for pid, url in links.items() if url}


def run_origins(store: Any, ui_url: str | None = None) -> dict[str, str]:
    """Each run's digest -> the link to where it came from (runs without one left out)."""
    links = publication_origins(store, ui_url)
    return {digest: links[pid] for digest, pid in store.run_publications().items() if pid in links}
