"""What the sample hook's wrapper adds to each call of Liger's dispatcher (`resolve_impl` runs on every
kernel call, inside do_bench's timed loop, so it must stay cheap).

    .venv/bin/python bench/dispatch_hook_cost.py

Wraps a stand-in `resolve_impl` (returns a fixed implementation) the way the hook wraps Liger's, inside
a CSV case, and times the repeat path: ns per call with and without the wrapper.
"""

import importlib.util
import os
import timeit
import types
from pathlib import Path

HOOK = Path(__file__).resolve().parents[1] / "kernelindex_pipeline" / "sweep" / "sample_hook" / "sitecustomize.py"
CALLS = 200_000


def main() -> None:
    os.environ.pop("KERNELINDEX_SAMPLES_SPOOL_FD", None)  # no spool: the hook installs nothing by itself
    spec = importlib.util.spec_from_file_location("kernelindex_hook", HOOK)
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)

    class Impl:
        impl_name, preference_rank = "nvidia-triton", 50

    impl = Impl()
    module = types.SimpleNamespace(resolve_impl=lambda op, requested=None, device=None: impl, _GLOBAL_IMPL=None)
    original = module.resolve_impl
    hook._wrap_resolve_impl(module)
    case = {"kernel_name": "cross_entropy", "kernel_provider": "liger", "kernel_operation_mode": "forward", "metric_name": "speed",
            "x_name": "BT", "x_value": "1024", "extra_benchmark_config_str": "{}"}  # fmt: skip
    with hook.measuring(case):
        plain = timeit.timeit(lambda: original("cross_entropy"), number=CALLS) / CALLS
        wrapped = timeit.timeit(lambda: module.resolve_impl("cross_entropy"), number=CALLS) / CALLS
    print(
        f"resolve_impl: {plain * 1e9:.0f} ns/call; wrapped: {wrapped * 1e9:.0f} ns/call; the hook adds {(wrapped - plain) * 1e9:.0f} ns"
    )


if __name__ == "__main__":
    main()
