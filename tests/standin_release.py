"""Stand-ins for the GPU side of a sweep, built by the tests (nothing here needs a GPU or the network).

- `build_release_tarball`: a Liger-like sdist whose benchmark scripts write rows in the upstream CSV format
  (same 15 columns, same read-merge-rewrite of benchmark/data/all_benchmark_data.csv, local-time
  timestamps from time.strftime, "Benchmarks can only be run on GPU." without a device). Its scripts:
    benchmark_rms_norm.py       ok: 18 speed rows + 6 memory rows of rms_norm
    benchmark_tiled_mlp.py      ok: 6 rows of tiled_swiglu and 6 of tiled_geglu
    benchmark_layer_norm.py     crashes (RuntimeError, exit code 1), no rows
    benchmark_cross_entropy.py  prints a CUDA out-of-memory traceback, exit code 1, no rows
    benchmark_softmax.py        starts rewriting the CSV (truncates it, writes half a row) and hangs
    benchmark_model_configs.py  a helper module, not a benchmark (no __main__)
  The shipped data CSV holds one history row that must never come out of a sweep.
- `build_liger_wheel`: a `liger-kernel==V` wheel (liger_kernel.utils.infer_device) for offline installs.
- `build_fake_torch`: `torch` and `triton` packages reporting one CUDA device with a given name.
- `build_fake_nvidia_smi`: an `nvidia-smi` executable printing `-q -x` XML.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import tarfile
import textwrap
import zipfile
from pathlib import Path

GOOD_ROWS = {"benchmark_rms_norm.py": 24, "benchmark_tiled_mlp.py": 12}
HISTORY_ROW = (
    "rms_norm,liger,forward,speed,ms,H,hidden size,1024,0.0136,0.0128,0.0160,"
    '"{""M"": 2048, ""dtype"": ""torch.bfloat16"", ""eps"": 1e-06}",NVIDIA A100-SXM4-80GB,2024-09-03 15:39:30,0.2.1'
)
HEADER = (
    "kernel_name,kernel_provider,kernel_operation_mode,metric_name,metric_unit,x_name,x_label,x_value,"
    "y_value_50,y_value_20,y_value_80,extra_benchmark_config_str,gpu_name,timestamp,liger_version"
)

UTILS = '''
"""Stand-in for Liger's benchmark/scripts/utils.py: the same CSV contract, no real measurement."""
import csv
import json
import os
import time
from collections import OrderedDict
from importlib.metadata import version

import torch
from liger_kernel.utils import infer_device

device = infer_device()
LIGER_KERNEL_VERSION = version("liger-kernel")
FIELDS = [
    "kernel_name", "kernel_provider", "kernel_operation_mode", "metric_name", "metric_unit", "x_name",
    "x_label", "x_value", "y_value_50", "y_value_20", "y_value_80", "extra_benchmark_config_str",
    "gpu_name", "timestamp", "liger_version",
]
KEY = ["kernel_name", "kernel_provider", "kernel_operation_mode", "metric_name", "x_name", "x_value",
       "extra_benchmark_config_str", "gpu_name"]


def get_gpu_name():
    if torch.cuda.is_available():
        return torch.cuda.get_device_name(torch.cuda.current_device())
    raise Exception("Benchmarks can only be run on GPU.")


def data_csv_path():
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "../data", "all_benchmark_data.csv")


