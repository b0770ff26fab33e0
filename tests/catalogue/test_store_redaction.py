"""A password in the catalogue URL never shows: not in logs, reprs, exceptions or publication metadata."""

from __future__ import annotations

import logging
import traceback
from urllib.parse import quote

import pytest
from sqlalchemy.engine import make_url

from kernelindex_pipeline.catalogue.store import CatalogueError, CatalogueStore, redact_url

SECRET = "Hunter2/se@cret:pass"  # characters that need URL escaping, so both spellings are checked


def spellings(password: str) -> list[str]:
    return [password, quote(password, safe=""), quote(password)]


def assert_hidden(text: str, password: str) -> None:
    for spelling in spellings(password):
        assert spelling not in text, f"password ({spelling!r}) leaked into: {text[:300]}"


def formatted(exc: BaseException) -> str:
    """Everything a traceback would print, plus every chained cause and context (printed or not:
    error reporters such as Dagster's may walk them)."""
    texts = ["".join(traceback.format_exception(exc))]
    seen = exc
    while seen is not None:
        texts.append(repr(seen))
        seen = seen.__cause__ or seen.__context__
    return "\n".join(texts)


@pytest.mark.parametrize(
    "url",
    [
        f"postgresql+psycopg://kernelindex:{quote(SECRET, safe='')}@db.example:5432/catalogue",
        f"postgresql://kernelindex:{quote(SECRET, safe='')}@db.example/catalogue?sslmode=require",
        f"postgres://kernelindex:{quote(SECRET, safe='')}@db.example/catalogue",
    ],
)
def test_redact_url_hides_the_password_and_keeps_the_rest(url):
    redacted = redact_url(url)
    assert_hidden(redacted, SECRET)
    assert "kernelindex:***@db.example" in redacted
    assert make_url(redacted).database == "catalogue"


def test_redact_url_without_a_password_changes_nothing(sqlite_url):
    assert redact_url(sqlite_url) == sqlite_url
    assert redact_url("postgresql+psycopg://kernelindex@db.example/catalogue") == (
        "postgresql+psycopg://kernelindex@db.example/catalogue"
    )


def test_an_unparseable_url_is_redacted_too():
    assert_hidden(redact_url("weird//scheme://user:topsecret@host/x"), "topsecret")


def test_a_server_that_cannot_be_reached_raises_without_the_password(caplog):
    caplog.set_level(logging.DEBUG)
    # Port 1 on loopback: nothing listens there, the connection is refused at once.
    url = f"postgresql+psycopg://kernelindex:{quote(SECRET, safe='')}@127.0.0.1:1/catalogue?connect_timeout=5"

    with pytest.raises(CatalogueError) as caught:
        CatalogueStore.open(url)

    assert "cannot open the catalogue at postgresql+psycopg://kernelindex:***@127.0.0.1:1/catalogue" in str(
        caught.value
    )
    assert_hidden(formatted(caught.value), SECRET)
    assert_hidden(caplog.text, SECRET)


@pytest.mark.postgres
def test_a_wrong_password_is_not_echoed(postgres_url, caplog):
    caplog.set_level(logging.DEBUG)
    wrong = "Wr0ng-" + SECRET
    url = make_url(postgres_url).set(password=wrong).render_as_string(hide_password=False)

    with pytest.raises(CatalogueError, match="password authentication failed") as caught:
        CatalogueStore.open(url)

    assert_hidden(formatted(caught.value), wrong)
    assert_hidden(caplog.text, wrong)


@pytest.mark.postgres
def test_a_working_catalogue_never_shows_its_password(postgres_url, catalogue_records, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)  # SQLAlchemy's engine and pool loggers included
    password = make_url(postgres_url).password
    assert password, "the test server's URL must carry a password for this test to mean anything"

    with CatalogueStore.open(postgres_url) as store:
        result = store.publish(catalogue_records, partition="p", source={"locator": "x"}, report={"rowsRead": 3})
        shown = [repr(store), str(store), store.safe_url, repr(store.engine), repr(result), str(result.to_dict())]
        shown.append(str(store.publications()))
        with pytest.raises(CatalogueError) as caught:
            store.publish(catalogue_records, partition="p", source=object())  # a bad argument
        shown.append(formatted(caught.value))

    for text in shown + [caplog.text]:
        assert_hidden(text, password)
    assert "***" in store.safe_url


@pytest.mark.postgres
def test_driver_errors_while_publishing_are_scrubbed(postgres_url, catalogue_records, monkeypatch):
    from sqlalchemy.exc import OperationalError

    password = make_url(postgres_url).password

    def failing(*_args, **_kwargs):
        # A driver message that echoes the password (some do, with connection strings).
        raise OperationalError(
            "INSERT INTO objects", {}, Exception(f"server closed the connection (password={password})")
        )

    with CatalogueStore.open(postgres_url) as store:
        monkeypatch.setattr(CatalogueStore, "_insert_absent", failing)
        with pytest.raises(CatalogueError, match="server closed the connection") as caught:
            store.publish(catalogue_records, partition="p")
    assert_hidden(formatted(caught.value), password)


