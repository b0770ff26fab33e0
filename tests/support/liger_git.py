"""A synthetic Liger-Kernel repository built with `git` for attribution tests: the files Liger's layout
has (an op, an imported helper, a module wrapper re-exported by its package, a benchmark script with
the shared utilities, the benchmark workflow, setup.py) and one commit per kind of change."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

RMS_NORM_OP = (
    "{imports}from liger_kernel.ops.utils import ensure_contiguous\n\n\n"
    "@ensure_contiguous\ndef rms_norm(x):\n    return {body}\n"
)
BASE_FILES = {
    "setup.py": 'def deps():\n    return ["torch>=2.1.2", "triton>=2.3.1"]\n\ndev = ["transformers>=4.49.0", "pytest"]\n',
    ".github/workflows/benchmark.yml": "name: Benchmarks\njobs: {}\n",
    "dev/modal/benchmarks.py": 'image = "debian_slim"\n',
    "src/liger_kernel/__init__.py": "",
    "src/liger_kernel/utils.py": "def infer_device():\n    return 'cuda'\n",
    "src/liger_kernel/ops/__init__.py": "",
    "src/liger_kernel/ops/utils.py": "def ensure_contiguous(fn):\n    return fn\n\n\ndef unused():\n    return 0\n",
    "src/liger_kernel/ops/helper.py": "SCALE = 1\n",
    "src/liger_kernel/ops/rms_norm.py": RMS_NORM_OP.format(imports="", body="x"),
    "src/liger_kernel/ops/softmax.py": "from .utils import ensure_contiguous\n\n\n@ensure_contiguous\ndef softmax(x):\n    return x\n",
    "src/liger_kernel/transformers/__init__.py": "from .rms_norm import LigerRMSNorm\nfrom .softmax import LigerSoftmax\n",
    "src/liger_kernel/transformers/rms_norm.py": (
        "from liger_kernel.ops.rms_norm import rms_norm\n\n\nclass LigerRMSNorm:\n"
        "    def forward(self, x):\n        return rms_norm(x)\n"
    ),
    "src/liger_kernel/transformers/softmax.py": (
        "from liger_kernel.ops.softmax import softmax\n\n\nclass LigerSoftmax:\n"
        "    def forward(self, x):\n        return softmax(x)\n"
    ),
    "benchmark/scripts/utils.py": "QUANTILES = [0.5, 0.2, 0.8]\n",
    "benchmark/scripts/benchmark_rms_norm.py": (
        "from utils import QUANTILES\n\nfrom liger_kernel.transformers import LigerRMSNorm\n"
        "from liger_kernel.utils import infer_device\n\n"
        'def run():\n    return {"kernel_name": "rms_norm", "q": QUANTILES}\n'
    ),
    "benchmark/scripts/benchmark_softmax.py": (
        "from utils import QUANTILES\n\nfrom liger_kernel.transformers.softmax import LigerSoftmax\n\n"
        'def run(beta):\n    return dict(kernel_name=f"softmax_beta={beta}")\n'
    ),
}


HELPER_V2 = BASE_FILES["src/liger_kernel/ops/utils.py"].replace(
    "    return fn", "    fn.checked = True\n    return fn", 1
)


@dataclass
class SyntheticLiger:
    path: Path
    shas: dict[str, str]  # step name -> full sha


def git(repo: Path, *args: str, date: str | None = None) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.org",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.org",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_SYSTEM": os.devnull,
    }
    if date:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = date
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env).stdout


def _commit(repo: Path, files: dict[str, str], subject: str, day: int) -> str:
    for name, text in files.items():
        target = repo / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", subject, date=f"2025-01-{day:02d}T12:00:00+00:00")
    return git(repo, "rev-parse", "HEAD").strip()


def build(root: Path) -> SyntheticLiger:
    """Commits, in order: base; op (rms_norm's op module); helper (ops/utils.py, imported by the op);
    script (benchmark_rms_norm.py); workflow; other (softmax's op only); import (rms_norm's op starts
    importing ops/helper.py); unused (ops/utils.py changes, but only a function nothing of rms_norm calls);
    docs (a docstring and a comment in rms_norm's op: no code changes);
    uses-import (ops/helper.py changes: rms_norm's only at the later end)."""
    repo = root / "liger"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    shas = {"base": _commit(repo, BASE_FILES, "base", 1)}
    steps = [
        (
            "op",
            {"src/liger_kernel/ops/rms_norm.py": RMS_NORM_OP.format(imports="", body="x * 1.0")},
            "rms_norm: slower op (#101)",
        ),
        ("helper", {"src/liger_kernel/ops/utils.py": HELPER_V2}, "ops utils (#102)"),
        (
            "script",
            {
                "benchmark/scripts/benchmark_rms_norm.py": BASE_FILES[
                    "benchmark/scripts/benchmark_rms_norm.py"
                ].replace('"q": QUANTILES', '"q": QUANTILES, "shapes": 2')
            },
            "bench rms_norm (#103)",
        ),
        ("workflow", {".github/workflows/benchmark.yml": "name: Benchmarks\njobs: {bench: {}}\n"}, "workflow (#104)"),
        (
            "other",
            {
                "src/liger_kernel/ops/softmax.py": BASE_FILES["src/liger_kernel/ops/softmax.py"].replace(
                    "return x", "return -x"
                )
            },
            "softmax (#105)",
        ),
        (
            "import",
            {
                "src/liger_kernel/ops/rms_norm.py": RMS_NORM_OP.format(
                    imports="from liger_kernel.ops.helper import SCALE\n", body="x * SCALE"
                )
            },
            "rms_norm uses helper (#106)",
        ),
        (
            "unused",
            {"src/liger_kernel/ops/utils.py": HELPER_V2.replace("return 0", "return 1")},
            "ops utils: a function rms_norm never calls (#108)",
        ),
        (
            "docs",
            {
                "src/liger_kernel/ops/rms_norm.py": RMS_NORM_OP.format(
                    imports="from liger_kernel.ops.helper import SCALE\n", body="x * SCALE"
                ).replace("def rms_norm(x):\n", 'def rms_norm(x):\n    """Root mean square norm."""\n    # scaled\n')
            },
            "rms_norm: docstring (#109)",
        ),
        ("uses-import", {"src/liger_kernel/ops/helper.py": "SCALE = 2\n"}, "helper scale (#107)"),
    ]
    for day, (name, files, subject) in enumerate(steps, start=2):
        shas[name] = _commit(repo, files, subject, day)
    return SyntheticLiger(repo, shas)


def blobless_clone(source: SyntheticLiger, root: Path, name: str = "clone", *, bare: bool = True) -> Path:
    """A ``--filter=blob:none`` clone of the synthetic repository over file:// (as production clones Liger's
    over https): its blobs are fetched on first use from the source, which allows the filter."""
    git(source.path, "config", "uploadpack.allowFilter", "true")
    target = root / name
    git(root, "clone", "-q", "--filter=blob:none", *(["--bare"] if bare else []), f"file://{source.path}", str(target))
    return target
