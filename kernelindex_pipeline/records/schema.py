"""The project's own strict schema for the seven kernelindex.dev/v1alpha1 kinds.

Written field for field after the catalogue's published JSON Schemas (draft
2020-12): every object forbids unknown fields, with the same required fields,
patterns, maximum lengths, enums, constants and integer ranges. The models are
pydantic v2 `TypedDict`s in strict mode, validated by one `TypeAdapter` per
kind (validation only; nothing is converted for the caller).

Decisions where the published schemas leave room (`json_schema` says the same, except where noted):

* Integers: a bool is never an integer. A whole JSON float (`4096.0`) IS an
  integer, as in JSON Schema and ECMAScript (JSON has one number type, and RFC
  8785 writes 4096.0 as `4096`, so the digest is the same). Ranges are
  +-(2**53 - 1) as published.
* Numbers: finite only (NaN/inf have no JSON form); an integer in a number field
  must lie within +-(2**53 - 1), because RFC 8785 (the digest) cannot write it
  otherwise. The emitted JSON Schema cannot say the latter for Python ints.
* URLs: where the catalogue expects a web link (metadata.sourceRefs[].url, any
  `repository`, `homepage`) only `https://` URLs are accepted. Evidence and
  artifact `uri` fields may be any absolute URI (`https:`, `s3:`, `file:` ...)
  but must have a scheme and no whitespace. The published schemas only cap the length.
* Patterns use `[0-9]` for the published `\\d`, so they mean the same in
  ECMAScript, Rust (pydantic-core) and Python (`\\d` is Unicode-wide in the latter two).
* observedAt: the published UTC-instant pattern (leap years included; `Z` only,
  seconds and fractions optional), plus `format: date-time` as published.
* timing.latencyNs.confidence95: exactly two items (published: `prefixItems` of two).
* maxLength counts code points (JSON Schema semantics).
* `$` ends the text: a trailing newline fails a pattern, as in ECMAScript (Python's `re`,
  which the `jsonschema` package uses, would let "...\\n" through).

Speed: a valid BenchmarkRun takes roughly 7-10 µs (`bench/schema.py`).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from typing import Annotated, Any, Literal, NotRequired

from pydantic import BeforeValidator, ConfigDict, Field, PlainValidator, TypeAdapter, ValidationError, WithJsonSchema
from pydantic.json_schema import GenerateJsonSchema
from pydantic_core import PydanticCustomError
from typing_extensions import TypedDict

from .canonical import API_VERSION
from .units import MAX_SAFE_INTEGER

KINDS = (
    "SoftwareProject",
    "OperationSpec",
    "WorkloadCase",
    "ImplementationRevision",
    "BenchmarkProtocol",
    "ExecutionEnvironment",
    "BenchmarkRun",
)

STRICT = ConfigDict(extra="forbid", strict=True)

# ---------------------------------------------------------------- patterns

NAME_PATTERN = r"^[a-z0-9][a-z0-9._-]*$"
IDENTIFIER_PATTERN = r"^[a-z][a-z0-9_]*$"
DIGEST_PATTERN = r"^sha256:[0-9a-f]{64}$"
COMMIT_PATTERN = r"^[0-9a-f]{40}$"
FAMILY_PATTERN = r"^[a-z0-9][a-z0-9-]*$"
EXPRESSION_PATTERN = r"^[a-z0-9_+\-*%/() ]+$"
DURATION_PATTERN = r"^[0-9]+(\.[0-9]+)?\s?(ns|us|µs|ms|s)$"
HTTPS_URL_PATTERN = r"^https://[A-Za-z0-9.-]+(:[0-9]+)?([/?#]\S*)?$"
URI_PATTERN = r"^[A-Za-z][A-Za-z0-9+.-]*:\S+$"
# The published UTC-instant pattern, with [0-9] for \d.
UTC_INSTANT_PATTERN = (
    r"^(?:(?:[0-9][0-9][2468][048]|[0-9][0-9][13579][26]|[0-9][0-9]0[48]|[02468][048]00|[13579][26]00)-02-29"
    r"|[0-9]{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)"
    r"|(?:02)-(?:0[1-9]|1[0-9]|2[0-8])))"
    r"T(?:(?:[01][0-9]|2[0-3]):[0-5][0-9](?::[0-5][0-9](?:\.[0-9]+)?)?(?:Z))$"
)

# What each pattern asks for, in words, for problem messages.
PATTERN_MEANINGS = {
    NAME_PATTERN: "a name of lowercase letters, digits, '.', '_' and '-', starting with a letter or digit",
    IDENTIFIER_PATTERN: "an identifier like 'p20' or 'cuda_events' (lowercase letters, digits and '_', "
    "starting with a letter)",
    DIGEST_PATTERN: "a digest 'sha256:' followed by 64 lowercase hex digits",
    COMMIT_PATTERN: "a full git commit: 40 lowercase hex digits",
    FAMILY_PATTERN: "a slug of lowercase letters, digits and '-', starting with a letter or digit",
    EXPRESSION_PATTERN: "an integer expression over axis names with + - * / % and parentheses",
    HTTPS_URL_PATTERN: "an https:// URL",
    URI_PATTERN: "an absolute URI with a scheme (https://, s3://, file://, ...) and no spaces",
    UTC_INSTANT_PATTERN: "a real UTC instant like 2025-08-05T00:08:54.000Z (ending in Z)",
}

# ---------------------------------------------------------------- scalar types


def _text(max_length: int | None = None, pattern: str | None = None, **extra: Any) -> Any:
    return Annotated[str, Field(max_length=max_length, pattern=pattern, json_schema_extra=extra or None)]


Name = _text(200, NAME_PATTERN)
Identifier = _text(pattern=IDENTIFIER_PATTERN)
Digest = _text(pattern=DIGEST_PATTERN)
Commit = _text(pattern=COMMIT_PATTERN)
HttpsUrl = _text(2000, HTTPS_URL_PATTERN)
Uri = _text(2000, URI_PATTERN)
UtcInstant = _text(pattern=UTC_INSTANT_PATTERN, format="date-time")
Expression = _text(200, EXPRESSION_PATTERN)
Slug100 = _text(100, FAMILY_PATTERN)
Text50, Text100, Text200, Text500, Text1000, Text2000 = (_text(n) for n in (50, 100, 200, 500, 1000, 2000))


def _whole_float_as_int(value: Any) -> Any:
    # JSON has one number type: 4096.0 is the integer 4096 (and RFC 8785 writes it so).
    if type(value) is float and value.is_integer():
        return int(value)
    return value


def _integer(minimum: int = -MAX_SAFE_INTEGER, *, exclusive: bool = False) -> Any:
    bound = Field(gt=minimum, le=MAX_SAFE_INTEGER) if exclusive else Field(ge=minimum, le=MAX_SAFE_INTEGER)
    # The bounds come before the validator so that the JSON Schema shows them as minimum/maximum.
    return Annotated[int, bound, BeforeValidator(_whole_float_as_int)]


SignedInt = _integer()
NonNegativeInt = _integer(0)
PositiveInt = _integer(0, exclusive=True)


def _safe_number(value: Any) -> Any:
    if type(value) is int and not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
        raise PydanticCustomError(
            "unsafe_integer", "integer beyond +-(2**53 - 1): RFC 8785 cannot write it; give it as a float"
        )
    return value


def _number(**bounds: Any) -> Any:
    return Annotated[float, Field(allow_inf_nan=False, **bounds), BeforeValidator(_safe_number)]


Number = _number()
NonNegativeNumber = _number(ge=0)
PositiveNumber = _number(gt=0)
Ratio = _number(ge=0, le=1)


def _integer_or_text(minimum: int, pattern: str, what: str) -> Any:
    """An integer in [minimum, 2**53 - 1] or a string matching pattern (the published anyOf), with one clear error."""
    matcher = re.compile(pattern.removeprefix("^").removesuffix("$"))

    def validate(value: Any) -> Any:
        value = _whole_float_as_int(value)
        if type(value) is int:
            if minimum <= value <= MAX_SAFE_INTEGER:
                return value
        elif type(value) is str and matcher.fullmatch(value):
            return value
        raise PydanticCustomError("integer_or_text", "Input should be {what}", {"what": what})

    schema = {
        "anyOf": [
            {"type": "integer", "minimum": minimum, "maximum": MAX_SAFE_INTEGER},
            {"type": "string", "pattern": pattern},
        ]
    }
    return Annotated[Any, PlainValidator(validate), WithJsonSchema(schema)]


Duration = _integer_or_text(0, DURATION_PATTERN, "an integer 0..9007199254740991 or a duration like '12.5 ms'")
ShapeItem = _integer_or_text(0, IDENTIFIER_PATTERN, "an integer 0..9007199254740991 or an axis name like 'batch'")

# ---------------------------------------------------------------- envelope


def _typed_dict(cls: type) -> type:
    cls.__pydantic_config__ = STRICT  # type: ignore[attr-defined]
    return cls


@_typed_dict
class Author(TypedDict):
    name: NotRequired[Text200]
    github: NotRequired[Text100]


@_typed_dict
class SourceRef(TypedDict):
    url: HttpsUrl


@_typed_dict
class Metadata(TypedDict):
    name: Name
    title: NotRequired[Text200]
    description: NotRequired[Text2000]
    labels: NotRequired[dict[Identifier, Text200]]
    authors: NotRequired[list[Author]]
    sourceRefs: NotRequired[list[SourceRef]]


@_typed_dict
class ArtifactRef(TypedDict):
    uri: Uri
    digest: Digest


# ---------------------------------------------------------------- SoftwareProject


@_typed_dict
class ProjectHost(TypedDict):
    kind: Literal["github", "huggingface", "gitlab", "other"]
    id: Text200


@_typed_dict
class ProjectPackage(TypedDict):
    ecosystem: Identifier
    name: Text200


@_typed_dict
class SoftwareProjectSpec(TypedDict):
    name: Text200
    kind: NotRequired[Literal["library", "individual", "vendor"]]
    repository: NotRequired[HttpsUrl]
    homepage: NotRequired[HttpsUrl]
    host: NotRequired[ProjectHost]
    packages: NotRequired[list[ProjectPackage]]


# ---------------------------------------------------------------- OperationSpec


@_typed_dict
class OperationAxis(TypedDict):
    role: Literal["variable", "constant", "derived"]
    type: Literal["integer"]
    value: NotRequired[SignedInt]
    minimum: NotRequired[SignedInt]
    maximum: NotRequired[SignedInt]
    expression: NotRequired[Expression]


@_typed_dict
class TensorSignature(TypedDict):
    shape: Annotated[list[ShapeItem], Field(min_length=1)]
    dtype: Identifier
    layout: NotRequired[Literal["row_major", "col_major", "contiguous", "strided"]]


@_typed_dict
class ScalarSignature(TypedDict):
    dtype: Identifier


@_typed_dict
class OperationPort(TypedDict):
    name: Identifier
    tensor: NotRequired[TensorSignature]
    scalar: NotRequired[ScalarSignature]


@_typed_dict
class OperationSemantics(TypedDict):
    expression: NotRequired[Text2000]
    mutation: Literal["none", "in_place", "destination"]
    determinism: Literal["deterministic", "nondeterministic", "unspecified"]


@_typed_dict
class OperationReference(TypedDict):
    language: Identifier
    artifact: NotRequired[ArtifactRef]


@_typed_dict
class OperationSpecSpec(TypedDict):
    family: Slug100
    axes: dict[Identifier, OperationAxis]
    inputs: Annotated[list[OperationPort], Field(min_length=1)]
    outputs: Annotated[list[OperationPort], Field(min_length=1)]
    semantics: OperationSemantics
    reference: NotRequired[OperationReference]


# ---------------------------------------------------------------- WorkloadCase


@_typed_dict
class TensorData(TypedDict):
    generator: Identifier
    seed: NotRequired[NonNegativeInt]
    parameters: NotRequired[dict[Identifier, Number]]
    artifact: NotRequired[ArtifactRef]


@_typed_dict
class WorkloadTensor(TypedDict):
    shape: Annotated[list[NonNegativeInt], Field(min_length=1)]
    dtype: Identifier
    strides: NotRequired[list[SignedInt]]
    alignmentBytes: NotRequired[PositiveInt]
    data: NotRequired[TensorData]


@_typed_dict
class WorkloadScalar(TypedDict):
    dtype: Identifier
    value: Number


Policy = Literal["reject", "exact_match", "ignore"]


@_typed_dict
class WorkloadCorrectness(TypedDict):
    comparator: Identifier
    maxAbsoluteError: NotRequired[NonNegativeNumber]
    maxRelativeError: NotRequired[NonNegativeNumber]
    requiredMatchedRatio: NotRequired[Ratio]
    nanPolicy: NotRequired[Policy]
    infinityPolicy: NotRequired[Policy]


@_typed_dict
class WorkloadCaseSpec(TypedDict):
    operationSpecDigest: Digest
    axes: dict[Identifier, SignedInt]
    tensors: dict[Identifier, WorkloadTensor]
    scalars: NotRequired[dict[Identifier, WorkloadScalar]]
    correctness: WorkloadCorrectness


# ---------------------------------------------------------------- ImplementationRevision


@_typed_dict
class ProjectRevision(TypedDict):
    repository: NotRequired[HttpsUrl]
    commit: NotRequired[Commit]
    version: NotRequired[Text100]
    treeDigest: NotRequired[Digest]


@_typed_dict
class OperationRef(TypedDict):
    specDigest: Digest


@_typed_dict
class CallableRef(TypedDict):
    language: Identifier
    path: NotRequired[Text500]
    symbol: NotRequired[Text200]
    interface: NotRequired[Identifier]


@_typed_dict
class Support(TypedDict):
    hardwareArchitectures: list[Identifier]
    productsTested: NotRequired[list[Text100]]
    axes: NotRequired[list[Text200]]
    dtypes: list[Identifier]
    layouts: NotRequired[list[Text50]]


@_typed_dict
class SourceArchive(TypedDict):
    contentDigest: Digest
    fileName: NotRequired[Text200]
    sizeBytes: NotRequired[PositiveInt]


@_typed_dict
class Install(TypedDict):
    kind: Literal["git", "pip", "package", "container", "source"]
    repository: NotRequired[HttpsUrl]
    commit: NotRequired[Commit]
    package: NotRequired[Text200]
    version: NotRequired[Text100]
    command: NotRequired[Text1000]


@_typed_dict
class BuildVariant(TypedDict):
    name: Name
    install: Install
    requirements: NotRequired[dict[Identifier, Text200]]


@_typed_dict
class LicenseEvidence(TypedDict):
    path: Text500
    digest: NotRequired[Digest]


@_typed_dict
class Licensing(TypedDict):
    declared: NotRequired[Text200]
    concluded: NotRequired[Text200]
    evidence: NotRequired[LicenseEvidence]


@_typed_dict
class ImplementationRevisionSpec(TypedDict):
    projectRevision: ProjectRevision
    operation: OperationRef
    callable: CallableRef
    support: Support
    source: NotRequired[SourceArchive]
    buildVariants: NotRequired[list[BuildVariant]]
    licensing: Licensing


# ---------------------------------------------------------------- BenchmarkProtocol


@_typed_dict
class Harness(TypedDict):
    name: Text200
    version: NotRequired[Text100]
    repository: NotRequired[HttpsUrl]
    commit: NotRequired[Commit]


@_typed_dict
class Measurement(TypedDict):
    timer: Identifier
    synchronization: NotRequired[Identifier]
    compileIncluded: NotRequired[bool]
    setupIncluded: NotRequired[bool]
    warmupIterations: NotRequired[NonNegativeInt]
    warmupDuration: NotRequired[Duration]
    measuredIterations: NotRequired[PositiveInt]
    samples: NotRequired[PositiveInt]
    inputRegeneration: NotRequired[Identifier]
    outlierPolicy: NotRequired[Text500]
    primaryStatistic: Identifier


@_typed_dict
class ProtocolCorrectness(TypedDict):
    reference: Text500
    comparator: Identifier


@_typed_dict
class DevicePolicy(TypedDict):
    clocksLocked: NotRequired[bool]
    powerLimitWatts: NotRequired[PositiveNumber]
    persistenceMode: NotRequired[bool]


@_typed_dict
class Comparability(TypedDict):
    family: Identifier
    notes: NotRequired[Text1000]


@_typed_dict
class BenchmarkProtocolSpec(TypedDict):
    harness: Harness
    measurement: Measurement
    correctness: NotRequired[ProtocolCorrectness]
    devicePolicy: NotRequired[DevicePolicy]
    comparability: NotRequired[Comparability]


# ---------------------------------------------------------------- ExecutionEnvironment


@_typed_dict
class Hardware(TypedDict):
    vendor: Identifier
    product: Text200
    architecture: Identifier
    formFactor: NotRequired[Text100]
    memoryBytes: NotRequired[PositiveInt]
    count: NotRequired[PositiveInt]
    interconnect: NotRequired[Text200]


@_typed_dict
class Framework(TypedDict):
    name: Identifier
    version: Text100


@_typed_dict
class Software(TypedDict):
    operatingSystem: NotRequired[Text200]
    kernel: NotRequired[Text200]
    driver: NotRequired[Text100]
    cudaToolkit: NotRequired[Text100]
    compiler: NotRequired[Text200]
    framework: NotRequired[Framework]
    libraries: NotRequired[dict[Identifier, Text100]]


@_typed_dict
class Settings(TypedDict):
    clocksLocked: NotRequired[bool]
    powerLimitWatts: NotRequired[PositiveNumber]
    persistenceMode: NotRequired[bool]
    eccEnabled: NotRequired[bool]
    environmentVariables: NotRequired[dict[Text200, Text500]]


@_typed_dict
class ExecutionEnvironmentSpec(TypedDict):
    hardware: Hardware
    software: Software
    settings: NotRequired[Settings]
    imageDigest: NotRequired[Digest]


# ---------------------------------------------------------------- BenchmarkRun

RunStatus = Literal[
    "passed",
    "incorrect_shape",
    "incorrect_dtype",
    "incorrect_numerical",
    "compile_error",
    "runtime_error",
    "timeout",
    "resource_exceeded",
    "invalid_reference",
    "policy_violation",
    "suspected_reward_hack",
    "incomplete_evidence",
    "revoked",
]


@_typed_dict
class RunCorrectness(TypedDict):
    comparator: Identifier
    maximumAbsoluteError: NotRequired[NonNegativeNumber]
    maximumRelativeError: NotRequired[NonNegativeNumber]
    matchedRatio: NotRequired[Ratio]


@_typed_dict
class LatencyNs(TypedDict):
    median: NotRequired[Duration]
    mean: NotRequired[Duration]
    p05: NotRequired[Duration]
    p95: NotRequired[Duration]
    minimum: NotRequired[Duration]
    maximum: NotRequired[Duration]
    mad: NotRequired[Duration]
    # A JSON array of exactly two; strict mode would only take a Python tuple.
    confidence95: NotRequired[Annotated[tuple[Duration, Duration], Field(strict=False)]]


@_typed_dict
class Timing(TypedDict):
    primaryStatistic: Identifier
    samples: NotRequired[PositiveInt]
    latencyNs: LatencyNs
    rawSamples: NotRequired[ArtifactRef]


@_typed_dict
class RunMeasurement(TypedDict):
    metric: Identifier
    unit: Identifier
    statistic: Identifier
    value: Number
    sampleCount: NotRequired[PositiveInt]


@_typed_dict
class SourceNative(TypedDict):
    source: Slug100
    benchmark: NotRequired[Text200]
    externalId: NotRequired[Text500]
    metrics: NotRequired[dict[Identifier, Number]]


@_typed_dict
class HarnessEvidence(TypedDict):
    repository: HttpsUrl
    commit: Commit


@_typed_dict
class Evidence(TypedDict):
    logs: NotRequired[ArtifactRef]
    rawSamples: NotRequired[ArtifactRef]
    harness: NotRequired[HarnessEvidence]


@_typed_dict
class BenchmarkRunSpec(TypedDict):
    implementationDigest: Digest
    workloadDigest: Digest
    protocolDigest: Digest
    environmentDigest: Digest
    status: RunStatus
    correctness: NotRequired[RunCorrectness]
    timing: NotRequired[Timing]
    measurements: NotRequired[list[RunMeasurement]]
    sourceNative: NotRequired[SourceNative]
    evidence: NotRequired[Evidence]
    observedAt: UtcInstant


# ---------------------------------------------------------------- the seven manifests

ApiVersion = Literal["kernelindex.dev/v1alpha1"]
assert API_VERSION == "kernelindex.dev/v1alpha1"


@_typed_dict
class SoftwareProject(TypedDict):
    apiVersion: ApiVersion
    kind: Literal["SoftwareProject"]
    metadata: Metadata
    spec: SoftwareProjectSpec


@_typed_dict
class OperationSpec(TypedDict):
    apiVersion: ApiVersion
    kind: Literal["OperationSpec"]
    metadata: Metadata
    spec: OperationSpecSpec


@_typed_dict
class WorkloadCase(TypedDict):
    apiVersion: ApiVersion
    kind: Literal["WorkloadCase"]
    metadata: Metadata
    spec: WorkloadCaseSpec


@_typed_dict
class ImplementationRevision(TypedDict):
    apiVersion: ApiVersion
    kind: Literal["ImplementationRevision"]
    metadata: Metadata
    spec: ImplementationRevisionSpec


@_typed_dict
class BenchmarkProtocol(TypedDict):
    apiVersion: ApiVersion
    kind: Literal["BenchmarkProtocol"]
    metadata: Metadata
    spec: BenchmarkProtocolSpec


@_typed_dict
class ExecutionEnvironment(TypedDict):
    apiVersion: ApiVersion
    kind: Literal["ExecutionEnvironment"]
    metadata: Metadata
    spec: ExecutionEnvironmentSpec


@_typed_dict
class BenchmarkRun(TypedDict):
    apiVersion: ApiVersion
    kind: Literal["BenchmarkRun"]
    metadata: Metadata
    spec: BenchmarkRunSpec


MODELS: dict[str, type] = {
    "SoftwareProject": SoftwareProject,
    "OperationSpec": OperationSpec,
    "WorkloadCase": WorkloadCase,
    "ImplementationRevision": ImplementationRevision,
    "BenchmarkProtocol": BenchmarkProtocol,
    "ExecutionEnvironment": ExecutionEnvironment,
    "BenchmarkRun": BenchmarkRun,
}
assert tuple(MODELS) == KINDS

_ADAPTERS: dict[str, TypeAdapter] = {kind: TypeAdapter(model) for kind, model in MODELS.items()}

# ---------------------------------------------------------------- API


@dataclass(frozen=True)
class Problem:
    """One reason a manifest is invalid: which record ("Kind/name"), which field (dotted path), what is wrong."""

    record: str
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.record}: {self.field or '(manifest)'}: {self.message}"


class InvalidRecords(ValueError):
    """Raised by `ensure_valid`; `.problems` lists every problem found."""

    def __init__(self, problems: list[Problem]):
        self.problems = list(problems)
        shown = "\n".join(f"  {problem}" for problem in self.problems[:20])
        more = f"\n  ... and {len(self.problems) - 20} more" if len(self.problems) > 20 else ""
        super().__init__(f"{len(self.problems)} problem(s) in records:\n{shown}{more}")


def record_label(manifest: Any) -> str:
    """ "Kind/name" for messages, with '?' for what is missing."""
    if not isinstance(manifest, dict):
        return "?/?"
    kind = manifest.get("kind")
    metadata = manifest.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    kind_text = _one_line(kind) if isinstance(kind, str) and kind else "?"
    name_text = _one_line(name) if isinstance(name, str) and name else "?"
    return f"{kind_text}/{name_text}"


_PLAIN_KEY = re.compile(r"[A-Za-z0-9_-]+")


def _field_path(location: tuple[Any, ...]) -> tuple[str, bool]:
    """'spec.measurements[0].value' from pydantic's location; True when the error is about a key itself.

    Keys that are not plain words are quoted (metadata.labels['a b']), so the path stays one line.
    """
    path = ""
    about_key = False
    for part in location:
        if part == "[key]":
            about_key = True
        elif isinstance(part, int):
            path += f"[{part}]"
        elif _PLAIN_KEY.fullmatch(str(part)):
            path += f".{part}" if path else str(part)
        else:
            path += f"[{str(part)!r}]"
    return path, about_key


def _one_line(text: str) -> str:
    return text if text.isprintable() else repr(text)[1:-1]


def _shorten(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def validate_manifest(manifest: Any) -> list[Problem]:
    """Every problem with one manifest against its kind's schema; empty when valid. Never raises for bad input."""
    if type(manifest) is not dict and not isinstance(manifest, dict):
        return [Problem(record_label(manifest), "", f"a manifest must be a JSON object, not {type(manifest).__name__}")]
    kind = manifest.get("kind")
    adapter = _ADAPTERS.get(kind) if type(kind) is str else None
    if adapter is None:
        record = record_label(manifest)
        problems = [Problem(record, "kind", f"unknown kind {_shorten(kind)}; expected one of {', '.join(KINDS)}")]
        if manifest.get("apiVersion") != API_VERSION:
            problems.append(
                Problem(record, "apiVersion", f"must be {API_VERSION!r}, got {_shorten(manifest.get('apiVersion'))}")
            )
        return problems
    try:
        adapter.validate_python(manifest)
    except ValidationError as error:
        record = record_label(manifest)
        return [_problem(record, detail) for detail in error.errors(include_url=False)]
    return []


