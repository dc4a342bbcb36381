#!/usr/bin/env python3
"""The least a SQLite store in WAL mode can write for a run (issue 22: "at most 4x as many bytes
written, WAL included, as kept"), whatever its tables: the floor under the daemon's layout.

    benchmarks/sqlite-write-floor.py [--runs N] [--payload BYTES] [--pages 1024,2048,4096]
                                     [--batches 1,8] [--trees 0] [--row BYTES] [--file] [--dir DIR]

Each layout is the smallest a signed-run store can be: one table the runs are appended to (an
INTEGER PRIMARY KEY, one BLOB of PAYLOAD bytes a run: 2,150 by default, what a hello run keeps in
the daemon's store) and one signed head row rewritten by every commit, as the store head is. The
connection is the daemon's: WAL, synchronous=FULL (an fsync a commit), a page size set before the
first page, and a passive checkpoint every 64 commits (WalCheckpointer's cadence; SQLite's own is
turned off). `--trees K` adds K more append-only tables, each taking a row of ROW bytes (default
150, what the daemon's ledger, node log and runs rows hold) a run: what each b-tree a run writes
into costs beyond its bytes. BATCH runs go into each commit: 1 is one client, where every
acknowledged run is its own fsynced commit; 8 is about what group commit gathers at 16 clients
here.

What it prints a layout: the bytes the process wrote to disk a run (/proc/self/io write_bytes after
a sync: the WAL, the checkpoint's writes into the database file, and the filesystem's rewrite of a
4 KiB block that a commit left half full), the bytes kept a run (used pages x page size, as
run-pipeline-compare.sh counts the daemon's), and their ratio. The daemon's own figures to hold
them against come from run-pipeline-compare.sh (written_per_run_b, stored_per_run_b). `--file`
adds, for each batch size, the same records appended to a plain file with one fdatasync a commit
and nothing else (no index, no head): what a store whose hot path is an append-only record file
would write for its records. Random payloads, so nothing is smaller for compressing well. Run it on
a quiet machine.
"""
import argparse
import os
import shutil
import sqlite3
import tempfile

CHECKPOINT_EVERY = 64  # commits, as WalCheckpointer.COMMITS_PER_CHECKPOINT


def written_bytes():
    with open("/proc/self/io") as io:
        for line in io:
            if line.startswith("write_bytes:"):
                return int(line.split()[1])
    raise SystemExit("sqlite-write-floor: /proc/self/io has no write_bytes")


def measure(folder, page, batch, runs, payload, trees, row):
    path = os.path.join(folder, "floor.db")
    db = sqlite3.connect(path, isolation_level=None)
    db.execute(f"PRAGMA page_size={page}")
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute("PRAGMA wal_autocheckpoint=0")
    db.execute("CREATE TABLE runs (position INTEGER PRIMARY KEY, record BLOB NOT NULL)")
    db.execute("CREATE TABLE head (id INTEGER PRIMARY KEY CHECK (id = 1), envelope BLOB NOT NULL)")
    db.execute("INSERT INTO head VALUES (1, ?)", (os.urandom(160),))
    for t in range(trees):
        db.execute(f"CREATE TABLE tree{t} (position INTEGER PRIMARY KEY, row BLOB NOT NULL)")
    os.sync()
    before = written_bytes()
    commits = 0
    for _ in range(0, runs, batch):
        db.execute("BEGIN IMMEDIATE")
        for _ in range(batch):
            db.execute("INSERT INTO runs (record) VALUES (?)", (os.urandom(payload),))
            for t in range(trees):
                db.execute(f"INSERT INTO tree{t} (row) VALUES (?)", (os.urandom(row),))
        db.execute("UPDATE head SET envelope = ? WHERE id = 1", (os.urandom(160),))
        db.execute("COMMIT")
        commits += 1
        if commits % CHECKPOINT_EVERY == 0:
            db.execute("PRAGMA wal_checkpoint(PASSIVE)")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    os.sync()
    written = written_bytes() - before
    stored = commits * batch
    used = db.execute("PRAGMA page_count").fetchone()[0] - db.execute(
        "PRAGMA freelist_count"
    ).fetchone()[0]
    db.close()
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    return written / stored, used * page / stored


def measure_file(folder, batch, runs, payload):
    """Bytes written a record appending batches of records to a file, fdatasync after each."""
    path = os.path.join(folder, "floor.log")
    fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
    try:
        os.sync()
        before = written_bytes()
        at = records = 0
        for _ in range(0, runs, batch):
            chunk = b"".join(os.urandom(payload) for _ in range(batch))
            os.pwrite(fd, chunk, at)
            at += len(chunk)
            records += batch
            os.fdatasync(fd)
        os.sync()
        return (written_bytes() - before) / records
    finally:
        os.close(fd)
        os.remove(path)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", type=int, default=2048)
    p.add_argument("--payload", type=int, default=2150)
    p.add_argument("--pages", default="1024,2048,4096")
    p.add_argument("--batches", default="1,8")
    p.add_argument("--trees", default="0", help="extra append-only tables, e.g. 0,3,6")
    p.add_argument("--row", type=int, default=150, help="bytes of a run's row in each of them")
    p.add_argument("--file", action="store_true", help="also an append-only file, no SQLite")
    p.add_argument("--dir", default=None, help="where the scratch store goes (default: /tmp)")
    a = p.parse_args()
    folder = tempfile.mkdtemp(prefix="sqlite-write-floor-", dir=a.dir)
    try:
        print(f"sqlite {sqlite3.sqlite_version}, {a.runs} runs of {a.payload} payload bytes each")
        print("page  runs/commit  trees  written/run  kept/run  written/kept")
        for page in (int(x) for x in a.pages.split(",")):
            for batch in (int(x) for x in a.batches.split(",")):
                for trees in (int(x) for x in a.trees.split(",")):
                    written, kept = measure(folder, page, batch, a.runs, a.payload, trees, a.row)
                    print(
                        f"{page:4d}  {batch:11d}  {trees:5d}  {written:9.0f} B  {kept:6.0f} B"
                        f"  {written / kept:11.2f}x"
                    )
        for batch in (int(x) for x in a.batches.split(",")) if a.file else ():
            written = measure_file(folder, batch, a.runs, a.payload)
            print(
                f"file  {batch:11d}  {0:5d}  {written:9.0f} B  {a.payload:6d} B"
                f"  {written / a.payload:11.2f}x"
            )
    finally:
        shutil.rmtree(folder)


if __name__ == "__main__":
    main()
