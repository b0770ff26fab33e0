"""Flat tables of the catalogue for notebooks: Parquet files written with pyarrow, streamed.

Beside the JSON Lines export (which stays one canonical manifest per line, so `validate` and digest
recomputation work on it unchanged):

- ``records.parquet``: every record's own digest, kind, name and line number in the JSON Lines file (1-based),
  so a line is found by digest without RFC 8785 + sha256;
- ``runs.parquet``: one row per BenchmarkRun, its four identity digests resolved to the fields users filter on
  (kernel, pass, provider, GPU, workload case, Liger version, metric, value and p20/p80, observedAt, the
  workload's axes and dtype, the environment's GPU product and software);
- ``workloads.parquet`` and ``environments.parquet``: one row per WorkloadCase / ExecutionEnvironment.

Tables key on digests, never on ``metadata.name``: KernelIndex cuts names at 100 characters, so two records
can share one (the JSON Lines manifest file counts them, ``nameCollisions``). Runs arrive last in the
catalogue's order (KINDS), after the workloads and environments they refer to, so one pass is enough; rows
are written ``BATCH_ROWS`` at a time, and memory holds a batch plus the (small) workload and environment
tables, never the runs.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelindex_pipeline.liger import identity

RECORDS_TABLE, RUNS_TABLE, WORKLOADS_TABLE, ENVIRONMENTS_TABLE = (
    "records.parquet",
    "runs.parquet",
    "workloads.parquet",
    "environments.parquet",
)
BATCH_ROWS = 10_000


@dataclass(frozen=True)
class TablesResult:
    paths: dict[str, Path]  # table name -> file
    rows: dict[str, int]  # table name -> rows written


def _schemas():
    import pyarrow as pa  # imported when tables are written: a CLI start never pays for it

    s, i, f = pa.string(), pa.int64(), pa.float64()
    return {
        RECORDS_TABLE: pa.schema([("digest", s), ("kind", s), ("name", s), ("line", i)]),
        WORKLOADS_TABLE: pa.schema([("digest", s), ("name", s), ("operation_digest", s), ("axes", s), ("dtype", s)]),
        ENVIRONMENTS_TABLE: pa.schema(
            [
                ("digest", s),
                ("name", s),
                ("gpu_product", s),
                ("gpu_form_factor", s),
                ("gpu_architecture", s),
                ("software", s),
                ("labels", s),
            ]
        ),
        RUNS_TABLE: pa.schema(
            [
                ("digest", s),
                ("name", s),
                ("kernel", s),
                ("mode", s),
                ("provider", s),
                ("gpu", s),
                ("case_key", s),
                ("liger_version", s),
                ("metric", s),
                ("unit", s),
                ("value", f),
                ("p20", f),
                ("p80", f),
                ("observed_at", s),
                ("status", s),
                ("source", s),
                ("external_id", s),
                ("implementation_digest", s),
                ("workload_digest", s),
                ("protocol_digest", s),
                ("environment_digest", s),
                ("workload_axes", s),
                ("workload_dtype", s),
                ("gpu_product", s),
                ("environment_software", s),
            ]
        ),
    }


class _Table:
    """One Parquet file written in batches of rows (dicts), through a temporary name."""

    def __init__(self, path: Path, schema: Any):
        import pyarrow.parquet as pq

        self.path, self.schema, self.rows, self.batch = path, schema, 0, []
        self.tmp = path.with_name(f".{path.name}.partial")
        self.writer = pq.ParquetWriter(self.tmp, schema, compression="zstd")

    def add(self, row: dict[str, Any]) -> None:
        self.batch.append(row)
        if len(self.batch) >= BATCH_ROWS:
            self.flush()

    def flush(self) -> None:
        import pyarrow as pa

        if self.batch:
            self.writer.write_table(pa.Table.from_pylist(self.batch, schema=self.schema))
            self.rows += len(self.batch)
            self.batch = []

    def close(self) -> None:
        self.flush()
        self.writer.close()
        os.replace(self.tmp, self.path)

    def abandon(self) -> None:
        self.writer.close()
        self.tmp.unlink(missing_ok=True)


def _json(value: Any) -> str | None:
    return None if value in (None, {}, []) else json.dumps(value, sort_keys=True, ensure_ascii=False)


def _dtype(spec: dict[str, Any]) -> str | None:
    """The workload's float dtype: the first tensor's that is not an integer."""
    for tensor in (spec.get("tensors") or {}).values():
        dtype = (tensor or {}).get("dtype")
        if dtype and not str(dtype).startswith(("int", "uint", "bool")):
            return dtype
    return None


def _band(spec: dict[str, Any], metric: str) -> tuple[float | None, float | None]:
    found = {
        m.get("statistic"): m.get("value")
        for m in spec.get("measurements") or []
        if isinstance(m, dict) and m.get("metric") == metric
    }
    return found.get("p20"), found.get("p80")


def workload_row(digest: str, manifest: dict[str, Any]) -> dict[str, Any]:
    """The `workloads` table's row of a WorkloadCase."""
    spec = manifest.get("spec") or {}
    return {
        "digest": digest,
        "name": (manifest.get("metadata") or {}).get("name"),
        "operation_digest": spec.get("operationSpecDigest"),
        "axes": _json(spec.get("axes")),
        "dtype": _dtype(spec),
    }


