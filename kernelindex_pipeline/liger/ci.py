"""Liger-Kernel's own CI results as a source: Liger-format benchmark CSVs given as URLs or local paths.

Liger's benchmark workflow publishes each run's whole `all_benchmark_data.csv` on its gh-pages branch
(`https://raw.githubusercontent.com/linkedin/Liger-Kernel/gh-pages/benchmarks/<dir>/benchmark.csv`).
A file is fetched whole through `imports.fetch` (bounded in size and time, redirects checked, tokens
redacted), sliced by (kebab(gpu_name), liger_version) exactly like the committed history, and each
slice is one part of that partition: a partition gathers the parts of every listed file that names it
(weekly runs of one version), and each part becomes records on its own, as `transform` would make
them from that file.

The locator list file (it may hold tokens in URLs) is kept 0600, and a locator holding a control
character is refused, so one line is one locator.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from kernelindex_pipeline.imports.fetch import FetchedFile, FetchError, absolute_path, check_locator_text
from kernelindex_pipeline.liger.identity import code_ref_of_locator
from kernelindex_pipeline.liger.partition import PartitionCsv, parts_digest, slice_history


class CiSourceError(FetchError):
    """A CI file that was read but cannot be used (e.g. its rows cannot be sliced): names the file."""


def read_locator_list(path: Path) -> list[str]:
    """Locators of a list file: one per line; blank lines and lines starting with '#' are ignored."""
    if not path.is_file():
        return []
    lines = (line.strip() for line in path.read_text("utf-8").splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def add_to_locator_list(path: Path, locators: Iterable[str]) -> list[str]:
    """Append the locators the list does not hold yet (local paths made absolute); return those added.
    The list may hold tokens: it is (made) readable by its owner only."""
    present = set(read_locator_list(path))
    added = []
    for locator in locators:
        check_locator_text(locator)
        normal = locator if urlsplit(locator).scheme in ("http", "https") else str(absolute_path(locator))
        if normal not in present:
            present.add(normal)
            added.append(normal)
    if added:
        path.parent.mkdir(parents=True, exist_ok=True)
        with os.fdopen(os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600), "a", encoding="utf-8") as out:
            os.fchmod(out.fileno(), 0o600)  # a list made before this rule was 0644
            out.writelines(f"{line}\n" for line in added)
    return added


@dataclass
class CiPartitions:
    """The parts of every partition the files name, and the rows that name no usable GPU or version."""

    parts: dict[tuple[str, str], list[PartitionCsv]]
    unattributable: dict[str, list[int]] = field(default_factory=dict)  # locator -> 1-based data row numbers
    files: list[FetchedFile] = field(default_factory=list)

    def digest(self, pair: tuple[str, str]) -> str:
        return parts_digest(self.parts.get(pair, []))


def gather(files: Iterable[FetchedFile]) -> CiPartitions:
    """Slice each file by (GPU, version); a partition's parts follow the files' order."""
    out = CiPartitions(parts={})
    for file in files:
        out.files.append(file)
        try:
            slices = slice_history(file.data)
        except ValueError as error:
            raise CiSourceError(f"{file.locator}: {error}") from None
        if slices.unattributable_rows:
            out.unattributable[file.locator] = slices.unattributable_rows
        code_ref = code_ref_of_locator(file.locator)  # a CI file names the commit it measured: its run directory
        for (gpu, version), part in slices.partitions.items():
            snapshot = {
                "locator": file.locator,
                "resolvedVersion": version,
                "sha256": file.sha256,
                "sizeBytes": len(file.data),
                "fetchedAt": file.fetched_at,
                "partition": {"gpu": gpu, "liger_version": version},
                "rows": part.rows,
                "partitionSha256": hashlib.sha256(part.csv_bytes).hexdigest(),
            }
            out.parts.setdefault((gpu, version), []).append(
                PartitionCsv(gpu, version, "ci", part.csv_bytes, snapshot, code_ref=code_ref)
            )
    return out
