#!/usr/bin/env bash
# Benchmarks/ci.sh [build|run] — builds the benchmark and runs its quick mode and its
# many-processes rows, so that it cannot rot. The peer libraries are installed first when they
# are missing (Benchmarks/setup.sh, which needs root and the package registry); if they cannot
# be, it fails. `build` only builds (`.ci/run` builds it beside a step that leaves a core idle),
# `run` only runs what was built; no argument does both.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-all}
for header in sqlite3.h leveldb/c.h lmdb.h rocksdb/c.h; do
  if [ ! -e "/usr/include/$header" ]; then
    echo "/usr/include/$header is missing: installing the peer libraries (Benchmarks/setup.sh)"
    Benchmarks/setup.sh
    break
  fi
done
for header in sqlite3.h leveldb/c.h lmdb.h rocksdb/c.h; do
  [ -e "/usr/include/$header" ] || { echo "FAIL: /usr/include/$header is still missing" >&2; exit 1; }
done
if [ "$mode" != run ]; then
  swift build -c release --package-path Benchmarks
fi
if [ "$mode" != build ]; then
  BENCH_DIR=$(mktemp -d) Benchmarks/.build/release/ytkkv-bench --quick > .build/bench-quick.md
  grep -q "### Targets" .build/bench-quick.md
  echo "benchmark quick mode ran: .build/bench-quick.md"
  BENCH_DIR=$(mktemp -d) Benchmarks/.build/release/ytkkv-bench --many-processes --keys 20000 \
    --repetitions 1 > .build/bench-many.md
  grep -q "SQLite WAL" .build/bench-many.md
  echo "benchmark many-processes rows ran: .build/bench-many.md"
fi
