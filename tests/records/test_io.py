"""load_manifests: JSON, JSON Lines, multi-document YAML and grouped bundles; clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernelindex_pipeline.records.io import BUNDLE_GROUPS, ManifestFileError, load_manifests
from tests.support import FIXTURES

SEED_BUNDLES = json.loads((FIXTURES / "seed-bundles.json").read_text(encoding="utf-8"))
SEEDS = [entry["manifest"] for entry in SEED_BUNDLES[0]["manifests"]]  # one manifest of each kind
RUN = SEEDS[-1]
GROUP_OF = {kind: group for group, kind in BUNDLE_GROUPS.items()}


def _write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return path


def test_json_object(tmp_path):
    path = _write(tmp_path, "run.json", json.dumps(RUN))
    assert load_manifests(path) == [(str(path), RUN)]


def test_json_array(tmp_path):
    path = _write(tmp_path, "all.json", json.dumps(SEEDS, indent=2))
    assert load_manifests(path) == [(f"{path}#{i}", m) for i, m in enumerate(SEEDS, start=1)]


def test_json_lines_with_blank_lines(tmp_path):
    text = "\n".join(json.dumps(m) for m in SEEDS[:2]) + "\n\n" + json.dumps(RUN) + "\n"
    path = _write(tmp_path, "records.jsonl", text)
    assert load_manifests(path) == [(f"{path}:1", SEEDS[0]), (f"{path}:2", SEEDS[1]), (f"{path}:4", RUN)]


def test_json_lines_named_json(tmp_path):
    path = _write(tmp_path, "records.json", "\n".join(json.dumps(m) for m in SEEDS[:2]))
    assert [location for location, _ in load_manifests(path)] == [f"{path}:1", f"{path}:2"]


def test_multi_document_yaml(tmp_path):
    text = yaml.safe_dump_all(SEEDS, allow_unicode=True, sort_keys=False, explicit_start=True)
    path = _write(tmp_path, "records.yaml", text)
    assert load_manifests(path) == [(f"{path}#{i}", m) for i, m in enumerate(SEEDS, start=1)]


def test_yaml_grouped_bundle_one_document(tmp_path):
    bundle = {GROUP_OF[m["kind"]]: [m] for m in SEEDS}
    path = _write(tmp_path, "bundle.yml", yaml.safe_dump(bundle, allow_unicode=True))
    loaded = load_manifests(path)
    assert sorted(m["kind"] for _, m in loaded) == sorted(m["kind"] for m in SEEDS)
    assert (f"{path}#1/runs[0]", RUN) in loaded


def test_yaml_bundle_one_group_per_document_as_exported(tmp_path):
    # The catalogue export's layout: a comment, then one document per group, empty groups included.
    documents = [{group: [m for m in SEEDS if m["kind"] == kind]} for group, kind in BUNDLE_GROUPS.items()]
    documents.append({"runs": []})
    text = "# a submission bundle\n" + "".join(
        yaml.dump(d, Dumper=yaml.SafeDumper, explicit_start=True, sort_keys=False, allow_unicode=True, width=10**6)
        for d in documents
    )
    path = _write(tmp_path, "bundle.yaml", text)
    loaded = load_manifests(path)
    assert [m for _, m in loaded] == SEEDS
    assert loaded[0][0] == f"{path}#1/projects[0]"
    assert loaded[-1][0] == f"{path}#7/runs[0]"


def test_json_bundle_and_yaml_list_document(tmp_path):
    path = _write(tmp_path, "bundle.json", json.dumps({"runs": [RUN], "projects": [SEEDS[0]]}))
    assert load_manifests(path) == [(f"{path}/runs[0]", RUN), (f"{path}/projects[0]", SEEDS[0])]
    path = _write(tmp_path, "list.yaml", yaml.safe_dump(SEEDS[:2]))
    assert [location for location, _ in load_manifests(path)] == [f"{path}#1[0]", f"{path}#1[1]"]


def test_yaml_keeps_text_as_text(tmp_path):
    text = """
