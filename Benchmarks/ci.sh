#!/usr/bin/env bash
# Benchmarks/ci.sh [build|run] — builds the benchmark and runs its quick mode, so that it cannot
# rot; skipped (with a note) when the peer libraries are not installed (Benchmarks/setup.sh
# installs them). `build` only builds (`.ci/run` builds it beside a step that leaves a core
# idle), `run` only runs what was built; no argument does both.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-all}
for header in sqlite3.h leveldb/c.h lmdb.h rocksdb/c.h; do
  if [ ! -e "/usr/include/$header" ]; then
    echo "benchmark skipped: /usr/include/$header is missing (run Benchmarks/setup.sh)"
    exit 0
  fi
done
if [ "$mode" != run ]; then
  swift build -c release --package-path Benchmarks
fi
if [ "$mode" != build ]; then
  BENCH_DIR=$(mktemp -d) Benchmarks/.build/release/ytkkv-bench --quick > .build/bench-quick.md
  grep -q "### Targets" .build/bench-quick.md
  echo "benchmark quick mode ran: .build/bench-quick.md"
fi
