"""Per-series judgements kept across detections, so a refresh judges afresh only the series whose inputs
changed (issue 21: "recompute only what changed: series touched by new runs").

A series' judgement (`regressions._judge_series`: its changes, the pending step at its newest run, the
noise they were judged with) is a pure function of the series' corrected log values, the extra
uncertainty of each value (`host_effects`), the noise it starts from, its noise prior and that prior's
weight, and the detection settings. The store keys each judgement by a digest of exactly those inputs
(array bytes and float bits, not rounded), so "touched" is decided by the inputs, never guessed: a new run
whose host effect moves an old series' corrected values changes that series' key, and it is judged
afresh. Everything estimated across series (the panel, host effects, noise priors) is recomputed every
time; it is cheap next to the change-point search.

The store is one JSON file (written whole, through a temporary file and an atomic rename, so a reader
never sees half of it and two writers leave one complete file). A detection writes back only the
judgements it used, so the file never holds more than the current series. A missing file is an empty
store; an unreadable, oversized or malformed one is a note (the caller shows it as a warning) and a full
recompute, never a crash. Without a path the store lives in memory for one detection (the CLI without
``--judgement-store``): every series is judged afresh.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import math
import os
import struct
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from . import changepoints
from .changepoints import DetectionSettings, Split

# The version of what a judgement means. Anyone changing how a series is judged (regressions._judge_series,
# changepoints.py, the inputs handed to them) or what is stored must bump it, so stored judgements of the
# old code are never reused. The key also carries a digest of changepoints.py and of the judging function's
# source (`_code_digest`), which catches most such changes even when nobody bumps this.
JUDGEMENT_VERSION = 1
STORE_FORMAT = "kernelindex-pipeline/series-judgements"
MAX_STORE_BYTES = 512 * 2**20  # about 2M series at ~250 bytes each; a larger file is not one this code wrote

Judgement = tuple[list[Split], Split | None, float]  # (changes, pending step or None, noise judged with)
Judge = Callable[[np.ndarray, np.ndarray, float, float, float, DetectionSettings], Judgement]


@dataclass
class JudgementReuse:
    """What one detection did with the store: series judged afresh, series whose stored judgement was reused,
    where the store is (None: in memory only) and what went wrong with it (shown as warnings)."""

    rejudged: int = 0
    reused: int = 0
    store: str | None = None
    notes: list[str] = field(default_factory=list)

    def line(self) -> str:
        where = f"judgement store {self.store}" if self.store else "no judgement store"
        return f"{self.rejudged} series judged afresh, {self.reused} reused ({where})"


class JudgementStore:
    """Judgements by the digest of their inputs; `judged` returns a stored one or judges and keeps it."""

    def __init__(self, path: str | os.PathLike[str] | None, judge: Judge) -> None:
        self.path = Path(path) if path is not None else None
        self._judge = judge
        self._code = _code_digest(judge)
        self.reuse = JudgementReuse(store=str(self.path) if self.path else None)
        self._stored: dict[str, Any] = self._load() if self.path else {}
        self._used: dict[str, Any] = {}
        self._fresh = False

    def judged(
        self,
        values: np.ndarray,
        extra: np.ndarray,
        sigma: float,
        prior: float,
        weight: float,
        settings: DetectionSettings,
    ) -> Judgement:
        key = self._key(values, extra, sigma, prior, weight, settings)
        stored = self._stored.get(key)
        if stored is not None:
            self.reuse.reused += 1
            self._used[key] = stored
            return _decoded(stored)
        judgement = self._judge(values, extra, sigma, prior, weight, settings)
        self.reuse.rejudged += 1
        self._used[key] = _encoded(judgement)
        self._fresh = True
        return judgement

    def save(self) -> None:
        """Writes back the judgements this detection used (only those), unless the file already holds
        exactly them. A store that cannot be written is a note; the detection's result stands."""
        if self.path is None or (not self._fresh and self._used.keys() == self._stored.keys()):
            return
        body = json.dumps({"format": STORE_FORMAT, "version": JUDGEMENT_VERSION, "judgements": self._used})
        tmp = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.")
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(body)
            os.replace(tmp, self.path)
        except OSError as exc:
            self.reuse.notes.append(
                f"judgement store {self.path}: not written ({exc}); the next detection judges every series afresh"
            )
            if tmp is not None:
                Path(tmp).unlink(missing_ok=True)

    def _load(self) -> dict[str, Any]:
        assert self.path is not None
        try:
            if self.path.stat().st_size > MAX_STORE_BYTES:
                raise ValueError(f"larger than {MAX_STORE_BYTES // 2**20} MiB")
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
            return self._unusable(f"unreadable ({exc})")
        if not isinstance(data, dict) or data.get("format") != STORE_FORMAT:
            return self._unusable(f'not a judgement store (no "format": "{STORE_FORMAT}")')
        if data.get("version") != JUDGEMENT_VERSION:
            return {}  # written by another version of detection: its judgements are not ours to reuse
        entries = data.get("judgements")
        if not isinstance(entries, dict) or not all(_well_formed(e) for e in entries.values()):
            return self._unusable("malformed judgements")
        return entries

    def _unusable(self, why: str) -> dict[str, Any]:
        self.reuse.notes.append(
            f"judgement store {self.path}: {why}; every series is judged afresh and the store rewritten "
            "(delete the file to silence this)"
        )
        return {}

    def _key(
        self,
        values: np.ndarray,
        extra: np.ndarray,
        sigma: float,
        prior: float,
        weight: float,
        settings: DetectionSettings,
    ) -> str:
        h = hashlib.blake2b(digest_size=16)
        h.update(self._code)
        h.update(
            struct.pack("<dddddq", sigma, prior, weight, settings.alpha, settings.min_effect, settings.min_segment)
        )
        h.update(struct.pack("<q", len(values)))
        h.update(np.ascontiguousarray(values, dtype="<f8").tobytes())
        h.update(np.ascontiguousarray(extra, dtype="<f8").tobytes())
        return h.hexdigest()


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


def _encoded(judgement: Judgement) -> list[Any]:
    splits, pending, sigma = judgement
    return [float(sigma), [_split_row(s) for s in splits], _split_row(pending) if pending is not None else None]


def _decoded(entry: list[Any]) -> Judgement:
    sigma, splits, pending = entry
    return [_split(row) for row in splits], _split(pending) if pending is not None else None, sigma


def _split_row(split: Split) -> list[Any]:
    return [
        int(split.index),
        int(split.start),
        int(split.stop),
        float(split.log_ratio),
        float(split.half_width),
        float(split.p_value),
    ]


def _split(row: list[Any]) -> Split:
    index, start, stop, log_ratio, half_width, p_value = row
    return Split(index, start, stop, log_ratio, half_width, p_value)


def _well_formed(entry: Any) -> bool:
    def is_split(row: Any) -> bool:
        return (
            isinstance(row, list)
            and len(row) == 6
            and all(type(v) is int for v in row[:3])
            and all(isinstance(v, float) for v in row[3:])
        )

    return (
        isinstance(entry, list)
        and len(entry) == 3
        and isinstance(entry[0], float)
        and math.isfinite(entry[0])
        and isinstance(entry[1], list)
        and all(is_split(row) for row in entry[1])
        and (entry[2] is None or is_split(entry[2]))
    )
