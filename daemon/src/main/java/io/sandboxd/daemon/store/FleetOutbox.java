package io.sandboxd.daemon.store;

import java.sql.ResultSet;
import java.sql.SQLException;
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
          return StoreDb.all(
              db, DURABLE_UNSHIPPED + " LIMIT ?", FleetOutbox::unshipped, node, limit);
        });
  }

  private List<Unshipped> runRecords(int limit) {
    return store.onConnection(
        db -> {
          List<Unshipped> out = new ArrayList<>();
          for (String sql : RecordRows.UNSHIPPED) {
            if (out.size() < limit) {
              out.addAll(StoreDb.all(db, sql, FleetOutbox::unshippedRecord, limit - out.size()));
            }
          }
          return out;
        });
  }

  /**
   * A single-step run's record as its text. Bytes that do not decode go out as they are, which the
   * aggregator refuses like any damaged record, so one damaged row cannot stall shipping.
   */
  private static Unshipped unshippedRecord(ResultSet rs) throws SQLException {
    byte[] stored = rs.getBytes(2);
    String text;
    try {
      text = StoreEncoding.decode(stored);
    } catch (StoreEncodingException e) {
      text = new String(stored, java.nio.charset.StandardCharsets.ISO_8859_1);
    }
    return new Unshipped(rs.getString(1), text);
  }

  private static Unshipped unshipped(ResultSet rs) throws SQLException {
    return new Unshipped(rs.getString(1), rs.getString(2));
  }

  /** Keeps a verified proof; the record counts as shipped from now on. */
  public void prove(String address, long treeSize, String proofJson) {
    store.onConnection(
        db ->
            StoreDb.update(
                db,
                "INSERT OR IGNORE INTO fleet_proofs (address, tree_size, proof, proven_ms)"
                    + " VALUES (?, ?, ?, ?)",
                address,
                treeSize,
                proofJson,
                System.currentTimeMillis()));
  }

  /** Records still without a proof, durable runs' included. */
  public long unshippedCount() {
    String node = store.publicKey().hex();
    return store.onConnection(
        db -> {
          long n;
          try (Statement st = db.createStatement();
              ResultSet rs = st.executeQuery(RecordRows.UNSHIPPED_COUNT)) {
            n = rs.next() ? rs.getLong(1) : 0L;
          }
          if (StoreSchema.hasTable(db, "durable_records")) {
            n +=
                StoreDb.first(
                        db,
                        "SELECT count(*) FROM (" + DURABLE_UNSHIPPED + ")",
                        rs -> rs.getLong(1),
                        node)
                    .orElse(0L);
          }
          return n;
        });
  }
}
