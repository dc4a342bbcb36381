#!/usr/bin/env python3
"""Which b-trees the daemon's commits write, a run, over a window of load (run-wal-pages.sh).

    benchmarks/wal_pages.py STATE_DIR DAEMON_PID SECONDS

Holds a read transaction open on STATE_DIR/runs.db for SECONDS, so that no checkpoint can restart
the WAL behind it: every frame committed in the window stays in the file (if the snapshot was of a
fully checkpointed log, which holds nothing back, and the log restarts anyway, it says so and
stops). Then stops the daemon (SIGSTOP) for as long as a copy of the database and its WAL takes,
and reads the copy: the frames after the window's start (this run's salt), each named by the b-tree
that holds its page now (SQLite's dbstat; page 1 is the schema's root and the file header, which a
commit that allocates a page rewrites). Prints the runs stored, the commits, and the frames a run
by b-tree. The checkpoint's writes into the database file are not counted here (the window holds
them back).
"""
import collections
import os
import shutil
import signal
import sqlite3
import struct
import sys
import tempfile
import time


def main():
    state, pid, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    path = os.path.join(state, "runs.db")
    reader = sqlite3.connect("file:" + path + "?mode=ro", uri=True, isolation_level=None)
    reader.execute("BEGIN")
    runs_before = reader.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
    # Where the log's current frames end now; the file may be longer, with a restarted log's
    # stale frames after them.
    with open(path + "-wal", "rb") as f:
        salt_before, start = frames_end(f.read())
    time.sleep(seconds)
    copy = tempfile.mkdtemp(prefix="wal-pages-")
    try:
        os.kill(pid, signal.SIGSTOP)
        try:
            shutil.copy(path + "-wal", os.path.join(copy, "runs.db-wal"))
            shutil.copy(path, os.path.join(copy, "runs.db"))
        finally:
            os.kill(pid, signal.SIGCONT)
        reader.execute("COMMIT")
        reader.close()
        report(copy, runs_before, salt_before, start)
    finally:
        shutil.rmtree(copy)


def frames_end(wal):
    """The log's salt and the offset just past its last frame of that salt."""
    page_size = struct.unpack(">I", wal[8:12])[0]
    salt, frame, at = wal[16:24], 24 + page_size, 32
    while at + frame <= len(wal) and wal[at + 8 : at + 16] == salt:
        at += frame
    return salt, at


def report(copy, runs_before, salt_before, start):
    db = sqlite3.connect(os.path.join(copy, "runs.db"))
    runs = db.execute("SELECT COUNT(*) FROM runs").fetchone()[0] - runs_before
    owner = {page: name for name, page in db.execute("SELECT name, pageno FROM dbstat")}
    owner[1] = "page 1 (header, schema root)"
    with open(os.path.join(copy, "runs.db-wal"), "rb") as f:
        wal = f.read()
    page_size = struct.unpack(">I", wal[8:12])[0]
    salt = wal[16:24]
    if salt != salt_before:
        # The log restarted in the window (the reader's snapshot was of a fully checkpointed log,
        # which holds nothing back), so some of the window's frames are gone.
        raise SystemExit("wal_pages: the WAL restarted during the window; run it again")
    frame = 24 + page_size
    at = start
    by_tree = collections.Counter()
    frames = commits = 0
    while at + frame <= len(wal) and wal[at + 8 : at + 16] == salt:
        page, size_after = struct.unpack(">II", wal[at : at + 8])
        by_tree[owner.get(page, "(freed since)")] += 1
        frames += 1
        commits += size_after != 0  # a commit's last frame holds the database's size after it
        at += frame
    if runs <= 0 or commits == 0:
        raise SystemExit("wal_pages: no run was committed in the window")
    print(
        f"{runs} runs in {commits} commits ({runs / commits:.2f} a commit), page size {page_size}:"
        f" {frames / runs:.2f} frames a run, {frames * frame / runs:.0f} WAL bytes a run"
    )
    for name, n in by_tree.most_common():
        print(f"  {name:34s} {n / runs:6.3f} frames a run")


if __name__ == "__main__":
    main()
