#!/usr/bin/env python3
"""The SQLite databases the SQLiteReader tests read, and what SQLite itself reads from each.

    make_fixtures.py OUT_DIR                 # every fixture, and OUT_DIR/manifest.json
    make_fixtures.py OUT_DIR --large ROWS    # only large.db: one YTK table of ROWS rows
    make_fixtures.py --small PATH            # small.db (committed), made again
    make_fixtures.py --dump DIR              # DIR/answers.json: what SQLite reads from each
                                             # DIR/*.db, or its error (damaged copies)

The tests run this at test time into a temporary directory (Tests/SQLiteReaderTests/
FixtureSet.swift), so every run compares the reader with the SQLite that is installed, and
fixtures can be as large as they need to be (65536-byte pages, overflow chains of many pages)
without being committed. Only ytk-sqlite.db (the shared fixture, copied here) and small.db
are committed: the hostile-input tests and the fuzz seeds need no Python.

Standard library only: `sqlite3`, and `ctypes` for the one fixture that needs
sqlite3_file_control (reserved bytes per page); that fixture is listed under "skipped" where
ctypes cannot load the SQLite library.

Output, for each fixture NAME: NAME.db, NAME.db-wal or NAME.db-journal when the fixture has
one, and NAME.expected.json:

    {"tables": [{"name": T, "columns": [C, ...], "rows": [[ROWID, [VALUE, ...]], ...]},
                {"name": T, "refused": REASON}, ...]}

VALUE is null, {"integer": "DECIMAL"}, {"real": "16 hex digits of the IEEE 754 bits"},
{"text": "STRING"} or {"blob": "HEX"}. Tables come in sqlite_schema order, rows in rowid
order. "refused" marks tables the reader cannot read by design (WITHOUT ROWID, virtual tables,
VIRTUAL generated columns); the reader must refuse those with its `unsupported` error.

The expected answer of a fixture with a -wal or -journal is what SQLite returns after opening a
*copy* of the files: SQLite replays the WAL or rolls the hot journal back on the copy. The
fixture's own files are never opened by SQLite after they are copied out of the writing
connection. Table names never shadow `_rowid_`, which the dump selects.
"""

import ctypes
import ctypes.util
import json
import os
import random
import shutil
import sqlite3
import struct
import sys
import tempfile

WAL_MAGIC_LITTLE = 0x377F0682
WAL_MAGIC_BIG = 0x377F0683
JOURNAL_MAGIC = bytes.fromhex("d9d505f920a163d7")


def connect(path, page_size=None, encoding=None, journal_mode=None, auto_vacuum=None):
    con = sqlite3.connect(path, isolation_level=None)
    if page_size:
        con.execute(f"PRAGMA page_size={page_size}")
    if encoding:
        con.execute(f"PRAGMA encoding='{encoding}'")
    if auto_vacuum:
        con.execute(f"PRAGMA auto_vacuum={auto_vacuum}")
    if journal_mode:
        mode = con.execute(f"PRAGMA journal_mode={journal_mode}").fetchone()[0]
        assert mode.lower() == journal_mode.lower(), mode
    return con


def quote(name):
    return '"' + name.replace('"', '""') + '"'


def encode(value):
    if value is None:
        return None
    if isinstance(value, int):
        return {"integer": str(value)}
    if isinstance(value, float):
        return {"real": struct.pack(">d", value).hex()}
    if isinstance(value, str):
        return {"text": value}
    return {"blob": bytes(value).hex()}


def text(value):
    return value.decode("utf-8") if isinstance(value, bytes) else value


def refusal(con, name, sql):
    if sql.upper().startswith("CREATE VIRTUAL TABLE"):
        return "virtual table"
    for row in con.execute("PRAGMA table_list"):
        if text(row[1]) == name and row[4]:
            return "WITHOUT ROWID"
    for row in con.execute(f"PRAGMA table_xinfo({quote(name)})"):
        if row[6] == 2:
            return "VIRTUAL generated column"
    return None


def dump(path):
    """What SQLite reads from the database at `path` (opened in place: pass a copy)."""
    con = sqlite3.connect(path)
    tables = []
    schema = con.execute(
        "SELECT name, sql FROM sqlite_schema WHERE type = 'table' ORDER BY _rowid_").fetchall()
    for name, sql in schema:
        reason = refusal(con, name, sql)
        if reason:
            tables.append({"name": name, "refused": reason})
            continue
        cursor = con.execute(f"SELECT _rowid_, * FROM {quote(name)} ORDER BY _rowid_")
        columns = [d[0] for d in cursor.description[1:]]
        rows = [[row[0], [encode(v) for v in row[1:]]] for row in cursor]
        tables.append({"name": name, "columns": columns, "rows": rows})
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok", path
    con.close()
    return {"tables": tables}


