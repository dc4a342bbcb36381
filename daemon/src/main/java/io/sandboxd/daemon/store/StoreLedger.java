package io.sandboxd.daemon.store;

import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.SigningKey;
import io.sandboxd.attest.StoreHead;
import io.sandboxd.attest.StoredRun;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * Writes the signed ledger: one {@code sandbox.store-run/1} record per run and the store head over
 * them, inside the caller's transaction (an append, or the upgrade that signs an older store).
 */
final class StoreLedger {
  private StoreLedger() {}

  /** The position the next stored run takes: the ledger's length. */
  static long nextPosition(Connection db) throws SQLException {
    try (Statement st = db.createStatement();
        ResultSet rs = st.executeQuery("SELECT COALESCE(MAX(position) + 1, 0) FROM ledger")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  /**
   * Signs {@code stored} into the ledger at its position and signs the extended store head; returns
   * the stored-run record's address.
   */
  static String sign(Connection db, SigningKey key, StoredRun stored) throws SQLException {
    String chain = StoreHead.EMPTY_CHAIN;
    try (Statement st = db.createStatement();
        ResultSet rs = st.executeQuery("SELECT envelope FROM store_head WHERE id = 1")) {
      if (rs.next()) {
        chain = StoreHead.fromCore(CanonicalJson.parse(rs.getString(1)).get("core")).chain();
      }
    }
    Envelope env = Envelope.sign(stored.toCore(), key);
    try (PreparedStatement st =
        db.prepareStatement("INSERT INTO ledger (position, run_id, envelope) VALUES (?,?,?)")) {
      st.setLong(1, stored.position());
      st.setString(2, stored.runId());
      st.setString(3, env.toJsonLine());
      st.executeUpdate();
    }
    StoreHead head =
        new StoreHead(
            stored.position() + 1,
            StoreHead.extend(chain, env.address()),
            System.currentTimeMillis());
    try (PreparedStatement st =
        db.prepareStatement("INSERT OR REPLACE INTO store_head (id, envelope) VALUES (1, ?)")) {
      st.setString(1, Envelope.sign(head.toCore(), key).toJsonLine());
      st.executeUpdate();
    }
    return env.address();
  }
}
