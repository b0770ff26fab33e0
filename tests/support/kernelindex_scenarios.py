"""Records for the KernelIndex export checks (tests/catalogue/test_kernelindex.py and the acceptance harness
scripts/kernelindex_acceptance/): the published seeds, a CI slice with its memory runs, and a stand-in
sweep of one release on two hosts of one GPU type, with raw samples, logs and the sentinel.

Each scenario is (records in publication order, source snapshots). Nothing here reads ../shared.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from typing import Any

from tests.support import FIXTURES
from tests.support.factories import sample_host_capture

SWEEP_GPU = "NVIDIA H100 80GB HBM3"
SWEEP_VERSION = "0.8.5"
SWEEP_KERNELS = ("rms_norm", "layer_norm", "swiglu", "cross_entropy")
PUBLIC_EVIDENCE = "https://evidence.example.org/kernelindex-pipeline"  # a store's public base URL (stand-in)


def _snapshot(locator: str, data: bytes) -> dict[str, Any]:
    from kernelindex_pipeline.catalogue.kernelindex import snapshot_of_bytes

    return snapshot_of_bytes(locator, data, "2026-12-01T00:00:00.000Z")


def _records(result) -> list[dict[str, Any]]:
    return list(result.manifests.values())


def seeds() -> tuple[list[dict], list[dict]]:
    from kernelindex_pipeline.liger import import_csv
    from kernelindex_pipeline.liger.csv import UPSTREAM_COLUMNS

    bundles = json.loads((FIXTURES / "seed-bundles.json").read_text("utf-8"))
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(UPSTREAM_COLUMNS)
    for bundle in bundles:
        writer.writerow([bundle["row"][c] for c in UPSTREAM_COLUMNS])
    data = buf.getvalue().encode("utf-8")
    # the three seed rows are rows of Liger's committed history CSV (tests/fixtures/seed-bundles.json)
    locator = "https://github.com/linkedin/Liger-Kernel/blob/main/benchmark/data/all_benchmark_data.csv#seed-rows"
    return _records(import_csv(data, profile="reference")), [_snapshot(locator, data)]


def ci_slice(profile: str = "full") -> tuple[list[dict], list[dict]]:
    """Every row type of Liger's CI files (tests/fixtures/liger-ci-slice.csv); `full` has memory runs."""
    from kernelindex_pipeline.liger import import_csv

    path = FIXTURES / "liger-ci-slice.csv"
    data = path.read_bytes()
    return _records(import_csv(data, profile=profile)), [
        _snapshot("https://github.com/linkedin/Liger-Kernel/tree/gh-pages/benchmarks", data)
    ]


CI_FILES = (
    *sorted((FIXTURES / "liger-ci").glob("*.csv")),
    FIXTURES / "liger-ci-49e6353" / "49e6353.csv",  # a commit YAML 1.2 reads as a float
)
CI_FILE_URL = "https://raw.githubusercontent.com/linkedin/Liger-Kernel/gh-pages/benchmarks/{run}/benchmark.csv"


def ci_files(profile: str = "full") -> tuple[list[dict], list[dict]]:
    """Slices of four real CI files, each imported as `import-ci` does: its runs labelled with the commit its
    run directory names (`liger_code_ref`), one snapshot per file at its gh-pages URL."""
    from kernelindex_pipeline.liger import import_csv
    from kernelindex_pipeline.liger.identity import code_ref_of_locator

    records: dict[str, dict] = {}
    snapshots = []
    for path in CI_FILES:
        locator = CI_FILE_URL.format(run=path.stem)
        data = path.read_bytes()
        result = import_csv(data, profile=profile, code_ref=code_ref_of_locator(locator))
        records.update(result.manifests)
        snapshots.append(_snapshot(locator, data))
    return list(records.values()), snapshots


class _StandinHost:
    """sweep.host.HostCapture's identity and label facts of one host."""

    def __init__(self, hostname: str, kernel: str, driver: str):
        self.hostname = hostname
        self.capture = sample_host_capture(device_name=SWEEP_GPU, driver=driver, kernel=kernel)


