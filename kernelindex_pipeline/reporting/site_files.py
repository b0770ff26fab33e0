"""What every page of the site shares: the vendored charting library and the site's script and style (package
data, copied next to the pages), the ``KI.load(...)`` data files that start a page, and writing a file only when
its content changed (so a rebuild can say which pages it rewrote and which it kept).

Used by the site (site.py) and by the regressions page (regressions_page.py), which the `regressions` command also
writes on its own: both draw their charts in the browser with the same library and script.
"""

from __future__ import annotations

import json
import os
from importlib import resources
from pathlib import Path
from typing import Any

VENDOR_FILES = ("vega.min.js", "vega-lite.min.js", "vega-embed.min.js")
ASSET_FILES = ("site.js", "site.css")
DATA_DIR = "data"
DATA_PREFIX = "KI.load("


def write_bytes(path: Path, data: bytes) -> bool:
    """Write `data` to `path` unless it already holds exactly that; True when written. Written next to the target
    and renamed: a reader never sees half a file."""
    try:
        if path.stat().st_size == len(data) and path.read_bytes() == data:
            return False
    except OSError:
        pass  # not there (or unreadable): write it
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
    return True


def write_text(path: Path, text: str) -> bool:
    return write_bytes(path, text.encode("utf-8"))


def js_payload(data: Any) -> str:
    """A page's data as a script that hands it to site.js: ``<script src>`` works from file://, ``fetch()`` of
    local files does not."""
    # `</` escaped so the JSON can never end a script element, even if a page inlines it
    return DATA_PREFIX + json.dumps(data, separators=(",", ":"), ensure_ascii=False).replace("</", "<\\/") + ");\n"


def read_js_payload(text: str) -> Any:
    """The data of a `js_payload` file (the tests read the site's data back through it)."""
    body = text.rstrip()
    if not (body.startswith(DATA_PREFIX) and body.endswith(");")):
        raise ValueError(f"not a site data file (expected {DATA_PREFIX}...);)")
    return json.loads(body[len(DATA_PREFIX) : -2])  # `<\/` is JSON's own escape of `/`


def copy_assets(out_dir: Path) -> None:
    """The vendored charting library and the site's own script and style, unless already there unchanged."""
    package = resources.files("kernelindex_pipeline") / "data" / "site"
    for name in VENDOR_FILES:
        write_bytes(out_dir / "vendor" / name, (package / "vendor" / name).read_bytes())
    for name in ASSET_FILES:
        write_bytes(out_dir / name, (package / name).read_bytes())


def script_tags(root: str, data_file: str) -> str:
    """The charting library, the site's script, then the page's data (which starts the page). `root`: the way
    from the page to the site's folder ("" or "../"); `data_file`: the data file's name in data/."""
    return (
        "".join(f'<script src="{root}vendor/{n}"></script>' for n in VENDOR_FILES)
        + f'<script src="{root}site.js"></script><script src="{root}{DATA_DIR}/{data_file}"></script>'
    )