def run_benchmarks(kernel_name, metric_name, metric_unit, x_name, x_label, x_values, kernel_providers,
                   kernel_operation_modes, extra_benchmark_configs, scale=1.0):
    gpu_name = get_gpu_name()
    rows = []
    for config in extra_benchmark_configs:
        for mode in kernel_operation_modes:
            for provider_index, provider in enumerate(kernel_providers):
                for x in x_values:
                    median = scale * (provider_index + 1) * x / 1000.0
                    rows.append({
                        "kernel_name": kernel_name, "kernel_provider": provider, "kernel_operation_mode": mode,
                        "metric_name": metric_name, "metric_unit": metric_unit, "x_name": x_name,
                        "x_label": x_label, "x_value": x, "y_value_50": median, "y_value_20": median * 0.9,
                        "y_value_80": median * 1.1, "extra_benchmark_config_str": json.dumps(config),
                        "gpu_name": gpu_name, "timestamp": time.strftime("%Y-%m-%d %H:%M:%S"),
                        "liger_version": LIGER_KERNEL_VERSION,
                    })
    path = data_csv_path()
    existing = OrderedDict()
    if os.path.isfile(path):
        with open(path) as handle:
            for row in csv.DictReader(handle):
                existing[tuple(str(row[k]) for k in KEY)] = row
    for row in rows:
        existing.setdefault(tuple(str(row[k]) for k in KEY), row)
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=FIELDS)
        writer.writeheader()
        for row in existing.values():
            writer.writerow(row)
    print(f"wrote {len(rows)} rows of {kernel_name} ({metric_name})")
'''

SCRIPTS = {
    "benchmark_model_configs.py": '''
"""Helper module shared by the scripts (upstream has one too); not a benchmark."""
DEFAULT_DTYPE = "torch.bfloat16"
''',
    "benchmark_rms_norm.py": '''
import torch
from benchmark_model_configs import DEFAULT_DTYPE
from utils import run_benchmarks

if __name__ == "__main__":
    config = {"M": 2048, "dtype": DEFAULT_DTYPE, "eps": 1e-06}
    run_benchmarks("rms_norm", "speed", "ms", "H", "hidden size", [1024, 2048, 4096],
                   ["liger", "huggingface"], ["forward", "backward", "full"], [config])
    run_benchmarks("rms_norm", "memory", "MB", "H", "hidden size", [1024, 2048, 4096],
                   ["liger", "huggingface"], ["full"], [config], scale=1000.0)
''',
    "benchmark_tiled_mlp.py": '''
import torch
from utils import run_benchmarks

def run(kernel_name, act):
    config = {"bsz": 2, "hidden_size": 2048, "intermediate_size": 4096, "dtype": "torch.bfloat16", "hidden_act": act}
    run_benchmarks(kernel_name=kernel_name, metric_name="speed", metric_unit="ms", x_name="T",
                   x_label="sequence length", x_values=[1024, 2048, 4096], kernel_providers=["liger_tiled", "huggingface"],
                   kernel_operation_modes=["full"], extra_benchmark_configs=[config])

if __name__ == "__main__":
    run(kernel_name="tiled_swiglu", act="silu")
    run(kernel_name="tiled_geglu", act="gelu_pytorch_tanh")
''',
    "benchmark_layer_norm.py": '''
import torch
from utils import get_gpu_name

if __name__ == "__main__":
    get_gpu_name()
    print("compiling layer_norm kernels")
    raise RuntimeError("Triton compilation failed: layer_norm_fwd (stand-in crash)")
''',
    "benchmark_cross_entropy.py": '''
import sys
import torch
from utils import get_gpu_name

if __name__ == "__main__":
    get_gpu_name()
    print("Traceback (most recent call last):", file=sys.stderr)
    print('  File "benchmark_cross_entropy.py", line 42, in bench_speed_cross_entropy', file=sys.stderr)
    print("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 16.00 GiB. GPU 0 has a total "
          "capacity of 79.10 GiB of which 3.19 GiB is free.", file=sys.stderr)
    sys.exit(1)
''',
    "benchmark_softmax.py": '''
import os
import time
import torch
from utils import data_csv_path, get_gpu_name

if __name__ == "__main__":
    get_gpu_name()
    # Like a kill in the middle of utils.update_benchmark_data_csv: the file is already truncated.
    handle = open(data_csv_path(), "w", newline="")
    handle.write("kernel_name,kernel_provider,kernel_operation_mode\\nsoftmax,liger,forw")
    handle.flush()
    print("softmax: waiting forever", flush=True)
    while True:
        time.sleep(1)
