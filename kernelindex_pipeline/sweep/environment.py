"""The Python environment a release's benchmark scripts run in, one per Liger version, cached.

A virtual environment with `--system-site-packages` over a base interpreter that already has the GPU
stack: the host's CUDA builds of torch and triton are reused, never downloaded (they are gigabytes and
must match the driver). Into it go the release's own `liger-kernel==V` (without dependencies: its only
ones are torch and triton) and the third-party modules the scripts import at module level that the base
lacks (e.g. transformers), with the version range the release itself declares for them where it does.

Offline hosts pass a wheel directory: pip then runs with `--no-index --find-links <dir>`.

The cache key is (Liger version, base interpreter, wheel directory and its file names, extra
requirements); a finished environment carries a marker file, written last, so a half-built one is
rebuilt, never reused. Concurrent sweeps on one host serialise on a lock file per key.

Environment variables are allowlisted (`SCRIPT_ENV_ALLOWLIST`, `SWEEP_ENV_ALLOWLIST`): the scripts are
third-party code and get only what they need to find the GPU stack, never the catalogue URL or any
other credential of the host; the sweep process itself restarts with its own allowlist
(`restart_with_sweep_environment`) so that no secret sits in its /proc/<pid>/environ either.

The module's last part is the sweep's ExecutionEnvironment: which host facts are its identity
(`environment_identity`, `ENVIRONMENT_IDENTITY_FIELDS`) and which are labels (`environment_labels`,
`L2_LABEL` among them), and the project versions a sweep measured. Why: docs/decisions/0004-environment-identity-and-labels.md.
"""

from __future__ import annotations

import ast
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from kernelindex_pipeline.home import cache_root
from kernelindex_pipeline.liger.measured_rows import L2_LABEL

from .outcomes import ConfigurationError, EnvironmentBuildError

MARKER = "kernelindex-environment.json"
# Never installed by us: the host provides them (CUDA builds).
HOST_PROVIDED = frozenset({"torch", "triton"})
# Import name -> distribution name where they differ.
DISTRIBUTION_OF_MODULE = {
    "yaml": "PyYAML",
    "sklearn": "scikit-learn",
    "PIL": "Pillow",
    "cv2": "opencv-python",
    "megatron": "megatron-core",
}
PIP_TIMEOUT_S = 1800

# --- environment variables --------------------------------------------------------------------------
# What a benchmark script may see of our environment: these names (and LC_*), nothing else. Anything
# not listed (KERNELINDEX_CATALOGUE_URL, cloud keys, HF_TOKEN, PIP_INDEX_URL with its credentials,
# DAGSTER_PIPES_*, LIGER_BENCH_* redirections, PYTHONHOME, VIRTUAL_ENV) never reaches it. To let a new
# variable through, add it here with the reason; `script_environment` sets TZ, PYTHONUNBUFFERED and
# PYTHONPATH itself, and a request's `extra_env` (operator configuration) is added on top.
SCRIPT_ENV_ALLOWLIST = frozenset(
    {
        "PATH",  # python, nvidia-smi
        "HOME",
        "USER",
        "LOGNAME",  # per-user caches (~/.triton, ~/.cache/torch)
        "LANG",
        "LANGUAGE",
        "TERM",
        "TMPDIR",
        "PYTHONPATH",  # some images reach their torch build through it (kept after the request's paths)
        "LD_LIBRARY_PATH",  # CUDA libraries outside the loader's default path
        "CUDA_HOME",
        "CUDA_PATH",
        "CUDA_VISIBLE_DEVICES",
        "CUDA_DEVICE_ORDER",
        "CUDA_MODULE_LOADING",
        "NVIDIA_VISIBLE_DEVICES",
        "NVIDIA_DRIVER_CAPABILITIES",
        "TRITON_CACHE_DIR",
        "TRITON_HOME",  # compiled-kernel cache
        "TORCH_HOME",
        "TORCHINDUCTOR_CACHE_DIR",
        "PYTORCH_CUDA_ALLOC_CONF",
        "XDG_CACHE_HOME",
        "HF_HOME",
        "HF_HUB_CACHE",
        "HF_HUB_OFFLINE",
        "TRANSFORMERS_OFFLINE",
    }
)
SCRIPT_ENV_PREFIXES = ("LC_",)  # locale categories
# The sweep process additionally builds environments and fetches releases (pip, proxies, CA bundles,
# the release cache) and talks to Dagster Pipes; the scripts get none of that.
SWEEP_ENV_ALLOWLIST = SCRIPT_ENV_ALLOWLIST | {
    "KERNELINDEX_CACHE_DIR",
    # sweep/artifact_store.py: where the evidence goes. For object storage only the *location* of
    # credentials passes (a file, a profile, a web-identity token file as on Kubernetes), never a key.
    "KERNELINDEX_ARTIFACT_STORE",
    "KERNELINDEX_ARTIFACT_BASE_URL",
    "AWS_ENDPOINT_URL",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_PROFILE",
    "AWS_CONFIG_FILE",
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_ROLE_ARN",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "FSSPEC_S3_ENDPOINT_URL",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "PIP_CERT",
}
SWEEP_ENV_PREFIXES = (*SCRIPT_ENV_PREFIXES, "PIP_", "DAGSTER_PIPES_")


