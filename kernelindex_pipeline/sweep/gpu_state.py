"""The GPU's SM clock and throttle reasons before and after each script.

Read with `nvidia-smi -q -x` (host.read_nvidia_smi, the same reader and parser as the host probe, on
the GPU the probe selected). Without nvidia-smi (a CPU host, a container without it) the state is
recorded as unavailable with the reason, never guessed. A script is *throttled* when a reason that
slows the clocks below what the host is set to (power cap, thermal or power-brake slowdown, sync
boost) is active before or after it; `gpu_idle` and `applications_clocks_setting` are no throttling.
"""

from __future__ import annotations

from typing import Any
from xml.etree import ElementTree

from .host import _select_gpu, parse_nvidia_smi_xml, read_nvidia_smi

NOT_THROTTLING = frozenset({"clocks_event_reason_gpu_idle", "clocks_throttle_reason_gpu_idle",
                            "clocks_event_reason_applications_clocks_setting",
                            "clocks_throttle_reason_applications_clocks_setting"})  # fmt: skip


def read_gpu_state(env: dict[str, str] | None, device_name: str | None, device_uuid: str | None) -> dict[str, Any]:
    """{"available": True, "sm_clock_mhz", "throttle_reasons": [...]} or {"available": False, "error"}."""
    xml_text, error = read_nvidia_smi(env)
    if xml_text is None:
        return {"available": False, "error": error}
    try:
        gpu = _select_gpu(parse_nvidia_smi_xml(xml_text), device_name, device_uuid)
    except ElementTree.ParseError as parse_error:
        return {"available": False, "error": f"nvidia-smi -q -x printed no valid XML: {parse_error}"}
    if gpu is None:
        return {"available": False, "error": "nvidia-smi lists no GPU"}
    reasons = [r for r in gpu.get("active_clock_event_reasons") or [] if r not in NOT_THROTTLING]
    return {
        "available": True,
        "sm_clock_mhz": (gpu.get("clocks") or {}).get("sm_clock"),
        "throttle_reasons": sorted(reasons),
    }


def throttle_reasons(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """The throttle reasons active before or after a script (short names: sw_thermal_slowdown)."""
    reasons = set(before.get("throttle_reasons") or []) | set(after.get("throttle_reasons") or [])
    return sorted(r.removeprefix("clocks_event_reason_").removeprefix("clocks_throttle_reason_") for r in reasons)
