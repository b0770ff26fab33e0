"""Liger identities: every text format the normalizer writes, built and parsed here.

Two formats are still written elsewhere: the sweep sentinel builds its own case key (without the axis
sort) and externalId (`liger/sentinel.py`). The source-run labels and CI locators that name a commit are
parsed here too (`code_ref_of_label`, `code_ref_of_locator`, at the end).

Formats (docs/reference/record-contract.md §4 for speed runs; this project's memory-run contract for peak
memory):

  case key      `<axis><value>-...-<dtype>`, axes sorted by name: `hidden4096-rows2048-bf16`; a
                categorical row (model_config) appends `~<model>`: `hidden4096-rows1024-bf16~llama_3_8b`
  benchmark     `<kernel>/<mode>` (speed), `<kernel>/<mode>/memory` (peak memory)
  externalId    `<benchmark>/<provider>/<gpu slug>/<case key>/<timestamp slug>`
  run name      kebab of `liger-<kernel>-<mode>[-memory]-<provider>-<gpu>-<case key>-<timestamp>`, cut at 100
  run title     `<kernel title> · <provider> · <mode>` (speed), `... · <mode> · peak memory` (memory)
  case name     kebab of `<operation slug>-<case key>`; case title `<kernel title> · a=1, b=2 · <dtype>`
                (` · <model>` after it for a categorical row, whose case also has the label
                `model_config: <model>`)
  implementation name / title   `liger-bench-<kernel>-<provider>` / `<kernel title> · <provider title>`
  environment name / title      `liger-bench-<gpu name>` / `Liger benchmark host · <gpu name without NVIDIA>`

Parsers return None for text this module did not write. Run names are lossy (kebab, cut at 100 chars):
they are built here but never parsed; read a run's identity from its externalId and benchmark.
Kernel, provider and mode names never contain `/` in Liger's scripts; axis names are letters and
underscores; axis values are non-negative integers (tensor dimensions).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from urllib.parse import urlsplit

from kernelindex_pipeline.records.names import kebab
from kernelindex_pipeline.redaction import scheme_of

FLOAT_DTYPES = ("bf16", "fp16", "fp32")
MEMORY_SEGMENT = "memory"  # the benchmark/externalId segment of peak-memory runs
MEMORY_TITLE = "peak memory"
TITLE_SEPARATOR = " · "
_NAME_RUNS = re.compile(r"[^a-z0-9]+")  # kebab's substitution, applied in pieces for run names
_CASE_PART = re.compile(r"([A-Za-z_]+)([0-9]+)\Z")
_LABEL_KEY = re.compile(r"[a-z][a-z0-9_]*\Z")
CATEGORY_SEPARATOR = "~"  # never in an axis name, a dtype or a model name


# ------------------------------------------------------------------------------------ case keys


def case_key(axes: tuple[tuple[str, int], ...] | dict[str, int], dtype: str, category: str | None = None) -> str:
    """`category`: a categorical x value (model_config rows: the model name), after CATEGORY_SEPARATOR."""
    items = axes.items() if isinstance(axes, dict) else axes
    key = "-".join(f"{name}{value}" for name, value in sorted(items)) + "-" + dtype
    return key + CATEGORY_SEPARATOR + category if category is not None else key


def parse_case_key(text: str) -> tuple[dict[str, int], str] | None:
    """(axes, dtype) of a case key, or None when `text` is not one (see `case_category` for the rest)."""
    text = text.partition(CATEGORY_SEPARATOR)[0] if text else text
    parts = text.split("-") if text else []
    if len(parts) < 2 or parts[-1] not in FLOAT_DTYPES:
        return None
    axes: dict[str, int] = {}
    for part in parts[:-1]:
        match = _CASE_PART.match(part)
        if match is None:
            return None
        axes[match.group(1)] = int(match.group(2))
    return axes, parts[-1]


def case_category(text: str) -> str | None:
    """The categorical x value of a case key (a model name), or None."""
    head, sep, category = (text or "").partition(CATEGORY_SEPARATOR)
    return category if sep and category else None


def case_title(kernel_title: str, axes: tuple[tuple[str, int], ...], dtype: str, category: str | None = None) -> str:
    title = f"{kernel_title}{TITLE_SEPARATOR}{', '.join(f'{a}={v}' for a, v in axes)}{TITLE_SEPARATOR}{dtype}"
    return title + TITLE_SEPARATOR + category if category is not None else title


def category_label(x_name: str | None) -> str:
    """The WorkloadCase label key that names a categorical x value: the CSV x_name (`model_config`)."""
    return x_name if x_name and _LABEL_KEY.match(x_name) else "category"


def case_name(operation_slug: str, key: str) -> str:
    return kebab(f"{operation_slug}-{key}")


# ------------------------------------------------------------------------------------------ runs


@dataclass(frozen=True)
class RunIdentity:
    """What a run's externalId says: which kernel, pass, metric, provider, GPU, case and timestamp."""

    kernel: str
    mode: str
    provider: str
    gpu_slug: str
    case_key: str
    timestamp_slug: str
    memory: bool = False  # a peak-memory run (else latency)

    @property
    def benchmark(self) -> str:
        return benchmark(self.kernel, self.mode, self.memory)

    @property
    def external_id(self) -> str:
        return (
            external_id_prefix(self.kernel, self.mode, self.provider, self.gpu_slug, self.case_key, self.memory)
            + self.timestamp_slug
        )

    @property
    def metric(self) -> str:
        return "peak_memory" if self.memory else "latency"


