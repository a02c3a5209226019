#!/usr/bin/env bash
# Installs the peer libraries the benchmark links (Debian/Ubuntu): SQLite, LevelDB, LMDB,
# RocksDB, and the sqlite3 shell. Needs root (or sudo) and network access to the package
# registry.
set -euo pipefail
packages=(libsqlite3-dev libleveldb-dev liblmdb-dev librocksdb-dev sqlite3)
if command -v sudo > /dev/null && [ "$(id -u)" != 0 ]; then run=sudo; else run=; fi
$run apt-get update -qq
DEBIAN_FRONTEND=noninteractive $run apt-get install -y -qq "${packages[@]}"
echo "installed: ${packages[*]}"
