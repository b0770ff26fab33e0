"""Raw timing samples from Liger's benchmark scripts, without changing the scripts.

The runner puts this directory first on the scripts' PYTHONPATH, so Python imports this module at
start-up (site.py imports `sitecustomize`). It installs an import hook and nothing else; triton and the
scripts' own `utils` are patched only when a script imports them:

* `triton.testing.do_bench` keeps every timed sample of each call and still returns to the script
  exactly what the original returns for the same arguments:
  - triton >= 3.2 (do_bench ends in `_summarize_statistics(times, quantiles, return_mode)` and takes
    `return_mode="all"`): the original runs once with `quantiles=None, return_mode="all"` and hands back
    its list of timings; the script then gets `_summarize_statistics(times, quantiles, return_mode)`,
    triton's own summary of that same list, which is what the original computes last;
  - older triton (no "all"; the summary is an inline `torch.quantile` over a float32 tensor of the
    timings): the original runs unchanged with the script's arguments and the hook watches the last
    `torch.quantile` call made during it, whose input tensor holds the timings. The script gets the
    original's own return value. A call without quantiles returns unchanged, without samples.
* `liger_kernel.backends.dispatch.resolve_impl` (Liger >= 0.8.3): every implementation the dispatcher
  resolves (or the error it raises), per op and current case, with the step of its resolution order
  that decided and the LIGER_KERNEL_IMPL* variables, goes to the descriptor $KERNELINDEX_DISPATCH_SPOOL_FD (private, as the samples spool), one line per
  distinct (case, op, outcome); the script gets exactly what the original returns or raises
  (sweep/backends.py reads it back);
* `utils.run_benchmarks` (the scripts' shared helper) tells the hook which CSV row each call measures:
  every `bench_test_fn(input)` call runs with the row's key cells (kernel, provider, mode, metric, x,
  config string) as the current case, computed the way `update_benchmark_data_csv` writes them.

Each call appends one JSON line to the spool, the inherited file descriptor named by
$KERNELINDEX_SAMPLES_SPOOL_FD (a file without a name that the runner made for this script alone, so no
other script can reach it); each line is written whole before do_bench returns, so a crash keeps the
calls before it. Without that variable the hook does nothing. The spool is bounded by
$KERNELINDEX_SAMPLES_MAX_BYTES: past it, calls are still counted but their samples are dropped.

Standard library only (the scripts' environment need not have kernelindex_pipeline). A sitecustomize
that the host itself has further along sys.path is run after this one, so the hook shadows nothing.
"""

from __future__ import annotations

import contextvars
import fcntl
import functools
import importlib.abc
import importlib.machinery
import importlib.util
import inspect
import json
import os
import stat
import sys

SPOOL_FD_VARIABLE = "KERNELINDEX_SAMPLES_SPOOL_FD"
MAX_BYTES_VARIABLE = "KERNELINDEX_SAMPLES_MAX_BYTES"
DEFAULT_MAX_BYTES = 256 * 2**20
FORMAT = "kernelindex-do-bench-call/v1"

_case: contextvars.ContextVar = contextvars.ContextVar("kernelindex_case", default=None)


class _Spool:
    def __init__(self, fd: int, max_bytes: int):
        self.fd = fd
        self.max_bytes = max_bytes
        self.written = 0
        self.calls = 0

    def write(self, record: dict) -> None:
        self.calls += 1
        record = {"format": FORMAT, "call": self.calls, **record}
        line = json.dumps(record, separators=(",", ":")) + "\n"
        if self.written + len(line) > self.max_bytes:
            record.pop("samples", None)
            record["dropped"] = f"spool limit of {self.max_bytes} bytes reached"
            line = json.dumps(record, separators=(",", ":")) + "\n"
        data = line.encode("utf-8")
        while data:  # os.write may write less than asked
            data = data[os.write(self.fd, data) :]
        self.written += len(line)


_spool: _Spool | None = None


def _cell(value) -> str:
    return "" if value is None else str(value)


def current_case() -> dict | None:
    return _case.get()


