"""Everything the assets reach outside the process: the catalogue, the package index, the GPU runner.

Resources are built in one place (`defs/environment_resources.py`, `resources_from_environment`); secrets arrive through `EnvVar`,
so the Dagster UI shows the variable's name, never a password.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from dagster import ConfigurableResource, PipesSubprocessClient
from pydantic import Field

from kernelindex_pipeline.catalogue.store import CatalogueStore, redact_url
from kernelindex_pipeline.defs.pipes_messages import CompleteLinePipesMessageReader
from kernelindex_pipeline.detection.settings import SETTINGS, DetectionSettings
from kernelindex_pipeline.home import (
    CATALOGUE_URL_ENV,
    LIGER_CLONE_DIR,
    LIGER_GIT_ENV,
    cache_root,
    dagster_home,
    default_judgement_store,
    liger_clone,
)
from kernelindex_pipeline.imports.archive import CachedArchive
from kernelindex_pipeline.liger import release
from kernelindex_pipeline.reporting.efficiency import DEFAULT_LOW_THRESHOLD


class CatalogueResource(ConfigurableResource):
    """The KernelIndex catalogue that publication writes into and the report reads from."""

    url: str = Field(
        default="",
        description=(
            "SQLAlchemy URL of the catalogue (sqlite:///… or postgresql+psycopg://…). Empty: the embedded "
            f"SQLite file under DAGSTER_HOME. Set it through the {CATALOGUE_URL_ENV} environment variable."
        ),
    )

    def open(self) -> CatalogueStore:
        return CatalogueStore.open(self.url or None, home=dagster_home())

    @property
    def safe_url(self) -> str:
        return redact_url(self.url) if self.url else "embedded SQLite under DAGSTER_HOME"


_SETTING = {s.name: s for s in SETTINGS}


class RegressionSettingsResource(ConfigurableResource):
    """The one settings object of regression detection (detection.settings.DetectionSettings): the
    `benchmark_regressions` asset judges with it; its check and the report read that asset's result."""

    # Each setting's default and description are detection.settings.SETTINGS' (declared once there);
    # tests/defs/test_resources.py checks these fields are exactly those settings.
    alpha: float = Field(default=_SETTING["alpha"].default, description=_SETTING["alpha"].help)
    min_effect: float = Field(default=_SETTING["min_effect"].default, description=_SETTING["min_effect"].help)
    min_segment: int = Field(default=_SETTING["min_segment"].default, description=_SETTING["min_segment"].help)
    judgement_store: str = Field(
        default="",
        description="File of per-series judgements a refresh reuses where a series' inputs are unchanged "
        "(detection/judgements.py). Empty: storage/regression-judgements.json under DAGSTER_HOME.",
    )

    def settings(self) -> DetectionSettings:
        return DetectionSettings(**{s.name: getattr(self, s.name) for s in SETTINGS})

    def judgement_store_path(self) -> Path:
        return Path(self.judgement_store) if self.judgement_store else default_judgement_store()

    def previous_result_path(self) -> Path:
        """Beside the judgement store: the last result and the digest of its inputs, kept whole by a refresh
        where none of them changed (`liger.attribution.detect_and_attribute`'s `previous`)."""
        store = self.judgement_store_path()
        return store.with_name(store.stem + ".last-result.pickle")


class EfficiencySettingsResource(ConfigurableResource):
    """The settings of the efficiency figures (reporting/efficiency.py): `efficiency_table` derives them once
    per refresh with these, and the export and the site read that one derivation (docs/concepts/efficiency.md)."""

    low_threshold: float = Field(
        default=DEFAULT_LOW_THRESHOLD,
        gt=0,
        le=1,
        description="A plausible reading below this fraction of peak is 'low efficiency'.",
    )


class BisectionTriggerResource(ConfigurableResource):
    """What the nightly bisection trigger (`bisection_trigger_sensor`, off until an operator turns it on)
    may spend: each bisection it starts stops cleanly at `per_group_gpu_seconds`, and it starts no more
    in a UTC day than `daily_gpu_seconds` covers (docs/concepts/bisection.md)."""

    daily_gpu_seconds: float = Field(default=3600.0, ge=0, description="GPU-seconds the trigger may start per UTC day.")
    per_group_gpu_seconds: float = Field(
        default=1200.0, gt=0, description="The budget of each bisection it starts (bisection_job's budget_gpu_seconds)."
    )
    min_suspects: int = Field(default=2, ge=1, description="Groups with fewer suspect commits are not bisected.")


class LigerGitResource(ConfigurableResource):
    """A local clone of Liger-Kernel for attribution (`liger/attribution.py`): regression causes name the
    commits between two runs, and runs are ordered by their code. Production keeps a blob-less clone and
    refreshes it (docs/concepts/attribution.md, "Production clone")."""

    path: str = Field(
        default="",
        description=(
            f"Directory of a Liger-Kernel clone (bare or not, full history). Set it through the {LIGER_GIT_ENV} "
            f"environment variable. Empty: DAGSTER_HOME/{LIGER_CLONE_DIR}, where the import commands clone Liger, "
            "if it is there; else no commits are named."
        ),
    )

    def clone(self) -> str:
        """The clone to read: `path`, else the import commands' one if it exists, else ""."""
        return self.path or liger_clone() or ""


