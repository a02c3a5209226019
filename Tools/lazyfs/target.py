#!/usr/bin/env python3
"""Arms a torn-seq fault that lands on data pages of the store's active segment.

    target.py LOG STORE FIFO PID SEGMENT_SIZE KMIN KMAX [DEADLINE_S]

LOG is the log of the running LazyFS (log_all_operations=true), STORE the store's directory
in the backing directory, FIFO LazyFS's command FIFO, PID the writer, SEGMENT_SIZE the
writer's segment size.

Until DEADLINE_S (default 1.5) seconds have passed, it freezes the writer (SIGSTOP, until
every thread is stopped) and reads the log. If the active segment (the highest-numbered
NNNNNN.log) has seen no write for 10 ms, has not grown to SEGMENT_SIZE yet, and has had data
pages written back, the writer is between two growths of the segment: the next writes LazyFS
sees on it are the write-back of the pages written since the last one, 4 KiB each in file
order, which the kernel does before glibc's zero fill of the next growth. To tell a fill that
only stalled, it then lets the writer run 3 ms more and checks that nothing was written to
the segment meanwhile. There are about D = (allocated end - start of the page where the last
write-back ended) / 4096 such pages (fewer when a sync writes some back first), so it arms
lazyfs::torn-seq::op=write::file=SEGMENT::persist=K, K random in KMIN..min(KMAX, D - 1),
waits until LazyFS has taken it, prints what it armed and exits 0, the writer still frozen.
Otherwise it lets the writer run 2-8 ms and tries again. At the deadline it prints so and
exits 1, the writer frozen.
"""
import datetime
import os
import random
import re
import signal
import sys
import time

PAGE = 4096
QUIET = 0.010  # no write to the segment for this long: it is not in a fill (~0.4 ms apart)

log_path, store, fifo, pid = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
segment_size, kmin, kmax = int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])
deadline = time.monotonic() + (float(sys.argv[8]) if len(sys.argv) > 8 else 1.5)

line_pattern = re.compile(
    r"^\[([\d-]+ [\d:.]+)\].*lfs_(write|fsync)\(path=([^,)]*)(?:,size=(\d+),off=(\d+))?")


class File:
    def __init__(self):
        self.size = 0  # end of the furthest write: the allocated end
        self.data_end = 0  # end of the last write of at least a page: a write-back
        self.last = 0.0  # when the last write was logged (whole milliseconds)
        self.writes = 0


files = {}
position = 0
pending = ""


def read_log():
    """Reads the lines LazyFS has logged since the last call."""
    global position, pending
    with open(log_path, errors="replace") as log:
        log.seek(position)
        chunk = log.read()
        position = log.tell()
    lines = (pending + chunk).split("\n")
    pending = lines.pop()
    for line in lines:
        match = line_pattern.search(line)
        if not match or match[2] != "write":
            continue
        state = files.setdefault(match[3], File())
        size, offset = int(match[4]), int(match[5])
        state.writes += 1
        state.size = max(state.size, offset + size)
        if size >= PAGE:
            state.data_end = offset + size
        state.last = datetime.datetime.strptime(match[1], "%Y-%m-%d %H:%M:%S.%f").timestamp()


def stop():
    """Freezes the writer and waits until all its threads are stopped."""
    os.kill(pid, signal.SIGSTOP)
    for _ in range(500):
        states = []
        for task in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{task}/stat") as stat:
                    states.append(stat.read().rsplit(")", 1)[1].split()[0])
            except OSError:
                pass
        if all(state in "tT" for state in states):
            return
        time.sleep(0.001)
    sys.exit("the writer did not stop")


def still_quiet(segment, writes):
    """Lets the writer run for 3 ms: a writer that was in a fill (only stalled) writes again."""
    os.kill(pid, signal.SIGCONT)
    time.sleep(0.003)
    stop()
    read_log()
    return files[segment].writes == writes


def active_segment():
    numbers = [int(name[:-4]) for name in os.listdir(store)
               if name.endswith(".log") and name[:-4].isdigit()]
    return f"{store}/{max(numbers):06d}.log" if numbers else None


tries = 0
while time.monotonic() < deadline:
    tries += 1
    stop()
    stopped_at = time.time()
    read_log()
    segment = active_segment()
    state = files.get(segment)
    if state and 0 < state.data_end and state.size < segment_size \
            and stopped_at - (state.last + 0.001) >= QUIET:
        pages = (state.size - state.data_end // PAGE * PAGE) // PAGE
        high = min(kmax, pages - 1)
        if high >= kmin and still_quiet(segment, state.writes):
            k = random.randint(kmin, high)
            command = f"lazyfs::torn-seq::op=write::file={segment}::persist={k}"
            if len(command) >= 100:
                sys.exit(f"command too long for LazyFS ({len(command)} bytes): {command}")
            with open(fifo, "w") as commands:
                commands.write(command + "\n")
            # LazyFS logs each command it takes; wait for this one.
            taken = f"configured successfully '{command}'"
            for _ in range(400):
                time.sleep(0.005)
                with open(log_path, errors="replace") as log:
                    log.seek(max(0, position - 4096))
                    if taken in log.read():
                        break
            else:
                sys.exit(f"LazyFS did not confirm {command}")
            name = segment.rsplit("/", 1)[-1]
            print(f"targeted {name} persist={k} of ~{pages} pages to write back "
                  f"(write-back ended at {state.data_end}, allocated {state.size}, try {tries})")
            sys.exit(0)
    os.kill(pid, signal.SIGCONT)
    time.sleep(random.uniform(0.002, 0.008))
stop()
print(f"no data phase found in {tries} tries")
sys.exit(1)