''',
}


def _add_file(archive: tarfile.TarFile, name: str, text: str, mode: int = 0o644) -> None:
    data = text.encode()
    info = tarfile.TarInfo(name)
    info.size, info.mode = len(data), mode
    archive.addfile(info, io.BytesIO(data))


def build_release_tarball(dest_dir: Path, version: str = "0.0.1", scripts: dict[str, str] | None = None) -> Path:
    """`<dest_dir>/liger_kernel-<version>.tar.gz`, an sdist-shaped stand-in release."""
    dest_dir.mkdir(parents=True, exist_ok=True)
    path = dest_dir / f"liger_kernel-{version}.tar.gz"
    root = f"liger_kernel-{version}"
    with tarfile.open(path, "w:gz") as archive:
        _add_file(archive, f"{root}/PKG-INFO", f"Metadata-Version: 2.1\nName: liger_kernel\nVersion: {version}\n")
        _add_file(archive, f"{root}/benchmark/__init__.py", "")
        _add_file(archive, f"{root}/benchmark/data/all_benchmark_data.csv", f"{HEADER}\n{HISTORY_ROW}\n")
        _add_file(archive, f"{root}/benchmark/scripts/__init__.py", "")
        _add_file(archive, f"{root}/benchmark/scripts/utils.py", textwrap.dedent(UTILS).lstrip())
        for name, text in (scripts or SCRIPTS).items():
            _add_file(archive, f"{root}/benchmark/scripts/{name}", textwrap.dedent(text).lstrip())
    return path


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def build_liger_wheel(dest_dir: Path, version: str = "0.0.1") -> Path:
    """A pure-Python `liger_kernel-<version>-py3-none-any.whl` with liger_kernel.utils.infer_device."""
    dest_dir.mkdir(parents=True, exist_ok=True)
    dist_info = f"liger_kernel-{version}.dist-info"
    files = {
        "liger_kernel/__init__.py": "",
        "liger_kernel/utils.py": (
            "import torch\n\n\ndef infer_device():\n"
            "    return 'cuda' if torch.cuda.is_available() else 'cpu'\n"
        ),
        f"{dist_info}/METADATA": f"Metadata-Version: 2.1\nName: liger-kernel\nVersion: {version}\n",
        f"{dist_info}/WHEEL": "Wheel-Version: 1.0\nGenerator: standin\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    path = dest_dir / f"liger_kernel-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        records = []
        for name, text in files.items():
            wheel.writestr(name, text)
            records.append(_record_line(name, text.encode()))
        records.append(f"{dist_info}/RECORD,,")
        wheel.writestr(f"{dist_info}/RECORD", "\n".join(records) + "\n")
    return path


def build_fake_torch(dest_dir: Path, device_name: str | None = "NVIDIA H100 80GB HBM3") -> Path:
    """A directory to put on PYTHONPATH: `torch` (one CUDA device named `device_name`, or none) and `triton`."""
    torch_dir = dest_dir / "torch"
    torch_dir.mkdir(parents=True, exist_ok=True)
    (torch_dir / "__init__.py").write_text(
        textwrap.dedent(
            """
            from types import SimpleNamespace
            from . import cuda

            __version__ = "2.5.1+standin"
            version = SimpleNamespace(cuda="12.4", hip=None)
            """
        )
    )
    available = device_name is not None
    (torch_dir / "cuda.py").write_text(
        textwrap.dedent(
            f"""
            from types import SimpleNamespace

            def is_available():
                return {available!r}

            def device_count():
                return {int(available)}

            def current_device():
                return 0

            def get_device_name(index=0):
                return {device_name!r}

            def get_device_properties(index=0):
                return SimpleNamespace(major=9, minor=0, total_memory=85520809984, multi_processor_count=132,
                                       uuid="5a3c1e2b-0000-4000-8000-000000000001")
            """
        )
    )
    triton_dir = dest_dir / "triton"
    triton_dir.mkdir(parents=True, exist_ok=True)
    (triton_dir / "__init__.py").write_text('__version__ = "3.1.0"\n')
    return dest_dir


NVIDIA_SMI_XML = """<?xml version="1.0" ?>
<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">
<nvidia_smi_log>
  <driver_version>550.54.15</driver_version>
  <cuda_version>12.4</cuda_version>
  <attached_gpus>2</attached_gpus>
  <gpu id="00000000:18:00.0">
    <product_name>NVIDIA H100 80GB HBM3</product_name>
    <uuid>GPU-11111111-2222-3333-4444-555555555555</uuid>
    <persistence_mode>Disabled</persistence_mode>
    <ecc_mode><current_ecc>Disabled</current_ecc><pending_ecc>Disabled</pending_ecc></ecc_mode>
    <gpu_power_readings><current_power_limit>500.00 W</current_power_limit></gpu_power_readings>
  </gpu>
  <gpu id="00000000:2A:00.0">
    <product_name>NVIDIA H100 80GB HBM3</product_name>
    <uuid>GPU-5a3c1e2b-0000-4000-8000-000000000001</uuid>
    <pci><pci_bus_id>00000000:2A:00.0</pci_bus_id></pci>
    <persistence_mode>Enabled</persistence_mode>
    <compute_mode>Default</compute_mode>
    <mig_mode><current_mig>N/A</current_mig></mig_mode>
    <ecc_mode><current_ecc>Enabled</current_ecc><pending_ecc>Enabled</pending_ecc></ecc_mode>
    <clocks_event_reasons>
      <clocks_event_reason_gpu_idle>Active</clocks_event_reason_gpu_idle>
      <clocks_event_reason_sw_power_cap>Not Active</clocks_event_reason_sw_power_cap>
    </clocks_event_reasons>
    <gpu_power_readings>
      <power_state>P0</power_state>
      <power_draw>71.23 W</power_draw>
      <current_power_limit>700.00 W</current_power_limit>
      <default_power_limit>700.00 W</default_power_limit>
    </gpu_power_readings>
    <clocks><graphics_clock>345 MHz</graphics_clock><sm_clock>345 MHz</sm_clock><mem_clock>2619 MHz</mem_clock></clocks>
    <applications_clocks><graphics_clock>1755 MHz</graphics_clock><mem_clock>2619 MHz</mem_clock></applications_clocks>
    <default_applications_clocks><graphics_clock>1980 MHz</graphics_clock><mem_clock>2619 MHz</mem_clock></default_applications_clocks>
    <max_clocks><graphics_clock>1980 MHz</graphics_clock><sm_clock>1980 MHz</sm_clock><mem_clock>2619 MHz</mem_clock></max_clocks>
  </gpu>
</nvidia_smi_log>
"""


def build_fake_nvidia_smi(bin_dir: Path, xml_text: str = NVIDIA_SMI_XML) -> Path:
    """`<bin_dir>/nvidia-smi`: prints `xml_text` for `-q -x`, fails for anything else."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    (bin_dir / "nvidia-smi.xml").write_text(xml_text)
    script = bin_dir / "nvidia-smi"
    script.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = "-q" ] && [ "$2" = "-x" ]; then cat "$(dirname "$0")/nvidia-smi.xml"; exit 0; fi\n'
        'echo "stand-in nvidia-smi: only -q -x" >&2; exit 2\n'
    )
    script.chmod(0o755)
    return script


def build_site(root: Path, version: str) -> dict:
    """What every sweep test needs: the stand-in release tarball, a liger-kernel wheel directory for
    offline installs, and a PATH with the stand-in nvidia-smi first."""
    build_fake_nvidia_smi(root / "bin")
    return {
        "root": root,
        "tarball": build_release_tarball(root / "release", version),
        "wheels": build_liger_wheel(root / "wheels", version).parent,
        "path": f"{root / 'bin'}{os.pathsep}{os.environ['PATH']}",
    }
