"""The sweep's data CSV: the one file every benchmark script of a round merges its rows into
(`utils.update_benchmark_data_csv`: read all, add, rewrite). This module writes it and reads it back,
and keeps the runner's ledger of which script wrote which row, so a script that damages the file, or
removes or rewrites earlier scripts' rows, loses nobody's measurements."""

from __future__ import annotations

import collections
import csv
import hashlib
import io
import json
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from kernelindex_pipeline.liger.csv import (  # the columns `BenchmarkDataCSVRow` writes, in its order; a row's identity
    ROW_KEY_COLUMNS,
    UPSTREAM_COLUMNS,
)

# A sweep's data CSV holds a few thousand rows (a few MB); a script that makes it far larger is
# not measuring, and the runner never reads more than this into memory.
DATA_CSV_MAX_BYTES = 256 * 2**20


@dataclass
class CsvState:
    fieldnames: list[str]
    rows: dict[tuple, dict]  # row key -> row, in file order
    damaged: bool  # unreadable, or rows with missing/extra fields (a write cut short)
    problem: str | None = None  # what is wrong with it, as "the data CSV <problem>"


def _damaged(problem: str) -> CsvState:
    return CsvState(fieldnames=list(UPSTREAM_COLUMNS), rows={}, damaged=True, problem=problem)


def _read_regular_file(path: Path, limit: int) -> bytes:
    """The bytes of `path` if it is a regular file of at most `limit` bytes (never following a
    symbolic link, never blocking on a FIFO); else OSError saying what it is."""
    kinds = {
        stat.S_IFDIR: "a directory",
        stat.S_IFLNK: "a symbolic link",
        stat.S_IFIFO: "a FIFO",
        stat.S_IFSOCK: "a socket",
    }
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        raise OSError("is missing") from None
    if not stat.S_ISREG(mode):
        raise OSError(f"was replaced by {kinds.get(stat.S_IFMT(mode), 'a device')}")
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # swapped between lstat and open
            raise OSError("was replaced by something other than a file")
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise OSError(f"is larger than {limit} bytes")
    return data


def read_data_csv(path: Path) -> CsvState:
    """The data CSV's complete rows. A file the scripts' csv writer finished ends in a newline and has
    every upstream column; a rewrite cut short (a kill) shows as a missing newline, a short header or
    short rows, and is `damaged`: only its complete rows count. Anything but a regular file of at
    most DATA_CSV_MAX_BYTES (a directory, a link, a FIFO) is `damaged` with no rows."""
    try:
        text = _read_regular_file(path, DATA_CSV_MAX_BYTES).decode("utf-8")
    except OSError as error:
        return _damaged(error.strerror or str(error))
    except UnicodeDecodeError as error:
        return _damaged(f"is not UTF-8 (byte {error.start})")
    problem = None
    if text and not text.endswith("\n"):
        problem = "was cut short (no newline at its end)"  # its last cell may look complete but is not
        text = text[: text.rfind("\n") + 1]
    try:
        reader = csv.DictReader(io.StringIO(text, newline=""))
        fieldnames = list(reader.fieldnames or [])
        if not set(UPSTREAM_COLUMNS) <= set(fieldnames):
            return _damaged("has lost its header")
        rows = {}
        for row in reader:
            if None in row or any(value is None for value in row.values()):
                problem = f"has a row with missing or extra cells (line {reader.line_num})"  # not a measurement
                continue
            rows[tuple(row[c] for c in ROW_KEY_COLUMNS)] = row
    except csv.Error as error:
        return _damaged(f"is not valid CSV ({error})")
    return CsvState(fieldnames=fieldnames, rows=rows, damaged=problem is not None, problem=problem)


