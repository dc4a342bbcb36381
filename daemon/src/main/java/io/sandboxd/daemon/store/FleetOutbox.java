package io.sandboxd.daemon.store;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;

/**
 * What the node still has to ship to the fleet (issue 14 item 3): every signed record in the run
 * store without an inclusion proof from the aggregator. Unshipped is therefore durable with the
 * record itself (same row, same transaction); a proof is kept next to it. Own connection to the run
 * store's file (WAL), so shipping never holds the store's lock for a run.
 */
public final class FleetOutbox implements AutoCloseable {
  private final Connection db;

  /** One record to ship: its address and its envelope's canonical JSON. */
  public record Unshipped(String address, String envelope) {}

  private FleetOutbox(Connection db) {
    this.db = db;
  }

  /** Opens the outbox of the run store at {@code file} (already migrated by RunStore.open). */
  public static FleetOutbox open(Path file) {
    try {
      Connection db = DriverManager.getConnection("jdbc:sqlite:" + file.toAbsolutePath());
      try (Statement st = db.createStatement()) {
        st.execute("PRAGMA journal_mode=WAL");
        st.execute("PRAGMA synchronous=FULL");
        st.execute("PRAGMA busy_timeout=5000");
      }
      return new FleetOutbox(db);
    } catch (SQLException e) {
      throw new StoreException("fleet outbox " + file + ": cannot open: " + e.getMessage(), e);
    }
  }

  /** Up to {@code limit} records without a proof, oldest run first. */
  public synchronized List<Unshipped> unshipped(int limit) {
    try (PreparedStatement st =
        db.prepareStatement(
            "SELECT r.address, r.envelope FROM records r LEFT JOIN fleet_proofs p"
                + " ON p.address = r.address WHERE p.address IS NULL ORDER BY r.rowid LIMIT ?")) {
      st.setInt(1, limit);
      List<Unshipped> out = new ArrayList<>();
      try (ResultSet rs = st.executeQuery()) {
        while (rs.next()) {
          out.add(new Unshipped(rs.getString(1), rs.getString(2)));
        }
      }
      return out;
    } catch (SQLException e) {
      throw new StoreException("fleet outbox: " + e.getMessage(), e);
    }
  }

  /** Keeps a verified proof (fsynced); the record counts as shipped from now on. */
  public synchronized void prove(String address, long treeSize, String proofJson) {
    try (PreparedStatement st =
        db.prepareStatement(
            "INSERT OR IGNORE INTO fleet_proofs (address, tree_size, proof, proven_ms)"
                + " VALUES (?, ?, ?, ?)")) {
      st.setString(1, address);
      st.setLong(2, treeSize);
      st.setString(3, proofJson);
      st.setLong(4, System.currentTimeMillis());
      st.executeUpdate();
    } catch (SQLException e) {
      throw new StoreException("fleet outbox: " + e.getMessage(), e);
    }
  }

  /** Records still without a proof. */
  public synchronized long unshippedCount() {
    try (Statement st = db.createStatement();
        ResultSet rs =
            st.executeQuery(
                "SELECT count(*) FROM records r LEFT JOIN fleet_proofs p"
                    + " ON p.address = r.address WHERE p.address IS NULL")) {
      return rs.next() ? rs.getLong(1) : 0;
    } catch (SQLException e) {
      throw new StoreException("fleet outbox: " + e.getMessage(), e);
    }
  }

  @Override
  public synchronized void close() {
    try {
      db.close();
    } catch (SQLException e) {
      throw new StoreException("fleet outbox: " + e.getMessage(), e);
    }
  }
}