def dump_each(directory):
    """What SQLite reads from every DIR/*.db, opened as immutable (so nothing is written and
    no sidecar is looked at), or the error it gives; into DIR/answers.json. Text that is not
    UTF-8 is given as {"textBytes": HEX}. An answer equal to that of DIR/original.db, if there
    is one, is written as {"same": true}."""
    class Text(bytes):
        """Text as SQLite gives it, before decoding (BLOBs come as plain bytes)."""

    def encode_raw(value):
        if isinstance(value, Text):
            try:
                return {"text": value.decode("utf-8")}
            except UnicodeDecodeError:
                return {"textBytes": value.hex()}
        return encode(value)

    def read(path):
        try:
            con = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
            con.text_factory = Text
            tables = []
            for table, sql in con.execute(
                    "SELECT name, sql FROM sqlite_schema WHERE type = 'table' ORDER BY _rowid_"):
                table, sql = table.decode("utf-8"), sql.decode("utf-8")
                reason = refusal(con, table, sql)
                if reason:
                    tables.append({"name": table, "refused": reason})
                    continue
                cursor = con.execute(f"SELECT _rowid_, * FROM {quote(table)} ORDER BY _rowid_")
                rows = [[row[0], [encode_raw(v) for v in row[1:]]] for row in cursor]
                tables.append({"name": table, "columns": [d[0] for d in cursor.description[1:]],
                               "rows": rows})
            con.close()
            return {"tables": tables}
        except Exception as error:  # SQLite's refusal, in whatever form it takes
            return {"error": str(error)}

    names = sorted(n for n in os.listdir(directory) if n.endswith(".db"))
    reference = read(os.path.join(directory, "original.db")) if "original.db" in names else None
    answers = {}
    for name in names:
        answer = read(os.path.join(directory, name))
        answers[name] = {"same": True} if answer == reference else answer
    with open(os.path.join(directory, "answers.json"), "w") as f:
        json.dump(answers, f)


def dump_copy(files):
    """What SQLite reads after opening copies of `files` (the database first, then sidecars)."""
    with tempfile.TemporaryDirectory() as scratch:
        database = os.path.join(scratch, "copy.db")
        for source in files:
            suffix = source[len(files[0]):]
            shutil.copyfile(source, database + suffix)
        return dump(database)


class Fixtures:
    def __init__(self, out):
        self.out = out
        self.manifest = {"sqlite_version": sqlite3.sqlite_version, "fixtures": [], "skipped": []}
        self.scratch = tempfile.mkdtemp()

    def path(self, name):
        return os.path.join(self.out, name + ".db")

    def work(self, name):
        """A path for a database being written; it is copied to the fixture when done."""
        return os.path.join(self.scratch, name + ".db")

    def add(self, name, about, sidecar=None):
        """Records fixture `name`, whose files are already in OUT_DIR."""
        database = self.path(name)
        files = [database] + ([database + "-" + sidecar] if sidecar else [])
        expected = dump_copy(files)
        with open(os.path.join(self.out, name + ".expected.json"), "w") as f:
            json.dump(expected, f)
        self.manifest["fixtures"].append({
            "name": name, "about": about,
            "database": os.path.basename(database),
            "wal": os.path.basename(files[1]) if sidecar == "wal" else None,
            "journal": os.path.basename(files[1]) if sidecar == "journal" else None,
        })
        return expected

    def add_closed(self, name, about, make):
        """Makes a database with `make(connection)` in a scratch file, closes it, copies it in."""
        work = self.work(name)
        con = make(work)
        con.close()
        shutil.copyfile(work, self.path(name))
        return self.add(name, about)

    def finish(self):
        with open(os.path.join(self.out, "manifest.json"), "w") as f:
            json.dump(self.manifest, f, indent=1)
        shutil.rmtree(self.scratch)


YTK_TABLE = ("CREATE TABLE IF NOT EXISTS {} (id TEXT NOT NULL, json TEXT NOT NULL, "
             "createdTime TEXT NOT NULL, PRIMARY KEY(id))")


def ytk_table(con, name):
    con.execute(YTK_TABLE.format(quote(name)))


def ytk_put(con, table, key, json_text, created):
    # YTKKeyValueStore's statement; FMDB binds an NSDate as a double, which the TEXT column
    # keeps as text such as "1448000061.25".
    con.execute(f"REPLACE INTO {quote(table)} (id, json, createdTime) values (?, ?, ?)",
                (key, json_text, created))


def text_of_length(rng, length):
    return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789 ") for _ in range(length))


