"""The curated Liger catalogue (kernels, providers, projects, GPUs) and its binding rules.

The facts live in `kernelindex_pipeline/data/liger-kernels.yaml` and `liger-providers.yaml` (the
`reference` profile: KernelIndex's own mapping, byte for byte) and `liger-extensions.yaml` (what the
`full` profile, the default, adds: kernels, rules, modes, providers, projects, GPUs, the model table
and the peak-memory metric, for rows the reference skips). The rule grammar is documented at the top
of the kernels file (categorical rules and `same_as` at the top of the extensions file). This module
reads them, checks that every rule is well formed (so a typo fails at load time, not on some row in
the middle of an import), and compiles rule expressions into small closures. Expressions are parsed by a tiny recursive-descent parser: only
integers, names, `+ - * // %` and parentheses exist, so nothing is ever handed to `eval`.

`not_in_reference` in the providers file is deliberately ignored: it is not part of the mapping (the
GPUs it lists are in the extensions file, for the full profile).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from kernelindex_pipeline.records.jsnumber import is_number, is_positive_integer, whole


class LigerCatalogueError(ValueError):
    """The catalogue YAML is malformed; the message names the file, kernel and rule."""


# ------------------------------------------------------------------------------------ expressions

_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z0-9_]*)|(//|[-+*%()]))")

Env = dict[str, int]
Expr = Callable[[Env], int]


class _ExpressionParser:
    """expr := term (('+'|'-') term)* ; term := factor (('*'|'//'|'%') factor)* ;
    factor := INT | NAME | '(' expr ')' | '-' factor"""

    def __init__(self, text: str):
        self.text = text
        self.tokens: list[tuple[str, str]] = []
        pos = 0
        text_stripped = text.rstrip()
        while pos < len(text_stripped):
            m = _TOKEN.match(text_stripped, pos)
            if not m:
                raise LigerCatalogueError(f"expression {text!r}: unexpected text at {text_stripped[pos:]!r}")
            number, name, op = m.groups()
            self.tokens.append(("int", number) if number else ("name", name) if name else ("op", op))
            pos = m.end()
        self.i = 0
        self.names: list[str] = []

    def parse(self) -> Expr:
        if not self.tokens:
            raise LigerCatalogueError(f"expression {self.text!r} is empty")
        fn = self._expr()
        if self.i != len(self.tokens):
            raise LigerCatalogueError(f"expression {self.text!r}: unexpected {self.tokens[self.i][1]!r}")
        return fn

    def _peek(self) -> str | None:
        return self.tokens[self.i][1] if self.i < len(self.tokens) and self.tokens[self.i][0] == "op" else None

    def _expr(self) -> Expr:
        return self._left_associative(("+", "-"), self._term)

    def _term(self) -> Expr:
        return self._left_associative(("*", "//", "%"), self._factor)

    def _left_associative(self, ops: tuple[str, ...], operand: Callable[[], Expr]) -> Expr:
        """operand (op operand)* for one precedence level, folded from the left."""
        left = operand()
        while self._peek() in ops:
            op = self.tokens[self.i][1]
            self.i += 1
            right = operand()
            left = _binary(op, left, right)
        return left

    def _factor(self) -> Expr:
        if self.i >= len(self.tokens):
            raise LigerCatalogueError(f"expression {self.text!r} ends early")
        kind, value = self.tokens[self.i]
        self.i += 1
        if kind == "int":
            constant = int(value)
            return lambda env: constant
        if kind == "name":
            self.names.append(value)
            return lambda env: env[value]
        if value == "(":
            inner = self._expr()
            if self._peek() != ")":
                raise LigerCatalogueError(f"expression {self.text!r}: missing ')'")
            self.i += 1
            return inner
        if value == "-":
            operand = self._factor()
            return lambda env: -operand(env)
        raise LigerCatalogueError(f"expression {self.text!r}: unexpected {value!r}")


class ExpressionUndefined(ArithmeticError):
    """Division or remainder by zero: JavaScript would produce NaN/Infinity, never an integer axis."""


def _floordiv(a: int, b: int) -> int:
    if b == 0:
        raise ExpressionUndefined("division by zero")
    return a // b  # Math.floor(a / b) for the operands the catalogue uses


def _remainder(a: int, b: int) -> int:
    if b == 0:
        raise ExpressionUndefined("remainder by zero")
    r = abs(a) % abs(b)  # JavaScript's % takes the sign of the dividend
    return -r if a < 0 else r


def _binary(op: str, left: Expr, right: Expr) -> Expr:
    if op == "+":
        return lambda env: left(env) + right(env)
    if op == "-":
        return lambda env: left(env) - right(env)
    if op == "*":
        return lambda env: left(env) * right(env)
    if op == "//":
        return lambda env: _floordiv(left(env), right(env))
    return lambda env: _remainder(left(env), right(env))


@dataclass(frozen=True)
class Expression:
    text: str
    names: tuple[str, ...]
    evaluate: Expr = field(repr=False, compare=False)


def compile_expression(text: Any) -> Expression:
    if isinstance(text, bool) or not isinstance(text, (str, int)):
        raise LigerCatalogueError(f"expression {text!r} must be a string or an integer")
    parser = _ExpressionParser(str(text))
    fn = parser.parse()
    return Expression(str(text), tuple(dict.fromkeys(parser.names)), fn)


# ----------------------------------------------------------------------------------------- checks

DTYPE_TOKENS = {"torch.bfloat16": "bf16", "torch.float16": "fp16", "torch.float32": "fp32"}


def _literal_matches(expected: Any, actual: Any) -> bool:
    """Type-strict equality as JavaScript's `===` on JSON values: 1 == 1.0, never true."""
    if is_number(expected):
        return is_number(actual) and actual == expected
    if isinstance(expected, bool):
        return type(actual) is bool and actual is expected
    if expected is None:
        return actual is None
    if isinstance(expected, str):
        return type(actual) is str and actual == expected
    return False


