"""A synthetic Liger-Kernel repository to bisect, and the stand-in GPU its benchmark is timed on.

The repository (`build_repository`) is an installable `liger_kernel` (pyproject.toml, src layout) with one
op, `liger_kernel.ops.rms_norm.rms_norm`, and Liger's benchmark harness (benchmark/scripts/utils.py,
benchmark_rms_norm.py, benchmark/data/). Every commit after the base changes the op module; the op costs
`FAST_MS` of stand-in GPU time per call, and `SLOW_MS` from the commit named `slow_from` on; the commits
in `broken` make the op module fail to import (a module it imports is gone), the next commit repairs it.

The stand-in GPU (`build_timed_torch`): the stand-in torch/triton of tests/support/standin_release.py
plus a work clock: `torch.cuda._standin_work(ms)` queues that much device time, and the stand-in CUDA
events of `triton.testing.do_bench` read the clock with it, so what do_bench times is the op's own cost
(plus the stand-in clock's deterministic jitter), without a sleep and the same on any machine.
"""

from __future__ import annotations

import os
import textwrap
from dataclasses import dataclass
from pathlib import Path

from kernelindex_pipeline.records.metrics import LATENCY
from tests.support.liger_git import git
from tests.support.standin_release import HEADER, UTILS, build_fake_nvidia_smi, build_fake_torch

H100_NAME = "NVIDIA H100 80GB HBM3"
H100 = "nvidia-h100-80gb-hbm3"
VERSION = "0.9.0"
FAST_MS = 1.0
SLOW_MS = 1.6  # with the clock's ~1 ms jitter: 2.0 -> 2.6 ms, a 1.3x slowdown
BASELINE_MS = 1.2  # the huggingface provider's cost (never changes)
OP = "src/liger_kernel/ops/rms_norm.py"
CASE_KEY = "hidden1024-rows2048-bf16"  # the case the benchmark script measures, as the catalogue names it

PYPROJECT = f"""[build-system]
requires = ["setuptools>=42", "wheel"]
build-backend = "setuptools.build_meta"

[project]
name = "liger_kernel"
version = "{VERSION}"

[tool.setuptools]
package-dir = {{"" = "src"}}

[tool.setuptools.packages.find]
where = ["src"]
include = ["liger_kernel*"]
"""

SCRIPT = """
import torch
import triton
from utils import QUANTILES, SingleBenchmarkRunOutput, run_benchmarks

from liger_kernel.ops.rms_norm import rms_norm


def bench_speed_rms_norm(input):
    x = torch.randn(8)
    if input.kernel_provider == "liger":
        fn = lambda: rms_norm(x)  # noqa: E731
    else:
        fn = lambda: torch.cuda._standin_work(BASELINE_MS)  # noqa: E731
    ms_50, ms_20, ms_80 = triton.testing.do_bench(fn, quantiles=QUANTILES, rep=100)
    return SingleBenchmarkRunOutput(y_20=ms_20, y_50=ms_50, y_80=ms_80)


if __name__ == "__main__":
    config = {"M": 2048, "dtype": "torch.bfloat16", "eps": 1e-06}
    run_benchmarks(bench_speed_rms_norm, "rms_norm", "speed", "ms", "H", "hidden size", [1024],
                   ["liger", "huggingface"], ["forward"], [config])
""".replace("BASELINE_MS", repr(BASELINE_MS))

UTILITIES = "import torch\n\n\ndef infer_device():\n    return 'cuda' if torch.cuda.is_available() else 'cpu'\n"


def op_module(revision: int, cost_ms: float, broken: bool = False) -> str:
    imports = "import torch\n" + (
        "from liger_kernel.ops.gone import SCALE  # removed by this commit\n" if broken else ""
    )
    return f"{imports}\nREVISION = {revision}\nCOST_MS = {cost_ms!r}\n\n\ndef rms_norm(x):\n    torch.cuda._standin_work(COST_MS)\n    return x\n"


BASE_FILES = {
    "pyproject.toml": PYPROJECT,
    "README.md": "stand-in Liger\n",
    "src/liger_kernel/__init__.py": "",
    "src/liger_kernel/utils.py": UTILITIES,
    "src/liger_kernel/ops/__init__.py": "",
    OP: op_module(0, FAST_MS),
    "benchmark/__init__.py": "",
    "benchmark/data/all_benchmark_data.csv": HEADER + "\n",
    "benchmark/scripts/__init__.py": "",
    "benchmark/scripts/utils.py": textwrap.dedent(UTILS).lstrip(),
    "benchmark/scripts/benchmark_rms_norm.py": textwrap.dedent(SCRIPT).lstrip(),
}


