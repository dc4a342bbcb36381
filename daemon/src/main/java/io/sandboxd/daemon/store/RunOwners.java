package io.sandboxd.daemon.store;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.OptionalLong;

/**
 * Who owns each run, single-step or durable: the uid the kernel gave for the connection that
 * submitted (or imported) it. Authorization asks this before a caller acts on a run (issue 23): a
 * caller acts on the runs it owns unless its rule lets it act on any. Unsigned, like the {@code
 * uid} of a single-step run's row: the signed records name no caller. A run from before owners were
 * kept has none, and then only a caller allowed to act on any run may act on it.
 */
public final class RunOwners {
  /**
   * Migration 11: the owner column of durable runs (single-step runs kept theirs in submitters).
   * Once only: SQLite has no ADD COLUMN IF NOT EXISTS, and a store stepped back by hand may hold
   * it.
   */
  static void addColumn(Connection db) throws SQLException {
    if (StoreSchema.hasColumn(db, "durable_runs", "owner_uid")) {
      return;
    }
    try (java.sql.Statement st = db.createStatement()) {
      st.execute("ALTER TABLE durable_runs ADD COLUMN owner_uid INTEGER");
    }
  }

  /**
   * Migration 16: a single-step run's submitter moves from the submitters table into its runs row
   * (one b-tree fewer written per run). Idempotent, as {@link #addColumn} is.
   */
  static void foldSubmitters(Connection db) throws SQLException {
    boolean has = StoreSchema.hasColumn(db, "runs", "uid");
    try (java.sql.Statement st = db.createStatement()) {
      if (!has) {
        st.execute("ALTER TABLE runs ADD COLUMN uid INTEGER");
      }
      if (StoreSchema.hasTable(db, "submitters")) {
        st.execute(
            "UPDATE runs SET uid = (SELECT s.uid FROM submitters s WHERE s.run_id = runs.run_id)"
                + " WHERE uid IS NULL");
        st.execute("DROP TABLE submitters");
      }
    }
  }

  private final StoreDb store;

  RunOwners(StoreDb store) {
    this.store = store;
  }

  /** The uid owning {@code runId}: a durable run's owner, else a single-step run's submitter. */
  public OptionalLong of(String runId) {
    return store.transact(
        "run " + runId + ": cannot read its owner",
        db -> {
          for (OptionalLong uid :
              StoreDb.all(
                  db,
                  "SELECT owner_uid FROM durable_runs WHERE run_id = ?"
                      + " UNION ALL SELECT uid FROM runs WHERE run_id = ?",
                  rs -> {
                    long u = rs.getLong(1);
                    return rs.wasNull() ? OptionalLong.empty() : OptionalLong.of(u);
                  },
                  runId,
                  runId)) {
            if (uid.isPresent()) {
              return uid;
            }
          }
          return OptionalLong.empty();
        });
  }

  /** Records {@code uid} as the owner of durable run {@code runId}; fsynced before it returns. */
  public void setDurable(String runId, long uid) {
    store.transact(
        "run " + runId + ": cannot record its owner",
        db -> {
          if (StoreDb.update(
                  db, "UPDATE durable_runs SET owner_uid = ? WHERE run_id = ?", uid, runId)
              != 1) {
            throw new StoreException("run " + runId + ": no durable run to own");
          }
          return null;
        });
  }
}
