"""A fresh work directory for one sweep: the release's benchmark tree and an empty data CSV.

The release ships `benchmark/data/all_benchmark_data.csv` full of the maintainers' history. The scripts
merge their rows into that file (`utils.update_benchmark_data_csv`: read all, add, rewrite), so the work
copy starts with the header alone: whatever rows it holds afterwards were measured here.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from .data_csv import write_empty_data_csv
from .outcomes import ConfigurationError

DATA_CSV = Path("benchmark/data/all_benchmark_data.csv")
SCRIPTS_DIR = Path("benchmark/scripts")
# Scripts put the release root on sys.path ("../..") and a few import from its test/ package; it is
# large (~30 MB) and only read, so the work tree links to it instead of copying it.
LINKED_DIRS = ("test",)


@dataclass(frozen=True)
class WorkDir:
    root: Path  # holds benchmark/ (a copy) and links to the release's read-only extras
    scripts_dir: Path
    data_csv: Path
    logs_dir: Path


def prepare_workdir(release_root: Path | str, dest: Path | str) -> WorkDir:
    """Copy `<release_root>/benchmark` into `<dest>/tree/benchmark` with a header-only data CSV.

    `dest` may exist (it may hold the extracted release) but not `<dest>/tree`; logs go to `<dest>/logs`.
    """
    release_root = Path(release_root).resolve()
    dest = Path(dest)
    source_benchmark = release_root / "benchmark"
    if not (source_benchmark / "scripts").is_dir():
        raise ConfigurationError(
            f"{release_root} is not an extracted Liger release: it has no benchmark/scripts directory "
            "(pass the directory that contains benchmark/, e.g. liger_kernel-0.8.5/)"
        )
    tree = dest / "tree"
    if tree.exists():
        raise ConfigurationError(f"{tree} already exists: every sweep needs a fresh work directory")
    # Only the shipped data CSVs stay behind: every other file of the tree is the scripts' own.
    shutil.copytree(
        source_benchmark,
        tree / "benchmark",
        ignore=lambda directory, names: [n for n in names if Path(directory).name == "data" and n.endswith(".csv")],
    )
    if (release_root / "PKG-INFO").is_file():
        # The release's declared requirements (e.g. its dev extra's transformers range) guide the scripts' environment.
        shutil.copyfile(release_root / "PKG-INFO", tree / "PKG-INFO")
    for name in LINKED_DIRS:
        if (release_root / name).is_dir():
            os.symlink(release_root / name, tree / name, target_is_directory=True)
    data_csv = tree / DATA_CSV
    write_empty_data_csv(data_csv)
    logs_dir = dest / "logs"
    logs_dir.mkdir(parents=True, exist_ok=True)
    return WorkDir(root=tree, scripts_dir=tree / SCRIPTS_DIR, data_csv=data_csv, logs_dir=logs_dir)