class measuring:
    """`with sitecustomize.measuring({"sentinel": "copy"}):` tags the do_bench calls inside with a case
    (the pipeline's own sentinel program uses it; Liger's scripts get theirs from run_benchmarks)."""

    def __init__(self, case: dict):
        self.case = case

    def __enter__(self):
        self.token = _case.set(dict(self.case))
        return self

    def __exit__(self, *exc):
        _case.reset(self.token)
        return False


# --- triton.testing.do_bench -------------------------------------------------------------------------
def _floats(values) -> list[float]:
    return [float(v) for v in values]


def _wrap_do_bench(testing) -> None:
    original = getattr(testing, "do_bench", None)
    if original is None or getattr(original, "__kernelindex_wrapped__", False):
        return
    try:
        signature = inspect.signature(original)
    except (TypeError, ValueError):
        return
    parameters = signature.parameters
    if "quantiles" not in parameters:
        return
    summarize = getattr(testing, "_summarize_statistics", None)
    names = getattr(getattr(original, "__code__", None), "co_names", ())
    # The shape of triton >= 3.2: the timings go through _summarize_statistics, which knows "all".
    returns_all = (
        summarize is not None
        and "return_mode" in parameters
        and "_summarize_statistics" in names
        and "all" in _nested_consts(original)
    )
    version = getattr(sys.modules.get("triton"), "__version__", None)

    def default(name):
        parameter = parameters.get(name)
        return None if parameter is None or parameter.default is inspect.Parameter.empty else parameter.default

    @functools.wraps(original)
    def do_bench(*args, **kwargs):
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError:
            return original(*args, **kwargs)  # the original raises its own error
        given = bound.arguments
        quantiles = given.get("quantiles", default("quantiles"))
        return_mode = given.get("return_mode", default("return_mode"))
        grad_to_none = given.get("grad_to_none")
        arguments = {
            "warmup": given.get("warmup", default("warmup")),
            "rep": given.get("rep", default("rep")),
            "quantiles": None if quantiles is None else _floats(quantiles),
            "return_mode": return_mode,
            "grad_to_none": None if grad_to_none is None else len(grad_to_none),
        }
        if returns_all:
            bound.arguments["quantiles"] = None
            bound.arguments["return_mode"] = "all"
            times = original(*bound.args, **bound.kwargs)
            samples = _floats(times)
            result = summarize(times, quantiles, return_mode)
            method = "return_mode_all"
        elif quantiles is not None:
            result, samples = _watch_torch_quantile(original, args, kwargs)
            method = "torch_quantile_watch"
        else:
            return original(*args, **kwargs)
        if _spool is not None:
            _spool.write(
                {
                    "case": current_case(),
                    "method": method,
                    "triton": version,
                    "arguments": arguments,
                    "returned": result if isinstance(result, (int, float)) else _floats(result),
                    "samples": samples,
                }
            )
        return result

    do_bench.__kernelindex_wrapped__ = True
    testing.do_bench = do_bench


def _nested_consts(function) -> tuple:
    code = getattr(function, "__code__", None)
    found: list = []
    stack = [code] if code is not None else []
    while stack:
        current = stack.pop()
        for const in current.co_consts:
            if hasattr(const, "co_consts"):
                stack.append(const)
            elif isinstance(const, (tuple, frozenset)):
                found.extend(const)
            else:
                found.append(const)
    return tuple(found)


def _watch_torch_quantile(original, args, kwargs):
    """Run the original do_bench; return (its result, the input of the last torch.quantile during it)."""
    import torch

    real_quantile = torch.quantile
    seen: list = []

    def quantile(input, *q_args, **q_kwargs):
        seen.append(input)
        return real_quantile(input, *q_args, **q_kwargs)

    torch.quantile = quantile
    try:
        result = original(*args, **kwargs)
    finally:
        torch.quantile = real_quantile
    samples = _floats(seen[-1].tolist()) if seen else None
    return result, samples


