package io.sandboxd.daemon.store;

import io.sandboxd.attest.AttestException;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.RunSegment;
import io.sandboxd.attest.StoreHead;
import io.sandboxd.attest.Verification;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Checks the store's durable runs against the signed store head (issue 23 item 6): the durable
 * ledger is dense and its chain and count are the head's; every segment it names is still stored,
 * byte for byte, with a valid signature; every stored segment is in it, and so is every durable run
 * other than a running or failed one that has not stored a segment; every run it names still has
 * its row; and every receipt an execute segment names is still stored. So deleting a durable run, a
 * segment or a receipt behind the node's back is found by {@code sandboxctl store verify}. At most
 * one damage per run (the first found).
 */
final class DurableAudit {
  private DurableAudit() {}

  /** The states a durable run may be in before it has stored any segment. */
  private static final Set<String> UNSEGMENTED =
      Set.of(DurableRunTable.State.running.name(), DurableRunTable.State.failed.name());

  static List<StoreDamage> damage(Connection db) throws SQLException {
    if (!StoreSchema.hasTable(db, "durable_ledger")) {
      return List.of();
    }
    Map<String, StoreDamage> byRun = new LinkedHashMap<>();
    List<StoreDamage> store = new ArrayList<>();
    long count = 0;
    String chain = StoreHead.EMPTY_CHAIN;
    boolean dense = true;
    try (Statement st = db.createStatement();
        ResultSet rs =
            st.executeQuery(
                "SELECT l.position, l.run_id, l.seq, l.address, s.envelope,"
                    + " (SELECT 1 FROM durable_runs r WHERE r.run_id = l.run_id)"
                    + " FROM durable_ledger l LEFT JOIN durable_segments s"
                    + " ON s.run_id = l.run_id AND s.seq = l.seq ORDER BY l.position")) {
      while (rs.next()) {
        if (rs.getLong(1) != count) {
          dense = false;
        }
        count++;
        String runId = rs.getString(2);
        long seq = rs.getLong(3);
        String address = rs.getString(4);
        chain = StoreHead.extend(chain, address);
        String at = "segment seq " + seq + " (" + address + ")";
        if (rs.getObject(6) == null) {
          put(
              byRun,
              runId,
              "durable_runs",
              "the durable run is in the signed store head but its row was deleted");
        } else if (rs.getString(5) == null) {
          put(
              byRun,
              runId,
              "durable_segments",
              at + " is in the signed store head but was deleted");
        } else {
          segmentDamage(rs.getString(5), address)
              .ifPresent(r -> put(byRun, runId, "durable_segments", at + ": " + r));
        }
      }
    }
    Optional<StoreHead> head = head(db);
    if (head.isEmpty() && count > 0) {
      store.add(
          new StoreDamage(
              StoreDamage.STORE,
              "store_head",
              "the store holds " + count + " durable segment(s) but no signed store head"));
    } else if (head.isPresent()) {
      StoreHead h = head.get();
      if (h.durableSegments() != count) {
        store.add(
            new StoreDamage(
                StoreDamage.STORE,
                "durable_ledger",
                "the signed store head counts "
                    + h.durableSegments()
                    + " durable segment(s); the durable ledger holds "
                    + count
                    + ": a durable run or segment was deleted or inserted"));
      } else if (!dense) {
        store.add(
            new StoreDamage(
                StoreDamage.STORE,
                "durable_ledger",
                "durable ledger positions are not dense from 0"));
      } else if (!h.durableChain().equals(chain)) {
        store.add(
            new StoreDamage(
                StoreDamage.STORE,
                "durable_ledger",
                "the hash chain over the durable ledger is "
                    + chain
                    + ", the signed head says "
                    + h.durableChain()
                    + ": a durable segment was replaced, deleted or reordered"));
      }
    }
    // Stored behind the node's back: segments and runs the signed head does not cover.
    for (Map.Entry<String, Long> s :
        StoreDb.all(
            db,
            "SELECT s.run_id, s.seq FROM durable_segments s WHERE NOT EXISTS (SELECT 1 FROM"
                + " durable_ledger l WHERE l.run_id = s.run_id AND l.seq = s.seq)"
                + " ORDER BY s.run_id, s.seq",
            rs -> Map.entry(rs.getString(1), rs.getLong(2)))) {
      put(
          byRun,
          s.getKey(),
          "durable_segments",
          "segment seq " + s.getValue() + " is not in the signed store head");
    }
    // A run with no segment yet is the node's own in two states only: running its first segment
    // (its row is on disk before the start is answered), or failed before it stored one (the
    // daemon stopped, or the segment could not be stored). Any other state claims signed records.
    for (Map.Entry<String, String> r :
        StoreDb.all(
            db,
            "SELECT r.run_id, r.state FROM durable_runs r WHERE NOT EXISTS (SELECT 1 FROM"
                + " durable_ledger l WHERE l.run_id = r.run_id) ORDER BY r.run_id",
            rs -> Map.entry(rs.getString(1), rs.getString(2)))) {
      if (!UNSEGMENTED.contains(r.getValue())) {
        put(
            byRun,
            r.getKey(),
            "durable_runs",
            "the durable run is "
                + r.getValue()
                + " but not in the signed store head: only a running run or one that failed"
                + " before storing a segment has none");
      }
    }
    receiptDamage(db, byRun);
    List<StoreDamage> out = new ArrayList<>(store);
    out.addAll(byRun.values());
    return out;
  }

