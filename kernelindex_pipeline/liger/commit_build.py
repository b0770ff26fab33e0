"""Liger-Kernel at any commit of the clone: a wheel built from the commit's tree, and the benchmark harness
of a commit, for the steps of a bisection (`liger/bisection.py`, `sweep/bisection.py`).

`build_liger(history, commit, cache_dir)`: ``git archive`` of the commit's tree through the clone's hardened
git runner (`LigerSourceHistory.archive`: a blob-less clone fetches the blobs it lacks, over https or
file only), extracted into a temporary directory, then ``pip wheel --no-deps --no-build-isolation
--no-index`` with the build interpreter (default: this one; it needs Liger's build backend, setuptools
with bdist_wheel). The wheel is cached under ``<cache_dir>/<sha>/`` with a marker written last
(``build.json``: version, sha256), so a second bisection over the same commits builds nothing; a
half-built entry is rebuilt, a cached wheel whose digest changed is refused. Concurrent builds of one
commit serialise on a lock file. A commit that does not build is a `CommitBuildError` (the bisection skips
it); it is not cached, since the fault may be the build interpreter's.

The build runs Liger's own ``setup.py`` at that commit: third-party code with the trust its benchmark
scripts have, so it gets a minimal environment (no credentials, no package index, ``HOME`` a temporary
directory) and ``SOURCE_DATE_EPOCH`` the commit's time (the wheel's file dates are the commit's).

`harness_at(history, commit, dest)`: the scripts and utilities a step runs (``benchmark/``, and ``test/``
that some scripts import), as the release root a sweep takes (`SweepRequest.release`): held fixed at one
commit for every step of a bisection, as Liger's own reruns of old commits run today's scripts.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from kernelindex_pipeline.home import cache_root

from .source_history import LigerSourceHistory, SourceHistoryError

BUILD_TIMEOUT_S = 900.0  # one wheel build (Liger's takes seconds; setup.py may probe the platform)
MARKER = "build.json"
HARNESS_PATHS = ("benchmark", "test")  # what a benchmark step runs besides liger_kernel itself
_TAIL_LINES = 12  # of pip's output in a build error


class CommitBuildError(ValueError):
    """A commit of Liger that does not build into a wheel (names the commit and the build's reason)."""


@dataclass(frozen=True)
class CommitBuild:
    """A wheel of Liger built at `commit` (a full sha), its version and sha256, and whether the cache had it."""

    commit: str
    wheel: Path
    version: str
    digest: str  # "sha256:<hex>" of the wheel file
    reused: bool
    seconds: float

    def to_dict(self) -> dict:
        return {**asdict(self), "wheel": str(self.wheel)}


def default_build_cache_dir() -> Path:
    """``<cache>/liger-builds`` (<cache>: $KERNELINDEX_CACHE_DIR or ~/.cache/kernelindex-pipeline)."""
    return cache_root() / "liger-builds"


def _file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return "sha256:" + digest.hexdigest()


def resolve_commit(history: LigerSourceHistory, ref: str) -> str:
    """The full sha of `ref` (a short sha or a tag); a `SourceHistoryError` naming it when the clone lacks it."""
    sha = history.resolve(ref)
    if sha is None:
        raise SourceHistoryError(
            f"--liger-git {history.path}: no commit {ref!r} in the clone (fetch it: git -C {history.path} fetch origin)"
        )
    return sha


def _extract(archive: Path, dest: Path) -> None:
    """Our own git archive, extracted with the standard library's `data` filter all the same (no absolute
    names, no links out of `dest`, no devices): the tree's content is the clone's, hostile input."""
    if not hasattr(tarfile, "data_filter"):  # Python 3.11.4+ (and 3.12+) have it
        raise CommitBuildError(
            f"extracting a commit's tree safely needs Python 3.11.4 or later (this is {sys.version.split()[0]})"
        )
    with tarfile.open(archive) as tar:
        tar.extractall(dest, filter="data")


def _build_environment(home: Path, commit_time: int) -> dict[str, str]:
    env = {k: os.environ[k] for k in ("PATH", "LANG", "LC_ALL") if k in os.environ}
    env.update(
        HOME=str(home),
        TMPDIR=str(home),
        PIP_NO_INDEX="1",  # a build with --no-deps --no-build-isolation needs nothing from an index
        PIP_CONFIG_FILE=os.devnull,
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        PIP_NO_INPUT="1",
        PYTHONDONTWRITEBYTECODE="1",
        SOURCE_DATE_EPOCH=str(commit_time),
    )
    return env


def _wheel_version(wheel: Path) -> str:
    """The version of a wheel file name (``{distribution}-{version}(-{build})?-{python}-{abi}-{platform}.whl``)."""
    return wheel.name.split("-")[1]


def build_liger(
    history: LigerSourceHistory, commit: str, cache_dir: Path | str | None = None, *, python: str | None = None
) -> CommitBuild:
    """The wheel of Liger at `commit` (a sha or a tag the clone has), from the cache when it holds one.

    Raises `CommitBuildError` when the commit's tree does not build into one ``liger_kernel`` wheel, and
    `SourceHistoryError` when the clone cannot give the tree (a commit it lacks, a blob-less clone that
    cannot fetch)."""
    started = time.monotonic()
    sha = resolve_commit(history, commit)
    cache = Path(cache_dir) if cache_dir else default_build_cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    target = cache / sha
    with open(cache / f"{sha}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one builder per commit; the others wait, then reuse
        cached = _cached(target, sha)
        if cached is not None:
            return CommitBuild(sha, cached[0], cached[1], cached[2], True, time.monotonic() - started)
        with tempfile.TemporaryDirectory(prefix=f"build-{sha[:12]}-", dir=cache) as scratch:
            work = Path(scratch)
            tree = work / "tree"
            tree.mkdir()
            _extract(history.archive(sha, work / "tree.tar"), tree)
            out = work / "wheels"
            home = work / "home"
            home.mkdir()
            command = [
                python or sys.executable,
                "-m",
                "pip",
                "wheel",
                "--no-deps",
                "--no-build-isolation",
                "--no-index",
                "--wheel-dir",
                str(out),
                str(tree),
            ]
            try:
                done = subprocess.run(
                    command,
                    capture_output=True,
                    text=True,
                    timeout=BUILD_TIMEOUT_S,
                    env=_build_environment(home, history.commit_time(sha)),
                    cwd=work,
                )
            except subprocess.TimeoutExpired:
                raise CommitBuildError(f"Liger at {sha[:12]} did not build within {BUILD_TIMEOUT_S:.0f} s") from None
            if done.returncode != 0:
                tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-_TAIL_LINES:])
                hint = (
                    " (the build interpreter lacks the wheel builder: install setuptools>=70.1, or wheel, into "
                    f"{command[0]})"
                    if "invalid command 'bdist_wheel'" in tail
                    else ""
                )
                raise CommitBuildError(f"Liger at {sha[:12]} does not build{hint}:\n{tail}")
            wheels = sorted(out.glob("*.whl"))
            if len(wheels) != 1 or not wheels[0].name.startswith("liger_kernel-"):
                raise CommitBuildError(
                    f"Liger at {sha[:12]} built {[w.name for w in wheels]}, not one liger_kernel wheel"
                )
            if target.exists():
                shutil.rmtree(target)  # an interrupted earlier build
            target.mkdir()
            wheel = target / wheels[0].name
            shutil.move(str(wheels[0]), wheel)
        digest, version = _file_digest(wheel), _wheel_version(wheel)
        (target / MARKER).write_text(
            json.dumps(
                {"commit": sha, "wheel": wheel.name, "version": version, "digest": digest}, indent=2, sort_keys=True
            )
        )
    return CommitBuild(sha, wheel, version, digest, False, time.monotonic() - started)


