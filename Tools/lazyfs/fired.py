#!/usr/bin/env python3
"""What a torn-seq fault did, from a LazyFS log written with log_all_operations=true.

    fired.py LOG

LazyFS counts the writes to an armed file from its arming, and again from 0 after each fsync
of it, and persists the K-th. This prints one phrase: the write it persisted (its number,
size, offset and file) and the earlier writes of the same count it dropped: how many carried
data (at least 4 KiB: a write-back of the mapping's pages; glibc's zero fill writes 1 byte
and LazyFS fills the gap before it with up to 511 bytes) and where. When the persisted write
is data and some dropped data write lies below it, the phrase ends with "later data kept,
earlier data lost", the case the targeting aims for.
"""
import re
import sys

PAGE = 4096
write = re.compile(r"lfs_write\(path=([^,]*),size=(\d+),off=(\d+)\)")
fsync = re.compile(r"lfs_fsync\(path=([^,]*),")
armed = re.compile(r"configured successfully 'lazyfs::torn-seq::op=write::file=([^:]*)::")
persisted = re.compile(r"Going to persist the write (\d+) for the path (\S+)")

counted = {}  # armed file -> (size, offset) of the writes LazyFS has counted, in order
for line in open(sys.argv[1], errors="replace"):
    if match := armed.search(line):
        counted[match[1]] = []
    elif (match := write.search(line)) and match[1] in counted:
        counted[match[1]].append((int(match[2]), int(match[3])))
    elif (match := fsync.search(line)) and match[1] in counted:
        counted[match[1]] = []
    elif match := persisted.search(line):
        number, path = int(match[1]), match[2]
        writes = counted.get(path, [])
        name = path.rsplit("/", 1)[-1]
        if not 0 < number <= len(writes):
            print(f"persisted write {number} of {name} (not in the log)")
            break
        size, offset = writes[number - 1]
        dropped = writes[: number - 1]
        data = [o for s, o in dropped if s >= PAGE]
        below = sum(1 for o in data if o < offset)
        where = f" at {min(data)}..{max(data)}" if data else ""
        kind = "data" if size >= PAGE else "fill"
        verdict = "; later data kept, earlier data lost" if kind == "data" and below else ""
        print(
            f"persisted only write {number} of {name} ({kind}, {size} bytes at {offset}), "
            f"dropped {len(data)} earlier data writes{where} ({below} below it) and "
            f"{len(dropped) - len(data)} fill writes{verdict}"
        )
        break
else:
    print("no torn-seq write persisted")