@dataclass(frozen=True)
class Check:
    key: str
    kind: str  # int | positive | number | dtype | literal
    literal: Any = None

    def passes(self, config: dict[str, Any]) -> bool:
        if self.key not in config:
            return False
        value = config[self.key]
        kind = self.kind
        if kind == "int":
            return is_positive_integer(value)
        if kind == "positive":
            return is_number(value) and value > 0 and value != float("inf")
        if kind == "number":
            return is_number(value)
        if kind == "dtype":
            return type(value) is str and value in DTYPE_TOKENS
        return _literal_matches(self.literal, value)


def _compile_check(key: str, spec: Any, where: str) -> Check:
    if isinstance(spec, dict):
        if set(spec) != {"equals"}:
            raise LigerCatalogueError(f"{where}: require.{key} must be a check name, a scalar or {{equals: v}}")
        return Check(key, "literal", spec["equals"])
    if spec in ("int", "positive", "number", "dtype"):
        return Check(key, spec)
    if isinstance(spec, (list, dict)):
        raise LigerCatalogueError(f"{where}: require.{key} must be a scalar")
    if isinstance(spec, float):
        spec = whole(spec)
    return Check(key, "literal", spec)


# ------------------------------------------------------------------------------------------ rules


@dataclass(frozen=True)
class Condition:
    left: Expression
    equal: bool  # True for ==, False for !=
    right: Expression

    def holds(self, env: Env) -> bool:
        return (self.left.evaluate(env) == self.right.evaluate(env)) is self.equal


@dataclass(frozen=True)
class Rule:
    index: int
    x_names: frozenset[str] | None  # None: any x_name
    x_names_negated: bool
    checks: tuple[Check, ...]
    int_keys: tuple[str, ...]
    axes: tuple[tuple[str, Expression], ...]
    where: tuple[Condition, ...]
    dtype_fixed: str | None
    dtype_key: str | None
    scalars: tuple[tuple[str, str | int | float], ...]  # name -> config key (str) or constant
    # Categorical x (model_config rows, full profile): None (x is a positive integer), "model" (x names
    # a model of the catalogue's model table; its dimensions are `model_<field>`) or "label" (x is only
    # a name; every axis comes from the config).
    category: str | None = None
    dtype_model: bool = False  # dtype: model (the model's dtype)

    def accepts_x_name(self, x_name: str) -> bool:
        if self.x_names is None:
            return True
        return (x_name in self.x_names) is not self.x_names_negated


@dataclass(frozen=True)
class TensorSpec:
    name: str
    shape: tuple[str | int, ...]
    dtype: str


