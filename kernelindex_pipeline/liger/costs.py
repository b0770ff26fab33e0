"""Cost models of the curated Liger kernels: minimum HBM bytes and FLOPs of one timed pass.

The formulas are data (`data/liger-cost-models.yaml`, validated on load with pydantic and against the
kernel catalogue: every name a formula uses must be an axis every binding rule of that kernel gives a
WorkloadCase, or `size_`/`numel_`/`elem_` of one of its input tensors). They are written in the
catalogue's own integer expression language (`liger.catalogue.compile_expression`: integers, names,
+ - * // %, parentheses), so there is one expression language in the project and no text is ever
passed to `eval`; Python integers keep the counts exact however large.

`cost_of(kernel, mode, case_spec)` evaluates a pass's formulas on a WorkloadCase's `spec` (its axes and
input tensors); a kernel or pass without a formula gives a `NoCost` that says why, never a zero.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache, reduce
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from .catalogue import Expression, ExpressionUndefined, LigerCatalogueError, compile_expression, default_catalogue

BYTES, FLOPS = "bytes", "flops"
ANY_PASS = "any"  # a formula for every pass (the sentinel operations, which are timed at positions)
ELEMENT_BYTES = {
    "bf16": 2,
    "fp16": 2,
    "fp32": 4,
    "fp64": 8,
    "int64": 8,
    "int32": 4,
    "int16": 2,
    "int8": 1,
    "uint8": 1,
    "bool": 1,
}
TENSOR_PREFIXES = ("size_", "numel_", "elem_")
MAX_FILE_BYTES = 1 << 20  # the packaged file is ~12 KB; a bigger one is not a cost model


class CostModelError(ValueError):
    """The cost-model file is malformed; the message names the kernel, pass and formula."""


class _Pass(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    bytes: str | None = None
    flops: str | None = None
    l2: str | None = None
    none: str | None = None  # no cost model, and why

    @model_validator(mode="after")
    def _either_formula_or_reason(self) -> _Pass:
        if self.none is not None and (self.bytes or self.flops or self.l2):
            raise ValueError("a pass is either `none: <why>` or formulas, not both")
        if self.none is None and not (self.bytes or self.flops):
            raise ValueError("a pass needs a `bytes` or `flops` formula (or `none: <why>`)")
        return self


class _Kernel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    kernel: str
    bound: Literal["bytes", "flops"]
    passes: dict[str, _Pass]
    note: str | None = None
    # Liger's forward computes the gradients (its backward only scales them): a forward is then not comparable
    # with a provider's forward that does not, and its cost model charges a forward the gradients' work
    gradient_in_forward: bool = False


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    kernels: list[_Kernel]


@dataclass(frozen=True)
class PassModel:
    """The compiled formulas of one kernel and pass."""

    bytes: Expression | None
    flops: Expression | None
    l2: Expression | None


@dataclass(frozen=True)
class KernelModel:
    kernel: str
    bound: str  # bytes | flops
    passes: dict[str, PassModel | str]  # pass -> formulas, or why there is none
    note: str | None = None
    gradient_in_forward: bool = False  # Liger's forward computes the gradients (the file's comment says why)


@dataclass(frozen=True)
class Cost:
    """One workload's minimum work in one pass. `bound` says which of bytes and flops limits it."""

    bound: str
    bytes: int | None
    flops: int | None
    l2_bytes: int | None  # what the kernel re-reads (an L2-resident working set makes a reading implausible)

    @property
    def work(self) -> int:
        return self.bytes if self.bound == BYTES else self.flops  # type: ignore[return-value]


@dataclass(frozen=True)
class NoCost:
    reason: str


@dataclass(frozen=True)
class CostModels:
    kernels: dict[str, KernelModel] = field(default_factory=dict)

    def model_for(self, kernel: str, mode: str) -> PassModel | NoCost:
        model = self.kernels.get(kernel)
        if model is None:
            return NoCost(f"no cost model for kernel {kernel!r}")
        chosen = model.passes.get(mode, model.passes.get(ANY_PASS))
        if chosen is None and mode == "full":
            return _sum_of_passes(model)
        if chosen is None:
            return NoCost(f"no cost model for {kernel} {mode}")
        if isinstance(chosen, str):
            return NoCost(f"no cost model for {kernel} {mode}: {chosen}")
        return chosen


def _sum_of_passes(model: KernelModel) -> PassModel | NoCost:
    """`full` = forward + backward (Liger's scripts time both in one call) when both have formulas."""
    parts = [model.passes.get("forward"), model.passes.get("backward")]
    if not all(isinstance(p, PassModel) for p in parts):
        return NoCost(f"no cost model for {model.kernel} full (forward and backward both need one)")
    forward, backward = parts

    def add(a: Expression | None, b: Expression | None) -> Expression | None:
        if a is None or b is None:
            return None
        return Expression(
            f"({a.text}) + ({b.text})",
            tuple(dict.fromkeys(a.names + b.names)),
            lambda env: a.evaluate(env) + b.evaluate(env),
        )

    l2 = add(forward.l2, backward.l2) if forward.l2 and backward.l2 else None
    return PassModel(add(forward.bytes, backward.bytes), add(forward.flops, backward.flops), l2)


def tensor_variables(tensors: dict[str, Any]) -> dict[str, int]:
    """size_/numel_/elem_ of every tensor of a WorkloadCase spec (shape + dtype token)."""
    env: dict[str, int] = {}
    for name, tensor in tensors.items():
        shape = tensor.get("shape") or []
        elem = ELEMENT_BYTES.get(tensor.get("dtype"))
        if elem is None or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
            continue  # a formula naming it raises a KeyError: the case says no cost model
        numel = reduce(lambda a, b: a * b, shape, 1)
        env[f"numel_{name}"], env[f"elem_{name}"], env[f"size_{name}"] = numel, elem, numel * elem
    return env


