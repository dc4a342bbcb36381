package io.sandboxd.daemon.store;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.logging.Logger;

/**
 * Retention: prunes the bulky data (journals, blobs, logs, io, module bytes) of the oldest runs
 * past the store's bounds, keeping their rows and signed records so every chain still verifies and
 * a pruned run shows as pruned. Checked after appends when due, never on every run.
 */
final class StoreRetention {
  private static final Logger LOG = Logger.getLogger(StoreRetention.class.getName());

  /** Runs appended between two retention checks at most, and the most time between them. */
  static final int EVERY_RUNS = 64;

  static final long EVERY_MS = 1_000;

  private final StoreDb store;
  private volatile RunStore.Retention retention = RunStore.Retention.NONE;
  private final AtomicLong runsSince = new AtomicLong();
  private final AtomicLong bytesSince = new AtomicLong();
  private final AtomicBoolean applying = new AtomicBoolean();
  private volatile long lastMs;

  StoreRetention(StoreDb store) {
    this.store = store;
  }

  /** Sets the bounds and applies them now. */
  void set(RunStore.Retention r) {
    retention = r;
    apply(null);
  }

  /**
   * Retention after an append, when it is due: once {@link #EVERY_RUNS} runs, a 64th of {@code
   * max_bytes}, or {@link #EVERY_MS} have been appended since the last check. A check costs queries
   * under the store's lock, so it is not paid on every run; the bounds overshoot by at most that
   * much. One caller applies it while the others go on.
   */
  void applyIfDue(RunRecord r) {
    RunStore.Retention rt = retention;
    if (rt == RunStore.Retention.NONE) {
      return;
    }
    long runs = runsSince.incrementAndGet();
    long bytes = bytesSince.addAndGet(approxBytes(r));
    long now = System.currentTimeMillis();
    if (runs < EVERY_RUNS && bytes < Math.max(1, rt.maxBytes() / 64) && now - lastMs < EVERY_MS) {
      return;
    }
    if (!applying.compareAndSet(false, true)) {
      return;
    }
    try {
      runsSince.set(0);
      bytesSince.set(0);
      lastMs = now;
      apply(r.runId());
    } finally {
      applying.set(false);
    }
  }

  /** The bulky bytes a run adds (what retention prunes), roughly. */
  private static long approxBytes(RunRecord r) {
    long n = 4096L + r.log().length() + r.grantsJson().length();
    for (String e : r.journalEntries()) {
      n += e.length();
    }
    for (byte[] b : r.blobs().values()) {
      n += b.length;
    }
    return n;
  }

  /** After the runs are durable: a failure here never takes back an acknowledged run. */
  void apply(String newest) {
    try {
      prune(retention, System.currentTimeMillis(), newest);
    } catch (StoreException e) {
      LOG.warning("run store: retention not applied: " + e.getMessage());
    }
  }

  /**
   * Runs pruned under one hold of the store's lock at most: a store far past its bounds (a large
   * one after a restart, or one whose signed records alone pass {@code max_bytes}) is pruned in
   * chunks, and appends go on between them instead of waiting for the whole backlog.
   */
  static final int CHUNK_RUNS = 256;

  // Where the walk in age order for max_bytes goes on from: the runs before it are pruned (the walk
  // prunes oldest first), so each check reads on from here instead of past every pruned run again,
  // which made a store whose records alone pass max_bytes cost a scan of all its runs per check.
  // In memory only, under the store's lock; a run stored later with an older time than it (a clock
  // stepped back) is reached from the next start.
  private long walkedMs = Long.MIN_VALUE;
  private String walkedId = "";

  /**
   * Prunes the bulky data of the oldest runs until {@code r} holds (never {@code keep}'s, the run
   * just stored); returns how many runs were pruned. Each pruned run is its own commit, and at most
   * {@link #CHUNK_RUNS} are pruned per hold of the store's lock.
   */
  int prune(RunStore.Retention r, long nowMs, String keep) {
    int total = 0;
    while (true) {
      int n = store.transact("run store: pruning failed", db -> pruneChunk(db, r, nowMs, keep));
      total += n;
      if (n < CHUNK_RUNS) {
        return total;
      }
    }
  }

