package io.sandboxd.daemon.store;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Which snapshot blobs each durable run refers to, with their sizes (issue 23): written in the
 * transaction that parks or imports the run, so what the parked runs hold is known without reading
 * the snapshot store, and a blob shared by several runs (the store is content-addressed) is deleted
 * only once no live run (running, parked or exporting) refers to it. A run's rows of an earlier
 * park stay (not current) until a sweep has deleted what only they named.
 */
public final class DurableBlobs {
  static final List<String> DDL =
      List.of(
          "CREATE TABLE IF NOT EXISTS durable_blobs (run_id TEXT NOT NULL, address TEXT NOT NULL,"
              + " size INTEGER NOT NULL, current INTEGER NOT NULL, PRIMARY KEY (run_id, address))",
          "CREATE INDEX IF NOT EXISTS durable_blobs_by_address ON durable_blobs (address)");

  // A run that may still need its last snapshot: resumed from it, parked on it, or exporting it.
  private static final String LIVE = "('running', 'parked', 'exporting')";

  private final StoreDb store;

  DurableBlobs(StoreDb store) {
    this.store = store;
  }

  /**
   * Makes {@code sizes} the blobs {@code runId} refers to now, inside the caller's transaction; the
   * blobs of its earlier park are kept as not current, for the next sweep.
   */
  static void replace(Connection db, String runId, Map<String, Long> sizes) throws SQLException {
    StoreDb.update(db, "UPDATE durable_blobs SET current = 0 WHERE run_id = ?", runId);
    try (PreparedStatement st =
        db.prepareStatement(
            "INSERT OR REPLACE INTO durable_blobs (run_id, address, size, current)"
                + " VALUES (?,?,?,1)")) {
      for (Map.Entry<String, Long> e : sizes.entrySet()) {
        st.setString(1, runId);
        st.setString(2, e.getKey());
        st.setLong(3, e.getValue());
        st.addBatch();
      }
      st.executeBatch();
    }
  }

  /** Records the blobs of a run stored before they were recorded (a store from before 15). */
  public void record(String runId, Map<String, Long> sizes) {
    store.write(
        "run " + runId + ": cannot record its snapshot blobs",
        c -> {
          replace(c, runId, sizes);
          return null;
        });
  }

  /** Whether any blob is recorded for {@code runId}. */
  public boolean recorded(String runId) {
    return read(
        c ->
            StoreDb.first(
                    c, "SELECT 1 FROM durable_blobs WHERE run_id = ? LIMIT 1", rs -> true, runId)
                .isPresent());
  }

  // Rows that no longer hold a blob: an ended (or vanished) run's, or a live run's earlier park.
  private static final String STALE =
      "(b.current = 0 OR NOT EXISTS (SELECT 1 FROM durable_runs r WHERE r.run_id = b.run_id"
          + " AND r.state IN "
          + LIVE
          + "))";

  /** Stale rows seen by one sweep, and the blobs only such rows name. */
  public record Stale(List<Map.Entry<String, String>> rows, Set<String> unreferenced) {}

  /**
   * The stale rows (an ended run's: completed, failed, terminated, moved; a run no longer held; an
   * earlier park's) and the blobs named by them but by no live run's current snapshot: the ones the
   * snapshot store may delete. Read in one transaction.
   */
  public Stale stale() {
    return read(
        c ->
            new Stale(
                StoreDb.all(
                    c,
                    "SELECT b.run_id, b.address FROM durable_blobs b WHERE " + STALE,
                    rs -> Map.entry(rs.getString(1), rs.getString(2))),
                new LinkedHashSet<>(
                    StoreDb.all(
                        c,
                        "SELECT DISTINCT b.address FROM durable_blobs b WHERE "
                            + STALE
                            + " AND NOT EXISTS (SELECT 1 FROM durable_blobs l"
                            + " JOIN durable_runs lr ON lr.run_id = l.run_id"
                            + " WHERE l.address = b.address AND l.current = 1 AND lr.state IN "
                            + LIVE
                            + ")",
                        rs -> rs.getString(1)))));
  }

  /** Deletes {@code rows} (after the snapshot store deleted the blobs only they named). */
  public void forget(List<Map.Entry<String, String>> rows) {
    store.write(
        "durable blobs: cannot forget stale rows",
        c -> {
          try (PreparedStatement st =
              c.prepareStatement("DELETE FROM durable_blobs WHERE run_id = ? AND address = ?")) {
            for (Map.Entry<String, String> r : rows) {
              st.setString(1, r.getKey());
              st.setString(2, r.getValue());
              st.addBatch();
            }
            st.executeBatch();
          }
          return null;
        });
  }

  /** Bytes of the distinct blobs that live durable runs refer to (each shared blob once). */
  public long liveBytes() {
    return read(
        c ->
            StoreDb.first(
                    c,
                    "SELECT COALESCE(SUM(size), 0) FROM (SELECT b.address, MAX(b.size) AS size"
                        + " FROM durable_blobs b JOIN durable_runs r ON r.run_id = b.run_id"
                        + " WHERE b.current = 1 AND r.state IN "
                        + LIVE
                        + " GROUP BY b.address)",
                    rs -> rs.getLong(1))
                .orElse(0L));
  }

  private <T> T read(StoreDb.Work<T> query) {
    return store.read("durable blobs: query failed", query);
  }
}
