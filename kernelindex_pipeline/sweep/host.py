"""What the benchmark host is: a probe in the scripts' own interpreter, plus `nvidia-smi -q -x`.

The probe runs in a subprocess with exactly the interpreter and PYTHONPATH the scripts get, so it sees
the torch, triton and liger-kernel they will import. `check_host` then refuses a host whose CUDA
device is not the partition's GPU; that error is never worth a retry.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import xml.etree.ElementTree as ElementTree
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..records.names import kebab
from .backends import EXTRA_DISTRIBUTIONS
from .environment import PROBE_VERSION_FUNCTION, environment_identity, environment_labels
from .outcomes import HostCheckError

PROBE_PREFIX = "KERNELINDEX_PROBE "
PROBE_TIMEOUT_S = 180
NVIDIA_SMI_TIMEOUT_S = 60

_PROBE_SCRIPT = (
    PROBE_VERSION_FUNCTION
    + r"""
import json, platform, sys

def operating_system():
    try:
        with open("/etc/os-release") as handle:
            fields = dict(line.rstrip("\n").split("=", 1) for line in handle if "=" in line)
        return fields.get("PRETTY_NAME", "").strip('"') or None
    except OSError:
        return platform.platform()

out = {
    "python": platform.python_version(),
    "kernel": platform.release(),
    "operating_system": operating_system(),
    "liger_kernel": version("liger-kernel"),
    "transformers": version("transformers"),
    "liger_extras": {name: version(name) for name in EXTRAS if version(name)},
    "cuda_available": False,
}
try:
    import torch
    out["torch"] = str(torch.__version__)
    out["cuda_runtime"] = torch.version.cuda
    out["hip_runtime"] = getattr(torch.version, "hip", None)
    out["cuda_available"] = bool(torch.cuda.is_available())
    if out["cuda_available"]:
        index = torch.cuda.current_device()
        props = torch.cuda.get_device_properties(index)
        out["device_count"] = int(torch.cuda.device_count())
        out["device_name"] = torch.cuda.get_device_name(index)
        out["compute_capability"] = "%d.%d" % (props.major, props.minor)
        out["memory_bytes"] = int(props.total_memory)
        out["sm_count"] = int(props.multi_processor_count)
        out["l2_cache_bytes"] = int(getattr(props, "L2_cache_size", 0) or 0) or None  # torch >= 2.1 reports it
        uuid = getattr(props, "uuid", None)
        out["device_uuid"] = str(uuid) if uuid is not None else None
except Exception as error:
    out["torch_error"] = "%s: %s" % (type(error).__name__, error)
try:
    import triton
    out["triton"] = str(triton.__version__)
except Exception as error:
    out["triton_error"] = "%s: %s" % (type(error).__name__, error)
