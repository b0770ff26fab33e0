"""Jobs over the partitioned benchmark chain: import upstream history, or sweep a GPU."""

from __future__ import annotations

from dagster import AssetSelection, define_asset_job

from kernelindex_pipeline.defs.partitions import benchmark_partitions

BENCHMARK_CHAIN = AssetSelection.assets("benchmark_csv", "benchmark_rows", "kernelindex_records", "catalogue_publication")

history_import_job = define_asset_job(
    "history_import_job",
    selection=BENCHMARK_CHAIN,
    partitions_def=benchmark_partitions,
    description="Import the rows Liger-Kernel committed for one (GPU, Liger version) partition and publish them.",
    tags={"kernelindex/mode": "history"},
)

gpu_sweep_job = define_asset_job(
    "gpu_sweep_job",
    selection=BENCHMARK_CHAIN,
    partitions_def=benchmark_partitions,
    description="Run the release's benchmark scripts on a GPU of the partition's type and publish what was measured.",
    config={"ops": {"benchmark_csv": {"config": {"mode": "execute"}}}},
    tags={"kernelindex/mode": "execute"},
)