class LigerReleaseResource(ConfigurableResource):
    """Where Liger-Kernel releases come from: the package index, through a content-addressed cache."""

    cache_dir: str = Field(
        default="",
        description="Cache of downloaded sdists; empty: $KERNELINDEX_CACHE_DIR or ~/.cache/kernelindex-pipeline.",
    )
    history_release: str = Field(
        default="latest",
        description=(
            "Release whose committed history CSV the `history` chain imports ('latest' or empty: the newest on "
            "the index). Set it through KERNELINDEX_HISTORY_RELEASE to pin it."
        ),
    )

    profile: Literal["full", "reference"] = Field(
        default="full",
        description=(
            "Liger catalogue profile the records are built with: full (reference plus extensions: memory runs, "
            "more kernels, providers, modes and GPUs) or reference (exactly KernelIndex's importer)."
        ),
    )

    def _cache(self) -> Path:
        return Path(self.cache_dir) if self.cache_dir else cache_root()

    def fetch(self, version: str) -> CachedArchive:
        return release.fetch_release(version, cache_dir=self._cache())

    def versions(self) -> list[str]:
        return release.list_release_versions()

    def history_version(self) -> str:
        if self.history_release not in ("", "latest"):
            return self.history_release
        return self.versions()[-1]


class BenchmarkRunnerResource(ConfigurableResource):
    """How a GPU sweep is launched: a local subprocess or a Kubernetes pod on a node with that GPU."""

    runner: Literal["subprocess", "k8s"] = Field(default="subprocess", description="Where the sweep process runs.")
    work_root: str = Field(default="", description="Sweep work directories; empty: DAGSTER_HOME/sweeps.")
    env_cache_dir: str = Field(
        default="", description="Per-version script environments; empty: DAGSTER_HOME/script-envs."
    )
    wheel_dir: str = Field(default="", description="Offline wheel directory for GPU hosts without network.")
    script_timeout_s: int = Field(default=1800, description="Per-script timeout in seconds.")
    rounds: int = Field(
        default=3,
        description="Runs of every script, interleaved across the sweep's scripts; a run's median is the median of its rounds.",
    )
    backends: dict[str, list[str]] = Field(
        default_factory=dict,
        description="Liger implementations to sweep per op, e.g. {'swiglu': ['nvidia-triton', 'nvidia-cutedsl']}; empty: what the dispatcher resolves.",
    )
    flce_chunk_mem_consts: list[int] = Field(
        default_factory=list,
        description="FLCE chunk-memory budgets to sweep (0.8.5+, providers liger-chunk-c<N>); empty: no chunk sweep.",
    )
    liger_extras: list[str] = Field(
        default_factory=list,
        description="Liger extras installed for the scripts (e.g. ['cutedsl']: CuTe-DSL implementations).",
    )
    extra_pythonpath: list[str] = Field(
        default_factory=list,
        description="Directories prepended to the scripts' PYTHONPATH (e.g. a host's own torch build).",
    )
    extra_env: dict[str, str] = Field(default_factory=dict, description="Extra environment variables for the scripts.")
    build_cache_dir: str = Field(
        default="",
        description="Wheels of Liger built at commits, for a bisection's steps (liger/commit_build.py); empty: "
        "<cache>/liger-builds.",
    )
    image: str = Field(default="", description="Container image of the sweep pod (runner=k8s).")
    namespace: str = Field(default="kernelindex", description="Kubernetes namespace of sweep pods (runner=k8s).")
    cache_volume_claim: str = Field(
        default="",
        description="PersistentVolumeClaim mounted into sweep pods for release downloads and script environments (runner=k8s).",
    )

    def work_dir_root(self) -> Path:
        return Path(self.work_root) if self.work_root else dagster_home() / "sweeps"

    def env_cache(self) -> Path:
        return Path(self.env_cache_dir) if self.env_cache_dir else dagster_home() / "script-envs"

    def build_cache(self) -> Path:
        from kernelindex_pipeline.liger.commit_build import default_build_cache_dir

        return Path(self.build_cache_dir) if self.build_cache_dir else default_build_cache_dir()

    def pipes_client(self):
        if self.runner == "k8s":
            from dagster_k8s import PipesK8sClient

            return PipesK8sClient()
        return PipesSubprocessClient(message_reader=CompleteLinePipesMessageReader())


class GpuFleetResource(ConfigurableResource):
    """The GPU pools the nightly sweep measures: one partition GPU slug per pool."""

    gpu_pools: str = Field(
        default="",
        description="Comma-separated GPU slugs, e.g. 'nvidia-h100-80gb-hbm3,nvidia-b200' (KERNELINDEX_GPU_POOLS).",
    )

    def pools(self) -> list[str]:
        from kernelindex_pipeline.defs.partitions import GPU_DIMENSION, checked_partition_value

        return [
            checked_partition_value(GPU_DIMENSION, pool.strip()) for pool in self.gpu_pools.split(",") if pool.strip()
        ]