@dataclass(frozen=True)
class Kernel:
    kernel: str  # CSV kernel_name
    slug: str
    family: str
    title: str
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    derived: tuple[tuple[str, Expression], ...]
    rules: tuple[Rule, ...]

    @property
    def categorical(self) -> bool:
        """Whether a rule takes a categorical x (a model name): then a non-numeric x_value may bind."""
        return any(rule.category is not None for rule in self.rules)


@dataclass(frozen=True)
class Provider:
    name: str  # CSV kernel_provider
    project: str
    title: str
    language: str
    license_declared: str
    license_concluded: str | None
    pip: str | None
    baseline: bool
    # spec.callable.symbol: what a provider that is one configuration of a kernel calls (liger-chunk-c<N>:
    # the FLCE loss with chunk_mem_const=N), so each configuration is an implementation of its own
    symbol: str | None = None


@dataclass(frozen=True)
class Project:
    slug: str
    name: str
    repository: str
    host_kind: str
    host_id: str
    kind: str


# The integer fields of benchmark_model_configs.ModelConfig a `category: model` rule may read, as
# `model_<field>` (the model table itself is data: liger-extensions.yaml `models`).
MODEL_INT_FIELDS = (
    "hidden_size",
    "intermediate_size",
    "vocab_size",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "max_position_embeddings",
    "num_experts",
    "topk",
    "moe_intermediate_size",
)
MODEL_FIELDS = tuple(f"model_{f}" for f in MODEL_INT_FIELDS)
CATEGORY_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z")  # a categorical x value (a model name)


@dataclass(frozen=True)
class Model:
    """One model of the model table: its integer dimensions (as `model_<field>`) and dtype token."""

    name: str
    dims: dict[str, int]
    dtype: str


@dataclass(frozen=True)
class ReferenceFacts:
    """What of a full catalogue is the reference's: a row decided by these alone is a reference row,
    whose objects (digest and name) must be exactly the reference profile's."""

    rule_counts: dict[str, int]  # reference kernel -> its number of rules (extension rules come after)
    providers: frozenset[str]
    hardware: frozenset[str]
    modes: tuple[str, ...]

    def binds(self, kernel: str, rule_index: int, provider: str, mode: str) -> bool:
        """Whether the reference itself binds this row (its kernel, rule, provider and mode)."""
        return rule_index < self.rule_counts.get(kernel, 0) and provider in self.providers and mode in self.modes


PROFILES = ("reference", "full")
DEFAULT_PROFILE = "full"

# The reference's timed passes, as its BenchmarkProtocol notes word them (extensions add their own).
REFERENCE_MODE_PHRASES = {
    "forward": "the module forward pass",
    "backward": "the backward pass of the module output given a random upstream gradient",
    "full": "the forward pass plus the backward pass",
}


@dataclass(frozen=True)
class Catalogue:
    metric_name: str
    modes: tuple[str, ...]
    kernels: dict[str, Kernel]
    providers: dict[str, Provider]
    projects: dict[str, Project]
    hardware: dict[str, dict[str, str]]
    profile: str = "reference"
    memory_metric: str | None = None  # metric_name of peak-memory rows (full profile); None: skipped
    mode_phrases: dict[str, str] = field(default_factory=lambda: dict(REFERENCE_MODE_PHRASES))
    memory_modes: tuple[str, ...] = ()  # passes a peak-memory row may name (full profile)
    ab_config_keys: tuple[str, ...] = ()  # config keys that mark an A/B comparison row (full profile)
    models: dict[str, Model] = field(default_factory=dict)  # model_config x values (full profile)
    reference: ReferenceFacts | None = None  # full profile: which parts are the reference's


_EXPR_OPS = re.compile(r"^(.*?)\s*(==|!=)\s*(.*)$")


def _compile_rule(
    index: int, raw: dict[str, Any], kernel: str, derived_names: set[str], input_axis_names: set[str]
) -> Rule:
    where = f"kernel {kernel!r} rule {index + 1}"
    unknown = set(raw) - {"x_name", "require", "where", "axes", "dtype", "scalars", "category"}
    if unknown:
        raise LigerCatalogueError(f"{where}: unknown keys {sorted(unknown)}")
    x_names, negated = _x_names(raw.get("x_name"), where)
    checks = _checks(raw.get("require"), where)
    int_keys = tuple(c.key for c in checks if c.kind == "int")
    category = raw.get("category")
    axes = _axes(raw.get("axes"), category, int_keys, where)
    axis_names = {name for name, _ in axes}
    conditions = _conditions(raw.get("where"), category, axis_names, where)
    dtype_fixed, dtype_key, dtype_model = _dtype_source(raw.get("dtype"), category, checks, where)
    scalars = _scalars(raw.get("scalars"), checks, where)
    missing_shape = input_axis_names - axis_names - derived_names
    if missing_shape:
        raise LigerCatalogueError(f"{where}: input shapes use {sorted(missing_shape)}, which the rule does not bind")
    return Rule(
        index,
        x_names,
        negated,
        checks,
        int_keys,
        axes,
        conditions,
        dtype_fixed,
        dtype_key,
        scalars,
        category,
        dtype_model,
    )


