"""Efficiency per publication (issue 33): the `efficiency_table` asset derives the figures of the runs each
publication brought once, and a refresh derives only the publications since the last one.

Objects are insert-only and remember the publication that first brought them, so a publication's runs never
change; what their figures depend on besides them is the records they refer to (workloads, environments: few,
read whole each refresh), the low-efficiency threshold, the code and data files (cost models, peaks), and the
measured ceilings: the fastest sentinel run of each environment, over every publication. So the folder keeps:

- ``parts/efficiency-<publication id>.jsonl``: the sidecar's lines (`efficiency.write_sidecar`) of that
  publication's runs, in run-digest order;
- ``efficiency.parts.json``: per part its partition, rows, sha256, status counts, the ceilings its lines used,
  the sentinel ceilings its own runs measured, the references it lacked, its kernels and run templates; per run
  template the ranking's candidates of its series (`efficiency.Candidate`: a series lies within one template,
  so a template's candidates need only its runs); the threshold and code fingerprint everything was derived
  with;
- ``efficiency.jsonl``: the whole sidecar (header, then every run's line in digest order), merged from the parts
  when any changed (where only new parts came, their lines put into the previous file, which the list says the
  parts and size of): what the export and the site read.

A part is derived again when its file is missing or damaged (a warning), when the ceilings of its environments
moved (a faster sentinel run arrived), or when a record it lacked arrived; everything when the list is unusable
or the threshold or code changed. The files are the bytes a full derivation writes (`derive_efficiency` of the
whole catalogue: tests/reporting/test_efficiency_parts.py).
"""

from __future__ import annotations

import hashlib
import heapq
import json
import os
import re
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from kernelindex_pipeline.imports.archive import sha256_file

from .efficiency import (
    IMPLAUSIBLE_FLAGS,
    SIDECAR_KIND,
    SIDECAR_NAME,
    SIDECAR_VERSION,
    Candidate,
    EfficiencyReport,
    TableRow,
    best_candidates,
    derive_efficiency,
    ranking_candidates,
    split_efficiency,
    with_measured_ceilings,
)
from .series import RecordIndex, build_series

PARTS_LIST = "efficiency.parts.json"
PARTS_DIR = "parts"
FORMAT = 1
RUN_KIND = "BenchmarkRun"
_RUN_FIELD = re.compile(r'"run": "([^"]+)"')
# what the figures are made with besides the records: this code, efficiency.py's, the cost models and peaks
_CODE = (
    ("reporting", "efficiency*.py"),
    ("reporting", "series.py"),
    ("liger", "costs.py"),
    ("liger", "identity.py"),
    ("data", "gpu-peaks.yaml"),
    ("data", "liger-cost-models.yaml"),
)


class EfficiencyCatalogue(Protocol):
    """What the parts read of a catalogue (a `catalogue.store.CatalogueStore`)."""

    def publications_with_records(self, after: int = 0) -> dict[int, str]: ...
    def records(self, kinds: Iterable[str] | None = None, *, publications: Iterable[int] | None = None) -> Any: ...
    def manifests(self, kinds: Iterable[str] | None = None) -> Iterator[dict[str, Any]]: ...
    def counts_by_kind(self) -> dict[str, int]: ...
    def runs_by_external_id(self, prefixes: Iterable[str]) -> Iterator[tuple[str, dict[str, Any], int]]: ...
    def run_publications(self) -> dict[str, int]: ...


@dataclass
class EfficiencyParts:
    """What a refresh of the parts did, and the figures' totals (summed over the parts)."""

    sidecar: Path
    low_threshold: float
    written: list[int] = field(default_factory=list)  # derived: new, or read again (damaged, ceilings moved, ...)
    why: dict[int, str] = field(default_factory=dict)  # part -> why it was derived again (not new)
    kept: list[int] = field(default_factory=list)
    removed: list[int] = field(default_factory=list)
    templates_ranked: list[str] = field(default_factory=list)  # run templates whose candidates were made again
    counts: dict[str, int] = field(default_factory=dict)  # statuses and flags, as EfficiencyReport.counts
    implausible: int = 0
    runs: int = 0
    rows: list[TableRow] = field(default_factory=list)  # the least efficient (kernel, pass) per GPU
    warnings: list[str] = field(default_factory=list)
    full: str | None = None  # why every part was derived (None: only what changed)

    def recomputed(self) -> str:
        if self.full:
            return f"all {len(self.written)} parts ({self.runs} runs) derived: {self.full}"
        again = ", ".join(f"{p} ({why})" for p, why in sorted(self.why.items()))
        return (
            f"{len(self.written)} of {len(self.written) + len(self.kept)} parts derived "
            f"({len(self.written) - len(self.why)} new{'; again: ' + again if again else ''}), {len(self.kept)} "
            f"kept; the ranking's candidates of {len(self.templates_ranked)} run templates made again (their runs "
            f"changed); {self.runs} runs in all"
        )


