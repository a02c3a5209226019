#!/usr/bin/env bash
# Fuzz/run.sh [SECONDS] — build every fuzz target with libFuzzer and AddressSanitizer, replay
# the inputs that once failed (Fuzz/Regressions/<target>/), then fuzz each target for SECONDS
# (default 60) starting from its seed corpus (Fuzz/Corpus/<target>/) and dictionary.
#
# A failure stops the script with a non-zero status; libFuzzer leaves the failing input in
# .build/fuzz-artifacts/. Fix the bug, then keep the input in Fuzz/Regressions/<target>/ so
# that it is replayed here and by `swift test` from then on.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-60}
scratch=${FUZZ_SCRATCH_PATH:-.build/fuzz}
artifacts=.build/fuzz-artifacts
targets=(record-decoding store-open json differential sqlite)
mkdir -p "$artifacts"

echo "== building fuzz-ytkkv with libFuzzer and AddressSanitizer"
# `--sanitize=fuzzer --sanitize=address` reaches the compiler as two -sanitize flags in an
# order that varies from run to run, and the driver keeps only the last: half the builds had no
# coverage feedback, the other half no AddressSanitizer. One combined flag keeps both;
# `--sanitize=fuzzer` still makes SwiftPM link libFuzzer.
swift build --sanitize=fuzzer -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING \
  --product fuzz-ytkkv --scratch-path "$scratch" 2>&1 | grep -v "Cannot export local symbol" || true
binary="$scratch/debug/fuzz-ytkkv"
test -x "$binary" || { echo "FAIL: fuzz-ytkkv did not build" >&2; exit 1; }

summary=()
for target in "${targets[@]}"; do
  export FUZZ_TARGET="$target"
  regressions=(Fuzz/Regressions/"$target"/*)
  if [ -e "${regressions[0]}" ]; then
    echo "== replaying ${#regressions[@]} kept failures of $target"
    "$binary" "${regressions[@]}" > "$artifacts/$target-replay.log" 2>&1 \
      || { cat "$artifacts/$target-replay.log"; echo "FAIL: a kept failure of $target fails again" >&2; exit 1; }
  fi
  echo "== fuzzing $target for $seconds s"
  corpus=$(mktemp -d)
  dictionary=()
  [ -f "Fuzz/Dictionaries/$target.dict" ] && dictionary=(-dict="Fuzz/Dictionaries/$target.dict")
  log="$artifacts/$target.log"
  if ! "$binary" -max_total_time="$seconds" -print_final_stats=1 -max_len=8192 -rss_limit_mb=4096 \
    -artifact_prefix="$artifacts/$target-" "${dictionary[@]}" "$corpus" "Fuzz/Corpus/$target" \
    > "$log" 2>&1; then
    tail -n 60 "$log"
    echo "FAIL: fuzz-$target found a failure; the input is in $artifacts/" >&2
    exit 1
  fi
  rm -rf "$corpus"
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  coverage=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2 || true)
  if [ -z "$coverage" ]; then
    tail -n 20 "$log"
    echo "FAIL: fuzz-ytkkv ran $target without coverage feedback (not instrumented?)" >&2
    exit 1
  fi
  summary+=("$target: $runs executions ($speed/s), coverage $coverage edges, no failure")
done

echo "== fuzzing summary ($seconds s per target)"
printf '  %s\n' "${summary[@]}"
