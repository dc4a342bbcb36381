package io.sandboxd.daemon.store;

import java.sql.SQLException;
import java.util.List;
import java.util.Optional;

/**
 * The export hand-off of durable runs in the run store (issue 23): the bundle an exporting run was
 * exported as (its BLAKE3 digest and size), for which destination node and since when. It is
 * written in the transaction that marks the run exporting and removed in the one that parks it
 * again, so a daemon that restarts can still confirm the export against the right digest.
 */
public final class ExportHandoffTable {
  static final List<String> DDL =
      List.of(
          "CREATE TABLE IF NOT EXISTS export_handoffs (run_id TEXT PRIMARY KEY,"
              + " digest TEXT NOT NULL, size INTEGER NOT NULL, destination TEXT NOT NULL,"
              + " started_ms INTEGER NOT NULL, confirmed_ms INTEGER)");

  /** One export: the bundle's digest and size, the destination key ("" for any), its start. */
  public record Handoff(
      String digest, long size, String destination, long startedMs, Optional<Long> confirmedMs) {}

  private final StoreDb store;

  ExportHandoffTable(StoreDb store) {
    this.store = store;
  }

  /**
   * Marks a parked run exporting and records its bundle, in one transaction; false (nothing
   * changed) when the run is not parked and unexported.
   */
  public boolean begin(String runId, Handoff h) {
    return store.change(
        "run " + runId + ": cannot mark exporting",
        c -> {
          if (!move(runId, "parked", "exporting", 0)) {
            return false;
          }
          StoreDb.update(
              c,
              "INSERT OR REPLACE INTO export_handoffs (run_id, digest, size, destination,"
                  + " started_ms, confirmed_ms) VALUES (?,?,?,?,?,NULL)",
              runId,
              h.digest(),
              h.size(),
              h.destination(),
              h.startedMs());
          return true;
        });
  }

  /** The run's export, pending or confirmed, if one is recorded. */
  public Optional<Handoff> handoff(String runId) {
    return store.read(
        "export hand-off: query failed",
        c ->
            StoreDb.first(
                c,
                "SELECT digest, size, destination, started_ms, confirmed_ms FROM export_handoffs"
                    + " WHERE run_id = ?",
                rs -> {
                  long confirmed = rs.getLong(5);
                  boolean none = rs.wasNull();
                  return new Handoff(
                      rs.getString(1),
                      rs.getLong(2),
                      rs.getString(3),
                      rs.getLong(4),
                      none ? Optional.empty() : Optional.of(confirmed));
                },
                runId));
  }

  /**
   * Marks an exporting run moved when {@code digest} is its recorded bundle's, in one transaction;
   * false (nothing changed) when the run is not exporting or the digest is another.
   */
  public boolean confirm(String runId, String digest, long nowMs) {
    return store.change(
        "run " + runId + ": cannot confirm its export",
        c ->
            StoreDb.update(
                        c,
                        "UPDATE export_handoffs SET confirmed_ms = ? WHERE run_id = ? AND digest = ?"
                            + " AND confirmed_ms IS NULL",
                        nowMs,
                        runId,
                        digest)
                    == 1
                && move(runId, "exporting", "moved", 1));
  }

  /**
   * Parks an exporting run again and forgets its export, in one transaction; false when the run is
   * not exporting.
   */
  public boolean takeBack(String runId) {
    return store.change(
        "run " + runId + ": cannot take its export back",
        c -> {
          if (!move(runId, "exporting", "parked", 0)) {
            return false;
          }
          StoreDb.update(c, "DELETE FROM export_handoffs WHERE run_id = ?", runId);
          return true;
        });
  }

  private boolean move(String runId, String from, String to, int exported) throws SQLException {
    return StoreDb.update(
            store.connection(),
            "UPDATE durable_runs SET state = ?, exported = ?, updated_ms = ?"
                + " WHERE run_id = ? AND state = ? AND exported = 0",
            to,
            exported,
            System.currentTimeMillis(),
            runId,
            from)
        == 1;
  }
}