print(PREFIX + json.dumps(out), flush=True)
"""
)


@dataclass
class HostCapture:
    """The benchmark host as the scripts see it (None where unknown)."""

    cuda_available: bool
    device_name: str | None = None
    compute_capability: str | None = None  # "9.0"
    memory_bytes: int | None = None
    sm_count: int | None = None
    l2_cache_bytes: int | None = None  # the L2 size the device reports (reporting/efficiency.py's L2 flag)
    device_count: int | None = None
    device_uuid: str | None = None
    cuda_runtime: str | None = None  # the CUDA version torch was built with (torch.version.cuda)
    hip_runtime: str | None = None
    driver: str | None = None
    cuda_driver_version: str | None = None  # the newest CUDA the driver supports (nvidia-smi)
    torch: str | None = None
    triton: str | None = None
    python: str | None = None
    liger_kernel: str | None = None
    transformers: str | None = None
    # Liger's optional implementations installed (sweep/backends.py EXTRA_DISTRIBUTIONS): name -> version
    liger_extras: dict | None = None
    operating_system: str | None = None
    kernel: str | None = None
    torch_error: str | None = None
    triton_error: str | None = None
    nvidia_smi: dict | None = None  # the selected GPU from `nvidia-smi -q -x`, see parse_nvidia_smi_xml
    nvidia_smi_error: str | None = None
    raw_nvidia_smi_xml: str | None = field(default=None, repr=False)

    def to_dict(self, *, with_raw: bool = False) -> dict:
        data = asdict(self)
        if not with_raw:
            data.pop("raw_nvidia_smi_xml")
        return data

    @classmethod
    def from_dict(cls, data: dict) -> HostCapture:
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})

    # --- ExecutionEnvironment.spec ------------------------------------------------------------------
    def software(self) -> dict:
        """ExecutionEnvironment.spec.software: the identity facts only (GPU driver major, CUDA, torch,
        triton; sweep.environment.environment_identity says which and why). The rest of the host
        (OS kernel build, exact driver, Python, ...) is `labels()`, so two hosts of one GPU type with
        the same stack share one environment, one cohort.

        The Liger release is not identity either: it is what a sweep measures (its runs' liger_version
        label and ImplementationRevisions), so two releases swept on one host share one environment and
        their runs form one series across versions."""
        return environment_identity(self)

    def labels(self, hostname: str | None = None) -> dict[str, str]:
        """ExecutionEnvironment.metadata.labels: host facts that are not identity (never digested)."""
        return environment_labels(self, self.settings(), hostname)

    def settings(self) -> dict | None:
        """ExecutionEnvironment.spec.settings from nvidia-smi, or None without it.

        clocksLocked is stated only when it is known: application clocks set away from their defaults.
        Clocks locked with `nvidia-smi -lgc` do not show in `nvidia-smi -q`, so "not locked" is never claimed.
        """
        smi = self.nvidia_smi or {}
        settings = {}
        if smi.get("power_limit_watts"):
            settings["powerLimitWatts"] = smi["power_limit_watts"]
        if smi.get("persistence_mode") is not None:
            settings["persistenceMode"] = smi["persistence_mode"]
        if smi.get("ecc_enabled") is not None:
            settings["eccEnabled"] = smi["ecc_enabled"]
        applications, defaults = smi.get("applications_clocks"), smi.get("default_applications_clocks")
        if applications and defaults and applications != defaults:
            settings["clocksLocked"] = True
        return settings or None

    def summary(self) -> str:
        if not self.cuda_available:
            return f"no CUDA device ({self.torch_error or 'torch.cuda.is_available() is False'})"
        parts = [
            f"{self.device_name} (sm {self.compute_capability}, {self.sm_count} SMs, {(self.memory_bytes or 0) / 2**30:.0f} GiB)",
            f"driver {self.driver}",
            f"CUDA {self.cuda_runtime}",
            f"torch {self.torch}",
            f"triton {self.triton}",
            f"liger-kernel {self.liger_kernel}",
            f"Python {self.python}",
        ]
        return ", ".join(parts)


def _cut(value: str, limit: int) -> str:
    return value if len(value) <= limit else value[:limit]


# --- the GPU catalogue ------------------------------------------------------------------------------
def gpu_catalogue() -> dict[str, dict]:
    """CSV gpu_name -> hardware facts: the loaded Liger catalogue's (default profile), loaded once."""
    from kernelindex_pipeline.liger.catalogue import default_catalogue  # the liger package reads pandas

    return default_catalogue().hardware


def gpu_name_for_slug(gpu_slug: str) -> str:
    """The GPU name (as CUDA reports it) whose slug is `gpu_slug`; ValueError naming the known ones."""
    from kernelindex_pipeline.liger.identity import gpu_slug as slug_of

    for name in gpu_catalogue():
        if slug_of(name) == gpu_slug:
            return name
    known = ", ".join(sorted(slug_of(name) for name in gpu_catalogue()))
    raise ValueError(f"unknown GPU slug {gpu_slug!r}; the GPU catalogue knows: {known}")