def update_efficiency(
    store: EfficiencyCatalogue, out_dir: str | os.PathLike[str], *, low_threshold: float, rebuild: bool = False
) -> EfficiencyParts:
    """Bring `out_dir`'s parts and sidecar to the catalogue in `store` (layout: the module docstring)."""
    out = Path(out_dir)
    (out / PARTS_DIR).mkdir(parents=True, exist_ok=True)
    done = EfficiencyParts(out / SIDECAR_NAME, low_threshold)
    made_with = {"format": FORMAT, "lowThreshold": low_threshold, "code": _code_fingerprint()}
    listed, why = _listed(out, made_with)
    if rebuild:
        listed, why = {}, "a rebuild was asked for"
    elif why:
        done.warnings.append(f"efficiency parts in {out}: {why}; every part derived again")
    done.full = why or (None if listed else "the first derivation in this folder")
    parts: dict[str, Any] = listed.get("parts", {})
    base = RecordIndex(store.manifests(kinds=[k for k in store.counts_by_kind() if k != RUN_KIND]))
    wanted = store.publications_with_records()

    # 1. the parts to derive, and the sentinel ceilings of the new ones (ceilings are over every publication)
    need: list[int] = []
    for publication, partition in wanted.items():
        entry = parts.get(str(publication))
        problem = _problem(out, entry, partition, base) if entry is not None else None
        if entry is None or problem is not None:
            need.append(publication)
            if problem is not None:
                done.why[publication] = problem
                if problem.startswith("its file"):
                    done.warnings.append(f"efficiency part {publication}: {problem}; derived again")
    whole: tuple[RecordIndex, EfficiencyReport] | None = None
    if 2 * len(need) > len(wanted):  # most of them (a first or full derivation): every run read once, split
        index = base.with_runs(store.records(kinds=[RUN_KIND]))
        whole = (index, derive_efficiency(index, low_threshold=low_threshold))
        split = split_efficiency(whole[1], store.run_publications())
        fresh = {p: split.get(p) or derive_efficiency(base.with_runs(()), low_threshold=low_threshold) for p in need}
    else:
        fresh = {p: _derive(store, base, p, low_threshold) for p in need}
    measured: dict[tuple[str, str], float] = {}
    for publication in wanted:
        own = (
            fresh[publication].measured
            if publication in fresh
            else _ceilings(parts[str(publication)]["sentinelCeilings"])
        )
        for key, value in own.items():
            measured[key] = max(measured.get(key, 0.0), value)

    # 2. a kept part whose environments' ceilings moved is derived again too
    for publication in wanted:
        entry = parts.get(str(publication))
        if publication in fresh or entry is None:
            continue
        if _ceilings(entry["ceilings"]) != _used(measured, entry["environments"]):
            done.why[publication] = "the measured ceilings of its environments moved"
            fresh[publication] = _derive(store, base, publication, low_threshold)

    # 3. the new parts' files and entries
    entries: dict[str, Any] = {}
    touched: set[str] = set()
    for publication, partition in wanted.items():
        if publication not in fresh:
            entries[str(publication)] = parts[str(publication)]
            done.kept.append(publication)
            continue
        own = fresh[publication].measured  # its own sentinels' ceilings, before the catalogue's are put in
        report = with_measured_ceilings(fresh[publication], measured)
        entries[str(publication)] = _write_part(out, publication, partition, report, own, base)
        touched |= set(entries[str(publication)]["templates"])
        done.written.append(publication)
    for gone in set(parts) - set(entries):
        done.removed.append(int(gone))
        touched |= set(parts[gone]["templates"])
    files = {entry["file"] for entry in entries.values()}
    for stray in (out / PARTS_DIR).glob("efficiency-*.jsonl"):
        if stray.name not in files:
            stray.unlink()

    # 4. the ranking: the candidates of each run template's series (their newest points), made again where the
    #    template's runs or their figures changed; a row is the best candidate of its key (efficiency.Candidate)
    ranking: dict[str, Any] = {t: v for t, v in listed.get("ranking", {}).items() if not why}
    every = {t for entry in entries.values() for t in entry["templates"]}
    to_rank = sorted((touched | (every - set(ranking))) & every)
    if not to_rank:  # nothing to rank again (no run template touched): no derivation, no cost models loaded
        index, report = None, None
    elif whole is not None or 2 * len(to_rank) > len(every):  # most of them: one pass over every run
        if whole is None:
            index = base.with_runs(store.records(kinds=[RUN_KIND]))
            whole = (index, derive_efficiency(index, low_threshold=low_threshold))
        index, report = whole[0], with_measured_ceilings(whole[1], measured)
    else:  # the runs of those templates only, read through the catalogue's externalId index
        index = base.with_runs((digest, manifest) for digest, manifest, _ in store.runs_by_external_id(to_rank))
        report = with_measured_ceilings(derive_efficiency(index, low_threshold=low_threshold), measured)
    again: dict[str, list[dict[str, Any]]] = {template: [] for template in to_rank}
    for candidate in ranking_candidates(build_series(index), report) if index is not None else ():
        template = index.run(candidate.row.facts.run).external_head
        if template in again:
            again[template].append(candidate.to_dict())
    ranking |= again
    done.templates_ranked = to_rank
    ranking = {t: ranking[t] for t in sorted(every)}
    done.rows = best_candidates(Candidate.from_dict(c) for candidates in ranking.values() for c in candidates)

    # 5. totals, the list, and the sidecar merged from the parts when anything changed
    for entry in entries.values():
        done.counts = dict(Counter(done.counts) + Counter(entry["counts"]))
        done.implausible += entry["implausible"]
        done.runs += entry["rows"]
    changed = bool(done.written or done.removed or why) or not done.sidecar.is_file()
    merged = listed.get("sidecar") if not why else None
    if changed:
        merged = _merge(out, entries, low_threshold, done.runs, merged if isinstance(merged, dict) else None)
    if changed or done.templates_ranked:
        listing = {**made_with, "parts": entries, "ranking": ranking, "sidecar": merged}
        _write_atomically(out / PARTS_LIST, (json.dumps(listing, indent=1, sort_keys=True) + "\n").encode())
    return done


