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
- `build_fake_torch`: `torch` and `triton` packages reporting one CUDA device with a given name; the
  stand-in `triton.testing.do_bench` has the code shape of triton >= 3.2 or <= 3.1 over a deterministic clock.
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

UTILS = """
\"\"\"Stand-in for Liger's benchmark/scripts/utils.py: the same CSV contract and the same shape of
measurement (run_benchmarks calls bench_test_fn once per row; speed goes through
triton.testing.do_bench(fn, quantiles=QUANTILES, rep=..., ...) as upstream scripts call it).\"\"\"
import csv
import json
import os
import time
from collections import OrderedDict
from dataclasses import dataclass
from importlib.metadata import version

import torch
import triton
from liger_kernel.utils import infer_device

device = infer_device()
LIGER_KERNEL_VERSION = version("liger-kernel")
QUANTILES = [0.5, 0.2, 0.8]
FIELDS = [
    "kernel_name", "kernel_provider", "kernel_operation_mode", "metric_name", "metric_unit", "x_name",
    "x_label", "x_value", "y_value_50", "y_value_20", "y_value_80", "extra_benchmark_config_str",
    "gpu_name", "timestamp", "liger_version",
]
KEY = ["kernel_name", "kernel_provider", "kernel_operation_mode", "metric_name", "x_name", "x_value",
       "extra_benchmark_config_str", "gpu_name"]


@dataclass
class SingleBenchmarkRunInput:
    x: object
    kernel_provider: str
    kernel_operation_mode: object = ""
    extra_benchmark_config: object = None


@dataclass
class SingleBenchmarkRunOutput:
    y_20: float
    y_50: float
    y_80: float


class CustomEncoder(json.JSONEncoder):
    def default(self, obj):
        return str(obj)


def get_gpu_name():
    if torch.cuda.is_available():
        return torch.cuda.get_device_name(torch.cuda.current_device())
    raise Exception("Benchmarks can only be run on GPU.")


def data_csv_path():
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "../data", "all_benchmark_data.csv")


def speed_bench(input):
    \"\"\"One speed row: the argument forms upstream scripts use, by operation mode.\"\"\"
    fn = lambda: None  # noqa: E731
    if input.kernel_operation_mode == "forward":
        ms_50, ms_20, ms_80 = triton.testing.do_bench(fn, quantiles=QUANTILES, rep=100)
    elif input.kernel_operation_mode == "backward":
        ms_50, ms_20, ms_80 = triton.testing.do_bench(fn, grad_to_none=[torch.randn(8)], rep=100, quantiles=QUANTILES)
    else:
        ms_50, ms_20, ms_80 = triton.testing.do_bench(fn, quantiles=QUANTILES, grad_to_none=[torch.randn(8)], rep=10, warmup=5)
    return SingleBenchmarkRunOutput(y_20=ms_20, y_50=ms_50, y_80=ms_80)


def memory_bench(input):
    \"\"\"One memory row (upstream _test_memory: peak MiB, no do_bench).\"\"\"
    peak = 1000.0 * (["liger", "huggingface"].index(input.kernel_provider) + 1) * input.x / 1000.0
    return SingleBenchmarkRunOutput(y_20=peak * 0.9, y_50=peak, y_80=peak * 1.1)


def run_benchmarks(bench_test_fn, kernel_name, metric_name, metric_unit, x_name, x_label, x_values, kernel_providers,
                   kernel_operation_modes=[None], extra_benchmark_configs=None, overwrite=False):
    gpu_name = get_gpu_name()
    rows = []
    for config in extra_benchmark_configs:
        for mode in kernel_operation_modes:
            for provider in kernel_providers:
                for x in x_values:
                    result = bench_test_fn(SingleBenchmarkRunInput(x=x, kernel_provider=provider,
                                                                   kernel_operation_mode=mode,
                                                                   extra_benchmark_config=config))
                    rows.append({
                        "kernel_name": kernel_name, "kernel_provider": provider, "kernel_operation_mode": mode,
                        "metric_name": metric_name, "metric_unit": metric_unit, "x_name": x_name,
                        "x_label": x_label, "x_value": x, "y_value_50": result.y_50, "y_value_20": result.y_20,
                        "y_value_80": result.y_80, "extra_benchmark_config_str": json.dumps(config, cls=CustomEncoder),
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
"""