# --- nvidia-smi ------------------------------------------------------------------------------------
_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")


def _text(element: ElementTree.Element | None, path: str) -> str | None:
    if element is None:
        return None
    found = element.find(path)
    if found is None or found.text is None:
        return None
    text = found.text.strip()
    return None if text in ("", "N/A", "[N/A]", "Not Supported", "[Not Supported]") else text


def _number(text: str | None) -> float | None:
    match = _NUMBER.search(text) if text else None
    return float(match.group()) if match else None


def _enabled(text: str | None) -> bool | None:
    if text is None:
        return None
    return {"enabled": True, "disabled": False}.get(text.lower())


def _clocks(gpu: ElementTree.Element, tag: str) -> dict | None:
    element = gpu.find(tag)
    if element is None:
        return None
    values = {child.tag: _number(child.text) for child in element if _number(child.text) is not None}
    return values or None


def parse_nvidia_smi_xml(xml_text: str) -> dict:
    """`nvidia-smi -q -x` -> {driver_version, cuda_driver_version, gpus: [...]}, units dropped (W, MHz)."""
    root = ElementTree.fromstring(xml_text)
    gpus = []
    for gpu in root.findall("gpu"):
        # Newer drivers nest power under gpu_power_readings/current_power_limit, older ones under
        # power_readings/power_limit (then enforced_power_limit).
        power_limit = None
        for path in (
            "gpu_power_readings/current_power_limit",
            "gpu_power_readings/enforced_power_limit",
            "power_readings/power_limit",
            "power_readings/enforced_power_limit",
        ):
            power_limit = _number(_text(gpu, path))
            if power_limit:
                break
        event_reasons = gpu.find("clocks_event_reasons")
        if event_reasons is None:
            event_reasons = gpu.find("clocks_throttle_reasons")
        gpus.append(
            {
                "product_name": _text(gpu, "product_name"),
                "uuid": _text(gpu, "uuid"),
                "pci_bus_id": _text(gpu, "pci/pci_bus_id"),
                "persistence_mode": _enabled(_text(gpu, "persistence_mode")),
                "ecc_enabled": _enabled(_text(gpu, "ecc_mode/current_ecc")),
                "power_limit_watts": power_limit,
                "default_power_limit_watts": _number(_text(gpu, "gpu_power_readings/default_power_limit"))
                or _number(_text(gpu, "power_readings/default_power_limit")),
                "clocks": _clocks(gpu, "clocks"),
                "applications_clocks": _clocks(gpu, "applications_clocks"),
                "default_applications_clocks": _clocks(gpu, "default_applications_clocks"),
                "max_clocks": _clocks(gpu, "max_clocks"),
                "active_clock_event_reasons": sorted(
                    child.tag
                    for child in (event_reasons if event_reasons is not None else [])
                    if (child.text or "").strip() == "Active"
                ),
                "compute_mode": _text(gpu, "compute_mode"),
                "mig_mode": _text(gpu, "mig_mode/current_mig"),
            }
        )
    return {
        "driver_version": _text(root, "driver_version"),
        "cuda_driver_version": _text(root, "cuda_version"),
        "gpus": gpus,
    }


def read_nvidia_smi(env: dict | None = None) -> tuple[str | None, str | None]:
    """(XML text of `nvidia-smi -q -x`, error) — one of them None. Uses PATH from `env` when given."""
    path = (env or {}).get("PATH")
    executable = shutil.which("nvidia-smi", path=path)
    if executable is None:
        return None, "nvidia-smi not found on PATH"
    try:
        completed = subprocess.run(
            [executable, "-q", "-x"], capture_output=True, text=True, timeout=NVIDIA_SMI_TIMEOUT_S, env=env
        )
    except subprocess.TimeoutExpired:
        return None, f"nvidia-smi -q -x did not answer within {NVIDIA_SMI_TIMEOUT_S} s"
    if completed.returncode != 0:
        return (
            None,
            f"nvidia-smi -q -x exited {completed.returncode}: {(completed.stderr or completed.stdout).strip()[:300]}",
        )
    return completed.stdout, None


