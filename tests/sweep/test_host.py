"""The host probe (a real subprocess with stand-in torch / nvidia-smi) and the partition's GPU check."""

import os
import sys

import pytest

from kernelindex_pipeline.sweep.host import (
    HostCapture,
    check_host,
    gpu_name_for_slug,
    parse_nvidia_smi_xml,
    probe_host,
)
from kernelindex_pipeline.sweep.outcomes import HostCheckError
from tests.support.standin_release import NVIDIA_SMI_XML, build_fake_nvidia_smi, build_fake_torch

H100 = "nvidia-h100-80gb-hbm3"

OLD_DRIVER_XML = """<?xml version="1.0" ?>
<nvidia_smi_log>
  <driver_version>470.57.02</driver_version>
  <cuda_version>11.4</cuda_version>
  <gpu id="00000000:00:04.0">
    <product_name>NVIDIA A100-SXM4-80GB</product_name>
    <persistence_mode>Disabled</persistence_mode>
    <ecc_mode><current_ecc>N/A</current_ecc></ecc_mode>
    <power_readings><power_limit>400.00 W</power_limit></power_readings>
    <applications_clocks><graphics_clock>1410 MHz</graphics_clock><mem_clock>1593 MHz</mem_clock></applications_clocks>
    <default_applications_clocks><graphics_clock>1410 MHz</graphics_clock><mem_clock>1593 MHz</mem_clock></default_applications_clocks>
  </gpu>
</nvidia_smi_log>
"""


def scripts_env(*, fake_dir=None, bin_dir=None):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if fake_dir is not None:
        env["PYTHONPATH"] = str(fake_dir)
    env["PATH"] = os.pathsep.join([str(bin_dir)] if bin_dir else []) + os.pathsep + "/usr/bin:/bin"
    return env


def test_parse_nvidia_smi_new_driver_layout():
    parsed = parse_nvidia_smi_xml(NVIDIA_SMI_XML)
    assert parsed["driver_version"] == "550.54.15"
    assert parsed["cuda_driver_version"] == "12.4"
    second = parsed["gpus"][1]
    assert second["power_limit_watts"] == 700.0
    assert second["persistence_mode"] is True and second["ecc_enabled"] is True
    assert second["applications_clocks"] == {"graphics_clock": 1755.0, "mem_clock": 2619.0}
    assert second["active_clock_event_reasons"] == ["clocks_event_reason_gpu_idle"]
    assert second["mig_mode"] is None  # "N/A" is unknown, not a value


def test_parse_nvidia_smi_old_driver_layout_and_unknown_ecc():
    gpu = parse_nvidia_smi_xml(OLD_DRIVER_XML)["gpus"][0]
    assert gpu["power_limit_watts"] == 400.0
    assert gpu["persistence_mode"] is False
    assert gpu["ecc_enabled"] is None
    capture = HostCapture(cuda_available=True, nvidia_smi=gpu)
    # Application clocks at their defaults say nothing about -lgc locks: clocksLocked stays unstated.
    assert capture.settings() == {"powerLimitWatts": 400.0, "persistenceMode": False}


def test_probe_with_standin_torch_and_nvidia_smi(tmp_path):
    fake = build_fake_torch(tmp_path / "fake", "NVIDIA H100 80GB HBM3")
    bin_dir = tmp_path / "bin"
    build_fake_nvidia_smi(bin_dir)
    capture = probe_host(sys.executable, scripts_env(fake_dir=fake, bin_dir=bin_dir))
    assert capture.cuda_available is True
    assert capture.device_name == "NVIDIA H100 80GB HBM3"
    assert (capture.compute_capability, capture.sm_count, capture.memory_bytes) == ("9.0", 132, 85520809984)
    assert capture.l2_cache_bytes == 52428800  # becomes the environment's l2_cache_bytes label (efficiency's L2 flag)
    assert (capture.torch, capture.triton, capture.cuda_runtime) == ("2.5.1+standin", "3.1.0", "12.4")
    assert capture.python == ".".join(map(str, sys.version_info[:3]))
    assert capture.driver == "550.54.15"
    # The probe's device UUID picks the second GPU of nvidia-smi, not the first with the same name.
    assert capture.nvidia_smi["uuid"] == "GPU-5a3c1e2b-0000-4000-8000-000000000001"
    assert capture.settings() == {
        "powerLimitWatts": 700.0,
        "persistenceMode": True,
        "eccEnabled": True,
        "clocksLocked": True,
    }
    software = capture.software()  # identity only: driver major, CUDA, torch, triton
    assert software == {
        "driver": "550",
        "cudaToolkit": "12.4",
        "framework": {"name": "torch", "version": "2.5.1+standin"},
        "libraries": {"triton": "3.1.0"},
    }
    labels = capture.labels("gpu-host-7")  # the rest of the host: labels, never digested
    assert labels["driver"] == "550.54.15" and labels["hostname"] == "gpu-host-7"
    assert labels["power_limit_watts"] == "700" and labels["clocks_locked"] == "true"
    assert labels["os_kernel"] == capture.kernel and labels["python"] == capture.python
    check_host(capture, H100)  # the right GPU passes


def test_probe_without_nvidia_smi_leaves_settings_unknown(tmp_path):
    fake = build_fake_torch(tmp_path / "fake", "NVIDIA H100 80GB HBM3")
    capture = probe_host(sys.executable, scripts_env(fake_dir=fake))
    assert capture.nvidia_smi is None
    assert "not found" in capture.nvidia_smi_error
    assert capture.settings() is None


def test_no_torch_at_all_fails_naming_the_partition_gpu():
    capture = probe_host(sys.executable, scripts_env())  # the test interpreter has no torch
    assert capture.cuda_available is False
    with pytest.raises(HostCheckError) as raised:
        check_host(capture, H100)
    message = str(raised.value)
    assert "NVIDIA H100 80GB HBM3 (nvidia-h100-80gb-hbm3)" in message
    assert "ModuleNotFoundError" in message
    assert raised.value.retryable is False


def test_cuda_unavailable_fails_naming_the_partition_gpu(tmp_path):
    fake = build_fake_torch(tmp_path / "fake", None)
    capture = probe_host(sys.executable, scripts_env(fake_dir=fake))
    with pytest.raises(HostCheckError, match=r"needs the GPU NVIDIA B200 \(nvidia-b200\).*is_available\(\) == False"):
        check_host(capture, "nvidia-b200")


def test_other_gpu_fails_naming_both(tmp_path):
    fake = build_fake_torch(tmp_path / "fake", "NVIDIA A100-SXM4-80GB")
    capture = probe_host(sys.executable, scripts_env(fake_dir=fake))
    with pytest.raises(HostCheckError) as raised:
        check_host(capture, H100)
    assert "needs the GPU NVIDIA H100 80GB HBM3 (nvidia-h100-80gb-hbm3)" in str(raised.value)
    assert "NVIDIA A100-SXM4-80GB (nvidia-a100-sxm4-80gb)" in str(raised.value)


def test_gpu_name_for_unknown_slug_lists_the_catalogue():
    assert gpu_name_for_slug("nvidia-b200") == "NVIDIA B200"
    with pytest.raises(ValueError, match="nvidia-h100-pcie"):
        gpu_name_for_slug("nvidia-h300")
