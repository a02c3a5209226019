#!/usr/bin/env python3
"""The seeds of the `sqlite` fuzz target: small SQLite databases, some with a WAL or a hot
journal beside them, each packed in the target's input format (Fuzz/Sources/FuzzTargets/
SQLiteTarget.swift):

    [0][database...]                                  the database alone
    [1][n: 2 bytes, little-endian][database: n][wal...]
    [2][n: 2][database: n][journal...]
    [3][n: 2][m: 2][database: n][wal: m][journal...]

    make_sqlite_seeds.py [OUT_DIR]     # default: Fuzz/Corpus/sqlite beside this script

Pages are 512 bytes, so that a table b-tree has two levels, a payload spills onto an overflow
chain and auto-vacuum has pointer-map pages within a few kilobytes; every seed fits in
Fuzz/run.sh's -max_len (8192 bytes), beyond which libFuzzer cuts an input. Each database with
a WAL or journal is checked against SQLite: the copy SQLite opens reads what the seed means
(the WAL's commits replayed, the journal's transaction rolled back).

The hot journals are made here, record by record, from two states SQLite wrote (before and
after a transaction): a journal SQLite writes itself only spills into the file once more than
its cache (at least 10 pages) is dirty, too large for a seed. The WAL is SQLite's own, with
one uncommitted frame appended. WAL salts are random, so each run makes other bytes.

Standard library only; it borrows helpers from Tests/SQLiteReaderTests/Fixtures/
make_fixtures.py.
"""

import json
import os
import random
import shutil
import sqlite3
import struct
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FIXTURES = os.path.join(ROOT, "Tests", "SQLiteReaderTests", "Fixtures")
sys.path.insert(0, FIXTURES)

from make_fixtures import (  # noqa: E402
    JOURNAL_MAGIC, connect, dump, text_of_length, wal_checksum, wal_frames, wal_to_big_endian,
    ytk_put, ytk_table)

PAGE = 512
MAX_LEN = 8192  # Fuzz/run.sh's -max_len


def pack(database, wal=None, journal=None):
    """One input of the `sqlite` target."""
    if wal is None and journal is None:
        return b"\x00" + database
    if journal is None:
        return b"\x01" + struct.pack("<H", len(database)) + database + wal
    if wal is None:
        return b"\x02" + struct.pack("<H", len(database)) + database + journal
    return b"\x03" + struct.pack("<HH", len(database), len(wal)) + database + wal + journal


class Scratch:
    def __init__(self):
        self.directory = tempfile.mkdtemp()
        self.count = 0

    def path(self):
        self.count += 1
        return os.path.join(self.directory, f"db{self.count}.db")

    def closed(self, make):
        """The bytes of a database `make(path)` writes (returning its connection), closed."""
        path = self.path()
        con = make(path)
        con.close()
        return read(path)

    def read_copy(self, files):
        """What SQLite reads from copies of `files`: {"": database, "-wal": ..., ...}."""
        path = self.path()
        for suffix, data in files.items():
            with open(path + suffix, "wb") as f:
                f.write(data)
        return dump(path)


def read(path):
    with open(path, "rb") as f:
        return f.read()


# Databases.

def make_tree(path):
    """A table of two levels, rows of every type, sparse and extreme rowids."""
    rng = random.Random(1)
    con = connect(path, page_size=PAGE)
    con.execute("CREATE TABLE t (a INTEGER, b TEXT, c REAL, d BLOB)")
    con.execute("BEGIN")
    for i in range(70):
        con.execute("INSERT INTO t VALUES (?, ?, ?, ?)",
                    (i * 7919 - 100000, text_of_length(rng, rng.randrange(0, 30)), i / 7.0,
                     bytes(rng.randrange(256) for _ in range(rng.randrange(0, 8)))))
    con.execute("CREATE TABLE sparse (v)")
    for rowid in [-(2**63), -5, 0, 1, 2**31, 2**63 - 1]:
        con.execute("INSERT INTO sparse (_rowid_, v) VALUES (?, ?)", (rowid, f"row {rowid}"))
    con.execute("COMMIT")
    return con