def _driver_from_proc() -> str | None:
    try:
        text = Path("/proc/driver/nvidia/version").read_text()
    except OSError:
        return None
    match = re.search(r"Kernel Module(?: for \w+)?\s+(\d+(?:\.\d+)+)", text)
    return match.group(1) if match else None


def _select_gpu(parsed: dict, device_name: str | None, device_uuid: str | None) -> dict | None:
    gpus = parsed.get("gpus") or []
    if device_uuid:
        for gpu in gpus:
            if gpu.get("uuid") and device_uuid.lower().removeprefix("gpu-") in gpu["uuid"].lower():
                return gpu
    for gpu in gpus:
        if device_name and gpu.get("product_name") == device_name:
            return gpu
    return gpus[0] if gpus else None


# --- probe and check --------------------------------------------------------------------------------
def probe_host(python: str | Path, env: dict | None = None, *, timeout: float = PROBE_TIMEOUT_S) -> HostCapture:
    """Run the probe with `python` (and `env`, the scripts' environment variables) and read nvidia-smi."""
    script = _PROBE_SCRIPT.replace("PREFIX", repr(PROBE_PREFIX), 1).replace("EXTRAS", repr(EXTRA_DISTRIBUTIONS), 1)
    try:
        completed = subprocess.run(
            [str(python), "-c", script], capture_output=True, text=True, timeout=timeout, env=env
        )
    except subprocess.TimeoutExpired:
        raise HostCheckError(f"the host probe ({python}) did not finish within {timeout:.0f} s") from None
    lines = [line for line in completed.stdout.splitlines() if line.startswith(PROBE_PREFIX)]
    if completed.returncode != 0 or not lines:
        tail = (completed.stderr or completed.stdout).strip().splitlines()[-5:]
        raise HostCheckError(
            f"the host probe with {python} failed (exit code {completed.returncode}): {' | '.join(tail)}"
        )
    capture = HostCapture.from_dict(json.loads(lines[-1][len(PROBE_PREFIX) :]))

    xml_text, error = read_nvidia_smi(env)
    capture.raw_nvidia_smi_xml, capture.nvidia_smi_error = xml_text, error
    if xml_text:
        try:
            parsed = parse_nvidia_smi_xml(xml_text)
        except ElementTree.ParseError as parse_error:
            capture.nvidia_smi_error = f"nvidia-smi -q -x printed no valid XML: {parse_error}"
        else:
            selected = _select_gpu(parsed, capture.device_name, capture.device_uuid)
            capture.nvidia_smi = selected
            capture.driver = parsed.get("driver_version")
            capture.cuda_driver_version = parsed.get("cuda_driver_version")
    if capture.driver is None:
        capture.driver = _driver_from_proc()
    return capture


def check_host(capture: HostCapture, gpu_slug: str) -> None:
    """Raise HostCheckError unless the host's CUDA device is the partition's GPU (kebab of its name)."""
    try:
        expected = f"{gpu_name_for_slug(gpu_slug)} ({gpu_slug})"
    except ValueError:
        expected = gpu_slug
    if not capture.cuda_available:
        reason = capture.torch_error or (
            f"torch {capture.torch} (CUDA build {capture.cuda_runtime}) reports torch.cuda.is_available() == False"
        )
        raise HostCheckError(
            f"this partition needs the GPU {expected}, but the host has no usable CUDA device: {reason}. "
            "Run it on a node with that GPU (and a CUDA build of torch); retrying here cannot help."
        )
    found = kebab(capture.device_name or "")
    if found != gpu_slug:
        raise HostCheckError(
            f"this partition needs the GPU {expected}, but the host's CUDA device is {capture.device_name} ({found}). "
            "Run it on a node with the partition's GPU, or pick the partition of this GPU; retrying here cannot help."
        )