# ---------------------------------------------------------------- issue 11, items 4 and 5

QUERY_SECRET = "Qs3cret-Pw9"


@pytest.mark.parametrize(
    "url",
    [
        f"postgresql+psycopg://kernelindex@db.example/catalogue?password={QUERY_SECRET}",
        f"postgresql://kernelindex@db.example/catalogue?sslmode=require&password={QUERY_SECRET}",
        f"postgresql+psycopg://kernelindex@db.example/catalogue?sslpassword={QUERY_SECRET}",
        f"postgresql+psycopg://kernelindex:{QUERY_SECRET}@db.example/catalogue?password={QUERY_SECRET}",
    ],
)
def test_a_password_in_the_query_string_is_redacted(url):
    from kernelindex_pipeline.catalogue.store import _create_engine, _normalise_url

    redacted = redact_url(url)
    assert QUERY_SECRET not in redacted and "***" in redacted
    assert make_url(redacted).database == "catalogue"
    engine = _create_engine(_normalise_url(url), 1.0)  # no connection is made
    try:
        assert QUERY_SECRET not in repr(engine) and QUERY_SECRET not in str(engine.url)
    finally:
        engine.dispose()


def test_a_query_string_password_is_not_echoed_when_the_server_is_unreachable(caplog):
    caplog.set_level(logging.DEBUG)
    url = f"postgresql+psycopg://kernelindex@127.0.0.1:1/catalogue?connect_timeout=5&password={QUERY_SECRET}"
    with pytest.raises(CatalogueError) as caught:
        CatalogueStore.open(url)
    assert "127.0.0.1:1/catalogue" in str(caught.value)
    assert_hidden(formatted(caught.value), QUERY_SECRET)
    assert_hidden(caplog.text, QUERY_SECRET)


# Passwords with raw URL delimiters: SQLAlchemy parses some of these into the wrong parts (the host
# `ret7y@db.example`), others not at all. No piece of the password may show anywhere.
MALFORMED = [
    ("Sec9x@ret7y", "postgresql://kernelindex:Sec9x@ret7y@db.example/catalogue"),
    ("Sec9x@ret7y", "postgresql+psycopg://kernelindex:Sec9x@ret7y@db.example:5432/catalogue"),
    ("Se9x:cr7y/pw5z", "postgresql://kernelindex:Se9x:cr7y/pw5z@db.example/catalogue"),
    ("pw5z#fr4g", "postgresql://kernelindex:pw5z#fr4g@db.example/catalogue"),
    ("pw5z?qq=fr4g", "postgresql://kernelindex:pw5z?qq=fr4g@db.example/catalogue"),
    ("tops3cret", "weird//scheme://user:tops3cret@host/x"),
    ("Sec9x@ret7y", "user:Sec9x@ret7y@host/db"),
]


def pieces(password: str) -> list[str]:
    import re

    return [p for p in re.split(r"[@:/#?=]", password) if len(p) >= 3]


@pytest.mark.parametrize(("password", "url"), MALFORMED)
def test_a_malformed_url_is_never_echoed_in_part(password, url, caplog):
    caplog.set_level(logging.DEBUG)
    shown = [redact_url(url)]
    with pytest.raises(CatalogueError, match="not a (well-formed|SQLAlchemy) URL") as caught:
        CatalogueStore.open(url)
    shown += [formatted(caught.value), caplog.text]
    for text in shown:
        for piece in pieces(password):
            assert piece not in text, f"{piece!r} of the password leaked into: {text[:300]}"


def test_percent_encoded_specials_still_work(tmp_path):
    from kernelindex_pipeline.redaction import parse_url

    url = f"postgresql+psycopg://kernelindex:{quote('Sec9x@ret7y:/#?', safe='')}@db.example:5432/catalogue"
    parsed = parse_url(url)
    assert parsed.password == "Sec9x@ret7y:/#?" and parsed.host == "db.example"
    assert "Sec9x" not in redact_url(url)
    assert redact_url(f"sqlite:///{tmp_path}/c.sqlite") == f"sqlite:///{tmp_path}/c.sqlite"


def test_scrub_removes_every_spelling_of_every_secret():
    from kernelindex_pipeline.redaction import scrub, url_secrets

    url = f"postgresql://u:{quote('p w@1', safe='')}@h/db?sslpassword={QUERY_SECRET}&sslmode=require"
    text = f"failed: password=p w@1 ({quote('p w@1', safe='')}, p+w%401) sslpassword={QUERY_SECRET} sslmode=require"
    cleaned = scrub(text, url_secrets(url))
    assert "p w@1" not in cleaned and "p%20w%401" not in cleaned and "p+w%401" not in cleaned
    assert QUERY_SECRET not in cleaned and "sslmode=require" in cleaned