def _x_names(x_name: Any, where: str) -> tuple[frozenset[str] | None, bool]:
    """A rule's x_name: the names it accepts (None: any) and whether they are the names it refuses."""
    if x_name is None:
        return None, False
    if isinstance(x_name, str):
        return frozenset([x_name]), False
    if isinstance(x_name, list) and all(isinstance(n, str) for n in x_name):
        return frozenset(x_name), False
    if isinstance(x_name, dict) and set(x_name) == {"not"} and isinstance(x_name["not"], list):
        return frozenset(str(n) for n in x_name["not"]), True
    raise LigerCatalogueError(f"{where}: x_name must be a name, a list of names or {{not: [...]}}")


def _checks(require: Any, where: str) -> tuple[Check, ...]:
    """A rule's `require`: the config checks a row must pass."""
    require = require or {}
    if not isinstance(require, dict):
        raise LigerCatalogueError(f"{where}: require must be a mapping")
    return tuple(_compile_check(str(k), v, where) for k, v in require.items())


def _axes(axes_raw: Any, category: Any, int_keys: tuple[str, ...], where: str) -> tuple[tuple[str, Expression], ...]:
    """A rule's axes, each reading only what the rule's kind of x allows: x and the int-checked keys
    (numeric x), the model's dimensions (category: model) or the int-checked keys alone (label)."""
    if not isinstance(axes_raw, dict) or not axes_raw:
        raise LigerCatalogueError(f"{where}: axes must be a non-empty mapping")
    axes = tuple((str(name), compile_expression(expr)) for name, expr in axes_raw.items())
    if category not in (None, "model", "label"):
        raise LigerCatalogueError(f"{where}: category must be model or label")
    allowed = set(int_keys) | ({"x"} if category is None else set(MODEL_FIELDS) if category == "model" else set())
    for name, expr in axes:
        missing = set(expr.names) - allowed
        if missing:
            raise LigerCatalogueError(
                f"{where}: axis {name!r} uses {sorted(missing)}, which are neither x nor int-checked keys"
            )
    return axes


def _conditions(where_raw: Any, category: Any, axis_names: set[str], where: str) -> tuple[Condition, ...]:
    """A rule's `where`: conditions over its axes (and x, when x is numeric)."""
    conditions = []
    for text in [where_raw] if isinstance(where_raw, str) else (where_raw or []):
        m = _EXPR_OPS.match(str(text))
        if not m:
            raise LigerCatalogueError(f"{where}: where {text!r} must be '<expr> == <expr>' or '<expr> != <expr>'")
        cond = Condition(compile_expression(m.group(1)), m.group(2) == "==", compile_expression(m.group(3)))
        missing = (set(cond.left.names) | set(cond.right.names)) - axis_names - ({"x"} if category is None else set())
        if missing:
            raise LigerCatalogueError(f"{where}: where {text!r} uses {sorted(missing)}, which are not axes of the rule")
        conditions.append(cond)
    return tuple(conditions)


def _dtype_source(
    dtype: Any, category: Any, checks: tuple[Check, ...], where: str
) -> tuple[str | None, str | None, bool]:
    """Where a rule's dtype comes from: (a fixed token, a dtype-checked config key, the model's dtype)."""
    if isinstance(dtype, str) and dtype.startswith("config."):
        dtype_key = dtype[len("config.") :]
        if not any(c.key == dtype_key and c.kind == "dtype" for c in checks):
            raise LigerCatalogueError(f"{where}: dtype {dtype!r} needs require.{dtype_key}: dtype")
        return None, dtype_key, False
    if dtype == "model" and category == "model":
        return None, None, True
    if isinstance(dtype, str) and dtype in DTYPE_TOKENS.values():
        return dtype, None, False
    raise LigerCatalogueError(f"{where}: dtype must be bf16, fp16, fp32, config.<key> or (category: model) model")


