"""Every row format a Liger-Kernel release's benchmark scripts write, as rows of its CSV.

    .venv/bin/python scripts/liger_row_formats.py 0.8.5 > tests/fixtures/liger-0.8.5-sweep-rows.csv

Runs each `benchmark/scripts/benchmark_*.py` of the release's sdist once per sweep mode
(`--sweep-mode token_length` and `model_config`) without a GPU: the scripts' own `__main__`, their
own `benchmark_model_configs.py` sweep builders and model table, and their own `utils.run_benchmarks`
and `update_benchmark_data_csv` write the rows, so kernel names, providers, modes, metrics, x names,
x values and configs (`json.dumps` with utils.CustomEncoder) are exactly theirs. What needs a GPU is
replaced: `torch` is a stand-in (its dtypes print as `torch.bfloat16`, like the real ones), any other
third-party import (liger_kernel, transformers, triton, ...) is an inert module, the memory probes of
`compute_*_sweep_config` return a fixed safe batch size and sequence length, every measurement
returns fixed numbers, and `get_gpu_name` says NVIDIA H100 80GB HBM3. Output: one row per script x
sweep mode x kernel x provider x mode x metric (its first x value), as the script wrote it; a summary
of what each script produced goes to stderr.

The scripts are code from a package index: each runs in its own process (`python -I`, an allowlisted
environment, a time limit) in a temporary copy of the release, and nothing is installed. That is all
the containment there is: run it where you would run the release's own benchmarks, not on a host
whose secrets it must not see.
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

SWEEP_MODES = ("token_length", "model_config")
GPU_NAME = "NVIDIA H100 80GB HBM3"
SAFE_BATCH, SAFE_SEQ = 2, 4096  # what the stand-in memory probes answer
SCRIPT_TIMEOUT_S = 60
# Scripts with a sweep switch of their own (instead of utils.parse_benchmark_script_args' --sweep-mode)
OWN_SWEEPS = {"benchmark_fused_moe.py": (("--sweep-dim", "num_tokens"), ("--sweep-dim", "num_experts"))}
ROW_KEY = ("kernel_name", "kernel_provider", "kernel_operation_mode", "metric_name")

TORCH_STANDIN = '''
"""Stand-in torch: real-looking dtypes, everything else inert (see scripts/liger_row_formats.py)."""
import sys as _sys
import types as _types
from _inert import Inert as _Inert, InertModule as _InertModule


class dtype:
    def __init__(self, name):
        self._name = name
    def __repr__(self):
        return "torch." + self._name
    __str__ = __repr__


float32 = float = dtype("float32")
float16 = half = dtype("float16")
bfloat16 = dtype("bfloat16")
float64 = double = dtype("float64")
int64 = long = dtype("int64")
int32 = int = dtype("int32")
bool = dtype("bool")
float8_e4m3fn = dtype("float8_e4m3fn")
__version__ = "2.6.0"
Tensor = _Inert


def __getattr__(name):
    return _Inert()
'''

INERT = '''
"""Inert stand-ins: every attribute, call, operator and subclass works and means nothing."""
import importlib.abc
import importlib.machinery
import sys
import types


class _InertMeta(type):
    def __getattr__(cls, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return Inert()


class Inert(metaclass=_InertMeta):
    def __init__(self, *args, **kwargs):
        pass
    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return Inert()
    def __call__(self, *args, **kwargs):
        if len(args) == 1 and callable(args[0]) and not kwargs and not isinstance(args[0], Inert):
            return args[0]  # used as a decorator: keep the function
        return Inert()
    def __getitem__(self, key):
        return Inert()
    def __setitem__(self, key, value):
        pass
    def __iter__(self):
        return iter(())
    def __len__(self):
        return 0
    def __bool__(self):
        return False
    def __enter__(self):
        return self
    def __exit__(self, *exc):
        return False
    def __mro_entries__(self, bases):
        return (Inert,)
    def __index__(self):
        return 0
    def __int__(self):
        return 0
    def __float__(self):
        return 0.0
    def __repr__(self):
        return "<inert>"
    def _same(self, *args):
        return Inert()
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _same
    __floordiv__ = __rfloordiv__ = __mod__ = __pow__ = __neg__ = __matmul__ = __rmatmul__ = _same
    def __lt__(self, other):
        return False
    __le__ = __gt__ = __ge__ = __lt__
    def __eq__(self, other):
        return other is self
    __hash__ = object.__hash__


class InertModule(types.ModuleType):
    def __init__(self, name):
        super().__init__(name)
        self.__path__ = []
        self.__version__ = "99.0.0"  # version checks of optional packages pass
    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return Inert()


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Last on sys.meta_path: every module nothing else found (liger_kernel.*, transformers, triton,
    torch.nn, ...) is an inert one."""

    def find_spec(self, fullname, path, target=None):
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
    def create_module(self, spec):
        return InertModule(spec.name)
    def exec_module(self, module):
        pass


def install():
    sys.meta_path.append(_Finder())
'''

LIGER_UTILS_STANDIN = '''
"""Stand-in liger_kernel.utils: a CUDA device (the rows' GPU name comes from get_gpu_name)."""
from _inert import Inert as _Inert


def infer_device():
    return "cuda"


def get_total_gpu_memory():
    return 80  # GiB, an H100 80GB


def __getattr__(name):
    return _Inert()
'''

RUNNER = '''
"""Run one benchmark script's __main__ with measurements replaced (see scripts/liger_row_formats.py)."""
import os
import runpy
import sys

script, gpu_name, batch, seq = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
here = os.path.dirname(os.path.abspath(script))
import _inert
_inert.install()
sys.path.insert(0, here)