def allowlisted(env: Mapping[str, str], names: frozenset[str] | set[str], prefixes: tuple[str, ...]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k in names or k.startswith(prefixes)}


def script_environment(
    base: Mapping[str, str],
    *,
    extra_pythonpath: Iterable[str | Path] = (),
    extra_env: Mapping[str, str] | None = None,
    python: Path | None = None,
) -> dict[str, str]:
    """The environment of the scripts (and of the host probe, which runs in theirs): the allowlisted
    part of `base`, then `extra_env`; TZ=UTC, unbuffered output; PYTHONPATH = `extra_pythonpath`, then
    the host's own; the environment's interpreter first on PATH when `python` is given."""
    env = allowlisted(base, SCRIPT_ENV_ALLOWLIST, SCRIPT_ENV_PREFIXES)
    env.update(extra_env or {})
    # Upstream timestamps are time.strftime() local time; ours are UTC by construction.
    env["TZ"] = "UTC"
    env["PYTHONUNBUFFERED"] = "1"
    paths = [str(Path(p).resolve()) for p in extra_pythonpath] + [
        p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p
    ]
    if paths:
        env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    if python is not None:
        env["PATH"] = os.pathsep.join([str(python.parent), env.get("PATH", "")])
    return env


def restart_with_sweep_environment(module: str, argv: list[str]) -> None:
    """Re-execute `python -m module argv` with only the sweep allowlist of this process's environment,
    unless that is all it has already. Dropping variables from os.environ is not enough: the kernel
    keeps the initial environment in /proc/<pid>/environ, which a script of the same user can read.
    Same process id, same open files (Dagster Pipes keeps working); `exec` does not return."""
    allowed = allowlisted(os.environ, SWEEP_ENV_ALLOWLIST, SWEEP_ENV_PREFIXES)
    if allowed != dict(os.environ):
        os.execve(sys.executable, [sys.executable, "-m", module, *argv], allowed)


# The installed version of a distribution (None: not installed), as the probe scripts that run in
# other interpreters define it (this one, and host.py's host probe).
PROBE_VERSION_FUNCTION = r"""
import importlib.metadata as md
def version(name):
    try:
        return md.version(name)
    except Exception:
        return None
"""

_BASE_INFO_SCRIPT = (
    PROBE_VERSION_FUNCTION
    + r"""
import json, site, sys, sysconfig
paths = site.getsitepackages() + [sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
print(json.dumps({
    "executable": sys.executable,
    "version": "%d.%d.%d" % sys.version_info[:3],
    "site_paths": list(dict.fromkeys(paths)),
    "torch": version("torch"),
    "triton": version("triton"),
    "pip": version("pip"),
}))
"""
)
_MISSING_MODULES_SCRIPT = (
    "import importlib.util, json, sys; "
    "print(json.dumps([m for m in sys.argv[1:] if importlib.util.find_spec(m) is None]))"
)


@dataclass
class ScriptEnvironment:
    python: Path  # the interpreter the scripts run with
    path: Path  # the virtual environment
    key: str
    liger_version: str
    base_python: str
    reused: bool
    seconds: float  # time spent finding or building it
    offline: bool
    installed: list[str] = field(default_factory=list)  # requirements pip installed into it

    def to_dict(self) -> dict:
        data = asdict(self)
        data["python"] = str(self.python)
        data["path"] = str(self.path)
        return data


