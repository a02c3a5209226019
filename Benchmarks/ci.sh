#!/usr/bin/env bash
# Builds the benchmark and runs its quick mode, so that it cannot rot; skipped (with a note)
# when the peer libraries are not installed (Benchmarks/setup.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/.."
for header in sqlite3.h leveldb/c.h lmdb.h rocksdb/c.h; do
  if [ ! -e "/usr/include/$header" ]; then
    echo "benchmark skipped: /usr/include/$header is missing (run Benchmarks/setup.sh)"
    exit 0
  fi
done
swift build -c release --package-path Benchmarks
BENCH_DIR=$(mktemp -d) Benchmarks/.build/release/ytkkv-bench --quick > .build/bench-quick.md
grep -q "### Targets" .build/bench-quick.md
echo "benchmark quick mode ran: .build/bench-quick.md"