def _scalars(scalars_raw: Any, checks: tuple[Check, ...], where: str) -> tuple[tuple[str, str | int | float], ...]:
    """A rule's scalars: each a config key with a positive or number check, or a constant."""
    scalars = []
    for name, source in (scalars_raw or {}).items():
        if isinstance(source, str):
            if not any(c.key == source and c.kind in ("positive", "number") for c in checks):
                raise LigerCatalogueError(
                    f"{where}: scalar {name!r} reads {source!r}, which needs a positive or number check"
                )
        elif not is_number(source):
            raise LigerCatalogueError(f"{where}: scalar {name!r} must name a config key or be a number")
        else:
            source = whole(source)
        scalars.append((str(name), source))
    return tuple(scalars)


def _tensor(raw: dict[str, Any], where: str) -> TensorSpec:
    try:
        shape = tuple(
            item if isinstance(item, int) and not isinstance(item, bool) else str(item) for item in raw["shape"]
        )
        return TensorSpec(str(raw["name"]), shape, str(raw["dtype"]))
    except (KeyError, TypeError) as exc:
        raise LigerCatalogueError(f"{where}: tensor needs name, shape and dtype ({exc})") from None


def _kernel(raw: dict[str, Any], first_index: int = 0) -> Kernel:
    name = raw.get("kernel")
    where = f"kernel {name!r}"
    for key in ("kernel", "slug", "family", "title", "inputs", "outputs", "bindings"):
        if key not in raw:
            raise LigerCatalogueError(f"{where}: missing {key!r}")
    inputs = tuple(_tensor(t, where) for t in raw["inputs"])
    outputs = tuple(_tensor(t, where) for t in raw["outputs"])
    derived = tuple((str(k), compile_expression(v)) for k, v in (raw.get("derived") or {}).items())
    derived_names = {k for k, _ in derived}
    input_axis_names = {s for t in inputs for s in t.shape if isinstance(s, str)}
    rules = tuple(
        _compile_rule(i, r, str(name), derived_names, input_axis_names)
        for i, r in enumerate(raw["bindings"], first_index)
    )
    for rule in rules:
        bound = {a for a, _ in rule.axes}
        for dname, expr in derived:
            missing = set(expr.names) - bound
            if missing:
                raise LigerCatalogueError(
                    f"{where}: derived axis {dname!r} uses {sorted(missing)}, not bound by rule {rule.index + 1}"
                )
    return Kernel(str(name), str(raw["slug"]), str(raw["family"]), str(raw["title"]), inputs, outputs, derived, rules)


def load_catalogue(
    kernels_path: Path | str | None = None,
    providers_path: Path | str | None = None,
    *,
    profile: str = "reference",
    extensions_path: Path | str | None = None,
) -> Catalogue:
    """Read and check the YAML files (the packaged ones by default).

    profile `reference`: the kernels and providers files only (KernelIndex's mapping). `full`: those
    plus the extensions file, which may only add: new kernels, rules appended after a reference
    kernel's own (so a row the reference binds still binds by the reference rule), modes, providers,
    projects and GPUs the reference lacks, and the peak-memory metric.
    """
    if profile not in PROFILES:
        raise LigerCatalogueError(f"unknown catalogue profile {profile!r}: use one of {', '.join(PROFILES)}")
    kernels_doc = _read_yaml(kernels_path, "liger-kernels.yaml")
    providers_doc = _read_yaml(providers_path, "liger-providers.yaml")
    kernels: dict[str, Kernel] = {}
    for raw in kernels_doc.get("kernels") or []:
        k = _kernel(raw)
        if k.kernel in kernels:
            raise LigerCatalogueError(f"kernel {k.kernel!r} is listed twice")
        kernels[k.kernel] = k
    projects = _projects(providers_doc.get("projects"))
    providers = _providers(providers_doc.get("providers"), projects)
    hardware = {str(gpu): dict(facts) for gpu, facts in (providers_doc.get("hardware") or {}).items()}
    # `not_in_reference` is intentionally not read.
    catalogue = Catalogue(
        str(kernels_doc.get("metric_name", "speed")),
        tuple(kernels_doc.get("modes") or ()),
        kernels,
        providers,
        projects,
        hardware,
    )
    if profile == "full":
        catalogue = _extend(
            catalogue, _read_yaml(extensions_path, "liger-extensions.yaml"), extensions_path or "liger-extensions.yaml"
        )
    return catalogue


