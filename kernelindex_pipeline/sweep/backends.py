"""Which implementation Liger's dispatcher resolved, and sweeping chosen ones.

Liger >= 0.8.3 has `liger_kernel.backends`: one op (swiglu, cross_entropy, ...) has several
implementations (`nvidia-triton`, `nvidia-cutedsl`, `nvidia-cutile`, ...), resolved per call in this
order: an `impl=` argument, `LIGER_KERNEL_IMPL_<OP>`, `LIGER_KERNEL_IMPL`, `set_impl()`, else the
available one of lowest preference rank (on sm_90+ whenever `nvidia-cutlass-dsl` imports, CuTe-DSL wins
over Triton's rank 50 for swiglu, geglu, softmax, kl_div, fused_linear_cross_entropy (rank 10) and
rms_norm, layer_norm, rope, fused_add_rms_norm (40); 0.8.5 ranks its cross_entropy 60, so Triton's stays the default there).
So "liger" alone does not name a kernel any more.

The sample hook (sample_hook/sitecustomize.py) wraps the dispatcher's `resolve_impl` in the scripts'
process and appends one JSON line per distinct (CSV case, op, outcome) to a spool of that script alone
(a file without a name, like the samples spool):
the op, the implementation it resolved (or the error it raised), which step of the order decided and
the `LIGER_KERNEL_IMPL*` variables. This module reads that spool back and names each row's backend:
the implementations its ops resolved, e.g. `nvidia-cutedsl`, or `nvidia-cutedsl+nvidia-triton` for
a row whose ops resolved differently. A release without the dispatcher writes nothing, so its rows
keep the identity they always had.

A sweep's `backends` setting ({op: [implementation, ...]}) sweeps chosen implementations: each
variant runs every selected script with `LIGER_KERNEL_IMPL_<OP>=<implementation>` set, and its rows
become series of their own (liger/normalize.py: provider `liger@<backend>`).
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from typing import IO, Any

from kernelindex_pipeline.liger.csv import CASE_COLUMNS
from kernelindex_pipeline.liger.measured_rows import NAME

from .outcomes import ConfigurationError

DISPATCH_SPOOL_FD_VARIABLE = "KERNELINDEX_DISPATCH_SPOOL_FD"  # sample_hook/sitecustomize.py reads the same name
DISPATCH_FORMAT = "kernelindex-liger-dispatch/v1"
DISPATCH_SPOOL_MAX_BYTES = 16 * 2**20  # read back at most this much (the hook writes distinct lines only)
# The packages of Liger's optional implementations (setup.py extras cutedsl, cutile, lck): what the
# scripts' environment has of them decides what auto-selection picks, so they are environment software.
EXTRA_DISTRIBUTIONS = ("nvidia-cutlass-dsl", "apache-tvm-ffi", "cuda-tile", "liger-cute-kernels")


def dispatch_environment(spool_fd: int) -> dict[str, str]:
    """The variable that names the script's dispatch spool (a private descriptor: samples.private_spool)."""
    return {DISPATCH_SPOOL_FD_VARIABLE: str(spool_fd)}


