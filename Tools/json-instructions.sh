#!/bin/bash
# Instructions per call of the JSON layer's calls that docs/PERFORMANCE.md ("The JSON layer")
# tracks (the four of JSON values, then the Codable put and decode), counted by callgrind inside
# each call only (`--toggle-collect`), on the benchmark's workloads with 20,000 keys. Needs
# valgrind and the benchmark's release build:
#   swift build -c release --package-path Benchmarks
#   Tools/json-instructions.sh            # or BENCH=<another build of ytkkv-bench>
set -euo pipefail
cd "$(dirname "$0")/.."
bench=${BENCH:-Benchmarks/.build/release/ytkkv-bench}
keys=20000
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The symbols of the functions the benchmark defines, each beside its demangled name.
nm "$bench" | awk '$2 == "T" { print $3 }' > "$work/symbols"
swift demangle < "$work/symbols" | paste "$work/symbols" - > "$work/names"
# The symbol whose demangled name starts with $1 (the module's name and the full signature).
symbol() {
  awk -F '\t' -v want="$1" 'index($2, want) == 1 { print $1; exit }' "$work/names"
}
# measure WORKLOAD CALL [CALLS]: CALLS is how many times the workload makes the call (its keys
# by default; the Codable workloads use half of them).
measure() {
  local workload=$1 call=$2 calls=${3:-$keys}
  local name
  name=$(symbol "$call")
  [ -n "$name" ] || { echo "no symbol for $call" >&2; exit 1; }
  SWIFT_DETERMINISTIC_HASHING=1 BENCH_DIR=$work valgrind --tool=callgrind --callgrind-out-file="$work/out" \
    "--toggle-collect=$name" "$bench" --workloads "$workload" --keys $keys --repetitions 1 \
    --engines "${engines:-ytk-object,ytk-string,ytk-codable}" > "$work/log" 2>&1
  local total
  total=$(grep "Collected :" "$work/log" | awk '{ print $4 }')
  printf '%-11s %6.2fk instructions a call (%s over %d calls): %s\n' "$workload" \
    "$(awk -v t="$total" -v k="$calls" 'BEGIN { print t / k / 1000 }')" "$total" "$calls" \
    "${call#"$store".}"
}
store=YTKKeyValueStore.KeyValueStore
measure json-get "$store.object(id: Swift.String, from: Swift.String)"
measure json-put "$store.put(_: YTKKeyValueStore.JSONValue, id: Swift.String, into: Swift.String,"
measure string-get "$store.string(id: Swift.String, from: Swift.String)"
measure string-put "$store.put(string: Swift.String, id: Swift.String, into: Swift.String,"
measure codable-put "$store.put<A where A: Swift.Encodable>(encodable: A, id:" $((keys / 2))
measure codable-get "$store.decode<A where A: Swift.Decodable>(_: A.Type, id:" $((keys / 2))