  /** Each execute segment's receipt must still be among its run's stored records. */
  private static void receiptDamage(Connection db, Map<String, StoreDamage> byRun)
      throws SQLException {
    try (Statement st = db.createStatement();
        ResultSet rs =
            st.executeQuery(
                "SELECT run_id, seq, envelope FROM durable_segments ORDER BY run_id, seq")) {
      while (rs.next()) {
        String runId = rs.getString(1);
        if (byRun.containsKey(runId)) {
          continue;
        }
        String receipt;
        try {
          receipt =
              RunSegment.fromCore(Envelope.fromJson(CanonicalJson.parse(rs.getString(3))).core())
                  .receipt();
        } catch (AttestException e) {
          continue; // reported by segmentDamage
        }
        if (receipt != null && !hasRecord(db, runId, receipt)) {
          put(
              byRun,
              runId,
              "durable_records",
              "receipt " + receipt + " of segment seq " + rs.getLong(2) + " was deleted");
        }
      }
    }
  }

  private static boolean hasRecord(Connection db, String runId, String address)
      throws SQLException {
    return StoreDb.first(
            db,
            "SELECT 1 FROM durable_records WHERE run_id = ? AND address = ?",
            rs -> true,
            runId,
            address)
        .isPresent();
  }

  /** Why a stored segment's text is not the signed segment at {@code address}, if it is not. */
  private static Optional<String> segmentDamage(String text, String address) {
    try {
      Envelope e = Envelope.fromJson(CanonicalJson.parse(text));
      if (!e.address().equals(address)) {
        return Optional.of("its stored text hashes to " + e.address() + " (edited)");
      }
      if (e.verify(Optional.empty()) instanceof Verification.Invalid inv) {
        return Optional.of("its signature does not verify: " + inv.reason());
      }
      return Optional.empty();
    } catch (AttestException e) {
      return Optional.of("unreadable: " + e.getMessage());
    }
  }

  private static Optional<StoreHead> head(Connection db) throws SQLException {
    Optional<String> text = StoreLedger.headText(db);
    if (text.isEmpty()) {
      return Optional.empty();
    }
    try {
      // Its signature is checked with the rest of the head (StoreAudit); unreadable: reported
      // there.
      return Optional.of(
          StoreHead.fromCore(Envelope.fromJson(CanonicalJson.parse(text.get())).core()));
    } catch (AttestException e) {
      return Optional.empty();
    }
  }

  private static void put(Map<String, StoreDamage> byRun, String runId, String column, String why) {
    byRun.putIfAbsent(runId, new StoreDamage(runId, column, why));
  }
}
