"""records/yaml_block.py: the fast block writer writes PyYAML's bytes, for any document (issue 33)."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from kernelindex_pipeline.records import yaml12
from kernelindex_pipeline.records.yaml_block import BlockWriter


class _NoAlias(yaml12.SafeDumper):  # type: ignore[misc, valid-type]
    def ignore_aliases(self, data):
        return True


DUMPERS = {
    "libyaml": (yaml12.SafeDumper, True),
    "pure": (yaml12.core_schema_dumper(yaml.SafeDumper), True),
    "no-alias": (_NoAlias, False),
}

# strings that change a scalar's style: YAML 1.1/1.2 numbers, indicators, quotes, spaces, breaks, unicode
TRICKY = [
    "",
    " ",
    "a b",
    " lead",
    "trail ",
    "49e6353",
    "1e3",
    "0o17",
    "true",
    "null",
    "~",
    "-",
    "- a",
    ": a",
    "a: b",
    "#",
    "a #b",
    "'",
    '"',
    "\n",
    "a\nb",
    "a\n\nb",
    "\t",
    "é",
    "\u2028",
    "\x85",
    "\x00",
    "?",
    "[x]",
    "{x}",
    "*a",
    "&a",
    "!t",
    "%",
    "@",
    "`",
    "|",
    ">",
    "=",
    "<<",
    "yes",
    "2026-12-01",
    "12:30",
    "0x1f",
    "1_000",
    "x" * 130,
]
# and strings of the characters the writer's own plain test looks at (records/yaml_block._PLAIN)
near_plain = st.text(alphabet="ae0159x_.:+=-/ #'", max_size=10)
scalars = (
    st.sampled_from(TRICKY)
    | st.text(max_size=12)
    | near_plain
    | st.integers()
    | st.floats()
    | st.booleans()
    | st.none()
)
keys = st.sampled_from(TRICKY) | st.text(max_size=8) | near_plain
documents = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
    max_leaves=30,
)


def _pyyaml(data, dumper):
    return yaml.dump(data, Dumper=dumper, sort_keys=False, allow_unicode=True, default_flow_style=False, width=10**6)


@pytest.mark.parametrize("name", list(DUMPERS))
@settings(max_examples=400, deadline=None)
@given(data=documents)
def test_the_block_writer_writes_pyyamls_bytes(name, data):
    dumper, aliases = DUMPERS[name]
    assert BlockWriter(dumper, aliases=aliases).dump(data) == _pyyaml(data, dumper)


@pytest.mark.parametrize("name", list(DUMPERS))
def test_shared_collections_tuples_and_long_keys_go_to_pyyaml(name):
    dumper, aliases = DUMPERS[name]
    shared = {"a": 1}
    writer = BlockWriter(dumper, aliases=aliases)
    for data in (
        {"x": shared, "y": shared},
        [shared, [shared]],
        {"t": (1, 2)},
        {"k" * 200: 1},
        {1: "int key"},
        {"multi": "a\nb"},
        [{"n": [1, {"deep": [[], {}]}]}],
    ):
        assert writer.dump(data) == _pyyaml(data, dumper)
    # the shapes above it cannot lay out itself were handed over whole: the shared dict (where aliases are
    # written), the tuple, the long key, the int key, the multi-line string
    assert writer.fallbacks == (6 if aliases else 4)


def test_a_repeated_scalar_is_asked_of_pyyaml_once(monkeypatch):
    writer = BlockWriter(yaml12.SafeDumper)
    calls = []
    real = writer._pyyaml
    monkeypatch.setattr(writer, "_pyyaml", lambda data: calls.append(data) or real(data))
    doc = [{"kind": "BenchmarkRun", "value": 1.5, "ref": "49e6353"} for _ in range(50)]
    assert writer.dump(doc) == _pyyaml(doc, yaml12.SafeDumper)
    doc[1]["note"] = "a: b"  # a string it leaves to PyYAML's emitter (": " would start a mapping)
    doc[2]["note"] = "a: b"
    assert writer.dump(doc) == _pyyaml(doc, yaml12.SafeDumper)
    assert calls == [{"k": "49e6353"}, {"k": "a: b"}]  # once each, whatever the number of runs