# --- the scripts' utils.run_benchmarks ---------------------------------------------------------------
def _wrap_run_benchmarks(utils) -> None:
    run = getattr(utils, "run_benchmarks", None)
    if run is None or getattr(run, "__kernelindex_wrapped__", False) or not hasattr(utils, "SingleBenchmarkRunInput"):
        return
    try:
        signature = inspect.signature(run)
    except (TypeError, ValueError):
        return
    if "bench_test_fn" not in signature.parameters:
        return
    encoder = getattr(utils, "CustomEncoder", None)

    @functools.wraps(run)
    def run_benchmarks(*args, **kwargs):
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError:
            return run(*args, **kwargs)
        given = bound.arguments
        bench_test_fn = given["bench_test_fn"]
        fixed = {
            "kernel_name": _cell(given.get("kernel_name")),
            "metric_name": _cell(given.get("metric_name")),
            "x_name": _cell(given.get("x_name")),
        }

        def bench(run_input, *more, **more_kwargs):
            try:
                config = json.dumps(getattr(run_input, "extra_benchmark_config", None), cls=encoder)
            except (TypeError, ValueError):
                config = None
            case = {
                **fixed,
                "kernel_provider": _cell(getattr(run_input, "kernel_provider", None)),
                "kernel_operation_mode": _cell(getattr(run_input, "kernel_operation_mode", None)),
                "x_value": _cell(getattr(run_input, "x", None)),
                "extra_benchmark_config_str": config,
            }
            token = _case.set(case)
            try:
                return bench_test_fn(run_input, *more, **more_kwargs)
            finally:
                _case.reset(token)

        bound.arguments["bench_test_fn"] = bench
        return run(*bound.args, **bound.kwargs)

    run_benchmarks.__kernelindex_wrapped__ = True
    utils.run_benchmarks = run_benchmarks


# --- liger_kernel.backends.dispatch (Liger >= 0.8.3) --------------------------------------------------
DISPATCH_SPOOL_FD_VARIABLE = "KERNELINDEX_DISPATCH_SPOOL_FD"  # a private descriptor, as the samples spool
DISPATCH_FORMAT = "kernelindex-liger-dispatch/v1"
_DISPATCH_LIMIT = 10_000  # distinct (case, op, outcome) lines per script; dispatch runs on every call
_dispatch_seen: set = set()


def _impl_variables() -> dict:
    return {k: v for k, v in sorted(os.environ.items()) if k.startswith(("LIGER_KERNEL_IMPL", "LIGER_KERNEL_BACKEND"))}


def _chosen_by(module, op_name, requested) -> str:
    """Which step of the dispatcher's resolution order decided (its own order: argument, per-op
    variable, global variable, set_impl, preference rank)."""
    if requested:
        return "argument"
    per_op = getattr(module, "_per_op_env", None)
    if per_op is not None and per_op(op_name):
        return "op_variable"
    global_env = getattr(module, "_global_env", None)
    if global_env is not None and global_env():
        return "global_variable"
    if getattr(module, "_GLOBAL_IMPL", None) or getattr(module, "_GLOBAL_BACKEND", None):
        return "set_impl"
    return "preference_rank"


def _dispatch_fd():
    """The dispatch spool's descriptor when it is the runner's (a file without a name, open for
    appending, like the samples spool), else None."""
    try:
        fd = int(os.environ.get(DISPATCH_SPOOL_FD_VARIABLE, ""))
        info = os.fstat(fd)
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
    except (ValueError, OSError):
        return None
    return fd if stat.S_ISREG(info.st_mode) and info.st_nlink == 0 and flags & os.O_APPEND else None


def _write_dispatch(record: dict) -> None:
    fd = _dispatch_fd()
    if fd is None or len(_dispatch_seen) >= _DISPATCH_LIMIT:
        return
    data = (json.dumps({"format": DISPATCH_FORMAT, **record}, separators=(",", ":"), default=str) + "\n").encode(
        "utf-8"
    )
    while data:  # os.write may write less than asked
        data = data[os.write(fd, data) :]