apiVersion: kernelindex.dev/v1alpha1
kind: BenchmarkRun
metadata: {name: x, labels: {a: on, b: yes, c: 017, d: 22:13:03, e: 1e3, f: 0x1f, g: 1_000, h: 2025-08-05}}
spec: {observedAt: 2025-08-05T00:08:54.000Z, n: 12, m: -3, f: 1.5, g: 1.0e-06, t: true, z: null, i: .inf}
"""
    ((_, manifest),) = load_manifests(_write(tmp_path, "one.yaml", text))
    assert manifest["metadata"]["labels"] == {
        "a": "on",
        "b": "yes",
        "c": "017",
        "d": "22:13:03",
        "e": "1e3",
        "f": "0x1f",
        "g": "1_000",
        "h": "2025-08-05",
    }
    assert manifest["spec"] == {
        "observedAt": "2025-08-05T00:08:54.000Z",
        "n": 12,
        "m": -3,
        "f": 1.5,
        "g": 1e-6,
        "t": True,
        "z": None,
        "i": float("inf"),
    }


json_like = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(json_like)
def test_yaml_reads_back_what_pyyaml_writes(tmp_path, value):
    document = {"apiVersion": "kernelindex.dev/v1alpha1", "kind": "BenchmarkRun", "spec": {"value": value}}
    for allow_unicode in (False, True):
        text = yaml.safe_dump(document, allow_unicode=allow_unicode)
        if allow_unicode and "\x85" in text:
            continue  # PyYAML's own loader misreads a raw NEL (U+0085) that its emitter wrote unescaped
        ((_, loaded),) = load_manifests(_write(tmp_path, "round.yaml", text))
        assert loaded == document


def test_bom_and_crlf_are_tolerated(tmp_path):
    path = _write(tmp_path, "bom.json", b"\xef\xbb\xbf" + json.dumps(RUN, indent=1).replace("\n", "\r\n").encode())
    assert load_manifests(path) == [(str(path), RUN)]


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("bad.json", '{\n  "kind": "BenchmarkRun",\n  "spec": {,}\n}', "bad.json: line 3, column 12: invalid JSON"),
        ("bad.jsonl", json.dumps(RUN) + "\n\n{nope}\n", "bad.jsonl:3: column 2: invalid JSON"),
        ("bad.yaml", "kind: A\n---\nkind: [unclosed\n", "bad.yaml: document 2, line 4, column 1: invalid YAML"),
        ("dup.json", '{"kind": "BenchmarkRun", "kind": "WorkloadCase"}', "dup.json: duplicate key 'kind'"),
        ("dup.jsonl", '{"a": {"b": 1, "b": 2}}', "dup.jsonl:1: duplicate key 'b'"),
        (
            "dup.yaml",
            "kind: A\nmetadata:\n  name: x\n  name: y\n",
            "dup.yaml: document 1, line 4, column 3: invalid YAML",
        ),
        ("scalar.json", "[1, 2]", "scalar.json#1: expected a manifest (a JSON/YAML object), got a number"),
        ("scalar.yaml", "just text\n", "scalar.yaml#1: expected a manifest (a JSON/YAML object), got a string"),
        ("group.yaml", "run: []\nruns: []\n", "group.yaml#1: unknown bundle group(s) 'run'"),
        ("notlist.yaml", "runs: {a: 1}\n", "notlist.yaml#1: bundle group 'runs' must be a list, got an object"),
        ("wrong.json", json.dumps({"projects": [RUN]}), "wrong.json/projects[0]: a BenchmarkRun in group 'projects'"),
        ("latin1.json", b'{"name": "caf\xe9"}', "latin1.json: line 1: not UTF-8 text (byte 0xe9 at offset 13)"),
    ],
)
def test_unreadable_input_is_a_clear_error(tmp_path, name, content, expected):
    path = _write(tmp_path, name, content)
    with pytest.raises(ManifestFileError) as caught:
        load_manifests(path)
    message = str(caught.value)
    assert message.startswith(str(tmp_path / expected.split(":")[0].split("#")[0].split("/")[0]))
    assert expected in message
    assert "\n" not in message


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(ManifestFileError, match="no such file"):
        load_manifests(tmp_path / "absent.json")
    with pytest.raises(ManifestFileError, match="is a directory"):
        load_manifests(tmp_path)


def test_duplicate_key_message_names_the_key_in_yaml(tmp_path):
    path = _write(tmp_path, "dup.yaml", "kind: A\nkind: B\n")
    with pytest.raises(ManifestFileError, match="found duplicate key 'kind'"):
        load_manifests(path)


# ---------------------------------------------------------------- issue 11, item 8: bombs and deep nesting

ALIAS_BOMB = (
    "\n".join(
        [f"a: &a [{','.join(['lol'] * 9)}]"]
        + [f"{b}: &{b} [{','.join(['*' + a] * 9)}]" for a, b in zip("abcdefgh", "bcdefghi", strict=True)]
    )
    + "\n"
)


def test_a_yaml_alias_bomb_is_refused_naming_the_file(tmp_path):
    assert len(ALIAS_BOMB) < 600  # nine levels of nine: 387 420 489 strings once expanded
    path = _write(tmp_path, "bomb.yaml", ALIAS_BOMB)
    with pytest.raises(ManifestFileError, match=r"bomb\.yaml#1: YAML aliases \(\*name\) are not accepted"):
        load_manifests(path)


@pytest.mark.parametrize(
    "text",
    [
        "base: &base {kind: BenchmarkRun}\nrun: *base\n",
        "- &m {kind: BenchmarkRun, metadata: {name: a}}\n- *m\n",
    ],
)
def test_any_alias_to_a_collection_is_refused(tmp_path, text):
    with pytest.raises(ManifestFileError, match="YAML aliases"):
        load_manifests(_write(tmp_path, "x.yaml", text))


@pytest.mark.parametrize(
    "text", ["base: &b {a: 1}\nrun: {<<: *b, c: 2}\n", "base: {a: 1}\nrun: {? !!merge '<<' : {a: 1}}\n"]
)
def test_merge_keys_are_not_expanded(tmp_path, text):
    path = _write(tmp_path, "m.yaml", text)
    with pytest.raises(ManifestFileError, match=r"m\.yaml.*(aliases|merge keys)"):
        load_manifests(path)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("deep.json", "[" * 100_000),
        ("deep.jsonl", "[" * 100_000 + "\n"),
        ("deep.json", "[" * 65 + "]" * 65),  # parses, but deeper than any manifest
        ("deep.yaml", "a:\n" + "".join("  " * i + f"k{i}:\n" for i in range(1, 80)) + "  " * 80 + "v\n"),
    ],
)
def test_deep_nesting_is_an_error_naming_the_file(tmp_path, name, text):
    path = _write(tmp_path, name, text)
    with pytest.raises(ManifestFileError, match=rf"{name}.*nested more than 64 levels deep"):
        load_manifests(path)
