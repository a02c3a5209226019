#!/bin/bash
# Builds LazyFS (https://github.com/dsrhaslab/lazyfs) for run.sh, from a source tree you
# fetched yourself (it is not part of this repository):
#
#   build-lazyfs.sh LAZYFS_SOURCE_TREE
#
# Installs Debian's packages for its dependencies (apt-get, so as root), edits the tree's two
# CMakeLists.txt (libs/libpcache and lazyfs) to use those packages instead of downloading
# toml11 and spdlog with FetchContent, and builds libs/libpcache/build/libpcache.so and
# lazyfs/build/lazyfs (without LazyFS's own tests, which download googletest). Prints the
# binary's path: give it to run.sh as LAZYFS. Running it again on the same tree is harmless.
# Checked with LazyFS a47a5ba on Debian 12 (toml11 3.7.1, spdlog 1.10.0, fuse3 3.14.0).
set -euo pipefail

[ $# = 1 ] || { echo "usage: $0 LAZYFS_SOURCE_TREE" >&2; exit 64; }
SRC=$(cd "$1" && pwd)
PCACHE_CMAKE=$SRC/libs/libpcache/CMakeLists.txt
LAZYFS_CMAKE=$SRC/lazyfs/CMakeLists.txt
for file in "$PCACHE_CMAKE" "$LAZYFS_CMAKE"; do
  [ -f "$file" ] || { echo "$file not found: is $SRC a LazyFS tree?" >&2; exit 1; }
done

if [ "$(id -u)" = 0 ]; then SUDO=(); else SUDO=(sudo); fi
"${SUDO[@]}" apt-get update
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y \
  libspdlog-dev libtoml11-dev libfuse3-dev fuse3 cmake pkg-config g++

# The edits, each replacing one exact piece of the upstream file; a file that already carries
# the marker was edited by an earlier run and is left alone. A piece not found stops the
# script: that tree's CMake files differ from the ones this was written against.
python3 - "$PCACHE_CMAKE" "$LAZYFS_CMAKE" <<'PYTHON'
import re
import sys

MARKER = "# build-lazyfs.sh: Debian packages instead of FetchContent"

def edit(path, replacements):
    text = open(path).read()
    if MARKER in text:
        print(f"{path}: already edited")
        return
    for pattern, replacement in replacements:
        text, count = re.subn(pattern, lambda _: replacement, text, count=1, flags=re.S)
        if count != 1:
            sys.exit(f"{path}: did not find {pattern!r}; edit it by hand (see README.md)")
    open(path, "w").write(text)
    print(f"{path}: edited")

pcache, lazyfs = sys.argv[1], sys.argv[2]

# libpcache: toml11 and spdlog were downloaded and built in its build tree.
edit(pcache, [
    (r"include\(FetchContent\).*?set_target_properties\(spdlog PROPERTIES "
     r"POSITION_INDEPENDENT_CODE ON\)\n",
     f"{MARKER}\nfind_package(toml11 REQUIRED)\nfind_package(spdlog REQUIRED)\n"),
    (r"target_link_libraries\(pcache toml11::toml11 spdlog\)",
     "target_link_libraries(pcache PUBLIC toml11::toml11 spdlog::spdlog)"),
])

# lazyfs: it took spdlog's headers and library from libpcache's build tree, and linked fuse3
# by name.
edit(lazyfs, [
    (r"link_directories\(\.\./libs/libpcache/build/_deps/spdlog-build/\)\n"
     r"include_directories\(\.\./libs/libpcache/build/_deps/spdlog-src/include\)\n",
     ""),
    (r"find_package\(Threads REQUIRED\)\n",
     f"{MARKER}\nfind_package(Threads REQUIRED)\nfind_package(PkgConfig REQUIRED)\n"
     "pkg_check_modules(FUSE3 REQUIRED IMPORTED_TARGET fuse3)\n"
     "find_package(spdlog REQUIRED)\nfind_package(toml11 REQUIRED)\n"),
    (r"target_link_libraries\(\$\{CMAKE_PROJECT_NAME\} fuse3 Threads::Threads libpcache\.so\)",
     "target_link_libraries(${CMAKE_PROJECT_NAME} PkgConfig::FUSE3 Threads::Threads "
     "libpcache.so spdlog::spdlog toml11::toml11)"),
])
PYTHON

# lazyfs links libpcache.so from ../libs/libpcache/build, so libpcache first.
cmake -S "$SRC/libs/libpcache" -B "$SRC/libs/libpcache/build"
cmake --build "$SRC/libs/libpcache/build" -j "$(nproc)"
cmake -S "$SRC/lazyfs" -B "$SRC/lazyfs/build" -DLAZYFS_BUILD_TESTS=OFF
cmake --build "$SRC/lazyfs/build" -j "$(nproc)"

echo "LazyFS built: LAZYFS=$SRC/lazyfs/build/lazyfs"