SCRIPTS = {
    "benchmark_model_configs.py": '''
"""Helper module shared by the scripts (upstream has one too); not a benchmark."""
DEFAULT_DTYPE = "torch.bfloat16"
''',
    "benchmark_rms_norm.py": """
import torch
from benchmark_model_configs import DEFAULT_DTYPE
from utils import memory_bench, run_benchmarks, speed_bench

if __name__ == "__main__":
    config = {"M": 2048, "dtype": DEFAULT_DTYPE, "eps": 1e-06}
    run_benchmarks(speed_bench, "rms_norm", "speed", "ms", "H", "hidden size", [1024, 2048, 4096],
                   ["liger", "huggingface"], ["forward", "backward", "full"], [config])
    run_benchmarks(memory_bench, "rms_norm", "memory", "MB", "H", "hidden size", [1024, 2048, 4096],
                   ["liger", "huggingface"], ["full"], [config])
""",
    "benchmark_tiled_mlp.py": """
import torch
from utils import run_benchmarks, speed_bench

def run(kernel_name, act):
    config = {"bsz": 2, "hidden_size": 2048, "intermediate_size": 4096, "dtype": "torch.bfloat16", "hidden_act": act}
    run_benchmarks(bench_test_fn=speed_bench, kernel_name=kernel_name, metric_name="speed", metric_unit="ms", x_name="T",
                   x_label="sequence length", x_values=[1024, 2048, 4096], kernel_providers=["liger_tiled", "huggingface"],
                   kernel_operation_modes=["full"], extra_benchmark_configs=[config])

if __name__ == "__main__":
    run(kernel_name="tiled_swiglu", act="silu")
    run(kernel_name="tiled_geglu", act="gelu_pytorch_tanh")
""",
    "benchmark_layer_norm.py": """
import torch
from utils import get_gpu_name

if __name__ == "__main__":
    get_gpu_name()
    print("compiling layer_norm kernels")
    raise RuntimeError("Triton compilation failed: layer_norm_fwd (stand-in crash)")
""",
    "benchmark_cross_entropy.py": """
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
""",
    "benchmark_softmax.py": """
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
""",
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


def build_plain_wheel(dest_dir: Path, distribution: str, version: str, files: dict[str, str]) -> Path:
    """A pure-Python wheel of `distribution` holding `files` (path in the wheel -> text)."""
    dest_dir.mkdir(parents=True, exist_ok=True)
    stem = f"{distribution.replace('-', '_')}-{version}"
    files = {
        **files,
        f"{stem}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {distribution}\nVersion: {version}\n",
        f"{stem}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: standin\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    path = dest_dir / f"{stem}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        records = []
        for name, text in files.items():
            wheel.writestr(name, text)
            records.append(_record_line(name, text.encode()))
        records.append(f"{stem}.dist-info/RECORD,,")
        wheel.writestr(f"{stem}.dist-info/RECORD", "\n".join(records) + "\n")
    return path


def build_liger_wheel(
    dest_dir: Path, version: str = "0.0.1", extra_files: dict[str, str] | None = None, metadata: str = ""
) -> Path:
    """A pure-Python `liger_kernel-<version>-py3-none-any.whl` with liger_kernel.utils.infer_device
    (and `extra_files`: path in the wheel -> text, e.g. Liger's real backends/ package; `metadata`: more
    METADATA lines, e.g. an extra's Provides-Extra and Requires-Dist)."""
    dest_dir.mkdir(parents=True, exist_ok=True)
    dist_info = f"liger_kernel-{version}.dist-info"
    files = {
        **(extra_files or {}),
        "liger_kernel/__init__.py": (extra_files or {}).get("liger_kernel/__init__.py", ""),
        "liger_kernel/utils.py": (
            "import torch\n\n\ndef infer_device():\n    return 'cuda' if torch.cuda.is_available() else 'cpu'\n"
        ),
        f"{dist_info}/METADATA": f"Metadata-Version: 2.1\nName: liger-kernel\nVersion: {version}\n{metadata}",
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


FAKE_TORCH_TENSORS = """
import builtins
import math
import struct


def _f32(value):
    return struct.unpack("f", struct.pack("f", builtins.float(value)))[0]


class dtype:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "torch." + self.name


float = float32 = dtype("float32")
bfloat16 = dtype("bfloat16")
float16 = dtype("float16")
int8 = dtype("int8")


class Tensor:
    # A 1-D float32 CPU tensor: just enough for triton's inline do_bench summary and the sentinel.

    def __init__(self, values, dtype=float32, shape=None):
        self.values = [_f32(v) for v in values]
        self.dtype = dtype
        self.shape = tuple(shape) if shape is not None else (len(self.values),)

    def tolist(self):
        return list(self.values)

    def item(self):
        (value,) = self.values
        return value

    def __matmul__(self, other):
        return Tensor([], self.dtype, (self.shape[0], other.shape[-1]))

    def copy_(self, other):
        return self


def tensor(values, dtype=float32, device=None):
    return Tensor(values, dtype)


def _sized(shape, dtype=float32, device=None):
    return Tensor([], dtype, shape)


def randn(*shape, dtype=float32, device=None):
    return _sized(shape, dtype)


def empty(*shape, dtype=float32, device=None):
    return _sized(shape, dtype)


def quantile(input, q):
    # torch's default: linear interpolation between order statistics.
    data = sorted(input.values)
    n = len(data)
    out = []
    for level in q.values:
        point = level * (n - 1)
        low, high = math.floor(point), math.ceil(point)
        out.append(data[low] + (point - low) * (data[high] - data[low]))
    return Tensor(out)


def min(input):
    return Tensor([builtins.min(input.values)])


def max(input):
    return Tensor([builtins.max(input.values)])


def mean(input):
    return Tensor([sum(input.values) / len(input.values)])


def median(input):
    data = sorted(input.values)
    return Tensor([data[(len(data) - 1) // 2]])


def synchronize():
    return None
"""

# The deterministic stand-in of a CUDA event clock: every record() advances it by a pseudo-random
# 0.5..1.5 ms step (a linear congruential sequence that _standin_reset restarts).
FAKE_TRITON_CLOCK = """
_state = {"seed": 1, "clock": 0.0}


def _standin_reset(seed=1):
    _state["seed"], _state["clock"] = seed, 0.0


def _tick():
    _state["seed"] = (_state["seed"] * 1103515245 + 12345) % 2**31
    _state["clock"] += 0.5 + (_state["seed"] % 1000) / 1000.0
    return _state["clock"]


class _Event:
    def __init__(self, enable_timing=False):
        self.t = None

    def record(self):
        self.t = _tick()

    def elapsed_time(self, end):
        return end.t - self.t
"""

# triton >= 3.2: the timings are a list summarised by _summarize_statistics (code shape of triton 3.6).
FAKE_TRITON_SUMMARIZE = (
    FAKE_TRITON_CLOCK
    + """
import math
import statistics


def _quantile(a, q):
    n = len(a)
    a = sorted(a)

    def get_quantile(q):
        if not (0 <= q <= 1):
            raise ValueError("Quantiles must be in the range [0, 1]")
        point = q * (n - 1)
        lower = math.floor(point)
        upper = math.ceil(point)
        t = point - lower
        return (1 - t) * a[lower] + t * a[upper]

    return [get_quantile(q) for q in q]


def _summarize_statistics(times, quantiles, return_mode):
    if quantiles is not None:
        ret = _quantile(times, quantiles)
        if len(ret) == 1:
            ret = ret[0]
        return ret
    if return_mode == "all":
        return times
    elif return_mode == "min":
        return min(times)
    elif return_mode == "max":
        return max(times)
    elif return_mode == "mean":
        return statistics.mean(times)
    elif return_mode == "median":
        return statistics.median(times)


def do_bench(fn, warmup=25, rep=100, grad_to_none=None, quantiles=None, return_mode="mean"):
    assert return_mode in ["min", "max", "mean", "median", "all"]
    fn()
    start_event = _Event(enable_timing=True)
    end_event = _Event(enable_timing=True)
    start_event.record()
    for _ in range(5):
        fn()
    end_event.record()
    estimate_ms = start_event.elapsed_time(end_event) / 5
    n_warmup = max(1, int(warmup / estimate_ms))
    n_repeat = max(1, int(rep / estimate_ms))
    start_event = [_Event(enable_timing=True) for i in range(n_repeat)]
    end_event = [_Event(enable_timing=True) for i in range(n_repeat)]
    for _ in range(n_warmup):
        fn()
    for i in range(n_repeat):
        if grad_to_none is not None:
            for x in grad_to_none:
                x.grad = None
        start_event[i].record()
        fn()
        end_event[i].record()
    times = [s.elapsed_time(e) for s, e in zip(start_event, end_event)]
    return _summarize_statistics(times, quantiles, return_mode)
"""
)

# triton <= 3.1: no return_mode "all"; a float32 tensor of timings summarised inline (code shape of 3.0).
FAKE_TRITON_INLINE = (
    FAKE_TRITON_CLOCK
    + """
import torch


def do_bench(fn, warmup=25, rep=100, grad_to_none=None, quantiles=None, fast_flush=True, return_mode="mean"):
    assert return_mode in ["min", "max", "mean", "median"]
    fn()
    start_event = _Event(enable_timing=True)
    end_event = _Event(enable_timing=True)
    start_event.record()
    for _ in range(5):
        fn()
    end_event.record()
    estimate_ms = start_event.elapsed_time(end_event) / 5
    n_warmup = max(1, int(warmup / estimate_ms))
    n_repeat = max(1, int(rep / estimate_ms))
    start_event = [_Event(enable_timing=True) for i in range(n_repeat)]
    end_event = [_Event(enable_timing=True) for i in range(n_repeat)]
    for _ in range(n_warmup):
        fn()
    for i in range(n_repeat):
        if grad_to_none is not None:
            for x in grad_to_none:
                x.grad = None
        start_event[i].record()
        fn()
        end_event[i].record()
    times = torch.tensor([s.elapsed_time(e) for s, e in zip(start_event, end_event)], dtype=torch.float)
    if quantiles is not None:
        ret = torch.quantile(times, torch.tensor(quantiles, dtype=torch.float)).tolist()
        if len(ret) == 1:
            ret = ret[0]
        return ret
    return getattr(torch, return_mode)(times).item()
"""
)


def build_fake_torch(
    dest_dir: Path, device_name: str | None = "NVIDIA H100 80GB HBM3", triton: str = "summarize"
) -> Path:
    """A directory to put on PYTHONPATH: `torch` (one CUDA device named `device_name`, or none) and
    `triton` whose `triton.testing.do_bench` has the code shape of triton >= 3.2 (`triton="summarize"`)
    or <= 3.1 (`"inline"`), timed by a deterministic stand-in clock."""
    torch_dir = dest_dir / "torch"
    torch_dir.mkdir(parents=True, exist_ok=True)
    (torch_dir / "__init__.py").write_text(
        textwrap.dedent(
            """
            from types import SimpleNamespace
            from . import cuda
            from ._tensors import *  # noqa: F403

            __version__ = "2.5.1+standin"
            version = SimpleNamespace(cuda="12.4", hip=None)
            """
        )
    )
    (torch_dir / "_tensors.py").write_text(FAKE_TORCH_TENSORS)
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

            def synchronize():
                return None

            def get_device_properties(index=0):
                return SimpleNamespace(major=9, minor=0, total_memory=85520809984, multi_processor_count=132, L2_cache_size=52428800,
                                       uuid="5a3c1e2b-0000-4000-8000-000000000001")
            """
        )
    )
    triton_dir = dest_dir / "triton"
    triton_dir.mkdir(parents=True, exist_ok=True)
    (triton_dir / "__init__.py").write_text('__version__ = "3.1.0"\nfrom . import testing  # noqa: F401\n')
    testing = {"summarize": FAKE_TRITON_SUMMARIZE, "inline": FAKE_TRITON_INLINE}[triton]
    (triton_dir / "testing.py").write_text(testing)
    return dest_dir


# What Liger's dispatcher (liger_kernel/backends/dispatch.py, 0.8.3+) reads of torch beyond the stand-in
# above: `@torch.compiler.disable` on dispatch() runs at import (the one thing its import needs without
# CUDA); `torch.device` and `Tensor.is_cuda` when it infers a call's device; torch.cuda's
# get_device_capability when a Capability gates on min_cc/max_cc.
TORCH_FOR_LIGER_DISPATCH = """

class device:
    def __init__(self, spec):
        self.type, _, index = str(spec).partition(":")
        self.index = int(index) if index else None


compiler = SimpleNamespace(disable=lambda fn=None, **kwargs: fn)
Tensor.is_cuda = False  # stand-in tensors live on the CPU
"""


def add_liger_dispatcher_needs(torch_dir: Path, capability: tuple[int, int] = (9, 0)) -> Path:
    """Give a `build_fake_torch` directory what Liger's dispatcher reads (TORCH_FOR_LIGER_DISPATCH)."""
    init, cuda = torch_dir / "torch" / "__init__.py", torch_dir / "torch" / "cuda.py"
    init.write_text(init.read_text() + TORCH_FOR_LIGER_DISPATCH)
    cuda.write_text(cuda.read_text() + f"\n\ndef get_device_capability(device=None):\n    return {capability!r}\n")
    return torch_dir


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