def _projects(raw: Any) -> dict[str, Project]:
    return {
        slug: Project(slug, p["name"], p["repository"], p["host"]["kind"], p["host"]["id"], p["kind"])
        for slug, p in (raw or {}).items()
    }


def _providers(raw: Any, projects: dict[str, Project]) -> dict[str, Provider]:
    providers = {}
    for name, p in (raw or {}).items():
        if p["project"] not in projects:
            raise LigerCatalogueError(f"provider {name!r}: unknown project {p['project']!r}")
        lic = p.get("license") or {}
        providers[str(name)] = Provider(
            str(name),
            p["project"],
            p["title"],
            p["language"],
            lic["declared"],
            lic.get("concluded"),
            p.get("pip"),
            p.get("role") == "baseline",
            p.get("symbol"),
        )
    return providers


_EXTENSION_KEYS = frozenset(
    {
        "memory_metric",
        "memory_modes",
        "modes",
        "ab_config_keys",
        "models",
        "kernels",
        "rules",
        "providers",
        "projects",
        "hardware",
    }
)


def _extend(base: Catalogue, doc: dict[str, Any], where: Any) -> Catalogue:
    """The full profile: `base` plus the extensions document, which may add but never change."""
    unknown = set(doc) - _EXTENSION_KEYS
    if unknown:
        raise LigerCatalogueError(f"{where}: unknown keys {sorted(unknown)}")
    modes = _extended_modes(base.mode_phrases, doc.get("modes"), where)
    kernels = _extended_kernels(base.kernels, doc, where)
    projects = _added(base.projects, _projects(doc.get("projects")), "project", where)
    providers = _added(base.providers, _providers(doc.get("providers"), projects), "provider", where)
    hardware = _extended_hardware(base.hardware, doc.get("hardware"), where)
    return Catalogue(
        base.metric_name,
        base.modes + tuple(m for m in modes if m not in base.modes),
        kernels,
        providers,
        projects,
        hardware,
        profile="full",
        memory_metric=doc.get("memory_metric"),
        mode_phrases=modes,
        memory_modes=tuple(doc.get("memory_modes") or ()) or tuple(modes),
        ab_config_keys=tuple(doc.get("ab_config_keys") or ()),
        models=_models(doc.get("models"), where),
        reference=ReferenceFacts(
            {name: len(k.rules) for name, k in base.kernels.items()},
            frozenset(base.providers),
            frozenset(base.hardware),
            base.modes,
        ),
    )


def _extended_modes(reference_phrases: dict[str, str], raw: Any, where: Any) -> dict[str, str]:
    """The reference's modes and their phrases, then the extension's new ones."""
    modes = dict(reference_phrases)
    for mode, phrase in (raw or {}).items():
        if mode in modes:
            raise LigerCatalogueError(f"{where}: mode {mode!r} is already a reference mode")
        modes[str(mode)] = str(phrase)
    return modes


def _extended_kernels(reference: dict[str, Kernel], doc: dict[str, Any], where: Any) -> dict[str, Kernel]:
    """The reference's kernels plus the extension's new kernels (a `same_as` one takes the facts of
    the kernel it names), then the extension's rules appended after a reference kernel's own."""
    kernels = dict(reference)
    for raw in doc.get("kernels") or []:
        if isinstance(raw, dict) and "same_as" in raw:
            # another CSV name of an operation already catalogued (a renamed kernel): its facts, own rules
            same = kernels.get(raw["same_as"])
            if same is None:
                raise LigerCatalogueError(
                    f"{where}: kernel {raw.get('kernel')!r}: same_as {raw['same_as']!r} is not catalogued above it"
                )
            raw = {**_kernel_facts(same), **{k: v for k, v in raw.items() if k != "same_as"}}
        k = _kernel(raw)
        if k.kernel in kernels:
            raise LigerCatalogueError(
                f"{where}: kernel {k.kernel!r} is already in the catalogue (extend it under `rules`)"
            )
        kernels[k.kernel] = k
    for name, rules in (doc.get("rules") or {}).items():
        kernel = reference.get(name)
        if kernel is None:
            raise LigerCatalogueError(f"{where}: rules for {name!r}, which is not a reference kernel")
        extended = _kernel({**_kernel_facts(kernel), "bindings": list(rules)}, first_index=len(kernel.rules))
        kernels[name] = Kernel(
            kernel.kernel,
            kernel.slug,
            kernel.family,
            kernel.title,
            kernel.inputs,
            kernel.outputs,
            kernel.derived,
            kernel.rules + extended.rules,
        )
    return kernels


