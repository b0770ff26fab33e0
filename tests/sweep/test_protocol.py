"""sweep/protocol.py: the request the orchestrator sends, and the reply the sweep process sends back
through one Pipes message, rebuilt as typed objects on the orchestrator's side."""

from pathlib import Path

import pytest

from kernelindex_pipeline.sweep.outcomes import (
    ConfigurationError,
    HostCheckError,
    ScriptOutcome,
    ScriptStatus,
    SweepError,
)
from kernelindex_pipeline.sweep.protocol import (
    CSV_INLINE_LIMIT_BYTES,
    SweepErrorReport,
    SweepRequest,
    SweepResult,
    error_message,
    reply_from_messages,
    result_message,
)


def small_result() -> SweepResult:
    outcome = ScriptOutcome(
        "benchmark_rms_norm.py", ScriptStatus.OK, 0, None, 24, ["rms_norm"], 1.5, "/logs/x.log", "sha256:" + "0" * 64
    )
    return SweepResult(
        gpu="nvidia-h100-80gb-hbm3",
        liger_version="0.8.5",
        csv_path="/work/tree/benchmark/data/all_benchmark_data.csv",
        rows=24,
        outcomes=[outcome],
        host={"device_name": "NVIDIA H100 80GB HBM3"},
        software={"cuda": "12.4"},
        settings=None,
        logs_by_kernel={},
        environment={"reused": True, "seconds": 0.5},
        timings={"total_s": 3.0, "scripts_s": 1.5, "overhead_s": 1.5},
        work_dir="/work",
        started_at="2026-12-01T00:00:00Z",
        finished_at="2026-12-01T00:00:03Z",
    )


def test_the_sweep_reply_is_rebuilt_as_typed_objects():
    from kernelindex_pipeline.sweep.protocol import reply_from_messages

    reply = reply_from_messages([{"type": "progress"}, error_message(HostCheckError("no CUDA device"))])
    assert reply.result is None and reply.error == SweepErrorReport("HostCheckError", "no CUDA device", False)
    assert reply_from_messages([error_message(SweepError("pip failed"))]).error.retryable is True
    with pytest.raises(ValueError, match=r"no result with its CSV \(messages: \['progress', None\]\)"):
        reply_from_messages([{"type": "progress"}, "not a dict"])


def test_a_result_and_its_csv_travel_in_one_message_and_come_back_typed():
    result, csv_bytes = small_result(), b"kernel_name\nrms_norm\n"
    reply = reply_from_messages([{"type": "progress"}, result_message(result, Path("/work/result.json"), csv_bytes)])
    assert reply.error is None and reply.csv_bytes == csv_bytes
    assert reply.result == result and reply.result.outcomes[0].status is ScriptStatus.OK


def test_a_csv_too_large_to_travel_inline_is_refused_by_the_reply():
    message = result_message(small_result(), Path("/work/result.json"), b"x" * (CSV_INLINE_LIMIT_BYTES + 1))
    assert message["csv_text"] is None
    with pytest.raises(ValueError, match=r"no result with its CSV \(messages: \['sweep_result'\]\)"):
        reply_from_messages([message])


def test_a_request_with_unknown_or_missing_fields_is_a_configuration_error():
    with pytest.raises(ConfigurationError, match=r"unknown sweep request field\(s\) \['kernel'\]"):
        SweepRequest.from_dict({"gpu": "nvidia-b200", "liger_version": "0.8.5", "kernel": ["typo"]})
    with pytest.raises(ConfigurationError, match="the sweep request needs 'liger_version'"):
        SweepRequest.from_dict({"gpu": "nvidia-b200"})
    request = SweepRequest.from_dict({"gpu": "nvidia-b200", "liger_version": "0.8.5", "rounds": 2})
    assert SweepRequest.from_dict(request.to_dict()) == request