def benchmark(kernel: str, mode: str, memory: bool = False) -> str:
    return f"{kernel}/{mode}/{MEMORY_SEGMENT}" if memory else f"{kernel}/{mode}"


def parse_benchmark(text: str) -> tuple[str, str, bool] | None:
    """(kernel, mode, memory) of a sourceNative.benchmark."""
    parts = text.split("/") if text else []
    if len(parts) == 2 and all(parts):
        return parts[0], parts[1], False
    if len(parts) == 3 and parts[0] and parts[1] and parts[2] == MEMORY_SEGMENT:
        return parts[0], parts[1], True
    return None


def external_id_prefix(kernel: str, mode: str, provider: str, gpu_slug: str, key: str, memory: bool = False) -> str:
    """The externalId up to its timestamp slug (shared by every row of one run template)."""
    return f"{benchmark(kernel, mode, memory)}/{provider}/{gpu_slug}/{key}/"


def external_id_head(text: str) -> str:
    """An externalId without its timestamp slug: what `external_id_prefix` built (with its final "/"),
    shared by every run of one run template, so readers of many runs parse each head once."""
    return text[: text.rfind("/") + 1]


def kernel_external_id_prefix(kernel: str) -> str:
    """What the externalId of every run of `kernel` starts with (speed and memory runs, every provider, GPU and
    case): a reader of one kernel's runs asks the catalogue for these (`CatalogueStore.runs_by_external_id`)."""
    return f"{kernel}/"


def parse_external_id(text: str) -> RunIdentity | None:
    parts = text.split("/") if text else []
    memory = len(parts) == 7 and parts[2] == MEMORY_SEGMENT
    if memory:
        parts = parts[:2] + parts[3:]
    if len(parts) != 6 or not all(parts[:5]):
        return None
    return RunIdentity(*parts, memory=memory)


def run_name_head(kernel: str, mode: str, provider: str, gpu_name: str, key: str, memory: bool = False) -> str:
    """kebab's substitution applied to the run name up to its timestamp (ending in "-")."""
    metric = f"-{MEMORY_SEGMENT}" if memory else ""
    return _NAME_RUNS.sub("-", f"liger-{kernel}-{mode}{metric}-{provider}-{gpu_name}-{key}-".lower()).lstrip("-")


def timestamp_name_part(timestamp: str) -> str:
    return _NAME_RUNS.sub("-", timestamp.lower())


def run_title(kernel_title: str, provider: str, mode: str, memory: bool = False) -> str:
    parts = [kernel_title, provider, mode] + ([MEMORY_TITLE] if memory else [])
    return TITLE_SEPARATOR.join(parts)


def parse_run_title(text: str) -> tuple[str, str, str, bool] | None:
    """(kernel title, provider, mode, memory) of a run title (the kernel title may contain ` · `)."""
    memory = text.endswith(TITLE_SEPARATOR + MEMORY_TITLE)
    if memory:
        text = text[: -len(TITLE_SEPARATOR + MEMORY_TITLE)]
    parts = text.rsplit(TITLE_SEPARATOR, 2)
    if len(parts) != 3 or not all(parts):
        return None
    return parts[0], parts[1], parts[2], memory


