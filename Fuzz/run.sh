#!/usr/bin/env bash
# Fuzz/run.sh [SECONDS] — build every fuzz target with libFuzzer and AddressSanitizer, replay
# the inputs that once failed (Fuzz/Regressions/<target>/), then fuzz each target for SECONDS
# (default 60) starting from its seed corpus (Fuzz/Corpus/<target>/) and dictionary, two targets
# at a time (FUZZ_JOBS), each on its own core.
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

# One target: replay its kept failures, then fuzz it. Its output goes to the caller; its summary
# line to $artifacts/<target>.summary. Targets run two at a time (FUZZ_JOBS), each on a core.
fuzz_one() {
  local target=$1
  export FUZZ_TARGET="$target"
  local regressions=(Fuzz/Regressions/"$target"/*)
  if [ -e "${regressions[0]}" ]; then
    echo "== replaying ${#regressions[@]} kept failures of $target"
    "$binary" "${regressions[@]}" > "$artifacts/$target-replay.log" 2>&1 \
      || { cat "$artifacts/$target-replay.log"; echo "FAIL: a kept failure of $target fails again" >&2; return 1; }
  fi
  echo "== fuzzing $target for $seconds s"
  local corpus
  corpus=$(mktemp -d)
  local dictionary=()
  [ -f "Fuzz/Dictionaries/$target.dict" ] && dictionary=(-dict="Fuzz/Dictionaries/$target.dict")
  local log="$artifacts/$target.log"
  if ! "$binary" -max_total_time="$seconds" -print_final_stats=1 -max_len=8192 -rss_limit_mb=4096 \
    -artifact_prefix="$artifacts/$target-" "${dictionary[@]}" "$corpus" "Fuzz/Corpus/$target" \
    > "$log" 2>&1; then
    tail -n 60 "$log"
    echo "FAIL: fuzz-$target found a failure; the input is in $artifacts/" >&2
    return 1
  fi
  rm -rf "$corpus"
  local runs speed coverage
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  coverage=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2 || true)
  if [ -z "$coverage" ]; then
    tail -n 20 "$log"
    echo "FAIL: fuzz-ytkkv ran $target without coverage feedback (not instrumented?)" >&2
    return 1
  fi
  echo "$target: $runs executions ($speed/s), coverage $coverage edges, no failure" \
    > "$artifacts/$target.summary"
}

jobs_at_once=${FUZZ_JOBS:-2}
for target in "${targets[@]}"; do
  rm -f "$artifacts/$target.summary" "$artifacts/$target.status"
  ( set +e; fuzz_one "$target" > "$artifacts/$target.out" 2>&1; echo $? > "$artifacts/$target.status" ) &
  while [ "$(jobs -rp | wc -l)" -ge "$jobs_at_once" ]; do wait -n || true; done
done
wait
failed=0
summary=()
for target in "${targets[@]}"; do
  cat "$artifacts/$target.out"
  if [ "$(cat "$artifacts/$target.status" 2>/dev/null)" != 0 ]; then
    failed=1
  else
    summary+=("$(cat "$artifacts/$target.summary")")
  fi
done
[ "$failed" = 0 ] || { echo "FAIL: fuzzing failed (above)" >&2; exit 1; }

echo "== fuzzing summary ($seconds s per target, $jobs_at_once at a time)"
printf '  %s\n' "${summary[@]}"