def _problem(record: str, detail: dict[str, Any]) -> Problem:
    field, about_key = _field_path(detail["loc"])
    message = detail["msg"]
    kind = detail["type"]
    if about_key:
        if kind == "string_pattern_mismatch" and detail.get("ctx", {}).get("pattern") in PATTERN_MEANINGS:
            message = f"should be {PATTERN_MEANINGS[detail['ctx']['pattern']]}"
        message = f"the key {_shorten(detail['input'])} {message}"
    elif kind == "extra_forbidden":
        message = "unknown field (not in the schema)"
    elif kind == "string_pattern_mismatch" and detail.get("ctx", {}).get("pattern") in PATTERN_MEANINGS:
        message = f"should be {PATTERN_MEANINGS[detail['ctx']['pattern']]} (got {_shorten(detail['input'])})"
    elif kind != "missing":
        message = f"{message} (got {_shorten(detail['input'])})"
    return Problem(record, field, message)


def ensure_valid(manifests: Iterable[Any]) -> None:
    """Raise `InvalidRecords` listing every problem of every manifest; return None when all are valid."""
    problems: list[Problem] = []
    for manifest in manifests:
        problems.extend(validate_manifest(manifest))
    if problems:
        raise InvalidRecords(problems)


class _PublishedStyleJsonSchema(GenerateJsonSchema):
    """pydantic's generator, written the way the published schemas are: keys as propertyNames, no field titles."""

    def dict_schema(self, schema: Any) -> dict[str, Any]:
        generated = super().dict_schema(schema)
        patterns = generated.pop("patternProperties", None)
        if patterns:
            # pydantic writes dict[Pattern, V] as patternProperties, which lets other keys through;
            # the models reject them, as the published propertyNames + additionalProperties do.
            ((pattern, value_schema),) = patterns.items()
            generated["propertyNames"] = {"type": "string", "pattern": pattern}
            generated["additionalProperties"] = value_schema
        elif "propertyNames" in generated:
            generated["propertyNames"] = {"type": "string", **generated["propertyNames"]}
        return generated

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


@cache
def _json_schema(kind: str) -> dict[str, Any]:
    schema = _ADAPTERS[kind].json_schema(schema_generator=_PublishedStyleJsonSchema)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema, "title": kind}


def json_schema(kind: str) -> dict[str, Any]:
    """The draft 2020-12 JSON Schema of one kind (a fresh copy each call)."""
    if kind not in _ADAPTERS:
        raise KeyError(f"unknown kind {kind!r}; expected one of {', '.join(KINDS)}")
    return copy.deepcopy(_json_schema(kind))


def json_schemas() -> dict[str, dict[str, Any]]:
    """The JSON Schema of every kind, in KINDS order."""
    return {kind: json_schema(kind) for kind in KINDS}
