"""Reading manifests from files: JSON (one object or an array), JSON Lines, multi-document YAML.

Any object in them may also be a grouped submission bundle
`{projects: [...], operations: [...], workloads: [...], implementations: [...],
protocols: [...], environments: [...], runs: [...]}` (every group optional,
one document may hold one group or all), which yields every manifest inside.

Each manifest comes with its location, for messages:
  `file.json` (the file is one manifest), `file.json#3` (3rd array item),
  `file.jsonl:12` (line 12), `file.yaml#3` (3rd YAML document), `file.yaml#1[0]`
  (first item of a YAML document that is a list),
  and `<location>/runs[0]` for the first entry of a bundle's runs.

Unreadable input raises `ManifestFileError`, one line naming the file and the
line, document or item. Whether a manifest is *valid* is not decided here
(see `schema.validate_manifest`).

YAML is read with a deliberately small set of implicit types, a subset of
PyYAML's YAML 1.1 ones, so that it reads what PyYAML writes exactly and never
turns text into something else: timestamps stay strings (`observedAt`), only
`true`/`false` are booleans (`on`, `yes` stay text), integers are decimal only
(no octal `017`, no sexagesimal `22:13:03`), and duplicate keys are errors.

Bounds (a manifest file is untrusted input): YAML aliases (`*name`) are refused, so an alias bomb
(a few hundred bytes that expand to billions of nodes) is an error naming the file, not minutes of
work; there are no merge keys (`<<`) either, whose expansion copies. Every document may nest at
most MAX_DEPTH levels; deeper input (`[` x 100 000) is an error naming the file, never a
RecursionError.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from .schema import KINDS

# The bundle's groups, in the dependency order of KINDS.
BUNDLE_GROUPS: dict[str, str] = {
    "projects": "SoftwareProject",
    "operations": "OperationSpec",
    "workloads": "WorkloadCase",
    "implementations": "ImplementationRevision",
    "protocols": "BenchmarkProtocol",
    "environments": "ExecutionEnvironment",
    "runs": "BenchmarkRun",
}
assert tuple(BUNDLE_GROUPS.values()) == KINDS

MAX_DEPTH = 64  # a manifest nests about 6 levels deep

YAML_SUFFIXES = {".yaml", ".yml"}
JSON_LINES_SUFFIXES = {".jsonl", ".ndjson"}


class ManifestFileError(ValueError):
    """A manifest file that cannot be read; the message names the file and where in it."""


# Python refuses to convert integers of more than 4300 digits (a ValueError that is no JSONDecodeError);
# no manifest value has more than 16 (2^53 - 1), so anything far beyond is refused as a file error.
MAX_INTEGER_DIGITS = 1000


class _IntegerTooLong(ValueError):
    def __init__(self, digits: int):
        super().__init__(digits)
        self.digits = digits


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INTEGER_DIGITS:
        raise _IntegerTooLong(len(text.lstrip("-")))
    return int(text)


def _too_long(location: str, error: _IntegerTooLong) -> str:
    return f"{location}: an integer of {error.digits} digits (at most {MAX_INTEGER_DIGITS} are read; a manifest's have at most 16)"


def _json_loads(text: str) -> Any:
    return json.loads(text, object_pairs_hook=_object_without_duplicates, parse_int=_bounded_int)


def _json_document(text: str, location: str) -> Any:
    """One JSON document, its nesting, integers and keys bounded: ManifestFileError naming `location`
    for what is too deep, an integer too long or a duplicate key; json.JSONDecodeError, whose message
    depends on what the caller reads (a whole file or one line), is the caller's to word."""
    try:
        return _json_loads(text)
    except RecursionError:
        raise ManifestFileError(_too_deep(location)) from None
    except _IntegerTooLong as error:
        raise ManifestFileError(_too_long(location, error)) from None
    except _DuplicateKey as error:
        raise ManifestFileError(f"{location}: duplicate key {error.key!r} in a JSON object") from None


