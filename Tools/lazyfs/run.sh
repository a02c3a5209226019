#!/bin/bash
# Power-failure runs of LogStore on LazyFS (see README.md in this directory).
#
#   run.sh RUNS never|always|interval [--interval-ms MS] [--compact [--compaction-index]]
#          [--compact-beside] [--reorder]
#          [--reorder-min K] [--reorder-max K] [--untargeted] [--seed BASE] [--direct] [--keep]
#          [--file-writes] [--reopen N] [--crash-after-rename REGEX] [--processes N]
#
# Each run mounts a fresh LazyFS, runs ytkkv-kill-writer on a store inside it (seed BASE+run),
# waits 0.2-2 s and simulates a power failure:
#   default:   freeze the writer (SIGSTOP), lazyfs::clear-cache (drop every unsynced byte),
#              SIGKILL the writer, unmount;
#   --crash-after-rename REGEX: LazyFS's crash fault, armed then: LazyFS dies (a power
#              failure) just after the next rename to a name that matches REGEX (such as
#              `changes`, a changes file put in place by a close); if none comes within 3 s,
#              a default failure instead;
#   --reorder: target.py freezes the writer between two growths of the active segment and
#              arms lazyfs::torn-seq on it so that LazyFS persists the K-th of the page
#              write-backs that come next, drops the earlier ones, and crashes there; if it
#              finds no such moment within 1.5 s (or with --untargeted), the fault is armed
#              on every file of the store and its next 8 segments, K random. Then the writer
#              goes on until LazyFS crashes (at most 3 s) and is killed; a fault that did not
#              fire ends the run as a default one. fired.py tells from LazyFS's log which
#              write was persisted and which earlier ones were dropped.
# Then LazyFS is mounted again on the same backing directory (with --direct, the backing
# directory is used as it is) and `ytkkv-kill-writer --check` runs with the last acknowledged
# operation (and --must-keep for always). With --reopen N the writer closes the store and opens
# it again after every N operations (ytkkv-kill-writer's --reopen), so that failures land in
# closes (the hint and changes files they write without a sync) and in the opens that read them.
# With --compact-beside (which implies --compact) a thread of the writer compacts again and again
# while it writes, so that failures land in compactions of records that unsynced writes replaced.
# With --processes N (2 or more; not with --reorder or --reopen) N writer processes share the
# store in `.manyProcesses` use, each with tables of its own (ytkkv-kill-writer's --process I,
# seed BASE*10+I... per run); the power fails under all of them, and each process's tables must
# hold a prefix of its operations (all of its acknowledged ones under always).
#
# With VERIFY set to a ytkkv binary, `ytkkv verify` runs on the store first: a problem it
# reports (exit status not 0) fails the run, and the files it notes are named on the run's line.
#
# Environment: LAZYFS (the lazyfs binary; else $LAZYFS_SRC/lazyfs/build/lazyfs, else lazyfs on
# PATH; build-lazyfs.sh builds one), WRITER (else built from this repository with swift build,
# in SWIFT_SCRATCH if set), WORK (default /tmp/lz), LAZYFS_LOG_ALL=true|false.
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
# Short: LazyFS reads at most 100 bytes per FIFO command, and torn-seq names a file by its
# full path in the backing directory.
WORK=${WORK:-/tmp/lz}

usage() { sed -n '4,7p' "$0" | sed 's/^# *//' >&2; exit 64; }
[ $# -ge 2 ] || usage
RUNS=$1; MODE=$2; shift 2
INTERVAL_MS=50; COMPACT=0; COMPACTION_INDEX=0; REORDER=0; REORDER_MIN=2; REORDER_MAX=; TARGETED=1
SEED_BASE=1000; DIRECT=0; KEEP=0; FILE_WRITES=0; REOPEN=0; CRASH_RENAME=; BESIDE=0; PROCESSES=0
while [ $# -gt 0 ]; do
  case $1 in
    --interval-ms) INTERVAL_MS=$2; shift 2 ;;
    --compact) COMPACT=1; shift ;;
    --compaction-index) COMPACT=1; COMPACTION_INDEX=1; shift ;;
    --compact-beside) COMPACT=1; BESIDE=1; shift ;;
    --reorder) REORDER=1; shift ;;
    --reorder-min) REORDER=1; REORDER_MIN=$2; shift 2 ;;
    --reorder-max) REORDER=1; REORDER_MAX=$2; shift 2 ;;
    --untargeted) REORDER=1; TARGETED=0; shift ;;
    --seed) SEED_BASE=$2; shift 2 ;;
    --direct) DIRECT=1; shift ;;
    --keep) KEEP=1; shift ;;
    --file-writes) FILE_WRITES=1; shift ;;
    --reopen) REOPEN=$2; shift 2 ;;
    --crash-after-rename) CRASH_RENAME=$2; shift 2 ;;
    --processes) PROCESSES=$2; shift 2 ;;
    *) usage ;;
  esac
