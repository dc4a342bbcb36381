package io.sandboxd.daemon.store;

import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.WarmpoolClaim;
import io.sandboxd.attest.WarmpoolEvict;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.List;
import java.util.Optional;

/**
 * Signed warm-pool records: claims (one per warm run, stored with the run) in {@code pool_claims},
 * evictions (no run) in {@code pool_records}, beside the claims stored there before schema 20. Each
 * row is a self-verifying envelope; it is checked on read.
 */
final class PoolRecordTable {
  private PoolRecordTable() {}

  static final List<String> DDL =
      List.of(
          "CREATE TABLE IF NOT EXISTS pool_records (address TEXT PRIMARY KEY, kind TEXT NOT NULL,"
              + " run_id TEXT, created_ms INTEGER NOT NULL, envelope TEXT NOT NULL)",
          "CREATE INDEX IF NOT EXISTS pool_records_by_run ON pool_records (run_id)",
          "CREATE INDEX IF NOT EXISTS pool_records_by_kind ON pool_records (kind, created_ms)");

  static final String CLAIM = "claim";
  static final String EVICT = "evict";

  /**
   * Migration 20: claims get a table of their own, with no key on their address. In {@code
   * pool_records} that key, a hash, took a page write at random for every pooled run, and nothing
   * reads a claim by address: a claim is read by its run. The claims stored before stay where they
   * are (copying them would rewrite the table through the WAL in one transaction) and are read from
   * there too.
   */
  static final List<String> CLAIMS_DDL =
      List.of(
          "CREATE TABLE IF NOT EXISTS pool_claims (run_id TEXT NOT NULL, envelope TEXT NOT NULL)",
          "CREATE INDEX IF NOT EXISTS pool_claims_by_run ON pool_claims (run_id)");

  /** Inserts {@code claim}, whose stored form ({@link StoreEncoding}) is {@code stored}. */
  static void insertClaim(StoreDb db, String runId, Envelope claim, byte[] stored)
      throws SQLException {
    WarmpoolClaim c = WarmpoolClaim.fromCore(claim.core());
    if (!c.runId().equals(runId)) {
      throw new StoreException("run " + runId + ": its warm-pool claim names run " + c.runId());
    }
    PreparedStatement st = db.prepared("INSERT INTO pool_claims (run_id, envelope) VALUES (?,?)");
    st.setString(1, runId);
    st.setBytes(2, stored);
    st.executeUpdate();
  }

  /**
   * Migration 16: evictions by time in a partial index, so a warm claim (one per pooled run) writes
   * no entry there. The listing names the kind as a literal: a partial index serves only a query
   * whose WHERE implies the index's ({@link #EVICTIONS}).
   */
  static final List<String> EVICTIONS_BY_TIME =
      List.of(
          "DROP INDEX IF EXISTS pool_records_by_kind",
          "CREATE INDEX IF NOT EXISTS pool_evictions_by_time ON pool_records (created_ms)"
              + " WHERE kind = '"
              + EVICT
              + "'");

  static void insertEviction(StoreDb db, Envelope evict) throws SQLException {
    WarmpoolEvict e = WarmpoolEvict.fromCore(evict.core());
    PreparedStatement st =
        db.prepared(
            "INSERT OR IGNORE INTO pool_records (address, kind, run_id, created_ms, envelope)"
                + " VALUES (?,?,NULL,?,?)");
    st.setString(1, evict.address());
    st.setString(2, EVICT);
    st.setLong(3, e.evictedMs());
    st.setBytes(4, StoreEncoding.encode(evict.toJsonLine()));
    st.executeUpdate();
  }

  // A claim stored since schema 20, else one stored before it: each by its own run index.
  static final String CLAIM_OF_RUN =
      "SELECT envelope FROM pool_claims WHERE run_id = ?1 UNION ALL"
          + " SELECT envelope FROM pool_records WHERE kind = '"
          + CLAIM
          + "' AND run_id = ?1 LIMIT 1";

  static Optional<Envelope> claim(Connection db, String runId) throws SQLException {
    return StoreDb.first(db, CLAIM_OF_RUN, PoolRecordTable::envelope, runId);
  }

  // The kind is a literal: the planner uses the partial index only for a WHERE implying its own.
  static final String EVICTIONS =
      "SELECT envelope FROM (SELECT envelope, created_ms, rowid AS r FROM pool_records"
          + " WHERE kind = '"
          + EVICT
          + "' ORDER BY created_ms DESC, r DESC LIMIT ?)"
          + " ORDER BY created_ms, r";

  /** The newest {@code limit} evictions, oldest first. */
  static List<Envelope> evictions(Connection db, int limit) throws SQLException {
    return StoreDb.all(db, EVICTIONS, PoolRecordTable::envelope, limit);
  }

  private static Envelope envelope(ResultSet rs) throws SQLException {
    return StoreEncoding.envelope(rs.getBytes(1));
  }
}