def default_environment_cache_dir() -> Path:
    """`<cache>/envs`, where <cache> is $KERNELINDEX_CACHE_DIR or ~/.cache/kernelindex-pipeline (the release cache's rule)."""
    return cache_root() / "envs"


def _local_module_names(scripts_dir: Path) -> set[str]:
    """Modules the scripts find next to them or at the release root (utils, benchmark_model_configs, test, ...)."""
    names = {p.stem for p in scripts_dir.glob("*.py")}
    release_root = scripts_dir.parent.parent
    for entry in release_root.iterdir() if release_root.is_dir() else ():
        names.add(entry.stem if entry.suffix == ".py" else entry.name)
    return names


def scan_script_imports(scripts_dir: Path | str) -> set[str]:
    """Top-level third-party modules the benchmark scripts import unconditionally (at module level).

    Imports inside functions or try blocks are optional back ends (cutlass, cuda.tile, ...) and are
    left out; so are the standard library and the release's own modules.
    """
    scripts_dir = Path(scripts_dir)
    local = _local_module_names(scripts_dir)
    found: set[str] = set()
    for script in sorted(scripts_dir.glob("*.py")):
        try:
            tree = ast.parse(script.read_text(encoding="utf-8"), filename=str(script))
        except SyntaxError:
            continue  # the run classifies that script as failed; it needs nothing installed
        for node in tree.body:
            if isinstance(node, ast.Import):
                found.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return {m for m in found if m not in sys.stdlib_module_names and m not in local and m != "__future__"}


def _declared_requirements(release_root: Path) -> dict[str, Requirement]:
    """Requires-Dist lines of the release's PKG-INFO (any extra), by canonical distribution name."""
    pkg_info = release_root / "PKG-INFO"
    declared: dict[str, Requirement] = {}
    if not pkg_info.is_file():
        return declared
    for line in pkg_info.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("Requires-Dist:"):
            try:
                requirement = Requirement(line.split(":", 1)[1].strip())
            except InvalidRequirement:
                continue
            declared.setdefault(canonicalize_name(requirement.name), requirement)
    return declared


def script_requirements(scripts_dir: Path | str) -> dict[str, str]:
    """Module -> pip requirement for what the scripts import beyond the host's GPU stack and liger_kernel.

    The version range is the one the release declares for that distribution (e.g. its dev extra's
    `transformers>=5.0.0`), else none.
    """
    scripts_dir = Path(scripts_dir)
    declared = _declared_requirements(scripts_dir.parent.parent)
    requirements = {}
    for module in sorted(scan_script_imports(scripts_dir) - HOST_PROVIDED - {"liger_kernel"}):
        distribution = DISTRIBUTION_OF_MODULE.get(module, module)
        known = declared.get(canonicalize_name(distribution))
        requirements[module] = f"{known.name}{known.specifier}" if known else distribution
    return requirements


def _run(command: list[str], *, what: str, timeout: float = PIP_TIMEOUT_S, env: dict | None = None) -> str:
    try:
        completed = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired as error:
        raise EnvironmentBuildError(f"{what} did not finish within {timeout:.0f} s: {' '.join(command)}") from error
    if completed.returncode != 0:
        tail = "\n".join((completed.stdout + completed.stderr).strip().splitlines()[-15:])
        raise EnvironmentBuildError(f"{what} failed (exit code {completed.returncode}):\n{tail}")
    return completed.stdout


def base_interpreter_info(base_python: str) -> dict:
    out = _run([base_python, "-c", _BASE_INFO_SCRIPT], what=f"probing the base interpreter {base_python}", timeout=120)
    return json.loads(out)


def _wheel_listing(wheel_dir: Path) -> list[str]:
    return sorted(p.name for p in wheel_dir.iterdir() if p.is_file())


def _key(
    liger_version: str,
    base: dict,
    wheel_dir: Path | None,
    requirements: dict[str, str],
    extras: tuple[str, ...] = (),
    liger_wheel_digest: str | None = None,
) -> str:
    material = {
        **({"liger_extras": list(extras)} if extras else {}),  # (absent: the keys of environments built before extras)
        **({"liger_wheel": liger_wheel_digest} if liger_wheel_digest else {}),  # a build of one commit
        "liger_version": liger_version,
        "base_python": os.path.realpath(base["executable"]),
        "base_version": base["version"],
        "wheel_dir": str(wheel_dir) if wheel_dir else None,
        "wheels": _wheel_listing(wheel_dir) if wheel_dir else None,
        "requirements": requirements,
    }
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()[:16]


