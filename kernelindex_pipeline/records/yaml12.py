"""YAML that YAML 1.1 and YAML 1.2 readers read back to the same values.

PyYAML writes YAML 1.1: it quotes a string only where a YAML 1.1 reader would take it for something else.
KernelIndex reads YAML 1.2 (the `yaml` package, core schema), which takes some strings PyYAML leaves plain
for numbers: `49e6353` (a 7-hex short commit) and `1e3` are floats there, `0o17` is an octal int. A run
carrying `liger_code_ref: 49e6353` then fails KernelIndex's validation ("expected string, received number")
and the whole submission with it.

`core_schema_dumper(base)` is `base` (a PyYAML dumper class) that also quotes every string a YAML 1.2
reader would resolve to a non-string: the core schema's null, bool, int and float forms (YAML 1.2.2,
10.3.2), and the looser forms some 1.2 readers accept too (digits with `_`, `0b`/`0o`/`0x` with a sign,
ruamel.yaml's), on top of the YAML 1.1 forms PyYAML already quotes. Only quoting changes: numbers, booleans
and nulls are written as before, and a string that reads as a string everywhere stays plain, so documents
without such strings keep their bytes.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

# Scalars a YAML 1.2 reader resolves to something other than a string, by tag (any non-str tag makes the
# emitter quote; the tag itself is never written). The core schema's forms first, then looser ones.
_YAML12_NON_STRINGS: list[tuple[str, str, str]] = [
    ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL)$", "~nN"),
    ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    ("tag:yaml.org,2002:int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", "-+0123456789"),
    (
        "tag:yaml.org,2002:float",
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
        "-+0123456789.",
    ),
    # readers that go beyond the core schema (ruamel.yaml's 1.2 resolver, libraries with 1.1 habits)
    ("tag:yaml.org,2002:int", r"^[-+]?(?:0b[01_]+|0o?[0-7_]+|[0-9][0-9_]*|0x[0-9a-fA-F_]+)$", "-+0123456789"),
    (
        "tag:yaml.org,2002:float",
        r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?|\.[0-9_]+(?:[eE][-+]?[0-9]+)?)$",
        "-+0123456789.",
    ),
]


def core_schema_dumper(base: type[Any]) -> type[Any]:
    """`base` that also quotes the strings a YAML 1.2 reader would read as non-strings (see the module)."""

    class Yaml12Dumper(base):  # type: ignore[misc, valid-type]
        pass

    for tag, pattern, first in _YAML12_NON_STRINGS:
        Yaml12Dumper.add_implicit_resolver(tag, re.compile(pattern), list(first))
    Yaml12Dumper.__name__ = Yaml12Dumper.__qualname__ = f"Yaml12{base.__name__}"
    return Yaml12Dumper


# libyaml's emitter when PyYAML has it (several times faster; the same bytes, tests/catalogue/test_export.py)
SafeDumper = core_schema_dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper))
