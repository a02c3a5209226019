#!/bin/bash
# The campaign of README.md:
#
#   campaign.sh [REORDER_RUNS [RUNS]]
#
# REORDER_RUNS (default 30) runs of never, interval (50 ms) and always with --reorder, then
# RUNS (default 10) runs of each plain mode, RUNS of each mode with --compact, plain and with
# --reorder, RUNS of each mode with --compaction-index --reopen 40 (closes that write hint
# and changes files), plain and with --reorder, RUNS of each mode with --compaction-index
# --compact-beside (compactions on a thread of their own while the writer writes), and RUNS of
# each mode with three writer processes (--processes 3), plain and with --compaction-index.
# Prints every run's line and each configuration's summary; exits 1 if any run failed. Same
# environment as run.sh; the writer is built once here when WRITER is unset.
set -u
REORDER_RUNS=${1:-30}
RUNS=${2:-10}
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
if [ -z "${WRITER:-}" ]; then
  build=(swift build --package-path "$REPO" --product ytkkv-kill-writer)
  [ -n "${SWIFT_SCRATCH:-}" ] && build+=(--scratch-path "$SWIFT_SCRATCH")
  "${build[@]}" >&2 || exit 1
  WRITER=$("${build[@]}" --show-bin-path)/ytkkv-kill-writer
fi
export WRITER

status=0
for mode in never interval always; do
  "$HERE/run.sh" "$REORDER_RUNS" $mode --reorder || status=1
done
for mode in never always interval; do
  "$HERE/run.sh" "$RUNS" $mode || status=1
done
for reorder in "" --reorder; do
  for mode in never always interval; do
    "$HERE/run.sh" "$RUNS" $mode --compact $reorder || status=1
  done
done
for reorder in "" --reorder; do
  for mode in never always interval; do
    "$HERE/run.sh" "$RUNS" $mode --compaction-index --reopen 40 $reorder || status=1
  done
done
for mode in never always interval; do
  "$HERE/run.sh" "$RUNS" $mode --compaction-index --compact-beside || status=1
done
for index in "" --compaction-index; do
  for mode in never always interval; do
    "$HERE/run.sh" "$RUNS" $mode --processes 3 $index || status=1
  done
done
exit $status