def _move_aside(path: Path, quarantine: Path) -> str | None:
    """Clear `path` for a file of ours: a directory a script put there is moved into `quarantine`
    (cheap, whatever it holds, and kept for inspection), anything else is unlinked. Returns a note."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    if stat.S_ISDIR(mode):
        quarantine.mkdir(parents=True, exist_ok=True)
        target = quarantine / f"{path.name}.{len(list(quarantine.iterdir())) + 1}"
        os.rename(path, target)
        return f"moved the directory at {path.name} to {target}"
    os.unlink(path)
    return None


def write_data_csv(path: Path, fieldnames: list[str], rows: Iterable[dict], quarantine: Path) -> list[str]:
    """Write the data CSV atomically (through `<name>.tmp`), whatever a script left at either name.
    Returns notes on what was moved aside (into `quarantine`)."""
    temporary = path.with_name(path.name + ".tmp")
    notes = [note for note in [_move_aside(temporary, quarantine)] if note]
    with temporary.open("x", newline="") as handle:  # "x": a fresh file, never through a link
        writer = csv.DictWriter(handle, fieldnames=fieldnames)  # the same dialect the scripts write
        writer.writeheader()
        writer.writerows(rows)
    if os.path.isdir(path) and not os.path.islink(path):
        notes.append(_move_aside(path, quarantine))
    os.replace(temporary, path)
    return notes


def row_digest(row: dict) -> str:
    return hashlib.sha256(json.dumps(row, sort_keys=True).encode()).hexdigest()


def write_empty_data_csv(path: Path) -> None:
    """The data CSV with its header alone: whatever rows it holds afterwards were measured here."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as handle:
        csv.writer(handle).writerow(UPSTREAM_COLUMNS)


# --- who wrote which row ----------------------------------------------------------------------------
@dataclass
class ScriptRows:
    """What one script did to the data CSV, once the runner has repaired any damage."""

    after: CsvState  # the CSV as the next script finds it
    new_keys: list[tuple]  # row keys no earlier script wrote, in file order
    repaired: bool  # the runner rewrote the CSV: damaged, or earlier rows removed or changed
    problems: list[dict]  # outcome problems naming the damage

    def new_rows(self) -> list[dict]:
        return [self.after.rows[key] for key in self.new_keys if key in self.after.rows]


class RowLedger:
    """The runner's copy of the data CSV between scripts: each row key belongs to the script that first
    wrote it, with that row's content digest. After each script `settle` compares the file against it;
    rows of earlier scripts that went missing or changed, and a CSV a script damaged or replaced (by a
    directory, say), are restored and named in that script's problems."""

    def __init__(self, path: Path, quarantine: Path):
        self.path, self.quarantine = path, quarantine
        self.state = read_data_csv(path)
        self.owners: dict[tuple, tuple[str, str]] = {
            key: ("(the work tree)", row_digest(row)) for key, row in self.state.rows.items()
        }

    def settle(self, script_name: str) -> ScriptRows:
        """Read the CSV back after `script_name` ran, restore what it damaged, and take its new rows."""
        state, owners = self.state, self.owners
        after = read_data_csv(self.path)
        new_keys = [key for key in after.rows if key not in owners]
        lost = [key for key in state.rows if key not in after.rows]
        changed = [key for key in state.rows if key in after.rows and row_digest(after.rows[key]) != owners[key][1]]
        repaired = after.damaged or bool(lost) or bool(changed)
        problems: list[dict] = []
        if repaired:
            problems = self._restore(after, new_keys, [] if after.damaged else lost, changed)
            after = read_data_csv(self.path)
        owners.update((key, (script_name, row_digest(after.rows[key]))) for key in new_keys if key in after.rows)
        self.state = after
        return ScriptRows(after, new_keys, repaired, problems)

    def _restore(self, after: CsvState, new_keys: list[tuple], lost: list[tuple], changed: list[tuple]) -> list[dict]:
        """Earlier rows as they were, then whatever complete rows this script managed to write. `lost`:
        rows missing from a good file (from a damaged one they are that damage, said once)."""
        state = self.state
        merged = {**state.rows, **{key: after.rows[key] for key in new_keys}}
        notes = write_data_csv(
            self.path, state.fieldnames if state.rows else after.fieldnames, merged.values(), self.quarantine
        )
        problems = []
        if after.problem:
            problems.append(
                {"kind": "data_csv", "message": f"the data CSV {after.problem}; the runner rewrote it with the earlier rows kept"
                 + "".join(f" ({note})" for note in notes)}
            )  # fmt: skip
        for kind, keys, what in (("rows_lost", lost, "removed"), ("rows_rewritten", changed, "changed")):
            if keys:
                by_owner = collections.Counter(self.owners[key][0] for key in keys)
                problems.append(
                    {"kind": kind, "message": f"it {what} {len(keys)} row(s) that earlier scripts wrote ("
                     + ", ".join(f"{name}: {n}" for name, n in sorted(by_owner.items())) + "); the runner restored them"}
                )  # fmt: skip
        return problems