def _cached(target: Path, sha: str) -> tuple[Path, str, str] | None:
    """(wheel, version, digest) of a finished build of `sha` in the cache; None when there is none (or
    only a half-built one). A wheel whose digest is not its marker's is refused, never installed."""
    marker = target / MARKER
    if not marker.is_file():
        return None
    try:
        facts = json.loads(marker.read_text())
        wheel = target / str(facts["wheel"])
        version, digest = str(facts["version"]), str(facts["digest"])
    except (ValueError, KeyError, TypeError):
        return None
    if facts.get("commit") != sha or "/" in str(facts["wheel"]) or not wheel.is_file():
        return None
    found = _file_digest(wheel)
    if found != digest:
        raise CommitBuildError(
            f"the cached build of Liger at {sha[:12]} ({wheel}) is not the wheel that was built ({found}, built "
            f"{digest}); remove {target} to rebuild it"
        )
    return wheel, version, digest


def harness_at(history: LigerSourceHistory, commit: str, dest: Path | str) -> Path:
    """``benchmark/`` (and ``test/``, where the commit has it) of `commit`, extracted at `dest`: a release
    root a sweep runs (`SweepRequest.release`). `dest` must not exist yet or be empty."""
    sha = resolve_commit(history, commit)
    root = Path(dest)
    root.mkdir(parents=True, exist_ok=True)
    if any(root.iterdir()):
        raise ValueError(f"{root} is not empty: a harness is extracted into a fresh directory")
    with tempfile.TemporaryDirectory(prefix="harness-") as scratch:
        archive = history.archive(sha, Path(scratch) / "harness.tar", HARNESS_PATHS)
        _extract(archive, root)
    if not (root / "benchmark" / "scripts").is_dir():
        raise SourceHistoryError(f"--liger-git {history.path}: {sha[:12]} has no benchmark/scripts to run")
    return root
