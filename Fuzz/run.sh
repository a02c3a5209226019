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
targets=(record-decoding store-open json differential)
mkdir -p "$artifacts"

for target in "${targets[@]}"; do
  echo "== building fuzz-$target"
  swift build --sanitize=fuzzer --sanitize=address --product "fuzz-$target" \
    --scratch-path "$scratch" -Xswiftc -DFUZZING 2>&1 | grep -v "Cannot export local symbol" || true
  test -x "$scratch/debug/fuzz-$target" || { echo "FAIL: fuzz-$target did not build" >&2; exit 1; }
done

summary=()
for target in "${targets[@]}"; do
  binary="$scratch/debug/fuzz-$target"
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
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
  speed=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$')
  coverage=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | grep -o '[0-9]*')
  summary+=("$target: $runs executions ($speed/s), coverage $coverage, no failure")
done

echo "== fuzzing summary ($seconds s per target)"
printf '  %s\n' "${summary[@]}"
