"""The (GPU type x Liger version) partitions every benchmark asset is keyed by.

Both dimensions are dynamic: sensors add a GPU the first time a row names it and a
Liger version when the package index publishes it. Keys are validated before they
reach Dagster because a `|` or `,` in a dimension value silently breaks multi-partition
keys (`|` joins dimensions, `,` separates keys in ranges).
"""

from __future__ import annotations

from dagster import DynamicPartitionsDefinition, MultiPartitionKey, MultiPartitionsDefinition

from kernelindex_pipeline.liger.partition import PARTITION_VALUE

GPU_DIMENSION = "gpu"
VERSION_DIMENSION = "liger_version"

gpu_partitions = DynamicPartitionsDefinition(name=GPU_DIMENSION)
liger_version_partitions = DynamicPartitionsDefinition(name=VERSION_DIMENSION)
benchmark_partitions = MultiPartitionsDefinition(
    {GPU_DIMENSION: gpu_partitions, VERSION_DIMENSION: liger_version_partitions}
)


class InvalidPartitionValue(ValueError):
    pass


def checked_partition_value(dimension: str, value: str) -> str:
    """Return `value` if it is a safe partition value for `dimension`, else raise naming it."""
    if not isinstance(value, str) or not PARTITION_VALUE.fullmatch(value):
        raise InvalidPartitionValue(
            f"{dimension} partition value {value!r} is not allowed: use lowercase letters, digits, '.', '_' and '-' "
            f"(for a GPU, the kebab-case slug of the CSV gpu_name, e.g. nvidia-h100-80gb-hbm3)"
        )
    return value


def benchmark_partition_key(gpu: str, liger_version: str) -> MultiPartitionKey:
    """The one way this project builds a benchmark partition key."""
    return MultiPartitionKey(
        {
            GPU_DIMENSION: checked_partition_value(GPU_DIMENSION, gpu),
            VERSION_DIMENSION: checked_partition_value(VERSION_DIMENSION, liger_version),
        }
    )


def split_partition_key(partition_key: str | MultiPartitionKey) -> tuple[str, str]:
    """(gpu, liger_version) of a benchmark partition key, as given by a Dagster context."""
    if not isinstance(partition_key, MultiPartitionKey):
        partition_key = benchmark_partitions.get_partition_key_from_str(partition_key)
    dims = partition_key.keys_by_dimension
    return dims[GPU_DIMENSION], dims[VERSION_DIMENSION]
