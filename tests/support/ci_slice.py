"""The real CI slice (tests/fixtures/liger-ci-slice: the BenchmarkRuns of the ten H100 CI runs, made by its
make_slice.py), laid out as `transform` writes records: <source>/records.jsonl."""

from __future__ import annotations

import gzip
from pathlib import Path

from tests.support import FIXTURES

CI_SLICE = FIXTURES / "liger-ci-slice"


def unpack_ci_slice(root: Path) -> list[Path]:
    """Each source's records as `root/<source>/records.jsonl`, in source order."""
    paths = []
    for packed in sorted(CI_SLICE.glob("*.jsonl.gz")):
        target = root / packed.name.removesuffix(".jsonl.gz") / "records.jsonl"
        target.parent.mkdir(parents=True)
        target.write_bytes(gzip.decompress(packed.read_bytes()))
        paths.append(target)
    return paths
