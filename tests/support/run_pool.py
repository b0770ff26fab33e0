"""A pool of runs for the incremental refresh's tests (the site's, efficiency's): rms_norm on H100 (two passes,
providers and sizes, two versions, a peak-memory series), softmax on H100 (with a percent of peak), a copy
sentinel on H100 (its ceiling, moved by its second run), swiglu on A100, and geglu and rms_norm on a B200; each
publication brings its runs and the records they refer to, and `STEPS` draws random nights of them."""

from __future__ import annotations

import functools

from hypothesis import strategies as st

from kernelindex_pipeline.catalogue.store import CatalogueStore
from kernelindex_pipeline.records.canonical import digest_of
from tests.support.factories import SampleCatalogue

B200 = "NVIDIA B200"


@functools.cache
def pool() -> tuple[tuple[dict, ...], dict[str, dict]]:
    """(runs, the other records by digest): rms_norm on H100 (two passes, providers and sizes, two versions, a
    peak-memory series), softmax on H100 (with a percent of peak), a copy sentinel on H100 (its ceiling),
    swiglu on A100, and geglu and rms_norm on a B200."""
    catalogue = SampleCatalogue()
    runs = []
    for day in range(6):
        version = "0.8.0" if day < 3 else "0.8.1"
        stamp = f"2025-03-{day + 1:02d} 00:00:00"
        for mode in ("forward", "backward"):
            for provider, cost in (("liger", 1.0), ("torch", 2.0)):
                for seq in (1024, 2048):
                    slower = 1.3 if (provider, mode, version) == ("liger", "forward", "0.8.1") else 1.0
                    runs.append(
                        catalogue.run(
                            mode=mode,
                            provider=provider,
                            axes={"seq": seq, "hidden": 4096},
                            version=version,
                            median_ns=int(seq * 1000 * cost * slower * (1 + 0.01 * (day % 3))),
                            timestamp=stamp,
                        )
                    )
        for provider, cost in (("liger", 1.0), ("torch", 1.6)):  # bytes-bound: a percent of peak
            runs.append(
                catalogue.run(
                    kernel="softmax",
                    provider=provider,
                    axes={"rows": 4096, "hidden": 4096},
                    dtype="fp32",
                    tensors={"x": {"shape": [4096, 4096], "dtype": "fp32"}},
                    version=version,
                    median_ns=int(60_000 * cost * (1 + 0.02 * (day % 2))),
                    timestamp=stamp,
                )
            )
        if day < 2:
            runs.append(catalogue.memory_run(version=version, mib=100 + day, timestamp=stamp))
        if day in (0, 4):  # a sweep's copy sentinel: the H100 host's measured ceiling, moved by its second run
            runs.append(
                catalogue.run(
                    kernel="sentinel_copy_1gib",
                    mode="start",
                    provider="torch",
                    axes={"elements": 2**28},
                    dtype="fp32",
                    tensors={"source": {"shape": [2**28], "dtype": "fp32"}},
                    median_ns=800_000 - 100_000 * day,
                    timestamp=stamp,
                )
            )
        if day < 4:
            for provider in ("liger", "huggingface"):
                runs.append(
                    catalogue.run(
                        kernel="swiglu",
                        mode="full",
                        provider=provider,
                        gpu="NVIDIA A100-SXM4-80GB",
                        axes={"batch": 4, "seq": 2048},
                        version="0.8.1",
                        median_ns=3_000_000 + day,
                        timestamp=stamp,
                    )
                )
            for kernel in ("geglu", "rms_norm"):
                runs.append(
                    catalogue.run(kernel=kernel, gpu=B200, version="0.8.1", median_ns=500_000 + day, timestamp=stamp)
                )
    others = {digest_of(m): m for m in catalogue.manifests() if m["kind"] != "BenchmarkRun"}
    assert len({digest_of(r) for r in runs}) == len(runs)
    return tuple(runs), others


def _referenced(manifest: dict, others: dict[str, dict], found: dict[str, dict]) -> None:
    """The records `manifest` refers to, and theirs (every digest among its values)."""
    stack = [manifest]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, str) and value in others and value not in found:
            found[value] = others[value]
            stack.append(others[value])


def publish(store: CatalogueStore, runs: list[dict], partition: str, number: int) -> None:
    """`runs` with the records they refer to (new ones only the first time), as one publication."""
    others = pool()[1]
    found: dict[str, dict] = {}
    for run in runs:
        _referenced(run, others, found)
    snapshot = {"locator": f"sweep:/work/{partition}.csv", "dagsterRunId": f"run-{number}"}
    store.publish([*found.values(), *runs], partition=partition, source=snapshot, report=None)


STEPS = st.lists(
    st.tuples(
        st.sets(st.integers(0, len(pool()[0]) - 1), max_size=40),  # the runs it brings (some may be published)
        st.sampled_from(["ci:a", "ci:b", "sweep:h100"]),
        st.booleans(),  # republish: the partition's earlier runs again with the new ones
    ),
    min_size=1,
    max_size=4,
)
SECOND_SENTINEL = {max(i for i, r in enumerate(pool()[0]) if r["spec"]["sourceNative"]["benchmark"].startswith("sentinel_"))}  # fmt: skip
EVERYTHING_ON_B200 = {i for i, r in enumerate(pool()[0]) if "nvidia-b200" in r["spec"]["sourceNative"]["externalId"]}
