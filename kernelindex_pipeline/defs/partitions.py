"""The partitions of each source's chain: one key per (GPU type, Liger version) pair that source has.

Each source (history, ci, sweep) has its own dynamic partition set, and only pairs that source has rows
for (or, for sweeps, that an operator or the nightly schedule asked for) are registered: no partition
is ever shown "missing" that cannot have data. A key is `GPU|VERSION`, e.g.
`nvidia-h100-80gb-hbm3|0.8.0`; both values are checked against PARTITION_VALUE because a `,` in a key
breaks partition ranges. New keys are added in version order (then GPU), so the UI lists them that way.
"""

from __future__ import annotations

from collections.abc import Iterable

from dagster import DagsterInstance, DynamicPartitionsDefinition
from packaging.version import InvalidVersion, Version
from sqlalchemy.exc import IntegrityError

from kernelindex_pipeline.liger.partition import PARTITION_VALUE

GPU_DIMENSION = "gpu"
VERSION_DIMENSION = "liger_version"
SOURCES = ("history", "ci", "sweep")
SEPARATOR = "|"

source_partitions = {source: DynamicPartitionsDefinition(name=f"{source}_partitions") for source in SOURCES}


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


def benchmark_partition_key(gpu: str, liger_version: str) -> str:
    """The one way this project builds a partition key."""
    return f"{checked_partition_value(GPU_DIMENSION, gpu)}{SEPARATOR}{checked_partition_value(VERSION_DIMENSION, liger_version)}"


def split_partition_key(partition_key: str) -> tuple[str, str]:
    """(gpu, liger_version) of a partition key; raises InvalidPartitionValue naming a malformed key."""
    gpu, sep, version = str(partition_key).partition(SEPARATOR)
    if not sep:
        raise InvalidPartitionValue(
            f"partition key {partition_key!r} is not GPU|VERSION, e.g. 'nvidia-h100-80gb-hbm3|0.8.0'"
        )
    return checked_partition_value(GPU_DIMENSION, gpu), checked_partition_value(VERSION_DIMENSION, version)


def version_order(pair: tuple[str, str]) -> tuple:
    """Sort key of a (gpu, version) pair: PEP 440 order of the version (0.5.4 before 0.5.10), then GPU."""
    gpu, version = pair
    try:
        return (0, Version(version), "", gpu)
    except InvalidVersion:  # still a valid partition value; listed after every PEP 440 version
        return (1, Version("0"), version, gpu)


def register_partitions(instance: DagsterInstance, source: str, pairs: Iterable[tuple[str, str]]) -> list[str]:
    """Add the keys of `pairs` that `source` does not have yet, in version order; return the new keys."""
    name = source_partitions[source].name
    wanted = [benchmark_partition_key(gpu, version) for gpu, version in sorted(set(pairs), key=version_order)]
    existing = set(instance.get_dynamic_partitions(name))
    new = [key for key in wanted if key not in existing]
    if new:
        try:
            instance.add_dynamic_partitions(name, new)
        except IntegrityError:  # another process (an import, a sensor) added some of them meanwhile
            existing = set(instance.get_dynamic_partitions(name))
            new = [key for key in wanted if key not in existing]
            for key in new:
                try:
                    instance.add_dynamic_partitions(name, [key])
                except IntegrityError:
                    pass  # added by the other process after all
    return new


def registered_keys(instance: DagsterInstance, source: str) -> list[str]:
    return list(instance.get_dynamic_partitions(source_partitions[source].name))
