"""What one step of a chain hands the next, kept as data files (defs/chain_values.py): a partition's parts
read back as they were written, and parts written before they kept their commit still get it."""

from __future__ import annotations

import json

from kernelindex_pipeline.defs.chain_values import _read_parts, _write_parts
from kernelindex_pipeline.liger.partition import PartitionCsv

CI_LOCATOR = "https://raw.githubusercontent.com/linkedin/Liger-Kernel/gh-pages/benchmarks/2845fe8/benchmark.csv"


def test_parts_read_back_as_written_with_their_commit(tmp_path):
    parts = [
        PartitionCsv("nvidia-h100-80gb-hbm3", "0.6.1", "ci", b"a,b\n", {"locator": CI_LOCATOR}, code_ref="2845fe8"),
        PartitionCsv("nvidia-h100-80gb-hbm3", "0.6.1", "history", b"c\n", {"locator": "sdist"}),
    ]
    _write_parts(tmp_path, parts)
    assert _read_parts(tmp_path) == parts


def test_a_ci_part_written_before_parts_kept_their_commit_reads_it_from_its_file(tmp_path):
    _write_parts(tmp_path, [PartitionCsv("nvidia-h100-80gb-hbm3", "0.6.1", "ci", b"x\n", {"locator": CI_LOCATOR})])
    about = tmp_path / "part-000.json"
    older = {k: v for k, v in json.loads(about.read_text("utf-8")).items() if k != "codeRef"}
    about.write_text(json.dumps(older), encoding="utf-8")
    (part,) = _read_parts(tmp_path)
    assert part.code_ref == "2845fe8"
