"""How a finished benchmark script is classified."""

from kernelindex_pipeline.sweep.outcomes import (
    HostCheckError,
    ScriptOutcome,
    ScriptStatus,
    classify,
    last_error_line,
)

TRACEBACK = """\
Traceback (most recent call last):
  File "benchmark_swiglu.py", line 10, in <module>
    main()
ValueError: Invalid provider: foo for SwiGLU
"""

OOM = """\
**************************************
     BENCHMARKING SPEED FOR CROSS_ENTROPY
**************************************
Traceback (most recent call last):
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB
"""


def test_exit_zero_is_ok_without_error_line():
    assert classify(0, False, "all fine\n") == (ScriptStatus.OK, None)


def test_nonzero_exit_is_failed_with_the_exception_line():
    status, line = classify(1, False, TRACEBACK + "\nsome cleanup output\n")
    assert status is ScriptStatus.FAILED
    assert line == "ValueError: Invalid provider: foo for SwiGLU"


def test_cuda_out_of_memory_text_with_nonzero_exit_is_out_of_memory():
    status, line = classify(1, False, OOM)
    assert status is ScriptStatus.OUT_OF_MEMORY
    assert line.startswith("torch.OutOfMemoryError: CUDA out of memory")


def test_other_out_of_memory_spellings():
    for text in (
        "RuntimeError: CUDA error: out of memory",
        "cuBLAS: CUBLAS_STATUS_ALLOC_FAILED when calling cublasCreate",
    ):
        assert classify(1, False, text)[0] is ScriptStatus.OUT_OF_MEMORY


def test_triton_out_of_resources_is_a_plain_failure():
    text = "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 262144"
    assert classify(1, False, text)[0] is ScriptStatus.FAILED


def test_timeout_wins_over_exit_code_and_log_text():
    assert classify(None, True, OOM)[0] is ScriptStatus.TIMED_OUT


def test_script_that_survived_an_oom_and_exited_zero_is_ok():
    assert classify(0, False, OOM)[0] is ScriptStatus.OK


def test_last_error_line_falls_back_to_last_line_and_none_for_empty():
    assert last_error_line("first\n\nkilled by signal 9\n\n") == "killed by signal 9"
    assert last_error_line("") is None


def test_outcome_round_trips_through_dict():
    outcome = ScriptOutcome(
        "benchmark_x.py", ScriptStatus.TIMED_OUT, None, "x", 3, ["x"], 1.5, "/l", "sha256:" + "0" * 64
    )
    data = outcome.to_dict()
    assert data["status"] == "timed_out"
    assert ScriptOutcome.from_dict(data) == outcome
    assert "timed_out, 3 rows" in outcome.summary()


def test_host_check_error_is_never_retryable():
    assert HostCheckError("x").retryable is False
