"""Running a Liger release's own benchmark scripts on a GPU host (plain Python, no Dagster).

    from kernelindex_pipeline.sweep import SweepRequest, run_sweep
    result = run_sweep(SweepRequest(gpu="nvidia-h100-80gb-hbm3", liger_version="0.8.5"))
    result.csv_path, result.outcomes, result.measured_context()

The package's API is `run_sweep` and the protocol's types; every module, with its job:
docs/concepts/architecture.md ("The packages", `sweep/`); how a sweep runs: docs/concepts/sweeps.md.
"""

from .data_csv import UPSTREAM_COLUMNS, read_data_csv
from .discovery import select_scripts
from .environment import ScriptEnvironment, prepare_environment, scan_script_imports, script_requirements
from .host import HostCapture, check_host, gpu_catalogue, gpu_name_for_slug, parse_nvidia_smi_xml, probe_host
from .k8s import GPU_PRODUCT_LABEL, gpu_pool_labels, gpu_product_label, sweep_pod
from .outcomes import (
    ConfigurationError,
    EnvironmentBuildError,
    HostCheckError,
    ScriptOutcome,
    ScriptStatus,
    SweepError,
    classify,
)
from .protocol import SweepRequest, SweepResult
from .run import run_sweep
from .workdir import WorkDir, prepare_workdir

__all__ = [
    "ConfigurationError",
    "EnvironmentBuildError",
    "GPU_PRODUCT_LABEL",
    "HostCapture",
    "HostCheckError",
    "ScriptEnvironment",
    "ScriptOutcome",
    "ScriptStatus",
    "SweepError",
    "SweepRequest",
    "SweepResult",
    "UPSTREAM_COLUMNS",
    "WorkDir",
    "check_host",
    "classify",
    "gpu_catalogue",
    "gpu_name_for_slug",
    "gpu_pool_labels",
    "gpu_product_label",
    "parse_nvidia_smi_xml",
    "prepare_environment",
    "prepare_workdir",
    "probe_host",
    "read_data_csv",
    "run_sweep",
    "scan_script_imports",
    "script_requirements",
    "select_scripts",
    "sweep_pod",
]
