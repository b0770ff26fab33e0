#!/usr/bin/env bash
# Outputs of one tree of the package, for a restructuring's byte-identity check (compare.py compares two):
#   transform --liger-release 0.8.5; import-ci --wait of the eleven CI files into a fresh home (its refresh
#   writes the exports, the regressions JSON and the site); the README's first command (import-history
#   --wait && import-ci --wait, the shipped snapshot offline) into another fresh home.
# usage: PY=.venv/bin/python CI_FILES=DIR run.sh TREE OUT   (TREE's package on PYTHONPATH ahead of the installed one)
set -euo pipefail
TREE=$(realpath "$1"); OUT=$(realpath -m "$2"); rm -rf "$OUT"; mkdir -p "$OUT"
PY=${PY:-$(realpath .venv/bin/python)}  # one venv for both trees: its deps, each tree's package
export PYTHONPATH=$TREE KERNELINDEX_LIGER_URL=none KERNELINDEX_LIGER_CI_LIST=http://127.0.0.1:9/unreachable
export KERNELINDEX_CACHE_DIR=${KERNELINDEX_CACHE_DIR:-$HOME/.cache/kernelindex-pipeline}  # the 0.8.5 sdist, shared
cd "$TREE"
$PY -c "import kernelindex_pipeline, sys; assert kernelindex_pipeline.__file__.startswith('$TREE'), kernelindex_pipeline.__file__"
t0=$(date +%s)
$PY -m kernelindex_pipeline.cli transform --liger-release 0.8.5 --out "$OUT/transform" > "$OUT/transform.log" 2>&1
t1=$(date +%s)
DAGSTER_HOME=$OUT/ci-home $PY -m kernelindex_pipeline.cli import-ci --wait "${CI_FILES:?the eleven CI files: CI_FILES=DIR}"/*.csv > "$OUT/import-ci.log" 2>&1
t2=$(date +%s)
DAGSTER_HOME=$OUT/first-home $PY -m kernelindex_pipeline.cli import-history --wait > "$OUT/first.log" 2>&1
DAGSTER_HOME=$OUT/first-home $PY -m kernelindex_pipeline.cli import-ci --wait >> "$OUT/first.log" 2>&1
t3=$(date +%s)
echo "transform $((t1-t0)) s, import-ci $((t2-t1)) s, first command $((t3-t2)) s" | tee "$OUT/times.txt"