def _wrap_resolve_impl(module) -> None:
    """Record which implementation Liger's dispatcher resolved for each op, per CSV case. `dispatch()`
    looks `resolve_impl` up in its module at every call, so replacing the module attribute sees them all;
    the script gets exactly what the original returns (or raises). It runs on every kernel call, inside
    do_bench's timed loop: a repeat (same case object, op, request and implementation object as the op's
    last call) costs a dict lookup and identity compares; only a new one is described and written."""
    original = getattr(module, "resolve_impl", None)
    if original is None or getattr(original, "__kernelindex_wrapped__", False):
        return

    def describe(op_name, requested, case) -> dict:
        record = {"case": case, "op": str(op_name), "variables": _impl_variables()}
        try:
            record["chosen_by"] = _chosen_by(module, op_name, requested)
        except Exception as error:  # the dispatcher's own helpers failed: say so, resolve anyway
            record["chosen_by"] = f"unknown ({type(error).__name__})"
        return record

    last: dict = {}  # op -> (case object, request, impl object) of its last recorded resolution

    @functools.wraps(original)
    def resolve_impl(op_name, requested=None, device=None):
        case = current_case()
        try:
            impl = original(op_name, requested, device)
        except Exception as error:
            cells = tuple(case.values()) if case else None
            key = (cells, op_name, requested, "error", str(error))
            if key not in _dispatch_seen:
                _dispatch_seen.add(key)
                _write_dispatch(
                    {**describe(op_name, requested, case), "error": f"{type(error).__name__}: {error}"[:500]}
                )
            raise
        seen = last.get(op_name)
        if seen is not None and seen[0] is case and seen[2] is impl and seen[1] == requested:
            return impl  # the hot path: the same case resolving the same way again (identity compares only)
        last[op_name] = (case, requested, impl)  # holding them keeps their ids from being reused
        key = (tuple(case.values()) if case else None, op_name, requested, getattr(impl, "impl_name", None))
        if key not in _dispatch_seen:
            _dispatch_seen.add(key)
            _write_dispatch(
                {
                    **describe(op_name, requested, case),
                    "impl": str(getattr(impl, "impl_name", impl)),
                    "rank": getattr(impl, "preference_rank", None),
                }
            )
        return impl

    resolve_impl.__kernelindex_wrapped__ = True
    module.resolve_impl = resolve_impl
    if getattr(module, "resolve_backend", None) is original:
        module.resolve_backend = resolve_impl


# --- the import hook ---------------------------------------------------------------------------------
_PATCHES = {
    "triton.testing": _wrap_do_bench,
    "utils": _wrap_run_benchmarks,
    "liger_kernel.backends.dispatch": _wrap_resolve_impl,
}


class _PatchingLoader(importlib.abc.Loader):
    def __init__(self, loader, patch):
        self._loader = loader
        self._patch = patch

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        try:
            self._patch(module)
        except Exception as error:  # never break the script: it then runs without samples
            print(f"kernelindex sample hook: could not patch {module.__name__}: {error!r}", file=sys.stderr)

    def __getattr__(self, name):  # get_source, get_filename, is_package, ... of the real loader
        return getattr(self._loader, name)


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        patch = _PATCHES.get(name)
        if patch is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _PatchingLoader(spec.loader, patch)
        return spec


def _run_next_sitecustomize() -> None:
    """The host's own sitecustomize (further along sys.path), which this module would otherwise hide."""
    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None or os.path.dirname(os.path.abspath(spec.origin or "")) == here:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


def install() -> None:
    global _spool
    if any(isinstance(f, _Finder) for f in sys.meta_path):
        return
    dispatch_only = _dispatch_fd() is not None  # the dispatcher's records need no samples spool
    try:
        fd = int(os.environ.get(SPOOL_FD_VARIABLE, ""))
        info = os.fstat(fd)
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
    except (ValueError, OSError):
        info = flags = None
    if info is None or not stat.S_ISREG(info.st_mode) or info.st_nlink != 0 or not flags & os.O_APPEND:
        # No spool, or not the runner's (a file without a name, open for appending): a process that got
        # the variable but not the descriptor (a subprocess of the script) must not write into another file.
        if dispatch_only:
            sys.meta_path.insert(0, _Finder())
        return  # the script runs without samples
    try:
        max_bytes = int(os.environ.get(MAX_BYTES_VARIABLE) or DEFAULT_MAX_BYTES)
    except ValueError:
        max_bytes = DEFAULT_MAX_BYTES
    _spool = _Spool(fd, max_bytes)
    sys.meta_path.insert(0, _Finder())


install()
_run_next_sitecustomize()
