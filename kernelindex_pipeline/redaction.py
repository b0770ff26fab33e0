"""Secrets in URLs, one way everywhere: what may be shown of a URL, and scrubbing its secrets out of text.

Every place that prints, logs, raises or stores (Dagster metadata, run and event databases) something
derived from a catalogue URL goes through here: `redact_url` for the URL itself, `url_secrets` and
`scrub` for messages that may echo parts of it (driver errors). `redact_locator` does the same for the
http(s) URLs of files we fetch (Liger's CI results), whose query values are all hidden (signed URLs).

What counts as a secret: the password, and the value of every query parameter whose name says it is
one (`password`, which libpq accepts in the query string, `sslpassword`, `token`, `secret`, `...key`,
`auth...`). SQLAlchemy's `render_as_string(hide_password=True)` hides only the first; the query
parameters are redacted here because SQLAlchemy has no option for them.

A URL that is not well-formed (SQLAlchemy cannot parse it, or it parses it into something other than
what was meant: `user:Sec@ret@host` becomes the host `ret@host` and the password `Sec`) is never shown
beyond its scheme: any part of it may be a piece of a password.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import quote, quote_plus, urlsplit, urlunsplit

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

HIDDEN = "***"

# Query parameter names whose values are secrets (case-insensitive, anywhere in the name).
_SECRET_PARAM = re.compile(r"pass|pwd|secret|token|key|auth|credential", re.IGNORECASE)
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")
_HOST = re.compile(r"^(?:[A-Za-z0-9.\-_]+|[0-9A-Fa-f:.]+)$")  # a name, IPv4 or IPv6 (SQLAlchemy drops the brackets)


class MalformedUrl(ValueError):
    """A URL that cannot be used as it is; the message shows nothing but its scheme."""


def is_secret_parameter(name: str) -> bool:
    return bool(_SECRET_PARAM.search(name))


def scheme_of(text: str) -> str:
    match = _SCHEME.match(text)
    return match.group(1) if match else ""


def _hidden_form(text: str) -> str:
    scheme = scheme_of(text)
    return f"{scheme}://{HIDDEN}" if scheme else HIDDEN


def parse_url(url: str | URL) -> URL:
    """The URL parsed by SQLAlchemy, or MalformedUrl when it is not a well-formed URL (see the module
    docstring). Hand-written checks on the raw text: SQLAlchemy's parser is lenient and splits an
    unescaped `@` or `/` in a password in the wrong place without complaint."""
    if isinstance(url, URL):
        return url
    text = str(url)
    try:
        parsed = make_url(text)
    except (ArgumentError, ValueError, TypeError):
        raise MalformedUrl(f"{_hidden_form(text)} is not a SQLAlchemy URL") from None
    rest = text[len(scheme_of(text)) + 3 :] if scheme_of(text) else text
    before_query = rest.split("?", 1)[0]
    problem = None
    if before_query.count("@") > 1:
        problem = "more than one '@'"
    elif "@" in before_query:
        userinfo = before_query.split("@", 1)[0]
        if any(c in userinfo for c in "/#?") or userinfo.count(":") > 1:
            problem = "a raw '/', '#', '?' or second ':' in the user name or password"
    if problem is None and parsed.host and not _HOST.match(parsed.host):
        problem = "a host name that is not one"
    if problem is None and parsed.password is not None and "@" not in before_query:
        problem = "a password outside the user part (a raw '?' in it?)"
    if problem:
        raise MalformedUrl(f"{_hidden_form(text)} is not a well-formed URL ({problem}); {PERCENT_ENCODE_HINT}")
    return parsed


def redact_url(url: str | URL) -> str:
    """The URL with its password and secret query values replaced by ``***``; safe for logs, reprs,
    errors and metadata. A malformed URL shows only its scheme."""
    try:
        parsed = parse_url(url)
    except MalformedUrl:
        return _hidden_form(str(url) if not isinstance(url, URL) else "")
    query = {name: (HIDDEN if is_secret_parameter(name) else value) for name, value in parsed.query.items()}
    # SQLAlchemy percent-encodes the query's "***"; shown as written, like the password's.
    return parsed.set(query=query).render_as_string(hide_password=True).replace(quote_plus(HIDDEN), HIDDEN)


def url_secrets(url: str | URL | None) -> list[str]:
    """The secret values in a URL (password, secret query values), each in the spellings a message
    may carry (as is, percent-encoded, form-encoded); longest first, so `scrub` replaces whole values."""
    if url is None or url == "":
        return []
    try:
        parsed = parse_url(url)
        values = [parsed.password] if parsed.password else []
        for name, value in parsed.query.items():
            if is_secret_parameter(name):
                values.extend([value] if isinstance(value, str) else value)
    except MalformedUrl:
        # Everything after the scheme may be secret; the raw text and its pieces are scrubbed.
        text = str(url)
        rest = text[len(scheme_of(text)) + 3 :] if scheme_of(text) else text
        values = [rest, *(piece for piece in re.split(r"[@:/#?&=]", rest) if len(piece) >= 3)]
    spellings = {
        s
        for value in values
        if value
        for s in (str(value), quote(str(value), safe=""), quote(str(value)), quote_plus(str(value)))
    }
    return sorted(spellings, key=len, reverse=True)


# The fixed hints our URL errors end with: never secrets, so never scrubbed (a malformed URL's every piece
# is treated as secret, and a user called "user" would otherwise garble "the user name" in the hint itself)
PERCENT_ENCODE_HINT = (
    "percent-encode special characters in the user name and password (@ %40, : %3A, / %2F, # %23, ? %3F)"
)
CATALOGUE_URL_FORMS = "sqlite:///path/to/catalogue.sqlite or postgresql+psycopg://user:password@host:port/database"
_KEPT = (PERCENT_ENCODE_HINT, CATALOGUE_URL_FORMS)


def scrub(text: str, secrets: Iterable[str]) -> str:
    """`text` with every occurrence of every secret replaced by ``***``, except inside our own fixed hints
    (`_KEPT`), which hold no secret."""
    secrets = [secret for secret in secrets if secret]
    for kept in _KEPT:
        if kept in text:
            return kept.join(scrub(part, secrets) for part in text.split(kept))
    for secret in secrets:
        text = text.replace(secret, HIDDEN)
    return text


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def redact_locator(locator: str) -> str:
    """A file locator as it may be shown, on one line (control characters as `\\xNN`): an http(s)
    URL without user info and with every query value replaced by ``***`` (a signed URL's signature is
    a secret whatever its name); a path as it is. A URL that does not parse (a port out of range, an
    unclosed `[`) is shown as it is when it has no place for a secret (no `@`, `?` or `#`), else as
    its scheme only."""
    one_line = _CONTROL.sub(lambda match: f"\\x{ord(match.group()):02x}", locator)
    try:
        parts = urlsplit(locator)
        parts.port  # noqa: B018 - raises ValueError for a port out of range
    except ValueError:
        return _hidden_form(one_line) if any(c in one_line for c in "@?#") else one_line
    if parts.scheme not in ("http", "https"):
        return one_line
    if one_line != locator:
        return _hidden_form(one_line) if any(c in one_line for c in "@?#") else one_line
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    if parts.username or parts.password:
        host = f"{HIDDEN}@{host}"
    query = "&".join(
        f"{pair.split('=', 1)[0]}={HIDDEN}" if "=" in pair else HIDDEN for pair in parts.query.split("&") if pair
    )
    return urlunsplit((parts.scheme, host, parts.path, query, ""))


_CHAIN = re.compile(r"::(?=[A-Za-z][A-Za-z0-9+.\-]*(?:://|::|$))")  # not the "::" of an IPv6 address


def chained_urls(location: str) -> list[str]:
    """The links of a chained fsspec URL (`simplecache::s3://bucket/x` gives two), or [location]."""
    return _CHAIN.split(location)


def redact_storage_url(location: str) -> str:
    """An object-storage location (an fsspec URL such as `s3://bucket/prefix`, or a local path) as it may
    be shown, on one line: without user info (`***@host`) and with every query value and a fragment as
    ``***`` (a signed URL's signature is a secret whatever its name). A local path is shown as it is; a URL that does not parse, as its scheme only. Each URL of a
    chained fsspec URL (`simplecache::s3://...`) is redacted so."""
    links = chained_urls(location)
    if len(links) > 1:
        return "::".join(map(redact_storage_url, links))
    one_line = _CONTROL.sub(lambda match: f"\\x{ord(match.group()):02x}", location)
    if not scheme_of(location):
        return one_line
    if one_line != location:
        return _hidden_form(one_line)
    try:
        parts = urlsplit(location)
        parts.port  # noqa: B018 - raises ValueError for a port out of range
    except ValueError:
        return _hidden_form(location)
    host = parts.netloc.rsplit("@", 1)[-1]
    if "@" in parts.netloc:
        host = f"{HIDDEN}@{host}"
    query = "&".join(
        f"{pair.split('=', 1)[0]}={HIDDEN}" if "=" in pair else HIDDEN for pair in parts.query.split("&") if pair
    )
    return urlunsplit((parts.scheme, host, parts.path, query, HIDDEN if parts.fragment else ""))
