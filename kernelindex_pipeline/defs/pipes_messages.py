"""The reader of the sweep process's Pipes messages: Dagster's temp-file protocol, complete lines only.

Dagster 1.13's `PipesTempFileMessageReader` tails the message file with `readline()` and decodes
whatever comes back. While the external process is still appending a message, `readline()` returns the
part written so far, and the decode fails (`JSONDecodeError`), ending the step. The sweep's reply
carries its whole CSV, so its message is large and the race is likely on a busy host (measured: a
process appending forty 3 MB messages, a `readline()` tail saw 48 partial lines and 17 whole ones).
This reader keeps what follows the last newline until the rest of the line has arrived.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from dagster import PipesMessageReader
from dagster_pipes import PipesDefaultMessageWriter

_CHUNK = 1 << 20
_POLL_SECONDS = 0.01


class CompleteLinePipesMessageReader(PipesMessageReader):
    """Messages through a temporary file, like Dagster's default, decoded only once their newline is written."""

    @contextmanager
    def read_messages(self, handler: Any) -> Iterator[dict[str, Any]]:
        with tempfile.TemporaryDirectory(prefix="kernelindex-pipes-") as tempdir:
            path = os.path.join(tempdir, "messages.jsonl")
            open(path, "wb").close()
            session_closed = threading.Event()
            thread = threading.Thread(target=self._read, args=(path, handler, session_closed), daemon=True)
            thread.start()
            try:
                yield {
                    PipesDefaultMessageWriter.FILE_PATH_KEY: path,
                    PipesDefaultMessageWriter.INCLUDE_STDIO_IN_MESSAGES_KEY: False,
                }
            finally:
                session_closed.set()
                thread.join()

    def no_messages_debug_text(self) -> str:
        return "Attempted to read messages from a local temporary file (complete lines only)."

    @staticmethod
    def _read(path: str, handler: Any, session_closed: threading.Event) -> None:
        try:
            for line in complete_lines(path, session_closed.is_set):
                handler.handle_message(json.loads(line))
        except Exception:
            handler.report_pipes_framework_exception("CompleteLinePipesMessageReader reader thread", sys.exc_info())
            raise


def complete_lines(path: str, should_stop: Any) -> Iterator[bytes]:
    """The newline-terminated lines appended to `path`, until `should_stop()` and nothing more is there.

    A last line without its newline once the writer is done is still handed on (Dagster's writer always
    ends a message with one, so that only happens to a message cut short, which then fails to decode
    where it can be reported)."""
    pending = b""
    with open(path, "rb") as stream:
        while True:
            # Asked before reading: what was written before the stop is then read to the end first.
            stopping = should_stop()
            chunk = stream.read(_CHUNK)
            if chunk:
                *lines, pending = (pending + chunk).split(b"\n")
                yield from (line for line in lines if line.strip())
            elif stopping:
                if pending.strip():
                    yield pending
                return
            else:
                time.sleep(_POLL_SECONDS)