def make_ytk_tables(path):
    con = connect(path)
    ytk_table(con, "user_table")
    ytk_table(con, "empty_table")
    ytk_table(con, "mixed_table")
    con.execute("BEGIN")
    for i in range(40):
        ytk_put(con, "user_table", f"user-{i}",
                json.dumps({"id": i, "name": f"name {i}", "tags": ["a", "b"][: i % 3]}),
                1448000000.0 + i * 61.25)
    ytk_put(con, "user_table", "唐巧 😀", '{"name":"唐巧"}', 1448000099.5)
    ytk_put(con, "user_table", "user-3", '["replaced"]', 1448000123.0)  # REPLACE: new rowid
    # Rows whose json is not JSON: the import skips and lists them, the reader returns them.
    for key, text in [("bad-1", "not json"), ("bad-2", ""), ("bad-3", "{\"open\": "),
                      ("bad-4", "[1,]"), ("good", "[true]")]:
        ytk_put(con, "mixed_table", key, text, 1448000200.125)
    # A createdTime that is not text and an id that is not text, as a damaged app might leave.
    con.execute("INSERT INTO mixed_table VALUES ('real-time', '[1]', 1448000300.5)")
    con.execute("INSERT INTO mixed_table (id, json, createdTime) VALUES (x'00ff', '[2]', '1')")
    con.execute("COMMIT")
    return con


def make_tree(path, page_size, rows, extra_tables):
    """Multi-level table b-trees; with many tables sqlite_schema itself becomes multi-level,
    and page 1 (with its 100-byte offset) an interior page."""
    rng = random.Random(page_size)
    con = connect(path, page_size=page_size)
    con.execute("CREATE TABLE t (a INTEGER, b TEXT, c REAL, d BLOB)")
    con.execute("BEGIN")
    for i in range(rows):
        con.execute("INSERT INTO t VALUES (?, ?, ?, ?)",
                    (i * 7919 - 100000, text_of_length(rng, rng.randrange(0, 60)),
                     i / 7.0, bytes(rng.randrange(256) for _ in range(rng.randrange(0, 20)))))
    for n in range(extra_tables):
        con.execute(f"CREATE TABLE extra_{n} (x, y TEXT DEFAULT 'no', z INTEGER)")
        con.execute(f"INSERT INTO extra_{n} VALUES ({n}, 'row of table {n}', {n * n})")
    # Sparse, negative and huge rowids.
    con.execute("CREATE TABLE sparse (v)")
    for rowid in [-(2**63), -5, 0, 1, 2**31, 2**62, 2**63 - 1]:
        con.execute("INSERT INTO sparse (_rowid_, v) VALUES (?, ?)", (rowid, f"row {rowid}"))
    con.execute("COMMIT")
    return con


