"""Per-series judgements kept across detections, so a refresh judges afresh only the series whose inputs
changed (issue 21: "recompute only what changed: series touched by new runs").

A series' judgement (`detect._judge_series`: its changes, the pending step at its newest run, the
noise they were judged with) is a pure function of the series' corrected log values, the extra
uncertainty of each value (`host_effects`), the noise it starts from, its noise prior and that prior's
weight, and the detection settings. The store keys each judgement by a digest of exactly those inputs
(array bytes and float bits, not rounded), so "touched" is decided by the inputs, never guessed: a new run
whose host effect moves an old series' corrected values changes that series' key, and it is judged
afresh. Everything estimated across series (the panel, host effects, noise priors) is recomputed every
time; it is cheap next to the change-point search.

The store is one file of JSON lines: a header line of our own (`MAGIC`, then the layout and the judgement
version), then one line per series, ``["<key>", "<check>", sigma, [changes], pending]``, where `check` is a
digest of the key and the judgement, so an entry damaged or edited (its changes emptied, say) no longer
matches its key and is judged afresh. (A digest anyone can recompute: it catches damage and careless edits,
not a forger who can write the file, who could as well edit the report.) It is written whole, through a
temporary file and an atomic rename, so a reader never sees half of it and two writers leave one complete
file. A detection writes back only the judgements it used, so the file never holds more than the current
series.

Reading is bounded: the file must be a regular file (a FIFO, a device or a directory is never opened for
reading or replaced) of at most MAX_STORE_BYTES; its lines are indexed by key without being decoded, and
only an entry a detection asks for is decoded (at most MAX_ENTRY_BYTES), then checked in full against its
key and its series (indices within the series, finite numbers) before it is reused. A missing or empty
file is an empty store; a damaged one is a note (the caller shows it as a warning) and a recompute of what
it cannot give, never a crash. A file that does not begin with `MAGIC` is not ours: it is left as it is
(a note says so) and nothing is stored. Without a path the store lives in memory for one detection (the
CLI without ``--judgement-store``): every series is judged afresh.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import math
import os
import stat
import struct
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from . import changepoints
from .changepoints import Split
from .settings import DetectionSettings

# The version of what a judgement means. Anyone changing how a series is judged (detect._judge_series,
# changepoints.py, the inputs handed to them) or what is stored must bump it, so stored judgements of the
# old code are never reused. The key also carries a digest of changepoints.py and of the judging function's
# source (`_code_digest`), which catches most such changes even when nobody bumps this.
JUDGEMENT_VERSION = 3  # 2: a change at its boundary; 3: its levels shown by settled runs (changepoints)
STORE_FORMAT = "kernelindex-pipeline/series-judgements"
STORE_LAYOUT = 2  # 1: one JSON document (no per-entry check); 2: JSON lines, each entry bound to its key
# What every store this code wrote begins with (json.dumps of a dict whose first key is "format"): a file
# that does not is never replaced. Layout 1 began the same way, so an old store is recognised and rewritten.
MAGIC = f'{{"format": "{STORE_FORMAT}"'.encode()
MAX_STORE_BYTES = 512 * 2**20  # about 2M series at ~250 bytes each; a larger file is not one this code wrote
MAX_HEADER_BYTES = 4096
MAX_ENTRY_BYTES = 2**20  # one series' judgement: a change is ~120 bytes; a series of 8,000 changes still fits
_HEAD = 36  # '["' + 32 hex digits of the key + '",': where a line's key is, read without decoding the line
_SCAN = 1 << 24  # the newline scan's block: its temporary mask is this big, not the file's size

Judgement = tuple[list[Split], Split | None, float]  # (changes, pending step or None, noise judged with)
Judge = Callable[[np.ndarray, np.ndarray, float, float, float, DetectionSettings, np.ndarray], Judgement]


class _Unusable(ValueError):
    """A stored entry that is not reused (why, in a few words)."""


@dataclass
class JudgementReuse:
    """What one detection did with the store: series judged afresh, series whose stored judgement was reused,
    where the store is (None: in memory only) and what went wrong with it (shown as warnings)."""

    rejudged: int = 0
    reused: int = 0
    store: str | None = None
    notes: list[str] = field(default_factory=list)
    kept_whole: bool = False  # the previous detection's whole result, nothing it depends on changed

    def line(self) -> str:
        if self.kept_whole:
            return f"the previous result kept whole ({self.reused} series): nothing it depends on changed"
        where = f"judgement store {self.store}" if self.store else "no judgement store"
        return f"{self.rejudged} series judged afresh, {self.reused} reused ({where})"


class JudgementStore:
    """Judgements by the digest of their inputs; `judged` returns a stored one or judges and keeps it."""

    def __init__(self, path: str | os.PathLike[str] | None, judge: Judge) -> None:
        self.path = Path(path) if path is not None else None
        self._judge = judge
        self._code = _code_digest(judge)
        self.reuse = JudgementReuse(store=str(self.path) if self.path else None)
        # the stored lines, undecoded: the file's bytes, and per entry its key (sorted) and where its line is
        self._buf = bytearray()
        self._keys = np.empty(0, dtype="S32")
        self._starts = self._ends = np.empty(0, dtype=np.int64)
        self._lines = 0  # entry lines in the file, well-formed or not
        self._damaged = False  # some of the file could not be used: rewrite it even if nothing is new
        self._rejected: list[str] = []  # why stored entries asked for were not reused
        self._flaws: list[str] = []  # what of the file is not entries
        self._writable = True  # False: the path holds something that is not our store; never replace it
        self._used: dict[str, bytes] = {}
        self._fresh = False
        if self.path is not None:
            self._load()

    def judged(
        self,
        values: np.ndarray,
        extra: np.ndarray,
        sigma: float,
        prior: float,
        weight: float,
        settings: DetectionSettings,
        settled: np.ndarray,
    ) -> Judgement:
        key = self._key(values, extra, sigma, prior, weight, settings, settled)
        line = self._stored(key)
        if line is not None:
            try:
                judgement = _checked(line, key, len(values))
            except _Unusable as exc:
                self._rejected.append(str(exc))
            else:
                self.reuse.reused += 1
                self._used[key] = line
                return judgement
        judgement = self._judge(values, extra, sigma, prior, weight, settings, settled)
        self.reuse.rejudged += 1
        self._used[key] = _line(key, judgement)
        self._fresh = True
        return judgement

    def save(self) -> None:
        """Writes back the judgements this detection used (only those), unless the file already holds
        exactly them or the path holds something that is not our store. A store that cannot be written is
        a note; the detection's result stands."""
        flaws = list(self._flaws)
        if self._rejected:
            many = len(self._rejected) > 1
            flaws.append(
                f"{len(self._rejected)} stored judgement{'s' if many else ''} not reused ({self._rejected[0]})"
            )
        if flaws:
            self._damaged = True
            self._note(f"{'; '.join(flaws)}; those series are judged afresh and the store rewritten")
        unchanged = not self._fresh and not self._damaged and len(self._used) == self._lines
        if self.path is None or not self._writable or unchanged:
            return
        header = json.dumps({"format": STORE_FORMAT, "layout": STORE_LAYOUT, "version": JUDGEMENT_VERSION})
        tmp = None
        try:
            # a link to the store keeps pointing at it: the file it names is the one replaced
            target = Path(os.path.realpath(self.path))
            if not self._replaceable(target):
                return
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
            with os.fdopen(fd, "wb") as out:
                out.write(header.encode() + b"\n")
                for line in self._used.values():
                    out.write(line + b"\n")
            os.replace(tmp, target)
        except OSError as exc:
            self._note(f"not written ({exc}); the next detection judges every series afresh")
            if tmp is not None:
                Path(tmp).unlink(missing_ok=True)

    def _stored(self, key: str) -> bytes | None:
        if not len(self._keys):
            return None
        wanted = key.encode("ascii")
        at = int(np.searchsorted(self._keys, wanted))
        if at == len(self._keys) or self._keys[at] != wanted:
            return None
        return bytes(self._buf[self._starts[at] : self._ends[at]])

    def _load(self) -> None:
        assert self.path is not None
        try:
            # O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused below, unread)
            fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        except (FileNotFoundError, NotADirectoryError):  # nothing there (saving says why it cannot be written)
            return
        except OSError as exc:
            self._writable = False  # what it holds cannot be told: not ours to replace
            self._note(f"unreadable ({exc.strerror or exc}); every series is judged afresh and nothing is stored")
            return
        mode = os.fstat(fd)
        if not stat.S_ISREG(mode.st_mode):
            os.close(fd)
            self._writable = False
            self._note(
                f"not a regular file ({_kind(mode.st_mode)}); it is neither read nor replaced, and every series "
                "is judged afresh (point the store at a regular file)"
            )
            return
        with os.fdopen(fd, "rb", buffering=0) as handle:
            head = handle.read(max(len(MAGIC), MAX_HEADER_BYTES))
            if not head:
                return  # empty: nothing stored, and nothing lost by writing it
            if not head.startswith(MAGIC):
                self._writable = False
                self._note(
                    f"not a judgement store (it does not begin with {MAGIC.decode()}); it is left as it is, every "
                    "series is judged afresh and nothing is stored (choose another path, or delete the file)"
                )
                return
            if mode.st_size > MAX_STORE_BYTES:
                self._damaged = True
                self._note(
                    f"larger than {MAX_STORE_BYTES // 2**20} MiB; every series is judged afresh and the store rewritten"
                )
                return
            cut = head.find(b"\n")
            try:
                header = json.loads(head[:cut]) if cut >= 0 else None
            except (ValueError, RecursionError):
                header = None
            if cut >= 0 and not isinstance(header, dict):
                self._flaws.append("its header is damaged")
                return
            if not isinstance(header, dict) or header.get("layout") != STORE_LAYOUT:
                return  # an older layout (one line, no per-entry check): ours, nothing to reuse, rewritten
            if header.get("version") != JUDGEMENT_VERSION:
                return  # written by another version of detection: its judgements are not ours to reuse
            try:
                self._buf = _read_all(handle, head, min(mode.st_size, MAX_STORE_BYTES))
            except OSError as exc:
                self._damaged = True
                self._note(f"unreadable ({exc.strerror or exc}); every series is judged afresh and the store rewritten")
                return
        self._index(cut + 1)

    def _index(self, first: int) -> None:
        """Finds each entry line and its key with array operations (no line is decoded here)."""
        raw = np.frombuffer(self._buf, dtype=np.uint8)
        blocks = [np.flatnonzero(raw[a : a + _SCAN] == 0x0A) + a for a in range(first, len(raw), _SCAN)]
        ends = np.concatenate(blocks) if blocks else np.empty(0, dtype=np.int64)
        starts = np.r_[first, ends[:-1] + 1].astype(np.int64) if len(ends) else ends
        self._lines = len(ends)
        if len(raw) > (int(ends[-1]) + 1 if len(ends) else first):
            self._flaws.append("the file ends part way through a line")  # cut short
        ok = (ends - starts >= _HEAD) & (ends - starts <= MAX_ENTRY_BYTES)
        starts, ends = starts[ok], ends[ok]
        shaped = (
            (raw[starts] == ord("["))
            & (raw[starts + 1] == ord('"'))
            & (raw[starts + 34] == ord('"'))
            & (raw[starts + 35] == ord(","))
        )
        if not (ok.all() and shaped.all()):
            bad = int((~ok).sum() + (~shaped).sum())
            self._flaws.append(f"{bad} line{'s' if bad > 1 else ''} that {'are' if bad > 1 else 'is'} not an entry")
        starts, ends = starts[shaped], ends[shaped]
        width = np.arange(2, 34)
        keys = np.concatenate(
            [raw[starts[a : a + 65536, None] + width].view("S32").ravel() for a in range(0, len(starts), 65536)]
            or [np.empty(0, dtype="S32")]
        )
        order = np.argsort(keys, kind="stable")
        self._keys, self._starts, self._ends = keys[order], starts[order], ends[order]

    def _replaceable(self, target: Path) -> bool:
        """Whether `target` is missing, empty or our store, checked again just before it is replaced."""
        try:
            fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError:
            return True
        if stat.S_ISREG(os.fstat(fd).st_mode):
            with os.fdopen(fd, "rb", buffering=0) as handle:
                head = handle.read(len(MAGIC))
        else:
            os.close(fd)
            head = None
        if head is None or (head and not head.startswith(MAGIC)):
            self._note("it changed into something that is not a judgement store during the detection; left as it is")
            return False
        return True

    def _note(self, why: str) -> None:
        self.reuse.notes.append(f"judgement store {self.path}: {why}")

    def _key(
        self,
        values: np.ndarray,
        extra: np.ndarray,
        sigma: float,
        prior: float,
        weight: float,
        settings: DetectionSettings,
        settled: np.ndarray,
    ) -> str:
        h = hashlib.blake2b(digest_size=16)
        h.update(self._code)
        h.update(
            struct.pack("<dddddq", sigma, prior, weight, settings.alpha, settings.min_effect, settings.min_segment)
        )
        h.update(struct.pack("<q", len(values)))
        h.update(np.ascontiguousarray(values, dtype="<f8").tobytes())
        h.update(np.ascontiguousarray(extra, dtype="<f8").tobytes())
        h.update(np.ascontiguousarray(settled, dtype=np.uint8).tobytes())
        return h.hexdigest()


