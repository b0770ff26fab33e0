"""Test doubles for the Dagster layer: a stand-in liger-kernel sdist with a small history CSV, and a
release resource that serves it instead of the package index (everything else runs for real)."""

from __future__ import annotations

import hashlib
import io
import tarfile
from pathlib import Path

from kernelindex_pipeline.defs.resources import LigerReleaseResource
from kernelindex_pipeline.imports.archive import CachedArchive
from tests.support.liger_rows import csv_bytes, row

H100 = "NVIDIA H100 80GB HBM3"
A100 = "NVIDIA A100-SXM4-80GB"


def history_rows(extra_h100_rows: int = 0) -> list[dict[str, str]]:
    rows = []
    for version, gpu, stamp in (
        ("0.5.0", H100, "2025-01-02 03:04:05"),
        ("0.6.0", H100, "2025-03-01 10:00:00"),
        ("0.6.0", A100, "2025-03-02 11:00:00"),
    ):
        for x in ("1024", "2048", "4096"):
            for provider, (p20, median, p80) in (
                ("liger", ("0.12", "0.125", "0.13")),
                ("huggingface", ("0.24", "0.25", "0.26")),
            ):
                if (provider, x, version, gpu) == ("liger", "4096", "0.6.0", H100):
                    p20, median, p80 = "0.19", "0.2", "0.21"  # the one slowdown: 0.125 ms at 0.5.0 -> 0.2 ms at 0.6.0
                rows.append(
                    row(
                        x_value=x,
                        kernel_provider=provider,
                        y_value_20=p20,
                        y_value_50=median,
                        y_value_80=p80,
                        gpu_name=gpu,
                        timestamp=stamp,
                        liger_version=version,
                    )
                )
        rows.append(row(metric_name="memory", metric_unit="MB", gpu_name=gpu, timestamp=stamp, liger_version=version))
        rows.append(row(kernel_name="not_a_curated_kernel", gpu_name=gpu, timestamp=stamp, liger_version=version))
    for i in range(extra_h100_rows):
        rows.append(row(x_value=str(8192 * (i + 1)), timestamp="2025-01-02 03:04:06", liger_version="0.5.0"))
    return rows


HISTORY_PARTITIONS = {
    ("nvidia-h100-80gb-hbm3", "0.5.0"),
    ("nvidia-h100-80gb-hbm3", "0.6.0"),
    ("nvidia-a100-sxm4-80gb", "0.6.0"),
}


def build_history_sdist(directory: Path, version: str = "0.6.0", rows: list[dict[str, str]] | None = None) -> Path:
    data = csv_bytes(history_rows() if rows is None else rows)
    path = directory / f"liger_kernel-{version}.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        info = tarfile.TarInfo(f"liger_kernel-{version}/benchmark/data/all_benchmark_data.csv")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return path


class LocalReleases(LigerReleaseResource):
    """Serves one local sdist as the newest (and only) release."""

    sdist_path: str
    version: str = "0.6.0"

    def fetch(self, version: str) -> CachedArchive:
        path = Path(self.sdist_path)
        data = path.read_bytes()
        return CachedArchive(
            version, path, hashlib.sha256(data).hexdigest(), len(data), "2026-01-01T00:00:00.000Z", path.as_uri()
        )

    def versions(self) -> list[str]:
        return ["0.0.1", "0.5.0", self.version]


def with_efficiency_settings(given: dict) -> dict:
    """Resources and the efficiency settings that efficiency_table (the export's and the site's input) needs."""
    from kernelindex_pipeline.defs.resources import EfficiencySettingsResource

    return {**given, "efficiency_settings": EfficiencySettingsResource()}