def make_overflow(path, page_size):
    """Values on either side of every spill threshold, and chains of many pages."""
    con = connect(path, page_size=page_size)
    con.execute("CREATE TABLE big (k INTEGER PRIMARY KEY, v BLOB)")
    con.execute("CREATE TABLE big_text (v TEXT, w TEXT)")
    usable = page_size
    x = usable - 35
    m = ((usable - 12) * 32 // 255) - 23
    sizes = set(range(0, 40)) | {x - 5, x - 4, x - 3, x - 2, x - 1, x, x + 1, x + 2, m, m + 1}
    sizes |= {usable - 4 + m, usable - 4 + m + 1, 2 * (usable - 4) + m, 3 * usable, 10 * usable + 7}
    sizes |= {20 * usable}
    rng = random.Random(page_size + 1)
    con.execute("BEGIN")
    for size in sorted(s for s in sizes if s >= 0):
        # The record is a little larger than the value: header bytes; both sides are covered.
        con.execute("INSERT INTO big (v) VALUES (?)", (bytes(rng.randrange(256) for _ in range(size)),))
    for size in [10, x, x + 100, 5 * usable, 9 * usable + 3]:
        con.execute("INSERT INTO big_text VALUES (?, ?)",
                    (text_of_length(rng, size), "é" * (size // 3)))
    con.execute("COMMIT")
    return con


def make_page_65536(path):
    rng = random.Random(65536)
    con = connect(path, page_size=65536)
    con.execute("CREATE TABLE t (id TEXT, v BLOB)")
    ytk_table(con, "ytk")
    con.execute("BEGIN")
    for i in range(2500):
        con.execute("INSERT INTO t VALUES (?, ?)", (f"row {i}", bytes(rng.randrange(256) for _ in range(rng.randrange(60, 140)))))
    for size in [65536 - 35, 65536 - 34, 65536 * 2, 300000]:
        con.execute("INSERT INTO t VALUES (?, ?)", (f"big {size}", bytes(rng.randrange(256) for _ in range(size))))
    for i in range(300):
        ytk_put(con, "ytk", f"k{i}", json.dumps({"i": i, "pad": "x" * (i * 7)}), 1448000000.5 + i)
    con.execute("COMMIT")
    return con


def make_utf16(path, encoding):
    con = connect(path, page_size=1024, encoding=encoding)
    assert con.execute("PRAGMA encoding").fetchone()[0] == encoding
    ytk_table(con, "ytk")
    con.execute("CREATE TABLE texts (t TEXT, n)")
    con.execute("BEGIN")
    samples = ["", "ascii", "é", "唐巧", "😀 emoji, a surrogate pair", "mixed ü 中 𝄞 end",
               "nul \x00 inside", "x" * 2000, "中" * 700]
    for s in samples:
        con.execute("INSERT INTO texts VALUES (?, ?)", (s, len(s)))
        ytk_put(con, "ytk", "id " + s[:30], json.dumps([s]), 1448000000.25)
    con.execute("COMMIT")
    return con


def make_types(path):
    con = connect(path, page_size=4096)
    con.execute("CREATE TABLE ints (v)")
    values = [0, 1, 2, -1, 127, 128, -128, -129, 255, 256, 32767, 32768, -32768, -32769,
              8388607, 8388608, -8388608, -8388609, 2**31 - 1, 2**31, -(2**31), -(2**31) - 1,
              2**47 - 1, 2**47, -(2**47), -(2**47) - 1, 2**63 - 1, -(2**63)]
    con.execute("BEGIN")
    for v in values:
        con.execute("INSERT INTO ints VALUES (?)", (v,))
    con.execute("CREATE TABLE misc (v)")
    for v in [None, 0.0, -0.0, 1.5, -2.25, 1e308, -1e-308, 5e-324, float("inf"), float("-inf"),
              3.141592653589793, "", "text", b"", b"\x00\x01\xff", "ü" * 3]:
        con.execute("INSERT INTO misc VALUES (?)", (v,))
    # Affinities: a REAL column keeps integers as integers on disk and reads them as reals.
    con.execute("CREATE TABLE affinity (i INTEGER, r REAL, f FLOATING POINT, t TEXT, b BLOB, "
                "n NUMERIC, none, d DOUBLE PRECISION, c VARCHAR(10))")
    for v in [1, 2.5, "3", "4.0", "x", b"\x01", None, 2**53 + 1]:
        con.execute("INSERT INTO affinity VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", (v,) * 9)
    # INTEGER PRIMARY KEY is the rowid; the record keeps NULL in its place.
    con.execute("CREATE TABLE alias (id INTEGER PRIMARY KEY, v)")
    con.execute("CREATE TABLE alias_table_constraint (v, id integer, PRIMARY KEY (id DESC))")
    con.execute("CREATE TABLE not_alias_desc (id INTEGER PRIMARY KEY DESC, v)")
    con.execute("CREATE TABLE not_alias_int (id INT PRIMARY KEY, v)")
    con.execute("CREATE TABLE auto_inc (id INTEGER PRIMARY KEY AUTOINCREMENT, v)")
    for t in ["alias", "alias_table_constraint", "not_alias_desc", "not_alias_int",
              "auto_inc"]:
        for i in [5, 9, 100, -3]:
            con.execute(f"INSERT INTO {t} (id, v) VALUES (?, ?)", (i, f"{t} {i}"))
    # Columns added later: old records are short and read the column's default.
    con.execute("CREATE TABLE added (a)")
    con.execute("INSERT INTO added VALUES ('before')")
    con.execute("ALTER TABLE added ADD COLUMN b")
    con.execute("ALTER TABLE added ADD COLUMN c TEXT DEFAULT 'dflt'")
    con.execute("ALTER TABLE added ADD COLUMN d INTEGER DEFAULT 7")
    con.execute("ALTER TABLE added ADD COLUMN e REAL DEFAULT 2")
    con.execute("ALTER TABLE added ADD COLUMN f DEFAULT -3")
    con.execute("ALTER TABLE added ADD COLUMN g TEXT DEFAULT 15")
    con.execute("ALTER TABLE added ADD COLUMN h REAL DEFAULT 2.5")
    con.execute("ALTER TABLE added ADD COLUMN i DEFAULT NULL")
    con.execute("ALTER TABLE added ADD COLUMN j DEFAULT x'cafe'")
    con.execute("ALTER TABLE added ADD COLUMN k DEFAULT TRUE")
    con.execute("INSERT INTO added (a) VALUES ('after')")
    # Names that need quoting, comments and odd spacing in the SQL.
    con.execute('CREATE TABLE "odd ""name""" ( -- a comment\n "col one" TEXT, [col two] '
                "INTEGER /* block */, `col three`, 'col four' NOT NULL DEFAULT 'x', "
                "CONSTRAINT c CHECK (\"col one\" <> 'forbidden'), UNIQUE ([col two]))")
    con.execute('INSERT INTO "odd ""name""" VALUES (\'a\', 1, 2.5, \'d\')')
    con.execute("CREATE TABLE refs (id INTEGER PRIMARY KEY, parent INTEGER REFERENCES alias(id) "
                "ON DELETE SET DEFAULT ON UPDATE SET NULL DEFAULT 4, note TEXT COLLATE NOCASE)")
    con.execute("INSERT INTO refs (id, note) VALUES (1, 'references')")
    con.execute("CREATE TABLE strict_table (a INTEGER, b TEXT, c REAL, d ANY) STRICT")
    con.execute("INSERT INTO strict_table VALUES (1, 'b', 3, x'00')")
    con.execute("CREATE TABLE stored (a INTEGER, b INTEGER GENERATED ALWAYS AS (a * 2) STORED, c)")
    con.execute("INSERT INTO stored (a, c) VALUES (21, 'stored generated')")
    # What the reader refuses by design.
    con.execute("CREATE TABLE without_rowid (k TEXT PRIMARY KEY, v) WITHOUT ROWID")
    con.execute("INSERT INTO without_rowid VALUES ('k', 'v')")
    con.execute("CREATE TABLE virtual_generated (a INTEGER, b AS (a + 1), c)")
    con.execute("INSERT INTO virtual_generated (a, c) VALUES (1, 'x')")
    con.execute("CREATE VIRTUAL TABLE search USING fts5(body)")
    con.execute("INSERT INTO search VALUES ('full text search makes shadow tables')")
    con.execute("ANALYZE")  # sqlite_stat1
    con.execute("COMMIT")
    return con


def make_auto_vacuum(path, mode):
    rng = random.Random(7)
    con = connect(path, page_size=512, auto_vacuum=mode)
    con.execute("CREATE TABLE a (k INTEGER PRIMARY KEY, v)")
    con.execute("CREATE TABLE b (v)")
    con.execute("BEGIN")
    for i in range(1500):
        con.execute("INSERT INTO a (v) VALUES (?)", (text_of_length(rng, rng.randrange(10, 700)),))
        con.execute("INSERT INTO b VALUES (?)", (i,))
    con.execute("COMMIT")
    con.execute("DELETE FROM a WHERE k % 3 = 0")
    con.execute("CREATE TABLE c (v)")  # a root page made after pages moved
    con.execute("INSERT INTO c VALUES ('created after the deletes')")
    con.execute("DELETE FROM b WHERE v > 1000")
    if mode == "incremental":
        con.execute("PRAGMA incremental_vacuum(40)")
    return con


def make_freelist(path):
    rng = random.Random(11)
    con = connect(path, page_size=512)
    con.execute("CREATE TABLE t (v)")
    con.execute("CREATE TABLE gone (v)")
    con.execute("BEGIN")
    for i in range(2000):
        con.execute("INSERT INTO t VALUES (?)", (text_of_length(rng, rng.randrange(20, 400)),))
        con.execute("INSERT INTO gone VALUES (?)", (text_of_length(rng, 200),))
    con.execute("COMMIT")
    con.execute("DELETE FROM t WHERE _rowid_ % 2 = 0")
    con.execute("DROP TABLE gone")
    free = con.execute("PRAGMA freelist_count").fetchone()[0]
    assert free > 2 * (512 // 4 - 2), free  # more than one trunk page
    return con


def make_reserved(fixtures):
    """Reserved bytes at the end of each page, which only sqlite3_file_control can ask for."""
    name = "reserved-bytes"
    library = ctypes.util.find_library("sqlite3")
    if not library:
        fixtures.manifest["skipped"].append({"name": name, "why": "ctypes finds no libsqlite3"})
        return
    lib = ctypes.CDLL(library)
    work = fixtures.work(name)
    db = ctypes.c_void_p()
    assert lib.sqlite3_open_v2(work.encode(), ctypes.byref(db), 0x6, None) == 0
    reserve = ctypes.c_int(40)
    rc = lib.sqlite3_file_control(db, b"main", 38, ctypes.byref(reserve))  # RESERVE_BYTES
    rows = ",".join(f"({i}, '{'r' * (i % 900)}')" for i in range(300))
    sql = ("PRAGMA page_size=1024; CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT);"
           f"INSERT INTO t VALUES {rows};").encode()
    assert lib.sqlite3_exec(db, sql, None, None, None) == 0
    lib.sqlite3_close(db)
    with open(work, "rb") as f:
        header = f.read(100)
    if rc != 0 or header[20] != 40:
        fixtures.manifest["skipped"].append(
            {"name": name, "why": f"SQLITE_FCNTL_RESERVE_BYTES did not apply (rc {rc})"})
        return
    shutil.copyfile(work, fixtures.path(name))
    fixtures.add(name, "40 reserved bytes at the end of each 1024-byte page")


# The WAL: its header, frames and checksums, to check what a fixture holds and to rewrite one.

def wal_checksum(data, s0, s1, big_endian):
    words = struct.unpack((">" if big_endian else "<") + f"{len(data) // 4}I", data)
    for i in range(0, len(words), 2):
        s0 = (s0 + words[i] + s1) & 0xFFFFFFFF
        s1 = (s1 + words[i + 1] + s0) & 0xFFFFFFFF
    return s0, s1


def wal_frames(wal):
    """(offset, page, commit size, valid) for each frame, `valid` meaning in the checksum chain
    that starts at the header (what recovery accepts, committed or not)."""
    magic, version, page_size, _, salt1, salt2, c1, c2 = struct.unpack(">8I", wal[:32])
    big = magic == WAL_MAGIC_BIG
    s = wal_checksum(wal[:24], 0, 0, big)
    assert s == (c1, c2)
    frames, chain_ok = [], True
    offset = 32
    while offset + 24 + page_size <= len(wal):
        page, commit, fs1, fs2, fc1, fc2 = struct.unpack(">6I", wal[offset:offset + 24])
        valid = False
        if chain_ok and (fs1, fs2) == (salt1, salt2):
            t = wal_checksum(wal[offset:offset + 8], *s, big)
            t = wal_checksum(wal[offset + 24:offset + 24 + page_size], *t, big)
            if t == (fc1, fc2):
                valid, s = True, t
        chain_ok = chain_ok and valid
        frames.append((offset, page, commit, valid))
        offset += 24 + page_size
    return page_size, frames


def wal_to_big_endian(wal):
    """The same WAL with big-endian checksums (magic 0x377f0683), as a big-endian machine
    writes it; frames outside the checksum chain are left as they are."""
    page_size, frames = wal_frames(wal)
    out = bytearray(wal)
    struct.pack_into(">I", out, 0, WAL_MAGIC_BIG)
    s = wal_checksum(bytes(out[:24]), 0, 0, True)
    struct.pack_into(">2I", out, 24, *s)
    for offset, _, _, valid in frames:
        if not valid:
            break
        s = wal_checksum(bytes(out[offset:offset + 8]), *s, True)
        s = wal_checksum(bytes(out[offset + 24:offset + 24 + page_size]), *s, True)
        struct.pack_into(">2I", out, offset + 16, *s)
    return bytes(out)


def make_wal(fixtures):
    """Committed transactions, a checkpoint and a restarted WAL (stale frames with old salts
    after the new ones), then a transaction whose pages spilled into the WAL uncommitted."""
    rng = random.Random(3)
    work = fixtures.work("wal")
    con = connect(work, page_size=1024)
    ytk_table(con, "before_wal")
    ytk_put(con, "before_wal", "a", '["made in rollback mode"]', 1.5)
    connect_wal = con.execute("PRAGMA journal_mode=WAL").fetchone()[0]
    assert connect_wal == "wal"
    con.execute("PRAGMA wal_autocheckpoint=0")
    ytk_table(con, "wal_table")
    for batch in range(10):
        con.execute("BEGIN")
        for i in range(60):
            ytk_put(con, "wal_table", f"k{batch}-{i:02d}",
                    json.dumps({"batch": batch, "text": text_of_length(rng, 200)}), 1448000000 + i)
        con.execute("COMMIT")
    busy, log, checkpointed = con.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    assert busy == 0 and log == checkpointed, (busy, log, checkpointed)
    # The next writer restarts the WAL from its start with new salts.
    con.execute("BEGIN")
    con.execute("UPDATE wal_table SET json = '[\"updated after the restart\"]' WHERE id LIKE 'k1-%'")
    con.execute("COMMIT")
    con.execute("DELETE FROM wal_table WHERE id LIKE 'k2-%'")
    con.execute("CREATE TABLE made_in_wal (v)")
    con.execute("INSERT INTO made_in_wal VALUES ('schema change in the WAL')")
    # Uncommitted: a small cache makes the pager spill frames without a commit frame. An
    # update in place dirties each leaf once, so the spilled frames keep valid checksums (a
    # page spilled twice is overwritten in place, which breaks the chain until the commit).
    con.execute("PRAGMA cache_size=8")
    con.execute("BEGIN")
    con.execute("UPDATE wal_table SET json = upper(json) WHERE id >= 'k5' AND id < 'k8'")
    shutil.copyfile(work, fixtures.path("wal"))
    shutil.copyfile(work + "-wal", fixtures.path("wal") + "-wal")
    con.execute("ROLLBACK")
    con.close()

    with open(fixtures.path("wal") + "-wal", "rb") as f:
        wal = f.read()
    page_size, frames = wal_frames(wal)
    valid = [f for f in frames if f[3]]
    last_commit = max(i for i, f in enumerate(frames) if f[3] and f[2])
    uncommitted = [f for f in frames[last_commit + 1:] if f[3]]
    salts = wal[16:24]
    stale = [f for f in frames if wal[f[0] + 8:f[0] + 16] != salts]
    assert uncommitted and stale, (len(uncommitted), len(stale))
    expected = fixtures.add(
        "wal", "WAL: commits after a restart, stale frames, an uncommitted spilled tail", "wal")
    assert not any(r[1][1]["text"].startswith("{\"BATCH")
                   for t in expected["tables"] if t["name"] == "wal_table" for r in t["rows"])

    big = fixtures.path("wal-big-endian")
    shutil.copyfile(fixtures.path("wal"), big)
    with open(big + "-wal", "wb") as f:
        f.write(wal_to_big_endian(wal))
    assert fixtures.add("wal-big-endian", "the wal fixture with big-endian checksums",
                        "wal") == expected

    # A damaged frame in the middle of the committed frames ends the WAL there.
    damaged = fixtures.path("wal-damaged")
    shutil.copyfile(fixtures.path("wal"), damaged)
    middle = valid[len(valid) // 3][0]
    out = bytearray(wal)
    out[middle + 24 + page_size // 2] ^= 0x55
    with open(damaged + "-wal", "wb") as f:
        f.write(out)
    assert fixtures.add("wal-damaged", "the wal fixture with a frame's page damaged", "wal") \
        != expected


def journal_segments(journal, page_size):
    """The headers of a rollback journal: (offset, record count, original size)."""
    sector = struct.unpack(">I", journal[20:24])[0]
    segments, offset = [], 0
    while offset + 28 <= len(journal) and journal[offset:offset + 8] == JOURNAL_MAGIC:
        count, _, original = struct.unpack(">3I", journal[offset + 8:offset + 20])
        segments.append((offset, count, original))
        if count == 0xFFFFFFFF:
            break
        end = offset + sector + count * (page_size + 8)
        offset = (end + sector - 1) // sector * sector
    return segments


def make_hot_journal(fixtures, name, synchronous, page_size):
    """A transaction whose changed pages spilled into the database file (a small cache), copied
    with its journal before it commits: what a crash leaves."""
    rng = random.Random(len(name))
    work = fixtures.work(name)
    con = connect(work, page_size=page_size, journal_mode="DELETE")
    con.execute(f"PRAGMA synchronous={synchronous}")
    ytk_table(con, "ytk")
    con.execute("CREATE TABLE other (v)")
    con.execute("BEGIN")
    for i in range(400):
        ytk_put(con, "ytk", f"id-{i}", json.dumps({"i": i, "t": text_of_length(rng, 60)}), 1448000000 + i)
        con.execute("INSERT INTO other VALUES (?)", (i,))
    con.execute("COMMIT")
    size_before = os.path.getsize(work)
    with tempfile.TemporaryDirectory() as scratch:
        shutil.copyfile(work, os.path.join(scratch, "before.db"))
        before = dump(os.path.join(scratch, "before.db"))
    con.execute("PRAGMA cache_size=10")
    con.execute("BEGIN")
    con.execute("UPDATE ytk SET json = json || ' ' || hex(randomblob(40))")
    for i in range(400, 700):
        ytk_put(con, "ytk", f"id-{i}", json.dumps([text_of_length(rng, 100)]), 1.0)
    con.execute("DELETE FROM other WHERE v % 2 = 1")
    con.execute("CREATE TABLE new_in_transaction (v)")
    shutil.copyfile(work, fixtures.path(name))
    shutil.copyfile(work + "-journal", fixtures.path(name) + "-journal")
    con.execute("ROLLBACK")
    con.close()

    with open(fixtures.path(name), "rb") as f:
        spilled = f.read()
    with open(fixtures.path(name) + "-journal", "rb") as f:
        journal = f.read()
    assert len(spilled) > size_before, "the transaction did not spill pages into the file"
    segments = journal_segments(journal, page_size)
    assert segments and segments[0][2] * page_size == size_before, segments
    if synchronous == "OFF":
        assert segments[0][1] == 0xFFFFFFFF, segments
    else:
        assert len(segments) > 1, segments
    expected = fixtures.add(name, f"a hot journal (synchronous={synchronous}) of a transaction "
                            "that spilled pages into the file", "journal")
    assert expected == before


def make_persist_journal(fixtures):
    """journal_mode=PERSIST: after the commit the journal keeps its records but its header is
    zeroed, so it is not hot and changes nothing."""
    work = fixtures.work("journal-persist")
    con = connect(work, page_size=1024, journal_mode="PERSIST")
    ytk_table(con, "ytk")
    for i in range(50):
        ytk_put(con, "ytk", f"id-{i}", "[1]", 1.0)
    con.execute("BEGIN")
    con.execute("UPDATE ytk SET json = '[2]'")
    con.execute("COMMIT")
    con.close()
    shutil.copyfile(work, fixtures.path("journal-persist"))
    shutil.copyfile(work + "-journal", fixtures.path("journal-persist") + "-journal")
    with open(work + "-journal", "rb") as f:
        journal = f.read()
    assert len(journal) > 1024 and journal[0] == 0, len(journal)
    fixtures.add("journal-persist", "a persisted journal with a zeroed header: not hot",
                 "journal")


def make_all(out):
    fixtures = Fixtures(out)
    here = os.path.dirname(os.path.abspath(__file__))
    for committed, about in [("ytk-sqlite", "YTKKeyValueStore's own fixture (../shared)"),
                             ("small", "the committed small fixture of the hostile-input tests")]:
        shutil.copyfile(os.path.join(here, committed + ".db"), fixtures.path(committed))
        fixtures.add(committed, about)
    fixtures.add_closed("ytk-tables", "YTK tables: rows that are not JSON, an empty table",
                        make_ytk_tables)
    fixtures.add_closed("tree-512", "page size 512: multi-level tables and sqlite_schema",
                        lambda p: make_tree(p, 512, 3000, 60))
    fixtures.add_closed("tree-4096", "page size 4096: a multi-level table",
                        lambda p: make_tree(p, 4096, 20000, 3))
    fixtures.add_closed("overflow-512", "page size 512: payloads around every spill threshold",
                        lambda p: make_overflow(p, 512))
    fixtures.add_closed("overflow-4096", "page size 4096: payloads around every spill threshold",
                        lambda p: make_overflow(p, 4096))
    fixtures.add_closed("page-65536", "page size 65536: a two-level table, long chains",
                        make_page_65536)
    fixtures.add_closed("utf16le", "text encoding UTF-16le", lambda p: make_utf16(p, "UTF-16le"))
    fixtures.add_closed("utf16be", "text encoding UTF-16be", lambda p: make_utf16(p, "UTF-16be"))
    fixtures.add_closed("types", "every serial type, affinities, rowid aliases, added columns, "
                        "quoting; tables the reader refuses", make_types)
    fixtures.add_closed("auto-vacuum-full", "auto_vacuum=FULL with deletes: pointer-map pages",
                        lambda p: make_auto_vacuum(p, "full"))
    fixtures.add_closed("auto-vacuum-incremental", "auto_vacuum=INCREMENTAL, partly vacuumed",
                        lambda p: make_auto_vacuum(p, "incremental"))
    fixtures.add_closed("freelist", "deletes and a dropped table without vacuum: free pages",
                        make_freelist)
    make_reserved(fixtures)
    make_wal(fixtures)
    make_hot_journal(fixtures, "journal-hot", "FULL", 512)
    make_hot_journal(fixtures, "journal-hot-nosync", "OFF", 4096)
    make_persist_journal(fixtures)
    fixtures.finish()


def make_small(path):
    """small.db, committed: a few pages of 512 bytes with a two-level table, overflow chains
    and a YTK table; regenerate it with `make_fixtures.py --small PATH`."""
    con = connect(path, page_size=512)
    rng = random.Random(5)
    con.execute("CREATE TABLE t (a INTEGER PRIMARY KEY, b TEXT, c)")
    ytk_table(con, "ytk")
    con.execute("BEGIN")
    for i in range(30):
        con.execute("INSERT INTO t (b, c) VALUES (?, ?)", (text_of_length(rng, 30), i * 1.5))
    con.execute("INSERT INTO t (b, c) VALUES (?, ?)", ("overflow", bytes(range(256)) * 5))
    for i in range(3):
        ytk_put(con, "ytk", f"key {i}", json.dumps({"i": i}), 1448000000.25 + i)
    con.execute("COMMIT")
    con.close()


def make_large(out, rows):
    """large.db: one YTK table of `rows` rows, for measuring the reader against sqlite3."""
    path = os.path.join(out, "large.db")
    if os.path.exists(path):
        os.remove(path)
    con = connect(path)
    ytk_table(con, "t")
    con.execute("BEGIN")
    batch = []
    for i in range(rows):
        batch.append((f"key-{i:08d}",
                      '{"id":%d,"name":"user %d","tags":["ios","kv"],"score":%d.5,"vip":%s}'
                      % (i, i, i % 100, "true" if i % 2 else "false"),
                      1448000000.0 + i * 0.25))
        if len(batch) == 10000:
            con.executemany("REPLACE INTO t (id, json, createdTime) values (?, ?, ?)", batch)
            batch = []
    con.executemany("REPLACE INTO t (id, json, createdTime) values (?, ?, ?)", batch)
    con.execute("COMMIT")
    con.close()


def main(argv):
    if len(argv) == 3 and argv[1] == "--small":
        make_small(argv[2])
        return
    if len(argv) == 3 and argv[1] == "--dump":
        dump_each(argv[2])
        return
    if len(argv) < 2:
        sys.exit(__doc__)
    out = argv[1]
    os.makedirs(out, exist_ok=True)
    if len(argv) == 4 and argv[2] == "--large":
        make_large(out, int(argv[3]))
    elif len(argv) == 2:
        make_all(out)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