def _read_all(handle: Any, head: bytes, size: int) -> bytearray:
    """The file's bytes in one buffer read into in place (no copy of the whole: a store may be 512 MiB)."""
    buf = bytearray(max(size, len(head)))
    buf[: len(head)] = head
    view, got = memoryview(buf), len(head)
    while got < len(buf) and (n := handle.readinto(view[got:])):
        got += n
    view.release()
    del buf[got:]
    return buf


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a plain file"


def _code_digest(judge: Judge) -> bytes:
    """The version, numpy's version (last bits of a median may differ across releases) and the source of
    changepoints.py and of the judging function, where the source is there to read."""
    h = hashlib.blake2b(digest_size=16)
    h.update(f"{JUDGEMENT_VERSION} numpy {np.__version__}".encode())
    try:
        h.update(Path(changepoints.__file__).read_bytes())
        h.update(inspect.getsource(judge).encode())
    except (OSError, TypeError):  # no source shipped: the version alone
        pass
    return h.digest()


def _check(key: str, payload: list[Any]) -> str:
    """The digest binding a judgement to its key (json.dumps writes a float as its shortest repr, so a
    payload read back dumps to the bytes it was written from)."""
    body = json.dumps(payload, allow_nan=False).encode()
    return hashlib.blake2b(key.encode() + b"\n" + body, digest_size=16, person=b"ki-judgement").hexdigest()