def environment_row(digest: str, manifest: dict[str, Any]) -> dict[str, Any]:
    """The `environments` table's row of an ExecutionEnvironment."""
    spec, metadata = manifest.get("spec") or {}, manifest.get("metadata") or {}
    hardware = spec.get("hardware") or {}
    return {
        "digest": digest,
        "name": metadata.get("name"),
        "gpu_product": hardware.get("product"),
        "gpu_form_factor": hardware.get("formFactor"),
        "gpu_architecture": hardware.get("architecture"),
        "software": _json(spec.get("software")),
        "labels": _json(metadata.get("labels")),
    }


def run_row(digest: str, manifest: dict[str, Any], workloads: Any, environments: Any) -> dict[str, Any]:
    """The `runs` table's row of a BenchmarkRun; `workloads` / `environments`: digest -> row mappings (`.get`)."""
    spec, metadata = manifest.get("spec") or {}, manifest.get("metadata") or {}
    native = spec.get("sourceNative") or {}
    ident = identity.parse_external_id(native.get("externalId") or "")
    timing = spec.get("timing")
    if timing is not None:
        metric, unit, value = "latency", "ns", ((timing.get("latencyNs") or {}).get("median"))
    else:
        first = (spec.get("measurements") or [{}])[0] or {}
        metric, unit, value = first.get("metric"), first.get("unit"), first.get("value")
    p20, p80 = _band(spec, metric) if metric else (None, None)
    workload = workloads.get(spec.get("workloadDigest") or "", {})
    environment = environments.get(spec.get("environmentDigest") or "", {})
    return {
        "digest": digest,
        "name": metadata.get("name"),
        "kernel": ident.kernel if ident else None,
        "mode": ident.mode if ident else None,
        "provider": ident.provider if ident else None,
        "gpu": ident.gpu_slug if ident else None,
        "case_key": ident.case_key if ident else None,
        "liger_version": (metadata.get("labels") or {}).get("liger_version"),
        "metric": metric,
        "unit": unit,
        "value": value,
        "p20": p20,
        "p80": p80,
        "observed_at": spec.get("observedAt"),
        "status": spec.get("status"),
        "source": native.get("source"),
        "external_id": native.get("externalId"),
        "implementation_digest": spec.get("implementationDigest"),
        "workload_digest": spec.get("workloadDigest"),
        "protocol_digest": spec.get("protocolDigest"),
        "environment_digest": spec.get("environmentDigest"),
        "workload_axes": workload.get("axes"),
        "workload_dtype": workload.get("dtype"),
        "gpu_product": environment.get("gpu_product"),
        "environment_software": environment.get("software"),
    }


def write_tables(records: Iterable[tuple[str, dict[str, Any]]], out_dir: str | os.PathLike[str]) -> TablesResult:
    """Write the four tables from (digest, manifest) pairs in catalogue order (`CatalogueStore.records()`, the
    order of the JSON Lines export, so `records.parquet`'s line numbers are that file's)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tables = {name: _Table(out / name, schema) for name, schema in _schemas().items()}
    workloads: dict[str, dict] = {}
    environments: dict[str, dict] = {}
    try:
        for line, (digest, manifest) in enumerate(records, start=1):
            kind = manifest.get("kind")
            name = (manifest.get("metadata") or {}).get("name")
            tables[RECORDS_TABLE].add({"digest": digest, "kind": kind, "name": name, "line": line})
            if kind == "WorkloadCase":
                row = workload_row(digest, manifest)
                workloads[digest] = row
                tables[WORKLOADS_TABLE].add(row)
            elif kind == "ExecutionEnvironment":
                row = environment_row(digest, manifest)
                environments[digest] = row
                tables[ENVIRONMENTS_TABLE].add(row)
            elif kind == "BenchmarkRun":
                tables[RUNS_TABLE].add(run_row(digest, manifest, workloads, environments))
    except BaseException:
        for table in tables.values():
            table.abandon()
        raise
    for table in tables.values():
        table.close()
    return TablesResult(paths={n: t.path for n, t in tables.items()}, rows={n: t.rows for n, t in tables.items()})


def export_tables(store: Any, out_dir: str | os.PathLike[str]) -> TablesResult:
    """The four tables of a `CatalogueStore`, streamed from it."""
    return write_tables(store.records(), out_dir)