def load_manifests(path: str | os.PathLike[str]) -> list[tuple[str, dict[str, Any]]]:
    """Every manifest in a JSON, JSON Lines or YAML file, as (location, manifest) pairs in file order."""
    label = str(path)
    text = _read_text(Path(path), label)
    suffix = Path(path).suffix.lower()
    if suffix in YAML_SUFFIXES:
        return list(_from_yaml(text, label))
    if suffix in JSON_LINES_SUFFIXES:
        return list(_from_json_lines(text, label))
    try:
        document = _json_document(text, label)
    except json.JSONDecodeError as error:
        if error.msg == "Extra data" and _first_line_is_json(text):
            return list(_from_json_lines(text, label))  # JSON Lines under another name
        if suffix == ".json" or text.lstrip()[:1] in ("{", "["):
            raise ManifestFileError(
                f"{label}: line {error.lineno}, column {error.colno}: invalid JSON: {error.msg}"
            ) from None
        return list(_from_yaml(text, label))  # neither .json nor JSON-looking: YAML is the last guess
    _check_tree(document, label, aliases_possible=False)
    return list(_from_document(document, label, array_items=True))


# ---------------------------------------------------------------- reading


def _too_deep(location: str) -> str:
    return f"{location}: nested more than {MAX_DEPTH} levels deep (a manifest nests about 6)"


def _check_tree(document: Any, location: str, *, aliases_possible: bool) -> None:
    """Refuse a document nested deeper than MAX_DEPTH or (YAML) holding one object in two places,
    which is what an alias makes: PyYAML builds `*a` as the very object of `&a`, so a walk that
    meets a container twice has found an alias, before anything expands it. Iterative, so it cannot
    overflow the stack itself."""
    seen: set[int] = set()
    stack: list[tuple[Any, int]] = [(document, 1)]
    while stack:
        value, depth = stack.pop()
        if not isinstance(value, (dict, list)):
            continue
        if depth > MAX_DEPTH:
            raise ManifestFileError(_too_deep(location))
        if aliases_possible:
            if id(value) in seen:
                raise ManifestFileError(
                    f"{location}: YAML aliases (*name) are not accepted in manifests; write the value out"
                )
            seen.add(id(value))
        children = value.values() if isinstance(value, dict) else value
        stack.extend((child, depth + 1) for child in children)


def _read_text(path: Path, label: str) -> str:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ManifestFileError(f"{label}: no such file") from None
    except IsADirectoryError:
        raise ManifestFileError(f"{label}: is a directory, not a manifest file") from None
    except OSError as error:
        raise ManifestFileError(f"{label}: cannot read: {error.strerror or error}") from None
    try:
        return data.decode("utf-8-sig")  # a leading byte-order mark is tolerated
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise ManifestFileError(
            f"{label}: line {line}: not UTF-8 text (byte 0x{data[error.start]:02x} at offset {error.start})"
        ) from None


def _from_document(document: Any, location: str, *, array_items: bool) -> Iterator[tuple[str, dict[str, Any]]]:
    """The manifests in one parsed document: a manifest, a bundle, or (at top level) an array of them."""
    if isinstance(document, list) and array_items:
        for number, item in enumerate(document, start=1):
            yield from _from_document(item, f"{location}#{number}", array_items=False)
    elif isinstance(document, dict) and _is_bundle(document):
        yield from _from_bundle(document, location)
    elif isinstance(document, dict):
        yield location, document
    else:
        raise ManifestFileError(f"{location}: expected a manifest (a JSON/YAML object), got {_type_name(document)}")


def _is_bundle(document: dict[str, Any]) -> bool:
    return "kind" not in document and "apiVersion" not in document and any(key in BUNDLE_GROUPS for key in document)


def _from_bundle(bundle: dict[str, Any], location: str) -> Iterator[tuple[str, dict[str, Any]]]:
    unknown = [key for key in bundle if key not in BUNDLE_GROUPS]
    if unknown:
        raise ManifestFileError(
            f"{location}: unknown bundle group(s) {', '.join(map(repr, unknown))}; expected {', '.join(BUNDLE_GROUPS)}"
        )
    for group, entries in bundle.items():
        if entries is None:  # `runs:` with nothing under it
            continue
        if not isinstance(entries, list):
            raise ManifestFileError(f"{location}: bundle group {group!r} must be a list, got {_type_name(entries)}")
        for index, manifest in enumerate(entries):
            entry_location = f"{location}/{group}[{index}]"
            if not isinstance(manifest, dict):
                raise ManifestFileError(f"{entry_location}: expected a manifest object, got {_type_name(manifest)}")
            kind = manifest.get("kind")
            if kind in KINDS and kind != BUNDLE_GROUPS[group]:
                raise ManifestFileError(
                    f"{entry_location}: a {kind} in group {group!r} (which holds {BUNDLE_GROUPS[group]} records)"
                )
            yield entry_location, manifest


