"""records/yaml12.py: the YAML we write reads back to the same values under YAML 1.2 (issue 32).

Two readers judge it: ruamel.yaml (a YAML 1.2 parser, its safe loader) reads the document back, and the core
schema of the YAML 1.2.2 specification (10.3.2, written out below from the spec's table, the forms
KernelIndex's `yaml` package resolves) must not turn any plain scalar of a document of strings into a
number, a boolean or null."""

from __future__ import annotations

import re

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from kernelindex_pipeline.records import yaml12

# YAML 1.2.2, 10.3.2 "Tag Resolution" (core schema): the plain scalars that are not strings.
SPEC_CORE_NON_STRINGS = re.compile(
    r"^(?:null|Null|NULL|~|"
    r"true|True|TRUE|false|False|FALSE|"
    r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+|"
    r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|"
    r"[-+]?\.(?:inf|Inf|INF)|\.nan|\.NaN|\.NAN)$"
)
DUMPERS = {"libyaml": yaml12.SafeDumper, "pure": yaml12.core_schema_dumper(yaml.SafeDumper)}


def _dump(data, dumper) -> str:
    return yaml.dump(data, Dumper=dumper, sort_keys=False, allow_unicode=True, default_flow_style=False, width=10**6)


def _yaml12_load(text: str):
    return YAML(typ="safe", pure=True).load(text)


def _plain_scalars(text: str) -> list[str]:
    return [e.value for e in yaml.parse(text) if isinstance(e, yaml.ScalarEvent) and e.style is None]


def _check(strings: list[str], dumper) -> None:
    data = {"labels": {s: s for s in strings}, "list": strings}
    text = _dump(data, dumper)
    assert _yaml12_load(text) == data
    assert yaml.safe_load(text) == data  # and YAML 1.1 (PyYAML) still reads the same
    assert [s for s in _plain_scalars(text) if SPEC_CORE_NON_STRINGS.match(s)] == []


# Strings a 1.2 reader takes for numbers, booleans, null; short commits of that form (`49e6353`, one of
# Liger's CI commits), and strings that are strings everywhere (left plain).
EXAMPLES = ["49e6353", "1e3", "1E3", "+1e-3", "0o17", "0x1f", "true", "False", "null", "~", ".inf", "-.Inf", ".NaN"]
EXAMPLES += [".5e3", "5.", "1_000", "0b101", "017", "-0x1f", "2026-12-01", "=", "<<", "yes", "off"]


@pytest.mark.parametrize("dumper", list(DUMPERS), ids=list(DUMPERS))
def test_strings_a_yaml12_reader_takes_for_other_types_are_quoted(dumper):
    _check(EXAMPLES, DUMPERS[dumper])


def test_pyyaml_alone_writes_yaml_that_yaml12_reads_otherwise():
    """The failure this module exists for: PyYAML's SafeDumper leaves `49e6353` plain (a YAML 1.1 string)."""
    text = yaml.dump({"liger_code_ref": "49e6353"}, Dumper=yaml.SafeDumper)
    assert text == "liger_code_ref: 49e6353\n"
    assert _yaml12_load(text)["liger_code_ref"] != "49e6353"  # a float under YAML 1.2


def test_strings_that_read_as_strings_stay_plain():
    text = _dump({"name": "liger-rms-norm", "version": "v0.8.5", "ref": "a1b2c3d", "e": "e12"}, yaml12.SafeDumper)
    assert text == "name: liger-rms-norm\nversion: v0.8.5\nref: a1b2c3d\ne: e12\n"


def test_other_types_are_written_as_before():
    data = {"int": 12, "float": 1.5, "big": 1e20, "none": None, "bool": True, "list": [0, -3]}
    assert _dump(data, yaml12.SafeDumper) == _dump(data, getattr(yaml, "CSafeDumper", yaml.SafeDumper))
    assert _yaml12_load(_dump(data, yaml12.SafeDumper)) == data


_NUMERIC_LIKE = st.text(alphabet="0123456789abcdefABCDEFoxXn_.+-~", min_size=1, max_size=10)
_HEX_COMMITS = st.text(alphabet="0123456789abcdef", min_size=7, max_size=12)
_WORDS = st.sampled_from(["true", "True", "FALSE", "null", "Null", "NULL", ".inf", ".INF", "-.inf", ".nan", "NaN"])


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(_HEX_COMMITS, _NUMERIC_LIKE, _WORDS), min_size=1, max_size=8))
def test_hex_and_number_like_strings_read_back_as_the_same_strings(strings):
    for dumper in DUMPERS.values():
        _check(strings, dumper)