def _line(key: str, judgement: Judgement) -> bytes:
    splits, pending, sigma = judgement
    payload = [float(sigma), [_split_row(s) for s in splits], _split_row(pending) if pending is not None else None]
    try:
        check = _check(key, payload)
    except ValueError:  # a judgement that is not finite: stored unchecked, so it is never reused
        check = ""
    return json.dumps([key, check, *payload]).encode()


def _split_row(split: Split) -> list[Any]:
    return [
        int(split.index),
        int(split.start),
        int(split.stop),
        float(split.log_ratio),
        float(split.half_width),
        float(split.p_value),
    ]


def _refuse_constant(token: str) -> None:
    raise _Unusable(f"{token} in an entry")


def _checked(line: bytes, key: str, n: int) -> Judgement:
    """The judgement of a stored line, once it is shown to be one: its key, its check, every split inside a
    series of `n` values, every number finite; else _Unusable."""
    try:
        row = json.loads(line, parse_constant=_refuse_constant)
    except RecursionError:
        raise _Unusable("an entry nested too deep") from None
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, or NaN/Infinity (_refuse_constant)
        raise _Unusable(str(exc) if isinstance(exc, _Unusable) else "an entry that is not JSON") from None
    if not (isinstance(row, list) and len(row) == 5 and row[0] == key and isinstance(row[1], str)):
        raise _Unusable("an entry that is not [key, check, noise, changes, pending]")
    try:
        bound = row[1] == _check(key, row[2:])
    except (ValueError, RecursionError):
        bound = False
    if not bound:
        raise _Unusable("an entry that does not match its key: damaged or edited")
    sigma, rows, pending = row[2:]
    if not (type(sigma) is float and math.isfinite(sigma) and sigma >= 0 and isinstance(rows, list)):
        raise _Unusable("an entry whose noise is not a finite number")
    splits = [_split(r, n) for r in rows]
    if any(a.index >= b.index for a, b in zip(splits, splits[1:], strict=False)):
        raise _Unusable("an entry whose changes are out of order")
    return splits, _split(pending, n) if pending is not None else None, sigma


def _split(row: Any, n: int) -> Split:
    if not (
        isinstance(row, list)
        and len(row) == 6
        and all(type(v) is int for v in row[:3])
        and all(type(v) is float and math.isfinite(v) for v in row[3:])
    ):
        raise _Unusable("an entry with a change that is not 3 indices and 3 finite numbers")
    index, start, stop, log_ratio, half_width, p_value = row
    if not (0 <= start < index < stop <= n):
        raise _Unusable(f"an entry with a change at {start}..{index}..{stop}, outside a series of {n} values")
    if half_width < 0 or not 0 <= p_value <= 1:
        raise _Unusable("an entry with a negative half-width or a p-value outside [0, 1]")
    return Split(index, start, stop, log_ratio, half_width, p_value)