def _venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def _pip(pip: list[str], wheel_dir: Path | None, args: list[str], constraints: Path | None) -> None:
    command = [*pip, "install", "--disable-pip-version-check", "--no-input", "--progress-bar", "off"]
    if wheel_dir:
        command += ["--no-index", "--find-links", str(wheel_dir)]
    if constraints:
        command += ["--constraint", str(constraints)]
    where = f"from the wheel directory {wheel_dir}" if wheel_dir else "from the package index"
    _run(command + args, what=f"pip install {' '.join(args)} ({where})")


def _pip_supports_python_option(pip_version: str | None) -> bool:
    try:
        return pip_version is not None and Version(pip_version) >= Version("22.3")
    except InvalidVersion:
        return False


def _create_venv(venv: Path, base_python: str, base: dict) -> list[str]:
    """Create the venv; return the pip command that installs into it.

    With pip >= 22.3 in the base interpreter the venv gets no pip of its own and the base's pip installs
    into it (`pip --python`): that saves the seconds `ensurepip` takes, and works on system Pythons that
    cannot bootstrap pip (Debian's without python3-venv). Otherwise the venv gets its own pip.
    """
    python = _venv_python(venv)
    if _pip_supports_python_option(base.get("pip")):
        _run(
            [base_python, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)],
            what=f"creating the virtual environment {venv}",
        )
        return [base_python, "-m", "pip", "--python", str(python)]
    _run(
        [base_python, "-m", "venv", "--system-site-packages", str(venv)],
        what=f"creating the virtual environment {venv}",
    )
    return [str(python), "-m", "pip"]