def make_overflow(path):
    """Payloads on either side of the spill threshold, and chains of several pages."""
    rng = random.Random(2)
    con = connect(path, page_size=PAGE)
    con.execute("CREATE TABLE big (k INTEGER PRIMARY KEY, v BLOB)")
    con.execute("CREATE TABLE big_text (v TEXT)")
    x = PAGE - 35
    m = ((PAGE - 12) * 32 // 255) - 23
    con.execute("BEGIN")
    for size in [m - 4, m + 1, x - 4, x - 3, x + 1, PAGE - 4 + m, 1700]:
        con.execute("INSERT INTO big (v) VALUES (?)",
                    (bytes(rng.randrange(256) for _ in range(size)),))
    con.execute("INSERT INTO big_text VALUES (?)", ("é" * 400,))
    con.execute("COMMIT")
    return con


def make_utf16(path, encoding, samples):
    con = connect(path, page_size=PAGE, encoding=encoding)
    assert con.execute("PRAGMA encoding").fetchone()[0] == encoding
    ytk_table(con, "ytk")
    con.execute("CREATE TABLE texts (t TEXT, n)")
    con.execute("BEGIN")
    for s in samples:
        con.execute("INSERT INTO texts VALUES (?, ?)", (s, len(s)))
        ytk_put(con, "ytk", "id " + s[:20], json.dumps([s]), 1448000000.25)
    con.execute("COMMIT")
    return con


UTF16_SAMPLES = ["", "ascii", "é", "唐巧", "😀 a surrogate pair", "nul \x00 inside", "中" * 200]


def make_types(path):
    """Every serial type, the affinities, rowid aliases."""
    con = connect(path, page_size=PAGE)
    con.execute("BEGIN")
    con.execute("CREATE TABLE ints (v)")
    for v in [0, 1, -1, 127, 128, -129, 32767, -32769, 8388608, -8388609, 2**31, -(2**31) - 1,
              2**47, -(2**47) - 1, 2**63 - 1, -(2**63)]:
        con.execute("INSERT INTO ints VALUES (?)", (v,))
    con.execute("CREATE TABLE misc (v)")
    for v in [None, 0.0, -0.0, 1.5, 1e308, 5e-324, float("inf"), float("-inf"), "", "text",
              b"", b"\x00\x01\xff"]:
        con.execute("INSERT INTO misc VALUES (?)", (v,))
    con.execute("CREATE TABLE affinity (i INTEGER, r REAL, t TEXT, b BLOB, n NUMERIC, none)")
    for v in [1, 2.5, "3", "x", b"\x01", None]:
        con.execute("INSERT INTO affinity VALUES (?, ?, ?, ?, ?, ?)", (v,) * 6)
    con.execute("CREATE TABLE alias (id INTEGER PRIMARY KEY, v)")
    con.execute("CREATE TABLE not_alias (id INT PRIMARY KEY, v)")
    for t in ["alias", "not_alias"]:
        for i in [5, 100, -3]:
            con.execute(f"INSERT INTO {t} (id, v) VALUES (?, ?)", (i, f"{t} {i}"))
    con.execute("COMMIT")
    return con


def make_schema(path):
    """Columns added later (defaults, one the reader does not convert), quoted names, and the tables the
    reader refuses."""
    con = connect(path, page_size=PAGE)
    con.execute("CREATE TABLE added (a)")
    con.execute("INSERT INTO added VALUES ('before')")
    for column in ["b", "c TEXT DEFAULT 'dflt'", "d INTEGER DEFAULT 7", "e REAL DEFAULT 2",
                   "f DEFAULT -3", "g DEFAULT x'cafe'", "h DEFAULT TRUE"]:
        con.execute(f"ALTER TABLE added ADD COLUMN {column}")
    con.execute("INSERT INTO added (a) VALUES ('after')")
    con.execute("CREATE TABLE expression (a)")
    con.execute("INSERT INTO expression VALUES (1)")
    con.execute("ALTER TABLE expression ADD COLUMN b INTEGER DEFAULT '12'")
    con.execute('CREATE TABLE "odd ""name""" ( -- a comment\n "col one" TEXT, [col two] '
                "INTEGER /* block */, `col three`, UNIQUE ([col two]))")
    con.execute('INSERT INTO "odd ""name""" VALUES (\'a\', 1, 2.5)')
    con.execute("CREATE TABLE strict_table (a INTEGER, b ANY) STRICT")
    con.execute("INSERT INTO strict_table VALUES (1, x'00')")
    con.execute("CREATE TABLE without_rowid (k TEXT PRIMARY KEY, v) WITHOUT ROWID")
    con.execute("INSERT INTO without_rowid VALUES ('k', 'v')")
    con.execute("CREATE TABLE virtual_generated (a INTEGER, b AS (a + 1))")
    con.execute("INSERT INTO virtual_generated (a) VALUES (1)")
    con.execute("CREATE TABLE auto_inc (id INTEGER PRIMARY KEY AUTOINCREMENT, v)")  # sqlite_sequence
    con.execute("INSERT INTO auto_inc (v) VALUES ('x')")
    return con


def make_auto_vacuum(path):
    """auto_vacuum=FULL after deletes: pointer-map pages, pages moved."""
    rng = random.Random(3)
    con = connect(path, page_size=PAGE, auto_vacuum="full")
    con.execute("CREATE TABLE a (k INTEGER PRIMARY KEY, v)")
    con.execute("BEGIN")
    for _ in range(40):
        con.execute("INSERT INTO a (v) VALUES (?)", (text_of_length(rng, rng.randrange(10, 200)),))
    con.execute("COMMIT")
    con.execute("DELETE FROM a WHERE k % 3 = 0")
    con.execute("CREATE TABLE c (v)")
    con.execute("INSERT INTO c VALUES ('created after the deletes')")
    return con


def make_freelist(path):
    """Free pages (a trunk and its leaves) from deletes and a dropped table."""
    rng = random.Random(4)
    con = connect(path, page_size=PAGE)
    con.execute("CREATE TABLE t (v)")
    con.execute("CREATE TABLE gone (v)")
    con.execute("BEGIN")
    for _ in range(25):
        con.execute("INSERT INTO t VALUES (?)", (text_of_length(rng, 80),))
        con.execute("INSERT INTO gone VALUES (?)", (text_of_length(rng, 60),))
    con.execute("COMMIT")
    con.execute("DELETE FROM t WHERE _rowid_ % 2 = 0")
    con.execute("DROP TABLE gone")
    assert con.execute("PRAGMA freelist_count").fetchone()[0] > 2
    return con


def make_ytk(path):
    """YTK tables: JSON and not, an id that is not text, createdTime of every type."""
    con = connect(path, page_size=PAGE)
    ytk_table(con, "user_table")
    ytk_table(con, "mixed_table")
    con.execute("BEGIN")
    for i in range(6):
        ytk_put(con, "user_table", f"user-{i}", json.dumps({"id": i, "name": f"name {i}"}),
                1448000000.0 + i * 61.25)
    ytk_put(con, "user_table", "唐巧 😀", '{"name":"唐巧","n":[1.5e3,-0,true,null]}', 1448000099.5)
    for key, text in [("bad-1", "not json"), ("bad-2", ""), ("bad-3", "[1,]"),
                      ("good", ' [ "\\u00e9" ] ')]:
        ytk_put(con, "mixed_table", key, text, 1448000200.125)
    con.execute("INSERT INTO mixed_table VALUES ('real-time', '[1]', 1448000300.5)")
    con.execute("INSERT INTO mixed_table VALUES ('int-time', '{}', 1448000301)")
    con.execute("INSERT INTO mixed_table VALUES ('odd-time', '\"s\"', ' -12.5e1 ')")
    con.execute("INSERT INTO mixed_table (id, json, createdTime) VALUES (x'00ff', '[2]', '1')")
    con.execute("INSERT INTO mixed_table (id, json, createdTime) VALUES (7, x'5b5d', '1')")
    con.execute("COMMIT")
    return con


# The WAL.

def append_uncommitted_frame(wal, old, new):
    """`wal` with one more valid frame that commits nothing: the latest frame's page with
    `old` replaced by `new` (as long), which a reader must ignore."""
    page_size, frames = wal_frames(wal)
    big = struct.unpack(">I", wal[:4])[0] & 1 == 1
    offset, page, _, valid = frames[-1]
    assert valid
    image = wal[offset + 24:offset + 24 + page_size]
    assert old in image and len(old) == len(new)
    image = image.replace(old, new, 1)
    header = struct.pack(">2I", page, 0) + wal[16:24]
    s = struct.unpack(">2I", wal[offset + 16:offset + 24])
    s = wal_checksum(header, *s, big)
    s = wal_checksum(image, *s, big)
    return wal + header + struct.pack(">2I", *s) + image


def make_wal(scratch):
    """A database in WAL mode with three commits in its WAL (a table made, rows put, rows
    changed and deleted) and an uncommitted frame after them: (database, wal)."""
    path = scratch.path()
    con = connect(path, page_size=PAGE)
    ytk_table(con, "before_wal")
    ytk_put(con, "before_wal", "a", '["made in rollback mode"]', 1.5)
    assert con.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal"
    con.execute("PRAGMA wal_autocheckpoint=0")
    con.execute("BEGIN")
    con.execute("CREATE TABLE w (k TEXT, v)")
    for i in range(8):
        con.execute("INSERT INTO w VALUES (?, ?)", (f"k-{i}", i * 1.25))
    con.execute("COMMIT")
    con.execute("UPDATE w SET v = 'changed' WHERE k = 'k-3'")
    con.execute("DELETE FROM w WHERE k = 'k-5'")
    database, wal = read(path), read(path + "-wal")
    con.close()
    wal = append_uncommitted_frame(wal, b"k-1", b"X-1")
    expected = scratch.read_copy({"": database, "-wal": wal})
    rows = {t["name"]: t["rows"] for t in expected["tables"]}
    keys = [r[1][0]["text"] for r in rows["w"]]
    assert keys == [f"k-{i}" for i in range(8) if i != 5], keys
    return database, wal


# Hot journals, record by record.

def journal_record(page, image, nonce):
    checksum = nonce
    for position in range(len(image) - 200, 0, -200):
        checksum = (checksum + image[position]) & 0xFFFFFFFF
    return struct.pack(">I", page) + image + struct.pack(">I", checksum)


def journal_header(records, nonce, original_pages, sector=PAGE):
    header = JOURNAL_MAGIC + struct.pack(">5I", records, nonce, original_pages, sector, PAGE)
    return header + bytes(sector - len(header))


def make_hot_journal(scratch, segments):
    """A database a transaction changed and grew, with the journal of the pages it changed
    (in `segments` segments, or one whose record count is 0xffffffff when `segments` is 0, as
    with synchronous=OFF): (database, journal). Rolled back, it reads as before."""
    path = scratch.path()
    rng = random.Random(5 + segments)
    con = connect(path, page_size=PAGE, journal_mode="DELETE")
    ytk_table(con, "ytk")
    con.execute("CREATE TABLE other (v)")
    con.execute("BEGIN")
    for i in range(10):
        ytk_put(con, "ytk", f"id-{i}", json.dumps({"i": i, "t": text_of_length(rng, 20)}),
                1448000000 + i)
        con.execute("INSERT INTO other VALUES (?)", (i,))
    con.execute("COMMIT")
    con.close()
    before = read(path)
    con = connect(path)
    con.execute("BEGIN")
    con.execute("UPDATE ytk SET json = '[\"changed\"]' WHERE id < 'id-5'")
    for i in range(10, 14):
        ytk_put(con, "ytk", f"id-{i}", json.dumps([text_of_length(rng, 30)]), 1.0)
    con.execute("DELETE FROM other WHERE v % 2 = 1")
    con.execute("CREATE TABLE new_in_transaction (v)")
    con.execute("COMMIT")
    con.close()
    after = read(path)
    original_pages = len(before) // PAGE
    assert len(after) > len(before)
    changed = [p for p in range(1, original_pages + 1)
               if before[(p - 1) * PAGE:p * PAGE] != after[(p - 1) * PAGE:p * PAGE]]
    records = [(p, before[(p - 1) * PAGE:p * PAGE]) for p in changed]
    journal = b""
    if segments == 0:
        nonce = 0x1234567
        journal = journal_header(0xFFFFFFFF, nonce, original_pages)
        journal += b"".join(journal_record(p, image, nonce) for p, image in records)
    else:
        size = (len(records) + segments - 1) // segments
        for index in range(segments):
            part = records[index * size:(index + 1) * size]
            nonce = 0x9E3779B9 * (index + 1) & 0xFFFFFFFF
            if journal:
                journal += bytes(-len(journal) % PAGE)  # the next sector
            journal += journal_header(len(part), nonce, original_pages)
            journal += b"".join(journal_record(p, image, nonce) for p, image in part)
    expected = scratch.read_copy({"": after, "-journal": journal})
    assert expected == scratch.read_copy({"": before}), "the journal does not roll back"
    return after, journal


def persisted_journal(journal):
    """A journal whose header is zeroed, as PERSIST mode leaves it after a commit (not hot),
    with the first of its records."""
    return bytes(PAGE) + journal[PAGE:2 * PAGE + 8]


def main(argv):
    out = argv[1] if len(argv) > 1 else os.path.join(HERE, "sqlite")
    os.makedirs(out, exist_ok=True)
    scratch = Scratch()
    seeds = {
        "tree": pack(scratch.closed(make_tree)),
        "overflow": pack(scratch.closed(make_overflow)),
        "utf16le": pack(scratch.closed(lambda p: make_utf16(p, "UTF-16le", UTF16_SAMPLES))),
        "utf16be": pack(scratch.closed(lambda p: make_utf16(p, "UTF-16be", UTF16_SAMPLES[:5]))),
        "types": pack(scratch.closed(make_types)),
        "schema": pack(scratch.closed(make_schema)),
        "auto-vacuum": pack(scratch.closed(make_auto_vacuum)),
        "freelist": pack(scratch.closed(make_freelist)),
        "ytk": pack(scratch.closed(make_ytk)),
        "small": pack(read(os.path.join(FIXTURES, "small.db"))),
    }
    wal_database, wal = make_wal(scratch)
    seeds["wal"] = pack(wal_database, wal=wal)
    seeds["wal-big-endian"] = pack(wal_database, wal=wal_to_big_endian(wal))
    database, journal = make_hot_journal(scratch, 2)
    seeds["journal"] = pack(database, journal=journal)
    # All three files: the WAL pair, and a journal that is not hot (one zero byte from hot).
    seeds["wal-and-journal"] = pack(wal_database, wal=wal, journal=persisted_journal(journal))
    database, journal = make_hot_journal(scratch, 0)
    seeds["journal-nosync"] = pack(database, journal=journal)
    shutil.rmtree(scratch.directory)
    for name, data in seeds.items():
        assert len(data) <= MAX_LEN, f"{name}: {len(data)} bytes, more than {MAX_LEN}"
    for name, data in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
        print(f"{name}: {len(data)} bytes")


if __name__ == "__main__":
    main(sys.argv)
