"""One input file by locator: an https URL (plain http only to a loopback host, for local mirrors and
tests) or an existing local file, read whole and bounded in size and time. The CI chain reads Liger's
CI result files through it.

Locators are hostile input: the size cap holds while streaming; user info and query values of a URL
(tokens) are redacted everywhere they are shown or stored.

A download is checked hop by hop (redirects are followed here, at most MAX_REDIRECTS, never by
requests): every hop's host as requests itself parses it (urllib3; a URL that `urllib.parse` reads
with another host, e.g. through a backslash before an `@`, is refused) is resolved, and
- plain http: every address of every hop must be loopback;
- https: no address may be link-local (cloud metadata), multicast, unspecified or reserved, and a
  redirect may only go to the first hop's host or to a host whose addresses are all public;
- a redirect may not change the scheme.
The addresses are checked when resolved; a name that resolves differently a moment later (DNS
rebinding) is not caught. The transfer has a per-read timeout and one whole-transfer deadline
(DOWNLOAD_DEADLINE_S) from the first connect to the last byte, redirects, TLS handshakes and response
headers included: when it passes, the download's sockets are shut down (requests' own timeouts are per
socket operation, so a server trickling its headers one byte at a time would never meet one). Several
downloads can share one `Deadline` (scripts/refresh_toolchain_timeline: one for the whole refresh).

A locator holding a control character (a newline would split a list of locators) is refused.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import ipaddress
import os
import re
import socket
import stat
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import requests
import urllib3.exceptions
from requests.adapters import HTTPAdapter
from urllib3.exceptions import LocationParseError
from urllib3.util import parse_url

from kernelindex_pipeline.redaction import redact_locator, scheme_of

MAX_FILE_BYTES = 256 * 2**20  # the largest CI file seen is under 1 MB; a whole history is about 10 MB
CONNECT_TIMEOUT_S = 10.0
READ_TIMEOUT_S = 60.0  # between two chunks, not for the whole body
DOWNLOAD_DEADLINE_S = 300.0  # the whole transfer, redirects included: a CI file is under 1 MB
MAX_REDIRECTS = 5
_CHUNK = 1 << 16
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_REDIRECTS = (301, 302, 303, 307, 308)


class FetchError(ValueError):
    """A locator that cannot be read: names the (redacted) locator and what to fix."""


def _is_loopback(host: str | None) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host or "").is_loopback
    except ValueError:
        return False


def check_locator_text(locator: str) -> None:
    """FetchError for a locator that cannot be one line of the locator list."""
    if _CONTROL.search(locator):
        raise FetchError(
            f"{redact_locator(locator)}: a locator may not hold a control character (a newline?); give each locator as its own argument"
        )


def check_locator_syntax(locator: str) -> None:
    """FetchError for a locator that is malformed as written (a control character; an http(s) URL
    that does not parse, with a port out of range, a backslash, an ambiguous host): a usage error,
    found before anything is fetched or listed."""
    check_locator_text(locator)
    if scheme_of(locator).lower() in ("http", "https"):
        _host_of(locator, redact_locator(locator))


def _host_of(url: str, shown: str) -> tuple[str, str, int]:
    """(scheme, host, port) of an http(s) URL as requests will connect, or FetchError naming the problem."""
    if "\\" in url or any(c.isspace() for c in url):
        raise FetchError(f"{shown}: a URL may not hold a backslash or white space; percent-encode it")
    try:
        parts = urlsplit(url)
        port = parts.port
        connects_to = parse_url(url)
    except LocationParseError:
        raise FetchError(f"{shown}: not a well-formed URL; check its host and port") from None
    except ValueError as error:  # urllib's words name no part of the URL ("Port out of range 0-65535")
        raise FetchError(f"{shown}: not a well-formed URL ({error}); check its host and port") from None
    host = (parts.hostname or "").lower()
    if not host or (connects_to.host or "").strip("[]").lower() != host:
        raise FetchError(f"{shown}: not a well-formed URL (its host is missing or ambiguous)")
    return parts.scheme, host, port or (443 if parts.scheme == "https" else 80)


def _addresses(host: str, port: int, shown: str) -> set[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as error:
        raise FetchError(
            f"{shown}: cannot resolve host {host!r} ({getattr(error, 'strerror', None) or type(error).__name__})"
        ) from None
    return {ipaddress.ip_address(info[4][0].split("%", 1)[0]) for info in infos}


def check_hop(url: str, shown: str, first: tuple[str, str] | None = None) -> None:
    """FetchError unless `url` may be fetched: the first hop when `first` is None, else a redirect
    from the first hop's (scheme, host). See the module docstring for the rules."""
    scheme, host, port = _host_of(url, shown)
    if first is not None and scheme != first[0]:
        raise FetchError(f"{shown}: refused a redirect from {first[0]} to {scheme} ({redact_locator(url)})")
    if scheme == "http" and not _is_loopback(host):
        where = (
            "a redirect to a non-loopback host" if first else "plain http is only allowed to a loopback host; use https"
        )
        raise FetchError(f"{shown}: {where}" + (f" ({redact_locator(url)})" if first else ""))
    addresses = _addresses(host, port, shown)
    if scheme == "http" and not all(address.is_loopback for address in addresses):
        raise FetchError(
            f"{shown}: plain http is only allowed to a loopback host; {host} resolves to {', '.join(sorted(map(str, addresses)))}"
        )
    unsafe = [a for a in addresses if a.is_link_local or a.is_multicast or a.is_unspecified or a.is_reserved]
    if unsafe:
        raise FetchError(
            f"{shown}: refused {host}: it resolves to {', '.join(sorted(map(str, unsafe)))} (link-local, multicast or reserved)"
        )
    if scheme == "https" and first is not None and host != first[1] and not all(a.is_global for a in addresses):
        raise FetchError(f"{shown}: refused a redirect to {host}, which is not a public host ({redact_locator(url)})")