def _type_name(value: Any) -> str:
    names = {
        dict: "an object",
        list: "an array",
        str: "a string",
        bool: "a boolean",
        int: "a number",
        float: "a number",
        type(None): "null",
    }
    return names.get(type(value), type(value).__name__)


# ---------------------------------------------------------------- JSON and JSON Lines


class _DuplicateKey(ValueError):
    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def _object_without_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return result


def _first_line_is_json(text: str) -> bool:
    for line in text.splitlines():
        if line.strip():
            try:
                json.loads(line, parse_int=_bounded_int)
            except ValueError:  # JSONDecodeError, _IntegerTooLong
                return False
            return True
    return False


def _from_json_lines(text: str, label: str) -> Iterator[tuple[str, dict[str, Any]]]:
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue  # blank lines (a trailing one especially) carry nothing
        location = f"{label}:{number}"
        try:
            document = _json_document(line, location)
        except json.JSONDecodeError as error:
            raise ManifestFileError(f"{location}: column {error.colno}: invalid JSON: {error.msg}") from None
        _check_tree(document, location, aliases_possible=False)
        yield from _from_document(document, location, array_items=False)


# ---------------------------------------------------------------- YAML

_YAML_BASE = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's parser when PyYAML has it


class _ManifestYamlLoader(_YAML_BASE):  # type: ignore[misc, valid-type]
    """SafeLoader with a subset of its implicit types (see the module docstring), no duplicate keys
    and no merge keys."""

    yaml_implicit_resolvers: dict[str, list[tuple[str, re.Pattern[str]]]] = {}

    def flatten_mapping(self, node: yaml.MappingNode) -> None:
        # An explicit `!!merge` key would still be expanded (by copying) during construction, before
        # the alias check sees the document: refuse it here.
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    "merge keys (<<) are not accepted in manifests",
                    key_node.start_mark,
                )

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        self.flatten_mapping(node)
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                duplicate = key in seen
            except TypeError:  # an unhashable key: the base class reports it
                continue
            if duplicate:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping", node.start_mark, f"found duplicate key {key!r}", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


_IMPLICIT_TYPES = [
    ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    ("tag:yaml.org,2002:int", r"^[-+]?(?:0|[1-9][0-9]*)$", "-+0123456789"),
    (
        "tag:yaml.org,2002:float",
        r"^(?:[-+]?[0-9]+\.[0-9]*(?:[eE][-+][0-9]+)?|\.[0-9]+(?:[eE][-+][0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
        "-+0123456789.",
    ),
    ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
]
for _tag, _pattern, _first in _IMPLICIT_TYPES:
    _ManifestYamlLoader.add_implicit_resolver(_tag, re.compile(_pattern), list(_first))


def _construct_bounded_int(loader: _ManifestYamlLoader, node: yaml.ScalarNode) -> int:
    digits = len(str(node.value).lstrip("+-").replace("_", ""))
    if digits > MAX_INTEGER_DIGITS:
        raise yaml.constructor.ConstructorError(
            None,
            None,
            f"an integer of {digits} digits (at most {MAX_INTEGER_DIGITS} are read; a manifest's have at most 16)",
            node.start_mark,
        )
    return yaml.constructor.SafeConstructor.construct_yaml_int(loader, node)


_ManifestYamlLoader.add_constructor("tag:yaml.org,2002:int", _construct_bounded_int)


def _from_yaml(text: str, label: str) -> Iterator[tuple[str, dict[str, Any]]]:
    number = 0
    try:
        for number, document in enumerate(yaml.load_all(text, Loader=_ManifestYamlLoader), start=1):
            if document is None:
                continue  # an empty document (e.g. after a trailing '---')
            location = f"{label}#{number}"
            _check_tree(document, location, aliases_possible=True)
            if isinstance(document, list):  # a document that is a list of manifests
                for index, item in enumerate(document):
                    yield from _from_document(item, f"{location}[{index}]", array_items=False)
            else:
                yield from _from_document(document, location, array_items=False)
    except RecursionError:
        raise ManifestFileError(_too_deep(f"{label}#{number + 1}")) from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
        where = f", line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(error, "problem", None) or str(error)
        context = getattr(error, "context", None)
        detail = f"{context}: {problem}" if context else problem
        raise ManifestFileError(f"{label}: document {number + 1}{where}: invalid YAML: {detail}") from None
