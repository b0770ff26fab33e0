"""The catalogue's site over HTTP on this machine (`kernelindex-pipeline serve`): the static files of one
site folder, nothing else.

Browsers refuse the UI's `file://` links ("Not allowed to load local resource"), so the Dagster UI links
the site at a URL this server answers (`home.site_url`). The standard library's server is enough for one
operator's browser on loopback; what it must not do is show more than the site: paths outside the folder
are refused by `SimpleHTTPRequestHandler` itself, and here also folder listings, links out of the folder
and any method but GET and HEAD.
"""

from __future__ import annotations

import http.server
import ipaddress
import os
from collections.abc import Callable
from functools import partial
from pathlib import Path


class SiteServerError(Exception):
    """The site cannot be served (no site in the folder, an address that cannot be bound)."""


class _SiteHandler(http.server.SimpleHTTPRequestHandler):
    def list_directory(self, path):  # a folder shows its index.html or nothing
        self.send_error(404, "no listing")
        return None

    def send_head(self):
        root = os.path.realpath(self.directory)
        real = os.path.realpath(self.translate_path(self.path))
        if real != root and not real.startswith(root + os.sep):  # a link out of the site
            self.send_error(404, "File not found")
            return None
        return super().send_head()

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - the standard library's name
        pass  # one operator's browser: the access log would only bury the URL line


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve(directory: str | os.PathLike[str], host: str, port: int, ready: Callable[[str], None]) -> None:
    """Serve `directory` (a built site: it holds index.html) at host:port until interrupted; `ready` gets
    the URL once the socket listens (port 0: the one the system chose)."""
    root = Path(directory)
    if not (root / "index.html").is_file():
        raise SiteServerError(
            f"no site in {root} (no index.html): build it with `kernelindex-pipeline site --out {root}` or by "
            "materializing catalogue_report"
        )
    handler = partial(_SiteHandler, directory=str(root.resolve()))
    try:
        server = http.server.ThreadingHTTPServer((host, port), handler)
    except OSError as exc:
        raise SiteServerError(f"cannot serve at {host}:{port}: {exc.strerror or exc}") from None
    with server:
        bound_host, bound_port = server.server_address[:2]
        shown = f"[{bound_host}]" if ":" in str(bound_host) else bound_host
        ready(f"http://{shown}:{bound_port}/")
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