def case_environment(case_spec: dict[str, Any]) -> dict[str, int]:
    """The names a formula may use for one WorkloadCase: its integer axes and its tensors' variables."""
    env = {k: v for k, v in (case_spec.get("axes") or {}).items() if isinstance(v, int) and not isinstance(v, bool)}
    env.update(tensor_variables(case_spec.get("tensors") or {}))
    return env


def cost_of(models: CostModels, kernel: str, mode: str, case_spec: dict[str, Any]) -> Cost | NoCost:
    """Evaluate one pass's formulas on a WorkloadCase spec."""
    chosen = models.model_for(kernel, mode)
    if isinstance(chosen, NoCost):
        return chosen
    env = case_environment(case_spec)
    try:
        values = [None if e is None else e.evaluate(env) for e in (chosen.bytes, chosen.flops, chosen.l2)]
    except KeyError as missing:
        return NoCost(f"the workload lacks {missing.args[0]!r}, which the {kernel} {mode} formula needs")
    except ExpressionUndefined as error:
        return NoCost(f"the {kernel} {mode} formula is undefined on this workload ({error})")
    bytes_, flops, l2 = values
    bound = models.kernels[kernel].bound
    if (bytes_ if bound == BYTES else flops) is None or (bytes_ if bound == BYTES else flops) <= 0:
        return NoCost(f"the {kernel} {mode} formula gives no positive {bound} on this workload")
    return Cost(bound=bound, bytes=bytes_, flops=flops, l2_bytes=l2 if l2 is not None else bytes_)


# ------------------------------------------------------------------------------------------ loading


def _known_names(kernel: str) -> tuple[set[str], set[str]] | None:
    """(axes every rule binds, input tensor names) of a catalogue kernel or sentinel operation; None
    for a kernel neither knows."""
    from kernelindex_pipeline.liger import sentinel

    catalogue = default_catalogue("full")
    if kernel in catalogue.kernels:
        k = catalogue.kernels[kernel]
        axes = [{name for name, _ in rule.axes} for rule in k.rules]
        return set.intersection(*axes) if axes else set(), {t.name for t in k.inputs}
    for planned in sentinel.PLAN["operations"]:
        if sentinel.kernel_name(planned["name"]) == kernel:
            spec = sentinel.workload_case(planned, "sha256:" + "0" * 64)["spec"]
            return set(spec["axes"]), set(spec["tensors"])
    return None


def _check_names(expression: Expression, axes: set[str], tensors: set[str], where: str) -> None:
    for name in expression.names:
        prefix = next((p for p in TENSOR_PREFIXES if name.startswith(p)), None)
        if prefix is not None and name[len(prefix) :] in tensors:
            continue
        if prefix is None and name in axes:
            continue
        raise CostModelError(
            f"{where}: {name!r} is neither an axis every binding rule gives ({', '.join(sorted(axes)) or 'none'}) "
            f"nor size_/numel_/elem_ of an input tensor ({', '.join(sorted(tensors)) or 'none'})"
        )


def _compile(entry: _Kernel, where: str) -> KernelModel:
    known = _known_names(entry.kernel)
    if known is None:
        raise CostModelError(f"{where}: kernel {entry.kernel!r} is neither in the kernel catalogue nor a sentinel")
    axes, tensors = known
    passes: dict[str, PassModel | str] = {}
    for mode, formulas in entry.passes.items():
        if formulas.none is not None:
            passes[mode] = formulas.none
            continue
        if getattr(formulas, entry.bound) is None:
            raise CostModelError(f"{where} {mode}: bound is {entry.bound}, so the pass needs a {entry.bound} formula")
        compiled = []
        for what in ("bytes", "flops", "l2"):
            text = getattr(formulas, what)
            if text is None:
                compiled.append(None)
                continue
            try:
                expression = compile_expression(text)
            except LigerCatalogueError as error:
                raise CostModelError(f"{where} {mode} {what}: {error}") from error
            _check_names(expression, axes, tensors, f"{where} {mode} {what} {text!r}")
            compiled.append(expression)
        passes[mode] = PassModel(*compiled)
    return KernelModel(entry.kernel, entry.bound, passes, entry.note, entry.gradient_in_forward)


def load_cost_models(path: Path | str | None = None) -> CostModels:
    """Read and check a cost-model file (the packaged one by default)."""
    source = resources.files("kernelindex_pipeline") / "data" / "liger-cost-models.yaml" if path is None else Path(path)
    where = str(path or "data/liger-cost-models.yaml")
    text = source.read_bytes()
    if len(text) > MAX_FILE_BYTES:
        raise CostModelError(f"{where}: {len(text)} bytes, over the {MAX_FILE_BYTES} a cost-model file may have")
    try:
        parsed = _File.model_validate(yaml.safe_load(text))
    except (yaml.YAMLError, ValidationError) as error:
        raise CostModelError(f"{where}: {error}") from error
    kernels: dict[str, KernelModel] = {}
    for entry in parsed.kernels:
        if entry.kernel in kernels:
            raise CostModelError(f"{where}: kernel {entry.kernel!r} is listed twice")
        kernels[entry.kernel] = _compile(entry, f"{where}: {entry.kernel}")
    return CostModels(kernels)


@cache
def default_cost_models() -> CostModels:
    """The packaged cost models, loaded once per process."""
    return load_cost_models()
