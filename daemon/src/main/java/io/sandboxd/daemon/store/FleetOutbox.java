package io.sandboxd.daemon.store;

import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;

/**
 * What the node still has to ship to the fleet (issue 14 item 3): every signed record in the run
 * store without an inclusion proof from the aggregator. Unshipped is therefore durable with the
 * record itself (same row, same transaction); a proof is kept next to it, on the store's own
 * connection (fsynced: synchronous=FULL).
 */
public final class FleetOutbox {
  private final RunStore store;

  /** One record to ship: its address and its envelope's canonical JSON. */
  public record Unshipped(String address, String envelope) {}

  public FleetOutbox(RunStore store) {
    this.store = store;
  }

  /** Up to {@code limit} records without a proof, oldest first. */
  public List<Unshipped> unshipped(int limit) {
    return store.onConnection(
        db -> {
          try (PreparedStatement st =
              db.prepareStatement(
                  "SELECT r.address, r.envelope FROM records r LEFT JOIN fleet_proofs p"
                      + " ON p.address = r.address WHERE p.address IS NULL ORDER BY r.rowid"
                      + " LIMIT ?")) {
            st.setInt(1, limit);
            List<Unshipped> out = new ArrayList<>();
            try (ResultSet rs = st.executeQuery()) {
              while (rs.next()) {
                out.add(new Unshipped(rs.getString(1), rs.getString(2)));
              }
            }
            return out;
          }
        });
  }

  /** Keeps a verified proof; the record counts as shipped from now on. */
  public void prove(String address, long treeSize, String proofJson) {
    store.onConnection(
        db -> {
          try (PreparedStatement st =
              db.prepareStatement(
                  "INSERT OR IGNORE INTO fleet_proofs (address, tree_size, proof, proven_ms)"
                      + " VALUES (?, ?, ?, ?)")) {
            st.setString(1, address);
            st.setLong(2, treeSize);
            st.setString(3, proofJson);
            st.setLong(4, System.currentTimeMillis());
            return st.executeUpdate();
          }
        });
  }

  /** Records still without a proof. */
  public long unshippedCount() {
    return store.onConnection(
        db -> {
          try (Statement st = db.createStatement();
              ResultSet rs =
                  st.executeQuery(
                      "SELECT count(*) FROM records r LEFT JOIN fleet_proofs p"
                          + " ON p.address = r.address WHERE p.address IS NULL")) {
            return rs.next() ? rs.getLong(1) : 0L;
          }
        });
  }
}
