"""The sweep's sentinel program: time fixed reference operations with triton.testing.do_bench.

Run by the scripts' own interpreter with the sample hook active (the runner starts it before the first
and after the last benchmark script), so the reference operations go through the same harness, on the
same GPU and software, as Liger's kernels. Which operations, with which sizes and do_bench arguments,
comes as JSON in argv[1] (liger/sentinel.py PLAN holds those facts); the results go to argv[2].

    python sentinel_program.py '<plan json>' result.json
"""

import contextlib
import json
import sys
import time


def operation_fn(torch, operation):
    """A zero-argument callable doing one reference operation on fresh device tensors."""
    device = "cuda"
    if operation["kind"] == "matmul":
        dtype = getattr(torch, operation["dtype"])
        a = torch.randn(operation["m"], operation["k"], dtype=dtype, device=device)
        b = torch.randn(operation["k"], operation["n"], dtype=dtype, device=device)
        return lambda: a @ b
    if operation["kind"] == "copy":
        dtype = getattr(torch, operation["dtype"])
        source = torch.empty(operation["elements"], dtype=dtype, device=device)
        target = torch.empty(operation["elements"], dtype=dtype, device=device)
        return lambda: target.copy_(source)
    raise ValueError(f"unknown sentinel operation kind {operation['kind']!r}")


def main(argv):
    plan = json.loads(argv[1])
    import torch
    import triton.testing

    if not torch.cuda.is_available():
        raise SystemExit("sentinel: no CUDA device")
    measuring = getattr(sys.modules.get("sitecustomize"), "measuring", None)
    results = {}
    for operation in plan["operations"]:
        fn = operation_fn(torch, operation)
        tag = measuring({"sentinel": operation["name"]}) if measuring else contextlib.nullcontext()
        with tag:
            returned = triton.testing.do_bench(fn, warmup=plan["warmup"], rep=plan["rep"], quantiles=plan["quantiles"])
        results[operation["name"]] = {
            "returned": [float(v) for v in returned],
            "observed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        print(f"sentinel {operation['name']}: median {returned[0]:.4f} ms", flush=True)
    with open(argv[2], "w", encoding="utf-8") as handle:
        json.dump(results, handle)


if __name__ == "__main__":
    main(sys.argv)