  private int pruneChunk(Connection db, RunStore.Retention r, long nowMs, String keep)
      throws SQLException {
    int n = 0;
    List<String> due = new ArrayList<>();
    if (r.maxRuns() > 0) {
      due.addAll(
          ids(
              db,
              "SELECT run_id FROM runs WHERE run_id NOT IN (SELECT run_id FROM pruned)"
                  + " ORDER BY created_ms DESC, run_id DESC LIMIT "
                  + (CHUNK_RUNS + 1)
                  + " OFFSET "
                  + r.maxRuns()));
    }
    if (r.maxAgeMs() > 0) {
      due.addAll(
          ids(
              db,
              "SELECT run_id FROM runs WHERE run_id NOT IN (SELECT run_id FROM pruned)"
                  + " AND created_ms < "
                  + Math.max(0, nowMs - r.maxAgeMs())
                  + " ORDER BY created_ms, run_id LIMIT "
                  + (CHUNK_RUNS + 1)));
    }
    for (String id : new LinkedHashSet<>(due)) {
      if (n == CHUNK_RUNS) {
        return n;
      }
      if (!id.equals(keep)) {
        pruneRun(db, id, nowMs, r.maxRuns() > 0 ? "store.max_runs" : "store.max_age_ms");
        n++;
      }
    }
    boolean passedKeep = false;
    while (n < CHUNK_RUNS && usedBytes(db) > r.maxBytes()) {
      int before = n;
      try (PreparedStatement st =
          db.prepareStatement(
              "SELECT created_ms, run_id FROM runs WHERE created_ms >= ?1"
                  + " AND (created_ms > ?1 OR run_id > ?2)"
                  + " AND run_id NOT IN (SELECT run_id FROM pruned)"
                  + " ORDER BY created_ms, run_id LIMIT ?3")) {
        st.setLong(1, walkedMs);
        st.setString(2, walkedId);
        st.setInt(3, CHUNK_RUNS - n + 1);
        List<Object[]> next = new ArrayList<>();
        try (ResultSet rs = st.executeQuery()) {
          while (rs.next()) {
            next.add(new Object[] {rs.getLong(1), rs.getString(2)});
          }
        }
        for (Object[] row : next) {
          if (n == CHUNK_RUNS || usedBytes(db) <= r.maxBytes()) {
            return n;
          }
          String id = (String) row[1];
          if (id.equals(keep)) {
            // Kept unpruned: the walk must not pass it, or no later check would reach it.
            passedKeep = true;
            continue;
          }
          pruneRun(db, id, nowMs, "store.max_bytes");
          n++;
          if (!passedKeep) {
            walkedMs = (Long) row[0];
            walkedId = id;
          }
        }
      }
      if (n == before) {
        break; // nothing left to prune but the run just stored
      }
    }
    return n;
  }

  private static void pruneRun(Connection db, String runId, long nowMs, String reason)
      throws SQLException {
    // Blobs only this run's journal references, then the journal, the log, and the module
    // bytes no other unpruned run needs.
    List<String> responses =
        StoreDb.all(
            db,
            "SELECT DISTINCT json_extract(entry, '$.response') FROM journal WHERE run_id = ?",
            rs -> rs.getString(1),
            runId);
    // One indexed probe per blob (a correlated subquery would not use the expression index).
    try (PreparedStatement used =
            db.prepareStatement(
                "SELECT 1 FROM journal WHERE json_extract(entry, '$.response') = ?"
                    + " AND run_id <> ? LIMIT 1");
        PreparedStatement delete = db.prepareStatement("DELETE FROM blobs WHERE address = ?")) {
      for (String address : responses) {
        used.setString(1, address);
        used.setString(2, runId);
        boolean shared;
        try (ResultSet rs = used.executeQuery()) {
          shared = rs.next();
        }
        if (!shared) {
          delete.setString(1, address);
          delete.executeUpdate();
        }
      }
    }
    exec(db, "DELETE FROM journal WHERE run_id = ?1", runId);
    exec(db, "UPDATE runs SET log = '' WHERE run_id = ?1", runId);
    // A WASI command's stdin and outputs, unless another unpruned run names the same bytes.
    exec(
        db,
        "DELETE FROM io_blobs WHERE address IN (SELECT stdin FROM run_io WHERE run_id = ?1"
            + " UNION SELECT stdout FROM run_io WHERE run_id = ?1"
            + " UNION SELECT stderr FROM run_io WHERE run_id = ?1)"
            + " AND NOT EXISTS (SELECT 1 FROM run_io o WHERE o.run_id <> ?1"
            + " AND o.run_id NOT IN (SELECT run_id FROM pruned)"
            + " AND (o.stdin = io_blobs.address OR o.stdout = io_blobs.address"
            + " OR o.stderr = io_blobs.address))",
        runId);
    exec(
        db,
        "INSERT OR REPLACE INTO pruned (run_id, pruned_ms, reason) VALUES (?1, " + nowMs + ", ?2)",
        runId,
        reason);
    exec(
        db,
        "DELETE FROM modules WHERE address = (SELECT unit FROM runs WHERE run_id = ?1)"
            + " AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.unit = modules.address"
            + " AND r.run_id NOT IN (SELECT run_id FROM pruned))",
        runId);
    db.commit();
  }

  /** Whether, when and why retention pruned this run's bulky data. */
  Optional<RunStore.Pruned> pruned(String runId) {
    return store.firstRow(
        "run " + runId + ": cannot read pruning",
        "SELECT pruned_ms, reason FROM pruned WHERE run_id = ?",
        rs -> new RunStore.Pruned(rs.getLong(1), rs.getString(2)),
        runId);
  }

  private static void exec(Connection db, String sql, String... args) throws SQLException {
    StoreDb.update(db, sql, (Object[]) args);
  }

  private static List<String> ids(Connection db, String sql) throws SQLException {
    List<String> out = new ArrayList<>();
    try (Statement st = db.createStatement();
        ResultSet rs = st.executeQuery(sql)) {
      while (rs.next()) {
        out.add(rs.getString(1));
      }
    }
    return out;
  }

  /** Bytes of store pages in use (freed pages are reused before the file grows). */
  private static long usedBytes(Connection db) throws SQLException {
    try (Statement st = db.createStatement()) {
      long pages = longPragma(st, "page_count");
      long free = longPragma(st, "freelist_count");
      return (pages - free) * longPragma(st, "page_size");
    }
  }

  private static long longPragma(Statement st, String name) throws SQLException {
    try (ResultSet rs = st.executeQuery("PRAGMA " + name)) {
      return rs.next() ? rs.getLong(1) : 0;
    }
  }
}