def _derive(store: EfficiencyCatalogue, base: RecordIndex, publication: int, low_threshold: float) -> EfficiencyReport:
    """`derive_efficiency` of one publication's runs (against every other record)."""
    runs = store.records(kinds=[RUN_KIND], publications=[publication])
    return derive_efficiency(base.with_runs(runs), low_threshold=low_threshold)


def _read_parts_list(out_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """The parts list of `out_dir` ({} when there is none or it cannot be read)."""
    try:
        listed = json.loads((Path(out_dir) / PARTS_LIST).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    return listed if isinstance(listed, dict) else {}


# ---------------------------------------------------------------------------------------------- parts


def _listed(out: Path, made_with: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    if not (out / PARTS_LIST).exists():
        return {}, None if not any((out / PARTS_DIR).iterdir()) else f"no {PARTS_LIST}"
    listed = _read_parts_list(out)
    if not listed:
        return {}, f"{PARTS_LIST} unreadable"
    for key, value in made_with.items():
        if listed.get(key) != value:
            what = {"format": "of another format", "lowThreshold": "made with another threshold"}.get(key)
            return {}, f"{PARTS_LIST} {what or 'made by other code or data (cost models, peaks)'}"
    entries, ranking = listed.get("parts"), listed.get("ranking")
    if not (isinstance(entries, dict) and all(_entry_ok(e) for e in entries.values())):
        return {}, f"{PARTS_LIST} damaged (a part's entry)"
    try:  # read back from a file: parsed once here, so a damaged candidate is this message, never a crash later
        if not isinstance(ranking, dict):
            raise TypeError("no ranking")
        for candidates in ranking.values():
            for candidate in candidates:
                Candidate.from_dict(candidate)
    except (KeyError, TypeError, ValueError, AttributeError):
        return {}, f"{PARTS_LIST} damaged (the ranking)"
    return listed, None


_ENTRY_TYPES = {
    "file": str,
    "partition": str,
    "rows": int,
    "sha256": str,
    "counts": dict,
    "implausible": int,
    "ceilings": dict,
    "sentinelCeilings": dict,
    "environments": list,
    "kernels": list,
    "templates": list,
    "missing": list,
}


def _entry_ok(entry: Any) -> bool:
    """A part's entry as `_write_part` writes it (types checked: the list is read back from disk)."""
    return (
        isinstance(entry, dict)
        and all(isinstance(entry.get(key), kind) for key, kind in _ENTRY_TYPES.items())
        and all(isinstance(v, str) for key in ("environments", "kernels", "templates", "missing") for v in entry[key])
        and all(
            isinstance(k, str) and "|" in k and isinstance(v, (int, float)) and not isinstance(v, bool)
            for key in ("ceilings", "sentinelCeilings")
            for k, v in entry[key].items()
        )
        and all(isinstance(v, int) for v in entry["counts"].values())
    )


def _problem(out: Path, entry: dict[str, Any], partition: str, base: RecordIndex) -> str | None:
    """Why a listed part cannot be kept as it is, or None."""
    if entry["partition"] != partition:
        return f"it was made from partition {entry['partition']!r}, the catalogue's is {partition!r}"
    path = out / PARTS_DIR / str(entry["file"])
    if Path(entry["file"]).name != entry["file"] or not path.is_file():
        return "its file is missing"
    if sha256_file(path) != entry["sha256"]:
        return "its file is damaged (sha256 differs)"
    arrived = [digest for digest in entry["missing"] if digest in base.by_digest]
    if arrived:
        return f"{len(arrived)} records its runs refer to arrived"
    return None


def _write_part(
    out: Path,
    publication: int,
    partition: str,
    report: EfficiencyReport,
    own: dict[tuple[str, str], float],
    base: RecordIndex,
) -> dict[str, Any]:
    name = f"efficiency-{publication:09d}.jsonl"
    lines = [json.dumps(report.runs[digest].to_dict(), sort_keys=True) + "\n" for digest in sorted(report.runs)]
    data = "".join(lines).encode("utf-8")
    _write_atomically(out / PARTS_DIR / name, data)
    runs = [report.runs[digest] for digest in report.runs]
    referenced = {r.workload for r in runs} | {r.environment for r in runs}
    return {
        "file": name,
        "partition": partition,
        "rows": len(lines),
        "sha256": hashlib.sha256(data).hexdigest(),
        "counts": dict(sorted(report.counts().items())),
        "implausible": sum(1 for r in runs if any(f in IMPLAUSIBLE_FLAGS for f in r.flags)),
        "environments": sorted({r.environment for r in runs}),
        "kernels": sorted({r.kernel for r in runs}),
        "templates": sorted(report.run_templates()),
        "missing": sorted(d for d in referenced if d and d not in base.by_digest),
        "ceilings": _listed_ceilings(_used(report.measured, sorted({r.environment for r in runs}))),
        "sentinelCeilings": _listed_ceilings(own),
    }


def _used(measured: dict[tuple[str, str], float], environments: Iterable[str]) -> dict[tuple[str, str], float]:
    wanted = set(environments)
    return {key: value for key, value in measured.items() if key[0] in wanted}


def _listed_ceilings(ceilings: dict[tuple[str, str], float]) -> dict[str, float]:
    return {f"{environment}|{sentinel}": value for (environment, sentinel), value in sorted(ceilings.items())}


def _ceilings(listed: dict[str, float]) -> dict[tuple[str, str], float]:
    return {tuple(key.split("|", 1)): float(value) for key, value in listed.items()}  # type: ignore[misc]


def _merge(
    out: Path, entries: dict[str, Any], low_threshold: float, runs: int, before: dict[str, Any] | None
) -> dict[str, Any]:
    """efficiency.jsonl as `write_sidecar` writes it for the whole catalogue: the parts' lines merged by digest;
    what it was merged from (each part's sha256, the file's size), for the next merge. Where the sidecar is the
    one `before` describes and the parts are those plus new ones, only the new parts' lines are put into it (a
    night's few hundred among a million: the old file's bytes are copied between them), else every part is."""
    header = {
        "kind": SIDECAR_KIND,
        "version": SIDECAR_VERSION,
        "lowThreshold": low_threshold,
        "runs": runs,
        "units": {"achieved": "bytes/s or FLOP/s (see bound)", "latencyNs": "ns"},
    }
    head = (json.dumps(header, sort_keys=True) + "\n").encode()
    sidecar = out / SIDECAR_NAME
    merged = {"parts": {p: e["sha256"] for p, e in entries.items()}}
    old = (before or {}).get("parts")
    new = sorted(set(merged["parts"]) - set(old)) if isinstance(old, dict) else None
    if (
        new is not None
        and all(merged["parts"].get(p) == sha for p, sha in old.items())
        and sidecar.is_file()
        and sidecar.stat().st_size == before.get("bytes")
    ):
        lines = []
        for p in new:
            with open(out / PARTS_DIR / entries[p]["file"], encoding="utf-8") as part:
                lines += [(_RUN_FIELD.search(line).group(1), line.encode("utf-8")) for line in part]  # type: ignore[union-attr]
        lines.sort()
        with open(sidecar, "rb") as previous:
            _write_atomically(sidecar, head, _inserted(previous, lines))
    else:
        handles = [open(out / PARTS_DIR / entry["file"], encoding="utf-8") for entry in entries.values()]
        try:
            keyed = [((_RUN_FIELD.search(line).group(1), line) for line in handle) for handle in handles]  # type: ignore[union-attr]
            chunks = (line.encode("utf-8") for _, line in heapq.merge(*keyed))
            _write_atomically(sidecar, head, chunks)
        finally:
            for handle in handles:
                handle.close()
    return {**merged, "bytes": sidecar.stat().st_size}


def _inserted(previous: Any, lines: list[tuple[str, bytes]]) -> Iterator[bytes]:
    """The lines of the sorted sidecar `previous` (its header left out) with `lines` (key, line) put in their
    places: each place found by bisecting the file's byte offsets, the bytes between copied in blocks."""
    previous.readline()
    start = previous.tell()
    end = previous.seek(0, os.SEEK_END)

    def key_at(offset: int) -> tuple[int, str | None]:
        """(the offset of the first line starting after `offset`, or at it where it is a line's start; its key)."""
        previous.seek(offset - 1)
        previous.readline()  # to the end of the line `offset` is in (a line's start: the one before it ends there)
        at = previous.tell()
        line = previous.readline()
        found = _RUN_FIELD.search(line.decode("utf-8"))
        return at, found.group(1) if found else None

    copied = start
    for key, line in lines:
        low, high = copied, end  # the place: the first line start at or after low whose key is above `key`
        while low < high:
            middle = (low + high) // 2
            at, found = key_at(max(middle, copied))
            if at >= end or found is None or found > key:
                high = middle
            else:
                low = middle + 1
        place, _ = key_at(max(low, copied)) if low < end else (end, None)
        previous.seek(copied)
        while copied < place:
            block = previous.read(min(1 << 20, place - copied))
            copied += len(block)
            yield block
        yield line
    previous.seek(copied)
    while block := previous.read(1 << 20):
        yield block


def _code_fingerprint() -> str:
    package = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for folder, pattern in _CODE:
        for path in sorted((package / folder).glob(pattern)):
            digest.update(f"{folder}/{path.name}\0".encode() + path.read_bytes() + b"\0")
    return "sha256:" + digest.hexdigest()


def _write_atomically(path: Path, head: bytes, chunks: Iterable[bytes] = ()) -> None:
    handle = tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{path.name}.", suffix=".partial", delete=False)
    try:
        with handle:
            handle.write(head)
            for chunk in chunks:
                handle.write(chunk)
        os.chmod(handle.name, 0o644)  # as open() makes it: the sidecar is placed, linked, beside the site and export
        os.replace(handle.name, path)
    except BaseException:
        Path(handle.name).unlink(missing_ok=True)
        raise