done
if [ "$PROCESSES" != 0 ]; then
  # target.py watches one writer, and a reopening writer's closes are not for several.
  [ "$PROCESSES" -ge 2 ] 2>/dev/null && [ $REORDER = 0 ] && [ "$REOPEN" = 0 ] || usage
fi
case $MODE in
  never) SYNC_FLAGS=() ;;
  always) SYNC_FLAGS=(--always) ;;
  interval) SYNC_FLAGS=(--interval "$INTERVAL_MS"); MODE="interval $INTERVAL_MS" ;;
  *) usage ;;
esac
# Under never, the write-back before a growth carries every page written since the last one
# (16 to 65 pages); under interval, a sync may have written some of them back already.
[ -n "$REORDER_MAX" ] || REORDER_MAX=$([ "$MODE" = never ] && echo 32 || echo 12)
# The writer's segment size (maxSegmentSize in Sources/ytkkv-kill-writer/main.swift).
SEGMENT_SIZE=$([ $COMPACT = 1 ] && echo $((64 << 10)) || echo $((1 << 20)))

if [ -z "${LAZYFS:-}" ]; then
  if [ -n "${LAZYFS_SRC:-}" ]; then LAZYFS=$LAZYFS_SRC/lazyfs/build/lazyfs
  else LAZYFS=$(command -v lazyfs || true); fi
fi
[ -n "$LAZYFS" ] && [ -x "$LAZYFS" ] || {
  echo "no LazyFS binary (${LAZYFS:-none}): set LAZYFS, or build one with $HERE/build-lazyfs.sh" >&2
  exit 1
}
if [ -z "${WRITER:-}" ]; then
  build=(swift build --package-path "$REPO" --product ytkkv-kill-writer)
  [ -n "${SWIFT_SCRATCH:-}" ] && build+=(--scratch-path "$SWIFT_SCRATCH")
  "${build[@]}" >&2 || exit 1
  WRITER=$("${build[@]}" --show-bin-path)/ytkkv-kill-writer
fi
[ -x "$WRITER" ] || { echo "no writer at $WRITER" >&2; exit 1; }
COMPACT_FLAGS=(); [ $COMPACT = 1 ] && COMPACT_FLAGS=(--compact)
[ $COMPACTION_INDEX = 1 ] && COMPACT_FLAGS+=(--compaction-index)
# Only the writer takes these: about half its records appended with pwrite; a close and an
# open after every REOPEN operations.
WRITE_FLAGS=(); [ $FILE_WRITES = 1 ] && WRITE_FLAGS=(--file-writes)
[ "$REOPEN" != 0 ] && WRITE_FLAGS+=(--reopen "$REOPEN")
[ $BESIDE = 1 ] && WRITE_FLAGS+=(--compact-beside)
LABEL="$MODE$([ $COMPACT = 1 ] && echo ' compact')$([ $COMPACTION_INDEX = 1 ] && echo ' index')$([ $BESIDE = 1 ] && echo ' beside')$([ $REORDER = 1 ] && echo ' reorder')$([ $FILE_WRITES = 1 ] && echo ' pwrite')$([ "$REOPEN" != 0 ] && echo " reopen $REOPEN")$([ -n "$CRASH_RENAME" ] && echo " crash after rename $CRASH_RENAME")$([ "$PROCESSES" != 0 ] && echo " $PROCESSES processes")"