# ---------------------------------------------------------------------------- shared objects


def implementation_name(kernel: str, provider: str, revision: str | None = None) -> str:
    """`revision`: the commit of an A/B comparison row (its own implementation, never a release's), or the
    release a sweep pinned (`revision_label`): two revisions of one provider are two implementations, and
    KernelIndex's implementation page is found by its name (slug), so each says its revision."""
    return kebab(f"liger-bench-{kernel}-{provider}" + (f"-{revision}" if revision else ""))


def revision_label(project_revision: dict[str, str] | None) -> str | None:
    """What a name says of a pinned `spec.projectRevision`: its version (`v0.8.5`), else its commit's first 12
    hex digits; None when unpinned (history and CI rows, whose names are KernelIndex's importer's)."""
    if not project_revision:
        return None
    commit = project_revision.get("commit")
    return project_revision.get("version") or (commit[:12] if commit else None)


def implementation_title(kernel_title: str, provider_title: str) -> str:
    return f"{kernel_title}{TITLE_SEPARATOR}{provider_title}"


def parse_implementation_title(text: str) -> tuple[str, str] | None:
    """(kernel title, provider title); the provider title is the last part."""
    head, sep, tail = text.rpartition(TITLE_SEPARATOR)
    return (head, tail) if sep and head and tail else None


def environment_name(gpu_name: str) -> str:
    return kebab(f"liger-bench-{gpu_name}")


def environment_title(gpu_name: str) -> str:
    short = gpu_name[len("NVIDIA ") :] if gpu_name.startswith("NVIDIA ") else gpu_name
    return f"Liger benchmark host{TITLE_SEPARATOR}{short}"


def protocol_name(mode: str, memory: bool = False) -> str:
    return f"liger-bench-peak-memory-{mode}" if memory else f"liger-bench-do-bench-{mode}"


def parse_protocol_name(text: str) -> tuple[str, bool] | None:
    """(mode, memory) of a protocol name this module built."""
    for prefix, memory in (("liger-bench-peak-memory-", True), ("liger-bench-do-bench-", False)):
        if text.startswith(prefix) and len(text) > len(prefix):
            return text[len(prefix) :], memory
    return None


def protocol_title(mode: str, memory: bool = False) -> str:
    what = f"{MEMORY_TITLE}{TITLE_SEPARATOR}" if memory else ""
    return f"Liger benchmark harness{TITLE_SEPARATOR}{what}{mode} pass"


def gpu_slug(gpu_name: str) -> str:
    return kebab(gpu_name)


# ------------------------------------------------------------------ source runs: the code they measured

_CI_LABEL = re.compile(r"^(?P<sha>[0-9a-f]{7,40})(?:-(?P<tag>v\d+(?:\.\d+)*\S*))?$")
_TAG_LABEL = re.compile(r"^v\d+(?:\.\d+)+$")


def code_ref_of_label(label: str) -> str | None:
    """The code a source run's label names: ``2845fe8`` and ``7644a0f-v0.7.0`` a commit, ``v0.6.3`` a tag."""
    name = label.rsplit("/", 1)[-1]
    for suffix in (".gz", ".jsonl", ".json", ".csv"):
        name = name.removesuffix(suffix)
    found = _CI_LABEL.match(name)
    if found:
        return found.group("sha")
    return name if _TAG_LABEL.match(name) else None


def code_ref_of_locator(locator: str) -> str | None:
    """The Liger commit a CI results file names: its run directory (gh-pages
    ``benchmarks/<sha>[-vX.Y.Z]/benchmark.csv``) or, for a local copy, its file name (``<sha>[-vX.Y.Z].csv``).
    None when neither reads as one."""
    path = PurePosixPath(urlsplit(locator).path if scheme_of(locator).lower() in ("http", "https") else locator)
    for name in (path.name, path.parent.name):
        found = code_ref_of_label(name) if name else None
        if found is not None and not found.startswith("v"):  # a commit; a bare tag is not a CI run directory
            return found
    return None