def _added(reference: dict[str, Any], additions: dict[str, Any], noun: str, where: Any) -> dict[str, Any]:
    """The reference's entries plus the extension's, none of which may replace one of the reference's."""
    merged = dict(reference)
    for name, entry in additions.items():
        if name in merged:
            raise LigerCatalogueError(f"{where}: {noun} {name!r} is already in the reference")
        merged[name] = entry
    return merged


def _extended_hardware(reference: dict[str, dict[str, str]], raw: Any, where: Any) -> dict[str, dict[str, str]]:
    """The reference's GPUs plus the extension's, each with at least vendor, product and architecture."""
    hardware = dict(reference)
    for gpu, facts in (raw or {}).items():
        if gpu in hardware:
            raise LigerCatalogueError(f"{where}: GPU {gpu!r} is already in the reference")
        if not isinstance(facts, dict) or not {"vendor", "product", "architecture"} <= set(facts):
            raise LigerCatalogueError(f"{where}: GPU {gpu!r} needs vendor, product and architecture")
        hardware[str(gpu)] = {k: str(v) for k, v in facts.items()}
    return hardware


def _models(raw: Any, where: Any) -> dict[str, Model]:
    models = {}
    for name, facts in (raw or {}).items():
        name = str(name)
        if not CATEGORY_LABEL.match(name) or not isinstance(facts, dict):
            raise LigerCatalogueError(f"{where}: model {name!r} needs a plain name and a mapping of facts")
        unknown = set(facts) - set(MODEL_INT_FIELDS) - {"dtype", "hidden_act"}
        if unknown:
            raise LigerCatalogueError(f"{where}: model {name!r}: unknown fields {sorted(unknown)}")
        dims = {}
        for key in MODEL_INT_FIELDS:
            if key in facts:
                if not is_positive_integer(facts[key]):
                    raise LigerCatalogueError(f"{where}: model {name!r}: {key} must be a positive integer")
                dims[f"model_{key}"] = whole(facts[key])
        dtype = facts.get("dtype", "torch.bfloat16")
        if dtype not in DTYPE_TOKENS:
            raise LigerCatalogueError(f"{where}: model {name!r}: dtype must be one of {sorted(DTYPE_TOKENS)}")
        models[name] = Model(name, dims, DTYPE_TOKENS[dtype])
    return models


# Kernel facts a rule compiles against: shapes and derived axes (for `rules:` extending a kernel).
def _kernel_facts(kernel: Kernel) -> dict[str, Any]:
    def tensors(items):
        return [{"name": t.name, "shape": list(t.shape), "dtype": t.dtype} for t in items]

    return {
        "kernel": kernel.kernel,
        "slug": kernel.slug,
        "family": kernel.family,
        "title": kernel.title,
        "inputs": tensors(kernel.inputs),
        "outputs": tensors(kernel.outputs),
        "derived": {name: expr.text for name, expr in kernel.derived},
    }


# libyaml's safe loader when PyYAML has it (same YAML semantics, several times faster).
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _read_yaml(path: Path | str | None, default_name: str) -> dict[str, Any]:
    try:
        if path is None:
            text = resources.files("kernelindex_pipeline").joinpath("data", default_name).read_text("utf-8")
        else:
            text = Path(path).read_text("utf-8")
        doc = yaml.load(text, Loader=_SAFE_LOADER)
    except (OSError, yaml.YAMLError) as exc:
        raise LigerCatalogueError(f"cannot read {path or default_name}: {exc}") from None
    if not isinstance(doc, dict):
        raise LigerCatalogueError(f"{path or default_name}: expected a mapping at the top")
    return doc


@lru_cache(maxsize=2)
def default_catalogue(profile: str = DEFAULT_PROFILE) -> Catalogue:
    """The packaged catalogue of one profile (`full` unless asked), loaded once per process."""
    return load_catalogue(profile=profile)
