#!/usr/bin/env python3
"""GPU check: sweep a small fixed set of Liger kernels for one or more releases on this NVIDIA host through
the real execute path, build and validate the records, publish them into one temporary catalogue, run the
regression detector across the releases, build the report, print a summary and write the evidence:

    <evidence>/summary.txt, summary.json          every release: rows, runs, outcomes, coverage, sentinel,
                                                  raw samples per run; the detector's counts
    <evidence>/regressions.json, regressions.md   the detector's output over the releases
    <evidence>/report/                            the site (reporting/site.py) of those kernels
    <evidence>/<version>/                         the CSV, environment capture, sweep result, records,
                                                  logs.tar.gz and samples.tar.gz (raw-sample artifacts)

Run it as `scripts/gpu_check` (see --help); --budget (default 480 s) bounds the whole check: each script
gets a share of the time left.

Offline hosts: `--wheels DIR` installs everything from DIR (pip --no-index --find-links DIR); the Liger
sdist may sit in DIR too (liger_kernel-<V>.tar.gz). Fill DIR on a machine with network with
`scripts/gpu_check --download-wheels DIR --liger-version 0.8.5,0.8.4 --python-version 3.12`.

Only the standard library is imported at the top: on a bare GPU host this script first makes a virtual
environment (over the host's interpreter, so torch stays the host's) with what the record path needs,
then re-runs itself in it.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# Two releases on one GPU, so that the regression detector has a cross-version comparison.
DEFAULT_VERSIONS = "0.8.5,0.8.4"
# The fixed subset of issue 12: norms, an activation, the two cross entropies and one more loss. Rows in
# a format the catalogue's binding rules do not know show up as skipped (unknown config) in the import
# report and the coverage table, never silently.
DEFAULT_KERNELS = ["rms_norm", "layer_norm", "swiglu", "cross_entropy", "fused_linear_cross_entropy", "kl_div"]
DEFAULT_SCRIPT_TIMEOUT_S = 100
# The whole check (all releases) stays within --budget seconds: each script gets a share of what is left.
DEFAULT_BUDGET_S = 480.0
RESERVE_PER_VERSION_S = 30.0  # environment, two sentinel runs, records and publication of one release
MIN_SCRIPT_TIMEOUT_S = 15.0
# What the record path (records/, liger/, catalogue/, sweep/) imports beyond the standard library;
# Dagster is not needed here. Module -> requirement.
PIPELINE_REQUIREMENTS = {
    "yaml": "PyYAML>=6.0",
    "rfc8785": "rfc8785>=0.1.4",
    "packaging": "packaging>=23",
    "pydantic": "pydantic>=2.7",
    "sqlalchemy": "SQLAlchemy>=2.0",
    "pandas": "pandas>=2.2",
    "numpy": "numpy>=1.26",
}
# What a CUDA torch image already has: never downloaded for offline hosts.
HOST_IMAGE_MODULES = ("pandas", "packaging", "yaml", "numpy")
BOOTSTRAPPED = "KERNELINDEX_GPU_CHECK_BOOTSTRAPPED"
BASE_PYTHON = "KERNELINDEX_GPU_CHECK_BASE_PYTHON"


def log(message: str) -> None:
    print(f"[gpu_check {datetime.now(UTC):%H:%M:%S}] {message}", file=sys.stderr, flush=True)


# --- bootstrap ----------------------------------------------------------------------------------------
def missing_pipeline_modules() -> list[str]:
    return [module for module in PIPELINE_REQUIREMENTS if importlib.util.find_spec(module) is None]


def pip_version_at_least(major: int, minor: int) -> bool:
    try:
        from importlib.metadata import version as installed_version

        parts = installed_version("pip").split(".")
        return (int(parts[0]), int(parts[1])) >= (major, minor)
    except Exception:
        return False


def cache_root() -> Path:
    # kernelindex_pipeline.home.cache_root's rule, restated: this runs before the package is importable.
    return Path(os.environ.get("KERNELINDEX_CACHE_DIR") or Path.home() / ".cache" / "kernelindex-pipeline")


def bootstrap(args: argparse.Namespace, argv: list[str]) -> None:
    """Make (or reuse) a venv over this interpreter with the record path's dependencies; re-exec in it."""
    missing = missing_pipeline_modules()
    if (not missing and not args.bootstrap) or os.environ.get(BOOTSTRAPPED):
        return
    version = "{}.{}".format(*sys.version_info[:2])
    venv = Path(args.bootstrap_dir) if args.bootstrap_dir else cache_root() / f"gpu-check-venv-py{version}"
    python = venv / "bin" / "python"
    log(f"record path needs {', '.join(missing) or 'nothing new'}: preparing {venv}")
    pip = [str(python), "-m", "pip"]
    if pip_version_at_least(22, 3):
        pip = [sys.executable, "-m", "pip", "--python", str(python)]  # no ensurepip: seconds saved
    if not python.exists():
        without_pip = ["--without-pip"] if pip[0] == sys.executable else []
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", *without_pip, str(venv)], check=True)
        # When this interpreter is itself a venv (e.g. /opt/torch/.venv), its site-packages hold torch:
        # --system-site-packages alone would not reach them.
        site_packages = subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        import site
        import sysconfig

        paths = list(
            dict.fromkeys(site.getsitepackages() + [sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
        )
        Path(site_packages, "kernelindex-base-interpreter.pth").write_text("\n".join(paths) + "\n")
    # Pin what the host already has (torch, numpy, ...) so that pip never replaces it.
    pins = []
    for name in ("torch", "triton", "numpy", "typing-extensions"):
        try:
            from importlib.metadata import version as installed_version

            pins.append(f"{name}=={installed_version(name)}")
        except Exception:
            pass
    constraints = venv / "host-constraints.txt"
    constraints.write_text("\n".join(pins) + "\n")
    command = [*pip, "install", "--disable-pip-version-check", "--no-input", "-q", "--constraint", str(constraints)]
    if args.wheels:
        command += ["--no-index", "--find-links", str(Path(args.wheels).resolve())]
    subprocess.run(command + list(PIPELINE_REQUIREMENTS.values()), check=True)
    env = dict(os.environ)
    env[BOOTSTRAPPED] = "1"
    env.setdefault(BASE_PYTHON, sys.executable)
    os.execve(str(python), [str(python), str(Path(__file__).resolve()), *argv], env)


def extra_requirements(metadata_text: str, extras: list[str]) -> list[str]:
    """The requirements a wheel's METADATA (or an sdist's PKG-INFO) states for `extras`
    (`Requires-Dist: nvidia-cutlass-dsl>=4.6.0; extra == "cutedsl"` -> `nvidia-cutlass-dsl>=4.6.0`)."""
    from email.parser import HeaderParser

    from packaging.requirements import InvalidRequirement, Requirement

    found = []
    for line in HeaderParser().parsestr(metadata_text).get_all("Requires-Dist") or []:
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            continue
        if requirement.marker is not None and any(requirement.marker.evaluate({"extra": extra}) for extra in extras):
            requirement.marker = None
            found.append(str(requirement))
    return found


def _wheel_metadata(wheel: Path) -> str:
    import zipfile

    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        return archive.read(name).decode("utf-8", errors="replace")


def download_wheels(
    dest: Path,
    liger_versions: list[str],
    python_version: str,
    with_transformers: bool,
    liger_extras: list[str] | None = None,
) -> int:
    """On a machine with network: the wheels (and the Liger sdist) an offline GPU host needs (with the
    requirements of `liger_extras`, as each release's metadata states them)."""
    dest.mkdir(parents=True, exist_ok=True)
    platforms = []
    for tag in (
        "manylinux_2_28_x86_64",
        "manylinux_2_27_x86_64",
        "manylinux_2_17_x86_64",
        "manylinux2014_x86_64",
        "manylinux1_x86_64",
    ):
        platforms += ["--platform", tag]
    binary = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--disable-pip-version-check",
        "--only-binary=:all:",
        "--python-version",
        python_version,
        "--implementation",
        "cp",
        *platforms,
        "-d",
        str(dest),
    ]
    # liger-kernel without its torch/triton: the host has them.
    for liger_version in liger_versions:
        subprocess.run(binary + ["--no-deps", f"liger-kernel=={liger_version}"], check=True)
    requirements = [r for m, r in PIPELINE_REQUIREMENTS.items() if m not in HOST_IMAGE_MODULES]
    for liger_version in liger_versions if liger_extras else ():
        for wheel in dest.glob(f"liger_kernel-{liger_version}-*.whl"):
            requirements += extra_requirements(_wheel_metadata(wheel), liger_extras)
    if with_transformers:
        requirements.append("transformers")
    # With dependencies; pip resolves for the target Python/platform.
    subprocess.run(binary + requirements, check=True)
    # The release itself (its benchmark scripts), through the pipeline's own content-addressed fetch.
    sys.path.insert(0, str(REPO))
    from kernelindex_pipeline.liger.release import fetch_release

    for liger_version in liger_versions:
        artifact = fetch_release(liger_version)
        shutil.copyfile(artifact.path, dest / Path(artifact.path).name)
    for path in sorted(dest.glob("*")):
        print(path.name)
    return 0


# --- the check ------------------------------------------------------------------------------------------
def find_release(args: argparse.Namespace, version: str) -> str | None:
    if args.release and len(versions_of(args)) == 1:
        return args.release
    for directory in (args.release_dir, args.wheels):
        for name in (f"liger_kernel-{version}.tar.gz", f"liger-kernel-{version}.tar.gz"):
            if directory and (Path(directory) / name).is_file():
                return str(Path(directory) / name)
    return None  # fetched from the package index


def versions_of(args: argparse.Namespace) -> list[str]:
    return [v.strip() for v in args.liger_version.split(",") if v.strip()]


def catalogue_for(device_name: str, compute_capability: str | None):
    """The default import catalogue; a GPU missing from its hardware table gets facts from the probe
    (vendor nvidia, product = the CUDA name, architecture sm_<cc>) so that its rows make records."""
    import dataclasses

    from kernelindex_pipeline.liger.catalogue import default_catalogue

    catalogue = default_catalogue()
    if device_name in catalogue.hardware:
        return catalogue, None
    facts = {
        "vendor": "nvidia",
        "product": device_name,
        "architecture": "sm_" + (compute_capability or "0.0").replace(".", ""),
    }
    note = f"{device_name} is not in the GPU catalogue (liger-providers.yaml hardware); hardware facts taken from the probe: {facts}"
    return dataclasses.replace(catalogue, hardware={**catalogue.hardware, device_name: facts}), note


def _tar(path: Path, root: Path, files: list[Path]) -> None:
    with tarfile.open(path, "w:gz") as archive:
        for file in files:
            archive.add(file, arcname=f"{root.name}/{file.relative_to(root)}")


def write_version_evidence(directory: Path, result, imported, lines: list[str]) -> None:
    """<evidence>/<version>/: the CSV, the environment capture, the sweep result (outcomes, coverage,
    sentinel), the records, the logs and the raw-sample artifacts (one tarball each)."""
    directory.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(result.csv_path, directory / "all_benchmark_data.csv")
    logs_dir = Path(result.work_dir) / "logs"
    environment = {
        "host": result.host,
        "software": result.software,
        "settings": result.settings,
        "environment": result.environment,
        "nvidia_smi_xml": (logs_dir / "nvidia-smi.xml").read_text()
        if (logs_dir / "nvidia-smi.xml").is_file()
        else None,
    }
    (directory / "environment.json").write_text(json.dumps(environment, indent=2, sort_keys=True))
    (directory / "sweep.json").write_text(json.dumps(result.to_dict(), indent=1, sort_keys=True))
    with (directory / "records.jsonl").open("w") as handle:
        for manifest in imported.sorted_manifests():
            handle.write(json.dumps(manifest, sort_keys=True, separators=(",", ":")) + "\n")
    # The spools (*.samples.jsonl) hold the same calls as the artifacts: left out.
    logs = [
        p
        for p in logs_dir.rglob("*")
        if p.is_file() and p.parent.name != "samples" and not p.name.endswith(".samples.jsonl")
    ]
    _tar(directory / "logs.tar.gz", logs_dir, sorted(logs))  # the rounds' folders too (round-1/, round-2/, ...)
    _tar(directory / "samples.tar.gz", logs_dir, sorted((logs_dir / "samples").glob("*.json")))
    (directory / "summary.txt").write_text("\n".join(lines) + "\n")


def parse_backends(text: str | None) -> dict[str, list[str]] | None:
    """`swiglu=nvidia-triton,nvidia-cutedsl;cross_entropy=nvidia-triton,nvidia-cutedsl` -> the sweep's backends setting."""
    if not text:
        return None
    backends = {}
    for part in text.split(";"):
        op, _, impls = part.partition("=")
        backends[op.strip()] = [name.strip() for name in impls.split(",") if name.strip()]
    return backends


def sweep_one(args, version: str, gpu: str, base_python: str, work_root: Path, timeout_s: float):
    """Sweep one release; its records built and validated (raises SweepError / InvalidRecords)."""
    from kernelindex_pipeline.liger import import_csv
    from kernelindex_pipeline.liger.normalize import MeasuredContext
    from kernelindex_pipeline.records.schema import ensure_valid
    from kernelindex_pipeline.sweep.protocol import SweepRequest
    from kernelindex_pipeline.sweep.run import run_sweep

    request = SweepRequest(
        gpu=gpu,
        liger_version=version,
        release=find_release(args, version),
        kernels=args.kernels.split(","),
        script_timeout_s=timeout_s,
        work_dir=str(work_root / version),
        env_cache_dir=args.env_cache_dir,
        wheel_dir=args.wheels,
        base_python=base_python,
        extra_pythonpath=list(args.extra_pythonpath or []),
        rounds=args.rounds,
        backends=parse_backends(args.backends),
        liger_extras=[e for e in (args.liger_extras or "").split(",") if e],
    )
    log(f"liger {version}: scripts for {args.kernels}, {args.rounds} round(s), with {timeout_s:.0f} s each at most")
    result = run_sweep(
        request,
        progress=lambda e: log(
            f"  round {e['round']} {e['variant']} [{e['index']}/{e['total']}] {e['script']}: {e['status']}, {e['rows']} rows ({e['rows_so_far']} so far), {e['seconds']:.1f} s"
        ),
    )
    catalogue, note = catalogue_for(result.host["device_name"], result.host.get("compute_capability"))
    imported = import_csv(
        result.csv_path,
        gpu=gpu,
        liger_version=version,
        measured=MeasuredContext(**result.measured_context()),
        catalogue=catalogue,
    )
    ensure_valid(imported.manifests.values())  # raises InvalidRecords naming record and field
    return result, imported, note


def raw_sample_counts(imported) -> dict:
    """Speed runs with raw samples, and the samples per run (min / median / max)."""
    import statistics

    counts = [m["spec"]["timing"]["samples"] for m in imported.runs() if "samples" in (m["spec"].get("timing") or {})]
    speed = sum(1 for m in imported.runs() if "timing" in m["spec"])
    return {
        "speed_runs": speed,
        "runs_with_raw_samples": len(counts),
        "samples_per_run": {"min": min(counts), "median": statistics.median(counts), "max": max(counts)}
        if counts
        else None,
    }


def sweep_releases(
    args: argparse.Namespace, versions: list[str], gpu: str, base_python: str, evidence: Path, started: float
):
    """Sweep, import and publish every release into one temporary catalogue, within the shared budget.

    Returns (swept, lines, notes, manifests, counts_by_kind), or None when a sweep could not run (said on stderr)."""
    from kernelindex_pipeline.catalogue.store import CatalogueStore
    from kernelindex_pipeline.sweep.backends import backend_variants
    from kernelindex_pipeline.sweep.outcomes import SweepError

    work_root = Path(tempfile.mkdtemp(prefix="kernelindex-gpu-check-"))
    store = CatalogueStore.open(f"sqlite:///{work_root / 'catalogue.sqlite'}")
    swept, lines, notes = [], [], set()
    kernels = len(args.kernels.split(","))
    # every script runs once per round and backend variant (sweep/rounds.py, backends.py)
    runs_per_script = args.rounds * max(1, len(backend_variants(parse_backends(args.backends))))
    try:
        for index, version in enumerate(versions):
            # The budget is shared: what is left, less a reserve per release for its environment, sentinel
            # and records, split over the scripts still to run.
            left = len(versions) - index
            remaining = args.budget - (time.monotonic() - started) - RESERVE_PER_VERSION_S * left
            timeout_s = max(MIN_SCRIPT_TIMEOUT_S, min(args.timeout, remaining / (kernels * runs_per_script * left)))
            try:
                result, imported, note = sweep_one(args, version, gpu, base_python, work_root, timeout_s)
            except SweepError as error:
                print(f"gpu_check: the sweep of liger {version} could not run: {error}", file=sys.stderr)
                return None
            if note:
                notes.add(note)
            published = store.publish(
                imported.manifests, partition=f"{gpu}|{version}", source=imported.snapshot, report=imported.report
            )
            present = store.present_digests(list(imported.manifests))
            report = imported.report.to_dict()
            version_lines = [
                *result.summary_lines(),
                f"records: {len(imported.manifests)} ({', '.join(f'{k} {v}' for k, v in report['records'].items())}), {len(imported.runs())} runs, schema-valid",
                f"import: {report['rowsRead']} rows read, {report['runs']} runs from rows, skipped {json.dumps(report['skipped'], sort_keys=True)}",
                f"raw samples: {json.dumps(raw_sample_counts(imported), sort_keys=True)}",
                f"catalogue (temporary SQLite): {published.summary()}",
            ]
            write_version_evidence(evidence / version, result, imported, version_lines)
            swept.append(
                {"version": version, "result": result, "imported": imported, "published": published, "present": present}
            )
            lines += version_lines
        return swept, lines, notes, list(store.manifests()), store.counts_by_kind()
    finally:
        store.close()


def version_summary(s: dict) -> dict:
    """summary.json's entry of one swept release."""
    return {
        "rows": s["result"].rows,
        "runs": len(s["imported"].runs()),
        "records": len(s["imported"].manifests),
        "records_by_kind": s["imported"].report.to_dict()["records"],
        "published": s["published"].to_dict(),
        "import_report": s["imported"].report.to_dict(),
        "outcomes": [{k: v for k, v in o.to_dict().items() if k != "raw_samples"} for o in s["result"].outcomes],
        "coverage": s["result"].coverage,
        "sentinel": [{k: v for k, v in m.items() if k not in ("artifact", "log")} for m in s["result"].sentinel],
        "raw_samples": raw_sample_counts(s["imported"]),
        "timings": s["result"].timings,
        "environment": {
            k: s["result"].environment.get(k) for k in ("reused", "seconds", "offline", "installed", "path")
        },
    }


def regression_counts(regressions) -> dict:
    judged = len(regressions.trends)
    return {
        "series": judged + len(regressions.insufficient),
        "judged": judged,
        "slowdowns": len(regressions.slowdowns),
        "speedups": len(regressions.speedups),
        "insufficient": len(regressions.insufficient),
        "host_effects": len(regressions.host_effects),
    }


def judge_and_report(manifests: list, swept: list[dict], gpu: str, versions: list[str], evidence: Path):
    """The regression detector over every release (regressions.json/.md) and the site; (regressions, site)."""
    from kernelindex_pipeline.detection.detect import detect_regressions
    from kernelindex_pipeline.detection.document import regressions_json
    from kernelindex_pipeline.imports.coverage import CoverageTable
    from kernelindex_pipeline.reporting.site import build_site

    regressions = detect_regressions(manifests)
    (evidence / "regressions.json").write_text(
        json.dumps(regressions_json(regressions), indent=1, default=str, sort_keys=True)
    )
    (evidence / "regressions.md").write_text(regressions.markdown() + "\n")
    report = build_site(
        manifests,
        evidence / "report",
        title=f"GPU check: {gpu}, liger {' vs '.join(versions)}",
        coverage=CoverageTable.of(s["imported"].report for s in swept).cells,
        regressions=regressions,
    )
    return regressions, report


def run_check(args: argparse.Namespace) -> int:
    sys.path.insert(0, str(REPO))
    from kernelindex_pipeline.records.names import kebab
    from kernelindex_pipeline.sweep.host import probe_host

    started = time.monotonic()
    versions = versions_of(args)
    base_python = os.environ.get(BASE_PYTHON, sys.executable)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    evidence = Path(args.evidence or REPO / "evidence" / f"gpu-check-{stamp}")
    extra_env = {}
    if args.extra_pythonpath:  # tests: stand-in torch on a CPU host
        extra_env["PYTHONPATH"] = os.pathsep.join(args.extra_pythonpath)

    # Which GPU is this? The partition follows the host (kebab of the CUDA name), unless --gpu says otherwise.
    probe_env = {**os.environ, **extra_env}
    probe_env.pop("PYTHONHOME", None)
    first = probe_host(base_python, probe_env)
    if not first.cuda_available:
        print(
            f"gpu_check: no CUDA device on this host ({first.summary()}); run it on an NVIDIA GPU host", file=sys.stderr
        )
        return 2
    gpu = args.gpu or kebab(first.device_name)
    log(f"host: {first.summary()}; partition {gpu} x liger {', '.join(versions)}; budget {args.budget:.0f} s")

    releases = sweep_releases(args, versions, gpu, base_python, evidence, started)
    if releases is None:
        return 2
    swept, lines, notes, manifests, counts_by_kind = releases
    regressions, report = judge_and_report(manifests, swept, gpu, versions, evidence)
    counted = regression_counts(regressions)

    all_ok = all(not s["result"].failed for s in swept)
    published_all = all(s["present"] == set(s["imported"].manifests) and s["imported"].runs() for s in swept)
    # every series is judged or reported as insufficient (two releases are two runs per series: a change
    # needs two runs on each side, so a two-release check accounts for the series without judging them)
    compared = len(versions) < 2 or counted["series"] > 0
    passed = all_ok and published_all and compared
    first_result = swept[0]["result"]
    summary = {
        "passed": passed,
        "gpu": gpu,
        "liger_versions": versions,
        "versions": {s["version"]: version_summary(s) for s in swept},
        "software": first_result.software,
        "settings": first_result.settings,
        "device": {
            k: first_result.host.get(k)
            for k in ("device_name", "compute_capability", "memory_bytes", "sm_count", "driver", "cuda_runtime")
        },
        "catalogue_counts_by_kind": counts_by_kind,
        "regressions": counted,
        "report": {"path": str(report.path), **report.counts},
        "check_seconds": round(time.monotonic() - started, 1),
        "catalogue_notes": sorted(notes),
    }
    header = [
        f"GPU check {'PASSED' if passed else 'FAILED'}: {gpu} x liger {', '.join(versions)}",
        f"catalogue (temporary SQLite): {json.dumps(counts_by_kind, sort_keys=True)}",
        f"regressions ({' vs '.join(versions)}): {counted['series']} series, {counted['judged']} judged, "
        f"{counted['slowdowns']} slowdowns, {counted['speedups']} speed-ups, {counted['insufficient']} insufficient",
        f"site: {report.path} ({report.counts['kernels']} kernel pages, {report.counts['series']} series)",
        f"check took {summary['check_seconds']} s; evidence in {evidence}",
        *(f"note: {note}" for note in sorted(notes)),
    ]
    evidence.mkdir(parents=True, exist_ok=True)
    (evidence / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True, default=str))
    (evidence / "summary.txt").write_text("\n".join(header + lines) + "\n")
    print("\n".join(header + lines))
    return 0 if passed else 1


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="scripts/gpu_check", description=__doc__.split("\n\n")[0])
    parser.add_argument("--evidence", help="directory for the evidence (default: evidence/gpu-check-<UTC time>)")
    parser.add_argument(
        "--wheels", help="offline: install only from this directory of wheels (and take the sdists from it)"
    )
    parser.add_argument(
        "--release",
        help="with one version: Liger sdist tarball or extracted release (default: from --wheels, else fetched)",
    )
    parser.add_argument("--release-dir", help="a directory holding liger_kernel-<V>.tar.gz for every version")
    parser.add_argument(
        "--liger-version", default=DEFAULT_VERSIONS, help="comma-separated releases, swept in this order"
    )
    parser.add_argument("--kernels", default=",".join(DEFAULT_KERNELS), help="comma-separated CSV kernel names")
    parser.add_argument(
        "--rounds", type=int, default=3, help="rounds per script, interleaved (the sweep's rounds setting)"
    )
    parser.add_argument(
        "--backends",
        help="implementations to sweep, e.g. 'swiglu=nvidia-triton,nvidia-cutedsl;cross_entropy=nvidia-triton,nvidia-cutedsl'",
    )
    parser.add_argument(
        "--liger-extras",
        help="Liger extras for the scripts' environment, e.g. 'cutedsl' (nvidia-cutlass-dsl, apache-tvm-ffi)",
    )
    parser.add_argument("--timeout", type=float, default=DEFAULT_SCRIPT_TIMEOUT_S, help="seconds per script at most")
    parser.add_argument(
        "--budget", type=float, default=DEFAULT_BUDGET_S, help="seconds for the whole check (all releases)"
    )
    parser.add_argument("--gpu", help="partition GPU slug (default: kebab of this host's CUDA device name)")
    parser.add_argument("--env-cache-dir", help="where the scripts' environments are cached")
    parser.add_argument("--bootstrap", action="store_true", help="always run from the bootstrap venv")
    parser.add_argument("--bootstrap-dir", help="where the bootstrap venv lives")
    parser.add_argument("--extra-pythonpath", action="append", help=argparse.SUPPRESS)  # tests: stand-in torch
    parser.add_argument("--download-wheels", metavar="DIR", help="fetch what an offline host needs into DIR, then stop")
    parser.add_argument(
        "--python-version",
        default="{}.{}".format(*sys.version_info[:2]),
        help="with --download-wheels: the GPU host's Python",
    )
    parser.add_argument(
        "--with-transformers", action="store_true", help="with --download-wheels: also transformers (hosts without it)"
    )
    args = parser.parse_args(argv)
    if args.download_wheels:
        extras = [e for e in (args.liger_extras or "").split(",") if e]
        return download_wheels(
            Path(args.download_wheels), versions_of(args), args.python_version, args.with_transformers, extras
        )
    bootstrap(args, argv)
    return run_check(args)


if __name__ == "__main__":
    sys.exit(main())
