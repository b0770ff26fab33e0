"""Property tests: mutated rows, configs, x values and whole files never break the importer.

For any input the library either refuses the file as a whole with CsvFormatError (no header, a
missing column) or returns a result in which every row is accounted for exactly once and every
emitted record is schema-valid, carries its own digest, and (for streamed runs) its canonical line.
"""

from __future__ import annotations

import json
import os

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from kernelindex_pipeline.liger import CsvFormatError, import_csv
from kernelindex_pipeline.liger.catalogue import default_catalogue
from kernelindex_pipeline.liger.csv import UPSTREAM_COLUMNS
from kernelindex_pipeline.records.canonical import canonical_bytes, digest_of
from kernelindex_pipeline.records.names import kebab
from kernelindex_pipeline.records.schema import validate_manifest

# LIGER_PROPERTY_EXAMPLES=1000 for a longer hunt; 60 keeps CI quick.
SETTINGS = settings(
    max_examples=int(os.environ.get("LIGER_PROPERTY_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

CATALOGUE = default_catalogue()
SEED_ROWS = [
    ("rms_norm", "liger", "H", "1024", {"M": 2048, "dtype": "torch.bfloat16", "eps": 1e-6}),
    ("cross_entropy", "torch", "V", "32000", {"B": 8, "T": 2048}),
    ("jsd", "liger", "BT", "1024", {"vocab_size": 128256, "bsz": 1}),
    (
        "rope",
        "huggingface",
        "T",
        "512",
        {"num_q_heads": 32, "num_kv_heads": 8, "dtype": "torch.float16", "hidden_size": 4096, "seq_len": 2048},
    ),
    (
        "group_norm",
        "liger",
        "C",
        "64",
        {"M": 128, "H": 512, "channels_per_group": 4, "dtype": "torch.float32", "eps": 1e-6},
    ),
    ("megatron_rms_norm", "megatron", "H", "4096", {"S": 2048, "B": 4}),
    (
        "kto_loss",
        "liger",
        "B",
        "4",
        {"T": 512, "H": 4096, "V": 128256, "dtype": "torch.bfloat16", "bias": True, "beta": 0.1},
    ),
    (
        "distill_jsd_loss",
        "torch",
        "BT",
        "2048",
        {
            "H": 4096,
            "V": 128256,
            "dtype": "torch.bfloat16",
            "bias": False,
            "weight_hard_loss": 0.5,
            "weight_soft_loss": 0.5,
        },
    ),
]

text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=30)
numberish = st.one_of(
    st.sampled_from(
        [
            "",
            " ",
            "0",
            "1",
            "-1",
            "1.5",
            "1e3",
            "0x40",
            " 64 ",
            "Infinity",
            "inf",
            "nan",
            "NaN",
            "1e400",
            "1e-400",
            "4096.0",
            "1_0",
            "+8",
            ".5",
            "5.",
        ]
    ),
    st.integers(-10, 10**20).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    text,
)
json_scalar = st.one_of(st.none(), st.booleans(), st.integers(-(2**60), 2**60), st.floats(allow_nan=False), text)
json_value = st.recursive(
    json_scalar,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(text, inner, max_size=3)),
    max_leaves=8,
)


@st.composite
def configs(draw, base: dict):
    """A seed config mutated: keys dropped, values replaced by other JSON, or the text itself mangled."""
    config = dict(base)
    for key in list(config):
        action = draw(st.sampled_from(["keep", "keep", "keep", "drop", "replace", "float"]))
        if action == "drop":
            del config[key]
        elif action == "replace":
            config[key] = draw(json_value)
        elif action == "float" and type(config[key]) is int:
            config[key] = float(config[key])
    if draw(st.booleans()):
        config[draw(text)] = draw(json_value)
    rendered = json.dumps(config)
    return draw(
        st.sampled_from(
            [rendered, rendered, rendered, "null", "[]", rendered[:-1], rendered.replace("1e-06", "NaN"), draw(text)]
        )
    )


@st.composite
def rows(draw):
    kernel, provider, x_name, x_value, config = draw(st.sampled_from(SEED_ROWS))
    day = draw(st.integers(1, 28))
    second = draw(st.integers(0, 59))
    out = {
        "kernel_name": draw(st.sampled_from([kernel, kernel, kernel, "not_curated", draw(text)])),
        "kernel_provider": draw(st.sampled_from([provider, provider, "torch_compile", "nobody"])),
        "kernel_operation_mode": draw(st.sampled_from(["forward", "backward", "full", "no-grad-forward", draw(text)])),
        "metric_name": draw(st.sampled_from(["speed", "speed", "speed", "memory", draw(text)])),
        "metric_unit": "ms",
        "x_name": draw(st.sampled_from([x_name, x_name, x_name, "Q", draw(text)])),
        "x_label": draw(text),
        "x_value": draw(st.one_of(st.just(x_value), numberish)),
        "y_value_50": draw(st.one_of(st.sampled_from(["0.125", "94.83366394042969", "0.0000025"]), numberish)),
        "y_value_20": draw(st.one_of(st.just("0.12"), numberish)),
        "y_value_80": draw(st.one_of(st.just("0.13"), numberish)),
        "extra_benchmark_config_str": draw(configs(config)),
        "gpu_name": draw(st.sampled_from(sorted(CATALOGUE.hardware) + ["NVIDIA H100 NVL", draw(text)])),
        "timestamp": draw(
            st.sampled_from([f"2025-02-{day:02d} 10:00:{second:02d}", "2025-02-30 00:00:00", draw(text)])
        ),
        "liger_version": draw(st.sampled_from(["0.8.5", "", draw(text)])),
    }
    return out


def _field(value: str) -> str:
    # Minimal quoting as upstream writes it; a lone \r must be quoted too (csv.writer with a "\n"
    # line terminator would leave it bare, which every reader rightly takes for a line break).
    if any(c in value for c in ',"\r\n'):
        return '"' + value.replace('"', '""') + '"'
    return value


def write_csv(row_list, newline="\n") -> bytes:
    lines = [",".join(UPSTREAM_COLUMNS)]
    for r in row_list:
        lines.append(",".join(_field(r[c]) for c in UPSTREAM_COLUMNS))
    return (newline.join(lines) + newline).encode("utf-8")


def check_result(result, expected_rows: int | None = None):
    report = result.report
    assert report.conserved(), report.to_dict()
    if expected_rows is not None:
        assert report.rows_read == expected_rows
    issue_rows = [i.row for i in report.issues]
    assert len(issue_rows) == len(set(issue_rows))
    assert all(1 <= n <= report.rows_read for n in issue_rows)
    for digest, manifest in result.manifests.items():
        assert validate_manifest(manifest) == [], manifest
        assert digest_of(manifest) == digest
    json.dumps(report.to_dict())  # the report is JSON-able


@SETTINGS
@given(st.lists(rows(), min_size=1, max_size=12), st.sampled_from(["\n", "\r\n"]))
def test_mutated_rows_are_each_accounted_for_and_records_are_valid(row_list, newline):
    data = write_csv(row_list, newline)
    streamed = []
    result = import_csv(data, on_run=streamed.append)
    check_result(result, expected_rows=len(row_list))
    assert result.report.runs == len(streamed)
    for run in streamed:
        assert validate_manifest(run.manifest) == []
        assert run.line == canonical_bytes(run.manifest)  # the fast template is RFC 8785
        assert run.digest == digest_of(run.manifest)
        spec = run.manifest["spec"]
        gpu = next(g for g in CATALOGUE.hardware if kebab(g) == spec["sourceNative"]["externalId"].split("/")[3])
        kernel, mode = spec["sourceNative"]["benchmark"].split("/")
        provider = spec["sourceNative"]["externalId"].split("/")[2]
        case_key = spec["sourceNative"]["externalId"].split("/")[4]
        ts = spec["observedAt"][:19].replace("T", " ")
        assert run.name == kebab(f"liger-{kernel}-{mode}-{provider}-{gpu}-{case_key}-{ts}")
    # Collecting instead of streaming gives the same runs.
    collected = import_csv(data)
    assert {r.digest for r in streamed} == {d for d, m in collected.manifests.items() if m["kind"] == "BenchmarkRun"}


@SETTINGS
@given(st.lists(rows(), min_size=1, max_size=6), st.integers(0, 5), st.sampled_from(["a,b", "", ",", '"x', "x" * 3]))
def test_ragged_rows_anywhere_keep_row_numbers(row_list, where, junk):
    lines = write_csv(row_list).decode().split("\n")
    header, body = lines[0], [line for line in lines[1:] if line]
    assume(not any(c in "".join(r.values()) for r in row_list for c in "\r\n"))  # one line per row
    position = min(where, len(body))
    body.insert(position, junk)
    data = (header + "\n" + "\n".join(body) + "\n").encode()
    result = import_csv(data)
    check_result(result)
    if junk in ("a,b", ","):
        assert result.report.rows_read == len(row_list) + 1
        assert position + 1 in [i.row for i in result.report.issues]


@SETTINGS
@given(st.binary(max_size=400))
def test_arbitrary_bytes_never_raise_anything_unexpected(data):
    try:
        result = import_csv(data)
    except CsvFormatError:
        return
    check_result(result)


@SETTINGS
@given(st.lists(rows(), min_size=0, max_size=4), st.binary(max_size=40), st.integers(0, 10_000))
def test_files_with_bytes_spliced_in(row_list, noise, at):
    data = write_csv(row_list)
    at = at % (len(data) + 1)
    mangled = data[:at] + noise + data[at:]
    try:
        result = import_csv(mangled)
    except CsvFormatError:
        return
    check_result(result)


@SETTINGS
@given(st.one_of(st.integers(-5, 2**60).map(str), st.floats(allow_nan=True).map(repr), numberish))
def test_x_values_bind_only_as_positive_safe_integers(x_value):
    r = {c: v for c, v in zip(UPSTREAM_COLUMNS, [""] * 15, strict=False)}
    r.update(
        {
            "kernel_name": "rms_norm",
            "kernel_provider": "liger",
            "kernel_operation_mode": "forward",
            "metric_name": "speed",
            "x_name": "H",
            "x_value": x_value,
            "y_value_50": "0.1",
            "y_value_20": "0.1",
            "y_value_80": "0.1",
            "extra_benchmark_config_str": json.dumps({"M": 2, "dtype": "torch.float32", "eps": 1e-6}),
            "gpu_name": "NVIDIA B200",
            "timestamp": "2025-01-01 00:00:00",
            "liger_version": "1",
        }
    )
    result = import_csv(write_csv([r]))
    check_result(result, expected_rows=1)
    cases = [m for m in result.manifests.values() if m["kind"] == "WorkloadCase"]
    for case in cases:
        hidden = case["spec"]["axes"]["hidden"]
        assert type(hidden) is int and 0 < hidden <= 2**53 - 1
        plain = x_value.strip()
        if plain.isdigit():
            assert hidden == int(float(plain))