@dataclass(frozen=True)
class FetchedFile:
    locator: str  # redacted
    data: bytes
    fetched_at: str

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


def fetch(
    locator: str,
    *,
    max_bytes: int = MAX_FILE_BYTES,
    deadline_s: float = DOWNLOAD_DEADLINE_S,
    deadline: Deadline | None = None,
    what: str = "a CI file",
) -> FetchedFile:
    """The bytes of one file (https URL, loopback http URL, or local path), at most `max_bytes`.
    `deadline`: one the caller holds over several downloads, instead of one of `deadline_s` for this one;
    `what` the file is, in the size limit's message."""
    shown = redact_locator(locator)
    check_locator_syntax(locator)
    try:
        scheme = urlsplit(locator).scheme
    except ValueError as error:  # e.g. "ftp://[::1"
        raise FetchError(f"{shown}: not a well-formed URL ({error})") from None
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")[:-4] + "Z"
    if scheme in ("http", "https"):
        check_hop(locator, shown)
        if deadline is not None:
            with deadline.connections():
                return FetchedFile(shown, _download(locator, shown, max_bytes, deadline, what), now)
        with Deadline(deadline_s) as own:
            return FetchedFile(shown, _download(locator, shown, max_bytes, own, what), now)
    if scheme and len(scheme) > 1:  # "C:\\..." has a one-letter scheme
        raise FetchError(f"{shown}: unsupported locator scheme {scheme!r}; give an https URL or a local path")
    path = Path(locator).expanduser()
    data = _read_local(path, shown, max_bytes, what)  # first: it names a missing file or a symlink loop in one line
    return FetchedFile(str(absolute_path(locator)), data, now)


def absolute_path(locator: str) -> Path:
    """A local locator as an absolute path with its symlinks resolved, or FetchError for a symlink loop
    (Path.resolve raises RuntimeError for one, which would end as an internal error)."""
    try:
        return Path(locator).expanduser().resolve()
    except (RuntimeError, OSError):
        raise FetchError(
            f"{redact_locator(locator)}: a symbolic link loop (or a link chain too long to follow); give the file itself"
        ) from None


def _read_local(path: Path, shown: str, max_bytes: int, what: str) -> bytes:
    """A regular file's bytes, at most `max_bytes` (read bounded: /proc files report size 0)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise FetchError(f"{shown}: no such file") from None
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise FetchError(f"{shown}: a symbolic link loop; give the file itself") from None
        raise FetchError(f"{shown}: cannot be opened ({error.strerror})") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise FetchError(f"{shown}: not a regular file")
        if info.st_size > max_bytes:
            raise FetchError(f"{shown}: {info.st_size} bytes is more than the {max_bytes}-byte limit for {what}")
        try:
            data = handle.read(info.st_size + 1)
        except OSError as error:
            raise FetchError(f"{shown}: cannot be read ({error.strerror})") from None
    if len(data) > info.st_size:  # /proc and /sys files say 0 bytes and hold more (or never end)
        raise FetchError(
            f"{shown}: holds more than the {info.st_size} bytes its size says (a /proc or /sys file?); copy it to a file first"
        )
    return data


class Deadline:
    """One deadline over all the connections of one or more downloads: at `seconds` it shuts down every
    socket it was given (a blocked connect-less read, a TLS handshake or a header line then fails at once).
    `what` ends at it, for the message ("the download did not finish within 300 s")."""

    def __init__(self, seconds: float, what: str = "the download") -> None:
        self.seconds, self.at, self.what = seconds, time.monotonic() + seconds, what
        self.passed = threading.Event()
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def remaining(self) -> float:
        return max(self.at - time.monotonic(), 0.0)

    def watch(self, sock: socket.socket) -> None:
        # A duplicate of the descriptor: shutdown(2) acts on the connection behind every descriptor of it,
        # and ours stays valid when TLS takes the original over (wrap_socket detaches it).
        with self._lock:
            self._sockets.append(sock.dup())
            if self.passed.is_set():
                self._shut(self._sockets[-1])

    def _expire(self) -> None:
        with self._lock:
            self.passed.set()
            for sock in self._sockets:
                self._shut(sock)

    @staticmethod
    def _shut(sock: socket.socket) -> None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # already closed by the peer

    @contextlib.contextmanager
    def connections(self) -> Iterator[Deadline]:
        """Within it, one download of several under this deadline: our duplicates of its sockets are
        closed when it ends (a duplicate kept open would hold the connection open for the server)."""
        with self._lock:
            start = len(self._sockets)
        try:
            yield self
        finally:
            with self._lock:
                for sock in self._sockets[start:]:
                    sock.close()
                del self._sockets[start:]

    def __enter__(self) -> Deadline:
        self._timer.start()
        return self

    def __exit__(self, *_) -> None:
        self._timer.cancel()
        with self._lock:
            for sock in self._sockets:
                sock.close()
            self._sockets.clear()


class _WatchedAdapter(HTTPAdapter):
    """requests' adapter whose connections hand their sockets to a Deadline as they connect."""

    def __init__(self, deadline: Deadline) -> None:
        self._deadline = deadline
        super().__init__(max_retries=0)

    def init_poolmanager(self, *args, **kwargs) -> None:
        super().init_poolmanager(*args, **kwargs)
        deadline = self._deadline

        def watched(pool_class):
            def _new_conn(connection):
                sock = pool_class.ConnectionCls._new_conn(connection)
                deadline.watch(sock)
                return sock

            connection_class = type(
                f"Watched{pool_class.ConnectionCls.__name__}", (pool_class.ConnectionCls,), {"_new_conn": _new_conn}
            )
            return type(f"Watched{pool_class.__name__}", (pool_class,), {"ConnectionCls": connection_class})

        self.poolmanager.pool_classes_by_scheme = {
            scheme: watched(pool_class) for scheme, pool_class in self.poolmanager.pool_classes_by_scheme.items()
        }