# mount_lazyfs DIR NAME: mounts LazyFS on DIR/mnt over DIR/root with the FIFOs DIR/NAME.fifo
# (commands; held open on descriptor 9) and DIR/NAME.done (where LazyFS reports a finished
# clear-cache; held open on descriptor 8), logging to DIR/NAME.log; sets LAZYFS_PID.
mount_lazyfs() {
  local dir=$1 name=$2
  rm -f "$dir/$name.fifo" "$dir/$name.done"
  mkfifo "$dir/$name.fifo" "$dir/$name.done"
  exec 8<>"$dir/$name.done" 9<>"$dir/$name.fifo"
  cat > "$dir/$name.toml" <<TOML
[faults]
fifo_path="$dir/$name.fifo"
fifo_path_completed="$dir/$name.done"
[cache]
apply_eviction=false
[cache.simple]
custom_size="512mb"
blocks_per_page=1
[filesystem]
log_all_operations=$LOG_ALL
logfile="$dir/$name.log"
TOML
  "$LAZYFS" "$dir/mnt" --config-path "$dir/$name.toml" -o allow_other -o modules=subdir \
    -o subdir="$dir/root" -f > "$dir/$name.out" 2>&1 &
  LAZYFS_PID=$!
  # LazyFS aborts as it exits (its fault thread is never joined): keep bash from reporting it.
  disown $LAZYFS_PID
  for _ in $(seq 200); do
    grep -q " $dir/mnt fuse" /proc/mounts && return 0
    kill -0 $LAZYFS_PID 2>/dev/null || break
    sleep 0.05
  done
  echo "LazyFS did not mount on $dir/mnt: $(tail -3 "$dir/$name.out")" >&2
  return 1
}

# unmount_lazyfs DIR: unmounts DIR/mnt and waits for LAZYFS_PID to end.
unmount_lazyfs() {
  local dir=$1
  fusermount3 -u "$dir/mnt" 2>/dev/null || fusermount3 -uz "$dir/mnt" 2>/dev/null
  for _ in $(seq 200); do kill -0 $LAZYFS_PID 2>/dev/null || break; sleep 0.05; done
  kill -KILL $LAZYFS_PID 2>/dev/null
  exec 8<&- 9<&-
}

