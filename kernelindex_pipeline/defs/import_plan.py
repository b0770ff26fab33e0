"""Which partitions an import command imports and in which runs, and the one rule for "changed" that the
import commands and the sensors (defs/history_chain.py, defs/ci_chain.py) share: a partition changed
when the content digest of its parts differs from the one its last publication recorded (CONTENT_DIGESTS
in the publication's metadata, written by defs/chain.py with `liger.partition.parts_digest`). Also
whether the catalogue-wide assets have seen the catalogue's content (FINGERPRINT), and what an import
command does about their refresh once its own runs ended."""

from __future__ import annotations

import enum
from collections.abc import Mapping

from dagster import AssetKey, AssetRecordsFilter, DagsterInstance

from kernelindex_pipeline.defs.partitions import benchmark_partition_key
from kernelindex_pipeline.liger.partition import parts_digest

# Tag names Dagster gives a run over a range of partitions (dagster._core.storage.tags, not re-exported).
RANGE_START_TAG, RANGE_END_TAG = "dagster/asset_partition_range_start", "dagster/asset_partition_range_end"
PARTITION_TAG = "dagster/partition"
CATALOGUE_EXPORT = AssetKey("catalogue_export")  # defs/catalogue_assets.py; its metadata says what content it saw
FINGERPRINT = "catalogue_fingerprint"  # metadata of each publication and of the export: content_fingerprint()
CONTENT_DIGESTS = "content_digests"  # a publication's metadata: partition -> the content digest it published


class UnknownPartitions(ValueError):
    """Partitions asked for that the history does not have; raised before any of them runs."""


def partition_runs(keys: list[str], registered: list[str], tags: dict[str, str]) -> list[dict[str, str]]:
    """Run tags covering `keys`: one run per stretch of consecutive registered keys (a whole source: one run)."""
    position = {key: index for index, key in enumerate(registered)}
    ordered = sorted(keys, key=position.__getitem__)
    stretches: list[list[str]] = []
    for key in ordered:
        if stretches and position[key] == position[stretches[-1][-1]] + 1:
            stretches[-1].append(key)
        else:
            stretches.append([key])
    return [
        {**tags, PARTITION_TAG: stretch[0]}
        if len(stretch) == 1
        else {**tags, RANGE_START_TAG: stretch[0], RANGE_END_TAG: stretch[-1]}
        for stretch in stretches
    ]


def history_digests(slices) -> dict[str, str]:
    """Each history partition's content digest, as its publication records it (a history partition is one part)."""
    return {benchmark_partition_key(gpu, version): parts_digest([part]) for (gpu, version), part in slices.items()}


def ci_digests(gathered, pairs=None) -> dict[str, str]:
    """The content digest of each CI partition (of `pairs`, default all the listed files name): its files' parts."""
    pairs = gathered.parts if pairs is None else pairs
    return {benchmark_partition_key(gpu, version): gathered.digest((gpu, version)) for gpu, version in pairs}


def changed_partitions(instance: DagsterInstance, publication: AssetKey, digests: Mapping[str, str]) -> list[str]:
    """The partitions (keys of `digests`, in their order) whose content differs from what they last published."""
    return [key for key, digest in digests.items() if published_digest(instance, publication, key) != digest]


def content_run_key(source: str, partition: str, digest: str) -> str:
    """A sensor's run key: the same content, the same key, so Dagster launches it once."""
    return f"{source}:{partition}:{digest}"


def published_digest(instance: DagsterInstance, publication_key, partition: str) -> str | None:
    """The content digest of what the last publication of `partition` published (from its metadata)."""
    records = instance.fetch_materializations(
        AssetRecordsFilter(asset_key=publication_key, asset_partitions=[partition]), limit=1
    ).records
    if not records:
        return None
    digests = records[0].asset_materialization.metadata.get(CONTENT_DIGESTS)
    return digests.value.get(partition) if digests is not None else None


class AfterImport(enum.Enum):
    """What an import command does about the catalogue-wide assets once its own runs ended."""

    NOTHING = "no partition was published"
    AUTOMATION_STOPPED = "the catalogue automation is stopped: no refresh comes"
    UNCHANGED = "the catalogue-wide assets show the catalogue as it is: no refresh comes"
    WAIT = "wait for the automation's refresh (--wait)"
    ON_ITS_OWN = "return; the automation refreshes on its own"


def after_import(published: bool, stale: bool, *, wait: bool, automation_stopped: bool) -> AfterImport:
    """`stale`: the catalogue's content changed since the catalogue-wide assets last saw it (this import added
    records, or an earlier one that did not wait did). The automation refreshes on such a change of the
    content fingerprint (defs/catalogue_assets.py) and on nothing else, so waiting while nothing is stale
    would only end in a false "NOT refreshed". Otherwise the command waits only when asked to (`--wait`)."""
    if not published:
        return AfterImport.NOTHING
    if automation_stopped:
        return AfterImport.AUTOMATION_STOPPED
    if not stale:
        return AfterImport.UNCHANGED
    return AfterImport.WAIT if wait else AfterImport.ON_ITS_OWN


def _fingerprint(record) -> str | None:
    value = record.asset_materialization.metadata.get(FINGERPRINT)
    return value.value if value is not None else None


def stale_since(instance: DagsterInstance, fingerprint: str, publications: list[AssetKey]) -> float | None:
    """When the catalogue-wide assets have not seen the catalogue's content `fingerprint`: the time of the
    first publication that brought the catalogue to it (the refresh for it is created after that); None
    when the last export saw it, or when that cannot be told (an export older than its fingerprint
    metadata, no publication that recorded it)."""
    exports = instance.fetch_materializations(AssetRecordsFilter(asset_key=CATALOGUE_EXPORT), limit=1).records
    if exports and _fingerprint(exports[0]) in (fingerprint, None):
        return None
    times = []
    for key in publications:  # newest first: the run of publications that recorded this fingerprint
        for record in instance.fetch_materializations(AssetRecordsFilter(asset_key=key), limit=100).records:
            if _fingerprint(record) != fingerprint:
                break
            times.append(record.timestamp)
    return min(times, default=None)