def prepare_environment(
    liger_version: str,
    *,
    scripts_dir: Path | str,
    cache_dir: Path | str | None = None,
    base_python: str | None = None,
    wheel_dir: Path | str | None = None,
    before_build: Callable[[], None] | None = None,
    liger_extras: Iterable[str] = (),
    liger_wheel: Path | str | None = None,
) -> ScriptEnvironment:
    """Find or build the environment for `liger-kernel==liger_version` and the scripts in `scripts_dir`.

    `liger_extras` (e.g. ["cutedsl"]): Liger's optional implementations, installed as
    `liger-kernel[<extras>]==<version>` with the host's torch/triton pinned (its own environment key).

    `liger_wheel`: a wheel of Liger built at one commit (liger/commit_build.py), installed instead of the
    release; its sha256 is part of the key, so each commit gets its own environment, reused by the next
    bisection over it. Its version must be `liger_version`.

    `before_build` runs only when a build is needed, before it starts (the runner checks the GPU there).
    """
    started = time.monotonic()
    base_python = base_python or sys.executable
    wheel_dir = Path(wheel_dir).resolve() if wheel_dir else None
    if wheel_dir and not wheel_dir.is_dir():
        raise EnvironmentBuildError(f"wheel directory {wheel_dir} does not exist; pass a directory of .whl files")
    cache_dir = Path(cache_dir) if cache_dir else default_environment_cache_dir()
    cache_dir.mkdir(parents=True, exist_ok=True)

    base = base_interpreter_info(base_python)
    requirements = script_requirements(scripts_dir)
    extras = tuple(sorted(set(liger_extras)))
    bad = [e for e in extras if not re.fullmatch(r"[a-z0-9]+(?:[-_][a-z0-9]+)*", e)]
    if bad:
        raise ConfigurationError(
            f"liger extras {bad} are not extra names (lowercase letters, digits, '-', '_'; e.g. cutedsl)"
        )
    wheel = Path(liger_wheel).resolve() if liger_wheel else None
    if wheel is not None and not wheel.is_file():
        raise ConfigurationError(f"liger wheel {wheel} does not exist (build it with liger/commit_build.py)")
    wheel_digest = "sha256:" + hashlib.sha256(wheel.read_bytes()).hexdigest() if wheel else None
    key = _key(liger_version, base, wheel_dir, requirements, extras, wheel_digest)
    venv = cache_dir / f"liger-{liger_version}-py{base['version']}-{key}"

    def environment(reused: bool, installed: list) -> ScriptEnvironment:
        return ScriptEnvironment(
            python=_venv_python(venv),
            path=venv,
            key=key,
            liger_version=liger_version,
            base_python=base_python,
            reused=reused,
            seconds=time.monotonic() - started,
            offline=wheel_dir is not None,
            installed=installed,
        )

    with open(cache_dir / f"{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one builder per key; the others wait and then reuse
        marker = venv / MARKER
        if marker.is_file() and _venv_python(venv).exists():
            return environment(True, json.loads(marker.read_text()).get("installed", []))
        if before_build is not None:
            before_build()
        if venv.exists():
            shutil.rmtree(venv)  # an interrupted build
        installed = _build(venv, liger_version, base, base_python, wheel_dir, requirements, extras, wheel)
        marker.write_text(
            json.dumps(
                {
                    "liger_version": liger_version,
                    "base_python": base_python,
                    "base": base,
                    "wheel_dir": str(wheel_dir) if wheel_dir else None,
                    "installed": installed,
                    "built_seconds": round(time.monotonic() - started, 3),
                },
                indent=2,
            )
        )
    return environment(False, installed)


def _build(
    venv: Path,
    liger_version: str,
    base: dict,
    base_python: str,
    wheel_dir: Path | None,
    requirements: dict[str, str],
    extras: tuple[str, ...] = (),
    liger_wheel: Path | None = None,
) -> list[str]:
    pip = _create_venv(venv, base_python, base)
    python = _venv_python(venv)
    # --system-site-packages reaches the base's *installation*; when the base is itself a virtual
    # environment its own site-packages (where torch may live) need this .pth line as well.
    site_packages = Path(
        _run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            what="locating site-packages",
        ).strip()
    )
    (site_packages / "kernelindex-base-interpreter.pth").write_text("\n".join(base["site_paths"]) + "\n")

    # Pin the host's torch/triton so that no requirement can make pip replace (download) them.
    constraints = None
    pins = [f"{name}=={base[name]}" for name in sorted(HOST_PROVIDED) if base.get(name)]
    if pins:
        constraints = venv / "host-constraints.txt"
        constraints.write_text("\n".join(pins) + "\n")

    if liger_wheel is not None:
        installed = [f"liger-kernel=={liger_version} from {liger_wheel.name}"]
        _pip(pip, wheel_dir, ["--no-deps", str(liger_wheel)], None)
    else:
        installed = [f"liger-kernel=={liger_version}"]
        _pip(pip, wheel_dir, ["--no-deps", installed[0]], None)
    if extras:  # the extras' own requirements only (liger-kernel itself is in place), host torch/triton pinned
        with_extras = (
            f"{liger_wheel}[{','.join(extras)}]"
            if liger_wheel is not None
            else f"liger-kernel[{','.join(extras)}]=={liger_version}"
        )
        _pip(pip, wheel_dir, [with_extras], constraints)
        installed.append(with_extras)

    missing = json.loads(
        _run([str(python), "-c", _MISSING_MODULES_SCRIPT, *requirements], what="checking the scripts' imports")
    )
    extra = [requirements[module] for module in missing]
    if extra:
        _pip(pip, wheel_dir, extra, constraints)
        installed += extra

    found = _run(
        [str(python), "-c", "import importlib.metadata as m; print(m.version('liger-kernel'))"],
        what="reading the installed liger-kernel version",
    ).strip()
    if found != liger_version:
        raise EnvironmentBuildError(f"{venv} has liger-kernel {found} instead of {liger_version}")
    return installed