@dataclass
class BisectionRepository:
    path: Path
    commits: list[str]  # c0 (base) .. cN, oldest first, full shas
    slow_from: int
    broken: frozenset[int]


def _commit(repo: Path, files: dict[str, str], subject: str, day: int) -> str:
    for name, text in files.items():
        target = repo / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", subject, date=f"2025-02-{day:02d}T12:00:00+00:00")
    return git(repo, "rev-parse", "HEAD").strip()


def build_repository(
    root: Path, commits: int, slow_from: int, broken: frozenset[int] = frozenset()
) -> BisectionRepository:
    """c0 and `commits` more, each changing the op (see the module docstring)."""
    repo = root / "liger"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    shas = [_commit(repo, BASE_FILES, "base", 1)]
    for i in range(1, commits + 1):
        cost = SLOW_MS if i >= slow_from else FAST_MS
        subject = (
            f"rms_norm revision {i}"
            + (" (slower)" if i == slow_from else "")
            + (" (breaks import)" if i in broken else "")
        )
        shas.append(_commit(repo, {OP: op_module(i, cost, broken=i in broken)}, f"{subject} (#{200 + i})", 1 + i))
    return BisectionRepository(repo, shas, slow_from, frozenset(broken))


def build_timed_torch(dest: Path, device_name: str = H100_NAME) -> Path:
    """The stand-in torch/triton with the work clock (module docstring): a directory for PYTHONPATH."""
    build_fake_torch(dest, device_name)
    cuda = dest / "torch" / "cuda.py"
    cuda.write_text(
        cuda.read_text()
        + "\n\n_work = [0.0]  # stand-in device time queued so far (ms)\n\n\ndef _standin_work(ms):\n    _work[0] += ms\n"
    )
    testing = dest / "triton" / "testing.py"
    text = testing.read_text()
    clocked = text.replace(
        "        self.t = _tick()\n", "        self.t = _tick() + __import__('torch').cuda._work[0]\n"
    )
    assert clocked != text, "the stand-in triton's event clock changed: update build_timed_torch"
    testing.write_text(clocked)
    return dest


def build_host(root: Path) -> dict:
    """The stand-in host: timed torch/triton for PYTHONPATH and a PATH with the stand-in nvidia-smi."""
    build_fake_nvidia_smi(root / "bin")
    return {"torch": build_timed_torch(root / "torch"), "path": f"{root / 'bin'}{os.pathsep}{os.environ['PATH']}"}


def report_of(commits, *, before_ref, after_ref):
    """A regressions.json as `regressions` writes it, cut to what a bisection reads: one group (id
    g-0123456789ab) between `before_ref` and `after_ref` with suspects c6, c3, c8 and a 1.3x step of rms_norm
    forward (and smaller or non-Liger steps beside it), and that step's change with its interval."""
    series = [
        {
            "kernel": "rms_norm",
            "mode": "forward",
            "provider": "liger",
            "caseKey": CASE_KEY,
            "metric": LATENCY,
            "magnitude": 1.3,
        },
        {
            "kernel": "rms_norm",
            "mode": "backward",
            "provider": "liger",
            "caseKey": CASE_KEY,
            "metric": LATENCY,
            "magnitude": 1.1,
        },
        {
            "kernel": "rms_norm",
            "mode": "forward",
            "provider": "huggingface",
            "caseKey": CASE_KEY,
            "metric": LATENCY,
            "magnitude": 2.0,
        },
    ]
    boundary = {
        "before": {"source": "run-a", "codeRef": before_ref},
        "after": {"source": "run-b", "codeRef": after_ref},
    }
    change = {**series[0], "gpu": H100, "ci95": [1.25, 1.35], **boundary}
    suspects = {"cause": "liger_kernel", "commits": [{"sha": commits[6]}, {"sha": commits[3]}, {"sha": commits[8]}]}
    group = {"id": "g-0123456789ab", "gpu": H100, **boundary, "suspects": suspects, "series": series}
    return {"groups": [group], "changes": [change]}