# What a transfer cut off or stalled raises: requests' own errors, and urllib3's from reading the raw body.
_TRANSFER_ERRORS = (requests.RequestException, urllib3.exceptions.HTTPError, OSError)


def _download(url: str, shown: str, max_bytes: int, deadline: Deadline, what: str) -> bytes:
    first = _host_of(url, shown)[:2]
    with requests.Session() as http:
        adapter = _WatchedAdapter(deadline)
        http.mount("http://", adapter)
        http.mount("https://", adapter)
        try:
            for _ in range(MAX_REDIRECTS + 1):
                connect_s = min(CONNECT_TIMEOUT_S, max(deadline.remaining(), 0.001))
                with http.get(url, stream=True, timeout=(connect_s, READ_TIMEOUT_S), allow_redirects=False) as response:
                    if response.status_code in _REDIRECTS and response.headers.get("Location"):
                        url = urljoin(url, response.headers["Location"])
                        check_locator_text(url)
                        check_hop(url, shown, first)
                        continue
                    return _body(response, shown, max_bytes, deadline, what)
            raise FetchError(f"{shown}: more than {MAX_REDIRECTS} redirects")
        except _TRANSFER_ERRORS as error:
            if deadline.passed.is_set() or deadline.remaining() == 0:
                raise _late(shown, deadline, None) from None
            # The exception text may carry the full URL: name the redacted locator and the error class only.
            why = "the server closed the connection before the whole body came" if _cut_off(error) else None
            raise FetchError(f"{shown}: download failed ({type(error).__name__}{': ' + why if why else ''})") from None


def _cut_off(error: BaseException) -> bool:
    return isinstance(error, (urllib3.exceptions.ProtocolError, requests.exceptions.ChunkedEncodingError))


def _late(shown: str, deadline: Deadline, received: int | None) -> FetchError:
    got = f" ({received} bytes received)" if received is not None else ""
    return FetchError(
        f"{shown}: {deadline.what} did not finish within {deadline.seconds:g} s{got}; is the server stalling?"
    )


def _body(response: requests.Response, shown: str, max_bytes: int, deadline: Deadline, what: str) -> bytes:
    if response.status_code != 200:
        raise FetchError(f"{shown}: HTTP {response.status_code} {response.reason or ''}".rstrip())
    declared = response.headers.get("Content-Length")
    if declared and declared.isdigit() and int(declared) > max_bytes:
        raise FetchError(f"{shown}: {declared} bytes is more than the {max_bytes}-byte limit for {what}")
    body = bytearray()
    while True:
        if deadline.passed.is_set() or deadline.remaining() == 0:
            raise _late(shown, deadline, len(body))
        # read1: what one read of the socket gives (within READ_TIMEOUT_S); a read blocked at the deadline
        # fails then (Deadline shuts the socket down).
        try:
            chunk = response.raw.read1(_CHUNK, decode_content=True)
        except _TRANSFER_ERRORS:
            if deadline.passed.is_set():
                raise _late(shown, deadline, len(body)) from None
            raise
        if not chunk:
            return bytes(body)
        body += chunk
        if len(body) > max_bytes:
            raise FetchError(f"{shown}: more than the {max_bytes}-byte limit for {what}")