# command TEXT: sends one command through the FIFO on descriptor 9 (open for reading too, so a
# write never blocks, even once LazyFS is gone). LazyFS takes each read of at most 100 bytes
# for one command: one command at a time, with a pause after it.
command() {
  if [ ${#1} -ge 100 ]; then echo "LazyFS command too long (${#1} bytes): $1" >&2; exit 1; fi
  echo "$1" >&9
  sleep 0.02
}

# last_ack FILE: the last acknowledged operation, the last complete line the writer printed.
last_ack() {
  local file=$1 line
  if [ ! -s "$file" ]; then echo 0; return; fi
  if [ "$(tail -c1 "$file" | od -An -tx1 | tr -d ' ')" = 0a ]; then line=$(tail -n1 "$file")
  else line=$(tail -n2 "$file" | sed -n '1{$!p}'); fi
  [[ $line =~ ^[0-9]+$ ]] && echo "$line" || echo 0
}

# freeze PID...: SIGSTOP, then wait (at most about 2 s each) until every thread is stopped, so
# that no sync of a writer completes after the failure.
freeze() {
  local pid
  for pid in "$@"; do kill -STOP "$pid" 2>/dev/null; done
  for pid in "$@"; do
    [ -d /proc/$pid ] || continue
    for _ in $(seq 200); do
      grep -qv '^[tT]' <(for t in /proc/$pid/task/*/stat; do sed 's/.*) //' "$t"; done) \
        || continue 2
      sleep 0.01
    done
    note+="writer not stopped; "
  done
}

# clear_cache: the power failure of a default run.
# LazyFS a47a5ba was seen to hang in a clear-cache that came while two threads of a writer that
# could not be stopped were in its requests (an fsync each, `always --compact-beside`): then it
# is killed, which loses its cache just the same, and the writer's requests fail.
clear_cache() {
  command "lazyfs::clear-cache"
  read -r -t 30 _ <&8 && return
  note+="no clear-cache completion, LazyFS killed; "
  kill -KILL $LAZYFS_PID 2>/dev/null
}

# arm_untargeted K: torn-seq with persist=K on every file of the store and on its next 8
# segments (which the writer, or a compaction, may create while the fault waits).
arm_untargeted() {
  local k=$1 files last n
  files=("$dir/root/store"/*)
  last=$(ls "$dir/root/store" | sed -n 's/^0*\([0-9][0-9]*\)\.log$/\1/p' | sort -n | tail -1)
  for n in $(seq $((${last:-0} + 1)) $((${last:-0} + 8))); do
    files+=("$dir/root/store/$(printf '%06d' "$n").log")
  done
  for file in "${files[@]}"; do
    command "lazyfs::torn-seq::op=write::file=$file::persist=$k"
  done
}

# crashed_or_cleared NOTE: waits (at most 3 s) for an armed fault to crash LazyFS; true if it
# did. If not, the power failure of a default run instead, noting NOTE.
crashed_or_cleared() {
  for _ in $(seq 600); do kill -0 $LAZYFS_PID 2>/dev/null || return 0; sleep 0.005; done
  freeze "${writers[@]}"
  clear_cache
  note+="$1; "
  return 1
}

# target.py and fired.py read LazyFS's log of every operation.
LOG_ALL=${LAZYFS_LOG_ALL:-$([ $REORDER = 1 ] && echo true || echo false)}
mkdir -p "$WORK"
passed=0; acked_total=0; lost_total=0; fired_total=0; crashed_total=0; targeted_total=0; hits=0; hits_passed=0
for run in $(seq 1 "$RUNS"); do
  seed=$((SEED_BASE + run))
  dir="$WORK/${MODE:0:1}$([ $COMPACT = 1 ] && echo c)$([ $REORDER = 1 ] && echo r)-$seed"
  rm -rf "$dir"; mkdir -p "$dir/root" "$dir/mnt"
  mount_lazyfs "$dir" first || exit 1

  # One writer, or with --processes N, writers 1...N, each with its seed, flags and output.
  writers=(); names=(); seeds=(); processes=()
  if [ "$PROCESSES" = 0 ]; then names=(writer); seeds=($seed); processes=("")
  else
    for i in $(seq 1 "$PROCESSES"); do
      names+=(writer-$i); seeds+=($((seed * 10 + i))); processes+=("--process $i")
    done
  fi
  for i in "${!names[@]}"; do
    "$WRITER" "$dir/mnt/store" "${seeds[$i]}" "${COMPACT_FLAGS[@]}" "${SYNC_FLAGS[@]}" \
      "${WRITE_FLAGS[@]}" ${processes[$i]} > "$dir/${names[$i]}.out" 2> "$dir/${names[$i]}.err" &
    writers+=($!)
  done
  writer=${writers[0]}
  delay_ms=$((200 + RANDOM % 1801))
  sleep "$(printf '%d.%03d' $((delay_ms / 1000)) $((delay_ms % 1000)))"
  note=""
  for i in "${!names[@]}"; do
    kill -0 ${writers[$i]} 2>/dev/null \
      || note+="${names[$i]} ended early: $(head -c 200 "$dir/${names[$i]}.err"); "
  done

  if [ -n "$CRASH_RENAME" ]; then
    # Matched against the new name: LazyFS a47a5ba checks a rename's old name only when its
    # from_rgx matches the text "none", so it is given to_rgx as well, which it does check.
    command "lazyfs::crash::timing=after::op=rename::from_rgx=$CRASH_RENAME::to_rgx=$CRASH_RENAME"
    if crashed_or_cleared "no rename of $CRASH_RENAME, cache cleared"; then
      crashed_total=$((crashed_total + 1))
      note+="crashed after a rename to $CRASH_RENAME (on disk: $(cd "$dir/root/store" && ls -s | grep -E "$CRASH_RENAME" | tr -s ' \n' ' ')); "
    fi
  elif [ $REORDER = 0 ]; then
    freeze "${writers[@]}"
    clear_cache
  else
    armed=""
    if [ $TARGETED = 1 ]; then
      armed=$("$HERE/target.py" "$dir/first.log" "$dir/root/store" "$dir/first.fifo" \
        $writer $SEGMENT_SIZE $REORDER_MIN $REORDER_MAX 1.5 2>&1) \
        && targeted_total=$((targeted_total + 1)) || armed="untargeted ($armed)"
      note+="$armed; "
    fi
    if [ $TARGETED = 0 ] || [[ $armed == untargeted* ]]; then
      freeze $writer
      k=$((REORDER_MIN + RANDOM % (REORDER_MAX - REORDER_MIN + 1)))
      arm_untargeted $k
      note+="armed persist=$k on every file; "
    fi
    kill -CONT $writer 2>/dev/null
    if crashed_or_cleared "fault not fired, cache cleared"; then
      fired_total=$((fired_total + 1))
      what=$("$HERE/fired.py" "$dir/first.log")
      note+="fault fired: $what; "
    fi
  fi
  for pid in "${writers[@]}"; do kill -KILL $pid 2>/dev/null; done
  for pid in "${writers[@]}"; do wait $pid 2>/dev/null; done
  unmount_lazyfs "$dir"

  if [ $DIRECT = 1 ]; then
    store="$dir/root/store"
  else
    mount_lazyfs "$dir" second || exit 1
    store="$dir/mnt/store"
  fi
  verified=0
  if [ -n "${VERIFY:-}" ]; then
    report=$("$VERIFY" verify "$store" 2>&1)
    verified=$?
    echo "$report" > "$dir/verify.txt"
    noted=$(echo "$report" | sed -n 's/^note: \([^:]*\):.*/\1/p' | tr '\n' ' ')
    note+="verify: $(echo "$report" | tail -1), notes: ${noted:-none}; "
    [ $verified = 0 ] || note+="$(echo "$report" | grep -v '^note:' | head -3 | tr '\n' ' '); "
  fi
  must_keep=(); [ "$MODE" = always ] && must_keep=(--must-keep)
  # Each writer's check, one after the other (each ends with a writable open of the store).
  status=0; acks=(); results=()
  for i in "${!names[@]}"; do
    ack=$(last_ack "$dir/${names[$i]}.out")
    one=$("$WRITER" --check "$store" "${seeds[$i]}" "$ack" "${COMPACT_FLAGS[@]}" \
      "${must_keep[@]}" ${processes[$i]} 2>&1) || status=1
    prefix=$(echo "$one" | sed -n 's/^prefix \([0-9]*\) of.*/\1/p' | head -1)
    [ -n "$prefix" ] && [ "$prefix" -lt "$ack" ] && lost_total=$((lost_total + ack - prefix))
    acked_total=$((acked_total + ack))
    acks+=("$ack"); results+=("$one")
  done
  [ $DIRECT = 1 ] || unmount_lazyfs "$dir"
  ack=$(IFS=,; echo "${acks[*]}")
  result=$(printf '%s\n' "${results[@]}")

  if [ $status = 0 ] && [ $verified = 0 ]; then verdict=PASS; passed=$((passed + 1)); else verdict=FAIL; fi
  if [[ $note == *"later data kept, earlier data lost"* ]]; then
    hits=$((hits + 1)); [ $verdict = PASS ] && hits_passed=$((hits_passed + 1))
  fi
  result=$(echo "$result" | tr '\n' '|' | sed 's/|$//')
  echo "run $run seed $seed [$LABEL] after ${delay_ms}ms: ${note}ack $ack: $result => $verdict"
  [ $verdict = PASS ] && [ $KEEP = 0 ] && rm -rf "$dir"
done
summary="summary [$LABEL]: runs $RUNS, passed $passed, acknowledged $acked_total"
summary+=", lost from acknowledged $lost_total"
[ -n "$CRASH_RENAME" ] && summary+=", crashed after the rename $crashed_total"
[ $REORDER = 1 ] && summary+=", faults fired $fired_total, targeted $targeted_total"
[ $REORDER = 1 ] && summary+=", later data kept with earlier data lost $hits (passed $hits_passed)"
echo "$summary"
[ "$passed" = "$RUNS" ]
