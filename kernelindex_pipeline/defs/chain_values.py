"""What a chain's steps hand each other, kept as data files: written and read back here only.

One directory per asset and partition (`<root>/<source>/<stage>/<partition, quoted>/`), replaced whole:

    benchmark_csv        part-000.csv (the part's raw CSV bytes) + part-000.json (GPU, version, source
                         mode, snapshot, and a sweep's result as its own to_dict())
    benchmark_rows       parse.json: per part, rows read, issues (row, problem) and header drift warnings
    kernelindex_records  part-000.records.jsonl (imports.output) + part-000.report.json (report.json)

No pickles of classes: a failed run re-executed after an upgrade reads the same files. The parsed rows
themselves are not kept: the records step parses the part's CSV again (milliseconds per partition),
so no in-memory structure has to survive between processes.

Hand-written because Dagster's file IO managers refuse an output that covers several partitions,
which is what a single-run backfill produces.
"""

from __future__ import annotations

import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from dagster import AssetKey, ConfigurableIOManager, InputContext, OutputContext
from pydantic import Field

from kernelindex_pipeline.home import dagster_home
from kernelindex_pipeline.imports.output import read_json, read_records_jsonl, write_json, write_records_jsonl
from kernelindex_pipeline.liger.identity import code_ref_of_locator
from kernelindex_pipeline.liger.partition import ParsedRows, PartitionCsv

IO_MANAGER_KEY = "chain_values"


@dataclass
class PartRecords:
    """One part's records (digest -> manifest) and its import report as report.json holds it."""

    manifests: dict[str, dict[str, Any]]
    report: dict[str, Any]


def parse_summary(parsed: ParsedRows) -> dict[str, Any]:
    """What benchmark_rows keeps of one part's parse."""
    return {
        "rowsRead": parsed.rows_read,
        "issues": [list(issue) for issue in parsed.issues],
        "driftWarnings": list(parsed.drift_warnings),
    }


# ----------------------------------------------------------------------------------------- codecs


def _write_parts(directory: Path, parts: list[PartitionCsv]) -> None:
    for i, part in enumerate(parts):
        (directory / f"part-{i:03d}.csv").write_bytes(part.csv_bytes)
        about = {
            "gpu": part.gpu,
            "ligerVersion": part.liger_version,
            "mode": part.mode,
            "snapshot": part.snapshot,
            "sweep": part.sweep.to_dict() if part.sweep is not None else None,
            "codeRef": part.code_ref,
        }
        write_json(directory / f"part-{i:03d}.json", about)


def _read_parts(directory: Path) -> list[PartitionCsv]:
    parts = []
    for about_path in sorted(directory.glob("part-*.json")):
        about = read_json(about_path)
        measured = sweep = None
        if about["sweep"] is not None:  # a sweep's part: its typed result and what it measured
            from kernelindex_pipeline.liger.normalize import MeasuredContext
            from kernelindex_pipeline.sweep.protocol import SweepResult

            sweep = SweepResult.from_dict(about["sweep"])
            measured = MeasuredContext(**sweep.measured_context())
        csv_bytes = about_path.with_suffix(".csv").read_bytes()
        if "codeRef" in about:
            code_ref = about["codeRef"]
        else:  # written before parts kept their commit: a CI part's is its file's run directory, as ci.gather reads it
            code_ref = (
                code_ref_of_locator(str(about["snapshot"].get("locator") or "")) if about["mode"] == "ci" else None
            )
        parts.append(
            PartitionCsv(
                about["gpu"],
                about["ligerVersion"],
                about["mode"],
                csv_bytes,
                about["snapshot"],
                measured,
                sweep,
                code_ref=code_ref,
            )
        )
    return parts


def _write_parse(directory: Path, summaries: list[dict[str, Any]]) -> None:
    write_json(directory / "parse.json", summaries)


def _read_parse(directory: Path) -> list[dict[str, Any]]:
    return read_json(directory / "parse.json")


def _write_records(directory: Path, parts: list[PartRecords]) -> None:
    for i, part in enumerate(parts):
        write_records_jsonl(directory / f"part-{i:03d}.records.jsonl", part.manifests.items())
        write_json(directory / f"part-{i:03d}.report.json", part.report)


def _read_records(directory: Path) -> list[PartRecords]:
    return [
        PartRecords(
            read_records_jsonl(path), read_json(path.with_name(path.name.replace(".records.jsonl", ".report.json")))
        )
        for path in sorted(directory.glob("part-*.records.jsonl"))
    ]


_CODECS = {
    "benchmark_csv": (_write_parts, _read_parts),
    "benchmark_rows": (_write_parse, _read_parse),
    "kernelindex_records": (_write_records, _read_records),
}


# ------------------------------------------------------------------------------------ IO manager


class ChainValuesIOManager(ConfigurableIOManager):
    """Stores a chain step's {partition key: value} as one directory of data files per partition and
    loads the partitions a step asks for."""

    base_dir: str = Field(default="", description="Where values are kept; empty: DAGSTER_HOME/storage/chain-values.")

    def _directory(self, asset_key: AssetKey, partition: str) -> Path:
        root = Path(self.base_dir) if self.base_dir else dagster_home() / "storage" / "chain-values"
        return root.joinpath(*asset_key.path) / quote(partition, safe="")

    @staticmethod
    def _codec(asset_key: AssetKey):
        stage = asset_key.path[-1]
        if stage not in _CODECS:
            raise ValueError(f"{asset_key.to_user_string()}: no stored form for a {stage!r} value")
        return _CODECS[stage]

    def handle_output(self, context: OutputContext, obj: dict) -> None:
        wanted = set(context.asset_partition_keys)
        if set(obj) != wanted:
            raise ValueError(
                f"{context.asset_key.to_user_string()}: values for {sorted(obj)}, expected {sorted(wanted)}"
            )
        write, _ = self._codec(context.asset_key)
        for partition, value in obj.items():
            final = self._directory(context.asset_key, partition)
            staging = final.with_name(f".{final.name}.{uuid.uuid4().hex}")
            staging.mkdir(parents=True)
            try:
                write(staging, value)
                _replace_directory(staging, final)
            finally:
                shutil.rmtree(staging, ignore_errors=True)

    def load_input(self, context: InputContext) -> dict:
        _, read = self._codec(context.asset_key)
        values = {}
        for partition in context.asset_partition_keys:
            directory = self._directory(context.asset_key, partition)
            if not directory.is_dir():
                raise FileNotFoundError(
                    f"{context.asset_key.to_user_string()} has no stored value for partition {partition}: materialize it first"
                )
            try:
                values[partition] = read(directory)
            except (OSError, ValueError, KeyError, TypeError) as error:
                raise ValueError(
                    f"{context.asset_key.to_user_string()}: the stored value of partition {partition} in {directory} "
                    f"cannot be read ({type(error).__name__}: {error}); materialize the partition again"
                ) from None
        return values


def _replace_directory(staging: Path, final: Path) -> None:
    """Put `staging` where `final` is, the old one removed: a reader sees the old or the new, never a mix."""
    old = final.with_name(f".{final.name}.old-{uuid.uuid4().hex}")
    if final.exists():
        final.rename(old)
    staging.rename(final)
    shutil.rmtree(old, ignore_errors=True)