def _artifact_ref(digest: str, public_base_url: str | None) -> dict[str, str]:
    """An artifact store's reference (sweep/artifact_store.py): a local store's content name, or the object's
    URL under the store's public https base URL."""
    uri = f"{public_base_url}/sha256/{digest[:2]}/{digest}" if public_base_url else f"ni:///sha-256;{_b64(digest)}"
    return {"uri": uri, "digest": f"sha256:{digest}"}


def _samples_entry(median_ms: float, key: str, public_base_url: str | None = None) -> dict[str, Any]:
    """A raw-samples entry as sweep/samples.py makes it: 50 samples around the median, an artifact ref."""
    from kernelindex_pipeline.liger.sample_statistics import latency_statistics

    samples = [median_ms * (1 + ((i * 37) % 21 - 10) / 1000) for i in range(50)]
    body = json.dumps({"key": key, "samplesMs": samples}).encode()
    digest = hashlib.sha256(body).hexdigest()
    return {"artifact": _artifact_ref(digest, public_base_url), **latency_statistics(samples)}


def _b64(hex_digest: str) -> str:
    import base64

    return base64.urlsafe_b64encode(bytes.fromhex(hex_digest)).decode().rstrip("=")


def _sentinel(host: str, median_ms: float, public_base_url: str | None = None, day: str = "2026-12-01") -> list[dict]:
    from kernelindex_pipeline.liger.sentinel import PLAN

    entries = []
    for position, stamp in (("start", f"{day}T10:00:00.000Z"), ("end", f"{day}T11:00:00.000Z")):
        for planned in PLAN["operations"]:
            samples = _samples_entry(median_ms, f"{host}/{planned['name']}/{position}", public_base_url)
            entries.append(
                {
                    "operation": planned["name"],
                    "position": position,
                    "status": "ok",
                    "gpu_name": SWEEP_GPU,
                    "returned": [median_ms, median_ms * 0.99, median_ms * 1.01],
                    "observed_at": stamp,
                    "liger_version": SWEEP_VERSION,
                    **samples,
                }
            )
    return entries


def standin_sweep(
    host: str = "gpu-a",
    kernel: str = "5.15.0-119-generic",
    driver: str = "550.54.15",
    public_base_url: str | None = None,
    day: str = "2026-12-01",
) -> tuple[list[dict], list[dict]]:
    """A sweep of Liger 0.8.5 as a host would publish it: the 0.8.5 scripts' rows of a few kernels
    (tests/fixtures/liger-0.8.5-sweep-rows.csv), raw samples for every speed row, the sentinel. Evidence in a
    local artifact store (ni:/// names), or under `public_base_url` (an https store KernelIndex can fetch).
    `day`: the date its rows were timed (two hosts' sweeps of one day share their runs' source names)."""
    from kernelindex_pipeline.liger import import_csv
    from kernelindex_pipeline.liger.normalize import MeasuredContext
    from kernelindex_pipeline.liger.sample_statistics import row_key_of
    from kernelindex_pipeline.sweep.environment import measured_project_versions

    standin = _StandinHost(host, kernel, driver)
    text = (FIXTURES / "liger-0.8.5-sweep-rows.csv").read_text("utf-8")
    rows = [r for r in csv.DictReader(io.StringIO(text)) if r["kernel_name"] in SWEEP_KERNELS]
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    raw = {}
    for row in rows:
        row = {**row, "gpu_name": SWEEP_GPU, "liger_version": SWEEP_VERSION, "timestamp": day + row["timestamp"][10:]}
        writer.writerow(row)
        key = row_key_of(row)
        raw[key] = _samples_entry(float(row["y_value_50"]), f"{host}/{key}", public_base_url)
    data = out.getvalue().encode("utf-8")
    log = hashlib.sha256(f"{host} log".encode()).hexdigest()
    measured = MeasuredContext(
        software=standin.capture.software(),
        labels=standin.capture.labels(host),
        project_versions=measured_project_versions(SWEEP_VERSION, standin.capture),
        logs_by_kernel={k: _artifact_ref(log, public_base_url) for k in SWEEP_KERNELS},
        raw_samples=raw,
        sentinel=_sentinel(host, 2.0, public_base_url, day),
    )
    result = import_csv(data, measured=measured, gpu=None, liger_version=SWEEP_VERSION)
    return _records(result), [_snapshot(f"kernelindex-sweep://{host}/liger-{SWEEP_VERSION}/data.csv", data)]