import benchmark_model_configs as bmc
import utils

utils.get_gpu_name = lambda: gpu_name
_fixed = utils.SingleBenchmarkRunOutput(y_20=0.9, y_50=1.0, y_80=1.1)
_run = utils.run_benchmarks


def run_benchmarks(bench_test_fn=None, **kwargs):
    return _run(bench_test_fn=lambda _input: _fixed, **kwargs)


utils.run_benchmarks = run_benchmarks
bmc.compute_seq_len_sweep_config = lambda *a, **k: bmc.SeqLenSweepConfig(batch_size=batch, seq_len=seq)
bmc.estimate_kernel_peak_memory = lambda *a, **k: 2**30  # bytes a probe "used"


def compute_model_config_sweep_config(model_configs, *a, bt=2048, **k):
    return bmc.ModelConfigSweepConfig(model_configs=tuple(model_configs), bt=bt, batch_size=1, seq_len=bt)


bmc.compute_model_config_sweep_config = compute_model_config_sweep_config
sys.argv = [script] + sys.argv[5:]
runpy.run_path(script, run_name="__main__")
'''


def release_scripts(version: str, work: Path) -> Path:
    from kernelindex_pipeline.liger.release import extract_release, fetch_release

    root = extract_release(fetch_release(version), work / "release")
    return root / "benchmark" / "scripts"


def standins(work: Path, version: str) -> Path:
    stub = work / "standins"
    (stub / "torch").mkdir(parents=True)
    (stub / "torch" / "__init__.py").write_text(textwrap.dedent(TORCH_STANDIN))
    (stub / "_inert.py").write_text(textwrap.dedent(INERT))
    (stub / "_runner.py").write_text(textwrap.dedent(RUNNER))
    (stub / "liger_kernel").mkdir()
    (stub / "liger_kernel" / "__init__.py").write_text(
        "from _inert import Inert as _Inert\n\ndef __getattr__(name):\n    return _Inert()\n"
    )
    (stub / "liger_kernel" / "utils.py").write_text(LIGER_UTILS_STANDIN)
    dist = stub / f"liger_kernel-{version}.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: liger-kernel\nVersion: {version}\n")
    return stub


def run_script(script: Path, arguments: tuple[str, ...], stub: Path) -> tuple[list[dict[str, str]], str]:
    data = script.parent.parent / "data"
    for old in data.glob("all_benchmark_data*.csv"):
        old.unlink()
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": str(stub),
        "PYTHONNOUSERSITE": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "HOME": str(stub),
    }
    try:
        done = subprocess.run(
            [
                sys.executable,
                "-I",
                "-c",
                f"import sys; sys.path.insert(0, {str(stub)!r}); exec(open({str(stub / '_runner.py')!r}).read())",
                str(script),
                GPU_NAME,
                str(SAFE_BATCH),
                str(SAFE_SEQ),
                *arguments,
            ],
            cwd=script.parent,
            env=env,
            capture_output=True,
            text=True,
            timeout=SCRIPT_TIMEOUT_S,
        )
        outcome = (
            "ok" if done.returncode == 0 else f"exit {done.returncode}: {done.stderr.strip().splitlines()[-1:] or ''}"
        )
    except subprocess.TimeoutExpired:
        outcome = f"timed out after {SCRIPT_TIMEOUT_S} s"
    rows: list[dict[str, str]] = []
    for path in sorted(data.glob("all_benchmark_data*.csv")):
        with open(path, newline="", encoding="utf-8") as f:
            rows.extend(csv.DictReader(f))
    return rows, outcome


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "version", help="liger-kernel release, e.g. 0.8.5 (fetched through the project's release cache)"
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="liger-row-formats-") as tmp:
        work = Path(tmp)
        scripts = release_scripts(args.version, work)
        stub = standins(work, args.version)
        out = io.StringIO()
        writer = None
        written: set[tuple[str, ...]] = set()
        for script in sorted(scripts.glob("benchmark_*.py")):
            source = script.read_text("utf-8", "replace")
            if "run_benchmarks(" not in source and "update_benchmark_data_csv(" not in source:
                print(f"{script.name}: writes no benchmark CSV rows (not run)", file=sys.stderr)
                continue
            # scripts on utils.parse_benchmark_script_args take --sweep-mode; the others have one sweep
            if "parse_benchmark_script_args" in source:
                runs = [("--sweep-mode", mode) for mode in SWEEP_MODES]
            else:
                runs = list(OWN_SWEEPS.get(script.name, ((),)))
            for arguments in runs:
                rows, outcome = run_script(script, arguments, stub)
                kept: dict[tuple[str, ...], dict[str, str]] = {}
                for row in rows:
                    kept.setdefault(tuple(row[k] for k in ROW_KEY), row)
                # a script that takes --sweep-mode but has one sweep writes the same rows twice
                new = [
                    row
                    for key, row in kept.items()
                    if key + (row["x_name"], row["extra_benchmark_config_str"]) not in written
                ]
                written.update(key + (row["x_name"], row["extra_benchmark_config_str"]) for key, row in kept.items())
                label = " ".join(arguments) or "(no arguments)"
                print(f"{script.name} {label}: {outcome}; {len(rows)} rows, {len(new)} new row types", file=sys.stderr)
                for row in new:
                    if writer is None:
                        writer = csv.DictWriter(out, fieldnames=list(row), lineterminator="\n")
                        writer.writeheader()
                    writer.writerow(row)
        shutil.rmtree(work / "release", ignore_errors=True)
    sys.stdout.write(out.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main())
