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
 * connection (fsynced: synchronous=FULL). Durable runs' segments and records (issue 23) ship too,
 * those this node signed: an imported run's earlier ones are other hosts' to ship, and the
 * aggregator would refuse them on this node's subject.
 */
public final class FleetOutbox {
  private final RunStore store;

  /** One record to ship: its address and its envelope's canonical JSON. */
  public record Unshipped(String address, String envelope) {}

  public FleetOutbox(RunStore store) {
    this.store = store;
  }

  /** This node's durable segments and records without a proof, in store order. */
  private static final String DURABLE_UNSHIPPED =
      "SELECT d.address, d.envelope FROM (SELECT address, envelope, 0 AS part, rowid AS r"
          + " FROM durable_segments UNION ALL SELECT address, envelope, 1, rowid"
          + " FROM durable_records) d LEFT JOIN fleet_proofs p ON p.address = d.address"
          + " WHERE p.address IS NULL AND json_extract(d.envelope, '$.public_key') = ?"
          + " ORDER BY d.part, d.r";

  /**
   * Up to {@code limit} records without a proof, oldest first: single-step runs' records, then
   * durable runs' (one query each, so neither waits on the other's order).
   */
  public List<Unshipped> unshipped(int limit) {
    List<Unshipped> out = new ArrayList<>(runRecords(limit));
    if (out.size() < limit) {
      out.addAll(durable(limit - out.size()));
    }
    return out;
  }

  private List<Unshipped> durable(int limit) {
    String node = store.publicKey().hex();
    return store.onConnection(
        db -> {
          List<Unshipped> out = new ArrayList<>();
          if (!StoreSchema.hasTable(db, "durable_records")) {
            return out;
          }
          try (PreparedStatement st = db.prepareStatement(DURABLE_UNSHIPPED + " LIMIT ?")) {
            st.setString(1, node);
            st.setInt(2, limit);
            try (ResultSet rs = st.executeQuery()) {
              while (rs.next()) {
                out.add(new Unshipped(rs.getString(1), rs.getString(2)));
              }
            }
          }
          return out;
        });
  }

  private List<Unshipped> runRecords(int limit) {
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

  /** Records still without a proof, durable runs' included. */
  public long unshippedCount() {
    String node = store.publicKey().hex();
    return store.onConnection(
        db -> {
          long n;
          try (Statement st = db.createStatement();
              ResultSet rs =
                  st.executeQuery(
                      "SELECT count(*) FROM records r LEFT JOIN fleet_proofs p"
                          + " ON p.address = r.address WHERE p.address IS NULL")) {
            n = rs.next() ? rs.getLong(1) : 0L;
          }
          if (StoreSchema.hasTable(db, "durable_records")) {
            try (PreparedStatement st =
                db.prepareStatement("SELECT count(*) FROM (" + DURABLE_UNSHIPPED + ")")) {
              st.setString(1, node);
              try (ResultSet rs = st.executeQuery()) {
                n += rs.next() ? rs.getLong(1) : 0L;
              }
            }
          }
          return n;
        });
  }
}
