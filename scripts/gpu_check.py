#!/usr/bin/env python3
"""GPU check: sweep a small fixed set of Liger kernels on this NVIDIA host through the real execute path,
build and validate the records, publish them into a temporary catalogue, print a summary and write the
evidence. Run it as `scripts/gpu_check` (see --help); it takes a few minutes on one H100/H200.

Offline hosts: `--wheels DIR` installs everything from DIR (pip --no-index --find-links DIR); the Liger
sdist may sit in DIR too (liger_kernel-<V>.tar.gz). Fill DIR on a machine with network with
`scripts/gpu_check --download-wheels DIR --python-version 3.12`.

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
DEFAULT_VERSION = "0.8.5"
# Small, quick scripts. The megatron_* scripts of 0.8.x still write the row format the catalogue's
# binding rules know (x_name H / ffn_local with {B, S}), so their rows become records; rms_norm and
# layer_norm use the newer sequence-length sweep (x_name T, {hidden_size, dtype, eps}) that the
# reference rules do not bind: their rows show up as skipped (unknown config) in the import report.
DEFAULT_KERNELS = ["megatron_rms_norm", "megatron_swiglu", "rms_norm", "layer_norm"]
DEFAULT_SCRIPT_TIMEOUT_S = 100
# What the record path (records/, liger/, catalogue/, execution/) imports beyond the standard library;
# Dagster is not needed here. Module -> requirement.
PIPELINE_REQUIREMENTS = {
    "yaml": "PyYAML>=6.0",
    "rfc8785": "rfc8785>=0.1.4",
    "packaging": "packaging>=23",
    "pydantic": "pydantic>=2.7",
    "sqlalchemy": "SQLAlchemy>=2.0",
    "pandas": "pandas>=2.2",
}
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
            check=True, capture_output=True, text=True,
        ).stdout.strip()
        import site
        import sysconfig

        paths = list(dict.fromkeys(site.getsitepackages() + [sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]))
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


def download_wheels(dest: Path, liger_version: str, python_version: str, with_transformers: bool) -> int:
    """On a machine with network: the wheels (and the Liger sdist) an offline GPU host needs."""
    dest.mkdir(parents=True, exist_ok=True)
    platforms = []
    for tag in ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux1_x86_64"):
        platforms += ["--platform", tag]
    binary = [
        sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--only-binary=:all:",
        "--python-version", python_version, "--implementation", "cp", *platforms, "-d", str(dest),
    ]
    # liger-kernel without its torch/triton: the host has them.
    subprocess.run(binary + ["--no-deps", f"liger-kernel=={liger_version}"], check=True)
    requirements = [r for m, r in PIPELINE_REQUIREMENTS.items() if m not in ("pandas", "packaging", "yaml")]
    if with_transformers:
        requirements.append("transformers")
    # With dependencies; pip resolves for the target Python/platform.
    subprocess.run(binary + requirements, check=True)
    # The release itself (its benchmark scripts), through the pipeline's own content-addressed fetch.
    sys.path.insert(0, str(REPO))
    from kernelindex_pipeline.liger.release import fetch_release

    artifact = fetch_release(liger_version)
    shutil.copyfile(artifact.path, dest / Path(artifact.path).name)
    for path in sorted(dest.glob("*")):
        print(path.name)
    return 0


# --- the check ------------------------------------------------------------------------------------------
def find_release(args: argparse.Namespace) -> str | None:
    if args.release:
        return args.release
    if args.wheels:
        for name in (f"liger_kernel-{args.liger_version}.tar.gz", f"liger-kernel-{args.liger_version}.tar.gz"):
            candidate = Path(args.wheels) / name
            if candidate.is_file():
                return str(candidate)
    return None  # fetched from the package index


def catalogue_for(device_name: str, compute_capability: str | None):
    """The default import catalogue; a GPU missing from its hardware table gets facts from the probe
    (vendor nvidia, product = the CUDA name, architecture sm_<cc>) so that its rows make records."""
    import dataclasses

    from kernelindex_pipeline.liger.catalogue import default_catalogue

    catalogue = default_catalogue()
    if device_name in catalogue.hardware:
        return catalogue, None
    facts = {"vendor": "nvidia", "product": device_name, "architecture": "sm_" + (compute_capability or "0.0").replace(".", "")}
    note = f"{device_name} is not in the GPU catalogue (liger-providers.yaml hardware); hardware facts taken from the probe: {facts}"
    return dataclasses.replace(catalogue, hardware={**catalogue.hardware, device_name: facts}), note


def write_evidence(evidence: Path, result, imported, published, summary: dict, summary_lines: list[str]) -> None:
    """At most six files (the device tool returns eight): summary.txt/.json, the CSV, the environment,
    the records and the script logs as one tarball."""
    evidence.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(result.csv_path, evidence / "all_benchmark_data.csv")
    logs_dir = Path(result.work_dir) / "logs"
    environment = {
        "host": result.host,
        "software": result.software,
        "settings": result.settings,
        "environment": result.environment,
        "nvidia_smi_xml": (logs_dir / "nvidia-smi.xml").read_text() if (logs_dir / "nvidia-smi.xml").is_file() else None,
    }
    (evidence / "environment.json").write_text(json.dumps(environment, indent=2, sort_keys=True))
    if imported is not None:
        with (evidence / "records.jsonl").open("w") as handle:
            for manifest in imported.sorted_manifests():
                handle.write(json.dumps(manifest, sort_keys=True, separators=(",", ":")) + "\n")
    with tarfile.open(evidence / "logs.tar.gz", "w:gz") as archive:
        for path in sorted(logs_dir.glob("*")):
            archive.add(path, arcname=f"logs/{path.name}")
    (evidence / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True))
    (evidence / "summary.txt").write_text("\n".join(summary_lines) + "\n")


def run_check(args: argparse.Namespace) -> int:
    sys.path.insert(0, str(REPO))
    from kernelindex_pipeline.catalogue.store import CatalogueStore
    from kernelindex_pipeline.execution.host import probe_host
    from kernelindex_pipeline.execution.outcomes import SweepError
    from kernelindex_pipeline.execution.runner import SweepRequest, run_sweep
    from kernelindex_pipeline.liger import import_csv
    from kernelindex_pipeline.liger.normalize import MeasuredContext
    from kernelindex_pipeline.records.names import kebab
    from kernelindex_pipeline.records.schema import ensure_valid

    started = time.monotonic()
    base_python = os.environ.get(BASE_PYTHON, sys.executable)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    evidence = Path(args.evidence or REPO / "evidence" / f"gpu-check-{stamp}")
    work_dir = Path(tempfile.mkdtemp(prefix="kernelindex-gpu-check-"))
    extra_env = {}
    if args.extra_pythonpath:  # tests: stand-in torch on a CPU host
        extra_env["PYTHONPATH"] = os.pathsep.join(args.extra_pythonpath)

    # Which GPU is this? The partition follows the host (kebab of the CUDA name), unless --gpu says otherwise.
    probe_env = {**os.environ, **extra_env}
    probe_env.pop("PYTHONHOME", None)
    first = probe_host(base_python, probe_env)
    if not first.cuda_available:
        print(f"gpu_check: no CUDA device on this host ({first.summary()}); run it on an NVIDIA GPU host", file=sys.stderr)
        return 2
    gpu = args.gpu or kebab(first.device_name)
    log(f"host: {first.summary()}; partition {gpu} x liger {args.liger_version}")

    request = SweepRequest(
        gpu=gpu,
        liger_version=args.liger_version,
        release=find_release(args),
        kernels=args.kernels.split(","),
        script_timeout_s=args.timeout,
        work_dir=str(work_dir),
        env_cache_dir=args.env_cache_dir,
        wheel_dir=args.wheels,
        base_python=base_python,
        extra_pythonpath=list(args.extra_pythonpath or []),
    )
    try:
        result = run_sweep(request, progress=lambda e: log(f"[{e['index']}/{e['total']}] {e['script']}: {e['status']}, {e['rows']} rows ({e['rows_so_far']} so far), {e['seconds']:.1f} s"))
    except SweepError as error:
        print(f"gpu_check: the sweep could not run: {error}", file=sys.stderr)
        return 2

    catalogue, catalogue_note = catalogue_for(result.host["device_name"], result.host.get("compute_capability"))
    imported = import_csv(
        result.csv_path,
        gpu=gpu,
        liger_version=args.liger_version,
        measured=MeasuredContext(**result.measured_context()),
        catalogue=catalogue,
    )
    ensure_valid(imported.manifests.values())  # raises InvalidRecords naming record and field
    catalogue_path = work_dir / "catalogue.sqlite"
    store = CatalogueStore.open(f"sqlite:///{catalogue_path}")
    try:
        published = store.publish(imported.manifests, partition=f"{gpu}|{args.liger_version}", source=imported.snapshot, report=imported.report)
        present = store.present_digests(list(imported.manifests))
        counts_by_kind = store.counts_by_kind()
    finally:
        store.close()

    report = imported.report.to_dict()
    records_by_kind = report.get("records", {})
    all_ok = not result.failed
    passed = all_ok and len(imported.runs()) > 0 and present == set(imported.manifests)
    summary = {
        "passed": passed,
        "gpu": gpu,
        "liger_version": args.liger_version,
        "rows": result.rows,
        "runs": len(imported.runs()),
        "records": len(imported.manifests),
        "records_by_kind": records_by_kind,
        "published": published.to_dict(),
        "catalogue_counts_by_kind": counts_by_kind,
        "import_report": report,
        "outcomes": [o.to_dict() for o in result.outcomes],
        "software": result.software,
        "settings": result.settings,
        "device": {k: result.host.get(k) for k in ("device_name", "compute_capability", "memory_bytes", "sm_count", "driver", "cuda_runtime")},
        "environment": {k: result.environment.get(k) for k in ("reused", "seconds", "offline", "installed", "path")},
        "timings": result.timings,
        "check_seconds": round(time.monotonic() - started, 1),
        "catalogue_note": catalogue_note,
    }
    lines = [
        f"GPU check {'PASSED' if passed else 'FAILED'}: {gpu} x liger {args.liger_version}",
        *result.summary_lines(),
        f"records: {len(imported.manifests)} ({', '.join(f'{k} {v}' for k, v in records_by_kind.items())}), {len(imported.runs())} runs, schema-valid",
        f"import: {report.get('rowsRead')} rows read, {report.get('speedRows')} speed rows, skipped {json.dumps(report.get('skipped'), sort_keys=True)}",
        f"catalogue (temporary SQLite): {published.summary()}",
        f"environment: {json.dumps(result.software, sort_keys=True)}",
        f"settings: {json.dumps(result.settings, sort_keys=True)}",
        f"check took {summary['check_seconds']} s; evidence in {evidence}",
    ]
    if catalogue_note:
        lines.append(f"note: {catalogue_note}")
    write_evidence(evidence, result, imported, published, summary, lines)
    print("\n".join(lines))
    return 0 if passed else 1


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="scripts/gpu_check", description=__doc__.split("\n\n")[0])
    parser.add_argument("--evidence", help="directory for the evidence (default: evidence/gpu-check-<UTC time>)")
    parser.add_argument("--wheels", help="offline: install only from this directory of wheels (and take the sdist from it)")
    parser.add_argument("--release", help="Liger sdist tarball or extracted release (default: from --wheels, else fetched)")
    parser.add_argument("--liger-version", default=DEFAULT_VERSION)
    parser.add_argument("--kernels", default=",".join(DEFAULT_KERNELS), help="comma-separated CSV kernel names")
    parser.add_argument("--timeout", type=float, default=DEFAULT_SCRIPT_TIMEOUT_S, help="seconds per script")
    parser.add_argument("--gpu", help="partition GPU slug (default: kebab of this host's CUDA device name)")
    parser.add_argument("--env-cache-dir", help="where the scripts' environments are cached")
    parser.add_argument("--bootstrap", action="store_true", help="always run from the bootstrap venv")
    parser.add_argument("--bootstrap-dir", help="where the bootstrap venv lives")
    parser.add_argument("--extra-pythonpath", action="append", help=argparse.SUPPRESS)  # tests: stand-in torch
    parser.add_argument("--download-wheels", metavar="DIR", help="fetch what an offline host needs into DIR, then stop")
    parser.add_argument("--python-version", default="{}.{}".format(*sys.version_info[:2]), help="with --download-wheels: the GPU host's Python")
    parser.add_argument("--with-transformers", action="store_true", help="with --download-wheels: also transformers (hosts without it)")
    args = parser.parse_args(argv)
    if args.download_wheels:
        return download_wheels(Path(args.download_wheels), args.liger_version, args.python_version, args.with_transformers)
    bootstrap(args, argv)
    return run_check(args)


if __name__ == "__main__":
    sys.exit(main())
