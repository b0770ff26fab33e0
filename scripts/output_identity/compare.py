"""Compare two run.sh outputs file by file: records, reports, exports, the regressions JSON, the site and its data,
the efficiency sidecars, with times, run ids and the output root masked (they differ by construction); the Parquet
tables by content. Usage: compare.py OUT_BEFORE OUT_AFTER; exit 1 when anything differs."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pyarrow.parquet as pq

COMPARED = re.compile(
    r"(records\.jsonl|report\.json|exports/.*|report/.*\.(json|jsonl|js|html|csv)|report/data/.*|efficiency/.*"
    r"|regressions\.json)$"
)
# Dagster's storage, logs and the catalogue database differ by run ids and times throughout; Parquet by content
IGNORED = re.compile(
    r"(storage/|history/|logs/|\.log$|dagster\.yaml|\.sqlite|liger-ci-snapshot|import-issues|\.lock|schedules/"
    r"|\.tmp$|\.parquet$)"
)
MASKS = [
    (re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?"), b"<TIME>"),
    (re.compile(rb"\d{4}-\d\d-\d\d \d\d:\d\d UTC"), b"<TIME>"),
    (re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), b"<RUNID>"),
]


def files(root: Path) -> dict[str, Path]:
    return {p.relative_to(root).as_posix(): p for p in root.rglob("*") if p.is_file()}


def masked(path: Path, root: Path) -> bytes:
    data = path.read_bytes().replace(str(root).encode(), b"<ROOT>")
    for pattern, mask in MASKS:
        data = pattern.sub(mask, data)
    return data


def main(before: Path, after: Path) -> int:
    fa, fb = files(before), files(after)
    names = [n for n in sorted(set(fa) | set(fb)) if COMPARED.search(n) and not IGNORED.search(n)]
    one_side = [n for n in names if n not in fa or n not in fb]
    differ = [n for n in names if n in fa and n in fb and masked(fa[n], before) != masked(fb[n], after)]
    tables = sorted(n for n in fa if n.endswith(".parquet") and n in fb)
    tables_differ = [n for n in tables if not pq.read_table(fa[n]).equals(pq.read_table(fb[n]))]
    for name in differ + tables_differ:
        print("DIFFERS", name)
    print(
        f"{len(names) - len(one_side) - len(differ)} files identical (masked), {len(differ)} differ, "
        f"{len(one_side)} in one tree only {one_side[:10]}; Parquet: {len(tables) - len(tables_differ)} tables "
        f"identical, {len(tables_differ)} differ"
    )
    return 1 if differ or one_side or tables_differ else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