@dataclass
class Dispatches:
    """One script's dispatcher resolutions read back."""

    by_case: dict[tuple[str, ...], dict[str, str]] = field(default_factory=dict)  # case cells -> {op: impl}
    errors: list[dict[str, Any]] = field(default_factory=list)  # {"op", "case", "error"}
    outside_cases: dict[str, str] = field(default_factory=dict)  # op -> impl resolved outside run_benchmarks
    variables: dict[str, str] = field(default_factory=dict)  # LIGER_KERNEL_IMPL* as the script saw them
    # op -> the steps of the dispatcher's order that decided its resolutions (argument, op_variable,
    # global_variable, set_impl, preference_rank): why a row got its backend
    chosen_by: dict[str, set[str]] = field(default_factory=dict)
    unreadable_lines: int = 0

    def backend_of(self, row: dict[str, str]) -> str | None:
        """`nvidia-cutedsl` (every op of the row resolved to it), `a+b` (several), None (no dispatch)."""
        ops = self.by_case.get(tuple(row.get(c, "") for c in CASE_COLUMNS))
        if not ops:
            return None
        return "+".join(sorted(set(ops.values())))

    def summary(self) -> dict[str, Any]:
        resolved: dict[str, list[str]] = {}
        for ops in [*self.by_case.values(), self.outside_cases]:
            for op, impl in ops.items():
                if impl not in resolved.setdefault(op, []):
                    resolved[op].append(impl)
        return {
            "resolved": {op: sorted(impls) for op, impls in sorted(resolved.items())},
            "errors": self.errors[:20],
            "variables": self.variables,
            "chosen_by": {op: sorted(steps) for op, steps in sorted(self.chosen_by.items())},
            "unreadable_lines": self.unreadable_lines,
        }


def read_dispatches(spool: IO[bytes]) -> Dispatches:
    """The dispatch spool of one script (empty: a release without the dispatcher, or no Liger op called)."""
    result = Dispatches()
    spool.seek(0)
    text = spool.read(DISPATCH_SPOOL_MAX_BYTES).decode("utf-8", errors="replace")
    for line in text.splitlines():
        try:
            record = json.loads(line)
            if record.get("format") != DISPATCH_FORMAT or not isinstance(record.get("op"), str):
                raise ValueError("not a dispatch record")
            case = record.get("case")
            cells = tuple(str(case.get(c) or "") for c in CASE_COLUMNS) if isinstance(case, dict) else None
            result.variables.update({str(k): str(v) for k, v in (record.get("variables") or {}).items()})
        except (ValueError, TypeError, AttributeError):
            result.unreadable_lines += 1
            continue
        if record.get("error"):
            result.errors.append({"op": record["op"], "case": case, "error": str(record["error"])[:500]})
        elif isinstance(record.get("impl"), str):
            target = result.by_case.setdefault(cells, {}) if cells else result.outside_cases
            target[record["op"]] = record["impl"]
            result.chosen_by.setdefault(record["op"], set()).add(str(record.get("chosen_by"))[:60])
        else:
            result.unreadable_lines += 1
    return result


@dataclass(frozen=True)
class Variant:
    """One way of running the scripts: `env` pins implementations; `name` tells variants apart."""

    name: str
    env: dict[str, str]


RESOLVED = Variant("resolved", {})


def backend_variants(backends: dict[str, list[str]] | None) -> list[Variant]:
    """The variants a sweep runs: only what resolves (no setting), else every combination of the chosen
    implementations, each op pinned through `LIGER_KERNEL_IMPL_<OP>`."""
    if not backends:
        return [RESOLVED]
    if not isinstance(backends, dict):
        raise ConfigurationError(
            f"the sweep setting backends must map an op to implementations, e.g. {{'swiglu': ['nvidia-triton', 'nvidia-cutedsl']}}; got {backends!r}"
        )
    axes = []
    for op, impls in sorted(backends.items()):
        names = [impls] if isinstance(impls, str) else list(impls or [])
        bad = [n for n in [op, *names] if not isinstance(n, str) or not NAME.match(n)]
        if bad or not names:
            raise ConfigurationError(
                f"backends[{op!r}] = {impls!r}: give an op name and implementation names of lowercase letters, digits, "
                "'-' and '_' (e.g. 'swiglu': ['nvidia-triton', 'nvidia-cutedsl'])"
            )
        axes.append([(op, name) for name in dict.fromkeys(names)])
    variants = []
    for combination in itertools.product(*axes):
        env = {f"LIGER_KERNEL_IMPL_{op.upper()}": impl for op, impl in combination}
        variants.append(Variant("-".join(f"{op}={impl}" for op, impl in combination), env))
    return variants