# --- ExecutionEnvironment identity ------------------------------------------------------------------
# Which facts of a benchmark host make "the same conditions" (issue 18). KernelIndex's comparison cohort
# is keyed on the ExecutionEnvironment's spec digest, so everything in the spec splits cohorts: only
# facts that change what a kernel measures belong there. The rest is a label (metadata.labels, never
# digested): shown, searchable, and free to differ between two hosts of one GPU type.
#
# identity (ExecutionEnvironment.spec)        label (ExecutionEnvironment.metadata.labels)
#   GPU: vendor, product, architecture          OS kernel build (6.8.0-45-generic vs -47)
#     (spec.hardware, from the GPU catalogue)    operating system release (Ubuntu 22.04.4 vs .5)
#   driver major (550 of 550.54.15)             hostname
#   CUDA (the toolkit torch was built with)     exact driver (550.54.15 vs 550.90.07)
#   torch version                               Python, transformers (they run the baseline, not
#   triton version                                the kernel; the baseline's revision pins them)
#   Liger's optional backends installed
#     (nvidia-cutlass-dsl, apache-tvm-ffi,
#     cuda-tile, liger-cute-kernels: which
#     kernel an unpinned op resolves to and how
#     it compiles; sweep/backends.py)
#                                               power limit, persistence mode, ECC, clocks
#                                                 (nvidia-smi state an operator changes freely)
#                                               L2 size the device reports (the GPU decides it)
ENVIRONMENT_IDENTITY_FIELDS = ("hardware", "driver major", "cudaToolkit", "torch", "triton", "liger extras")
ENVIRONMENT_LABEL_FIELDS = (
    "os_kernel",
    "operating_system",
    "hostname",
    "driver",
    "python",
    "transformers",
    "power_limit_watts",
    "persistence_mode",
    "ecc_enabled",
    "clocks_locked",
    L2_LABEL,
)
_LABEL_LIMIT = 200  # KernelIndex's metadata.labels value limit


def driver_major(driver: str | None) -> str | None:
    """The driver's major version ("550" of "550.54.15"), the part that decides which CUDA runs."""
    if not driver:
        return None
    major = driver.strip().split(".", 1)[0]
    return major if major.isdigit() else None


def environment_identity(capture) -> dict:
    """ExecutionEnvironment.spec.software of a host capture (sweep.host.HostCapture): identity only."""
    software = {
        "driver": driver_major(capture.driver),
        "cudaToolkit": capture.cuda_runtime,
        "framework": {"name": "torch", "version": capture.torch[:100]} if capture.torch else None,
        "libraries": {
            **({"triton": capture.triton[:100]} if capture.triton else {}),
            **{
                name.replace("-", "_"): str(v)[:100]
                for name, v in sorted((getattr(capture, "liger_extras", None) or {}).items())
                if v
            },
        }
        or None,
    }
    return {key: value for key, value in software.items() if value}


def environment_labels(capture, settings: dict | None = None, hostname: str | None = None) -> dict[str, str]:
    """ExecutionEnvironment.metadata.labels: the host's facts that are not identity (strings, cut to 200)."""
    settings = settings or {}
    labels = {
        "os_kernel": capture.kernel,
        "operating_system": capture.operating_system,
        "hostname": hostname,
        "driver": capture.driver,
        "python": capture.python,
        "transformers": capture.transformers,
        "power_limit_watts": settings.get("powerLimitWatts"),
        "persistence_mode": settings.get("persistenceMode"),
        "ecc_enabled": settings.get("eccEnabled"),
        "clocks_locked": settings.get("clocksLocked"),
        L2_LABEL: getattr(capture, "l2_cache_bytes", None),
    }
    return {
        key: (
            str(value).lower() if isinstance(value, bool) else f"{value:g}" if isinstance(value, float) else str(value)
        )[:_LABEL_LIMIT]
        for key, value in labels.items()
        if value is not None and value != ""
    }


def release_tag(version: str | None) -> str | None:
    """The git tag of a final release ("2.5.1+cu124" -> "v2.5.1"; Liger, torch and transformers tag
    releases as v<version>); None for development and pre-releases, which have no tag to name."""
    try:
        parsed = Version(version or "")
    except InvalidVersion:
        return None
    if parsed.is_devrelease or parsed.is_prerelease:
        return None
    return f"v{parsed.public}"


def measured_project_versions(liger_version: str, capture, liger_commit: str | None = None) -> dict[str, str]:
    """Project slug (the provider catalogue's) -> the exact revision a sweep measured: the Liger release
    it ran (the commit, for a build of one: a bisection step), and the torch and transformers releases its
    baselines ran on."""
    versions = {
        "liger-kernel": liger_commit or release_tag(liger_version),
        "pytorch": release_tag(capture.torch),
        "transformers": release_tag(capture.transformers),
    }
    return {project: tag for project, tag in versions.items() if tag}
