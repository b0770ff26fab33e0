"""Which scripts a sweep runs: the extracted release that holds them, the benchmark scripts that run as
programs, and the script(s) that write a given CSV kernel name."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from ..imports.archive import ArchiveError
from ..liger.release import extract_release, fetch_release
from .outcomes import ConfigurationError, SweepError


def resolve_release(release: str | Path | None, liger_version: str, dest: Path) -> Path:
    """The extracted release root (the directory holding benchmark/) for a dir, a tarball, or None (fetch)."""
    if release is None:
        try:
            artifact = fetch_release(liger_version)
        except ArchiveError as error:  # liger.release.ReleaseError is one
            raise SweepError(f"cannot fetch the Liger {liger_version} sdist: {error}") from error
        try:  # the artifact, not its path: extraction re-checks the sha256 the fetch verified
            return Path(extract_release(artifact, dest))
        except ArchiveError as error:
            raise ConfigurationError(str(error)) from error
    path = Path(release)
    if path.is_dir():
        for candidate in [path, *sorted(p for p in path.iterdir() if p.is_dir())]:
            if (candidate / "benchmark" / "scripts").is_dir():
                return candidate
        raise ConfigurationError(f"{path} holds no extracted Liger release (no benchmark/scripts under it)")
    if path.is_file():
        try:
            return Path(extract_release(path, dest))
        except ArchiveError as error:
            raise ConfigurationError(str(error)) from error
    raise ConfigurationError(f"release {path} does not exist; give an sdist tarball or an extracted release directory")


def benchmark_scripts(scripts_dir: Path) -> list[Path]:
    """benchmark_*.py files that run as programs (benchmark_model_configs.py is a helper module)."""
    return [
        path
        for path in sorted(scripts_dir.glob("benchmark_*.py"))
        if re.search(r"""__name__\s*==\s*["']__main__["']""", path.read_text(encoding="utf-8", errors="replace"))
    ]


def scripts_for_kernel(kernel: str, scripts: list[Path]) -> list[Path]:
    """The script(s) that write rows of CSV kernel name `kernel`.

    In order: scripts that assign that literal kernel name (`kernel_name="tiled_swiglu"` or
    `"kernel_name": "fused_moe"`); scripts that build it from a prefix (`f"fused_linear_grpo_loss_{...}"`);
    `benchmark_<kernel>.py`; scripts that mention the quoted name anywhere;
    `benchmark_<kernel without fused_linear_>.py` (older releases named e.g. cpo_loss fused_linear_cpo_loss).
    """
    sources = {path: path.read_text(encoding="utf-8", errors="replace") for path in scripts}
    literal = re.compile(r"""kernel_name["']?\s*[:=]\s*["']""" + re.escape(kernel) + r"""["']""")
    found = [path for path, text in sources.items() if literal.search(text)]
    if found:
        return found
    prefixes = re.compile(r"""kernel_name["']?\s*[:=]\s*f["']([A-Za-z0-9_]+)\{""")
    found = [path for path, text in sources.items() if any(kernel.startswith(p) for p in prefixes.findall(text))]
    if found:
        return found
    by_name = {path.name: path for path in scripts}
    if f"benchmark_{kernel}.py" in by_name:
        return [by_name[f"benchmark_{kernel}.py"]]
    quoted = re.compile(r"""["']""" + re.escape(kernel) + r"""["']""")
    found = [path for path, text in sources.items() if quoted.search(text)]
    if found:
        return found
    shorter = f"benchmark_{kernel.removeprefix('fused_linear_')}.py"
    return [by_name[shorter]] if shorter in by_name else []


def select_scripts(
    scripts_dir: Path, kernels: Iterable[str] | None = None, scripts: Iterable[str] | None = None
) -> list[Path]:
    """The scripts to run, in file-name order, without repeats."""
    available = benchmark_scripts(scripts_dir)
    if not kernels and not scripts:
        return available
    chosen: set[Path] = set()
    by_name = {path.name: path for path in available}
    for name in scripts or ():
        if name not in by_name:
            raise ConfigurationError(f"no benchmark script {name!r} in this release; it has: {', '.join(by_name)}")
        chosen.add(by_name[name])
    for kernel in kernels or ():
        found = scripts_for_kernel(kernel, available)
        if not found:
            raise ConfigurationError(
                f"no benchmark script of this release writes kernel {kernel!r}; name a script instead, one of: {', '.join(by_name)}"
            )
        chosen.update(found)
    return sorted(chosen)
