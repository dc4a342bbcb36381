package io.sandboxd.daemon.store;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
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
  // How many runs the store holds (its ledger's length), read under the store's lock.
  private final LongSupplier runCount;
  private volatile RunStore.Retention retention = RunStore.Retention.NONE;
  private final AtomicLong runsSince = new AtomicLong();
  private final AtomicLong bytesSince = new AtomicLong();
  private final AtomicBoolean applying = new AtomicBoolean();
  private volatile long lastMs;

  StoreRetention(StoreDb store, LongSupplier runCount) {
    this.store = store;
    this.runCount = runCount;
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

  // Where the walk in age order goes on from: the runs before it are pruned (every bound prunes
  // oldest first), so each check reads on from here instead of past every pruned run again, which
  // cost a scan of the pruned runs (max_age_ms, max_bytes) or of the newest max_runs runs
  // (max_runs) per check. In memory only, under the store's lock; a run stored later with an older
  // time than it (a clock stepped back) is reached from the next start.
  private long walkedMs = Long.MIN_VALUE;
  private String walkedId = "";
  // Whether runs_by_unit is known to exist (made, or found, by this process). Under the lock.
  private boolean byUnit;
  // Rows in pruned, counted once when max_runs first needs it, then kept by each run pruned.
  // Under the store's lock; -1 until counted.
  private long prunedCount = -1;

  /**
   * Prunes the bulky data of the oldest runs until {@code r} holds (never {@code keep}'s, the run
   * just stored); returns how many runs were pruned. At most {@link #CHUNK_RUNS} are pruned per
   * hold of the store's lock, in one commit (one fsync, where a commit per pruned run took one
   * fsync each: a store whose records alone pass {@code max_bytes} prunes every run it stores).
   */
  int prune(RunStore.Retention r, long nowMs, String keep) {
    int total = 0;
    while (true) {
      long ms = walkedMs;
      String id = walkedId;
      long count = prunedCount;
      // A chunk rolled back takes the walk and the count back with it.
      Runnable undo =
          () -> {
            walkedMs = ms;
            walkedId = id;
            prunedCount = count;
            byUnit = false; // perhaps made in the rolled-back chunk: looked for again
            allPrunedTo.clear(); // perhaps learnt from runs the rollback takes back
          };
      int n =
          store.transact("run store: pruning failed", undo, db -> pruneChunk(db, r, nowMs, keep));
      total += n;
      if (n < CHUNK_RUNS) {
        return total;
      }
    }
  }

  /** The runs not yet pruned after the walk's mark, oldest first: {@code created_ms, run_id}. */
  static final String WALK =
      "SELECT created_ms, run_id FROM runs WHERE created_ms >= ?1"
          + " AND (created_ms > ?1 OR run_id > ?2)"
          + " AND run_id NOT IN (SELECT run_id FROM pruned)"
          + " ORDER BY created_ms, run_id LIMIT ?3";

  /**
   * One walk in age order for every bound: the oldest runs not pruned, each pruned for the first
   * bound it is past (max_runs while more than that many runs are unpruned, max_age_ms while older
   * than the bound, max_bytes while the store's pages in use pass it), until one is past none.
   */
  private int pruneChunk(Connection db, RunStore.Retention r, long nowMs, String keep)
      throws SQLException {
    long excess = r.maxRuns() > 0 ? runCount.getAsLong() - pruned(db) - r.maxRuns() : 0;
    long cutoff = r.maxAgeMs() > 0 ? Math.max(0, nowMs - r.maxAgeMs()) : Long.MIN_VALUE;
    int n = 0;
    boolean passedKeep = false;
    // A check with nothing due reads two runs (the oldest may be the one kept), not a chunk's
    // worth.
    boolean first = true;
    while (n < CHUNK_RUNS) {
      int before = n;
      List<Object[]> next = new ArrayList<>();
      try (PreparedStatement st = db.prepareStatement(WALK)) {
        st.setLong(1, walkedMs);
        st.setString(2, walkedId);
        st.setInt(3, first ? 2 : CHUNK_RUNS - n + 1);
        first = false;
        try (ResultSet rs = st.executeQuery()) {
          while (rs.next()) {
            next.add(new Object[] {rs.getLong(1), rs.getString(2)});
          }
        }
      }
      for (Object[] row : next) {
        long createdMs = (Long) row[0];
        String id = (String) row[1];
        String reason =
            excess > 0
                ? "store.max_runs"
                : createdMs < cutoff
                    ? "store.max_age_ms"
                    : usedBytes(db) > r.maxBytes() ? "store.max_bytes" : null;
        if (reason == null || n == CHUNK_RUNS) {
          return n; // the runs after this one are newer: past no bound this one is not past
        }
        excess--;
        if (id.equals(keep)) {
          // Kept unpruned: the walk must not pass it, or no later check would reach it.
          passedKeep = true;
          continue;
        }
        if (!byUnit) {
          StoreDb.update(db, BY_UNIT);
          byUnit = true;
        }
        pruneRun(db, id, nowMs, reason);
        if (prunedCount >= 0) {
          prunedCount++;
        }
        n++;
        if (!passedKeep) {
          walkedMs = createdMs;
          walkedId = id;
        }
      }
      if (n == before) {
        break; // nothing left to prune but the run just stored
      }
    }
    return n;
  }

  /** How many runs are pruned, counted from the table the first time. */
  private long pruned(Connection db) throws SQLException {
    if (prunedCount < 0) {
      prunedCount =
          StoreDb.first(db, "SELECT COUNT(*) FROM pruned", rs -> rs.getLong(1)).orElse(0L);
    }
    return prunedCount;
  }

  private void pruneRun(Connection db, String runId, long nowMs, String reason)
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
    pruneIo(db, runId);
    exec(
        db,
        "INSERT OR REPLACE INTO pruned (run_id, pruned_ms, reason) VALUES (?1, " + nowMs + ", ?2)",
        runId,
        reason);
    Optional<String> unit = StoreDb.first(db, UNIT_HELD, rs -> rs.getString(1), runId);
    if (unit.isPresent() && !moduleNeeded(db, unit.get())) {
      exec(db, "DELETE FROM modules WHERE address = ?1", unit.get());
    }
  }

  /** Units a module check remembers as wholly pruned up to a run, at most. */
  static final int UNITS_REMEMBERED = 4096;

  // Per unit, a rowid of runs up to which every run of the unit is pruned: learnt when a module
  // check found none of its runs unpruned, so the next check of the unit reads only the runs stored
  // since, where it read every run of the unit again (a store whose signed records alone pass
  // max_bytes prunes every run, the newest of each unit too, at every check). Pruning is never
  // undone but by a chunk rolled back, which clears this, and later runs take higher rowids. The
  // least recently used unit goes first. Under the store's lock.
  private final Map<String, Long> allPrunedTo =
      new LinkedHashMap<>(16, 0.75f, true) {
        private static final long serialVersionUID = 1L;

        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Long> eldest) {
          return size() > UNITS_REMEMBERED;
        }
      };

  /** Whether a run not pruned names the unit (the run being pruned is in pruned already). */
  private boolean moduleNeeded(Connection db, String unit) throws SQLException {
    long from = allPrunedTo.getOrDefault(unit, 0L);
    if (StoreDb.first(db, UNIT_NEEDED, rs -> 1, unit, from).isPresent()) {
      return true;
    }
    allPrunedTo.put(
        unit, StoreDb.first(db, "SELECT max(rowid) FROM runs", rs -> rs.getLong(1)).orElse(0L));
    return false;
  }

  /** The columns of {@code run_io} that name bytes in {@code io_blobs}, each with its index. */
  private static final List<String> IO_COLUMNS = List.of("stdin", "stdout", "stderr");

  /**
   * Whether a run not pruned, other than {@code ?2}, names the bytes {@code ?1} in the column, one
   * column a query: its runs newest first by the column's index, so the search stops at the first
   * such run. One query over the three columns at once was answered by gathering every run that
   * names the bytes from all three indexes: every run, for a command that prints the same greeting
   * (or nothing to stderr) each time, once for each run pruned.
   */
  static String ioNeeded(String column) {
    return "SELECT 1 FROM run_io WHERE "
        + column
        + " = ?1 AND run_id <> ?2 AND run_id NOT IN (SELECT run_id FROM pruned)"
        + " ORDER BY "
        + column
        + " DESC, rowid DESC LIMIT 1";
  }

  /**
   * A WASI command's stdin and outputs, unless a run not pruned names the same bytes. Each address
   * is looked for first in the column the pruned run names it in: runs of the same command most
   * likely name it there too.
   */
  private static void pruneIo(Connection db, String runId) throws SQLException {
    Optional<List<String>> io =
        StoreDb.first(
            db,
            "SELECT stdin, stdout, stderr FROM run_io WHERE run_id = ?",
            rs -> Arrays.asList(rs.getString(1), rs.getString(2), rs.getString(3)),
            runId);
    if (io.isEmpty()) {
      return;
    }
    Set<String> checked = new HashSet<>();
    for (int i = 0; i < IO_COLUMNS.size(); i++) {
      String address = io.get().get(i);
      if (address == null || !checked.add(address) || ioNeeded(db, address, i, runId)) {
        continue;
      }
      exec(db, "DELETE FROM io_blobs WHERE address = ?1", address);
    }
  }

  /** {@link #ioNeeded(String)} of each of {@link #IO_COLUMNS}, in that order. */
  private static final List<String> IO_NEEDED =
      IO_COLUMNS.stream().map(StoreRetention::ioNeeded).toList();

  private static boolean ioNeeded(Connection db, String address, int first, String runId)
      throws SQLException {
    for (int k = 0; k < IO_COLUMNS.size(); k++) {
      String query = IO_NEEDED.get((first + k) % IO_COLUMNS.size());
      if (StoreDb.first(db, query, rs -> 1, address, runId).isPresent()) {
        return true;
      }
    }
    return false;
  }

  /**
   * Runs by unit, for {@link #UNIT_NEEDED}: made the first time a run is pruned (a store that never
   * reaches its bounds does not pay an index page a stored run for it; 4 KB more written a hello
   * run at one client, and fewer runs a second, when it was made for every store), kept from then
   * on. Not a schema version: a daemon that does not use it keeps it like any index.
   */
  static final String BY_UNIT = "CREATE INDEX IF NOT EXISTS runs_by_unit ON runs (unit)";

  /** The run's unit, when the store holds its module's bytes. */
  static final String UNIT_HELD =
      "SELECT r.unit FROM runs r JOIN modules m ON m.address = r.unit WHERE r.run_id = ?";

  /**
   * Whether a run not pruned names the unit: its runs newest first, by {@link #BY_UNIT}, so the
   * search stops at the first such run, where a scan of runs in store order walked every run pruned
   * before it, once for each run pruned (the oldest are pruned first).
   */
  static final String UNIT_NEEDED =
      "SELECT 1 FROM runs WHERE unit = ?1 AND rowid > ?2"
          + " AND run_id NOT IN (SELECT run_id FROM pruned)"
          + " ORDER BY unit DESC, rowid DESC LIMIT 1";

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
